//! Shares of one tensor, so that one run can time several candidates: each candidate moves one
//! share, a slice of the tensor along one dim compiled as a relayout of its own.
//!
//! A transpose of hundreds of MiB runs for 50–130 ms, so a time budget that buys a handful of
//! whole runs measures two or three candidates, in their ranked order. Cut into up to four
//! shares, one run times the default beside three more candidates, in the same tenth of a
//! second: memory whose speed drifts over seconds treats them alike. The shares lie in
//! different parts of the buffers, so none finds another's data in the caches; they are used
//! only where source and destination together are beyond the cache ([`Margin::BeyondCache`]),
//! where a share runs as the whole tensor does, and each share moves at least half the bytes
//! from which large destinations are streamed.
//!
//! [`Margin::BeyondCache`]: super::Margin::BeyondCache

use std::time::Duration;

use crate::engine::Request;
use crate::layout::Layout;
use crate::plan::Tactics;

/// Fewer shares than this measure too few candidates to be worth cutting the tensor.
pub(crate) const FEWEST_SHARES: usize = 3;
/// Shares at most: thinner ones run unlike the whole tensor. On a 2-core AMD EPYC (Zen 3) VM,
/// the 8000² f32 transpose cut into 20 shares of 400 source rows ran its 1 KiB runs fastest of
/// all, where whole they ran at 0.27 of memcpy against 0.45 for 128-byte runs; in shares of 800
/// rows its 512-byte runs across the rows ran at 0.39 of memcpy and whole at 0.21 (the same
/// rounds, alternating). In quarters, each of five candidates ran within a tenth of its whole
/// pace, in the same order but for near ties.
const MOST_SHARES: usize = 4;

/// The shares of one tensor: slices along one dim that together hold every element once.
#[derive(Debug, Clone)]
pub(crate) struct Shares {
    /// The request of each share (with the whole request's tactics), in order along the dim.
    parts: Vec<Request>,
    /// Elements of each share.
    elements: Vec<usize>,
    /// Elements of the tensor.
    total: usize,
}

impl Shares {
    /// Up to `most` shares of `request`'s tensor ([`MOST_SHARES`] at most), each moving about
    /// `min_bytes` of source or more, cut along the dim that is outermost on both sides (among
    /// those both layouts can cut: not fused, not swizzled, at whole tiles); `None` where that
    /// makes fewer than [`FEWEST_SHARES`], and for packed and per-index requests.
    pub(crate) fn of(request: &Request, most: usize, min_bytes: usize) -> Option<Shares> {
        if request.packed.is_some() || request.per_index.is_some() {
            return None;
        }
        let (src, dst) = (&request.src, &request.dst);
        let total = src.size();
        // The dim whose step moves both offsets furthest (outermost on both sides); the lower
        // dim on a tie.
        let (dim, step, _) = (0..src.rank())
            .filter_map(|d| {
                let (a, b) = (src.slice_step(d)?, dst.slice_step(d)?);
                let step = a.max(b);
                if !step.is_multiple_of(a)
                    || !step.is_multiple_of(b)
                    || src.shape()[d] < step.saturating_mul(FEWEST_SHARES)
                {
                    return None;
                }
                let mut coord = vec![0; src.rank()];
                coord[d] = step;
                let moved = |l: &Layout| {
                    l.affine_offset(&coord)
                        .abs_diff(l.affine_offset(&vec![0; l.rank()]))
                };
                let (s, t) = (moved(src), moved(dst));
                Some((d, step, (s.min(t), s.max(t))))
            })
            .min_by_key(|&(d, _, moved)| (std::cmp::Reverse(moved), d))?;
        let extent = src.shape()[dim];
        let steps = extent / step;
        let count = most
            .min(MOST_SHARES)
            .min(steps)
            .min(total.saturating_mul(request.elem_size) / min_bytes.max(1));
        if count < FEWEST_SHARES {
            return None;
        }
        let mut parts = Vec::with_capacity(count);
        let mut elements = Vec::with_capacity(count);
        for k in 0..count {
            let start = k * steps / count * step;
            let end = if k + 1 == count {
                extent
            } else {
                (k + 1) * steps / count * step
            };
            parts.push(Request {
                src: src.slice(dim, start, end - start)?,
                dst: dst.slice(dim, start, end - start)?,
                ..request.clone()
            });
            elements.push(total / extent * (end - start));
        }
        Some(Shares {
            parts,
            elements,
            total,
        })
    }

    /// How many shares there are.
    pub(crate) fn len(&self) -> usize {
        self.parts.len()
    }

    /// The request of share `k` with `tactics`.
    pub(crate) fn request(&self, k: usize, tactics: Tactics) -> Request {
        Request {
            tactics,
            ..self.parts[k].clone()
        }
    }

    /// How long the whole tensor would take at the pace share `k` took `took`.
    pub(crate) fn scaled(&self, k: usize, took: Duration) -> Duration {
        let nanos = took.as_nanos() * self.total as u128 / self.elements[k].max(1) as u128;
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{LineOffsets, Plan};
    use crate::target::Target;

    fn request(src: &str, dst: &str, elem_size: usize) -> Request {
        Request {
            src: Layout::parse(src).unwrap(),
            dst: Layout::parse(dst).unwrap(),
            elem_size,
            packed: None,
            conversion: None,
            per_index: None,
            tactics: Tactics::default(),
            target: Target::host(),
            line_offsets: LineOffsets::default(),
        }
    }

    /// The moves of every share's plan, under every candidate's tactics in turn, are the
    /// whole plan's moves: each element once, from and to the same buffer indices.
    fn check_cover(whole: &Request, shares: &Shares) {
        let moves = |r: &Request| {
            let plan = Plan::with_tactics(&r.src, &r.dst, r.elem_size, r.tactics, r.target)
                .expect("a share plans");
            let mut out = Vec::new();
            plan.for_each_move(|from, to| out.push((from, to)));
            (plan.src_len(), plan.dst_len(), out)
        };
        let (src_len, dst_len, mut expected) = moves(whole);
        expected.sort_unstable();
        let mut got = Vec::new();
        for k in 0..shares.len() {
            let tactics = Tactics::CANDIDATES[k % Tactics::CANDIDATES.len()];
            let (s, d, share) = moves(&shares.request(k, tactics));
            assert_eq!(
                (s, d),
                (src_len, dst_len),
                "share {k} has the whole buffers"
            );
            got.extend(share);
        }
        got.sort_unstable();
        assert_eq!(got, expected);
        assert_eq!(shares.elements.iter().sum::<usize>(), shares.total);
    }

    #[test]
    fn shares_move_every_element_once() {
        for (src, dst, size) in [
            ("cute:(40,24):(24,1)", "cute:(40,24):(1,40)", 4),
            ("cute:(41,23):(23,1)", "cute:(41,23):(1,41)", 2),
            (
                "tvm:[3,32,5,5] lambda n,c,h,w: [n, c, h, w]",
                "tvm:[3,32,5,5] lambda n,c,h,w: [n, c//16, h, w, c%16]",
                4,
            ),
            (
                "tvm:[8,6,5] lambda n,c,w: [n, c, w]",
                "tvm:[8,6,5] lambda n,c,w: [n, w, c]",
                8,
            ),
            ("xla:f32[48,300]{1,0}", "xla:f32[48,300]{1,0:T(8,128)}", 4),
            ("morello:[64] [0]", "morello:[64] [0, 0 oe(8)]", 1),
        ] {
            let whole = request(src, dst, size);
            let shares = Shares::of(&whole, 5, 1).unwrap_or_else(|| panic!("{src} shares"));
            assert!((FEWEST_SHARES..=5).contains(&shares.len()));
            check_cover(&whole, &shares);
        }
    }

    #[test]
    fn the_cut_is_outermost_on_both_sides() {
        // NCHW -> NHWC: the batch.
        let nchw = request(
            "tvm:[8,6,5,5] lambda n,c,h,w: [n, c, h, w]",
            "tvm:[8,6,5,5] lambda n,c,h,w: [n, h, w, c]",
            4,
        );
        let shares = Shares::of(&nchw, 4, 1).unwrap();
        assert_eq!(shares.parts[0].src.shape(), [2, 6, 5, 5]);
        // A square transpose: the source's rows, the lower dim.
        let t = request("cute:(40,40):(40,1)", "cute:(40,40):(1,40)", 4);
        let shares = Shares::of(&t, 4, 1).unwrap();
        assert_eq!(shares.parts[3].src.shape(), [10, 40]);
        // NCHW16c channels are cut at whole blocks of 16.
        let blocked = request(
            "tvm:[1,64,3,3] lambda n,c,h,w: [n, c, h, w]",
            "tvm:[1,64,3,3] lambda n,c,h,w: [n, c//16, h, w, c%16]",
            4,
        );
        let shares = Shares::of(&blocked, 8, 1).unwrap();
        assert_eq!(shares.len(), 4);
        assert!(shares.parts.iter().all(|r| r.src.shape()[1] == 16));
    }

    #[test]
    fn too_small_a_tensor_is_not_shared() {
        let t = request("cute:(40,24):(24,1)", "cute:(40,24):(1,40)", 4);
        // 3840 bytes make three shares of about 1280 bytes, not four.
        assert_eq!(Shares::of(&t, 8, 1280).map(|s| s.len()), Some(3));
        assert!(Shares::of(&t, 8, 1281).is_none());
        assert!(Shares::of(&t, 2, 1).is_none(), "fewer than three");
        let shares = Shares::of(&t, 8, 1280).unwrap();
        let ms = Duration::from_millis;
        assert_eq!(shares.scaled(0, ms(10)), ms(30));
    }
}
