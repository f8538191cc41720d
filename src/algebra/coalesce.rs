//! CuTe's `coalesce`, its by-mode form, and the `filter` and `coalesce_x` variants the other
//! operations build on.

use super::{by_mode, flat_modes, flat_parts, CuteLayout, IntTuple, Rest};
use crate::error::Result;

impl CuteLayout {
    /// CuTe's `coalesce`: the same function on `0..size` with as few modes as possible, depth at
    /// most 1. Size-1 modes are dropped, and a mode `s1:d1` that continues the mode `s0:d0` before
    /// it (`d1 == s0·d0`, which includes two stride-0 modes) is merged into `s0·s1:d0`. A layout
    /// of size 1 becomes `1:0`.
    ///
    /// ```
    /// use relayout::notation::cute::CuteLayout;
    /// let l = CuteLayout::parse("(2,(1,6)):(1,(6,2))")?;
    /// assert_eq!(l.coalesce().to_string(), "12:1");
    /// assert_eq!(CuteLayout::parse("(2,2):(0,0)")?.coalesce().to_string(), "4:0");
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn coalesce(&self) -> CuteLayout {
        let modes = flat_modes(self);
        let (&last, init) = modes.split_last().unwrap_or((&(1, 0), &[]));
        unit_if_size_one(coalesce_modes(init, last))
    }

    /// CuTe's `coalesce(L, profile)`: an integer profile coalesces the whole layout; a tuple
    /// profile coalesces mode `i` of the layout by `profile[i]` (recursively) and keeps the modes
    /// beyond the profile as they are. Only the nesting of the profile matters, not its values.
    ///
    /// Fails with [`Error::InvalidLayout`](crate::Error::InvalidLayout) when a tuple profile has
    /// more modes than the layout it applies to.
    ///
    /// ```
    /// use relayout::notation::cute::CuteLayout;
    /// let l = CuteLayout::parse("(2,(1,6)):(1,(6,2))")?;
    /// assert_eq!(l.coalesce_by(&"(1,1)".parse()?)?.to_string(), "(2,6):(1,2)");
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn coalesce_by(&self, profile: &IntTuple) -> Result<CuteLayout> {
        match profile {
            IntTuple::Int(_) => Ok(self.coalesce()),
            IntTuple::Tuple(items) => by_mode(self, items, Rest::Keep, "coalesce", |mode, p| {
                mode.coalesce_by(p)
            }),
        }
    }

    /// CuTe's `filter`: the coalesced layout without stride-0 and size-1 modes (`1:0` if nothing
    /// is left). It has the same image as the layout.
    pub(super) fn filter(&self) -> CuteLayout {
        let modes: Vec<(i64, i64)> = flat_modes(self)
            .into_iter()
            .map(|(s, d)| if d == 0 { (1, 0) } else { (s, d) })
            .collect();
        let (&last, init) = modes.split_last().unwrap_or((&(1, 0), &[]));
        unit_if_size_one(coalesce_modes(init, last))
    }

    /// CuTe's `coalesce_x`, the flat left operand of a composition: [`CuteLayout::coalesce`],
    /// except that a size-1 last mode `1:d` enters as `2:d`, so the result keeps the layout's
    /// function past the end of its domain (where the last mode is not reduced). Returns the
    /// `(shape, stride)` pairs; every shape is at least 2.
    pub(super) fn coalesce_x(&self) -> Vec<(i64, i64)> {
        let modes = flat_modes(self);
        let (&(s, d), init) = modes.split_last().unwrap_or((&(1, 0), &[]));
        coalesce_modes(init, (s.max(2), d))
    }
}

/// CuTe's backward coalescing scan: folds `modes`, from the right, into the modes built from
/// `last`; returns the merged `(shape, stride)` pairs, left to right.
fn coalesce_modes(modes: &[(i64, i64)], last: (i64, i64)) -> Vec<(i64, i64)> {
    // Built right to left: `merged[0]` is the rightmost mode, the last entry the current front.
    let mut merged = vec![last];
    for &(s, d) in modes.iter().rev() {
        if s == 1 {
            continue;
        }
        let alone = merged.len() == 1;
        let front = merged
            .last_mut()
            .unwrap_or_else(|| unreachable!("never empty"));
        if alone && front.0 == 1 {
            *front = (s, d);
        } else if s as i128 * d as i128 == front.1 as i128 {
            // Sizes stay within the layout's size (or twice it, for `coalesce_x`).
            *front = (s * front.0, d);
        } else {
            merged.push((s, d));
        }
    }
    merged.reverse();
    merged
}

/// The layout of merged pairs, with a lone size-1 mode written `1:0` as CuTe does.
fn unit_if_size_one(modes: Vec<(i64, i64)>) -> CuteLayout {
    let modes = match modes.as_slice() {
        [(1, _)] => vec![(1, 0)],
        _ => modes,
    };
    let (shape, stride) = flat_parts(&modes);
    // Merging keeps the function on the domain, so the size and the offsets stay in bounds.
    CuteLayout::from_checked(shape, stride)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{cute, layouts, offsets, shapes};
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn cute_rules() {
        for (text, want) in [
            ("(2,(1,6)):(1,(6,2))", "12:1"),
            ("(4,1):(1,0)", "4:1"),
            ("(1,1):(5,7)", "1:0"),
            ("3:0", "3:0"),
            ("(2,2):(0,0)", "4:0"),
            ("(4,5,3):(1,4,1)", "(20,3):(1,1)"),
            ("(2,1,3):(1,7,2)", "6:1"),
            ("(4,2,3):(2,1,8)", "(4,2,3):(2,1,8)"),
            ("((2,3),(1,4)):((-1,-2),(9,-6))", "24:-1"),
        ] {
            assert_eq!(cute(text).coalesce().to_string(), want, "{text}");
        }
    }

    #[test]
    fn by_mode_profiles() {
        let l = cute("(3,(4,5),(2,2)):(8,(1,4),(1,2))");
        let profile = |p: &str| l.coalesce_by(&p.parse().unwrap()).unwrap().to_string();
        assert_eq!(profile("7"), l.coalesce().to_string());
        assert_eq!(profile("(1,1)"), "(3,20,(2,2)):(8,1,(1,2))");
        assert_eq!(profile("(1,1,1)"), "(3,20,4):(8,1,1)");
        assert_eq!(profile("(1,(1,1))"), "(3,(4,5),(2,2)):(8,(1,4),(1,2))");
        assert!(l.coalesce_by(&"(1,1,1,1)".parse().unwrap()).is_err());
        assert!(l.coalesce_by(&"(1,(1,1,1))".parse().unwrap()).is_err());
    }

    #[test]
    fn filter_and_coalesce_x() {
        assert_eq!(cute("(4,2,3):(1,0,4)").filter().to_string(), "12:1");
        assert_eq!(cute("(4,2):(0,0)").filter().to_string(), "1:0");
        assert_eq!(cute("(4,1):(1,0)").coalesce_x(), [(4, 1), (2, 0)]);
        assert_eq!(cute("(4,1):(1,4)").coalesce_x(), [(8, 1)]);
        assert_eq!(cute("1:5").coalesce_x(), [(2, 5)]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn coalesce_keeps_the_function(l in layouts(shapes(3, 10), -6..=6)) {
            let c = l.coalesce();
            prop_assert!(c.depth() <= 1);
            prop_assert_eq!(c.size(), l.size());
            prop_assert_eq!(offsets(&c), offsets(&l));
            prop_assert_eq!(c.coalesce(), c.clone());
            // No two neighbours that could still merge, and no size-1 modes unless it is `1:0`.
            let modes = flat_modes(&c);
            prop_assert!(modes.windows(2).all(|w| w[1].1 != w[0].0 * w[0].1));
            prop_assert!(modes == [(1, 0)] || modes.iter().all(|&(s, _)| s > 1));
        }

        #[test]
        fn coalesce_by_mode_keeps_each_mode(l in layouts(shapes(3, 10), -6..=6)) {
            let ones = IntTuple::Tuple(vec![IntTuple::Int(1); l.rank()]);
            let c = l.coalesce_by(&ones).unwrap();
            prop_assert_eq!(c.rank(), l.rank());
            for (a, b) in c.modes().iter().zip(l.modes()) {
                prop_assert_eq!(a, &b.coalesce());
            }
            prop_assert_eq!(offsets(&c), offsets(&l));
        }

        #[test]
        fn coalesce_x_keeps_the_function_past_the_domain(l in layouts(shapes(3, 10), -6..=6)) {
            let (shape, stride) = flat_parts(&l.coalesce_x());
            let x = CuteLayout::new(shape, stride).unwrap();
            for i in 0..3 * l.size() as i64 {
                prop_assert_eq!(x.eval(i).unwrap(), l.eval(i).unwrap(), "at {}", i);
            }
        }
    }
}
