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
//! The runs spend a time budget (`Options::tune_budget`), like HPTT's limit on its `MEASURE`
//! search: the default's first timed run (its second: the first may fault in the caller's fresh
//! pages) shows how long one takes, and the budget then buys up to six trials of every
//! candidate (after a warm-up run each), or one of each, or one of as many candidates as fit in
//! their ranked order (the default first), never fewer than two candidates. A candidate may
//! run several times as long as the default, so the budget keeps room for one such run, and
//! measuring stops once another would overrun it. Runs of 20 ms or more move far more than a
//! last-level cache holds and need no warm-up. A 488 MiB f64 transpose, whose runs take about
//! 65 ms, measures the default and the next candidate once each; a 24.5 MiB one measures them
//! all, up to six trials each. Where the trials put another candidate ahead of the default,
//! and the budget has room, the two run again, one after the other, and the choice follows
//! those runs ([`Rematch`]): memory on a VM runs in phases, and trials of the default that fell
//! in a slow one otherwise chose a slower candidate.
//!
//! Beyond the cache, where whole runs would leave candidates unmeasured, runs may be shared
//! ([`shares`]): the tensor is cut into up to four slices along one dim, each compiled as a
//! relayout of its own, and one run moves the default's slice and those of the next three
//! candidates in rank, then of the three after them, and so on, as far as the budget reaches
//! (keeping one whole run). Each candidate's time counts against the default's in the same run,
//! and those that ran faster than it, the best first, up to three as the budget allows
//! ([`MOST_NOMINEES`]), are then timed whole; the fastest of them is chosen only if it beats
//! the default's best time (whole, or in the shares) by the margin, and the rematch too where
//! the budget has room. Where the default's first run takes 20 ms or more, the shared runs
//! follow it at once, the default timed in them; else they follow its second, once the budget
//! is fitted. On a 2-core AMD EPYC (Zen 3) VM, the
//! 8000² u16 transpose (122 MiB, runs of 40–60 ms) tuned this way ran at 0.47–0.68 of memcpy
//! (median 0.50 of six fresh processes) against 0.33–0.70 (median 0.36) with whole runs, which
//! measured four candidates and mostly chose the default; the shares found the 256-byte runs
//! across the rows.
//!
//! [`Tactics::CANDIDATES`]: crate::plan::Tactics::CANDIDATES

mod shares;

use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use crate::engine::{Candidate, Engine};
pub(crate) use shares::Shares;

/// How much faster than the default (the first candidate, the planner's model) another
/// candidate's fastest trial must be for tuning to choose it, as a fraction of the default's
/// time (numerator, denominator).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Margin {
    /// Below 9/10, for tensors that may stay in the last-level cache from one run to the next.
    /// Runs back to back find the caches as the run before left them, which is not how a
    /// relayout runs between other work: on a 2-core AMD EPYC (Zen 4) VM, NHWC → NCHW of 24.5
    /// MiB measured 512-byte runs along the source rows 9% faster than the default back to
    /// back, where between memcpy runs they moved half as much; the trials of one candidate
    /// also spread by 10–30% there.
    InCache,
    /// Below 19/20, for source and destination of together at least twice the last-level
    /// cache ([`Margin::for_bytes`]), which each run reads and writes from memory whatever ran
    /// before it. On a 2-core Intel Xeon VM (family 6, model 85), the identity copy of 64 MiB
    /// asking for lines ahead ran 8% faster than the default streamed one, back to back and
    /// between memcpy runs alike (`relayout bench copy_f32 --candidates`, 1.17 of memcpy
    /// against 1.08), and tuning chose it in some runs and not in others under the other
    /// margin.
    BeyondCache,
}

impl Margin {
    /// The margin for a relayout that reads `src_bytes` and writes `dst_bytes` on a target
    /// that streams from `stream_min_bytes` of destination, a quarter of its last-level cache
    /// where that is known ([`Target::stream_min_bytes_for`]): beyond the cache from eight
    /// times that.
    ///
    /// [`Target::stream_min_bytes_for`]: crate::Target::stream_min_bytes_for
    pub(crate) fn for_bytes(src_bytes: usize, dst_bytes: usize, stream_min_bytes: usize) -> Margin {
        if src_bytes.saturating_add(dst_bytes) >= stream_min_bytes.saturating_mul(8) {
            Margin::BeyondCache
        } else {
            Margin::InCache
        }
    }

    /// The fraction of the default's time to beat: (numerator, denominator).
    fn below(self) -> (u128, u128) {
        match self {
            Margin::InCache => (9, 10),
            Margin::BeyondCache => (19, 20),
        }
    }

    /// Of candidates `0..measured` with these fastest times (`None`: never timed), the fastest,
    /// the earliest on a tie, if it beats the default's (candidate 0) by this margin; else the
    /// default.
    fn choose(self, measured: usize, fastest: impl Fn(usize) -> Option<Duration>) -> usize {
        let time = |i| fastest(i).unwrap_or(Duration::MAX);
        let Some(best) = (0..measured).min_by_key(|&i| time(i)) else {
            return 0;
        };
        if self.beats(time(best), time(0)) {
            best
        } else {
            0
        }
    }

    /// Whether `time` beats the default's `default` by this margin.
    fn beats(self, time: Duration, default: Duration) -> bool {
        let (num, den) = self.below();
        time.as_nanos() * den < default.as_nanos() * num
    }
}
/// Timed runs (trials) of each measured candidate at most. A candidate that stores into the
/// cache, timed after one that streamed past it, takes a few runs to find its destination
/// there: on a 2-core Intel Xeon VM (family 6, model 167), NCHW → NCHW16c of 24.5 MiB with
/// ordinary stores ran its first three runs in 3.9–4.3 ms and the next ones in 2.2–2.6 ms, so
/// three trials after a warm-up often missed it.
const MOST_TRIALS: usize = 6;
/// The run whose time fits the budget: the default's second, its first timed one. The first
/// run of all is often the first to touch the caller's buffers, and faulting their pages in
/// made it two to three times as long as the next (a fresh 24.5 MiB destination on that VM).
const FITTED_ON_RUN: usize = 2;
/// Candidates measured at least (the default and the next in rank), whatever the budget.
const FEWEST_CANDIDATES: usize = 2;
/// How many times as long as the default's a candidate's run may take, which the budget keeps
/// room for: on a 2-core Intel Xeon VM (family 6, model 167), the 488 MiB f64 transpose ran in
/// 65 ms by default and in 276 ms with ordinary stores (the fifth candidate), so tuning it took
/// 0.56 s against a 0.4 s budget before the room was kept (`relayout bench t2d_f64_8000`).
const SLOWEST_CANDIDATE: u32 = 4;
/// How many times as long as the default's fastest trial a candidate's fastest trial may take,
/// beyond the cache ([`Margin::BeyondCache`]), before its other trials are skipped: such a
/// candidate is not expected to come within the margin of the default, and beyond the cache
/// each run reads and writes memory whatever ran before it (in it, a candidate timed after one
/// that streamed past the cache may take a few runs to find its destination there, see
/// [`MOST_TRIALS`]). On a 2-core AMD EPYC (Zen 4) VM, NCHW → NHWC of 256 channels (49 MiB)
/// ran in 3.5–6.7 ms a run with most candidates, in 10 ms with ordinary stores that ask for
/// lines ahead and in 48–50 ms with the tiles streamed straight out
/// ([`Blocking::STREAMED_TILES`]); the runs of those two (four to six each) spent 200–240 ms
/// of the tuning's 400, which measured eight candidates, and fourteen in the same time once
/// they stopped after a trial.
///
/// [`Blocking::STREAMED_TILES`]: crate::plan::Blocking::STREAMED_TILES
const HOPELESS: u32 = 2;
/// Runs at least this long move hundreds of MiB, much more than a last-level cache holds, so
/// what the run before left in the caches hardly matters: each candidate's first run counts too
/// (except the default's, the caller's very first run, which may touch fresh pages).
const LONG_RUN: Duration = Duration::from_millis(20);
/// Shared runs at most (each times every shared candidate once, on one share of the tensor).
const MOST_ROUNDS: usize = 3;
/// Candidates of shared runs timed whole at most: those that ran faster than the default in
/// their runs, best first, as many as the budget has room for beside a [`Rematch`]. A share
/// does not always run as the whole tensor does. On a 2-core AMD EPYC (Zen 4) VM, the 8000²
/// u16 transpose (122 MiB, runs of 15–35 ms) put 512-byte runs in the destination's order
/// ahead of 256-byte runs in 8 KiB blocks (against the default in their runs, 0.67 and
/// 0.67), which whole took 42 ms against 18 (the default 25–27); with one nominee, timed
/// whole, the default stayed and ran at 0.56 of memcpy. The shares of the 8000² f32
/// transpose (244 MiB) put 256-byte runs across the rows ahead of the default in one process
/// (23.3 against 32.0 ms) and level with it in another (28.2 against 28.15: no nominee), and
/// whole they took 20–29 ms against its 26–35. In six fresh processes of the
/// shared harness, alternating with the build before (ratios to memcpy, medians): 8000² u8
/// 0.75 (0.60–0.81) against 0.72 (0.64–0.79), u16 0.79 (0.68–0.97) against 0.84
/// (0.44–0.87), f32 0.86 (0.73–0.95) against 0.85 (0.62–0.90), f64 0.94 (0.86–1.09)
/// against 0.86 (0.74–0.97), 8192² f32 0.83 (0.65–0.93) against 0.77 (0.61–0.85); tuning
/// took 0.21–0.40 s.
const MOST_NOMINEES: usize = 3;

/// The bookkeeping of a tuning: which candidate runs next, the times of their runs, and the
/// choice once every measured candidate has had its runs.
///
/// The budget decides how many trials each candidate gets and how many candidates are
/// measured, once a run has shown how long one takes ([`FITTED_ON_RUN`]): up to six trials of
/// every candidate where the budget allows, else one each, else one of as many candidates as fit,
/// taken in their order (the candidates come ranked, the default first), and never fewer than
/// two candidates; it keeps room for one run of the slowest candidate ([`SLOWEST_CANDIDATE`]),
/// and measuring stops once another run would overrun the budget. Beyond the cache, where that
/// leaves candidates unmeasured, runs may be shared instead ([`Rounds`]): the default beside a
/// group of candidates, each on a share of the tensor, and up to three that ran faster than it
/// then timed whole ([`MOST_NOMINEES`]). Beyond the cache too, a candidate whose trial takes
/// more than twice as long as the default's fastest makes no more ([`HOPELESS`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Trials {
    times: Vec<Vec<Duration>>,
    budget: Duration,
    /// How clearly another candidate must beat the default.
    margin: Margin,
    /// Timed runs of each measured candidate.
    trials: usize,
    /// Whether each candidate's first run is untimed (runs shorter than [`LONG_RUN`]).
    warm_up: bool,
    /// The run that fitted the budget ([`FITTED_ON_RUN`]), once it has.
    fitted_on: Option<Duration>,
    /// How many candidates are measured, in rank order.
    measured: usize,
    /// Shares of the tensor for shared runs ([`shares`]), 0 if it has none.
    shares: usize,
    /// The shared runs, once the budget chose them over whole ones.
    rounds: Option<Rounds>,
    /// The default's and the challenger's runs again, once the trials (whole runs, or the
    /// nominees of shared runs) have put another candidate ahead of the default.
    rematch: Option<Rematch>,
}

/// The default and the candidate the trials put ahead of it (the challenger: the fastest of
/// whole-run trials, or of the nominees of shared runs), each run again, one after the other,
/// as in the trials (a warm-up, then the trials), before the choice, which then rests on these
/// runs alone: memory on a VM runs in phases of different speeds, and trials of the default
/// that all fell in a slow one chose a slower candidate. On a 2-core AMD EPYC (Zen 4) VM,
/// NCHW → NCHW16c of 24.5 MiB (default runs of 1.5–2 ms) chose another candidate in three of
/// eight fresh processes of the shared harness and then ran at 0.81–0.94 of memcpy against
/// 1.31–1.44: in one, the default's first runs took 12.4 ms, the budget bought one trial of
/// each candidate, and a 2.6 ms one won.
#[derive(Debug, Clone, PartialEq)]
struct Rematch {
    challenger: usize,
    /// The default's runs, then the challenger's.
    times: [Vec<Duration>; 2],
}

/// Runs that time several candidates at once, each on a share of the tensor: the default and
/// the next group of candidates in rank, the shares passing from one to the next from run to
/// run. Each candidate's time counts against the default's in the same run, which the drift of
/// memory's speed from one run to the next leaves alone.
#[derive(Debug, Clone, PartialEq)]
struct Rounds {
    /// Each candidate's times and the default's in the same run (scaled to the whole tensor).
    paired: Vec<Vec<(Duration, Duration)>>,
    /// Shared runs made.
    done: usize,
    /// How long the shared runs took in all.
    spent: Duration,
    /// Runs to make.
    planned: usize,
    /// The candidates that did best against the default, best first, once the runs are in,
    /// each to be timed whole before one is chosen ([`MOST_NOMINEES`]).
    nominees: Vec<usize>,
    /// The default's fastest time in the shared runs, scaled to the whole tensor.
    default: Option<Duration>,
}

/// Orders pairs of a candidate's time and the default's in the same run by their ratio.
fn by_ratio(a: &(Duration, Duration), b: &(Duration, Duration)) -> std::cmp::Ordering {
    (a.0.as_nanos() * b.1.as_nanos()).cmp(&(b.0.as_nanos() * a.1.as_nanos()))
}

/// What a run does while tuning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Turn {
    /// Candidate `i` moves the whole tensor.
    Whole(usize),
    /// Shared run `r`: its shares are moved by the candidates [`Trials::sharer`] names.
    Shared(usize),
}

impl Trials {
    /// Trials of `candidates` candidates whose runs may take about `budget` in all (two
    /// candidates are always measured), choosing another than the default where it wins by
    /// `margin`; `shares` is how many shares the tensor has for shared runs (0 for none; no
    /// more than the candidates).
    /// Until the budget is fitted ([`FITTED_ON_RUN`]), every candidate is to have a warm-up
    /// run and the most trials.
    pub(crate) fn new(
        candidates: usize,
        budget: Duration,
        margin: Margin,
        shares: usize,
    ) -> Trials {
        Trials {
            times: vec![Vec::new(); candidates],
            budget,
            margin,
            trials: MOST_TRIALS,
            warm_up: true,
            fitted_on: None,
            measured: candidates,
            shares,
            rounds: None,
            rematch: None,
        }
    }

    /// What the next run does: a whole run of the first measured candidate that has not made
    /// its runs ([`Trials::has_run`]), so that each candidate's runs follow one another, or the
    /// next shared run; `None` once every run is made.
    pub(crate) fn next(&self) -> Option<Turn> {
        if let Some(rematch) = &self.rematch {
            return [0, rematch.challenger]
                .into_iter()
                .zip(&rematch.times)
                .find(|(_, times)| times.len() < self.rematch_runs())
                .map(|(i, _)| Turn::Whole(i));
        }
        match &self.rounds {
            Some(rounds) if rounds.done < rounds.planned => Some(Turn::Shared(rounds.done)),
            Some(rounds) => rounds
                .nominees
                .iter()
                .copied()
                .find(|&i| self.times[i].len() <= self.untimed(i))
                .map(Turn::Whole),
            None => (0..self.measured)
                .find(|&i| !self.has_run(i))
                .map(Turn::Whole),
        }
    }

    /// The candidate that moves share `k` in shared run `round`: of the default and the
    /// `round`-th group of `shares - 1` candidates after it (the default again where the last
    /// group is short), the `(k + round) % shares`-th.
    pub(crate) fn sharer(&self, round: usize, k: usize) -> usize {
        let shares = self.shares.max(1);
        match (k + round) % shares {
            0 => 0,
            j => Some(round * (shares - 1) + j)
                .filter(|&i| i < self.times.len())
                .unwrap_or(0),
        }
    }

    /// Records shared run `round`: `times[k]` is how long share `k` took, scaled to the whole
    /// tensor, and `took` the run's time. Once the planned runs are in, or another would
    /// overrun the budget, the candidates faster than the default in their runs are the
    /// nominees, the least time against the default's first, as many as the budget has room
    /// for beside a [`Rematch`] (one at least, [`MOST_NOMINEES`] at most), to be timed whole
    /// next ([`Trials::record`] then chooses); without one, returns the default. A run recorded
    /// twice (two threads made it), or with another number of shares, is ignored.
    pub(crate) fn record_shared(
        &mut self,
        round: usize,
        times: &[Duration],
        took: Duration,
    ) -> Option<usize> {
        let whole: Duration = self.times.iter().flatten().sum();
        let (budget, rematch_runs) = (self.budget, self.rematch_runs());
        let (fitted_on, warm_up) = (self.fitted_on, self.warm_up);
        let sharers: Vec<usize> = (0..times.len()).map(|k| self.sharer(round, k)).collect();
        let rounds = self.rounds.as_mut()?;
        if rounds.done != round || times.len() != self.shares {
            return None;
        }
        let defaults = sharers.iter().zip(times).filter(|(&i, _)| i == 0);
        let default = defaults.map(|(_, &t)| t).min()?;
        rounds.default = Some(rounds.default.map_or(default, |d| d.min(default)));
        for (&i, &t) in sharers.iter().zip(times).filter(|(&i, _)| i != 0) {
            rounds.paired[i].push((t, default));
        }
        rounds.done += 1;
        rounds.spent += took;
        if rounds.done < rounds.planned && whole + rounds.spent + took > budget {
            rounds.planned = rounds.done;
        }
        if rounds.done < rounds.planned {
            return None;
        }
        let mut ahead: Vec<(usize, (Duration, Duration))> = (1..rounds.paired.len())
            .filter_map(|i| Some((i, rounds.paired[i].iter().copied().min_by(by_ratio)?)))
            .filter(|&(_, (t, default))| t < default)
            .collect();
        ahead.sort_by(|(_, a), (_, b)| by_ratio(a, b));
        // Each nominee's runs (a warm-up where the trials have one, and a trial) take about
        // as long as the default's whole run that fitted the budget, or its best in the
        // shares, whichever is longer; room stays for a rematch.
        let run = [fitted_on, rounds.default].into_iter().flatten().max();
        let run = run.unwrap_or(took).max(Duration::from_nanos(1));
        let left = budget.saturating_sub(whole + rounds.spent);
        let room = usize::try_from(left.as_nanos() / run.as_nanos()).unwrap_or(usize::MAX);
        let count = (room.saturating_sub(2 * rematch_runs) / (1 + usize::from(warm_up)))
            .clamp(1, MOST_NOMINEES);
        rounds.nominees = ahead.iter().take(count).map(|&(i, _)| i).collect();
        rounds.nominees.is_empty().then_some(0)
    }

    /// Records a whole run of candidate `i`; once every measured candidate has made its runs
    /// ([`Trials::has_run`]; after shared runs: once their nominees have theirs), returns the one
    /// with the fastest single trial (its runs but an untimed first), the earliest on a tie, if it
    /// beats the default's fastest trial (after shared runs, the faster of that and the default's
    /// best there) by its [`Margin`], else the default. Where that is another candidate than the
    /// default and the budget has room for it, the two are run again first ([`Rematch`]), and the
    /// choice follows those runs.
    pub(crate) fn record(&mut self, i: usize, took: Duration) -> Option<usize> {
        if self.rematch.is_some() {
            return self.record_rematch(i, took);
        }
        self.times.get_mut(i)?.push(took);
        let runs = self.times.iter().map(Vec::len).sum::<usize>();
        if runs == 1 && took >= LONG_RUN {
            self.share_from_first_run(took);
        }
        if runs == FITTED_ON_RUN && self.rounds.is_none() {
            self.fit_budget(took);
        }
        // Another run as long as this one, or as the slowest candidate's may be, would overrun
        // the budget: no more candidates.
        // (Nominees of shared runs ran faster than the default there: the next takes about as
        // long as this one or the default's.)
        let next_run = match (self.fitted_on, &self.rounds) {
            (Some(run), None) => took.max(run * SLOWEST_CANDIDATE),
            (Some(run), Some(_)) => took.max(run),
            (None, _) => took,
        };
        if self.spent() + next_run > self.budget {
            self.stop_measuring();
        }
        if self.next().is_some() {
            return None;
        }
        let choice = self.margin.choose(self.times.len(), |i| self.chosen_on(i));
        let rematch_takes = [0, choice]
            .into_iter()
            .filter_map(|i| self.chosen_on(i))
            .sum::<Duration>()
            * u32::try_from(self.rematch_runs()).unwrap_or(u32::MAX);
        if choice != 0 && self.spent() + rematch_takes <= self.budget {
            self.rematch = Some(Rematch {
                challenger: choice,
                times: [Vec::new(), Vec::new()],
            });
            return None;
        }
        Some(choice)
    }

    /// Records run of the default or the challenger (`i`) in the [`Rematch`]; once both have
    /// their runs, returns the challenger if its fastest trial there beats the default's there
    /// by the [`Margin`], else the default.
    fn record_rematch(&mut self, i: usize, took: Duration) -> Option<usize> {
        let runs = self.rematch_runs();
        let rematch = self.rematch.as_mut()?;
        let side = [0, rematch.challenger].iter().position(|&c| c == i)?;
        if rematch.times[side].len() >= runs {
            return None;
        }
        rematch.times[side].push(took);
        if rematch.times.iter().any(|times| times.len() < runs) {
            return None;
        }
        let untimed = usize::from(self.warm_up);
        let fastest = |side: usize| rematch.times[side][untimed..].iter().min().copied();
        let (default, challenger) = (fastest(0)?, fastest(1)?);
        Some(if self.margin.beats(challenger, default) {
            rematch.challenger
        } else {
            0
        })
    }

    /// The time candidate `i` is chosen on, once its runs are in (`None`: not measured): its
    /// fastest trial; after shared runs, for the default the faster of that and its best time
    /// in them (scaled to the whole tensor), and for others only if they were nominees.
    fn chosen_on(&self, i: usize) -> Option<Duration> {
        match &self.rounds {
            None => self.fastest_trial(i).filter(|_| i < self.measured),
            Some(rounds) if i == 0 => [self.fastest_trial(0), rounds.default]
                .into_iter()
                .flatten()
                .min(),
            Some(rounds) => self
                .fastest_trial(i)
                .filter(|_| rounds.nominees.contains(&i)),
        }
    }

    /// Candidate `i`'s fastest trial in whole runs, if it has one.
    fn fastest_trial(&self, i: usize) -> Option<Duration> {
        let counted = self.times.get(i)?.get(self.untimed(i)..)?;
        counted.iter().min().copied()
    }

    /// How long the runs so far took: whole and shared.
    fn spent(&self) -> Duration {
        let shared = self.rounds.as_ref().map_or(Duration::ZERO, |r| r.spent);
        self.times.iter().flatten().sum::<Duration>() + shared
    }

    /// Runs of each side of a [`Rematch`]: a warm-up where the trials had one, and as many
    /// trials.
    fn rematch_runs(&self) -> usize {
        usize::from(self.warm_up) + self.trials
    }

    /// Runs of candidate `i` that are not timed: a warm-up run, or the default's first.
    fn untimed(&self, i: usize) -> usize {
        usize::from(self.warm_up || i == 0)
    }

    /// Runs of candidate `i`.
    fn runs(&self, i: usize) -> usize {
        self.untimed(i) + self.trials
    }

    /// Whether candidate `i` has made its runs: all of them, or enough to show it is not expected
    /// to win ([`Trials::hopeless`]).
    fn has_run(&self, i: usize) -> bool {
        self.times[i].len() >= self.runs(i) || self.hopeless(i)
    }

    /// Whether candidate `i`, another than the default, has trials beyond the cache and the
    /// fastest of them takes more than [`HOPELESS`] times as long as the default's fastest.
    fn hopeless(&self, i: usize) -> bool {
        if i == 0 || self.margin != Margin::BeyondCache {
            return false;
        }
        match (self.fastest_trial(i), self.fastest_trial(0)) {
            (Some(trial), Some(default)) => trial > default * HOPELESS,
            _ => false,
        }
    }

    /// Once another run would overrun the budget: no candidate beyond those that have made their
    /// runs ([`Trials::has_run`]), unless that leaves fewer than two (slower candidates than the
    /// run that fitted the budget foretold spend it early).
    fn stop_measuring(&mut self) {
        let done = (0..self.measured).take_while(|&i| self.has_run(i)).count();
        self.measured = done.max(FEWEST_CANDIDATES.min(self.times.len()));
        // After shared runs, no nominee beyond those timed, unless none is (a nominee's
        // untimed runs are its warm-up's, as for any candidate but the default).
        let untimed = usize::from(self.warm_up);
        if let Some(rounds) = &mut self.rounds {
            let timed = rounds
                .nominees
                .iter()
                .take_while(|&&i| self.times[i].len() > untimed)
                .count();
            rounds.nominees.truncate(timed.max(1));
        }
    }

    /// Sets the warm-up, the trials per candidate and the candidates measured from the time of
    /// one run ([`FITTED_ON_RUN`]), keeping room for one run of the slowest candidate
    /// ([`SLOWEST_CANDIDATE`]).
    fn fit_budget(&mut self, run: Duration) {
        self.fitted_on = Some(run);
        let candidates = self.times.len();
        let spendable = self.budget.saturating_sub(run * (SLOWEST_CANDIDATE - 1));
        let affordable = spendable.as_nanos() / run.as_nanos().max(1);
        let affordable = usize::try_from(affordable).unwrap_or(usize::MAX);
        self.warm_up = run < LONG_RUN;
        let warm_up = usize::from(self.warm_up);
        self.trials = (affordable / candidates)
            .saturating_sub(warm_up)
            .clamp(1, MOST_TRIALS);
        // Without warm-ups the default still has its first run untimed.
        let defaults_first = usize::from(!self.warm_up);
        self.measured = (affordable.saturating_sub(defaults_first) / (self.trials + warm_up))
            .clamp(FEWEST_CANDIDATES.min(candidates), candidates);
        // Beyond the cache, runs too long for whole runs of every candidate may be shared
        // ([`shares`]): as many shared runs as the budget buys after keeping one whole run for
        // their nominee (a shared run taking up to half as long again as the default's: its
        // slower candidates), no more than the groups of candidates, where they measure more
        // candidates than whole runs would.
        if self.margin == Margin::BeyondCache
            && self.measured < candidates
            && self.shares >= shares::FEWEST_SHARES
        {
            let spent: Duration = self.times.iter().flatten().sum::<Duration>() + run;
            let left = self.budget.saturating_sub(spent).as_nanos();
            let affordable = left / (run.as_nanos() * 3 / 2).max(1);
            let groups = (candidates - 1).div_ceil(self.shares - 1);
            let planned = usize::try_from(affordable)
                .unwrap_or(MOST_ROUNDS)
                .min(MOST_ROUNDS)
                .min(groups);
            if planned > 0 && 1 + planned * (self.shares - 1) > self.measured {
                self.share_runs(planned);
            }
        }
    }

    /// Makes the next `planned` runs shared ones.
    fn share_runs(&mut self, planned: usize) {
        self.rounds = Some(Rounds {
            paired: vec![Vec::new(); self.times.len()],
            done: 0,
            spent: Duration::ZERO,
            planned,
            nominees: Vec::new(),
            default: None,
        });
    }

    /// Where the default's first run is long, shared runs may follow at once, the default
    /// timed in them: if they would, fits the budget on that run (which may be long from
    /// faulting in fresh pages, and buy fewer shared runs, not more).
    fn share_from_first_run(&mut self, run: Duration) {
        let mut fitted = self.clone();
        fitted.fit_budget(run);
        if fitted.rounds.is_some() {
            *self = fitted;
        }
    }
}

/// The candidates of one relayout, their trials, and the choice.
pub(crate) struct Tuner {
    candidates: Vec<Candidate>,
    /// The tensor's shares, for shared runs.
    shares: Option<Shares>,
    trials: Mutex<Trials>,
    chosen: OnceLock<usize>,
}

/// What the caller's run does while tuning: run a candidate (timed if it is a trial), or run
/// the candidates of a shared run, each on its share.
pub(crate) enum Step<'a> {
    /// Candidate `.0` moves the whole tensor; `.1` is its index if the run is timed.
    Whole(&'a Candidate, Option<usize>),
    /// A shared run: its number and, for each share in order, its kernel under the tactics of
    /// the candidate that moves it.
    Shared(usize, Vec<Candidate>),
}

impl Tuner {
    /// A tuner over `candidates` (at least two, distinct plans, ranked: the first is used until
    /// a choice is made) whose runs may take about `budget` in all, choosing another than the
    /// first where it wins by `margin`; `shares`, if the tensor has them (no more than the
    /// candidates), let one run time several candidates ([`shares`]).
    pub(crate) fn new(
        candidates: Vec<Candidate>,
        budget: Duration,
        margin: Margin,
        shares: Option<Shares>,
    ) -> Tuner {
        let shares = shares.filter(|s| s.len() <= candidates.len());
        let count = shares.as_ref().map_or(0, Shares::len);
        Tuner {
            trials: Mutex::new(Trials::new(candidates.len(), budget, margin, count)),
            candidates,
            shares,
            chosen: OnceLock::new(),
        }
    }

    /// What to run now. A shared run's kernels are planned and compiled here (not cached: they
    /// serve these runs only); if that fails, tuning ends with the default.
    pub(crate) fn next(&self) -> Step<'_> {
        if let Some(&i) = self.chosen.get() {
            return Step::Whole(&self.candidates[i], None);
        }
        let trials = self.lock_trials();
        match trials.next() {
            Some(Turn::Whole(i)) => Step::Whole(&self.candidates[i], Some(i)),
            Some(Turn::Shared(round)) => {
                let sharers: Vec<usize> = (0..self.shares.as_ref().map_or(0, Shares::len))
                    .map(|k| trials.sharer(round, k))
                    .collect();
                drop(trials);
                match self.share_kernels(&sharers) {
                    Some(kernels) => Step::Shared(round, kernels),
                    None => Step::Whole(self.chosen_or(0), None),
                }
            }
            // Every run is recorded, so the thread that recorded the last one chose (under the
            // lock) after this thread looked for a choice.
            None => Step::Whole(&self.candidates[0], None),
        }
    }

    /// The kernels of every share, share `k` under the tactics of candidate `sharers[k]`;
    /// `None` if one fails to compile (or there are no shares).
    fn share_kernels(&self, sharers: &[usize]) -> Option<Vec<Candidate>> {
        let shares = self.shares.as_ref().filter(|s| s.len() == sharers.len())?;
        sharers
            .iter()
            .enumerate()
            .map(|(k, &i)| {
                let request = shares.request(k, self.candidates[i].tactics);
                Engine::global()
                    .candidate(&request, false)
                    .ok()
                    .map(|(c, _)| c)
            })
            .collect()
    }

    /// Records a whole run of candidate `i`; returns the chosen candidate when this run
    /// completes the trials.
    pub(crate) fn record(&self, i: usize, took: Duration) -> Option<&Candidate> {
        let best = self.lock_trials().record(i, took)?;
        self.chosen.set(best).ok().map(|()| &self.candidates[best])
    }

    /// Records shared run `round`, in which share `k` took `times[k]` and the run `took`;
    /// returns the chosen candidate when this run completes the trials.
    pub(crate) fn record_shared(
        &self,
        round: usize,
        times: &[Duration],
        took: Duration,
    ) -> Option<&Candidate> {
        let shares = self.shares.as_ref()?;
        let scaled: Vec<Duration> = times
            .iter()
            .enumerate()
            .map(|(k, &t)| shares.scaled(k, t))
            .collect();
        let best = self.lock_trials().record_shared(round, &scaled, took)?;
        self.chosen.set(best).ok().map(|()| &self.candidates[best])
    }

    /// Candidate `i`, after making it the choice unless one was made.
    fn chosen_or(&self, i: usize) -> &Candidate {
        &self.candidates[*self.chosen.get_or_init(|| i)]
    }

    /// Makes the next `planned` runs shared ones, if the tensor has shares and no choice is
    /// made: for tests, which cannot make runs as long as those that share.
    #[cfg(test)]
    pub(crate) fn share_next_runs(&self, planned: usize) -> bool {
        let mut trials = self.lock_trials();
        let ready = trials.shares >= shares::FEWEST_SHARES && self.chosen.get().is_none();
        if ready {
            trials.share_runs(planned);
        }
        ready
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

    const RUNS: usize = 1 + MOST_TRIALS;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// A budget no run here comes near.
    const AMPLE: Duration = Duration::from_secs(3600);

    /// Runs the trials with `times[i][r]` as the `r`-th run of candidate `i` (a run not listed
    /// takes the candidate's last time; a rematch runs the two candidates' times again from
    /// their first), in the order `next` asks for them, within `budget`, and returns the order
    /// and the choice.
    fn tune_within<const N: usize>(
        budget: Duration,
        times: &[[u64; N]],
    ) -> (Vec<usize>, Option<usize>) {
        tune_with(Margin::InCache, budget, times)
    }

    /// [`tune_within`] with `margin`.
    fn tune_with<const N: usize>(
        margin: Margin,
        budget: Duration,
        times: &[[u64; N]],
    ) -> (Vec<usize>, Option<usize>) {
        let mut trials = Trials::new(times.len(), budget, margin, 0);
        let (mut order, mut runs, mut choice) = (Vec::new(), vec![0; times.len()], None);
        let mut rematched = false;
        while let Some(Turn::Whole(i)) = trials.next() {
            if trials.rematch.is_some() && !rematched {
                (runs, rematched) = (vec![0; times.len()], true);
            }
            order.push(i);
            choice = trials.record(i, ms(times[i][runs[i].min(N - 1)]));
            runs[i] += 1;
        }
        (order, choice)
    }

    fn tune<const N: usize>(times: &[[u64; N]]) -> (Vec<usize>, Option<usize>) {
        tune_within(AMPLE, times)
    }

    #[test]
    fn each_candidates_runs_follow_one_another() {
        let (order, _) = tune(&[[5; RUNS], [5; RUNS], [5; RUNS]]);
        let each = |i| [i; RUNS];
        assert_eq!(order, [each(0), each(1), each(2)].concat());
    }

    #[test]
    fn the_fastest_trial_wins_and_the_first_run_does_not_count() {
        // A candidate that finds its steady state only on its fourth trial (ordinary stores
        // after a streaming candidate) still wins.
        assert_eq!(
            tune(&[[20, 10, 10, 10, 10], [40, 40, 40, 40, 8]]).1,
            Some(1)
        );
        for (times, best) in [
            // Candidate 1's first run is the fastest of all, but it does not count.
            ([[9, 8, 8, 8], [1, 9, 9, 9], [9, 7, 9, 9]], 2),
            // One fast trial is enough: the minimum, not the mean.
            ([[6, 6, 6, 6], [9, 9, 2, 9], [6, 5, 5, 5]], 1),
            // A tie goes to the earlier candidate (the default is first).
            ([[9, 4, 4, 4], [9, 4, 4, 4], [9, 5, 5, 5]], 0),
            // Another candidate must beat the default by a tenth: 9 against 10 does not.
            ([[20, 10, 10, 10], [20, 9, 9, 9], [20, 11, 11, 11]], 0),
            ([[20, 10, 10, 10], [20, 9, 9, 9], [20, 8, 11, 11]], 2),
        ] {
            assert_eq!(tune(&times).1, Some(best), "{times:?}");
        }
    }

    #[test]
    fn a_candidate_ahead_of_the_default_is_run_again_beside_it_before_it_is_chosen() {
        // The default's trials fall in a slow phase of memory (12 ms against its usual 2):
        // candidate 1 leads them, but run again after them, the two as in the trials, the
        // default wins.
        let mut trials = Trials::new(3, AMPLE, Margin::InCache, 0);
        let (mut order, mut choice, mut rematch) = (Vec::new(), None, false);
        while let Some(Turn::Whole(i)) = trials.next() {
            order.push(i);
            rematch |= trials.rematch.is_some();
            let took = match (i, rematch) {
                (0, false) => 12,
                (0, true) => 2,
                (1, _) => 3,
                _ => 4,
            };
            choice = trials.record(i, ms(took));
        }
        let each = |i| [i; RUNS];
        assert_eq!(
            order,
            [each(0), each(1), each(2), each(0), each(1)].concat()
        );
        assert_eq!(choice, Some(0));
        // A candidate that leads the rematch too is chosen.
        assert_eq!(tune(&[[12], [3]]).1, Some(1));
        // A run of another candidate in the rematch, or one more than it asked for, is not
        // counted.
        assert_eq!(trials.record(2, ms(1)), None);
        assert_eq!(trials.record(1, ms(1)), None);
        // Without room in the budget for the rematch, the trials choose: two runs each of
        // 12 ms and 3 ms spend 30 of 50 ms, and the rematch would take 30 more.
        let (order, choice) = tune_within(ms(50), &[[12], [3]]);
        assert_eq!((order, choice), (vec![0, 0, 1, 1], Some(1)));
    }

    /// Beyond the cache, a candidate a twentieth faster than the default is chosen; in it, a
    /// tenth is needed. Which margin applies follows the bytes moved against the streaming
    /// threshold (a quarter of the cache).
    #[test]
    fn tensors_beyond_the_cache_switch_on_a_smaller_margin() {
        let choose = |margin: Margin, other: u64| {
            let mut trials = Trials::new(2, AMPLE, margin, 0);
            let mut choice = None;
            while let Some(Turn::Whole(i)) = trials.next() {
                choice = trials.record(i, ms([100, other][i]));
            }
            choice
        };
        assert_eq!(choose(Margin::InCache, 93), Some(0));
        assert_eq!(choose(Margin::InCache, 89), Some(1));
        assert_eq!(choose(Margin::BeyondCache, 96), Some(0));
        assert_eq!(choose(Margin::BeyondCache, 93), Some(1));
        let mib = 1 << 20;
        assert_eq!(
            Margin::for_bytes(64 * mib, 64 * mib, 9 * mib),
            Margin::BeyondCache
        );
        assert_eq!(
            Margin::for_bytes(36 * mib, 36 * mib, 9 * mib),
            Margin::BeyondCache
        );
        assert_eq!(
            Margin::for_bytes(36 * mib, 36 * mib - 1, 9 * mib),
            Margin::InCache
        );
        assert_eq!(
            Margin::for_bytes(25 * mib, 25 * mib, 8 * mib),
            Margin::InCache
        );
        assert_eq!(Margin::for_bytes(mib, mib, usize::MAX), Margin::InCache);
    }

    #[test]
    fn beyond_the_cache_a_candidate_twice_as_slow_as_the_default_makes_one_trial() {
        let each = |i| vec![i; RUNS];
        // Three times as long as the default: its warm-up and one trial, no more; half as long
        // again: all its runs.
        let (order, choice) = tune_with(Margin::BeyondCache, AMPLE, &[[10], [30], [15]]);
        assert_eq!(order, [each(0), vec![1, 1], each(2)].concat());
        assert_eq!(choice, Some(0));
        // Twice as long: all its runs.
        let (order, _) = tune_with(Margin::BeyondCache, AMPLE, &[[10], [20]]);
        assert_eq!(order, [each(0), each(1)].concat());
        // In the cache, all its runs: it may take a few to find its destination there (and
        // leading, it runs again beside the default).
        let (order, choice) =
            tune_with(Margin::InCache, AMPLE, &[[10, 10, 10, 10], [40, 40, 40, 8]]);
        assert_eq!(order, [each(0), each(1), each(0), each(1)].concat());
        assert_eq!(choice, Some(1));
        // A slow trial after a fast one does not stop a candidate, and a fast one still wins.
        let (order, choice) = tune_with(Margin::BeyondCache, AMPLE, &[[10, 10, 10], [9, 5, 30]]);
        assert_eq!(order, [each(0), each(1), each(0), each(1)].concat());
        assert_eq!(choice, Some(1));
    }

    #[test]
    fn a_choice_comes_only_once_every_candidate_has_its_runs() {
        let mut trials = Trials::new(2, AMPLE, Margin::InCache, 0);
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

    #[test]
    fn the_budget_cuts_runs_then_candidates_in_rank_order() {
        // Eleven candidates of 10 ms runs: 500 ms buys 50 runs, four for each.
        let (order, _) = tune_within(ms(500), &[[10]; 11]);
        assert_eq!(order.len(), 44);
        // 250 ms buys 25 runs: two for each of 11 (one trial each).
        let (order, _) = tune_within(ms(250), &[[10]; 11]);
        assert_eq!(order.len(), 22);
        // 100 ms, less room for a run four times as long, buys 7: two runs for the first three
        // candidates, in order.
        let (order, _) = tune_within(ms(100), &[[10]; 11]);
        assert_eq!(order, [0, 0, 1, 1, 2, 2]);
        // However long a run, the default and the next candidate get a trial each; runs this
        // long count from the first, but for the default's.
        let (order, choice) = tune_within(ms(100), &[[900, 800], [700, 700], [1, 1]]);
        assert_eq!((order, choice), (vec![0, 0, 1], Some(1)));
        // 400 ms, less room for a 200 ms run, buys five 50 ms runs: the default's two (its
        // first not counted) and one each of the next three candidates; the faster ones ranked
        // below them are not measured.
        let mut times = [[50, 50]; 11];
        (times[1], times[2], times[3], times[4]) = ([55, 55], [40, 40], [30, 30], [20, 20]);
        // The budget still has room to run the default and that candidate again (one run
        // each), which confirms the choice.
        let (order, choice) = tune_within(ms(400), &times);
        assert_eq!((order, choice), (vec![0, 0, 1, 2, 3, 0, 3], Some(3)));
        // A candidate four times as slow as the default stays within the budget: the 488 MiB
        // f64 transpose's runs (ms) on a 2-core Intel Xeon VM, which took 555 ms in all
        // when only the last run's length was foreseen.
        let f64_8000 = [[66, 65], [64, 64], [84, 84], [276, 276]];
        let (order, _) = tune_within(ms(400), &f64_8000);
        assert_eq!(order, [0, 0, 1]);
        // The first run of all, which may fault in fresh pages, does not fit the budget: a
        // slow first run still leaves every candidate its trials.
        let (order, _) = tune_within(ms(400), &[[100, 5], [5, 5], [5, 5]]);
        assert_eq!(order.len(), 3 * RUNS);
        // A single candidate's trials end with its choice.
        assert_eq!(tune_within(ms(1), &[[5, 5]]), (vec![0, 0], Some(0)));
        // Slower candidates than the first run foretold spend the budget early: measuring ends
        // with the candidate that spent it (100 ms buys two runs of five 10 ms candidates).
        let (order, choice) = tune_within(ms(100), &[[10], [50], [40], [1], [1]]);
        assert_eq!((order, choice), (vec![0, 0, 1, 1], Some(0)));
        let (order, _) = tune_within(ms(100), &[[10], [20], [40], [1], [1]]);
        assert_eq!(
            order,
            [0, 0, 1, 1, 2],
            "the third candidate does not finish"
        );
    }

    /// Trials beyond the cache with `shares` shares, in which candidate `i`'s whole runs take
    /// `whole[i]` ms and its shares scale to `shared[i]` ms (shared runs take the default's
    /// whole time); returns the turns and the choice.
    fn share_within(
        budget: Duration,
        shares: usize,
        whole: &[u64],
        shared: &[u64],
    ) -> (Vec<Turn>, Option<usize>) {
        let mut trials = Trials::new(whole.len(), budget, Margin::BeyondCache, shares);
        let (mut turns, mut choice) = (Vec::new(), None);
        while let Some(turn) = trials.next() {
            turns.push(turn);
            choice = match turn {
                Turn::Whole(i) => trials.record(i, ms(whole[i])),
                Turn::Shared(round) => {
                    let times: Vec<Duration> = (0..shares)
                        .map(|k| ms(shared[trials.sharer(round, k)]))
                        .collect();
                    trials.record_shared(round, &times, ms(whole[0]))
                }
            };
        }
        (turns, choice)
    }

    #[test]
    fn shared_runs_measure_candidates_whole_runs_would_not_reach() {
        use Turn::{Shared, Whole};
        // Eight candidates of 50 ms runs in 400 ms: whole runs would measure four. After the
        // default's first run and keeping 50 ms for the nominee's, three shared runs (of up to
        // 75 ms) measure the default beside each of the seven others in quarters, and the one
        // faster than it is timed whole, then run again beside it (a rematch).
        let whole = [50, 50, 50, 50, 50, 50, 50, 35];
        let mut shared = [50; 8];
        shared[7] = 30;
        let (turns, choice) = share_within(ms(400), 4, &whole, &shared);
        let shared_runs = [Whole(0), Shared(0), Shared(1), Shared(2)];
        let expected = [&shared_runs[..], &[Whole(7), Whole(0), Whole(7)]].concat();
        assert_eq!((turns, choice), (expected, Some(7)));
        // 100 ms runs: whole runs would measure two candidates; after the first, 200 ms buy
        // one shared run and keep room for the nominee's.
        let pace = [100, 100, 70, 100];
        let (turns, choice) = share_within(ms(400), 4, &pace, &pace);
        assert_eq!(
            (turns, choice),
            (vec![Whole(0), Shared(0), Whole(2)], Some(2))
        );
        // A first run under 20 ms beyond the cache is fitted on the second, as before (a
        // second of 25 ms would not have shared either).
        let mut trials = Trials::new(20, ms(400), Margin::BeyondCache, 4);
        trials.record(0, ms(15));
        assert_eq!(trials.next(), Some(Whole(0)));
        trials.record(0, ms(25));
        assert_eq!(trials.next(), Some(Whole(1)));
        // Whole, the nominee must still beat the default by a twentieth.
        let mut slow = whole;
        slow[7] = 48;
        assert_eq!(share_within(ms(400), 4, &slow, &shared).1, Some(0));
        // In thirds, the default and the next two: four shared runs would be needed, three
        // are made, and the eighth candidate is not measured.
        let (turns, choice) = share_within(ms(400), 3, &whole, &shared);
        assert_eq!((turns.len(), choice), (4, Some(0)));
        // Without a candidate faster than the default in the shares, the default is chosen
        // with no whole run of another.
        let (turns, choice) = share_within(ms(400), 4, &whole, &[50, 50, 51, 50, 50, 50, 50, 50]);
        assert_eq!((turns.len(), choice), (4, Some(0)));
    }

    #[test]
    fn candidates_ahead_in_the_shares_are_timed_whole_best_first_as_the_budget_allows() {
        use Turn::Whole;
        // The shares put candidate 7 ahead of candidate 4 (against the default, 0.6 and 0.7),
        // then candidate 5 (0.9) and candidate 2 (0.98); whole, candidate 4 is the fastest. In
        // 400 ms, after the default's first run and three shared runs, 200 ms are left: two
        // nominees' runs and a rematch's two.
        let whole = [50, 50, 50, 50, 35, 50, 50, 50];
        let shared = [50, 50, 49, 50, 35, 45, 50, 30];
        let (turns, choice) = share_within(ms(400), 4, &whole, &shared);
        let whole_runs = &turns[4..];
        assert_eq!(whole_runs, [Whole(7), Whole(4), Whole(0), Whole(4)]);
        assert_eq!(choice, Some(4));
        // Runs twice as long in a second: 600 ms left after the shared runs, room for four
        // nominees beside a rematch, and three of them (not candidate 2) are timed.
        let twice = |times: &[u64]| times.iter().map(|t| t * 2).collect::<Vec<u64>>();
        let (turns, choice) = share_within(ms(1000), 4, &twice(&whole), &twice(&shared));
        assert_eq!(
            turns[4..],
            [Whole(7), Whole(4), Whole(5), Whole(0), Whole(4)]
        );
        assert_eq!(choice, Some(4));
        // Whole, none beats the default by a twentieth: the default.
        let even = [100, 100, 100, 100, 96, 100, 100, 100];
        let (turns, choice) = share_within(ms(1000), 4, &even, &twice(&shared));
        assert_eq!((turns.len(), choice), (7, Some(0)));
        // A nominee's whole run far longer than foreseen leaves the rest untimed, and the
        // choice rests on those timed.
        let mut trials = Trials::new(8, ms(1000), Margin::BeyondCache, 4);
        trials.record(0, ms(100));
        for round in 0..3 {
            let times: Vec<Duration> = (0..4)
                .map(|k| ms(2 * shared[trials.sharer(round, k)]))
                .collect();
            assert_eq!(trials.record_shared(round, &times, ms(100)), None);
        }
        assert_eq!(trials.next(), Some(Whole(7)));
        assert_eq!(trials.record(7, ms(700)), Some(0));
        assert_eq!(trials.next(), None);
    }

    #[test]
    fn nominees_with_warm_ups_leave_room_for_the_rematch() {
        use Turn::{Shared, Whole};
        // Twenty candidates beyond the cache in 250 ms: the default's first run takes 15 ms,
        // its second 19, under 20 ms, so every candidate's first run is a warm-up. Whole runs
        // would measure five candidates; three shared runs measure the rest. Shares put
        // candidates 7, 4 and 2 ahead; whole, candidate 4 takes 14 ms, the others 19.
        let whole = |i: usize| ms(if i == 4 { 14 } else { 19 });
        let shared = |i: usize| {
            ms(match i {
                7 => 15,
                4 => 16,
                2 => 18,
                _ => 19,
            })
        };
        let mut trials = Trials::new(20, ms(250), Margin::BeyondCache, 4);
        let (mut turns, mut choice, mut spent) = (Vec::new(), None, Duration::ZERO);
        for took in [ms(15), ms(19)] {
            assert_eq!(trials.next(), Some(Whole(0)));
            choice = trials.record(0, took);
            spent += took;
        }
        while let Some(turn) = trials.next() {
            turns.push(turn);
            let took = match turn {
                Whole(i) => {
                    choice = trials.record(i, whole(i));
                    whole(i)
                }
                Shared(round) => {
                    let times: Vec<Duration> =
                        (0..4).map(|k| shared(trials.sharer(round, k))).collect();
                    choice = trials.record_shared(round, &times, ms(19));
                    ms(19)
                }
            };
            spent += took;
        }
        // 91 ms spent after the shared runs leave room for eight runs of 19 ms: four kept for
        // the rematch (a warm-up and a trial a side), two nominees with a warm-up and a trial
        // each (candidate 2 is not timed), then the rematch, within the budget.
        let whole_turns = [Whole(7), Whole(7), Whole(4), Whole(4)];
        let rematch = [Whole(0), Whole(0), Whole(4), Whole(4)];
        let expected = [
            &[Shared(0), Shared(1), Shared(2)][..],
            &whole_turns,
            &rematch,
        ]
        .concat();
        assert_eq!(turns, expected);
        assert_eq!(choice, Some(4));
        assert!(spent <= ms(250), "{spent:?}");
    }

    #[test]
    fn whole_runs_stay_where_shares_are_not_needed_or_not_there() {
        let all_whole = |turns: &[Turn]| turns.iter().all(|t| matches!(t, Turn::Whole(_)));
        // Runs short enough to measure every candidate whole.
        let (turns, _) = share_within(ms(400), 3, &[5; 3], &[5; 3]);
        assert!(all_whole(&turns));
        // Twenty candidates of 15 ms runs: whole runs measure eleven, three shared runs ten.
        let (turns, _) = share_within(ms(400), 4, &[15; 20], &[15; 20]);
        assert!(all_whole(&turns));
        assert_eq!(
            turns.len(),
            2 + 2 * 10,
            "the default's two, two for ten others"
        );
        // 200 ms runs: after the first and room for a nominee's, no shared run fits.
        let (turns, _) = share_within(ms(400), 4, &[200; 8], &[200; 8]);
        assert!(all_whole(&turns));
        // Too few shares.
        let (turns, _) = share_within(ms(400), 2, &[50; 8], &[50; 8]);
        assert!(all_whole(&turns));
        // In the cache, shares would not run as the whole does.
        let mut trials = Trials::new(6, ms(400), Margin::InCache, 6);
        while let Some(Turn::Whole(i)) = trials.next() {
            trials.record(i, ms(100));
        }
        assert_eq!(trials.next(), None);
    }

    #[test]
    fn a_shared_run_counts_once_and_shared_runs_stop_at_the_budget() {
        // Eight candidates of 40 ms runs, four shares: after the default's first run, three
        // shared runs planned.
        let mut trials = Trials::new(8, ms(400), Margin::BeyondCache, 4);
        assert_eq!(trials.next(), Some(Turn::Whole(0)));
        trials.record(0, ms(40));
        assert_eq!(trials.next(), Some(Turn::Shared(0)));
        // The default, then candidates 1 to 3: against the default, 0.75, 1.25 and 1.5.
        let times = [ms(40), ms(30), ms(50), ms(60)];
        assert_eq!(trials.record_shared(0, &times, ms(45)), None);
        // The same run again (another thread's), and a run of the wrong size: ignored.
        assert_eq!(trials.record_shared(0, &times, ms(45)), None);
        assert_eq!(trials.record_shared(1, &times[..3], ms(45)), None);
        assert_eq!(trials.next(), Some(Turn::Shared(1)));
        // Candidates 4 to 6, then the default, which ran faster in this run (memory's speed
        // drifts): against it, 2, 2.25 and 2.5. A run far longer than foreseen ends the shared
        // runs (40 + 45 + 250 leaves no room for another 250 ms); candidate 1 is timed whole,
        // against the default's best time, 20 ms in the second shared run.
        let shared = [ms(40), ms(45), ms(50), ms(20)];
        assert_eq!(trials.record_shared(1, &shared, ms(250)), None);
        assert_eq!(trials.next(), Some(Turn::Whole(1)));
        assert_eq!(trials.record(1, ms(30)), Some(0));
        assert_eq!(trials.next(), None);
        // Faster than that, it is chosen.
        let mut again = Trials::new(8, ms(400), Margin::BeyondCache, 4);
        again.record(0, ms(40));
        again.record_shared(0, &times, ms(45));
        again.record_shared(1, &shared, ms(250));
        // Ahead of the default's 20 ms, it runs again beside it before it is chosen.
        assert_eq!(again.record(1, ms(18)), None);
        assert_eq!(again.next(), Some(Turn::Whole(0)));
        assert_eq!(again.record(0, ms(40)), None);
        assert_eq!(again.next(), Some(Turn::Whole(1)));
        assert_eq!(again.record(1, ms(18)), Some(1));
    }
}
