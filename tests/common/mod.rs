//! Helpers shared by the integration tests: run a relayout through the JIT and the reference
//! and compare the whole destination buffers, for every element size.
#![allow(dead_code)]

pub mod cli;
pub mod guard;
pub mod random_layouts;

pub use guard::pattern;
use relayout::{compile_relayout_with, reference, Element, Layout, Options};

/// Runs `src → dst` with the JIT and with the reference on the same data (the destination
/// pre-filled with a marker so untouched slots are compared too), for element type `T`, and
/// panics with the layouts if the buffers differ.
pub fn check_pair_as<T: Element + PartialEq + std::fmt::Debug>(
    src: &Layout,
    dst: &Layout,
    pad: Option<T>,
) {
    let a: Vec<T> = pattern(src.cosize());
    let marker = T::from_bits(guard::MARKER);
    let mut want = vec![marker; dst.cosize()];
    reference::relayout(src, &a, dst, &mut want, pad).expect("reference");
    let mut options = Options::new().elem_size(std::mem::size_of::<T>());
    if let Some(p) = pad {
        options = options.pad_value(p);
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
    check_plan_moves(src, dst);
}

/// The same check for all four element sizes.
pub fn check_pair(src: &Layout, dst: &Layout) {
    check_pair_as::<u8>(src, dst, None);
    check_pair_as::<u16>(src, dst, None);
    check_pair_as::<u32>(src, dst, None);
    check_pair_as::<u64>(src, dst, None);
}

/// Interprets the plan (no JIT) and checks that it moves each element exactly once, from its
/// source slot to its destination slot.
pub fn check_plan_moves(src: &Layout, dst: &Layout) {
    let plan = relayout::plan::Plan::new(src, dst, 4).expect("plan");
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
