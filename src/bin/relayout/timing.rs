//! Wall-clock timing shared by the demo and `relayout bench`: medians of interleaved runs.

use std::time::{Duration, Instant};

use relayout::Error;

/// A timed run lasts at least this long: short calls are repeated within one run.
const MIN_RUN: Duration = Duration::from_millis(10);

/// Median seconds per call of each contender; `call(i)` runs contender `i` once, and contender
/// `i` gets `runs[i]` timed runs (at least one).
///
/// Each contender is first warmed up, doubling its calls until a batch lasts [`MIN_RUN`]; that
/// count of calls makes one timed run. Then the runs are interleaved: round `r` runs every
/// contender that is owed more than `r` runs once, in order, so drift hits all of them alike.
pub fn interleaved_medians<const N: usize>(
    runs: [usize; N],
    mut call: impl FnMut(usize) -> Result<(), Error>,
) -> Result<[f64; N], Error> {
    let mut timed = |i: usize, calls: usize| -> Result<Duration, Error> {
        let start = Instant::now();
        for _ in 0..calls {
            call(i)?;
        }
        Ok(start.elapsed())
    };
    let mut calls = [1usize; N];
    for (i, calls) in calls.iter_mut().enumerate() {
        while timed(i, *calls)? < MIN_RUN {
            *calls *= 2;
        }
    }
    let mut times: [Vec<f64>; N] = [(); N].map(|()| Vec::new());
    for round in 0..runs.into_iter().max().unwrap_or(0).max(1) {
        for (i, &owed) in runs.iter().enumerate() {
            if round < owed.max(1) {
                let secs = timed(i, calls[i])?.as_secs_f64();
                times[i].push(secs / calls[i] as f64);
            }
        }
    }
    Ok(times.map(median))
}

/// The median (the mean of the middle two for an even count).
pub fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    let mid = xs.len() / 2;
    if xs.len().is_multiple_of(2) {
        (xs[mid - 1] + xs[mid]) / 2.0
    } else {
        xs[mid]
    }
}
