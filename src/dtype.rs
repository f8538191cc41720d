//! Element types.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};
use crate::plan::Packed;

/// The element type of a tensor: XLA's primitive types, under the names the command line uses.
///
/// relayout moves bits, so a kernel only cares about the size of an element; the type decides
/// how the command line writes and prints values. Every type relayouts: elements of 1, 2, 4 and
/// 8 bytes as they are, `c128` (16 bytes) as two 8-byte halves, and the sub-byte types packed
/// several to a byte ([`DType::packed`], in XLA's bit order: see [`crate::packing`]).
///
/// ```
/// use relayout::{plan::Packed, DType};
///
/// let t: DType = "f8e4m3fn".parse()?;
/// assert_eq!((t.bits(), t.size()), (8, 1));
/// assert_eq!(DType::C64.size(), 8);
/// assert_eq!(DType::I4.bits(), 4);
/// assert_eq!(DType::I4.packed(), Some(Packed::FOUR_BITS));
/// # Ok::<(), relayout::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    /// Unsigned 8-bit integer.
    U8,
    /// Signed 8-bit integer (XLA's `s8`).
    I8,
    /// Unsigned 16-bit integer.
    U16,
    /// Signed 16-bit integer (XLA's `s16`).
    I16,
    /// IEEE half precision.
    F16,
    /// bfloat16.
    BF16,
    /// Unsigned 32-bit integer.
    U32,
    /// Signed 32-bit integer (XLA's `s32`).
    I32,
    /// IEEE single precision.
    F32,
    /// Unsigned 64-bit integer.
    U64,
    /// Signed 64-bit integer (XLA's `s64`).
    I64,
    /// IEEE double precision.
    F64,
    /// XLA's boolean, one byte.
    Pred,
    /// 8-bit float, 5 exponent and 2 mantissa bits, with infinities (OCP FP8 E5M2).
    F8E5M2,
    /// 8-bit float, 4 exponent and 3 mantissa bits, IEEE-style (infinities and NaNs).
    F8E4M3,
    /// 8-bit float, 4 exponent and 3 mantissa bits, finite: no infinities (OCP FP8 E4M3).
    F8E4M3FN,
    /// 8-bit float, 4 exponent and 3 mantissa bits, exponent bias 11, finite, one NaN
    /// (the encoding with negative zero's bits), no negative zero.
    F8E4M3B11FNUZ,
    /// 8-bit float, 5 exponent and 2 mantissa bits, finite, one NaN, no negative zero.
    F8E5M2FNUZ,
    /// 8-bit float, 4 exponent and 3 mantissa bits, finite, one NaN, no negative zero.
    F8E4M3FNUZ,
    /// 8-bit float, 3 exponent and 4 mantissa bits, IEEE-style.
    F8E3M4,
    /// 8-bit power of two: 8 exponent bits, no sign and no mantissa (the scale of OCP MX
    /// formats).
    F8E8M0FNU,
    /// 4-bit float, 2 exponent bits and 1 mantissa bit, finite (OCP MX FP4).
    F4E2M1FN,
    /// Signed 2-bit integer (XLA's `s2`).
    I2,
    /// Signed 4-bit integer (XLA's `s4`).
    I4,
    /// Unsigned 2-bit integer.
    U2,
    /// Unsigned 4-bit integer.
    U4,
    /// Complex number of two `f32`, real part first: 8 bytes.
    C64,
    /// Complex number of two `f64`, real part first: 16 bytes.
    C128,
}

impl DType {
    /// Every element type, in the order of the command line's help: the types that relayout
    /// first, then the sub-byte types and `c128`.
    pub const ALL: [DType; 28] = [
        DType::U8,
        DType::I8,
        DType::U16,
        DType::I16,
        DType::F16,
        DType::BF16,
        DType::U32,
        DType::I32,
        DType::F32,
        DType::U64,
        DType::I64,
        DType::F64,
        DType::Pred,
        DType::F8E5M2,
        DType::F8E4M3,
        DType::F8E4M3FN,
        DType::F8E4M3B11FNUZ,
        DType::F8E5M2FNUZ,
        DType::F8E4M3FNUZ,
        DType::F8E3M4,
        DType::F8E8M0FNU,
        DType::C64,
        DType::F4E2M1FN,
        DType::I2,
        DType::I4,
        DType::U2,
        DType::U4,
        DType::C128,
    ];

    /// Size of one element in bits: 2, 4, 8, 16, 32, 64 or 128.
    pub fn bits(self) -> u32 {
        match self {
            DType::I2 | DType::U2 => 2,
            DType::I4 | DType::U4 | DType::F4E2M1FN => 4,
            DType::U8
            | DType::I8
            | DType::Pred
            | DType::F8E5M2
            | DType::F8E4M3
            | DType::F8E4M3FN
            | DType::F8E4M3B11FNUZ
            | DType::F8E5M2FNUZ
            | DType::F8E4M3FNUZ
            | DType::F8E3M4
            | DType::F8E8M0FNU => 8,
            DType::U16 | DType::I16 | DType::F16 | DType::BF16 => 16,
            DType::U32 | DType::I32 | DType::F32 => 32,
            DType::U64 | DType::I64 | DType::F64 | DType::C64 => 64,
            DType::C128 => 128,
        }
    }

    /// Size of one element in bytes: 1, 2, 4, 8 or 16. A sub-byte element stored on its own
    /// takes one byte (as XLA stores it unless a layout packs several into a byte with `E(n)`).
    pub fn size(self) -> usize {
        self.bits().div_ceil(8) as usize
    }

    /// How elements of a sub-byte type pack into bytes when a relayout moves them (two 4-bit
    /// or four 2-bit elements to a byte); `None` for the types of whole bytes.
    pub fn packed(self) -> Option<Packed> {
        match self.bits() {
            4 => Some(Packed::FOUR_BITS),
            2 => Some(Packed::TWO_BITS),
            _ => None,
        }
    }

    /// The name used on the command line (`f32`, `bf16`, `f8e4m3fn`, …).
    pub fn name(self) -> &'static str {
        match self {
            DType::U8 => "u8",
            DType::I8 => "i8",
            DType::U16 => "u16",
            DType::I16 => "i16",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::U32 => "u32",
            DType::I32 => "i32",
            DType::F32 => "f32",
            DType::U64 => "u64",
            DType::I64 => "i64",
            DType::F64 => "f64",
            DType::Pred => "pred",
            DType::F8E5M2 => "f8e5m2",
            DType::F8E4M3 => "f8e4m3",
            DType::F8E4M3FN => "f8e4m3fn",
            DType::F8E4M3B11FNUZ => "f8e4m3b11fnuz",
            DType::F8E5M2FNUZ => "f8e5m2fnuz",
            DType::F8E4M3FNUZ => "f8e4m3fnuz",
            DType::F8E3M4 => "f8e3m4",
            DType::F8E8M0FNU => "f8e8m0fnu",
            DType::F4E2M1FN => "f4e2m1fn",
            DType::I2 => "i2",
            DType::I4 => "i4",
            DType::U2 => "u2",
            DType::U4 => "u4",
            DType::C64 => "c64",
            DType::C128 => "c128",
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for DType {
    type Err = Error;

    /// Parses the command-line names of [`DType::ALL`] (`u8`, `f32`, `f8e4m3fn`, `c64`, …).
    fn from_str(s: &str) -> Result<DType> {
        DType::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = DType::ALL.iter().map(|t| t.name()).collect();
                Error::ElementType(format!(
                    "unknown element type '{s}'; expected one of {}",
                    names.join(" ")
                ))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_are_distinct() {
        for t in DType::ALL {
            assert_eq!(t.name().parse::<DType>(), Ok(t));
            assert_eq!(t.to_string(), t.name());
        }
        let mut names: Vec<&str> = DType::ALL.iter().map(|t| t.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), DType::ALL.len());
        assert!(matches!("f8".parse::<DType>(), Err(Error::ElementType(_))));
    }

    #[test]
    fn sizes_in_bits_and_bytes() {
        // (type, bits, bytes): XLA's primitive type sizes.
        for (t, bits, bytes) in [
            (DType::Pred, 8, 1),
            (DType::I2, 2, 1),
            (DType::U4, 4, 1),
            (DType::F4E2M1FN, 4, 1),
            (DType::F8E8M0FNU, 8, 1),
            (DType::BF16, 16, 2),
            (DType::C64, 64, 8),
            (DType::C128, 128, 16),
        ] {
            assert_eq!((t.bits(), t.size()), (bits, bytes), "{t}");
        }
    }

    #[test]
    fn sub_byte_types_pack_and_the_others_do_not() {
        for t in DType::ALL {
            match t.packed() {
                Some(p) => assert_eq!((p.bits(), t.size()), (t.bits(), 1), "{t}"),
                None => assert_eq!(t.size() * 8, t.bits() as usize, "{t}"),
            }
        }
    }
}
