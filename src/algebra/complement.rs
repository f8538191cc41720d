//! CuTe's `complement`: the layout of the positions a layout leaves out, up to a cotarget.

use super::{ceil_div, flat_layout, flat_modes, CuteLayout, IntTuple};
use crate::error::{Error, Result};

impl CuteLayout {
    /// CuTe's `complement(A, cotarget)`: a layout `R`, strictly increasing, whose offsets other
    /// than `R(0) = 0` are not offsets of `A`, such that `(A, R)` covers at least the cotarget.
    /// The cotarget is an integer or a shape (`24`, `(4,6)`); a shape is divided mode by mode,
    /// as in CuTe, which can round up more than dividing its size would.
    ///
    /// Stride-0 and size-1 modes of `A` are ignored. The result is coalesced.
    ///
    /// Fails with [`Error::InvalidLayout`] when the cotarget is not positive, when `A` has a
    /// negative stride, or when a mode of `A` overlaps the modes with smaller strides (CuTe's
    /// "non-injective layout"), and with [`Error::Overflow`] when the result does not fit.
    ///
    /// ```
    /// use relayout::notation::cute::CuteLayout;
    /// let c = |a: &str, n: i64| CuteLayout::parse(a)?.complement(n).map(|r| r.to_string());
    /// assert_eq!(c("4:2", 24)?, "(2,3):(1,8)");
    /// assert_eq!(c("(2,2):(1,6)", 24)?, "(3,2):(2,12)");
    /// assert_eq!(c("(4,6):(1,4)", 24)?, "1:0");
    /// assert!(c("(2,2):(1,1)", 4).is_err()); // overlapping modes
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn complement(&self, cotarget: impl Into<IntTuple>) -> Result<CuteLayout> {
        let cotarget = cotarget.into();
        if let Some(v) = cotarget.leaves().into_iter().find(|&v| v < 1) {
            return Err(Error::InvalidLayout(format!(
                "complement: the cotarget {cotarget} has the entry {v}; entries must be positive"
            )));
        }
        complement(self, &self.filter(), &cotarget)
    }

    /// CuTe's one-operand `complement(A)`: the complement within the cosize of `A`'s image,
    /// `complement(A, cosize(filter(A)))`.
    ///
    /// ```
    /// use relayout::notation::cute::CuteLayout;
    /// let l = CuteLayout::parse("(2,2):(4,1)")?; // offsets 0, 4, 1, 5
    /// assert_eq!(l.complement_in_cosize()?.to_string(), "2:2");
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn complement_in_cosize(&self) -> Result<CuteLayout> {
        let filtered = self.filter();
        let cosize = IntTuple::Int(filtered.cosize() as i64);
        complement(self, &filtered, &cosize)
    }
}

/// The complement of `layout`, whose filtered form is `filtered`, for a valid cotarget.
fn complement(
    layout: &CuteLayout,
    filtered: &CuteLayout,
    cotarget: &IntTuple,
) -> Result<CuteLayout> {
    let mut modes: Vec<(i128, i128)> = flat_modes(filtered)
        .into_iter()
        .map(|(s, d)| (s as i128, d as i128))
        .collect();
    if modes == [(1, 0)] {
        // Nothing of the layout is left: the whole cotarget, compact.
        return CuteLayout::from_shape(IntTuple::Int(narrow(product(cotarget)?)?));
    }
    if let Some(&(s, d)) = modes.iter().find(|&&(_, d)| d < 0) {
        return Err(Error::InvalidLayout(format!(
            "complement of {layout}: its mode {s}:{d} has a negative stride; CuTe's complement \
             takes non-negative strides"
        )));
    }
    // Visit the modes by increasing stride; each result mode fills the gap below one of them.
    let mut result: Vec<(i128, i128)> = Vec::with_capacity(modes.len() + 1);
    let mut reach = 1i128;
    while !modes.is_empty() {
        let smallest = (0..modes.len()).min_by_key(|&i| modes[i].1).unwrap_or(0);
        let (s, d) = modes.remove(smallest);
        let gap = d / reach;
        if gap == 0 {
            return Err(Error::InvalidLayout(format!(
                "complement of {layout}: its mode {s}:{d} overlaps the modes with smaller \
                 strides, which reach {reach} (CuTe: non-injective layout)"
            )));
        }
        result.push((gap, reach));
        reach = d * s;
    }
    let rest = ceil_div_product(cotarget, reach)?;
    result.push((rest, if rest == 1 { 0 } else { reach }));
    Ok(flat_layout(&result)?.coalesce())
}

/// CuTe's `size(ceil_div(cotarget, divisor))`: a tuple is divided left to right, each entry by
/// what is left of the divisor after the entries before it.
fn ceil_div_product(cotarget: &IntTuple, divisor: i128) -> Result<i128> {
    match cotarget {
        IntTuple::Int(v) => Ok(ceil_div(*v as i128, divisor)),
        IntTuple::Tuple(items) => {
            let mut left = divisor;
            let mut total = 1i128;
            for item in items {
                let part = ceil_div_product(item, left)?;
                total = total.checked_mul(part).ok_or_else(|| too_big(cotarget))?;
                left = ceil_div(left, product(item)?);
            }
            Ok(total)
        }
    }
}

/// The product of a positive tuple, or [`Error::Overflow`].
fn product(tuple: &IntTuple) -> Result<i128> {
    tuple
        .leaves()
        .into_iter()
        .try_fold(1i128, |acc, v| acc.checked_mul(v as i128))
        .ok_or_else(|| too_big(tuple))
}

fn too_big(tuple: &IntTuple) -> Error {
    Error::Overflow(format!("complement: the cotarget {tuple} is too large"))
}

fn narrow(v: i128) -> Result<i64> {
    i64::try_from(v).map_err(|_| Error::Overflow(format!("{v} does not fit in 64 bits")))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{cute, injective_layouts, layouts, offsets, shapes};
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashSet;

    fn complement_text(a: &str, cotarget: &str) -> String {
        let cotarget: IntTuple = cotarget.parse().unwrap();
        cute(a).complement(cotarget).unwrap().to_string()
    }

    #[test]
    fn documented_examples() {
        for (a, cotarget, want) in [
            ("4:1", "24", "6:4"),
            ("6:4", "24", "4:1"),
            ("(4,6):(1,4)", "24", "1:0"),
            ("4:2", "24", "(2,3):(1,8)"),
            ("(2,4):(1,6)", "24", "3:2"),
            ("(2,2):(1,6)", "24", "(3,2):(2,12)"),
            ("(2,2):(4,1)", "24", "(2,3):(2,8)"),
            ("(4,2):(1,10)", "14", "2:4"),
            ("4:2", "(4,2,3)", "(2,3):(1,8)"),
            ("2:1", "(3,5)", "10:2"),
            ("(4,2):(0,0)", "(2,3)", "6:1"),
            ("1:0", "1", "1:0"),
        ] {
            assert_eq!(
                complement_text(a, cotarget),
                want,
                "complement({a}, {cotarget})"
            );
        }
        assert_eq!(
            cute("(2,2):(4,1)")
                .complement_in_cosize()
                .unwrap()
                .to_string(),
            "2:2"
        );
    }

    #[test]
    fn tuple_cotargets_divide_mode_by_mode() {
        // ceil_div((3,5), 2) = (2,5): 10 positions, where ceil_div(15, 2) would give 8.
        assert_eq!(complement_text("2:1", "(3,5)"), "10:2");
        assert_eq!(complement_text("2:1", "15"), "8:2");
    }

    #[test]
    fn rejections() {
        let invalid = |r: Result<CuteLayout>| {
            assert!(matches!(r, Err(Error::InvalidLayout(_))), "{r:?}");
        };
        invalid(cute("(2,2):(1,1)").complement(8));
        invalid(cute("(3,2):(2,3)").complement(12));
        invalid(cute("(2,2):(1,-2)").complement(8));
        invalid(cute("4:1").complement(0));
        invalid(cute("4:1").complement("(2,-1)".parse::<IntTuple>().unwrap()));
        assert!(matches!(
            cute("2:1").complement(i64::MAX),
            Err(Error::Overflow(_))
        ));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// For layouts whose strides divide each other, `(A, R)` is a bijection onto
        /// `0..cosize` that reaches the cotarget, with `R` increasing and disjoint from `A`.
        #[test]
        fn complement_fills_the_gaps(
            a in injective_layouts(shapes(2, 5), 3),
            cotarget in 1..200i64,
        ) {
            let r = a.complement(cotarget).unwrap();
            let image: HashSet<i64> = offsets(&a).into_iter().collect();
            let rs = offsets(&r);
            prop_assert!(rs.windows(2).all(|w| w[0] < w[1]), "{} not increasing", r);
            prop_assert!(rs.iter().skip(1).all(|o| !image.contains(o)), "{} meets {}", r, a);
            let both = CuteLayout::from_modes(vec![a.clone(), r.clone()]).unwrap();
            let mut all = offsets(&both);
            all.sort_unstable();
            prop_assert_eq!(all, (0..both.size() as i64).collect::<Vec<_>>());
            prop_assert!(both.cosize() as i64 >= cotarget.max(a.cosize() as i64));
        }

        /// Any layout: either an error, or an increasing layout that avoids the layout's offsets.
        #[test]
        fn complement_is_ordered_and_disjoint(a in layouts(shapes(2, 5), 0..=9), cotarget in 1..100i64) {
            match a.complement(cotarget) {
                Ok(r) => {
                    let image: HashSet<i64> = offsets(&a).into_iter().collect();
                    let rs = offsets(&r);
                    prop_assert!(rs.windows(2).all(|w| w[0] < w[1]), "{} not increasing", r);
                    prop_assert!(rs.iter().skip(1).all(|o| !image.contains(o)), "{} meets {}", r, a);
                }
                Err(e) => prop_assert!(matches!(e, Error::InvalidLayout(_)), "{}", e),
            }
        }
    }
}
