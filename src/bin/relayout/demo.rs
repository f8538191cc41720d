//! The default demo: compile one relayout, tune it, show what the JIT decided, check it, time it.

use std::time::Instant;

use relayout::{compile_relayout_with, reference, Error, Layout, Options};

use crate::timing;

/// Source and destination of the demo: a 4096×4096 f32 transpose (64 MiB each way).
const SRC: &str = "cute:(4096,4096):(4096,1)";
const DST: &str = "cute:(4096,4096):(1,4096)";
/// CLIF lines shown before pointing to `relayout clif`.
const CLIF_LINES: usize = 40;
/// Timed runs per contender, interleaved; the median is reported.
const RUNS: usize = 5;

pub fn run() -> Result<(), Box<dyn std::error::Error>> {
    let (src, dst) = (Layout::parse(SRC)?, Layout::parse(DST)?);
    outln!("relayout demo: f32 {SRC}  ->  {DST}")?;
    outln!("source:      {src}\ndestination: {dst}\n")?;
    let kernel = compile_relayout_with(&src, &dst, Options::new().tune(true))?;
    let a: Vec<f32> = (0..src.cosize()).map(|i| i as f32).collect();
    let mut got = vec![f32::NAN; dst.cosize()];
    // Tuning: the first runs time each candidate tactics (each a correct kernel) and keep the
    // fastest.
    let start = Instant::now();
    let mut runs = 0;
    while kernel.tactics().is_none() {
        kernel.run(&a, &mut got)?;
        runs += 1;
    }
    outln!(
        "tuned in {runs} runs ({:.0} ms), compiled in {:.0} µs\n\n{}",
        start.elapsed().as_secs_f64() * 1e3,
        kernel.compile_micros(),
        kernel.plan()
    )?;
    let clif: Vec<&str> = kernel.clif()?.lines().collect();
    outln!("Cranelift IR (first {CLIF_LINES} of {} lines; `relayout clif --src '{SRC}' --dst '{DST}'` prints all):", clif.len())?;
    for line in clif.iter().take(CLIF_LINES) {
        outln!("  {line}")?;
    }

    let mut want = vec![f32::NAN; dst.cosize()];
    got.fill(f32::NAN);
    kernel.run(&a, &mut got)?;
    reference::relayout(&src, &a, &dst, &mut want, None)?;
    let same = got
        .iter()
        .zip(&want)
        .all(|(g, w)| g.to_bits() == w.to_bits());
    outln!(
        "\ncheck against the reference: {}",
        if same { "identical" } else { "DIFFERENT" }
    )?;
    if !same {
        return Err(Error::Codegen("the demo kernel disagrees with the reference".into()).into());
    }

    let bytes = (src.size() * 4) as f64;
    let mut copy = vec![0f32; a.len()];
    let [jit, naive, memcpy] = timing::interleaved_medians([RUNS; 3], |i| match i {
        0 => kernel.run(&a, &mut got),
        1 => reference::relayout(&src, &a, &dst, &mut want, None),
        _ => {
            copy.copy_from_slice(&a);
            Ok(())
        }
    })?;
    outln!(
        "\nmedian of {RUNS} interleaved runs, {:.0} MiB moved:",
        bytes / (1 << 20) as f64
    )?;
    for (name, secs) in [("relayout", jit), ("naive loop", naive), ("memcpy", memcpy)] {
        outln!(
            "  {name:<11} {:>8.2} ms  {:>6.2} GB/s",
            secs * 1e3,
            bytes / secs / 1e9
        )?;
    }
    outln!(
        "  relayout is {:.2}x memcpy and {:.1}x the naive loop",
        memcpy / jit,
        naive / jit
    )?;
    Ok(())
}
