//! The conversion rules, written out plainly on exact values: every element becomes a sign, an
//! integer significand and a power of two (or an infinity, or a NaN with its payload), and is
//! rounded from there into the target type. Nothing here uses the machine's own conversions, so
//! the reference ([`crate::reference`]) that calls it is independent of the code the JIT emits.
//!
//! The rules:
//! - float → float: round to nearest, ties to even; subnormals exact; too large → ±inf; ±0, ±inf
//!   kept; a NaN stays a NaN, quiet, with its sign and the top bits of its payload.
//! - integer → integer: exact when the value fits, else the nearest bound (saturation).
//! - float → integer: round to nearest, ties to even, then saturate; NaN → 0.
//! - integer → float: exact where representable, else round to nearest, ties to even.

use super::Kind;

/// An element's value, exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Value {
    /// `(-1)^negative · significand · 2^exponent` (zero when `significand` is 0).
    Finite {
        negative: bool,
        significand: u128,
        exponent: i32,
    },
    /// ±∞.
    Infinite { negative: bool },
    /// A NaN: its sign and its payload, left-aligned (bit 63 is the quiet bit's place).
    Nan { negative: bool, payload: u64 },
}

/// The value of an element of kind `kind` with these bits (the low bits of `bits`).
pub(super) fn decode(kind: Kind, bits: u64) -> Value {
    match kind {
        Kind::Int {
            bits: width,
            signed,
        } => {
            let v = if signed {
                ((bits << (64 - width)) as i64 >> (64 - width)) as i128
            } else {
                (bits << (64 - width) >> (64 - width)) as i128
            };
            Value::Finite {
                negative: v < 0,
                significand: v.unsigned_abs(),
                exponent: 0,
            }
        }
        Kind::Float { exponent, mantissa } => {
            let negative = (bits >> (exponent + mantissa)) & 1 == 1;
            let field = (bits >> mantissa) & ((1 << exponent) - 1);
            let fraction = bits & ((1 << mantissa) - 1);
            let bias = (1i32 << (exponent - 1)) - 1;
            if field == (1 << exponent) - 1 {
                return match fraction {
                    0 => Value::Infinite { negative },
                    _ => Value::Nan {
                        negative,
                        payload: fraction << (64 - mantissa),
                    },
                };
            }
            let (significand, exponent) = match field {
                0 => (fraction, 1 - bias - mantissa as i32),
                _ => (
                    fraction | 1 << mantissa,
                    field as i32 - bias - mantissa as i32,
                ),
            };
            Value::Finite {
                negative,
                significand: significand as u128,
                exponent,
            }
        }
    }
}

/// The bits of `value` as an element of kind `kind`, rounded and saturated by the rules above.
pub(super) fn encode(kind: Kind, value: Value) -> u64 {
    match kind {
        Kind::Int { bits, signed } => encode_int(bits, signed, value),
        Kind::Float { exponent, mantissa } => encode_float(exponent, mantissa, value),
    }
}

fn encode_int(bits: u32, signed: bool, value: Value) -> u64 {
    let (lo, hi): (i128, i128) = if signed {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    };
    let v = match value {
        Value::Nan { .. } => 0,
        Value::Infinite { negative } => {
            if negative {
                lo
            } else {
                hi
            }
        }
        Value::Finite {
            negative,
            significand,
            exponent,
        } => {
            // Anything of 2^65 or more saturates whatever the target, so cap it there.
            let magnitude = round_to_integer(significand, exponent).min(1 << 65) as i128;
            let v = if negative { -magnitude } else { magnitude };
            v.clamp(lo, hi)
        }
    };
    (v as u64) & mask(bits)
}

fn encode_float(exponent: u32, mantissa: u32, value: Value) -> u64 {
    let bias = (1i32 << (exponent - 1)) - 1;
    let all_ones = (1u64 << exponent) - 1;
    let sign_bit = |negative: bool| (negative as u64) << (exponent + mantissa);
    match value {
        Value::Nan { negative, payload } => {
            let quiet = 1u64 << (mantissa - 1);
            sign_bit(negative) | all_ones << mantissa | quiet | payload >> (64 - mantissa)
        }
        Value::Infinite { negative } => sign_bit(negative) | all_ones << mantissa,
        Value::Finite {
            negative,
            significand: 0,
            ..
        } => sign_bit(negative),
        Value::Finite {
            negative,
            significand,
            exponent: e,
        } => {
            // The value lies in [2^top, 2^(top+1)); its last kept bit is worth 2^quantum.
            let top = 127 - significand.leading_zeros() as i32 + e;
            let emin = 1 - bias;
            let quantum = top.max(emin) - mantissa as i32;
            let mut kept = round_to_integer(significand, e - quantum);
            let mut quantum = quantum;
            if kept >> (mantissa + 1) != 0 {
                // Rounding carried into a new bit: the significand is a power of two.
                kept >>= 1;
                quantum += 1;
            }
            if quantum + mantissa as i32 > bias {
                return sign_bit(negative) | all_ones << mantissa;
            }
            let bits = if kept >> mantissa == 0 {
                kept as u64 // subnormal (or zero after rounding)
            } else {
                let field = (quantum + mantissa as i32 + bias) as u64;
                field << mantissa | (kept as u64 & mask(mantissa))
            };
            sign_bit(negative) | bits
        }
    }
}

/// `significand · 2^exponent` rounded to an integer, to nearest with ties to even; values of
/// 2^127 or more come back as `u128::MAX`'s neighbourhood (saturated).
fn round_to_integer(significand: u128, exponent: i32) -> u128 {
    if exponent >= 0 {
        let width = 128 - significand.leading_zeros() as i32;
        return if width + exponent > 127 {
            1 << 127
        } else {
            significand << exponent
        };
    }
    let shift = -exponent;
    if shift > 128 {
        return 0; // below a quarter of the smallest step: the value is under one half
    }
    if shift == 128 {
        // 2^-128 · significand < 1: rounds up only above one half.
        return (significand > 1 << 127) as u128;
    }
    let whole = significand >> shift;
    let rest = significand & ((1u128 << shift) - 1);
    let half = 1u128 << (shift - 1);
    let up = rest > half || (rest == half && whole & 1 == 1);
    whole + up as u128
}

fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1 << bits) - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const F32: Kind = Kind::Float {
        exponent: 8,
        mantissa: 23,
    };
    const F64: Kind = Kind::Float {
        exponent: 11,
        mantissa: 52,
    };

    #[test]
    fn floats_round_trip_through_exact_values() {
        for bits in [
            0u64,
            1,
            0x8000_0000,
            0x3f80_0000,
            0x7f7f_ffff,
            0x0080_0000,
            0x7f80_0000,
        ] {
            assert_eq!(encode(F32, decode(F32, bits)), bits, "{bits:#x}");
        }
        for x in [1.5f64, -0.0, 1e-310, f64::MAX, f64::MIN_POSITIVE, -3.25e100] {
            assert_eq!(encode(F64, decode(F64, x.to_bits())), x.to_bits(), "{x}");
        }
    }

    #[test]
    fn integer_rounding_is_to_nearest_even() {
        // (significand, exponent, rounded)
        for (s, e, r) in [
            (5u128, -1, 2u128),
            (7, -1, 4),
            (3, -2, 1),
            (1, -1, 0),
            (1, 3, 8),
        ] {
            assert_eq!(round_to_integer(s, e), r, "{s}·2^{e}");
        }
        assert_eq!(round_to_integer(u128::MAX, -128), 1);
        assert_eq!(round_to_integer(1 << 127, -128), 0); // exactly one half: to even, 0
        assert_eq!(round_to_integer(u128::MAX, -200), 0);
    }
}
