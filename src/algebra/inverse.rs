//! CuTe's `right_inverse`.

use super::{flat_modes, flat_parts, CuteLayout};

impl CuteLayout {
    /// CuTe's `right_inverse(L)`: the largest layout `R` such that `L(R(i)) = i` for every `i`
    /// below `size(R)`, found by following the modes of the coalesced `L` from stride 1, each
    /// next mode's stride being the previous one's `shape × stride`. Mode `j` of `L` becomes a
    /// mode of `R` whose stride is the product of the shapes before `j` (negated for a negative
    /// stride). The result is coalesced; it is `1:0` if `L` has no stride ±1.
    ///
    /// The walk stops where the sign of the strides changes: past that point CuTe's walk goes on,
    /// but its result no longer satisfies `L(R(i)) = i`.
    ///
    /// For a bijection onto `0..size` (a compact layout), `R` is its inverse.
    ///
    /// ```
    /// use relayout::notation::cute::CuteLayout;
    /// let l = CuteLayout::parse("(2,4,6):(4,1,8)")?;
    /// let r = l.right_inverse();
    /// assert_eq!(r.to_string(), "(4,2,6):(2,1,8)");
    /// for i in 0..48 {
    ///     assert_eq!(l.eval(r.eval(i)?)?, i);
    /// }
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn right_inverse(&self) -> CuteLayout {
        let modes = flat_modes(&self.coalesce());
        let mut before = Vec::with_capacity(modes.len());
        let mut product = 1i64;
        for &(s, _) in &modes {
            before.push(product);
            // Within the layout's size.
            product *= s;
        }
        let mut inverse = Vec::new();
        let mut next = 1i128;
        let mut sign = None;
        // After coalescing every shape is at least 2 (or the layout is 1:0, stride 0), so `next`
        // grows and each mode is taken at most once.
        while let Some(j) = modes.iter().position(|&(_, d)| (d as i128).abs() == next) {
            let (s, d) = modes[j];
            if *sign.get_or_insert(d.signum()) != d.signum() {
                break;
            }
            inverse.push((s, d.signum() * before[j]));
            next = s as i128 * (d as i128).abs();
        }
        if inverse.is_empty() {
            inverse.push((1, 0));
        }
        let (shape, stride) = flat_parts(&inverse);
        // A subset of the coalesced modes with strides below the size: in bounds.
        CuteLayout::from_checked(shape, stride).coalesce()
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{cute, injective_layouts, layouts, shapes};
    use proptest::prelude::*;

    #[test]
    fn documented_examples() {
        for (l, want) in [
            ("(2,4,6):(4,1,8)", "(4,2,6):(2,1,8)"),
            ("(2,4):(4,1)", "(4,2):(2,1)"),
            ("(4,2):(1,4)", "8:1"),
            ("(4,2):(2,8)", "1:0"),
            ("(4,2):(1,8)", "4:1"),
            ("(3,2):(-1,3)", "3:-1"),
            ("(3,2):(-1,-3)", "6:-1"),
            ("(2,3):(3,-1)", "3:-2"),
            ("(2,2):(1,1)", "2:1"),
            ("(2,3):(0,0)", "1:0"),
        ] {
            assert_eq!(cute(l).right_inverse().to_string(), want, "{l}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn right_inverse_is_a_right_inverse(l in layouts(shapes(3, 8), -3..=8)) {
            let r = l.right_inverse();
            prop_assert!(r.size() <= l.size());
            for i in 0..r.size() as i64 {
                prop_assert_eq!(l.eval(r.eval(i).unwrap()).unwrap(), i, "{} then {}", r, l);
            }
        }

        #[test]
        fn compact_layouts_are_inverted(l in injective_layouts(shapes(3, 8), 1)) {
            let r = l.right_inverse();
            prop_assert_eq!(r.size(), l.size());
            for i in 0..l.size() as i64 {
                prop_assert_eq!(r.eval(l.eval(i).unwrap()).unwrap(), i);
            }
        }
    }
}
