//! Many threads at once: compiling (through the shared kernel cache), running one kernel,
//! dropping handles while others run; and memory: compiling and dropping tens of thousands of
//! kernels does not grow the process without bound.
//!
//! The tests take a lock so they run one at a time: the memory figures are process-wide.
//! `cargo test --test concurrency -- --ignored --nocapture` runs the full memory test
//! (30 000 kernels) and prints its figures.

mod common;

use std::sync::{Barrier, Mutex, MutexGuard};

use common::pattern;
use relayout::{compile_relayout_with, reference, Layout, Options, Relayout};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs `kernel` on fresh 4-byte data and compares with the reference.
fn check(kernel: &Relayout, src: &Layout, dst: &Layout) {
    let a: Vec<u32> = pattern(src.cosize());
    let mut want = vec![7u32; dst.cosize()];
    reference::relayout(src, &a, dst, &mut want, None).unwrap();
    let mut got = vec![7u32; dst.cosize()];
    kernel.run(&a, &mut got).unwrap();
    assert!(got == want, "{src} -> {dst}\n{}", kernel.plan());
}

/// A pair no other test compiles: `a × b` column-major to a layout chosen by `variant`.
fn pair(a: usize, b: usize, variant: usize) -> (Layout, Layout) {
    let src = Layout::col_major(&[a, b]).unwrap();
    let dst = match variant % 3 {
        0 => Layout::row_major(&[a, b]).unwrap(),
        1 => Layout::from_strides(&[a, b], &[b as i64 + 1, 1]).unwrap(),
        _ => Layout::from_strides(&[a, b], &[-(b as i64), 1]).unwrap(),
    };
    (src, dst)
}

#[test]
fn compile_from_many_threads_at_once() {
    let _serial = serial();
    let threads = 8;
    let start = Barrier::new(threads);
    std::thread::scope(|scope| {
        for t in 0..threads {
            let start = &start;
            scope.spawn(move || {
                start.wait();
                for i in 0..24 {
                    // Half the pairs are shared by every thread (racing on the cache), half are
                    // this thread's own.
                    let (src, dst) = if i % 2 == 0 {
                        pair(3 + i, 37, 1)
                    } else {
                        pair(50 + t, 3 + i, 2)
                    };
                    let options = Options::new().threads(1 + i % 3).min_bytes_per_thread(1);
                    let kernel = compile_relayout_with(&src, &dst, options).unwrap();
                    check(&kernel, &src, &dst);
                }
            });
        }
    });
}

#[test]
fn one_kernel_from_many_threads_at_once() {
    let _serial = serial();
    let src = Layout::row_major(&[67, 45]).unwrap();
    let dst = Layout::parse("xla:u32[67,45]{0,1:T(8,4)}").unwrap();
    for inner_threads in [1, 3] {
        let kernel = compile_relayout_with(
            &src,
            &dst,
            Options::new()
                .threads(inner_threads)
                .min_bytes_per_thread(1),
        )
        .unwrap();
        let start = Barrier::new(8);
        std::thread::scope(|scope| {
            for _ in 0..8 {
                let (kernel, start, src, dst) = (&kernel, &start, &src, &dst);
                scope.spawn(move || {
                    start.wait();
                    for _ in 0..40 {
                        check(kernel, src, dst);
                    }
                });
            }
        });
    }
}

/// Clones move to other threads and are dropped there while the others still run, and the
/// cache evicts the kernel meanwhile: the machine code lives as long as any handle.
#[test]
fn handles_outlive_the_cache_and_each_other() {
    let _serial = serial();
    let (src, dst) = pair(19, 23, 0);
    let kernel = compile_relayout_with(&src, &dst, Options::new().elem_size(4)).unwrap();
    let handles: Vec<Relayout> = (0..6).map(|_| kernel.clone()).collect();
    drop(kernel);
    std::thread::scope(|scope| {
        for (t, handle) in handles.into_iter().enumerate() {
            let (src, dst) = (&src, &dst);
            scope.spawn(move || {
                for _ in 0..10 * (t + 1) {
                    check(&handle, src, dst);
                }
                // `handle` is dropped here, at a different time in each thread.
            });
        }
        // Meanwhile, push the kernel out of the cache (it holds 256).
        for i in 0..300 {
            let (s, d) = pair(2 + i % 30, 200 + i / 30, 0);
            compile_relayout_with(&s, &d, Options::new()).unwrap();
        }
    });
    let again = compile_relayout_with(&src, &dst, Options::new()).unwrap();
    assert!(
        !again.was_cached(),
        "the cache should have evicted the pair"
    );
    check(&again, &src, &dst);
}

/// Resident memory of this process in bytes (`/proc/self/statm`).
fn rss() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: usize = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

/// Compiles and drops `count` kernels of distinct pairs (every one a cache miss), running some;
/// returns the resident set after a warm-up and at the end, and prints the figures.
fn compile_and_drop(count: usize) -> (usize, usize) {
    let warm_up = 1000;
    let mut after_warm_up = 0;
    let started = std::time::Instant::now();
    for i in 0..count + warm_up {
        let (src, dst) = pair(2 + i % 200, 300 + i / 200, i / 7);
        let kernel = compile_relayout_with(&src, &dst, Options::new()).unwrap();
        assert!(!kernel.was_cached(), "pair {i} should be new");
        if i % 500 == 0 {
            check(&kernel, &src, &dst);
        }
        if i + 1 == warm_up {
            after_warm_up = rss();
        }
    }
    let end = rss();
    let per_kernel = (end as f64 - after_warm_up as f64) / count as f64;
    println!(
        "compiled and dropped {} kernels in {:.1} s: resident {:.1} MiB after {warm_up}, \
         {:.1} MiB after all; {per_kernel:.1} bytes per kernel after the warm-up",
        count + warm_up,
        started.elapsed().as_secs_f64(),
        after_warm_up as f64 / 1048576.0,
        end as f64 / 1048576.0,
    );
    (after_warm_up, end)
}

#[test]
fn compiling_and_dropping_kernels_does_not_grow_memory() {
    let _serial = serial();
    let (warm, end) = compile_and_drop(4000);
    // A leak of even one page per kernel would add 16 MiB here.
    assert!(
        end < warm + 8 * 1048576,
        "resident memory grew from {warm} to {end} bytes"
    );
}

#[test]
#[ignore = "30 000 kernels (about 40 s): run with --ignored --nocapture for the figures"]
fn thirty_thousand_kernels_do_not_grow_memory() {
    let _serial = serial();
    let (warm, end) = compile_and_drop(30_000);
    assert!(
        end < warm + 16 * 1048576,
        "resident memory grew from {warm} to {end} bytes"
    );
}
