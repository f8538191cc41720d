//! Canonical form (CuTe's coalesce rules per dimension) and equality as functions.

use super::{Coords, Digit, Layout, Source};

/// See [`Layout::coalesce`].
pub(super) fn coalesce(layout: &Layout) -> Layout {
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
    // Dropped digits moved their constant value into the base; the span is unchanged.
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
    if ca.base == cb.base && ca.digits == cb.digits {
        return true;
    }
    if (ca.min_offset, ca.max_offset) != (cb.min_offset, cb.max_offset) {
        return false;
    }
    Coords::new(&a.shape).all(|c| a.offset_unchecked(&c) == b.offset_unchecked(&c))
}
