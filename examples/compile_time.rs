//! Median Cranelift compile time of a few common relayouts (each variant a cache miss).
//!
//! `cargo run --release --example compile_time`

use relayout::{compile_relayout, Layout};

fn main() -> Result<(), relayout::Error> {
    type Pair = fn(usize) -> Result<(Layout, Layout), relayout::Error>;
    let pairs: [(&str, Pair); 5] = [
        ("copy 2-D", |k| {
            Ok((
                Layout::row_major(&[512, 512 + k])?,
                Layout::row_major(&[512, 512 + k])?,
            ))
        }),
        ("transpose 2-D", |k| {
            Ok((
                Layout::row_major(&[512, 512 + k])?,
                Layout::col_major(&[512, 512 + k])?,
            ))
        }),
        ("NCHW -> NHWC", |k| {
            Ok((
                Layout::row_major(&[8, 64, 56 + k, 56])?,
                Layout::ordered(&[8, 64, 56 + k, 56], &[0, 2, 3, 1])?,
            ))
        }),
        ("odd/even strips", |k| {
            Ok((
                Layout::row_major(&[1024 * (k + 1)])?,
                Layout::parse(&format!("morello:[{}] [0, 0 oe(16)]", 1024 * (k + 1)))?,
            ))
        }),
        ("3-D reverse", |k| {
            Ok((
                Layout::row_major(&[64, 64, 64 + k])?,
                Layout::col_major(&[64, 64, 64 + k])?,
            ))
        }),
    ];
    println!("{:<16} {:>12} {:>14}", "pair", "median µs", "cache hit µs");
    for (name, make) in pairs {
        let mut micros = Vec::new();
        let mut hits = Vec::new();
        for k in 0..21 {
            let (src, dst) = make(k)?;
            micros.push(compile_relayout(&src, &dst)?.compile_micros());
            let t = std::time::Instant::now();
            let again = compile_relayout(&src, &dst)?;
            hits.push(t.elapsed().as_secs_f64() * 1e6);
            assert!(again.was_cached());
        }
        micros.sort_by(f64::total_cmp);
        hits.sort_by(f64::total_cmp);
        println!("{name:<16} {:>12.0} {:>14.1}", micros[10], hits[10]);
    }
    Ok(())
}
