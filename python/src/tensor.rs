//! The arrays the functions take: NumPy arrays, objects with the buffer protocol (viewed by
//! NumPy without a copy) and DLPack tensors, as a data address, a shape and byte strides; and
//! the arrays they return.

use numpy::npyffi::{self, NPY_ARRAY_WRITEABLE, PY_ARRAY_API};
use numpy::{PyArrayDescr, PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyMemoryView, PyModule};
use relayout::{Error, Layout};

use crate::dlpack::{self, DLDataType, DLPackTensor};
use crate::errors::OrPy;

/// An array in memory: the address of its element at index 0 in every dim, its shape, its
/// strides in bytes, and what keeps the memory alive.
pub struct Strided<'py> {
    /// The address of the element at index 0 in every dim.
    pub data: *mut u8,
    /// The shape.
    pub shape: Vec<usize>,
    /// Strides in bytes.
    pub strides: Vec<isize>,
    /// Bytes per element.
    pub itemsize: usize,
    /// Whether the memory may be written.
    pub writable: bool,
    /// The NumPy dtype of results made from it (for DLPack tensors, one of the same bits).
    pub descr: Bound<'py, PyArrayDescr>,
    /// Where it came from.
    pub origin: Origin<'py>,
    /// What keeps the memory alive (the array, a NumPy view of a buffer, a DLPack capsule).
    _keep: Bound<'py, PyAny>,
}

/// Where an array came from, which decides what a result made from it is.
pub enum Origin<'py> {
    /// NumPy (or the buffer protocol): results are NumPy arrays.
    Numpy,
    /// A DLPack tensor of another library: results go back through its `from_dlpack`.
    DLPack {
        /// The tensor's element type.
        dtype: DLDataType,
        /// The `from_dlpack` of the tensor's library, when it has one.
        from_dlpack: Option<Bound<'py, PyAny>>,
    },
}

impl<'py> Strided<'py> {
    /// Reads a NumPy array, a DLPack tensor (`__dlpack__`) or an object with the buffer
    /// protocol, without copying. `what` names the argument in errors.
    pub fn new(obj: &Bound<'py, PyAny>, what: &str) -> PyResult<Strided<'py>> {
        let py = obj.py();
        if let Ok(array) = obj.cast::<PyUntypedArray>() {
            return Strided::of_numpy(array, obj.clone(), what);
        }
        if obj.hasattr("__dlpack__")? {
            return Strided::of_dlpack(obj, what);
        }
        // SAFETY: `obj` is a live object.
        if unsafe { ffi::PyObject_CheckBuffer(obj.as_ptr()) } == 1 {
            // Through a memoryview, so that bytes are bytes (NumPy reads `bytes` as one string).
            let view = PyMemoryView::from(obj)?;
            let array = numpy(py)?.getattr("asarray")?.call1((view,))?;
            let view = array.cast::<PyUntypedArray>()?;
            return Strided::of_numpy(view, array.clone(), what);
        }
        Err(PyTypeError::new_err(format!(
            "{what} must be a NumPy array, a DLPack tensor or an object with the buffer protocol, not {}",
            obj.get_type().name()?
        )))
    }

    fn of_numpy(
        array: &Bound<'py, PyUntypedArray>,
        keep: Bound<'py, PyAny>,
        what: &str,
    ) -> PyResult<Strided<'py>> {
        let descr = array.dtype();
        if descr.has_object() {
            return Err(PyTypeError::new_err(format!(
                "{what} holds Python objects; relayout moves plain bits (numbers, bytes)"
            )));
        }
        // SAFETY: `as_array_ptr` is the live array object.
        let raw = unsafe { &*array.as_array_ptr() };
        Ok(Strided {
            data: raw.fields.data.cast(),
            shape: array.shape().to_vec(),
            strides: array.strides().to_vec(),
            itemsize: descr.itemsize(),
            writable: raw.fields.flags & NPY_ARRAY_WRITEABLE != 0,
            descr,
            origin: Origin::Numpy,
            _keep: keep,
        })
    }

    fn of_dlpack(obj: &Bound<'py, PyAny>, what: &str) -> PyResult<Strided<'py>> {
        let py = obj.py();
        let t = dlpack::import(obj)
            .map_err(|e| PyErr::from_type(e.get_type(py), format!("{what}: {}", e.value(py))))?;
        let descr = PyArrayDescr::new(py, t.dtype.numpy_name().as_str())?;
        let from_dlpack = library_of(obj).and_then(|m| m.getattr("from_dlpack").ok());
        Ok(Strided {
            data: t.data,
            shape: t.shape,
            strides: t.strides,
            itemsize: t.dtype.itemsize(),
            writable: true,
            descr,
            origin: Origin::DLPack {
                dtype: t.dtype,
                from_dlpack,
            },
            _keep: t.capsule,
        })
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// Whether the elements are packed in row-major order (strides of dims of extent 1 do not
    /// matter).
    pub fn is_c_contiguous(&self) -> bool {
        let mut step = self.itemsize as isize;
        for (&n, &s) in self.shape.iter().zip(&self.strides).rev() {
            if n > 1 && s != step {
                return false;
            }
            step = step.saturating_mul(n as isize);
        }
        true
    }

    /// A flat buffer of elements of `elem_size` bytes: C-contiguous, of that element size, and
    /// (for destinations) writable. Returns its address and its length in elements.
    pub fn flat(&self, what: &str, elem_size: usize, write: bool) -> PyResult<(*mut u8, usize)> {
        if !self.is_c_contiguous() {
            return Err(PyValueError::new_err(format!(
                "{what} must be C-contiguous (a flat buffer)"
            )));
        }
        if self.itemsize != elem_size {
            return Err(Error::ElementType(format!(
                "this relayout was compiled for {elem_size}-byte elements, {what} has {}-byte elements",
                self.itemsize
            )))
            .or_py();
        }
        if write && !self.writable {
            return Err(PyValueError::new_err(format!("{what} is read-only")));
        }
        Ok((self.data, self.len()))
    }

    /// The layout of the array in elements, and the address of its lowest element. Fails when a
    /// stride is not a whole number of elements.
    pub fn layout(&self, what: &str) -> PyResult<(Layout, *mut u8)> {
        let size = self.itemsize as isize;
        if size == 0 || self.strides.iter().any(|s| s % size != 0) {
            return Err(PyValueError::new_err(format!(
                "{what} has strides {:?} bytes, not whole {size}-byte elements",
                self.strides
            )));
        }
        let strides: Vec<i64> = self.strides.iter().map(|&s| (s / size) as i64).collect();
        let layout = Layout::from_strides(&self.shape, &strides).or_py()?;
        let lowest = self
            .data
            .wrapping_offset(layout.buffer_start() as isize * size);
        Ok((layout, lowest))
    }

    /// A new C-contiguous array of `shape` with this array's element type (zeroed or not), and
    /// its data address.
    pub fn new_like(
        &self,
        shape: &[usize],
        zeroed: bool,
    ) -> PyResult<(Bound<'py, PyUntypedArray>, *mut u8)> {
        new_array(&self.descr, shape, zeroed)
    }

    /// What to return for a result array made for this input: the array, or for a DLPack
    /// tensor of another library, that library's tensor of it.
    pub fn result(&self, array: Bound<'py, PyUntypedArray>) -> PyResult<Bound<'py, PyAny>> {
        match &self.origin {
            Origin::DLPack {
                dtype,
                from_dlpack: Some(from_dlpack),
            } => {
                let tensor = Bound::new(array.py(), DLPackTensor::new(array, *dtype))?;
                from_dlpack.call1((tensor,))
            }
            _ => Ok(array.into_any()),
        }
    }
}

/// Result arrays of at least this many bytes start on a page boundary.
const ALIGN_MIN_BYTES: usize = 64 << 10;

/// The boundary large result arrays start on: a page, so that destination runs that are whole
/// cache lines apart start on lines (streaming kernels write whole lines; a destination 16 bytes
/// past a line, as a large `malloc` gives, ran XLA's tiles at 8 GB/s instead of 21 here).
const ALIGN: usize = 4096;

/// A new C-contiguous array of `descr` elements and `shape` (zeroed or not), and its data
/// address. From [`ALIGN_MIN_BYTES`] on, it is a view, starting on a page boundary, of a
/// slightly larger byte buffer (its `base`).
pub fn new_array<'py>(
    descr: &Bound<'py, PyArrayDescr>,
    shape: &[usize],
    zeroed: bool,
) -> PyResult<(Bound<'py, PyUntypedArray>, *mut u8)> {
    let py = descr.py();
    let bytes = shape
        .iter()
        .try_fold(descr.itemsize(), |n, &d| n.checked_mul(d))
        .ok_or_else(|| {
            PyValueError::new_err(format!("an array of shape {shape:?} is too large"))
        })?;
    if bytes < ALIGN_MIN_BYTES {
        return allocate(descr, shape, zeroed);
    }
    let bytes_descr = PyArrayDescr::new(py, "u1")?;
    let (raw, start) = allocate(&bytes_descr, &[bytes + ALIGN - 1], zeroed)?;
    let data = start.wrapping_add(start.align_offset(ALIGN));
    let mut dims: Vec<npyffi::npy_intp> = shape.iter().map(|&n| n as npyffi::npy_intp).collect();
    // SAFETY: `data` and the `bytes` after it lie inside `raw` (which has `ALIGN - 1` bytes to
    // spare), `dims` holds the shape, and NumPy steals the descr reference (hence the clone); a
    // null result means a Python error was set.
    let view = unsafe {
        PY_ARRAY_API.PyArray_NewFromDescr(
            py,
            npyffi::get_type_object(py, npyffi::NpyTypes::PyArray_Type),
            descr.clone().into_dtype_ptr(),
            dims.len() as std::ffi::c_int,
            dims.as_mut_ptr(),
            std::ptr::null_mut(),
            data.cast(),
            npyffi::NPY_ARRAY_CARRAY,
            std::ptr::null_mut(),
        )
    };
    // SAFETY: an owned reference or null with an error set.
    let view = unsafe { Bound::from_owned_ptr_or_err(py, view)? }.cast_into::<PyUntypedArray>()?;
    // SAFETY: `view` is a new array without a base; NumPy steals the reference to `raw`, which
    // keeps the memory alive as long as the view.
    let status =
        unsafe { PY_ARRAY_API.PyArray_SetBaseObject(py, view.as_array_ptr(), raw.into_ptr()) };
    if status != 0 {
        return Err(PyErr::fetch(py));
    }
    Ok((view, data))
}

/// A new C-contiguous array from NumPy's allocator, and its data address.
fn allocate<'py>(
    descr: &Bound<'py, PyArrayDescr>,
    shape: &[usize],
    zeroed: bool,
) -> PyResult<(Bound<'py, PyUntypedArray>, *mut u8)> {
    let py = descr.py();
    let mut dims: Vec<npyffi::npy_intp> = shape.iter().map(|&n| n as npyffi::npy_intp).collect();
    let nd = dims.len() as std::ffi::c_int;
    // SAFETY: `dims` holds `nd` extents; the descr reference is stolen by NumPy (hence the
    // clone); a null result means a Python error was set.
    let raw = unsafe {
        if zeroed {
            PY_ARRAY_API.PyArray_Zeros(py, nd, dims.as_mut_ptr(), descr.clone().into_dtype_ptr(), 0)
        } else {
            PY_ARRAY_API.PyArray_Empty(py, nd, dims.as_mut_ptr(), descr.clone().into_dtype_ptr(), 0)
        }
    };
    // SAFETY: an owned reference or null with an error set.
    let array = unsafe { Bound::from_owned_ptr_or_err(py, raw)? };
    let array = array.cast_into::<PyUntypedArray>()?;
    // SAFETY: the live array just made.
    let data = unsafe { (*array.as_array_ptr()).fields.data }.cast::<u8>();
    Ok((array, data))
}

/// NumPy's module.
pub fn numpy(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    static NUMPY: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
    Ok(NUMPY
        .get_or_try_init(py, || PyModule::import(py, "numpy").map(Bound::unbind))?
        .bind(py))
}

/// The top-level module of the library an object's type comes from (`torch` for a tensor), if
/// it is imported.
fn library_of<'py>(obj: &Bound<'py, PyAny>) -> Option<Bound<'py, PyModule>> {
    let module: String = obj.get_type().getattr("__module__").ok()?.extract().ok()?;
    let top = module.split('.').next()?;
    let modules = PyModule::import(obj.py(), "sys")
        .ok()?
        .getattr("modules")
        .ok()?;
    modules.get_item(top).ok()?.cast_into::<PyModule>().ok()
}
