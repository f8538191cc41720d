//! Element types from Python values (`"float32"`, `"bf16"`, `np.uint8`, `np.dtype(...)`,
//! `torch.bfloat16`), and pad values as element bits.

use numpy::{PyArrayDescr, PyArrayDescrMethods};
use pyo3::prelude::*;
use relayout::{DType, Error};

use crate::errors::OrPy;
use crate::tensor::{Origin, Strided};

/// The element type a Python value names: relayout's own names (`u8 … f64`, `f16`, `bf16`),
/// `"bfloat16"`, a torch dtype (`torch.float32`), or anything `numpy.dtype` accepts. NumPy kinds
/// without a relayout type of their own (bool, complex64, fixed strings, ...) move as unsigned
/// integers of their size.
pub fn parse(value: &Bound<'_, PyAny>) -> PyResult<DType> {
    if let Ok(text) = value.extract::<String>() {
        if let Some(t) = named(&text) {
            return Ok(t);
        }
    } else if let Some(name) = torch_name(value) {
        if let Some(t) = named(&name) {
            return Ok(t);
        }
    }
    let descr = PyArrayDescr::new(value.py(), value).map_err(|_| {
        Error::ElementType(format!(
            "unknown element type {}; expected one of u8 i8 u16 i16 f16 bf16 u32 i32 f32 u64 i64 f64 or a NumPy dtype",
            value.repr().map_or_else(|_| "?".to_string(), |r| r.to_string())
        ))
    })
    .or_py()?;
    of_descr(&descr).or_py()
}

/// The element type of an array's elements, for pad values: bfloat16 for DLPack's bfloat16,
/// else by its NumPy dtype.
pub fn of_strided(array: &Strided<'_>) -> Result<DType, Error> {
    match &array.origin {
        Origin::DLPack { dtype, .. } if dtype.is_bfloat16() => Ok(DType::BF16),
        _ => of_descr(&array.descr),
    }
}

/// The element type of a NumPy dtype: its kind and size, or an unsigned integer of its size.
pub fn of_descr(descr: &Bound<'_, PyArrayDescr>) -> Result<DType, Error> {
    let size = descr.itemsize();
    let t = match (descr.kind(), size) {
        (b'f', 2) => DType::F16,
        (b'f', 4) => DType::F32,
        (b'f', 8) => DType::F64,
        (b'i', 1) => DType::I8,
        (b'i', 2) => DType::I16,
        (b'i', 4) => DType::I32,
        (b'i', 8) => DType::I64,
        (_, 1) => DType::U8,
        (_, 2) => DType::U16,
        (_, 4) => DType::U32,
        (_, 8) => DType::U64,
        _ => {
            return Err(Error::ElementType(format!(
                "{size}-byte elements; relayout moves elements of 1, 2, 4 or 8 bytes"
            )))
        }
    };
    Ok(t)
}

/// relayout's name for the type, or NumPy's and torch's names of the types relayout has.
fn named(text: &str) -> Option<DType> {
    if let Ok(t) = text.parse::<DType>() {
        return Some(t);
    }
    Some(match text {
        "uint8" => DType::U8,
        "int8" => DType::I8,
        "uint16" => DType::U16,
        "int16" => DType::I16,
        "float16" | "half" => DType::F16,
        "bfloat16" => DType::BF16,
        "uint32" => DType::U32,
        "int32" => DType::I32,
        "float32" | "float" => DType::F32,
        "uint64" => DType::U64,
        "int64" => DType::I64,
        "float64" | "double" => DType::F64,
        _ => return None,
    })
}

/// The name of a torch dtype (`torch.bfloat16` → `bfloat16`), without importing torch.
fn torch_name(value: &Bound<'_, PyAny>) -> Option<String> {
    let ty = value.get_type();
    let module: String = ty.getattr("__module__").ok()?.extract().ok()?;
    if module != "torch" {
        return None;
    }
    let text = value.str().ok()?.to_string();
    text.strip_prefix("torch.").map(str::to_string)
}

/// The bits of `value` as an element of `dtype`: floats rounded to the nearest value of the
/// type, integers that must fit it.
pub fn pad_bits(dtype: DType, value: &Bound<'_, PyAny>) -> PyResult<u64> {
    let bad = || {
        Error::ElementType(format!(
            "pad value {} is not a {dtype} value",
            value
                .repr()
                .map_or_else(|_| "?".to_string(), |r| r.to_string())
        ))
    };
    match dtype {
        DType::F16 => {
            let numpy = value.py().import("numpy")?;
            let x: f64 = value.extract().map_err(|_| bad()).or_py()?;
            let half = numpy.getattr("float16")?.call1((x,))?;
            half.call_method1("view", ("uint16",))?.extract::<u64>()
        }
        DType::BF16 => {
            let x: f64 = value.extract().map_err(|_| bad()).or_py()?;
            Ok(u64::from(bf16_bits(x as f32)))
        }
        DType::F32 => {
            let x: f64 = value.extract().map_err(|_| bad()).or_py()?;
            Ok(u64::from((x as f32).to_bits()))
        }
        DType::F64 => {
            let x: f64 = value.extract().map_err(|_| bad()).or_py()?;
            Ok(x.to_bits())
        }
        _ => {
            let v: i128 = value.extract().map_err(|_| bad()).or_py()?;
            int_bits(dtype, v).or_py()
        }
    }
}

/// The bits of the integer `v` as an element of the integer type `dtype`, if it fits.
fn int_bits(dtype: DType, v: i128) -> Result<u64, Error> {
    let bits = 8 * dtype.size() as u32;
    let signed = matches!(dtype, DType::I8 | DType::I16 | DType::I32 | DType::I64);
    let (lo, hi) = if signed {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    };
    if v < lo || v > hi {
        return Err(Error::ElementType(format!(
            "pad value {v} does not fit in {dtype} ({lo} to {hi})"
        )));
    }
    Ok((v as u64) & (u64::MAX >> (64 - bits)))
}

/// bfloat16 bits of `x`, rounded to nearest, ties to even (NaN stays a quiet NaN).
fn bf16_bits(x: f32) -> u16 {
    if x.is_nan() {
        return 0x7fc0;
    }
    let b = x.to_bits();
    let round = 0x7fff + ((b >> 16) & 1);
    ((b + round) >> 16) as u16
}
