//! relayout's fused relayout-and-convert against oneDNN's reorder doing the same conversion, on
//! the converting cases of relayout's suite, one thread each: every result checked bit for bit
//! against relayout's reference loop, then timed in interleaved rounds beside memcpy.
//!
//! ```text
//! relayout-onednn-compare [--size full|small] [--seconds S] [--case NAME]
//! ```
//!
//! `run.sh` fetches oneDNN, builds this and runs it with `OMP_NUM_THREADS=1`; see `README.md`.

mod cases;
mod dnnl;
mod error;
mod ffi;
mod measure;
mod table;
mod timing;

use std::process::ExitCode;
use std::time::Duration;

use relayout::suite::{conversion_cases, Size};

use crate::error::{Error, Result};

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq)]
struct Args {
    /// The suite's sizes: full (the benchmark's) or reduced (`--size small`).
    size: Size,
    /// About how long to time each case.
    budget: Duration,
    /// Only the case of this name.
    only: Option<String>,
}

const USAGE: &str =
    "usage: relayout-onednn-compare [--size full|small] [--seconds S] [--case NAME]";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("relayout-onednn-compare: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Checks and times every case asked for, printing a row as each finishes.
fn run() -> Result<()> {
    let args = parse_args(std::env::args().skip(1))?;
    let version = dnnl::version()?;
    let ctx = dnnl::Context::new()?;
    let mut cases = conversion_cases(args.size)?;
    if let Some(name) = &args.only {
        cases.retain(|c| c.name == name);
        if cases.is_empty() {
            return Err(Error::Other(format!("no converting case is called {name}")));
        }
    }
    println!("{}", header(&version, &args));
    println!();
    println!("{}", table::heading());
    let mut outcomes = Vec::new();
    for case in &cases {
        let outcome = measure::measure(case, &ctx, args.budget)?;
        println!("{}", table::outcome_row(&outcome));
        outcomes.push(outcome);
    }
    let notes = table::notes(&outcomes);
    if !notes.is_empty() {
        println!("\n{}", notes.join("\n"));
    }
    Ok(())
}

/// Reads the arguments after the program's name.
fn parse_args(mut words: impl Iterator<Item = String>) -> Result<Args> {
    let mut args = Args {
        size: Size::Full,
        budget: Duration::from_secs_f64(2.5),
        only: None,
    };
    let usage = |what: String| Error::Other(format!("{what}\n{USAGE}"));
    while let Some(word) = words.next() {
        let mut value = || {
            words
                .next()
                .ok_or_else(|| usage(format!("{word} needs a value")))
        };
        match word.as_str() {
            "--size" => {
                args.size = match value()?.as_str() {
                    "full" => Size::Full,
                    "small" => Size::Reduced,
                    other => return Err(usage(format!("--size {other}: full or small"))),
                }
            }
            "--seconds" => {
                let text = value()?;
                args.budget = text
                    .parse::<f64>()
                    .ok()
                    .and_then(|s| Duration::try_from_secs_f64(s).ok())
                    .ok_or_else(|| usage(format!("--seconds {text}: a number of seconds")))?;
            }
            "--case" => args.only = Some(value()?),
            "-h" | "--help" => return Err(usage("the options:".into())),
            other => return Err(usage(format!("unknown argument {other}"))),
        }
    }
    Ok(args)
}

/// The line above the table: versions, the CPU, the threads and the sizes.
fn header(version: &str, args: &Args) -> String {
    let omp = std::env::var("OMP_NUM_THREADS").unwrap_or_else(|_| "unset".into());
    let size = match args.size {
        Size::Full => "full",
        Size::Reduced => "small",
    };
    format!(
        "relayout (1 thread, tuned) against oneDNN {version} reorder; {}; \
         OMP_NUM_THREADS={omp}; --size {size}, about {:.1} s per case",
        cpu(),
        args.budget.as_secs_f64()
    )
}

/// The CPU as `/proc/cpuinfo` names it: `family F model M (model name)`.
fn cpu() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |key: &str| {
        info.lines()
            .filter_map(|line| line.split_once(':'))
            .find(|(k, _)| k.trim() == key)
            .map_or("?".to_string(), |(_, v)| v.trim().to_string())
    };
    format!(
        "CPU family {} model {} ({})",
        field("cpu family"),
        field("model"),
        field("model name")
    )
}
