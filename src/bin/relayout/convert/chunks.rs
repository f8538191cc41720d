//! Splitting a relayout into slabs of its leading dimension, so that a large conversion can
//! report its progress: each slab is the same relayout of a smaller tensor, run on the same
//! buffers at an offset.
//!
//! Slab `[s, s + len)` of dim `d` has the layouts of the whole with `d`'s extent cut to `len`,
//! and its elements sit at the whole layout's offsets less `offset(s·e_d) - offset(0)`. That
//! holds when every digit that reads `d` either repeats with a period dividing `s` or grows
//! linearly from `s` on: a plain digit of `d` (no shift, not fused) whose divisor divides `s`,
//! and whose radix is absent, never wraps over `d`'s extent, or times the divisor divides `s`.

use relayout::{Digit, Layout, Source};

/// How a relayout splits: the slabs along `dim`, each `step` (a multiple of `grain`) long but
/// the last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slabs {
    /// The dimension cut.
    pub dim: usize,
    /// Its extent.
    pub extent: usize,
    /// The length of every slab but the last.
    pub step: usize,
}

impl Slabs {
    /// The `(start, len)` of each slab, in order.
    pub fn ranges(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        (0..self.extent)
            .step_by(self.step)
            .map(|s| (s, self.step.min(self.extent - s)))
    }
}

/// The slabs of at most about `target` elements each that the pair of layouts splits into, or
/// `None` when it does not split (one slab would be the whole, or a digit of the leading dim is
/// not plain).
pub fn plan(src: &Layout, dst: &Layout, target: usize) -> Option<Slabs> {
    let shape = src.shape();
    let dim = shape.iter().position(|&n| n > 1)?;
    let extent = shape[dim];
    let grain = lcm(grain(src, dim)?, grain(dst, dim)?);
    let per_index: usize = shape[dim + 1..].iter().product();
    let wanted = (target / per_index.max(1)).max(1);
    let step = wanted.div_ceil(grain).checked_mul(grain)?;
    (step < extent).then_some(Slabs { dim, extent, step })
}

/// The smallest slab start granularity that keeps `layout`'s digits of `dim` periodic or linear,
/// if they all are plain and the layout is not swizzled (a slab of a swizzled layout is not the
/// whole's offsets less a constant).
fn grain(layout: &Layout, dim: usize) -> Option<usize> {
    if layout.swizzle().is_some() {
        return None;
    }
    let extent = layout.shape()[dim];
    let mut g = 1usize;
    for digit in layout.digits() {
        if !digit.source.dims().contains(&dim) {
            continue;
        }
        if digit.source != Source::Dim(dim) || digit.shift != 0 {
            return None;
        }
        let period = match digit.ext {
            Some(ext) if (extent - 1) / digit.div >= ext => digit.div.checked_mul(ext)?,
            _ => digit.div,
        };
        g = lcm(g, period);
    }
    Some(g)
}

fn lcm(a: usize, b: usize) -> usize {
    let gcd = |mut a: usize, mut b: usize| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    a / gcd(a, b) * b
}

/// One slab of `layout`: the layout of the slab, and the element index in the whole's buffer
/// where the slab's buffer starts. Every element of the slab is inside the whole's buffer; the
/// start itself may lie below it when the slab's lowest element is above its offset 0.
pub fn slab(
    layout: &Layout,
    dim: usize,
    start: usize,
    len: usize,
) -> relayout::Result<(Layout, i64)> {
    let mut shape = layout.shape().to_vec();
    shape[dim] = len;
    let digits: Vec<Digit> = layout.digits().to_vec();
    let part = Layout::from_parts(&shape, digits, layout.base(), None)?;
    let mut at = vec![0; shape.len()];
    let origin = layout.offset(&at)?;
    at[dim] = start;
    let shift = layout.offset(&at)? - origin;
    let at = part.buffer_start() + shift - layout.buffer_start();
    Ok((part, at))
}

#[cfg(test)]
mod tests {
    use super::*;
    use relayout::Coords;

    /// Every element of every slab is where the whole layout puts it.
    fn slabs_cover(layout: &Layout, slabs: &Slabs) {
        let mut seen = 0;
        for (start, len) in slabs.ranges() {
            let (part, at) = slab(layout, slabs.dim, start, len).unwrap();
            for c in Coords::new(part.shape()) {
                let mut whole = c.clone();
                whole[slabs.dim] += start;
                assert_eq!(
                    at + part.index(&c).unwrap() as i64,
                    layout.index(&whole).unwrap() as i64,
                    "{layout} slab {start}+{len} at {c:?}"
                );
                seen += 1;
            }
        }
        assert_eq!(seen, layout.size());
    }

    #[test]
    fn slabs_of_the_notations_hold_their_elements() {
        let pairs = [
            ("cute:(40,48):(48,1)", "xla:f32[40,48]{1,0:T(8,16)}"),
            (
                "xla:f32[37,50]{1,0:T(8,16)}",
                "xla:f32[37,50]{0,1:T(4,4)(2,1)}",
            ),
            ("cute:(1,30,7):(0,-7,1)", "cute:(1,30,7):(0,1,30)"),
            (
                "tvm:[4,32,5,5] lambda n,c,h,w: [n, c, h, w]",
                "tvm:[4,32,5,5] lambda n,c,h,w: [n, c//16, h, w, c%16]",
            ),
            ("morello:[64,8] [0, 1]", "morello:[64,8] [1, 0, 0 oe(8)]"),
            ("cute:((4,6),5):((5,20),1)", "cute:((4,6),5):((1,4),24)"),
        ];
        for (src, dst) in pairs {
            let (src, dst) = (Layout::parse(src).unwrap(), Layout::parse(dst).unwrap());
            let slabs = plan(&src, &dst, 60).unwrap_or_else(|| panic!("{src} -> {dst}"));
            assert!(slabs.ranges().count() > 1);
            slabs_cover(&src, &slabs);
            slabs_cover(&dst, &slabs);
        }
    }

    #[test]
    fn pairs_that_do_not_split() {
        let whole = Layout::row_major(&[8, 8]).unwrap();
        assert_eq!(plan(&whole, &whole, 64), None); // one slab is the whole
                                                    // A fused source over the leading dim (a TVM map over a sum of two dims whose splits
                                                    // do not align with them).
        let fused = Layout::parse("tvm:[6,4] lambda i,j: [(i*4 + j) % 6, (i*4 + j) // 6]").unwrap();
        let rm = Layout::row_major(&[6, 4]).unwrap();
        assert!(fused.digits().iter().any(|d| d.dim().is_none()), "{fused}");
        assert_eq!(plan(&rm, &fused, 4), None);
        let shifted = Layout::parse("tvm:[10] lambda i: [(i + 1) % 4, (i + 1) // 4]").unwrap();
        assert!(shifted.digits().iter().any(|d| d.shift != 0), "{shifted}");
        assert_eq!(plan(&Layout::row_major(&[10]).unwrap(), &shifted, 2), None);
    }

    #[test]
    fn steps_are_whole_tiles() {
        let src = Layout::row_major(&[100, 10]).unwrap();
        let dst = Layout::parse("xla:f32[100,10]{1,0:T(8,128)}").unwrap();
        let slabs = plan(&src, &dst, 150).unwrap();
        assert_eq!((slabs.dim, slabs.step), (0, 16));
        assert_eq!(slabs.ranges().last(), Some((96, 4)));
    }
}
