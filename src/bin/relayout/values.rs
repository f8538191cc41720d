//! Element values as bits: what `apply` writes into the source and prints from the destination.

use relayout::plan::Packed;
use relayout::{Conversion, DType, Error};

/// An element type: how the command line writes, reads and prints values of it, held as bits
/// in a `u128`, and how a buffer stores them.
///
/// Integers are values; floats are values too, except the 8-bit and 4-bit ones, which are their
/// bits (as `pred` is), because few integers survive a round trip through so few bits of float;
/// `c64` and `c128` are `re+imi`, the real part in the low half.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValueType {
    dtype: DType,
    storage: Storage,
}

/// How a buffer holds the elements of a [`ValueType`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Storage {
    /// Each element in this many bytes (1, 2, 4 or 8).
    Whole(usize),
    /// Sub-byte elements packed several to a byte.
    Packed(Packed),
    /// 16-byte elements (`c128`), each as two 8-byte halves, the low one first.
    Halves,
}

impl ValueType {
    /// The value type of `dtype`, sub-byte types packed.
    pub fn new(dtype: DType) -> ValueType {
        let storage = match (dtype.packed(), dtype.size()) {
            (Some(p), _) => Storage::Packed(p),
            (None, 16) => Storage::Halves,
            (None, bytes) => Storage::Whole(bytes),
        };
        ValueType { dtype, storage }
    }

    /// This type with sub-byte elements a byte each (XLA's storage without `E(n)`).
    pub fn unpacked(self) -> ValueType {
        match self.storage {
            Storage::Packed(_) => ValueType {
                storage: Storage::Whole(1),
                ..self
            },
            _ => self,
        }
    }

    /// The element type.
    pub fn dtype(self) -> DType {
        self.dtype
    }

    /// How a buffer holds the elements.
    pub fn storage(self) -> Storage {
        self.storage
    }

    /// All-ones bits of the element.
    pub fn mask(self) -> u128 {
        u128::MAX >> (128 - self.dtype.bits())
    }

    /// The bits of the value `i` (integers and bits wrap; floats round to nearest).
    pub fn encode_index(self, i: u64) -> u128 {
        match self.dtype {
            DType::F16 | DType::BF16 => from_f64(i as f64, self.dtype) as u128,
            DType::F32 | DType::C64 => (i as f32).to_bits() as u128,
            DType::F64 | DType::C128 => (i as f64).to_bits() as u128,
            _ => i as u128 & self.mask(),
        }
    }

    /// Parses `--pad-value` text as a value of this type and returns its bits.
    pub fn parse(self, text: &str) -> Result<u128, Error> {
        let dtype = self.dtype;
        let bad = || Error::ElementType(format!("'{text}' is not a {dtype} value"));
        let float = |t: &str| t.parse::<f64>().map_err(|_| bad());
        // A finite value beyond the type's range does not fit (it would be stored as ±inf).
        let narrow = |x: f64| {
            let bits = from_f64(x, dtype);
            let back =
                f64::from_bits(Conversion::new(dtype, DType::F64).map_or(0, |c| c.apply(bits)));
            match x.is_finite() && back.is_infinite() {
                true => Err(Error::ElementType(format!(
                    "{text} does not fit in {dtype} (it would be {back})"
                ))),
                false => Ok(bits),
            }
        };
        Ok(match dtype {
            DType::F16 | DType::BF16 | DType::F32 => narrow(float(text)?)? as u128,
            DType::F64 => float(text)?.to_bits() as u128,
            DType::C64 => {
                let (re, im) = split_complex(text);
                let (re, im) = (float(re)? as f32, float(im)? as f32);
                (re.to_bits() as u128) | ((im.to_bits() as u128) << 32)
            }
            DType::C128 => {
                let (re, im) = split_complex(text);
                (float(re)?.to_bits() as u128) | ((float(im)?.to_bits() as u128) << 64)
            }
            _ => {
                let v: i128 = text.parse().map_err(|_| bad())?;
                let bits = dtype.bits();
                let (lo, hi) = if self.is_signed() {
                    (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
                } else {
                    (0, (1i128 << bits) - 1)
                };
                if v < lo || v > hi {
                    return Err(Error::ElementType(format!(
                        "{text} does not fit in {dtype} ({lo} to {hi})"
                    )));
                }
                (v as u128) & self.mask()
            }
        })
    }

    /// The text of the value with these bits: a number, or the bits of 8-bit floats and `pred`.
    pub fn format(self, bits: u128) -> String {
        let b = bits & self.mask();
        let complex = |re: String, im: f64| {
            let sign = if im.is_sign_negative() { '-' } else { '+' };
            format!("{re}{sign}{}i", im.abs())
        };
        match self.dtype {
            DType::F16 | DType::BF16 => to_f32(b as u64, self.dtype).to_string(),
            DType::F32 => f32::from_bits(b as u32).to_string(),
            DType::F64 => f64::from_bits(b as u64).to_string(),
            DType::C64 => {
                let (re, im) = (f32::from_bits(b as u32), f32::from_bits((b >> 32) as u32));
                complex(re.to_string(), im as f64)
            }
            DType::C128 => {
                let (re, im) = (f64::from_bits(b as u64), f64::from_bits((b >> 64) as u64));
                complex(re.to_string(), im)
            }
            _ if self.is_signed() => {
                let unused = 128 - self.dtype.bits();
                (((b << unused) as i128) >> unused).to_string()
            }
            _ => b.to_string(),
        }
    }

    fn is_signed(self) -> bool {
        matches!(
            self.dtype,
            DType::I2 | DType::I4 | DType::I8 | DType::I16 | DType::I32 | DType::I64
        )
    }
}

/// The texts of the real and imaginary parts of `re+imi`, `re-imi`, `imi` or `re`.
fn split_complex(text: &str) -> (&str, &str) {
    let Some(body) = text.strip_suffix('i') else {
        return (text, "0");
    };
    // The sign between the parts: not the first character, nor an exponent's sign.
    let sign = body
        .char_indices()
        .rev()
        .find(|&(k, c)| k > 0 && (c == '+' || c == '-') && !body[..k].ends_with(['e', 'E']));
    match sign {
        Some((at, _)) => {
            let im = &body[at..];
            (&body[..at], im.strip_prefix('+').unwrap_or(im))
        }
        None => ("0", body),
    }
}

/// The bits of `x` as a float of type `to` (rounded to nearest even, by the crate's rules).
fn from_f64(x: f64, to: DType) -> u64 {
    Conversion::new(DType::F64, to)
        .map(|c| c.apply(x.to_bits()))
        .unwrap_or(0)
}

/// The f32 value of float bits of type `from` (f16 or bf16; exact).
fn to_f32(bits: u64, from: DType) -> f32 {
    let c = Conversion::new(from, DType::F32);
    f32::from_bits(c.map(|c| c.apply(bits)).unwrap_or(0) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(dtype: DType) -> ValueType {
        ValueType::new(dtype)
    }

    #[test]
    fn half_floats_hold_small_integers_exactly() {
        let (f16, bf16) = (of(DType::F16), of(DType::BF16));
        for i in 0..=2048u64 {
            assert_eq!(f16.format(f16.encode_index(i)), i.to_string());
        }
        for i in 0..=256u64 {
            assert_eq!(bf16.format(bf16.encode_index(i)), i.to_string());
        }
        assert_eq!(f16.format(f16.encode_index(100_000)), "inf");
    }

    #[test]
    fn integers_wrap_and_pad_values_are_range_checked() {
        let (u8, i8, f32) = (of(DType::U8), of(DType::I8), of(DType::F32));
        assert_eq!(u8.format(u8.encode_index(257)), "1");
        assert_eq!(i8.format(i8.encode_index(255)), "-1");
        assert_eq!(i8.parse("-128").unwrap(), 0x80);
        assert!(u8.parse("256").is_err());
        assert!(f32.parse("abc").is_err());
        assert_eq!(f32.format(f32.parse("-1.5").unwrap()), "-1.5");
        let i64 = of(DType::I64);
        assert_eq!(i64.format(i64.parse("-5").unwrap()), "-5");
    }

    #[test]
    fn eight_bit_floats_and_pred_are_their_bits() {
        for dtype in [
            DType::F8E4M3FN,
            DType::F8E5M2,
            DType::F8E8M0FNU,
            DType::Pred,
        ] {
            let t = of(dtype);
            assert_eq!(t.format(t.encode_index(300)), "44", "{dtype}");
            assert_eq!(t.parse("255").unwrap(), 255, "{dtype}");
            assert!(t.parse("256").is_err(), "{dtype}");
        }
    }

    #[test]
    fn complex_values_are_re_plus_im_i() {
        let c64 = of(DType::C64);
        assert_eq!(c64.storage(), Storage::Whole(8));
        assert_eq!(c64.format(c64.encode_index(7)), "7+0i");
        for (text, shown) in [
            ("1.5-2i", "1.5-2i"),
            ("-1e-3+2.5e2i", "-0.001+250i"),
            ("3", "3+0i"),
            ("-4i", "0-4i"),
        ] {
            assert_eq!(c64.format(c64.parse(text).unwrap()), shown, "{text}");
        }
        assert!(c64.parse("1+xi").is_err());
    }

    #[test]
    fn sub_byte_integers_and_c128_have_values() {
        let (i4, u2, c128) = (of(DType::I4), of(DType::U2), of(DType::C128));
        assert_eq!(i4.storage(), Storage::Packed(Packed::FOUR_BITS));
        assert_eq!(i4.unpacked().storage(), Storage::Whole(1));
        assert_eq!(i4.format(i4.encode_index(9)), "-7");
        assert_eq!(i4.parse("-8").unwrap(), 0x8);
        assert!(i4.parse("8").is_err());
        assert_eq!(u2.format(u2.encode_index(6)), "2");
        assert!(u2.parse("4").is_err());
        assert_eq!(c128.storage(), Storage::Halves);
        assert_eq!(c128.format(c128.encode_index(5)), "5+0i");
        assert_eq!(c128.format(c128.parse("0.1-2i").unwrap()), "0.1-2i");
    }
}
