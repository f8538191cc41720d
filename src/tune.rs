//! Choosing among candidate blockings by measuring them on the caller's first runs.
//!
//! How a large transpose is best cut into blocks, and whether a large copy is better written with
//! streaming stores, depend on the machine's caches, TLB and memory more than any model here can
//! tell, so with `Options::tune` a relayout compiles each distinct
//! [`Blocking::CANDIDATES`] plan, times each on the first runs (every candidate is a correct
//! kernel, so those runs do the real work), and from then on uses the fastest. The choice is
//! remembered for the process, so compiling the same relayout again goes straight to it.
//!
//! Each candidate's runs come one after another, and the first of them does not count: what a
//! run finds in the caches depends on the run before it, and a relayout in use follows itself.
//! Timed right after another candidate, tensors that fit the last-level cache in part measured
//! the wrong candidate fastest (on a 2-core AMD EPYC (Zen 4) VM, NCHW → NHWC of 24.5 MiB chose a
//! blocking that runs at 7.7 GB/s over one that runs at 14).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use crate::jit::Compiled;
use crate::layout::Layout;
use crate::plan::{Blocking, Plan};

/// Timed runs of each candidate before choosing, after one untimed run.
const TRIALS: usize = 3;
/// Runs of each candidate: the untimed one, then the trials.
const RUNS: usize = 1 + TRIALS;

/// What a tuning result is remembered by: the pair, the element size and the thread count.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct TuneKey {
    pub src: Layout,
    pub dst: Layout,
    pub elem_size: usize,
    pub threads: usize,
}

/// One compiled candidate.
pub(crate) struct Candidate {
    pub blocking: Blocking,
    pub plan: Arc<Plan>,
    pub kernel: Arc<Compiled>,
}

/// The candidates of one relayout and the times their runs took.
pub(crate) struct Tuner {
    key: TuneKey,
    candidates: Vec<Candidate>,
    times: Mutex<Vec<Vec<Duration>>>,
    chosen: OnceLock<usize>,
}

/// Blockings chosen so far in this process.
fn chosen_blockings() -> MutexGuard<'static, HashMap<TuneKey, Blocking>> {
    static CHOSEN: OnceLock<Mutex<HashMap<TuneKey, Blocking>>> = OnceLock::new();
    CHOSEN
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The blocking an earlier tuning chose for `key`, if any.
pub(crate) fn remembered(key: &TuneKey) -> Option<Blocking> {
    chosen_blockings().get(key).copied()
}

impl Tuner {
    /// A tuner over `candidates` (at least two, distinct plans).
    pub(crate) fn new(key: TuneKey, candidates: Vec<Candidate>) -> Tuner {
        let times = Mutex::new(vec![Vec::new(); candidates.len()]);
        Tuner {
            key,
            candidates,
            times,
            chosen: OnceLock::new(),
        }
    }

    /// The candidate to use now, and whether this run is to be timed and recorded: the first
    /// candidate short of its runs (so each candidate's runs follow one another).
    pub(crate) fn next(&self) -> (&Candidate, bool) {
        if let Some(&i) = self.chosen.get() {
            return (&self.candidates[i], false);
        }
        let times = self.lock_times();
        match (0..times.len()).find(|&i| times[i].len() < RUNS) {
            Some(i) => (&self.candidates[i], true),
            // Every run is recorded, so the thread that recorded the last one chose (under this
            // lock) after this thread looked for a choice.
            None => (&self.candidates[0], false),
        }
    }

    /// Records a run of `blocking`; once every candidate has its runs, chooses the one with the
    /// fastest single trial (its runs but the first) and remembers it.
    pub(crate) fn record(&self, blocking: Blocking, took: Duration) {
        let mut times = self.lock_times();
        let Some(i) = self.candidates.iter().position(|c| c.blocking == blocking) else {
            return;
        };
        times[i].push(took);
        if times.iter().all(|t| t.len() >= RUNS) {
            let fastest = |t: &[Duration]| t[1..].iter().min().copied().unwrap_or(Duration::MAX);
            let best = (0..times.len())
                .min_by_key(|&i| fastest(&times[i]))
                .unwrap_or(0);
            if self.chosen.set(best).is_ok() {
                chosen_blockings().insert(self.key.clone(), self.candidates[best].blocking);
            }
        }
    }

    /// The chosen candidate, or the first (the default blocking) while tuning.
    pub(crate) fn current(&self) -> &Candidate {
        self.chosen().unwrap_or(&self.candidates[0])
    }

    /// The chosen candidate, once tuning has ended.
    pub(crate) fn chosen(&self) -> Option<&Candidate> {
        self.chosen.get().map(|&i| &self.candidates[i])
    }

    fn lock_times(&self) -> MutexGuard<'_, Vec<Vec<Duration>>> {
        self.times
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
