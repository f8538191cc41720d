//! Python bindings of relayout: JIT-compiled relayouts of NumPy arrays and DLPack tensors.
//!
//! The extension module `relayout._relayout`, re-exported by the `relayout` package.

mod dlpack;
mod dtype;
mod errors;
mod kernel;
mod layout;
mod ops;
mod suite;
mod tensor;

use pyo3::prelude::*;

/// JIT-compiled tensor relayouts (the extension module of the ``relayout`` package).
#[pymodule]
fn _relayout(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<layout::PyLayout>()?;
    m.add_class::<kernel::Kernel>()?;
    m.add_class::<dlpack::DLPackTensor>()?;
    m.add_function(wrap_pyfunction!(layout::layout_of, m)?)?;
    m.add_function(wrap_pyfunction!(kernel::compile, m)?)?;
    m.add_function(wrap_pyfunction!(ops::transpose, m)?)?;
    m.add_function(wrap_pyfunction!(ops::to_layout, m)?)?;
    m.add_function(wrap_pyfunction!(ops::from_layout, m)?)?;
    m.add("_suite_cases", wrap_pyfunction!(suite::suite_cases, m)?)?;
    Ok(())
}
