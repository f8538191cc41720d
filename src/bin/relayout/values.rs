//! Element values as bits: what `apply` writes into the source and prints from the destination.

use relayout::{DType, Error};

/// The bits of the value `i` in `dtype` (integers wrap; floats round to nearest).
pub fn encode_index(dtype: DType, i: u64) -> u64 {
    match dtype {
        DType::F16 => f32_to_f16(i as f32) as u64,
        DType::BF16 => f32_to_bf16(i as f32) as u64,
        DType::F32 => (i as f32).to_bits() as u64,
        DType::F64 => (i as f64).to_bits(),
        _ => i & mask(dtype),
    }
}

/// Parses `--pad-value` text as a value of `dtype` and returns its bits.
pub fn parse_value(dtype: DType, text: &str) -> Result<u64, Error> {
    let bad = || Error::ElementType(format!("'{text}' is not a {dtype} value"));
    let float = || text.parse::<f64>().map_err(|_| bad());
    Ok(match dtype {
        DType::F16 => f32_to_f16(float()? as f32) as u64,
        DType::BF16 => f32_to_bf16(float()? as f32) as u64,
        DType::F32 => (float()? as f32).to_bits() as u64,
        DType::F64 => float()?.to_bits(),
        _ => {
            let v: i128 = text.parse().map_err(|_| bad())?;
            let bits = 8 * dtype.size() as u32;
            let signed = matches!(dtype, DType::I8 | DType::I16 | DType::I32 | DType::I64);
            let (lo, hi) = if signed {
                (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
            } else {
                (0, (1i128 << bits) - 1)
            };
            if v < lo || v > hi {
                return Err(Error::ElementType(format!(
                    "{text} does not fit in {dtype} ({lo} to {hi})"
                )));
            }
            (v as u64) & mask(dtype)
        }
    })
}

/// The decimal text of the value with these bits (floats as their value).
pub fn format_bits(dtype: DType, bits: u64) -> String {
    let b = bits & mask(dtype);
    match dtype {
        DType::U8 | DType::U16 | DType::U32 | DType::U64 => b.to_string(),
        DType::I8 => (b as u8 as i8).to_string(),
        DType::I16 => (b as u16 as i16).to_string(),
        DType::I32 => (b as u32 as i32).to_string(),
        DType::I64 => (b as i64).to_string(),
        DType::F16 => f16_to_f32(b as u16).to_string(),
        DType::BF16 => f32::from_bits((b as u32) << 16).to_string(),
        DType::F32 => f32::from_bits(b as u32).to_string(),
        DType::F64 => f64::from_bits(b).to_string(),
    }
}

/// All-ones bits of the element size.
pub fn mask(dtype: DType) -> u64 {
    u64::MAX >> (64 - 8 * dtype.size())
}

fn f32_to_bf16(x: f32) -> u16 {
    let b = x.to_bits();
    if x.is_nan() {
        return 0x7fc0;
    }
    let round = 0x7fff + ((b >> 16) & 1);
    ((b + round) >> 16) as u16
}

fn f32_to_f16(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32;
    let man = b & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if man != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let rounded = (m + half - 1 + ((m >> shift) & 1)) >> shift;
        return sign | rounded as u16;
    }
    let rounded = man + 0xfff + ((man >> 13) & 1);
    if rounded & 0x80_0000 != 0 {
        return if e + 1 >= 0x1f {
            sign | 0x7c00
        } else {
            sign | (((e + 1) as u16) << 10)
        };
    }
    sign | ((e as u16) << 10) | (rounded >> 13) as u16
}

fn f16_to_f32(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = ((h >> 10) & 0x1f) as i32;
    let man = (h & 0x3ff) as f32;
    match exp {
        0 => sign * man * 2f32.powi(-24),
        0x1f if man == 0.0 => sign * f32::INFINITY,
        0x1f => f32::NAN,
        _ => sign * (1.0 + man / 1024.0) * 2f32.powi(exp - 15),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_floats_hold_small_integers_exactly() {
        for i in 0..=2048u64 {
            assert_eq!(
                format_bits(DType::F16, encode_index(DType::F16, i)),
                i.to_string()
            );
        }
        for i in 0..=256u64 {
            assert_eq!(
                format_bits(DType::BF16, encode_index(DType::BF16, i)),
                i.to_string()
            );
        }
        assert_eq!(
            format_bits(DType::F16, encode_index(DType::F16, 100_000)),
            "inf"
        );
    }

    #[test]
    fn integers_wrap_and_pad_values_are_range_checked() {
        assert_eq!(format_bits(DType::U8, encode_index(DType::U8, 257)), "1");
        assert_eq!(format_bits(DType::I8, encode_index(DType::I8, 255)), "-1");
        assert_eq!(parse_value(DType::I8, "-128").unwrap(), 0x80);
        assert!(parse_value(DType::U8, "256").is_err());
        assert!(parse_value(DType::F32, "abc").is_err());
        assert_eq!(
            format_bits(DType::F32, parse_value(DType::F32, "-1.5").unwrap()),
            "-1.5"
        );
    }
}
