//! Canonical form (CuTe's coalesce rules per dimension) and equality as functions.

use super::{Coords, Digit, Layout, Source};

/// See [`Layout::coalesce`].
pub(super) fn coalesce(layout: &Layout) -> Layout {
    if layout.is_empty() {
        // No coordinate reaches a digit: the canonical empty function of its shape.
        let mut out = layout.clone();
        out.digits.clear();
        out.base = 0;
        out.swizzle = None;
        return out;
    }
    let shape = &layout.shape;
    let mut base = layout.base as i128;
    let mut digits: Vec<Digit> = Vec::new();
    for digit in &layout.digits {
        let (lo, hi) = digit.value_range(shape);
        if lo == hi || digit.stride == 0 {
            base += digit.stride as i128 * lo;
            continue;
        }
        let mut digit = digit.clone();
        if let (Some(e), Source::Dim(_)) = (digit.ext, &digit.source) {
            // The modulo never wraps: the unreduced quotient stays below the radix.
            let (qlo, qhi) = Digit {
                ext: None,
                ..digit.clone()
            }
            .value_range(shape);
            if qlo >= 0 && qhi < e as i128 {
                digit.ext = None;
            }
        }
        digits.push(digit);
    }
    while let Some((a, b)) = find_merge(&digits) {
        let upper = digits.remove(b);
        let lower = &mut digits[if a < b { a } else { a - 1 }];
        lower.ext = match (lower.ext, upper.ext) {
            (Some(e1), Some(e2)) => Some(e1 * e2),
            _ => None,
        };
    }
    digits.sort_by(|x, y| {
        (x.stride.unsigned_abs(), &x.source, x.div)
            .cmp(&(y.stride.unsigned_abs(), &y.source, y.div))
            .reverse()
    });
    let mut out = layout.clone();
    out.digits = digits;
    // Dropped digits moved their constant value into the base, inside the swizzle if there is
    // one; the span is unchanged.
    out.base = base as i64;
    out
}

/// A pair `(lower, upper)` of digits of one dim where `upper` continues `lower`:
/// `upper.div = lower.div·lower.ext` and `upper.stride = lower.stride·lower.ext`.
fn find_merge(digits: &[Digit]) -> Option<(usize, usize)> {
    for (a, lower) in digits.iter().enumerate() {
        let (Source::Dim(d), Some(e), 0) = (&lower.source, lower.ext, lower.shift) else {
            continue;
        };
        for (b, upper) in digits.iter().enumerate() {
            if b != a
                && upper.source == Source::Dim(*d)
                && upper.shift == 0
                && upper.div as u128 == lower.div as u128 * e as u128
                && upper.stride as i128 == lower.stride as i128 * e as i128
            {
                return Some((a, b));
            }
        }
    }
    None
}

/// See [`Layout::same_function`].
pub(super) fn same_function(a: &Layout, b: &Layout) -> bool {
    if a.shape != b.shape {
        return false;
    }
    let (ca, cb) = (a.coalesce(), b.coalesce());
    if ca.base == cb.base && ca.digits == cb.digits && ca.swizzle == cb.swizzle {
        return true;
    }
    if (ca.min_offset, ca.max_offset) != (cb.min_offset, cb.max_offset) {
        return false;
    }
    Coords::new(&a.shape).all(|c| a.offset_unchecked(&c) == b.offset_unchecked(&c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Random layouts: per dim a chain of digits with random radices and strides, sometimes an
    /// extra arbitrary digit (overlapping, shifted or fused), and a random base.
    fn arb_layout() -> impl Strategy<Value = Layout> {
        let shape = proptest::collection::vec(1usize..=7, 1..=3);
        shape
            .prop_flat_map(|shape| {
                let rank = shape.len();
                let chains = proptest::collection::vec(
                    proptest::collection::vec((1usize..=4, -12i64..=12), 1..=3),
                    rank,
                );
                let extra =
                    proptest::option::of((0..rank, 1usize..=4, 1usize..=5, -9i64..=9, -3i64..=3));
                (Just(shape), chains, extra, -5i64..=5)
            })
            .prop_map(|(shape, chains, extra, base)| {
                let mut digits = Vec::new();
                for (d, chain) in chains.iter().enumerate() {
                    let mut div = 1;
                    for (k, &(radix, stride)) in chain.iter().enumerate() {
                        let ext = (k + 1 < chain.len()).then_some(radix);
                        digits.push(Digit::new(Source::Dim(d), div, ext, stride));
                        div *= radix;
                    }
                }
                if let Some((d, div, ext, stride, shift)) = extra {
                    let source = Source::fused([(d, 1), ((d + 1) % shape.len(), 2)]);
                    digits.push(Digit {
                        source,
                        shift,
                        div,
                        ext: Some(ext),
                        stride,
                    });
                }
                Layout::from_parts(&shape, digits, base, None).unwrap()
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn coalescing_never_changes_the_function(l in arb_layout()) {
            let c = l.coalesce();
            prop_assert_eq!(c.offsets(), l.offsets(), "{} became {}", l, c);
            prop_assert!(c.digits().len() <= l.digits().len());
            prop_assert_eq!(c.coalesce(), c.clone());
            prop_assert_eq!((c.min_offset(), c.max_offset()), (l.min_offset(), l.max_offset()));
        }

        #[test]
        fn injectivity_agrees_with_counting_offsets(l in arb_layout()) {
            let mut offsets = l.offsets();
            offsets.sort_unstable();
            offsets.dedup();
            prop_assert_eq!(l.is_injective(), offsets.len() == l.size(), "{}", l);
        }

        #[test]
        fn the_span_is_exact(l in arb_layout()) {
            let offsets = l.offsets();
            prop_assert_eq!(l.min_offset(), *offsets.iter().min().unwrap());
            prop_assert_eq!(l.max_offset(), *offsets.iter().max().unwrap());
        }
    }
}
