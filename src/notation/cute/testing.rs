//! Test helpers for CuTe layouts, shared by this module's tests and the algebra's: a parser
//! that panics with the text, and proptest strategies.

use super::{CuteLayout, IntTuple};
use proptest::prelude::*;

/// Parses CuTe text, panicking with the text on failure.
pub(crate) fn cute(text: &str) -> CuteLayout {
    CuteLayout::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// Shapes nested up to `depth` levels with about `nodes` entries, each entry 1 to 4.
pub(crate) fn shapes(depth: u32, nodes: u32) -> BoxedStrategy<IntTuple> {
    (1..=4i64)
        .prop_map(IntTuple::Int)
        .prop_recursive(depth, nodes, 3, |inner| {
            prop::collection::vec(inner, 1..=3).prop_map(IntTuple::Tuple)
        })
        .boxed()
}

/// Layouts over `shapes` with every stride drawn from `strides` (so broadcast, negative and
/// overlapping strides all occur).
pub(crate) fn layouts(
    shapes: BoxedStrategy<IntTuple>,
    strides: std::ops::RangeInclusive<i64>,
) -> BoxedStrategy<CuteLayout> {
    shapes
        .prop_flat_map(move |shape| {
            let n = shape.leaves().len();
            prop::collection::vec(strides.clone(), n).prop_map(move |strides| {
                let stride = shape.with_leaves(&strides);
                CuteLayout::new(shape.clone(), stride).unwrap()
            })
        })
        .boxed()
}

/// Injective layouts over `shapes`: the flattened modes, visited in a random order, get
/// strides `gap · (shape × stride of the mode visited before)`, with each gap between 1 and
/// `max_gap`. With `max_gap = 1` the layout is a bijection onto `0..size` (compact).
pub(crate) fn injective_layouts(
    shapes: BoxedStrategy<IntTuple>,
    max_gap: i64,
) -> BoxedStrategy<CuteLayout> {
    shapes
        .prop_flat_map(move |shape| {
            let n = shape.leaves().len();
            let order = Just((0..n).collect::<Vec<usize>>()).prop_shuffle();
            let gaps = prop::collection::vec(1..=max_gap, n);
            (Just(shape), order, gaps)
        })
        .prop_map(|(shape, order, gaps)| {
            let sizes = shape.leaves();
            let mut strides = vec![0; sizes.len()];
            let mut running = 1;
            for (&m, gap) in order.iter().zip(gaps) {
                strides[m] = running * gap;
                running = strides[m] * sizes[m];
            }
            let stride = shape.with_leaves(&strides);
            CuteLayout::new(shape, stride).unwrap()
        })
        .boxed()
}

/// The shapes and layouts of this module's own tests.
pub(crate) fn arb_shape() -> BoxedStrategy<IntTuple> {
    shapes(3, 12)
}

/// Layouts over [`arb_shape`] with strides from -6 to 6.
pub(crate) fn arb_layout() -> BoxedStrategy<CuteLayout> {
    layouts(arb_shape(), -6..=6)
}
