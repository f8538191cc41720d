//! `relayout.Layout` and `relayout.layout_of`.

use numpy::{IntoPyArray, PyArray1};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};
use relayout::{notation, DType, Layout};

use crate::errors::OrPy;
use crate::tensor::Strided;

/// A tensor layout: a logical shape and the buffer offset of every coordinate.
///
/// ``Layout(text)`` parses notation-prefixed text: ``"cute:(2,(2,2)):(4,(2,1))"``,
/// ``"xla:f32[3,5]{1,0:T(2,2)}"``, ``"tvm:[16,64] lambda i, j: [j // 8, i, j % 8]"``,
/// ``"morello:[16] [0, 0 oe(8)]"``. ``Layout.from_strides(shape, strides)`` and
/// ``Layout.row_major(shape)`` build strided ones, and ``layout_of(array)`` gives the layout of
/// any NumPy array or view.
#[pyclass(name = "Layout", module = "relayout", frozen, eq, hash)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PyLayout {
    /// The layout.
    pub layout: Layout,
    /// The element type the text names (XLA's), if any.
    pub dtype: Option<DType>,
    /// The text it was parsed from, if it was.
    text: Option<String>,
}

impl PyLayout {
    /// A layout with no text or element type of its own.
    pub fn of(layout: Layout) -> PyLayout {
        PyLayout {
            layout,
            dtype: None,
            text: None,
        }
    }

    /// A `Layout` or notation text as a layout.
    pub fn from_arg(value: &Bound<'_, PyAny>) -> PyResult<PyLayout> {
        if let Ok(l) = value.cast::<PyLayout>() {
            return Ok(l.get().clone());
        }
        if let Ok(text) = value.extract::<String>() {
            return PyLayout::parse(&text);
        }
        Err(PyTypeError::new_err(format!(
            "expected a relayout.Layout or layout text, not {}",
            value.get_type().name()?
        )))
    }

    fn parse(text: &str) -> PyResult<PyLayout> {
        let parsed = notation::parse(text).or_py()?;
        Ok(PyLayout {
            layout: parsed.layout,
            dtype: parsed.dtype,
            text: Some(text.to_string()),
        })
    }
}

#[pymethods]
impl PyLayout {
    #[new]
    fn py_new(text: &str) -> PyResult<PyLayout> {
        PyLayout::parse(text)
    }

    /// The strided layout ``offset(x) = sum(strides[d] * x[d])`` (strides in elements; negative
    /// strides, and zero strides for a broadcast source, are allowed).
    #[staticmethod]
    fn from_strides(shape: Vec<usize>, strides: Vec<i64>) -> PyResult<PyLayout> {
        Ok(PyLayout::of(
            Layout::from_strides(&shape, &strides).or_py()?,
        ))
    }

    /// The row-major (C order) layout of ``shape``.
    #[staticmethod]
    fn row_major(shape: Vec<usize>) -> PyResult<PyLayout> {
        Ok(PyLayout::of(Layout::row_major(&shape).or_py()?))
    }

    /// The logical shape, as a tuple.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.layout.shape())
    }

    /// The number of logical elements.
    #[getter]
    fn size(&self) -> usize {
        self.layout.size()
    }

    /// The number of elements a buffer for this layout holds, padding included.
    #[getter]
    fn cosize(&self) -> usize {
        self.layout.cosize()
    }

    /// The element type the layout text names (XLA's ``f32[...]``), or ``None``.
    #[getter]
    fn dtype(&self) -> Option<&'static str> {
        self.dtype.map(DType::name)
    }

    /// Whether no two coordinates share an offset (the condition for a destination).
    #[getter]
    fn is_injective(&self) -> bool {
        self.layout.is_injective()
    }

    /// The buffer offset of one logical coordinate.
    fn offset(&self, coord: Vec<usize>) -> PyResult<i64> {
        self.layout.offset(&coord).or_py()
    }

    /// The buffer offset of every logical coordinate, in row-major order of the shape, as a
    /// 1-D ``int64`` array (offsets count from offset 0, which a buffer holds at index
    /// ``-min(0, lowest offset)``).
    fn offsets<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        self.layout.offsets().into_pyarray(py)
    }

    /// The layout's formula, such as ``[2, 4] -> 4*x0 + 2*(x1%2) + (x1/2)``.
    fn __str__(&self) -> String {
        self.layout.to_string()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(match &self.text {
            Some(text) => format!("Layout({})", PyString::new(py, text).repr()?),
            None => format!("<relayout.Layout {}>", self.layout),
        })
    }
}

/// The layout of a NumPy array or view, or of any array with the buffer protocol or
/// ``__dlpack__``: its shape, and its strides in elements (negative strides of reversed views
/// and zero strides of broadcast views included). Offsets count from the array's first element.
#[pyfunction]
pub fn layout_of(array: &Bound<'_, PyAny>) -> PyResult<PyLayout> {
    let strided = Strided::new(array, "array")?;
    Ok(PyLayout::of(strided.layout("array")?.0))
}
