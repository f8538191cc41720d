//! relayout's errors as Python exceptions, with the library's one-line message.

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::PyErr;
use relayout::Error;

/// The Python exception for a relayout error: `TypeError` for element types, `RuntimeError`
/// for code generation (a bug), `ValueError` for everything else (layout text, shapes, buffer
/// lengths, overlapping buffers, ...).
pub fn to_py(e: Error) -> PyErr {
    let message = e.to_string();
    match e {
        Error::ElementType(_) => PyTypeError::new_err(message),
        Error::Codegen(_) => PyRuntimeError::new_err(message),
        _ => PyValueError::new_err(message),
    }
}

/// `?` on a relayout result inside a function that returns a `PyResult`.
pub trait OrPy<T> {
    /// The result with its error as a Python exception.
    fn or_py(self) -> Result<T, PyErr>;
}

impl<T> OrPy<T> for Result<T, Error> {
    fn or_py(self) -> Result<T, PyErr> {
        self.map_err(to_py)
    }
}
