//! Choosing among candidate tactics by measuring them on the caller's first runs.
//!
//! How a large transpose is best cut into blocks, and whether a large copy is better written with
//! streaming stores, depend on the machine's caches, TLB and memory more than any model here can
//! tell, so with `Options::tune` a relayout compiles each distinct [`Tactics::CANDIDATES`] plan,
//! times each on the first runs (every candidate is a correct kernel, so those runs do the real
//! work), and from then on uses the fastest. The engine remembers the choice, so compiling the
//! same relayout again goes straight to it.
//!
//! Each candidate's runs come one after another, and the first of them does not count: what a
//! run finds in the caches depends on the run before it, and a relayout in use follows itself.
//! Timed right after another candidate, tensors that fit the last-level cache in part measured
//! the wrong candidate fastest (on a 2-core AMD EPYC (Zen 4) VM, NCHW → NHWC of 24.5 MiB chose a
//! blocking that runs at 7.7 GB/s over one that runs at 14).
//!
//! [`Tactics::CANDIDATES`]: crate::plan::Tactics::CANDIDATES

use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use crate::engine::Candidate;

/// Timed runs of each candidate before choosing, after one untimed run.
const TRIALS: usize = 3;
/// Runs of each candidate: the untimed one, then the trials.
const RUNS: usize = 1 + TRIALS;

/// The bookkeeping of a tuning: which candidate runs next, the times of their runs, and the
/// choice once every candidate has had its runs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Trials {
    times: Vec<Vec<Duration>>,
}

impl Trials {
    /// Trials of `candidates` candidates.
    pub(crate) fn new(candidates: usize) -> Trials {
        Trials {
            times: vec![Vec::new(); candidates],
        }
    }

    /// The candidate whose run comes next: the first short of its runs, so that each
    /// candidate's runs follow one another; `None` once every candidate has had them.
    pub(crate) fn next(&self) -> Option<usize> {
        (0..self.times.len()).find(|&i| self.times[i].len() < RUNS)
    }

    /// Records a run of candidate `i`; once every candidate has its runs, returns the one with
    /// the fastest single trial (its runs but the first), the earliest on a tie.
    pub(crate) fn record(&mut self, i: usize, took: Duration) -> Option<usize> {
        self.times.get_mut(i)?.push(took);
        if self.next().is_some() {
            return None;
        }
        let fastest = |t: &[Duration]| t[1..].iter().min().copied().unwrap_or(Duration::MAX);
        (0..self.times.len()).min_by_key(|&i| fastest(&self.times[i]))
    }
}

/// The candidates of one relayout, their trials, and the choice.
pub(crate) struct Tuner {
    candidates: Vec<Candidate>,
    trials: Mutex<Trials>,
    chosen: OnceLock<usize>,
}

impl Tuner {
    /// A tuner over `candidates` (at least two, distinct plans; the first is used until a
    /// choice is made).
    pub(crate) fn new(candidates: Vec<Candidate>) -> Tuner {
        Tuner {
            trials: Mutex::new(Trials::new(candidates.len())),
            candidates,
            chosen: OnceLock::new(),
        }
    }

    /// The candidate to run now, and its index if this run is to be timed and recorded.
    pub(crate) fn next(&self) -> (&Candidate, Option<usize>) {
        if let Some(&i) = self.chosen.get() {
            return (&self.candidates[i], None);
        }
        match self.lock_trials().next() {
            Some(i) => (&self.candidates[i], Some(i)),
            // Every run is recorded, so the thread that recorded the last one chose (under the
            // lock) after this thread looked for a choice.
            None => (&self.candidates[0], None),
        }
    }

    /// Records a run of candidate `i`; returns the chosen candidate when this run completes
    /// the trials.
    pub(crate) fn record(&self, i: usize, took: Duration) -> Option<&Candidate> {
        let best = self.lock_trials().record(i, took)?;
        self.chosen.set(best).ok().map(|()| &self.candidates[best])
    }

    /// The chosen candidate, or the first (the default tactics) while tuning.
    pub(crate) fn current(&self) -> &Candidate {
        self.chosen().unwrap_or(&self.candidates[0])
    }

    /// The chosen candidate, once tuning has ended.
    pub(crate) fn chosen(&self) -> Option<&Candidate> {
        self.chosen.get().map(|&i| &self.candidates[i])
    }

    fn lock_trials(&self) -> MutexGuard<'_, Trials> {
        self.trials
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// Runs the trials with `times[i][r]` as the `r`-th run of candidate `i`, in the order
    /// `next` asks for them, and returns the order and the choice.
    fn tune(times: &[[u64; RUNS]]) -> (Vec<usize>, Option<usize>) {
        let mut trials = Trials::new(times.len());
        let (mut order, mut runs, mut choice) = (Vec::new(), vec![0; times.len()], None);
        while let Some(i) = trials.next() {
            order.push(i);
            choice = trials.record(i, ms(times[i][runs[i]]));
            runs[i] += 1;
        }
        (order, choice)
    }

    #[test]
    fn each_candidates_runs_follow_one_another() {
        let (order, _) = tune(&[[5; RUNS], [5; RUNS], [5; RUNS]]);
        assert_eq!(order, [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]);
    }

    #[test]
    fn the_fastest_trial_wins_and_the_first_run_does_not_count() {
        for (times, best) in [
            // Candidate 1's first run is the fastest of all, but it does not count.
            ([[9, 8, 8, 8], [1, 9, 9, 9], [9, 7, 9, 9]], 2),
            // One fast trial is enough: the minimum, not the mean.
            ([[6, 6, 6, 6], [9, 9, 2, 9], [6, 5, 5, 5]], 1),
            // A tie goes to the earlier candidate (the default is first).
            ([[9, 4, 4, 4], [9, 4, 4, 4], [9, 5, 5, 5]], 0),
        ] {
            assert_eq!(tune(&times).1, Some(best), "{times:?}");
        }
    }

    #[test]
    fn a_choice_comes_only_once_every_candidate_has_its_runs() {
        let mut trials = Trials::new(2);
        for _ in 0..RUNS {
            assert_eq!(trials.record(0, ms(1)), None);
        }
        for _ in 0..RUNS - 1 {
            assert_eq!(trials.record(1, ms(1)), None);
        }
        assert_eq!(trials.record(1, ms(2)), Some(0));
        assert_eq!(trials.next(), None);
        assert_eq!(trials.record(7, ms(1)), None, "no such candidate");
    }
}
