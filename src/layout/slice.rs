//! A layout restricted to a range of one dim: the same buffer, the elements whose coordinate in
//! that dim lies in the range. Tuning runs candidates on such slices of one tensor
//! (`tune::shares`).

use super::{Digit, Layout, Source};

impl Layout {
    /// The steps at which dim `d` can be cut ([`Layout::slice`]): a start that is a multiple of
    /// it shifts every digit of the dim by whole values. `None` when the layout is swizzled, a
    /// fused digit reads the dim, or its digits' periods do not nest.
    pub(crate) fn slice_step(&self, d: usize) -> Option<usize> {
        if self.swizzle.is_some() || d >= self.rank() {
            return None;
        }
        let mut periods = Vec::new();
        for digit in &self.digits {
            match &digit.source {
                Source::Dim(x) if *x == d => periods.push(self.period(digit)?),
                Source::Fused(terms) if terms.iter().any(|&(x, _)| x == d) => return None,
                _ => {}
            }
        }
        let step = periods.iter().copied().max().unwrap_or(1);
        periods
            .iter()
            .all(|&p| step.is_multiple_of(p))
            .then_some(step)
    }

    /// The elements whose coordinate in dim `d` lies in `start..start + len`, as a layout of
    /// that extent on the same buffer: offsets and [`Layout::buffer_start`] as this layout's,
    /// and [`Layout::cosize`] too. `None` unless `start` is a multiple of
    /// [`Layout::slice_step`], the range lies in the dim and is not empty, or when the slice's
    /// buffer would start elsewhere.
    pub(crate) fn slice(&self, d: usize, start: usize, len: usize) -> Option<Layout> {
        let step = self.slice_step(d)?;
        if len == 0 || !start.is_multiple_of(step) || start.checked_add(len)? > self.shape[d] {
            return None;
        }
        // Digits that never wrap over the dim's extent move by start / div values; the others
        // come back to the same value (their period divides the start).
        let mut base = self.base as i128;
        for digit in self.digits.iter().filter(|g| g.source == Source::Dim(d)) {
            if self.wraps(digit).is_none() {
                base += digit.stride as i128 * (start / digit.div) as i128;
            }
        }
        let mut shape = self.shape.clone();
        shape[d] = len;
        let base = i64::try_from(base).ok()?;
        let sliced =
            Layout::from_parts(&shape, self.digits.clone(), base, Some(self.cosize())).ok()?;
        (sliced.buffer_start() == self.buffer_start() && sliced.cosize() == self.cosize())
            .then_some(sliced)
    }

    /// A start that is a multiple of this moves `digit` by whole values (it never wraps) or
    /// leaves it as it is (it wraps, with this period).
    fn period(&self, digit: &Digit) -> Option<usize> {
        match self.wraps(digit) {
            Some(ext) => digit.div.checked_mul(ext),
            None => Some(digit.div),
        }
    }

    /// The radix of `digit` if its modulo acts on this layout's extent: `None` when it has none
    /// or its quotients stay below it.
    fn wraps(&self, digit: &Digit) -> Option<usize> {
        let ext = digit.ext?;
        let Source::Dim(d) = digit.source else {
            return Some(ext);
        };
        let lowest = (digit.shift as i128).div_euclid(digit.div as i128);
        let highest =
            (self.shape[d] as i128 - 1 + digit.shift as i128).div_euclid(digit.div as i128);
        (lowest < 0 || highest >= ext as i128).then_some(ext)
    }
}

#[cfg(test)]
mod tests {
    use crate::layout::{Coords, Digit, Layout, Source};

    /// Every slice of every dim at every allowed start: each element has the offset of the
    /// element it stands for, on a buffer of the same start and length.
    fn check_slices(layout: &Layout) {
        for d in 0..layout.rank() {
            let Some(step) = layout.slice_step(d) else {
                continue;
            };
            let n = layout.shape()[d];
            for start in (0..n).step_by(step) {
                for len in 1..=n - start {
                    let Some(sliced) = layout.slice(d, start, len) else {
                        // Only a slice whose lowest offset rises above a negative one starts
                        // its buffer elsewhere.
                        assert!(layout.buffer_start() < 0, "{layout} dim {d} from {start}");
                        continue;
                    };
                    assert_eq!(sliced.cosize(), layout.cosize());
                    for coord in Coords::new(sliced.shape()) {
                        let mut whole = coord.clone();
                        whole[d] += start;
                        assert_eq!(
                            sliced.offset(&coord).unwrap(),
                            layout.offset(&whole).unwrap(),
                            "{layout} dim {d} from {start}, {coord:?}"
                        );
                    }
                }
            }
            if step > 1 {
                assert!(
                    layout.slice(d, 1, 1).is_none(),
                    "{layout}: a start off the step"
                );
            }
        }
    }

    #[test]
    fn slices_keep_every_offset() {
        for text in [
            "cute:(6,10):(10,1)",
            "cute:(6,10):(1,6)",
            "cute:((2,3),(5,2)):((15,1),(3,30))",
            "xla:f32[5,7]{1,0:T(2,4)}",
            "xla:f32[5,7]{0,1:T(4,2)}",
            "tvm:[2,8,3,3] lambda n,c,h,w: [n, c//4, h, w, c%4]",
            "tvm:[2,6,3] lambda n,c,w: [n, w, (c+1)//4, (c+1)%4]",
            "morello:[16] [0, 0 oe(4)]",
            "cute:(4,6):(-6,1)",
        ] {
            check_slices(&Layout::parse(text).unwrap());
        }
    }

    #[test]
    fn fused_and_swizzled_dims_are_not_sliced() {
        // (7i + j) // 4 and (7i + j) % 4.
        let sum = || Source::fused([(0, 7), (1, 1)]);
        let digits = vec![
            Digit::new(sum(), 4, None, 4),
            Digit::new(sum(), 1, Some(4), 1),
        ];
        let fused = Layout::new(&[4, 7], digits).unwrap();
        let swizzled = Layout::parse("cute:Sw<1,0,1> o (2,2):(2,1)").unwrap();
        for d in 0..2 {
            assert_eq!(fused.slice_step(d), None, "{fused}");
            assert_eq!(swizzled.slice_step(d), None);
        }
    }

    #[test]
    fn tiled_dims_are_cut_at_whole_tiles() {
        let nchw16c =
            Layout::parse("tvm:[2,32,3,3] lambda n,c,h,w: [n, c//16, h, w, c%16]").unwrap();
        assert_eq!(nchw16c.slice_step(1), Some(16));
        assert_eq!(nchw16c.slice_step(0), Some(1));
        assert!(nchw16c.slice(1, 8, 8).is_none());
        assert!(nchw16c.slice(1, 16, 16).is_some());
        assert!(nchw16c.slice(1, 16, 17).is_none(), "past the dim");
    }
}
