//! Step 1 of planning: merge the digit boundaries of the source and destination of each logical
//! dim into iteration pieces, each with one source stride and one destination stride, and split
//! dims whose extent is not a whole number of top pieces (padding) into boxes.

use super::ir::Loop;
use crate::layout::{Digit, Layout};

/// A rectangular part of one logical dim's iteration space: fixed upper pieces (folded into the
/// base offsets) and a full box of lower pieces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DimBox {
    pub src_base: i64,
    pub dst_base: i64,
    /// The box's first index along the dim, when the dim is a per-index map's (else 0).
    pub index_base: i64,
    pub loops: Vec<Loop>,
}

/// A piece of a dim's mixed-radix refinement: digit position `div`, radix `count`, strides
/// (the index stride is `div` along a per-index map's dim, else 0).
#[derive(Debug, Clone, Copy)]
struct Piece {
    div: usize,
    count: usize,
    src_stride: i64,
    dst_stride: i64,
    index_stride: i64,
}

/// The boxes covering `[0, n)` of dim `d` in the common refinement of both layouts' digit chains,
/// or `None` when the chains do not refine (a boundary of one side does not divide the next
/// boundary of the other, fused sources, shifts): such dims need the indexed path. With
/// `scaled`, the dim is a per-index map's, and the loops and boxes carry its index.
pub(crate) fn refine_dim(
    src: &Layout,
    dst: &Layout,
    d: usize,
    scaled: bool,
) -> Option<Vec<DimBox>> {
    let n = src.shape()[d];
    let (src_chain, dst_chain) = (src.dim_chain(d)?, dst.dim_chain(d)?);
    let ends = src_chain
        .iter()
        .chain(&dst_chain)
        .filter_map(|g| g.ext.and_then(|e| g.div.checked_mul(e)))
        .filter(|&end| end < n);
    let mut bounds: Vec<usize> = src_chain.iter().chain(&dst_chain).map(|g| g.div).collect();
    bounds.extend(ends);
    bounds.push(1);
    bounds.sort_unstable();
    bounds.dedup();
    if bounds.windows(2).any(|w| w[1] % w[0] != 0) {
        return None;
    }
    let pieces: Vec<Piece> = bounds
        .iter()
        .enumerate()
        .map(|(i, &div)| {
            let count = match bounds.get(i + 1) {
                Some(next) => next / div,
                None => n.div_ceil(div),
            };
            Piece {
                div,
                count,
                src_stride: stride_at(&src_chain, div),
                dst_stride: stride_at(&dst_chain, div),
                index_stride: if scaled { div as i64 } else { 0 },
            }
        })
        .collect();
    Some(boxes(&pieces, n, [0, 0, 0]))
}

/// The stride of position `div` inside the chain digit that contains it, or 0 where no digit
/// does (a broadcast gap, or a dim of extent 1 on that side).
fn stride_at(chain: &[&Digit], div: usize) -> i64 {
    chain
        .iter()
        .rev()
        .find(|g| g.div <= div)
        .filter(|g| g.ext.is_none_or(|e| div < g.div.saturating_mul(e)))
        .map_or(0, |g| g.stride * (div / g.div) as i64)
}

/// Splits `[0, n)` over `pieces` (least significant first) into boxes: all top values below
/// `n / top.div` with the lower pieces full, then the last partial top value, recursively;
/// `base` is the source, destination and index base of the boxes.
fn boxes(pieces: &[Piece], n: usize, base: [i64; 3]) -> Vec<DimBox> {
    let [src_base, dst_base, index_base] = base;
    let Some((top, lower)) = pieces.split_last() else {
        return vec![DimBox {
            src_base,
            dst_base,
            index_base,
            loops: Vec::new(),
        }];
    };
    let (full, rest) = (n / top.div, n % top.div);
    let mut out = Vec::new();
    if full > 0 {
        let mut loops: Vec<Loop> = lower.iter().map(Piece::as_loop).collect();
        loops.push(Loop {
            extent: full,
            ..top.as_loop()
        });
        out.push(DimBox {
            src_base,
            dst_base,
            index_base,
            loops,
        });
    }
    if rest > 0 {
        let full = full as i64;
        let next = [
            src_base + top.src_stride * full,
            dst_base + top.dst_stride * full,
            index_base + top.index_stride * full,
        ];
        out.extend(boxes(lower, rest, next));
    }
    out
}

impl Piece {
    fn as_loop(&self) -> Loop {
        Loop {
            extent: self.count,
            src_stride: self.src_stride,
            dst_stride: self.dst_stride,
            index_stride: self.index_stride,
        }
    }
}
