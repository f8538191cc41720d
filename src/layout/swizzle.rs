//! CuTe's swizzle functor: an XOR of offset bits that a layout applies after its digits.

use std::fmt;

use crate::error::{Error, Result};

/// Highest bit (exclusive) a swizzle's masks may reach: every offset bit a swizzle reads or
/// writes is below it, so swizzled offsets stay within [`MAX_OFFSET`](super::MAX_OFFSET) of the
/// unswizzled ones. CuTe's masks are 32-bit `int`s, far below it.
pub const MAX_SWIZZLE_BIT: u32 = 60;

/// CuTe's `Swizzle<B,M,S>` (`include/cute/swizzle.hpp`): a bijection on offsets that XORs the
/// `B` bits starting at bit `M + max(0,S)` (the "YYY" mask) into the `B` bits starting at bit
/// `M - min(0,S)` (the "ZZZ" mask):
///
/// ```text
/// yyy_mask = ((1 << B) - 1) << (M + max(0, S))
/// zzz_mask = ((1 << B) - 1) << (M - min(0, S))
/// swizzle(o) = o ^ shiftr(o & yyy_mask, S)     (shiftr by a negative S shifts left)
/// ```
///
/// CuTe requires `B >= 0`, `M >= 0` and `|S| >= B` (so the masks do not overlap and the swizzle
/// is its own inverse). The `M` lowest bits are never touched: runs of `2^M` offsets that start
/// at a multiple of `2^M` stay contiguous. A [`Layout`](super::Layout) may carry one, applied to
/// the sum of its digits and base (CuTe's `Sw<B,M,S> o offset o layout`).
///
/// ```
/// use relayout::layout::Swizzle;
///
/// let sw = Swizzle::new(3, 4, 3)?; // CuTe's Sw<3,4,3>, the 128-byte swizzle of 16-byte units
/// assert_eq!((sw.yyy_mask(), sw.zzz_mask()), (0b11_1000_0000, 0b111_0000));
/// assert_eq!(sw.apply(128), 144); // bit 7 of the row flips bit 4 of the column
/// assert_eq!(sw.apply(sw.apply(1000)), 1000);
/// assert_eq!(sw.to_string(), "Sw<3,4,3>");
/// # Ok::<(), relayout::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Swizzle {
    bits: u32,
    base: u32,
    shift: i32,
}

impl Swizzle {
    /// `Swizzle<bits, base, shift>` (CuTe's `B`, `M`, `S`).
    ///
    /// Fails with [`Error::InvalidLayout`] where CuTe's `static_assert`s would (`B < 0`, `M < 0`,
    /// `|S| < B`), and with [`Error::Overflow`] when a mask reaches bit [`MAX_SWIZZLE_BIT`].
    pub fn new(bits: i64, base: i64, shift: i64) -> Result<Swizzle> {
        let text = format!("Sw<{bits},{base},{shift}>");
        if bits < 0 || base < 0 {
            return Err(Error::InvalidLayout(format!(
                "{text}: a swizzle needs B >= 0 and M >= 0 (CuTe's static_assert)"
            )));
        }
        if shift.unsigned_abs() < bits as u64 {
            return Err(Error::InvalidLayout(format!(
                "{text}: a swizzle needs |S| >= B, or its masks overlap (CuTe's static_assert)"
            )));
        }
        let top = (bits as i128) + (base as i128) + (shift.unsigned_abs() as i128);
        if top > MAX_SWIZZLE_BIT as i128 {
            return Err(Error::Overflow(format!(
                "{text}: its masks reach bit {top}; relayout's offsets have {MAX_SWIZZLE_BIT} bits"
            )));
        }
        // All three fit: each is at most `top <= MAX_SWIZZLE_BIT`.
        Ok(Swizzle {
            bits: bits as u32,
            base: base as u32,
            shift: shift as i32,
        })
    }

    /// `B`: how many bits are XORed.
    pub fn bits(&self) -> u32 {
        self.bits
    }

    /// `M`: how many low bits are kept as they are.
    pub fn base(&self) -> u32 {
        self.base
    }

    /// `S`: how far the YYY bits are shifted right onto the ZZZ bits (left when negative).
    pub fn shift(&self) -> i32 {
        self.shift
    }

    /// Whether the swizzle changes nothing (`B = 0`).
    pub fn is_identity(&self) -> bool {
        self.bits == 0
    }

    fn bit_mask(&self) -> i64 {
        (1i64 << self.bits) - 1
    }

    /// The bits that are read: `((1 << B) - 1) << (M + max(0, S))`.
    pub fn yyy_mask(&self) -> i64 {
        self.bit_mask() << (self.base as i32 + self.shift.max(0))
    }

    /// The bits that are flipped: `((1 << B) - 1) << (M - min(0, S))`.
    pub fn zzz_mask(&self) -> i64 {
        self.bit_mask() << (self.base as i32 - self.shift.min(0))
    }

    /// The swizzled offset: `o ^ shiftr(o & yyy_mask, S)`, on the two's complement bits of `o`
    /// as in CuTe.
    pub fn apply(&self, offset: i64) -> i64 {
        let y = offset & self.yyy_mask();
        let moved = if self.shift >= 0 {
            y >> self.shift
        } else {
            y << -self.shift
        };
        offset ^ moved
    }

    /// The lowest bit above both masks (`M + B + |S|`; 0 for the identity): a swizzled offset
    /// agrees with the offset in every bit from here up, and offsets that differ by a multiple
    /// of `2^top_bit` are swizzled alike.
    pub fn top_bit(&self) -> u32 {
        if self.is_identity() {
            return 0;
        }
        self.base + self.bits + self.shift.unsigned_abs()
    }

    /// Bounds of the swizzled values of offsets in `lo..=hi`: the range rounded out to whole
    /// blocks of `2^top_bit` (each block is mapped onto itself).
    pub(crate) fn span_bound(&self, lo: i128, hi: i128) -> (i128, i128) {
        let low_bits = (1i128 << self.top_bit()) - 1;
        (lo & !low_bits, hi | low_bits)
    }
}

impl fmt::Display for Swizzle {
    /// CuTe's `Sw<B,M,S>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sw<{},{},{}>", self.bits, self.base, self.shift)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CuTe's definition, written out again on its own: YYY and ZZZ masks, then the XOR.
    fn cute_swizzle(b: u32, m: u32, s: i32, o: i64) -> i64 {
        let bit_msk = (1i64 << b) - 1;
        let yyy = bit_msk << (m as i32 + s.max(0));
        let zzz = bit_msk << (m as i32 - s.min(0));
        let shifted = if s >= 0 {
            (o & yyy) >> s
        } else {
            (o & yyy) << -s
        };
        assert_eq!(shifted & !zzz, 0, "the YYY bits land on the ZZZ bits");
        o ^ shifted
    }

    #[test]
    fn agrees_with_cutes_definition_and_is_an_involution() {
        for b in 0..4u32 {
            for m in 0..5u32 {
                for s in -6i32..=6 {
                    let Ok(sw) = Swizzle::new(b as i64, m as i64, s as i64) else {
                        assert!(s.unsigned_abs() < b, "Sw<{b},{m},{s}> is valid");
                        continue;
                    };
                    for o in -300i64..3000 {
                        let got = sw.apply(o);
                        assert_eq!(got, cute_swizzle(b, m, s, o), "{sw} at {o}");
                        assert_eq!(sw.apply(got), o, "{sw} twice at {o}");
                        assert_eq!(got & ((1 << m) - 1), o & ((1 << m) - 1), "{sw}: low bits");
                        let top = sw.top_bit();
                        assert_eq!(got >> top, o >> top, "{sw}: bits above the masks");
                    }
                }
            }
        }
    }

    #[test]
    fn cutes_conditions_and_the_offset_width_are_errors() {
        for (b, m, s) in [(-1, 4, 3), (3, -1, 3), (3, 4, 2), (3, 4, -2), (1, 0, 0)] {
            assert!(
                matches!(Swizzle::new(b, m, s), Err(Error::InvalidLayout(_))),
                "Sw<{b},{m},{s}>"
            );
        }
        for (b, m, s) in [
            (3, 55, 3),
            (40, 0, 40),
            (1, i64::MAX, 1),
            (i64::MAX, 0, i64::MIN),
        ] {
            assert!(Swizzle::new(b, m, s).is_err(), "Sw<{b},{m},{s}>");
        }
        assert!(Swizzle::new(3, 54, 3).is_ok());
        assert!(matches!(Swizzle::new(3, 55, 3), Err(Error::Overflow(_))));
        assert!(Swizzle::new(0, 7, 0).unwrap().is_identity());
    }

    #[test]
    fn span_bounds_round_out_to_blocks() {
        let sw = Swizzle::new(3, 4, 3).unwrap(); // blocks of 1024
        assert_eq!(sw.span_bound(0, 1023), (0, 1023));
        assert_eq!(sw.span_bound(5, 1500), (0, 2047));
        assert_eq!(sw.span_bound(-5, 3), (-1024, 1023));
    }
}
