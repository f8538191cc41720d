//! The array functions: `transpose`, `to_layout` and `from_layout`.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use relayout::{compile_relayout_with, Error, Layout, Relayout};

use crate::dtype;
use crate::errors::OrPy;
use crate::kernel::{
    cached, check_overlap, fresh_pages, has_padding, options, out_buffer, run, Cache, Pad,
};
use crate::layout::PyLayout;
use crate::tensor::Strided;

/// What a transpose kernel depends on: the input's shape, byte strides and element size, the
/// axes, and the options.
#[derive(Clone, PartialEq, Eq, Hash)]
struct TransposeKey {
    shape: Vec<usize>,
    strides: Vec<isize>,
    itemsize: usize,
    axes: Vec<usize>,
    threads: usize,
    tune: bool,
    fresh: bool,
}

/// A compiled transpose: the kernel, the bytes of its element unit, the offset (in units) of
/// the input's lowest element from its first, and the bytes from there to its highest.
#[derive(Clone)]
struct Transposer {
    kernel: Relayout,
    unit: usize,
    start: i64,
    src_bytes: usize,
}

/// Transposes, by input geometry and axes.
static TRANSPOSES: Cache<TransposeKey, Transposer> = Cache::new();

/// ``np.ascontiguousarray(np.transpose(a, axes))`` by a compiled kernel: a new C-contiguous array
/// of ``a``'s element type whose axis ``i`` is ``a``'s axis ``axes[i]`` (by default the axes
/// reversed; negative axes count from the end). With ``out``, a writable C-contiguous array of
/// that shape and element size, writes there instead and returns ``out``.
///
/// ``a`` is any strided array or view (slices with steps, negative strides, broadcast views) of
/// any element type, from NumPy, the buffer protocol or DLPack; a torch tensor gives a torch
/// tensor (through DLPack), equal to ``t.permute(axes).contiguous()``. ``threads`` splits large
/// transposes between threads; ``tune`` measures blockings on the first calls of a large
/// transpose and keeps the fastest. Kernels are cached by shape, strides, element size and
/// axes; the GIL is released while one runs.
#[pyfunction]
#[pyo3(signature = (a, axes=None, *, out=None, threads=1, tune=false))]
pub fn transpose<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    axes: Option<&Bound<'py, PyAny>>,
    out: Option<&Bound<'py, PyAny>>,
    threads: usize,
    tune: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let source = Strided::new(a, "a")?;
    let axes = permutation(axes, source.shape.len())?;
    let out_shape: Vec<usize> = axes.iter().map(|&d| source.shape[d]).collect();
    let (result, dst) = match out {
        None => {
            let (array, dst) = source.new_like(&out_shape, false)?;
            (source.result(array)?, dst)
        }
        Some(out) => (out.clone(), transpose_target(&source, out, &out_shape)?),
    };
    if source.len() == 0 {
        return Ok(result);
    }
    let key = TransposeKey {
        shape: source.shape.clone(),
        strides: source.strides.clone(),
        itemsize: source.itemsize,
        axes,
        threads,
        tune,
        fresh: out.is_none() && fresh_pages(source.len() * source.itemsize),
    };
    let t = TRANSPOSES.get(py, key, transposer)?;
    let src = source
        .data
        .wrapping_offset(t.start as isize * t.unit as isize);
    if out.is_some() {
        check_overlap(src, t.src_bytes, dst, source.len() * source.itemsize)?;
    }
    // SAFETY: `src` is the lowest element of `a` and the kernel reads `a`'s elements at their
    // offsets from it; `dst` holds every element of the result (a new array, or `out`, checked
    // to be C-contiguous of the result's shape and element size, apart from `a`), which the
    // row-major destination layout covers exactly; both live until we return.
    unsafe { run(py, &t.kernel, src, dst, None) };
    Ok(result)
}

/// The data address of `out` for a transpose of `source` into `shape`, after checking that it
/// is a writable C-contiguous array of that shape and of `source`'s element size.
fn transpose_target(
    source: &Strided<'_>,
    out: &Bound<'_, PyAny>,
    shape: &[usize],
) -> PyResult<*mut u8> {
    let target = Strided::new(out, "out")?;
    let (dst, _) = target.flat("out", source.itemsize, true)?;
    if target.shape != shape {
        return Err(PyValueError::new_err(format!(
            "out has shape {:?}, the transpose {shape:?}",
            target.shape
        )));
    }
    Ok(dst)
}

/// Compiles a transpose, in units of the largest of 8, 4, 2 and 1 bytes that divides the element
/// size and every stride: an element of several units (complex128, a 3-byte string) gets a last
/// axis of its own, so that any element size and any strides move.
fn transposer(key: &TransposeKey) -> Result<Transposer, Error> {
    let unit = [8usize, 4, 2, 1]
        .into_iter()
        .find(|&u| {
            key.itemsize.is_multiple_of(u) && key.strides.iter().all(|s| s % u as isize == 0)
        })
        .unwrap_or(1);
    let per_item = key.itemsize / unit;
    let mut shape = key.shape.clone();
    let mut strides: Vec<i64> = key
        .strides
        .iter()
        .map(|&s| (s / unit as isize) as i64)
        .collect();
    let mut axes = key.axes.clone();
    if per_item > 1 || shape.is_empty() {
        axes.push(shape.len());
        shape.push(per_item);
        strides.push(1);
    }
    let mut dst_strides = vec![0i64; shape.len()];
    let mut step = 1i64;
    for &d in axes.iter().rev() {
        dst_strides[d] = step;
        step = step.saturating_mul(shape[d] as i64);
    }
    let src = Layout::from_strides(&shape, &strides)?;
    let dst = Layout::from_strides(&shape, &dst_strides)?;
    let options = options(unit, key.threads, key.tune, key.fresh);
    Ok(Transposer {
        kernel: compile_relayout_with(&src, &dst, options)?,
        unit,
        start: src.buffer_start(),
        src_bytes: src.cosize() * unit,
    })
}

/// The axes of a transpose of a rank-`rank` array: `None` reverses them; otherwise a
/// permutation, where negative axes count from the end.
fn permutation(axes: Option<&Bound<'_, PyAny>>, rank: usize) -> PyResult<Vec<usize>> {
    let Some(axes) = axes.filter(|a| !a.is_none()) else {
        return Ok((0..rank).rev().collect());
    };
    let given: Vec<i64> = axes
        .extract()
        .map_err(|_| PyTypeError::new_err("axes must be a sequence of integers"))?;
    let bad = || {
        PyValueError::new_err(format!(
            "axes {given:?} are not a permutation of the {rank} axes of the array"
        ))
    };
    if given.len() != rank {
        return Err(bad());
    }
    let mut seen = vec![false; rank];
    let mut out = Vec::with_capacity(rank);
    for &a in &given {
        let d = if a < 0 { a + rank as i64 } else { a };
        let d = usize::try_from(d)
            .ok()
            .filter(|&d| d < rank)
            .ok_or_else(bad)?;
        if std::mem::replace(&mut seen[d], true) {
            return Err(bad());
        }
        out.push(d);
    }
    Ok(out)
}

/// Moves any strided array ``a`` (NumPy, buffer protocol, DLPack) into the buffer of the layout
/// ``dst`` (a ``Layout`` or layout text of ``a``'s shape): a new 1-D array of ``dst.cosize``
/// elements of ``a``'s type (padding slots zero, or ``pad_value``), or ``out``, a C-contiguous
/// buffer of at least that many, which is returned.
#[pyfunction]
#[pyo3(signature = (a, dst, *, threads=1, pad_value=None, out=None, tune=false))]
pub fn to_layout<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    dst: &Bound<'py, PyAny>,
    threads: usize,
    pad_value: Option<&Bound<'py, PyAny>>,
    out: Option<&Bound<'py, PyAny>>,
    tune: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let source = Strided::new(a, "a")?;
    let dst = PyLayout::from_arg(dst)?;
    let size = source.itemsize;
    check_named_size(&dst, size, "a")?;
    let (src_layout, src) = source.layout("a")?;
    let fresh = out.is_none() && fresh_pages(dst.layout.cosize().saturating_mul(size));
    let mut options = options(size, threads, tune, fresh);
    let pad = match pad_value {
        Some(v) => {
            let t = dtype::of_strided(&source).or_py()?;
            let bits = dtype::pad_bits(t, v)?;
            options = options.pad_bits(bits);
            Some(Pad { bits })
        }
        None => None,
    };
    let kernel = cached(py, &src_layout, &dst.layout, options)?;
    let plan = kernel.plan();
    let (src_len, dst_len) = (plan.src_len(), plan.dst_len());
    match out {
        None => {
            let zeroed = pad.is_none() && has_padding(&dst.layout);
            let (array, to) = source.new_like(&[dst_len], zeroed)?;
            // SAFETY: `src` is the lowest element of `a`, whose layout the kernel reads; `to`
            // is a new array of `dst_len` elements; both live until we return.
            unsafe { run(py, &kernel, src, to, pad) };
            source.result(array)
        }
        Some(out) => {
            let to = out_buffer(out, size, dst_len, src, src_len * size)?;
            // SAFETY: as above, with `out` checked to hold `dst_len` elements and not to
            // overlap `a`'s elements.
            unsafe { run(py, &kernel, src, to, pad) };
            Ok(out.clone())
        }
    }
}

/// Moves the buffer ``buf`` of the layout ``src`` (a C-contiguous buffer of at least
/// ``src.cosize`` elements) into a new C-contiguous array of ``src``'s shape, reshaped to
/// ``shape`` if given, with ``buf``'s element type; or into ``out``, any writable strided array
/// of ``src``'s shape (a view with steps or negative strides included), which is returned.
#[pyfunction]
#[pyo3(signature = (buf, src, shape=None, *, threads=1, out=None, tune=false))]
pub fn from_layout<'py>(
    py: Python<'py>,
    buf: &Bound<'py, PyAny>,
    src: &Bound<'py, PyAny>,
    shape: Option<&Bound<'py, PyAny>>,
    threads: usize,
    out: Option<&Bound<'py, PyAny>>,
    tune: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let source = Strided::new(buf, "buf")?;
    let src = PyLayout::from_arg(src)?;
    let size = source.itemsize;
    check_named_size(&src, size, "buf")?;
    let (from, n) = source.flat("buf", size, false)?;
    let fresh = out.is_none() && fresh_pages(src.layout.size().saturating_mul(size));
    let options = options(size, threads, tune, fresh);
    let needed = src.layout.cosize();
    if n < needed {
        return Err(Error::BufferTooShort {
            which: "source",
            needed,
            got: n,
        })
        .or_py();
    }
    let shape = shape.filter(|s| !s.is_none());
    match out {
        None => {
            let dst_layout = Layout::row_major(src.layout.shape()).or_py()?;
            let kernel = cached(py, &src.layout, &dst_layout, options)?;
            let (array, to) = source.new_like(src.layout.shape(), false)?;
            // SAFETY: `buf` holds the `src_len` elements the kernel reads (checked above);
            // `to` is a new array of every element, which the row-major layout covers exactly.
            unsafe { run(py, &kernel, from, to, None) };
            let array = match shape {
                Some(shape) => array.call_method1("reshape", (shape,))?.cast_into()?,
                None => array,
            };
            source.result(array)
        }
        Some(out) => {
            if shape.is_some() {
                return Err(PyValueError::new_err(
                    "give shape= or out=, not both (out= has its own shape)",
                ));
            }
            let target = Strided::new(out, "out")?;
            if !target.writable {
                return Err(PyValueError::new_err("out is read-only"));
            }
            if target.itemsize != size {
                return Err(Error::ElementType(format!(
                    "buf has {size}-byte elements, out has {}-byte elements",
                    target.itemsize
                )))
                .or_py();
            }
            let (dst_layout, to) = target.layout("out")?;
            let kernel = cached(py, &src.layout, &dst_layout, options)?;
            let plan = kernel.plan();
            check_overlap(from, plan.src_len() * size, to, plan.dst_len() * size)?;
            // SAFETY: `buf` holds the elements the kernel reads (checked above); `to` is the
            // lowest element of `out`, whose layout (injective: the compile checked it) the
            // kernel writes; the two do not overlap, and both live until we return.
            unsafe { run(py, &kernel, from, to, None) };
            Ok(out.clone())
        }
    }
}

/// Fails when the layout text names an element type (XLA's) of another size than the array's.
fn check_named_size(layout: &PyLayout, itemsize: usize, what: &str) -> PyResult<()> {
    match layout.dtype {
        Some(t) if t.size() != itemsize => Err(Error::ElementType(format!(
            "the layout names {t} elements, {what} has {itemsize}-byte elements"
        )))
        .or_py(),
        _ => Ok(()),
    }
}
