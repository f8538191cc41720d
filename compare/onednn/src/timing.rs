//! Medians of interleaved, rotated rounds of several contenders in one process.

use std::time::{Duration, Instant};

use crate::error::Result;

/// A sample lasts at least this long: a short call is repeated within one sample.
const MIN_SAMPLE: Duration = Duration::from_millis(10);
/// Fewest rounds, however long a round takes.
const MIN_ROUNDS: usize = 5;
/// Most rounds, however short a round is.
const MAX_ROUNDS: usize = 200;

/// What the rounds measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Medians {
    /// Median seconds per call of each contender.
    pub secs: Vec<f64>,
    /// Rounds run (one sample of every contender each).
    pub rounds: usize,
}

/// Times `n` contenders, where `call(i)` runs contender `i` once, for about `budget` in all.
///
/// Warm-up and calibration: each contender's calls per sample double from one until a sample
/// lasts [`MIN_SAMPLE`]. Then come rounds of one sample of every contender, each round starting
/// at the next contender (so that none always runs after the same one), as many as fit
/// `budget` by the calibrated times, between [`MIN_ROUNDS`] and [`MAX_ROUNDS`].
pub fn interleaved(
    n: usize,
    budget: Duration,
    mut call: impl FnMut(usize) -> Result<()>,
) -> Result<Medians> {
    let mut sample = |i: usize, calls: usize| -> Result<Duration> {
        let start = Instant::now();
        for _ in 0..calls {
            call(i)?;
        }
        Ok(start.elapsed())
    };
    let mut calls = vec![1; n];
    let mut round = Duration::ZERO;
    for (i, calls) in calls.iter_mut().enumerate() {
        let mut took = sample(i, *calls)?;
        while took < MIN_SAMPLE {
            *calls *= 2;
            took = sample(i, *calls)?;
        }
        round += took;
    }
    let rounds = (budget.as_secs_f64() / round.as_secs_f64().max(1e-9)) as usize;
    let rounds = rounds.clamp(MIN_ROUNDS, MAX_ROUNDS);
    let mut secs = vec![Vec::with_capacity(rounds); n];
    for r in 0..rounds {
        for i in (0..n).map(|k| (r + k) % n) {
            secs[i].push(sample(i, calls[i])?.as_secs_f64() / calls[i] as f64);
        }
    }
    Ok(Medians {
        secs: secs.into_iter().map(median).collect(),
        rounds,
    })
}

/// The median (the mean of the middle two of an even count).
fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    let mid = xs.len() / 2;
    match xs.len() % 2 {
        0 => (xs[mid - 1] + xs[mid]) / 2.0,
        _ => xs[mid],
    }
}
