//! relayout's benchmark suite, for the Python benchmark and tests.

use pyo3::prelude::*;
use pyo3::types::PyDict;
use relayout::suite::{self, Size};
use relayout::DType;

/// The cases of relayout's benchmark suite (every one is an axis permutation) as dicts:
/// ``name``, ``about``, ``dtype`` (relayout's name), ``numpy_dtype`` (the NumPy type that holds
/// the elements: ``uint16`` for bf16), ``src`` and ``dst`` (layout text), ``shape``
/// and ``axes`` (the permutation of a row-major array it is) and ``bytes``. ``reduced`` gives the
/// suite's small sizes, for tests.
#[pyfunction]
#[pyo3(signature = (reduced=false))]
pub fn suite_cases(py: Python<'_>, reduced: bool) -> PyResult<Vec<Bound<'_, PyDict>>> {
    let size = if reduced { Size::Reduced } else { Size::Full };
    suite::cases(size)
        .into_iter()
        .map(|case| {
            let d = PyDict::new(py);
            d.set_item("name", case.name)?;
            d.set_item("about", case.about)?;
            d.set_item("dtype", case.dtype.name())?;
            d.set_item("numpy_dtype", numpy_name(case.dtype))?;
            d.set_item("src", &case.src)?;
            d.set_item("dst", &case.dst)?;
            d.set_item("shape", case.permutation.shape.clone())?;
            d.set_item("axes", case.permutation.axes.clone())?;
            d.set_item("bytes", case.bytes())?;
            Ok(d)
        })
        .collect()
}

/// The NumPy dtype that holds elements of `dtype`: the same type, or unsigned integers of its
/// size for types NumPy lacks.
fn numpy_name(dtype: DType) -> &'static str {
    match dtype {
        DType::U8 => "uint8",
        DType::I8 => "int8",
        DType::U16 | DType::BF16 => "uint16",
        DType::I16 => "int16",
        DType::F16 => "float16",
        DType::U32 => "uint32",
        DType::I32 => "int32",
        DType::F32 => "float32",
        DType::U64 => "uint64",
        DType::I64 => "int64",
        DType::F64 => "float64",
        DType::Pred => "bool",
        DType::C64 => "complex64",
        DType::C128 => "complex128",
        other => match other.size() {
            2 => "uint16",
            4 => "uint32",
            8 => "uint64",
            _ => "uint8",
        },
    }
}
