//! Planning swizzled layouts: the runs a swizzle leaves whole.
//!
//! A swizzle (see [`Swizzle`](crate::layout::Swizzle)) reads and writes only offset bits at or
//! above `M`. Split a swizzled side's affine offset `A = H + L`, where every digit of `H` moves
//! in multiples of `2^M` (the base included) and `L` stays in `[0, 2^M)`: then `A`'s bits below
//! `M` are `L`'s, the bits above are `H`'s, and `swizzle(A) = swizzle(H) + L`. So the dims (or
//! the low parts of dims) that make up `L` can be walked as ordinary loops outside the swizzle,
//! and only `H` is swizzled, once per point of the indexed loop: a CuTe shared-memory layout
//! such as `Sw<3,3,3> o (8,64):(64,1)` moves as runs of `2^M = 8` contiguous elements, a vector
//! each, instead of element by element.
//!
//! [`split`] finds such a split for a pair (the low part of a dim is `x mod v`, its high part
//! `x div v`, each a logical dim of the pair's reshaped layouts) and checks the condition above
//! exactly on every swizzled side; the planner then walks the low dims as loops and indexes the
//! rest, except dims that move offsets only above the bits the swizzle touches ([`above`]) and
//! that a side reads more closely than the low dims (a transpose), which are walked too. A pair that does not split is planned with every dim indexed.

use super::numbers::gcd;
use crate::layout::{Digit, Layout, Source};

/// The pair reshaped for a swizzle: unswizzled layouts of the same function (before the
/// swizzle) over the split dims, and which of their dims are walked outside the swizzle.
pub(super) struct Split {
    /// The source's affine part over the split dims.
    pub src: Layout,
    /// The destination's affine part over the split dims.
    pub dst: Layout,
    /// Per dim of the split layouts: whether it is walked as a loop outside the swizzle, its
    /// offsets on every swizzled side staying below the bits the swizzle reads and writes, or
    /// moving only above them where a side reads it more closely than the low dims.
    pub walked: Vec<bool>,
}

/// The split of a pair with at least one swizzled side, if one exists that leaves some dim (or
/// part of one) low.
pub(super) fn split(src: &Layout, dst: &Layout) -> Option<Split> {
    let (src_affine, dst_affine) = (src.unswizzled(), dst.unswizzled());
    // Where both sides are swizzled, the split must suit both: it falls on common divisors.
    let mut v = vec![0usize; src.rank()];
    for (layout, affine) in [(src, &src_affine), (dst, &dst_affine)] {
        if let Some(swizzle) = layout.swizzle() {
            let run = 1usize.checked_shl(swizzle.base())?;
            for (v, side) in v.iter_mut().zip(low_extents(affine, run)) {
                *v = gcd(*v, side);
            }
        }
    }
    if v.iter().all(|&v| v <= 1) {
        return None;
    }
    let (src_split, low) = split_layout(&src_affine, &v)?;
    let (dst_split, _) = split_layout(&dst_affine, &v)?;
    for (layout, split) in [(src, &src_split), (dst, &dst_split)] {
        if let Some(swizzle) = layout.swizzle() {
            if !separates(split, &low, 1i128 << swizzle.base()) {
                return None;
            }
        }
    }
    // Dims above the swizzle join the walked loops where one side reads them more closely than
    // the low dims (a transpose then tiles them with the low dims); elsewhere the indexed loop,
    // which is outermost, walks them in order.
    let low_dims: Vec<usize> = (0..low.len()).filter(|&d| low[d]).collect();
    let walked: Vec<bool> = (0..low.len())
        .map(|d| {
            low[d]
                || ([(src, &src_split), (dst, &dst_split)]
                    .iter()
                    .all(|(layout, split)| {
                        layout
                            .swizzle()
                            .is_none_or(|s| above(split, d, s.top_bit()))
                    })
                    && [&src_split, &dst_split]
                        .iter()
                        .any(|split| min_stride(split, &[d]) < min_stride(split, &low_dims)))
        })
        .collect();
    Some(Split {
        src: src_split,
        dst: dst_split,
        walked,
    })
}

/// The smallest absolute stride of the digits of `layout` that read any of `dims` (`i128::MAX`
/// if none does).
fn min_stride(layout: &Layout, dims: &[usize]) -> i128 {
    layout
        .digits()
        .iter()
        .filter(|g| g.source.dims().iter().any(|d| dims.contains(d)))
        .map(|g| (g.stride as i128).abs())
        .min()
        .unwrap_or(i128::MAX)
}

/// Whether dim `d` of a split layout moves its offsets only above the bits a swizzle reads and
/// writes: every digit that reads it reads it alone, with a stride that is a multiple of
/// `2^top_bit`. Such a dim commutes with the swizzle (`swizzle(o + k·2^top_bit) =
/// swizzle(o) + k·2^top_bit`), so it may be walked as a loop outside it, as the low dims are
/// ([`split`] walks it where a side reads it more closely than the low dims): the rows of
/// `Sw<3,4,3> o (4096,4096):(4096,1)` are 4096 offsets apart, above the swizzle's ten bits, and
/// a transpose into it moves tiles of rows.
fn above(layout: &Layout, d: usize, top_bit: u32) -> bool {
    let unit = 1i128 << top_bit;
    layout.digits().iter().all(|g| {
        let dims = g.source.dims();
        !dims.contains(&d) || (dims.len() == 1 && (g.stride as i128).rem_euclid(unit) == 0)
    })
}

/// For each dim of an affine layout, how much of it (a divisor `v` of its extent: the part
/// `x mod v`) is low for a swizzle that keeps runs of `run` offsets. Greedily, smallest stride
/// first, the lowest positions of the dims' digit chains (gaps of stride 0 included) join the
/// low part while the largest low offset stays below `run`, each digit as far as it divides
/// (the split must fall on a divisor of the digit's radix and of the extent).
fn low_extents(layout: &Layout, run: usize) -> Vec<usize> {
    let shape = layout.shape();
    let chains: Vec<Option<Vec<&Digit>>> =
        (0..layout.rank()).map(|d| layout.dim_chain(d)).collect();
    let mut v = vec![1usize; layout.rank()];
    let mut reach: i128 = 0;
    let run = run as i128;
    loop {
        // The dim whose next position has the smallest stride, and how far it may go.
        let mut best: Option<(i128, usize, usize)> = None;
        for (d, chain) in chains.iter().enumerate() {
            let Some(chain) = chain else { continue };
            let (n, p) = (shape[d], v[d]);
            if p >= n || !n.is_multiple_of(p) {
                continue;
            }
            let Some((stride, room)) = next_position(chain, p, n) else {
                continue;
            };
            if stride < 0 || stride >= run || best.is_some_and(|(s, _, _)| s <= stride) {
                continue;
            }
            let room = gcd(room, n / p);
            let limit = match stride {
                0 => room,
                _ => usize::try_from((run - 1 - reach) / stride + 1).unwrap_or(usize::MAX),
            };
            let k = largest_divisor_at_most(room, limit);
            if k > 1 {
                best = Some((stride, d, k));
            }
        }
        let Some((stride, d, k)) = best else {
            return v;
        };
        v[d] *= k;
        reach += stride * (k as i128 - 1);
    }
}

/// At position `p` of a dim of extent `n` whose digits are `chain`: the offset step there (the
/// stride of the digit that holds `p`, scaled to `p`, or 0 in a gap between digits) and how many
/// steps the split may take from `p` without cutting that digit or gap unevenly.
fn next_position(chain: &[&Digit], p: usize, n: usize) -> Option<(i128, usize)> {
    match chain.iter().rev().find(|g| g.div <= p) {
        Some(g) if g.ext.is_none_or(|e| p / g.div < e) => {
            if !p.is_multiple_of(g.div) {
                return None;
            }
            let within = p / g.div;
            let room = match g.ext {
                Some(e) if e.is_multiple_of(within) => e / within,
                Some(_) => return None,
                None => n / p,
            };
            Some((g.stride as i128 * within as i128, room))
        }
        _ => match chain.iter().find(|g| g.div > p) {
            Some(next) if next.div.is_multiple_of(p) => Some((0, next.div / p)),
            Some(_) => None,
            None => Some((0, n / p)),
        },
    }
}

/// The largest divisor of `n` that is at most `limit` (1 if none above 1 is): `n` itself when it
/// fits, else the largest power of two that divides `n` and fits, or a bounded search.
fn largest_divisor_at_most(n: usize, limit: usize) -> usize {
    if n <= limit {
        return n;
    }
    let search = (2..=limit.min(1 << 12))
        .rev()
        .find(|k| n.is_multiple_of(*k));
    let power = 1usize << n.trailing_zeros().min(limit.ilog2());
    search.unwrap_or(1).max(power)
}

/// The layout with each dim `d` of extent `n` split by `v[d]` where `1 < v[d] < n`: the dim
/// keeps its place as the high part `x div v` and the low part `x mod v` is appended as a new
/// dim (`x = v·high + low`). Returns the layout and which dims are low: the appended ones, and
/// the dims taken whole (`v[d] >= n`). `None` when a `v[d]` does not divide its extent or the
/// layout would be too large.
fn split_layout(layout: &Layout, v: &[usize]) -> Option<(Layout, Vec<bool>)> {
    let mut shape = layout.shape().to_vec();
    let mut low: Vec<bool> = shape.iter().zip(v).map(|(&n, &v)| v >= n).collect();
    let mut low_dim = vec![None; shape.len()];
    for d in 0..layout.rank() {
        let (n, v) = (layout.shape()[d], v[d]);
        if v > 1 && v < n {
            if !n.is_multiple_of(v) {
                return None;
            }
            shape[d] = n / v;
            low_dim[d] = Some(shape.len());
            shape.push(v);
            low.push(true);
        }
    }
    let mut digits = Vec::new();
    for g in layout.digits() {
        let dims = g.source.dims();
        let Some((d, lo)) = dims
            .iter()
            .find_map(|&d| low_dim[d].map(|lo| (d, lo)))
            .filter(|_| dims.len() == 1 && g.shift == 0)
        else {
            // Fused or shifted digits (or digits of unsplit dims) read `v·high + low`.
            let terms = g
                .source
                .terms()
                .into_iter()
                .flat_map(|(d, w)| match low_dim[d] {
                    Some(lo) => vec![(d, w.saturating_mul(v[d] as i64)), (lo, w)],
                    None => vec![(d, w)],
                });
            digits.push(Digit {
                source: Source::fused(terms),
                ..g.clone()
            });
            continue;
        };
        let v = v[d];
        let end = g.ext.and_then(|e| g.div.checked_mul(e));
        if end.is_some_and(|end| v.is_multiple_of(end)) {
            // Entirely below v: a digit of the low part.
            digits.push(Digit::new(Source::Dim(lo), g.div, g.ext, g.stride));
        } else if g.div.is_multiple_of(v) {
            // Entirely above: a digit of the high part.
            digits.push(Digit::new(Source::Dim(d), g.div / v, g.ext, g.stride));
        } else if v.is_multiple_of(g.div) && end.is_none_or(|end| end.is_multiple_of(v)) {
            // Across v: its lower positions in the low part, the rest in the high part.
            let below = v / g.div;
            digits.push(Digit::new(Source::Dim(lo), g.div, Some(below), g.stride));
            let stride = g.stride.checked_mul(below as i64)?;
            digits.push(Digit::new(
                Source::Dim(d),
                1,
                g.ext.map(|e| e / below),
                stride,
            ));
        } else {
            digits.push(Digit {
                source: Source::fused([(d, v as i64), (lo, 1)]),
                ..g.clone()
            });
        }
    }
    let split = Layout::from_parts(&shape, digits, layout.base(), layout.padded_len()).ok()?;
    Some((split, low))
}

/// Whether `layout` splits as `H + L` for a swizzle that keeps runs of `run` offsets: the base
/// and every digit of the high dims move in multiples of `run`, and the digits of the low dims
/// (which read no high dim) never go below 0 and add up to less than `run`.
fn separates(layout: &Layout, low: &[bool], run: i128) -> bool {
    if (layout.base() as i128).rem_euclid(run) != 0 {
        return false;
    }
    let mut reach: i128 = 0;
    for g in layout.digits() {
        let dims = g.source.dims();
        let (reads_low, reads_high) = (dims.iter().any(|&d| low[d]), dims.iter().any(|&d| !low[d]));
        if reads_low && reads_high {
            return false;
        }
        if reads_low {
            let (lo, hi) = g.value_range(layout.shape());
            if lo < 0 || g.stride < 0 {
                return false;
            }
            reach += g.stride as i128 * hi;
        } else if (g.stride as i128).rem_euclid(run) != 0 {
            return false;
        }
    }
    reach < run
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::for_each_coord;

    fn parse(text: &str) -> Layout {
        Layout::parse(text).unwrap()
    }

    /// The split layouts give every element the offset of the original (before the swizzle).
    fn same_offsets(original: &Layout, split: &Layout, v: &[usize]) {
        let rank = original.rank();
        let low_of: Vec<usize> = (0..rank)
            .filter(|&d| v[d] > 1 && v[d] < original.shape()[d])
            .collect();
        for_each_coord(split.shape(), |y| {
            let mut x = y[..rank].to_vec();
            for (k, &d) in low_of.iter().enumerate() {
                x[d] = y[d] * v[d] + y[rank + k];
            }
            assert_eq!(
                split.affine_offset(y),
                original.unswizzled().affine_offset(&x),
                "{original} as {split} at {y:?}"
            );
        });
    }

    #[test]
    fn runs_of_the_swizzles_base_are_low() {
        // Sw<3,4,3> keeps runs of 16: dim 1 splits into 4 x 16, the 16 low.
        let sw = parse("cute:Sw<3,4,3> o (8,64):(64,1)");
        let row = parse("cute:(8,64):(64,1)");
        let s = split(&sw, &row).expect("a split");
        assert_eq!(s.src.shape(), [8, 4, 16]);
        assert_eq!(s.walked, [false, false, true]);
        same_offsets(&sw, &s.src, &[1, 16]);
        same_offsets(&row, &s.dst, &[1, 16]);
        // Column-major inside the swizzle: dim 0 is contiguous, 8 of it fit a run of 16, then
        // dim 1 continues it.
        let cols = parse("cute:Sw<3,4,3> o (8,64):(1,8)");
        let s = split(&cols, &row).expect("a split");
        assert_eq!(
            (s.src.shape(), s.walked.as_slice()),
            (&[8, 32, 2][..], &[true, false, true][..])
        );
        same_offsets(&cols, &s.src, &[8, 2]);
        // Both sides swizzled alike; a non-zero offset that is a multiple of the run.
        let based = parse("cute:Sw<2,4,-3> o 32 o (8,64):(64,1)");
        let s = split(&based, &sw).expect("a split");
        assert_eq!(s.walked, [false, false, true]);
    }

    #[test]
    fn pairs_that_do_not_split() {
        let row = parse("cute:(8,64):(64,1)");
        for text in [
            // An offset inside the run moves the runs across the swizzled bits.
            "cute:Sw<3,4,3> o 3 o (8,64):(64,1)",
            // The contiguous dim is shorter than the run and the next one does not continue it.
            "cute:Sw<3,4,3> o (8,64):(1,9)",
            // M = 0: no run to keep.
            "cute:Sw<3,0,3> o (8,64):(64,1)",
            // Negative strides.
            "cute:Sw<1,3,1> o (8,64):(64,-1)",
        ] {
            assert!(split(&parse(text), &row).is_none(), "{text}");
        }
        // Swizzles with other runs on the two sides.
        let a = parse("cute:Sw<3,4,3> o (8,64):(64,1)");
        let b = parse("cute:Sw<3,3,3> o (8,64):(64,1)");
        assert!(split(&a, &b).is_none());
    }

    #[test]
    fn digits_split_below_across_and_above() {
        // Dim 0: 2·(x%3) + 6·(x/3%4) + 24·(x/12) over 48, split by 12 (at a digit boundary)
        // and by 6 (across the digit of radix 4), and a fused digit of dims 0 and 1.
        let l = Layout::new(
            &[48, 5],
            vec![
                Digit::new(Source::Dim(0), 1, Some(3), 2),
                Digit::new(Source::Dim(0), 3, Some(4), 6),
                Digit::new(Source::Dim(0), 12, None, 24),
                Digit::new(Source::fused([(0, 1), (1, 7)]), 5, Some(3), 1000),
            ],
        )
        .unwrap();
        for v in [3, 6, 12, 24, 16] {
            let (s, low) = split_layout(&l, &[v, 1]).unwrap();
            assert_eq!(s.shape(), [48 / v, 5, v]);
            assert_eq!(low, [false, false, true]);
            same_offsets(&l, &s, &[v, 1]);
        }
        assert!(split_layout(&l, &[5, 1]).is_none(), "5 does not divide 48");
    }
}
