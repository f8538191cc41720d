//! Helpers shared by the integration tests: the public worked examples, the command line, and
//! a relayout through the JIT and the reference compared buffer for buffer, for every element
//! size.
#![allow(dead_code)]

pub mod guard;
pub mod random_layouts;

use std::process::{Command, Output};

use relayout::plan::{Kernel, Plan, Region, UnzipWrite, ZipWrite};
use relayout::{compile_relayout_with, reference, Element, Layout, Options, Target};
use serde_json::Value;

/// The public worked examples (exact offsets from the systems' own documentation), kept in the
/// repository so the tests need nothing outside it.
pub const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/public_golden.json");

/// Every case of the public worked examples.
pub fn golden_cases() -> Vec<Value> {
    let text = std::fs::read_to_string(GOLDEN).expect("the worked examples beside the repository");
    serde_json::from_str(&text).unwrap()
}

/// Runs the command line with `args`.
pub fn cli(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_relayout"))
        .args(args)
        .output()
        .unwrap()
}

/// Runs the command line and returns what it printed, failing the test on a non-zero exit.
pub fn run_cli(args: &[&str]) -> String {
    let out = cli(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

pub use guard::{pattern, Pin};

/// Runs `src → dst` with the JIT and with the reference on the same data (the destination
/// pre-filled with a marker so untouched slots are compared too), for element type `T`, and
/// panics with the layouts if the buffers differ.
pub fn check_pair_as<T: Element + PartialEq + std::fmt::Debug>(
    src: &Layout,
    dst: &Layout,
    pad: Option<T>,
) {
    check_pair_pinned::<T>(src, dst, pad, None);
}

/// The host, streaming from 8 MiB of destination whatever its last-level cache (as the 2-core
/// AMD EPYC VMs do, with 32 MiB of L3): the tests of kernels that stream over 8 MiB plan for it.
pub fn streams_from_8_mib() -> Target {
    Target {
        stream_min_bytes: 8 << 20,
        ..Target::host()
    }
}

/// The host, streaming only from 1 GiB of destination (as a machine whose last-level cache holds
/// the tensors would): the tests of plans that store large destinations in place plan for it.
pub fn streams_from_1_gib() -> Target {
    Target {
        stream_min_bytes: 1 << 30,
        ..Target::host()
    }
}

/// [`check_pair_as`] with the default tactics on `target`.
pub fn check_pair_on<T: Element + PartialEq + std::fmt::Debug>(
    src: &Layout,
    dst: &Layout,
    pad: Option<T>,
    target: Target,
) {
    check_pair_pinned::<T>(src, dst, pad, Some(Pin::defaults_on(target)));
}

/// Whether the region stages a run of zips or unzips (its kernel consumes a loop of steps).
pub fn stages_a_run(region: &Region) -> bool {
    matches!(
        region.kernel,
        Kernel::Zip {
            write: ZipWrite::StreamedRun { .. },
            ..
        } | Kernel::Unzip {
            write: UnzipWrite::StreamedRun { .. },
            ..
        }
    )
}

/// [`check_pair_pinned`] for 1-, 2-, 4- and 8-byte elements, no conversion.
pub fn check_pair_pinned_at_every_size(src: &Layout, dst: &Layout, pin: Option<Pin>) {
    check_pair_pinned::<u8>(src, dst, None, pin);
    check_pair_pinned::<u16>(src, dst, None, pin);
    check_pair_pinned::<u32>(src, dst, None, pin);
    check_pair_pinned::<u64>(src, dst, None, pin);
}

/// [`check_pair_as`] with the kernel pinned to `pin` (the defaults when `None`).
pub fn check_pair_pinned<T: Element + PartialEq + std::fmt::Debug>(
    src: &Layout,
    dst: &Layout,
    pad: Option<T>,
    pin: Option<Pin>,
) {
    let a: Vec<T> = pattern(src.cosize());
    let marker = T::from_bits(guard::MARKER);
    let mut want = vec![marker; dst.cosize()];
    reference::relayout(src, &a, dst, &mut want, pad).expect("reference");
    let mut options = Options::new().elem_size(std::mem::size_of::<T>());
    if let Some(p) = pad {
        options = options.pad_value(p);
    }
    if let Some(pin) = pin {
        options = pin.apply(options);
    }
    let r = compile_relayout_with(src, dst, options)
        .unwrap_or_else(|e| panic!("compile {src} -> {dst}: {e}"));
    let mut got = vec![marker; dst.cosize()];
    r.run(&a, &mut got).expect("run");
    if got != want {
        panic!(
            "{}-byte elements: {src} -> {dst}\nplan:\n{}\nwant {want:?}\ngot  {got:?}",
            std::mem::size_of::<T>(),
            r.plan()
        );
    }
}

/// The same check for all four element sizes, and the plan interpreter's check of the plan.
pub fn check_pair(src: &Layout, dst: &Layout) {
    check_plan_moves(src, dst);
    check_pair_as::<u8>(src, dst, None);
    check_pair_as::<u16>(src, dst, None);
    check_pair_as::<u32>(src, dst, None);
    check_pair_as::<u64>(src, dst, None);
}

/// Interprets the plan (no JIT) and checks that it moves each element exactly once, from its
/// source slot to its destination slot.
pub fn check_plan_moves(src: &Layout, dst: &Layout) {
    check_plan_moves_of(&Plan::new(src, dst, 4).expect("plan"), src, dst);
}

/// [`check_plan_moves`] for a given plan of the pair.
pub fn check_plan_moves_of(plan: &Plan, src: &Layout, dst: &Layout) {
    let mut expected = vec![None; dst.cosize()];
    relayout::layout::for_each_coord(src.shape(), |x| {
        expected[dst.index(x).unwrap()] = Some(src.index(x).unwrap());
    });
    let mut seen = vec![false; dst.cosize()];
    plan.for_each_move(|s, d| {
        assert!(d < seen.len(), "plan writes outside the destination: {d}");
        assert!(!seen[d], "plan writes slot {d} twice\n{plan}");
        seen[d] = true;
        assert_eq!(
            expected[d],
            Some(s),
            "slot {d} gets the wrong element\n{plan}"
        );
    });
    let missed = expected
        .iter()
        .zip(&seen)
        .filter(|(e, s)| e.is_some() && !**s)
        .count();
    assert_eq!(missed, 0, "plan misses {missed} elements\n{plan}");
}

/// Every permutation of `0..n`.
pub fn permutations(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![vec![]];
    }
    let mut out = Vec::new();
    for p in permutations(n - 1) {
        for i in 0..=p.len() {
            let mut q = p.clone();
            q.insert(i, n - 1);
            out.push(q);
        }
    }
    out
}
