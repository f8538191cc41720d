//! CuTe's `composition`: `(A ∘ B)(c) = A(B(c))`, with the shape of `B`.

use super::{by_mode, ceil_div, flat_layout, CuteLayout, IntTuple, Rest, Tiler};
use crate::error::{Error, Result};

impl CuteLayout {
    /// CuTe's `composition(A, B)`: the layout `R` with `R(c) = A(B(c))` for every coordinate of
    /// `B`, and `B`'s shape (each top-level mode of `B` gives the mode of `R` of the same size).
    ///
    /// With a layout as `B`, the composition goes through `B`'s modes and `A` is seen as a 1-D
    /// function that continues along its last mode past its size, so `B` may reach beyond
    /// `A`'s domain. With a tuple tiler `<B_0, B_1, …>` (or a shape, whose entries mean `n:1`),
    /// mode `i` of `A` is composed with `B_i`, and the modes of `A` beyond the tuple are dropped;
    /// `_` keeps a mode.
    ///
    /// `A ∘ B` is not always a layout. For static layouts CuTe asserts that each stride of `B`
    /// and the modes of `A` it steps over divide each other, and that the sizes of `B` split
    /// evenly over them. Both are checked here (on the magnitude of negative strides too), and a
    /// failure is [`Error::InvalidLayout`]. A stride smaller than a mode of `A` that it does not
    /// divide passes CuTe's check; it gives the right layout only when the rest of `B`'s mode
    /// fits inside that mode of `A`, and is rejected here otherwise.
    ///
    /// Like CuTe, a `B` of several modes is composed one mode at a time. That is `A ∘ B` only if
    /// the modes of `B` add up inside each mode of `A` without carrying into the next one, and
    /// do not mix positive and negative strides there. CuTe does not check this; such
    /// compositions are rejected here too.
    ///
    /// ```
    /// use relayout::notation::cute::CuteLayout;
    /// use relayout::algebra::Tiler;
    ///
    /// let a = CuteLayout::parse("(6,2):(8,2)")?;
    /// let b = CuteLayout::parse("(4,3):(3,1)")?;
    /// let r = a.composition(&b)?;
    /// assert_eq!(r.to_string(), "((2,2),3):((24,2),8)");
    /// for i in 0..12 {
    ///     assert_eq!(r.eval(i)?, a.eval(b.eval(i)?)?);
    /// }
    ///
    /// let a = CuteLayout::parse("(12,(4,8)):(59,(13,1))")?;
    /// let by_mode: Tiler = "<3:4, 8:2>".parse()?;
    /// assert_eq!(a.composition(by_mode)?.to_string(), "(3,(2,4)):(236,(26,1))");
    ///
    /// let a = CuteLayout::parse("(8,8):(8,1)")?;
    /// assert!(a.composition(&CuteLayout::parse("4:3")?).is_err()); // not a layout
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn composition(&self, tiler: impl Into<Tiler>) -> Result<CuteLayout> {
        compose(self, &tiler.into())
    }
}

/// `a ∘ tiler`.
fn compose(a: &CuteLayout, tiler: &Tiler) -> Result<CuteLayout> {
    match tiler {
        Tiler::Keep => Ok(a.clone()),
        Tiler::Layout(b) => compose_layout(a, b),
        Tiler::Tuple(tilers) => by_mode(a, tilers, Rest::Drop, "composition", compose),
    }
}

/// `a ∘ b` for a layout `b`.
pub(super) fn compose_layout(a: &CuteLayout, b: &CuteLayout) -> Result<CuteLayout> {
    let lhs: Vec<(i128, i128)> = a
        .coalesce_x()
        .into_iter()
        .map(|(s, d)| (s as i128, d as i128))
        .collect();
    let mut spread = Spread::new(lhs.len());
    let result = compose_modes(a, &lhs, b, &mut spread)?;
    spread.check(a, b, &lhs)?;
    Ok(result)
}

/// `a ∘ b`, going through the modes of `b`; `lhs` is `a`'s `coalesce_x`.
fn compose_modes(
    a: &CuteLayout,
    lhs: &[(i128, i128)],
    b: &CuteLayout,
    spread: &mut Spread,
) -> Result<CuteLayout> {
    match (b.shape(), b.stride()) {
        (IntTuple::Int(s), IntTuple::Int(d)) => {
            compose_mode(a, lhs, *s as i128, *d as i128, spread)
        }
        _ => CuteLayout::from_modes(
            b.modes()
                .iter()
                .map(|mode| compose_modes(a, lhs, mode, spread))
                .collect::<Result<_>>()?,
        ),
    }
}

/// `a ∘ (size:stride)` for one integer mode of `B`. `lhs` (`a`'s `coalesce_x`, shapes at least
/// 2) is walked from its first mode: the stride of `B` first skips whole modes of `A`, then
/// `B`'s size is spread over the modes it covers; the last mode of `A` takes what is left.
/// Records in `spread` what the mode puts in each mode of `A`.
fn compose_mode(
    a: &CuteLayout,
    lhs: &[(i128, i128)],
    size: i128,
    stride: i128,
    spread: &mut Spread,
) -> Result<CuteLayout> {
    let Some((&(_, last_stride), init)) = lhs.split_last() else {
        return flat_layout(&[(size, 0)]);
    };
    if stride == 0 {
        return flat_layout(&[(size, 0)]);
    }
    let breaks = |why: String| {
        Error::InvalidLayout(format!(
            "composition {a} ∘ {size}:{stride} breaks CuTe's {why}"
        ))
    };
    let mut result = Vec::new();
    let (mut rest_size, mut rest_stride) = (size, stride);
    for (i, &(mode_size, mode_stride)) in init.iter().enumerate() {
        let step = rest_stride.abs();
        let next_size = ceil_div(mode_size, step);
        let next_stride = ceil_div(step, mode_size) * rest_stride.signum();
        if rest_size > 1 && step % mode_size != 0 && mode_size % step != 0 && rest_size > next_size
        {
            return Err(breaks(format!(
                "stride divisibility condition: the stride {step} and a mode of size \
                 {mode_size} do not divide each other"
            )));
        }
        if next_size == 1 || rest_size == 1 {
            rest_stride = next_stride;
            continue;
        }
        let new_size = next_size.min(rest_size);
        if rest_size % new_size != 0 {
            return Err(breaks(format!(
                "shape divisibility condition: {rest_size} elements do not split evenly \
                 over a mode of size {mode_size} ({new_size} of them fit)"
            )));
        }
        spread.add(i, rest_stride.signum(), step * (new_size - 1));
        result.push((new_size, rest_stride * mode_stride));
        rest_size /= new_size;
        rest_stride = next_stride;
    }
    if size > 1 {
        spread.signs[usize::from(stride < 0)] = true;
    }
    if result.is_empty() || rest_size != 1 {
        let tail = rest_stride
            .checked_mul(last_stride)
            .ok_or_else(|| Error::Overflow(format!("composition {a} ∘ {size}:{stride}")))?;
        result.push((rest_size, tail));
    }
    flat_layout(&result)
}

/// What the integer modes of `B` put in the modes of `A` (all but the last) when `A ∘ B` is
/// computed one mode of `B` at a time, as CuTe does. That is `A ∘ B` only if the modes of `B`
/// add up inside each mode of `A` without carrying into the next one, and do not mix positive
/// and negative offsets there (C++ division truncates towards zero). CuTe does not check
/// either; a composition that breaks one is rejected here.
struct Spread {
    /// For each mode of `A`: the largest sum of the digits there of `B`'s positive modes, then
    /// of its negative modes (as magnitudes).
    digits: Vec<[i128; 2]>,
    /// Whether some mode of `B` with a positive (index 0) or negative (1) stride puts a digit
    /// in a mode of `A` other than the last.
    inside: [bool; 2],
    /// Whether `B` has a mode of size above 1 with a positive (0) or negative (1) stride.
    signs: [bool; 2],
}

impl Spread {
    fn new(modes: usize) -> Spread {
        Spread {
            digits: vec![[0, 0]; modes],
            inside: [false; 2],
            signs: [false; 2],
        }
    }

    /// A mode of `B` puts digits up to `largest` (with sign `sign`) in mode `i` of `A`.
    fn add(&mut self, i: usize, sign: i128, largest: i128) {
        let side = usize::from(sign < 0);
        self.digits[i][side] += largest;
        self.inside[side] = true;
    }

    fn check(&self, a: &CuteLayout, b: &CuteLayout, lhs: &[(i128, i128)]) -> Result<()> {
        let fails = |why: String| {
            Err(Error::InvalidLayout(format!(
                "composition {a} ∘ {b} is not the composition of {a} with each mode of {b}: \
                 {why}"
            )))
        };
        for (&(size, _), digits) in lhs.iter().zip(&self.digits) {
            if digits.iter().any(|&d| d >= size) {
                return fails(format!(
                    "the modes of {b} add up past a mode of size {size} and carry into the next"
                ));
            }
        }
        if self.signs == [true, true] && self.inside.contains(&true) {
            return fails(format!(
                "{b} mixes positive and negative strides inside the modes of {a}"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{cute, layouts, offsets, shapes};
    use super::*;
    use proptest::prelude::*;

    fn compose_text(a: &str, b: &str) -> Result<String> {
        let tiler: Tiler = b.parse()?;
        cute(a).composition(tiler).map(|r| r.to_string())
    }

    #[test]
    fn documented_examples() {
        for (a, b, want) in [
            ("(6,2):(8,2)", "(4,3):(3,1)", "((2,2),3):((24,2),8)"),
            ("20:2", "(5,4):(4,1)", "(5,4):(8,2)"),
            ("(10,2):(16,4)", "(5,4):(1,5)", "(5,(2,2)):(16,(80,4))"),
            (
                "(12,(4,8)):(59,(13,1))",
                "<3:4, 8:2>",
                "(3,(2,4)):(236,(26,1))",
            ),
            (
                "(12,(4,8)):(59,(13,1))",
                "[3:4;8:2]",
                "(3,(2,4)):(236,(26,1))",
            ),
            ("(12,(4,8)):(59,(13,1))", "(3,8)", "(3,(4,2)):(59,(13,1))"),
            ("(4,8):(1,4)", "(2,4)", "(2,4):(1,4)"),
            ("(8,8):(8,1)", "3:3", "3:24"),
            ("(4,3):(3,1)", "24:1", "(4,6):(3,1)"),
            ("(4,3):(3,1)", "(24):(1)", "((4,6)):((3,1))"),
            ("(4,3,2):(3,1,12)", "<_, 5>", "(4,5):(3,1)"),
            ("(4,1):(1,0)", "8:1", "(4,2):(1,0)"),
            ("(4,4):(1,4)", "4:-2", "4:-2"),
            ("(4,4):(1,5)", "4:-2", "(2,2):(-2,-5)"),
            ("(4,4):(4,1)", "3:0", "3:0"),
        ] {
            assert_eq!(compose_text(a, b).unwrap(), want, "{a} ∘ {b}");
        }
    }

    #[test]
    fn compositions_that_are_not_layouts() {
        for (a, b) in [
            ("(8,8):(8,1)", "4:3"),
            ("(8,8):(8,1)", "6:3"),
            ("(6,2):(1,7)", "4:4"),
            ("(4,4):(1,5)", "3:-5"),
            ("(4,3):(1,5)", "6:1"),
        ] {
            let err = compose_text(a, b).unwrap_err();
            assert!(
                matches!(&err, Error::InvalidLayout(m) if m.contains("divisibility")),
                "{a} ∘ {b}: {err}"
            );
        }
        // Too many modes in a tuple tiler.
        assert!(compose_text("(4,3):(3,1)", "(2,2,2)").is_err());
    }

    #[test]
    fn modes_of_b_that_carry_or_mix_signs() {
        // Each mode of B alone composes, but 1 + 2 carries past A's first mode (size 3):
        // A(B(3)) = A(3) = 10, where the mode-by-mode result would give 3.
        for (a, b) in [
            ("(3,2):(1,10)", "(2,2):(1,2)"),
            ("(2,2,2):(1,10,100)", "(4,2):(1,2)"),
            ("(4,2):(1,10)", "(2,2):(1,-4)"),
        ] {
            let err = compose_text(a, b).unwrap_err();
            assert!(
                matches!(&err, Error::InvalidLayout(m) if m.contains("each mode")),
                "{a} ∘ {b}: {err}"
            );
        }
        // Disjoint digits, one sign, or everything in A's last mode: fine.
        assert_eq!(
            compose_text("(8,8):(8,1)", "(3,2):(3,8)").unwrap(),
            "(3,2):(24,1)"
        );
        assert_eq!(
            compose_text("(4,2):(1,10)", "(2,2):(-1,-2)").unwrap(),
            "(2,2):(-1,-2)"
        );
        assert_eq!(
            compose_text("(4,2):(1,10)", "(2,2):(4,-8)").unwrap(),
            "(2,2):(10,-20)"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        /// Whenever the composition is a layout, it is `A ∘ B` on all of `B`'s domain and has
        /// `B`'s shape.
        #[test]
        fn composition_is_a_then_b(
            a in layouts(shapes(2, 6), -5..=8),
            b in layouts(shapes(2, 4), -4..=8),
        ) {
            match a.composition(&b) {
                Ok(r) => {
                    let want: Vec<i64> = offsets(&b).iter().map(|&j| a.eval(j).unwrap()).collect();
                    prop_assert_eq!(offsets(&r), want, "{} ∘ {} = {}", a, b, r);
                    // `B`'s shape: the same size, and the same modes if it has any.
                    prop_assert_eq!(r.size(), b.size());
                    if let IntTuple::Tuple(modes) = b.shape() {
                        prop_assert_eq!(r.rank(), modes.len());
                        for (rm, bm) in r.modes().iter().zip(b.modes()) {
                            prop_assert_eq!(rm.size(), bm.size());
                        }
                    }
                }
                Err(e) => prop_assert!(matches!(e, Error::InvalidLayout(_)), "{}", e),
            }
        }

        /// Picking some of `A`'s flattened modes, in any order, always composes: the result is
        /// `A` restricted to those modes.
        #[test]
        fn compositions_that_pick_modes_of_a_exist(
            a in layouts(shapes(2, 5), -6..=6),
            picks in Just((0..8usize).collect::<Vec<_>>()).prop_shuffle(),
            count in 1usize..=3,
        ) {
            let sizes = a.shape().leaves();
            let before = |k: usize| sizes[..k].iter().product::<i64>();
            let picked: Vec<usize> = picks.into_iter().filter(|&k| k < sizes.len()).take(count).collect();
            let b = CuteLayout::new(
                IntTuple::Tuple(picked.iter().map(|&k| IntTuple::Int(sizes[k])).collect()),
                IntTuple::Tuple(picked.iter().map(|&k| IntTuple::Int(before(k))).collect()),
            )
            .unwrap();
            let r = a.composition(&b).unwrap();
            let want: Vec<i64> = offsets(&b).iter().map(|&j| a.eval(j).unwrap()).collect();
            prop_assert_eq!(offsets(&r), want, "{} ∘ {} = {}", a, b, r);
        }
    }
}
