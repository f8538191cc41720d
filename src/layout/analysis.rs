//! Structural facts about a layout: which dims are plain mixed-radix numbers, the exact range of
//! offsets, and injectivity.

use std::ops::ControlFlow;

use super::coords::try_for_each_coord;
use super::{for_each_coord, Layout};

/// Layouts up to this many elements are checked element by element when the structure does not
/// settle a question.
const EXHAUSTIVE_LIMIT: usize = 1 << 26;

/// The indices of dim `d`'s digits from least to most significant, if they are disjoint
/// mixed-radix digits of the coordinate: no fused sources or shifts, and each digit starting at
/// or above the end (`div·ext`) of the one below it. Gaps between digits are positions of stride 0
/// (broadcast), and a dim with no digits is constant. Digits whose divisor is at least the
/// extent are always 0 and are left out.
pub(super) fn dim_chain(layout: &Layout, d: usize) -> Option<Vec<usize>> {
    let n = layout.shape[d];
    let mut chain = Vec::new();
    for (i, digit) in layout.digits.iter().enumerate() {
        if !digit.source.dims().contains(&d) {
            continue;
        }
        if digit.dim() != Some(d) || digit.shift != 0 {
            return None;
        }
        if digit.div < n {
            chain.push(i);
        }
    }
    chain.sort_by_key(|&i| layout.digits[i].div);
    let mut end = Some(1usize);
    for &i in &chain {
        let digit = &layout.digits[i];
        if end.is_none_or(|end| digit.div < end) {
            return None;
        }
        end = digit.ext.and_then(|e| digit.div.checked_mul(e));
    }
    Some(chain)
}

/// Whether a chain from [`dim_chain`] determines the coordinate: no gaps, starting at 1, and
/// reaching the extent.
fn chain_covers(layout: &Layout, d: usize, chain: &[usize]) -> bool {
    let n = layout.shape[d];
    let mut end = 1usize;
    for &i in chain {
        let digit = &layout.digits[i];
        if digit.div != end {
            return false;
        }
        match digit.ext.and_then(|e| digit.div.checked_mul(e)) {
            Some(next) => end = next,
            None => return true,
        }
    }
    end >= n
}

/// The exact smallest and largest offset (base included) over all coordinates, or a safe
/// over-estimate for large irregular layouts.
pub(super) fn offset_span(layout: &Layout) -> (i128, i128) {
    let mut lo = layout.base as i128;
    let mut hi = lo;
    let mut budget = EXHAUSTIVE_LIMIT / 64;
    for group in dim_groups(layout) {
        let digits: Vec<usize> = (0..layout.digits.len())
            .filter(|&i| {
                layout.digits[i]
                    .source
                    .dims()
                    .iter()
                    .any(|d| group.contains(d))
            })
            .collect();
        if digits.is_empty() {
            continue; // Dims that no digit reads add nothing to the offset.
        }
        let (a, b) = match (group.as_slice(), chain_of(layout, &group)) {
            ([d], Some(chain)) => chain_span(layout, *d, &chain),
            _ => enumerated_span(layout, &group, &digits, &mut budget)
                .unwrap_or_else(|| interval_span(layout, &digits)),
        };
        lo += a;
        hi += b;
    }
    (lo, hi)
}

/// Layouts up to this many elements have the exact span of their swizzled offsets; larger ones
/// a bound rounded out to the swizzle's blocks.
const SWIZZLED_SPAN_LIMIT: usize = 1 << 20;

/// The smallest and largest swizzled offset of a swizzled, non-empty layout. The swizzle maps
/// each block of `2^top_bit` offsets onto itself, so when the affine offsets fill an interval
/// (a compact layout) only the interval's first and last blocks matter: exact, for blocks of up
/// to [`SWIZZLED_SPAN_LIMIT`] offsets. Otherwise exact up to [`SWIZZLED_SPAN_LIMIT`] elements,
/// and beyond that the affine span rounded out to whole blocks.
pub(super) fn swizzled_span(layout: &Layout) -> (i128, i128) {
    let Some(swizzle) = layout.swizzle else {
        return offset_span(layout);
    };
    let (lo, hi) = offset_span(layout);
    let block = 1i128 << swizzle.top_bit();
    if block <= SWIZZLED_SPAN_LIMIT as i128 && fills_its_span(layout, lo, hi) {
        // Affine offsets are within MAX_OFFSET (the constructor checked).
        let at = |o: i128| swizzle.apply(o as i64) as i128;
        let first_block_end = hi.min(lo | (block - 1));
        let last_block_start = lo.max(hi & !(block - 1));
        let min = (lo..=first_block_end).map(at).min().unwrap_or(lo);
        let max = (last_block_start..=hi).map(at).max().unwrap_or(hi);
        return (min, max);
    }
    if layout.size() > SWIZZLED_SPAN_LIMIT {
        return swizzle.span_bound(lo, hi);
    }
    let (mut lo, mut hi) = (i128::MAX, i128::MIN);
    for_each_coord(&layout.shape, |c| {
        // Affine offsets are within MAX_OFFSET (the constructor checked).
        let at = swizzle.apply(layout.affine_offset(c) as i64) as i128;
        lo = lo.min(at);
        hi = hi.max(at);
    });
    (lo, hi)
}

/// Whether the affine offsets of `layout` (its digits and base, spanning `lo..=hi`) are every
/// offset of the span, each once: a structurally injective layout with as many elements as its
/// span. Decided from the digits alone; `false` when they do not settle it.
fn fills_its_span(layout: &Layout, lo: i128, hi: i128) -> bool {
    let covered = (0..layout.rank())
        .all(|d| dim_chain(layout, d).is_some_and(|chain| chain_covers(layout, d, &chain)));
    hi - lo + 1 == layout.size() as i128 && covered && separable_injective(layout)
}

/// Whether no two coordinates share an offset (`None`: too large to decide); see
/// [`Layout::injectivity`].
pub(super) fn injectivity(layout: &Layout) -> Option<bool> {
    if layout.is_empty() {
        return Some(true); // No coordinates, so no two share an offset.
    }
    if layout.swizzle.is_some() {
        // A swizzle is a bijection on offsets: two coordinates share a swizzled offset exactly
        // when they share the affine one.
        return injectivity(&layout.unswizzled());
    }
    let covered = (0..layout.rank())
        .all(|d| dim_chain(layout, d).is_some_and(|chain| chain_covers(layout, d, &chain)));
    if covered && separable_injective(layout) {
        return Some(true);
    }
    exhaustive_injective(layout)
}

/// Sets of dims that fused digits tie together (each dim alone when nothing ties it).
fn dim_groups(layout: &Layout) -> Vec<Vec<usize>> {
    let mut group_of: Vec<usize> = (0..layout.rank()).collect();
    for digit in &layout.digits {
        let dims = digit.source.dims();
        if let Some(&first) = dims.first() {
            let target = group_of[first];
            for d in dims {
                let old = group_of[d];
                for g in group_of.iter_mut().filter(|g| **g == old) {
                    *g = target;
                }
            }
        }
    }
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for d in 0..layout.rank() {
        match groups.iter_mut().find(|g| group_of[g[0]] == group_of[d]) {
            Some(g) => g.push(d),
            None => groups.push(vec![d]),
        }
    }
    groups
}

/// The chain of a single-dim group whose digits determine the coordinate (what [`chain_span`]
/// needs).
fn chain_of(layout: &Layout, group: &[usize]) -> Option<Vec<usize>> {
    match group {
        [d] => dim_chain(layout, *d).filter(|chain| chain_covers(layout, *d, chain)),
        _ => None,
    }
}

/// Exact span of one mixed-radix dim: the largest (smallest) sum is either the last coordinate
/// itself or agrees with it above some digit, is smaller at that digit, and free below.
fn chain_span(layout: &Layout, d: usize, chain: &[usize]) -> (i128, i128) {
    let last = layout.shape[d] as i128 - 1;
    let digits: Vec<(i128, i128, i128)> = chain
        .iter()
        .map(|&i| {
            let digit = &layout.digits[i];
            let v = last / digit.div as i128;
            let v = digit.ext.map_or(v, |e| v % e as i128);
            let radix = digit.ext.map_or(v + 1, |e| e as i128);
            (digit.stride as i128, v, radix)
        })
        .collect();
    let at_last: i128 = digits.iter().map(|(s, v, _)| s * v).sum();
    let (mut lo, mut hi) = (at_last, at_last);
    for k in 0..digits.len() {
        let (s, v, _) = digits[k];
        if v == 0 {
            continue;
        }
        let above: i128 = digits[k + 1..].iter().map(|(s, v, _)| s * v).sum();
        let here = [0, s * (v - 1)];
        let below = digits[..k].iter().map(|&(s, _, r)| [0, s * (r - 1)]);
        let (blo, bhi) = below.fold((0, 0), |(a, b), t| (a + t[0].min(t[1]), b + t[0].max(t[1])));
        lo = lo.min(above + here[0].min(here[1]) + blo);
        hi = hi.max(above + here[0].max(here[1]) + bhi);
    }
    (lo, hi)
}

/// Span of a group of dims by visiting its coordinates, if there are no more than `budget`
/// (which shrinks by the number visited, so one layout's groups share it).
fn enumerated_span(
    layout: &Layout,
    group: &[usize],
    digits: &[usize],
    budget: &mut usize,
) -> Option<(i128, i128)> {
    let extents: Vec<usize> = group.iter().map(|&d| layout.shape[d]).collect();
    let count = extents
        .iter()
        .try_fold(1usize, |acc, &n| acc.checked_mul(n))?;
    *budget = budget.checked_sub(count)?;
    let mut coord = vec![0usize; layout.rank()];
    let (mut lo, mut hi) = (i128::MAX, i128::MIN);
    for_each_coord(&extents, |sub| {
        for (&d, &x) in group.iter().zip(sub) {
            coord[d] = x;
        }
        let sum: i128 = digits.iter().map(|&i| layout.digits[i].eval(&coord)).sum();
        lo = lo.min(sum);
        hi = hi.max(sum);
    });
    Some((lo, hi))
}

/// Span as the sum of every digit's own range: exact when the digits vary independently, an
/// over-estimate otherwise.
fn interval_span(layout: &Layout, digits: &[usize]) -> (i128, i128) {
    digits.iter().fold((0, 0), |(lo, hi), &i| {
        let digit = &layout.digits[i];
        let (a, b) = digit.value_range(&layout.shape);
        let (a, b) = (digit.stride as i128 * a, digit.stride as i128 * b);
        (lo + a.min(b), hi + a.max(b))
    })
}

/// Sufficient condition for a separable layout: sorted by |stride|, each digit's stride is
/// larger than everything the smaller digits can add up to.
fn separable_injective(layout: &Layout) -> bool {
    let mut terms: Vec<(i128, i128)> = layout
        .digits
        .iter()
        .map(|d| ((d.stride as i128).abs(), d.count(&layout.shape)))
        .filter(|&(_, count)| count > 1)
        .collect();
    terms.sort_unstable();
    let mut reach: i128 = 0;
    for (stride, count) in terms {
        if stride <= reach {
            return false;
        }
        reach += stride * (count - 1);
    }
    true
}

/// Element-by-element injectivity check with a bitmap, for layouts small enough.
fn exhaustive_injective(layout: &Layout) -> Option<bool> {
    let span = (layout.max_offset as i128 - layout.min_offset as i128 + 1) as usize;
    if layout.size() > EXHAUSTIVE_LIMIT || span > EXHAUSTIVE_LIMIT * 64 {
        return None;
    }
    let mut seen = vec![0u64; span.div_ceil(64)];
    let collision = try_for_each_coord(&layout.shape, |c| {
        let slot = (layout.offset_unchecked(c) - layout.min_offset) as usize;
        let (word, bit) = (slot / 64, 1u64 << (slot % 64));
        if seen[word] & bit != 0 {
            return ControlFlow::Break(());
        }
        seen[word] |= bit;
        ControlFlow::Continue(())
    });
    Some(collision.is_continue())
}
