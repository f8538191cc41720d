//! The DLPack protocol: reading the tensors of other libraries (torch, JAX, CuPy's host arrays)
//! through `__dlpack__`, and handing results back to them as DLPack tensors.
//!
//! The structs are DLPack's C ABI (`dlpack.h`, the unversioned `DLManagedTensor` that every
//! producer returns when the consumer asks for no version).

use std::ffi::{c_void, CStr};
use std::ptr::NonNull;

use numpy::{PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyBufferError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

/// The name of an unconsumed DLPack capsule.
const DLTENSOR: &CStr = c"dltensor";

/// DLPack's device types that are ordinary host memory: `kDLCPU` and `kDLCUDAHost` (pinned).
const HOST_DEVICES: [i32; 2] = [1, 3];

/// `kDLCPU`, the device of the tensors relayout hands out.
const CPU: i32 = 1;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct DLDevice {
    device_type: i32,
    device_id: i32,
}

/// A DLPack element type: a type code (0 int, 1 uint, 2 float, 4 bfloat, 5 complex, 6 bool),
/// bits per lane, and lanes.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DLDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DLTensor {
    data: *mut c_void,
    device: DLDevice,
    ndim: i32,
    dtype: DLDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

impl DLDataType {
    /// Bytes per element.
    pub fn itemsize(self) -> usize {
        usize::from(self.bits) / 8
    }

    /// Whether these are bfloat16 elements.
    pub fn is_bfloat16(self) -> bool {
        (self.code, self.bits) == (4, 16)
    }

    /// The NumPy dtype that holds these elements bit for bit: the same type where NumPy has it,
    /// else unsigned integers of the size (bfloat16 as uint16), or raw bytes.
    pub fn numpy_name(self) -> String {
        let bits = self.bits;
        match (self.code, bits) {
            (0, 8 | 16 | 32 | 64) => format!("int{bits}"),
            (2, 16 | 32 | 64) => format!("float{bits}"),
            (5, 64 | 128) => format!("complex{bits}"),
            (6, 8) => "bool".into(),
            (_, 8 | 16 | 32 | 64) => format!("uint{bits}"),
            _ => format!("V{}", self.itemsize()),
        }
    }
}

/// A tensor read through DLPack: where its elements are, and the capsule that keeps them alive
/// (its producer frees the tensor when the capsule goes, as it was never consumed).
pub struct Imported<'py> {
    /// The address of the element at index 0 in every dim.
    pub data: *mut u8,
    /// The shape.
    pub shape: Vec<usize>,
    /// Strides in bytes.
    pub strides: Vec<isize>,
    /// The element type.
    pub dtype: DLDataType,
    /// The capsule holding the tensor.
    pub capsule: Bound<'py, PyAny>,
}

/// Reads `obj`'s tensor through `__dlpack__`: it must live in host memory and have plain
/// (one-lane, whole-byte) elements.
pub fn import<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Imported<'py>> {
    if let Ok(device) = obj.call_method0("__dlpack_device__") {
        let (device_type, _): (i32, i32) = device.extract()?;
        if !HOST_DEVICES.contains(&device_type) {
            return Err(PyValueError::new_err(format!(
                "relayout works on host memory; this tensor is on DLPack device type {device_type} (move it to the CPU first)"
            )));
        }
    }
    let capsule = obj.call_method0("__dlpack__")?;
    let pointer = capsule
        .cast::<PyCapsule>()
        .map_err(|_| PyTypeError::new_err("__dlpack__ did not return a capsule"))?
        .pointer_checked(Some(DLTENSOR))?;
    let managed = pointer.as_ptr().cast::<DLManagedTensor>();
    // SAFETY: a capsule named "dltensor" holds a `DLManagedTensor` (the DLPack protocol), which
    // its producer keeps alive and unchanged while the capsule is unconsumed, and we hold it.
    let t = unsafe { &(*managed).dl_tensor };
    if !HOST_DEVICES.contains(&t.device.device_type) {
        return Err(PyValueError::new_err(format!(
            "relayout works on host memory; this tensor is on DLPack device type {}",
            t.device.device_type
        )));
    }
    let dtype = t.dtype;
    if dtype.lanes != 1 || dtype.bits == 0 || dtype.bits % 8 != 0 {
        return Err(PyTypeError::new_err(format!(
            "DLPack elements of {} bits in {} lanes; relayout moves whole-byte, one-lane elements",
            dtype.bits, dtype.lanes
        )));
    }
    let ndim = usize::try_from(t.ndim)
        .ok()
        .filter(|&n| n <= 64)
        .ok_or_else(|| PyValueError::new_err(format!("a DLPack tensor of {} dims", t.ndim)))?;
    let read = |p: *mut i64| -> Vec<i64> {
        if ndim == 0 || p.is_null() {
            return Vec::new();
        }
        // SAFETY: DLPack's `shape` and (non-null) `strides` hold `ndim` values each, alive while
        // the capsule is.
        unsafe { std::slice::from_raw_parts(p, ndim) }.to_vec()
    };
    let shape = read(t.shape);
    if shape.len() != ndim || shape.iter().any(|&n| n < 0) {
        return Err(PyValueError::new_err(
            "a DLPack tensor without a valid shape",
        ));
    }
    let shape: Vec<usize> = shape.into_iter().map(|n| n as usize).collect();
    let itemsize = dtype.itemsize() as isize;
    let strides: Vec<isize> = if t.strides.is_null() {
        let mut strides = vec![0isize; ndim];
        let mut step = itemsize;
        for d in (0..ndim).rev() {
            strides[d] = step;
            step = step.saturating_mul(shape[d] as isize);
        }
        strides
    } else {
        read(t.strides)
            .into_iter()
            .map(|s| (s as isize).saturating_mul(itemsize))
            .collect()
    };
    let data = t.data.cast::<u8>().wrapping_add(t.byte_offset as usize);
    Ok(Imported {
        data,
        shape,
        strides,
        dtype,
        capsule,
    })
}

/// A result handed to another library through DLPack: a C-contiguous NumPy array, described
/// with the element type of the tensor it came from (so a torch bfloat16 tensor comes back as
/// bfloat16, which NumPy lacks).
#[pyclass(frozen, module = "relayout")]
pub struct DLPackTensor {
    array: Py<PyUntypedArray>,
    dtype: DLDataType,
}

impl DLPackTensor {
    /// Wraps a C-contiguous array whose elements are `dtype`'s size.
    pub fn new(array: Bound<'_, PyUntypedArray>, dtype: DLDataType) -> DLPackTensor {
        DLPackTensor {
            array: array.unbind(),
            dtype,
        }
    }
}

/// What an exported capsule points to: the DLPack struct first, then what it points into.
#[repr(C)]
struct Export {
    managed: DLManagedTensor,
    shape: Vec<i64>,
    strides: Vec<i64>,
    _owner: Py<PyUntypedArray>,
}

/// The deleter of an exported tensor: frees the export and lets go of the array.
unsafe extern "C" fn delete_export(managed: *mut DLManagedTensor) {
    if !managed.is_null() {
        // SAFETY: exported tensors are `Export` boxes (whose first field is the managed
        // tensor), and DLPack calls the deleter once.
        drop(unsafe { Box::from_raw(managed.cast::<Export>()) });
    }
}

/// The destructor of an exported capsule: frees the tensor unless a consumer took it (and
/// renamed the capsule, promising to call the deleter itself).
unsafe extern "C" fn destroy_capsule(capsule: *mut ffi::PyObject) {
    // SAFETY: called by Python with a live capsule; `PyCapsule_IsValid` sets no error.
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, DLTENSOR.as_ptr()) == 1 {
            let managed = ffi::PyCapsule_GetPointer(capsule, DLTENSOR.as_ptr());
            delete_export(managed.cast());
        }
    }
}

#[pymethods]
impl DLPackTensor {
    /// A DLPack capsule of the tensor (the protocol's producer side).
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__<'py>(
        &self,
        py: Python<'py>,
        stream: Option<&Bound<'py, PyAny>>,
        max_version: Option<&Bound<'py, PyAny>>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = (stream, max_version, copy);
        if dl_device.is_some_and(|(t, _)| t != CPU) {
            return Err(PyBufferError::new_err(
                "relayout's results live in host memory",
            ));
        }
        let array = self.array.bind(py);
        let shape: Vec<i64> = array.shape().iter().map(|&n| n as i64).collect();
        let mut strides = vec![0i64; shape.len()];
        let mut step = 1i64;
        for d in (0..shape.len()).rev() {
            strides[d] = step;
            step = step.saturating_mul(shape[d]);
        }
        // SAFETY: `as_array_ptr` is the live array object we hold.
        let data = unsafe { (*array.as_array_ptr()).fields.data }.cast::<c_void>();
        let mut export = Box::new(Export {
            managed: DLManagedTensor {
                dl_tensor: DLTensor {
                    data,
                    device: DLDevice {
                        device_type: CPU,
                        device_id: 0,
                    },
                    ndim: shape.len() as i32,
                    dtype: self.dtype,
                    shape: std::ptr::null_mut(),
                    strides: std::ptr::null_mut(),
                    byte_offset: 0,
                },
                manager_ctx: std::ptr::null_mut(),
                deleter: Some(delete_export),
            },
            shape,
            strides,
            _owner: self.array.clone_ref(py),
        });
        export.managed.dl_tensor.shape = export.shape.as_mut_ptr();
        export.managed.dl_tensor.strides = export.strides.as_mut_ptr();
        let pointer = NonNull::from(Box::leak(export)).cast::<c_void>();
        // SAFETY: the pointer is a leaked `Export`, freed by `destroy_capsule` or by the
        // consumer through its deleter, each of which may run on any thread.
        let capsule = unsafe {
            PyCapsule::new_with_pointer_and_destructor(py, pointer, DLTENSOR, Some(destroy_capsule))
        };
        if capsule.is_err() {
            // SAFETY: no capsule owns the export, so free it here.
            unsafe { delete_export(pointer.as_ptr().cast()) };
        }
        capsule
    }

    /// The tensor's device: the CPU.
    fn __dlpack_device__(&self) -> (i32, i32) {
        (CPU, 0)
    }
}
