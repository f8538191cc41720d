//! The markdown table of outcomes, and the notes under it.

use crate::measure::{Outcome, Verdict};

/// The table's column headings.
const HEADINGS: [&str; 11] = [
    "case",
    "conversion",
    "bytes",
    "relayout GB/s",
    "oneDNN GB/s",
    "memcpy GB/s",
    "relayout ÷ oneDNN",
    "relayout ÷ memcpy",
    "oneDNN ÷ memcpy",
    "rounds",
    "oneDNN impl",
];

/// The heading row and the separator row.
pub fn heading() -> String {
    let separator = vec!["---"; HEADINGS.len()];
    format!("{}\n{}", row(&HEADINGS), row(&separator))
}

/// The row of one outcome.
pub fn outcome_row(o: &Outcome) -> String {
    let gbps = |secs: f64| o.bytes as f64 / secs / 1e9;
    let cell = |v: &Verdict| match v {
        Verdict::Secs(s) => significant(gbps(*s)),
        Verdict::Fail(_) => "FAIL".to_string(),
        Verdict::NotApplicable(_) => "n/a".to_string(),
    };
    // How many times faster the first is than the second (a ratio of speeds).
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => significant(b / a),
        _ => "–".to_string(),
    };
    let (relayout, onednn, memcpy) = (secs(&o.relayout), secs(&o.onednn), Some(o.memcpy));
    let cells = [
        o.name.to_string(),
        format!("{}>{}", o.conversion.from_type(), o.conversion.to_type()),
        human_bytes(o.bytes),
        cell(&o.relayout),
        cell(&o.onednn),
        significant(gbps(o.memcpy)),
        ratio(relayout, onednn),
        ratio(relayout, memcpy),
        ratio(onednn, memcpy),
        o.rounds.to_string(),
        o.implementation.clone().unwrap_or_else(|| "–".to_string()),
    ];
    row(&cells)
}

/// One line for every `FAIL` or `n/a` in `outcomes`, saying why.
pub fn notes(outcomes: &[Outcome]) -> Vec<String> {
    let mut notes = Vec::new();
    for o in outcomes {
        for (system, v) in [("relayout", &o.relayout), ("oneDNN", &o.onednn)] {
            match v {
                Verdict::Fail(why) => notes.push(format!("- {}: {system} FAIL: {why}", o.name)),
                Verdict::NotApplicable(why) => {
                    notes.push(format!("- {}: {system} n/a: {why}", o.name))
                }
                Verdict::Secs(_) => {}
            }
        }
    }
    notes
}

/// The median seconds of a timed system.
fn secs(v: &Verdict) -> Option<f64> {
    match v {
        Verdict::Secs(s) => Some(*s),
        _ => None,
    }
}

/// A markdown table row.
fn row<S: AsRef<str>>(cells: &[S]) -> String {
    let cells: Vec<&str> = cells.iter().map(|c| c.as_ref()).collect();
    format!("| {} |", cells.join(" | "))
}

/// `x` with three significant digits from 1 up, and two decimals below 1.
fn significant(x: f64) -> String {
    let decimals = match x.abs() {
        a if a >= 100.0 => 0,
        a if a >= 10.0 => 1,
        _ => 2,
    };
    format!("{x:.decimals$}")
}

/// `bytes` in KiB or MiB, e.g. `24.5 MiB`.
fn human_bytes(bytes: usize) -> String {
    let kib = bytes as f64 / 1024.0;
    match kib {
        k if k >= 1024.0 => format!("{:.1} MiB", k / 1024.0),
        k => format!("{k:.1} KiB"),
    }
}
