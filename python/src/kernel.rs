//! `relayout.compile` and `relayout.Kernel`, and running kernels with the GIL released.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Mutex, OnceLock};

use pyo3::prelude::*;
use relayout::plan::{LargeWrites, Tactics};
use relayout::{compile_relayout_with, DType, Error, Layout, Options, Relayout};

use crate::dtype;
use crate::errors::OrPy;
use crate::layout::PyLayout;
use crate::tensor::Strided;

/// Most kernels each cache of the bindings keeps (they are small handles; the machine code
/// lives in relayout's own cache).
const CACHE_ENTRIES: usize = 1024;

/// A cache of kernel handles (and what goes with them) by key: it keeps a tuning kernel's
/// measurements across calls, and saves building layouts and looking them up in relayout's
/// cache.
pub struct Cache<K, V>(Mutex<Option<HashMap<K, V>>>);

impl<K: Hash + Eq + Sync, V: Clone + Send> Cache<K, V> {
    /// An empty cache.
    pub const fn new() -> Cache<K, V> {
        Cache(Mutex::new(None))
    }

    /// The value for `key`, made by `make` (with the GIL released) on a miss.
    pub fn get(
        &self,
        py: Python<'_>,
        key: K,
        make: impl FnOnce(&K) -> Result<V, Error> + Send,
    ) -> PyResult<V> {
        if let Some(v) = self.lock().as_ref().and_then(|m| m.get(&key)) {
            return Ok(v.clone());
        }
        let value = py.detach(|| make(&key)).or_py()?;
        let mut map = self.lock();
        let map = map.get_or_insert_with(HashMap::new);
        if map.len() >= CACHE_ENTRIES {
            map.clear();
        }
        map.insert(key, value.clone());
        Ok(value)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<HashMap<K, V>>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Kernels of [`cached`], by layout pair and options.
static KERNELS: Cache<(Layout, Layout, Options), Relayout> = Cache::new();

/// The kernel from `src` to `dst` with `options`, from the bindings' cache.
pub fn cached(py: Python<'_>, src: &Layout, dst: &Layout, options: Options) -> PyResult<Relayout> {
    let key = (src.clone(), dst.clone(), options);
    KERNELS.get(py, key, |(src, dst, options)| {
        compile_relayout_with(src, dst, options.clone())
    })
}

/// New result arrays of at least this many bytes come from pages the system has just zeroed:
/// glibc's `malloc` maps allocations above its mmap threshold (at most 32 MiB) afresh each time,
/// where smaller ones reuse freed memory.
pub const FRESH_PAGES_MIN_BYTES: usize = 32 << 20;

/// Whether a new result array of `bytes` comes from pages the system has just zeroed.
pub fn fresh_pages(bytes: usize) -> bool {
    bytes >= FRESH_PAGES_MIN_BYTES
}

/// The options of a relayout into a destination: elements of `elem_size` bytes, up to
/// `threads` threads, tuned or not. A destination on `fresh` pages (a large new array) gets
/// ordinary stores where the default would stream (copies, zips and unzips of large
/// destinations) unless tuning measures which is faster: zeroing the pages left their lines in
/// the cache, where streaming stores cost more than ordinary ones (odd/even strips of 64 MiB
/// ran at 3.4–4.5 GB/s streamed and 6.4–6.8 with ordinary stores here), while streaming wins
/// on memory that is not in the cache.
pub fn options(elem_size: usize, threads: usize, tune: bool, fresh: bool) -> Options {
    let options = Options::new()
        .elem_size(elem_size)
        .threads(threads)
        .tune(tune);
    for_fresh(options, fresh && !tune)
}

/// `options`, with ordinary stores for copies, zips and unzips when `fresh` (see [`options`]).
fn for_fresh(options: Options, fresh: bool) -> Options {
    if fresh {
        options.tactics(Tactics {
            large_writes: LargeWrites::Stored,
            ..Tactics::default()
        })
    } else {
        options
    }
}

/// A destination's padding: the element bits to write to every slot first.
#[derive(Clone, Copy)]
pub struct Pad {
    /// The element's bits (low bytes).
    pub bits: u64,
}

/// Runs `kernel` from `src` to `dst` with the GIL released, after writing `pad` to the
/// destination's `dst_len` slots.
///
/// # Safety
/// `src` must be valid for reads of the plan's `src_len` elements and `dst` for writes of its
/// `dst_len` elements (from the lowest address each layout touches), and the two ranges must
/// not overlap; nothing else may write them while the kernel runs.
pub unsafe fn run(
    py: Python<'_>,
    kernel: &Relayout,
    src: *const u8,
    dst: *mut u8,
    pad: Option<Pad>,
) {
    let (src, dst) = (src as usize, dst as usize);
    py.detach(|| {
        let plan = kernel.plan();
        if let Some(pad) = pad {
            // SAFETY: the caller guarantees `dst` holds `dst_len` elements.
            unsafe { fill(dst as *mut u8, plan.dst_len(), plan.elem_size(), pad.bits) };
        }
        // SAFETY: forwarded from the caller.
        unsafe { kernel.run_raw(src as *const u8, dst as *mut u8) };
    });
}

/// Writes the element with these bits to `n` slots of `size` bytes from `dst`.
///
/// # Safety
/// `dst` must be valid for writes of `n * size` bytes.
unsafe fn fill(dst: *mut u8, n: usize, size: usize, bits: u64) {
    let bytes = bits.to_le_bytes();
    for i in 0..n {
        // SAFETY: slot `i` is inside the `n * size` bytes the caller vouches for.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst.add(i * size), size) };
    }
}

/// Fails with [`Error::Overlap`] when the byte ranges `[a, a + a_len)` and `[b, b + b_len)`
/// share a byte.
pub fn check_overlap(a: *const u8, a_len: usize, b: *const u8, b_len: usize) -> PyResult<()> {
    let (a, b) = (a as usize, b as usize);
    if a < b.saturating_add(b_len) && b < a.saturating_add(a_len) {
        return Err(Error::Overlap).or_py();
    }
    Ok(())
}

/// The first element of `out`, a C-contiguous buffer of `elem_size`-byte elements that must hold
/// `dst_len` of them and not overlap the source's `src_bytes` bytes at `src`: a destination a
/// caller handed in.
pub fn out_buffer(
    out: &Bound<'_, PyAny>,
    elem_size: usize,
    dst_len: usize,
    src: *const u8,
    src_bytes: usize,
) -> PyResult<*mut u8> {
    let target = Strided::new(out, "out")?;
    let (dst, m) = target.flat("out", elem_size, true)?;
    if m < dst_len {
        return Err(Error::BufferTooShort {
            which: "destination",
            needed: dst_len,
            got: m,
        })
        .or_py();
    }
    check_overlap(src, src_bytes, dst, dst_len * elem_size)?;
    Ok(dst)
}

/// Whether a destination layout has slots that hold no element (which a new result array
/// zeroes, unless a pad value fills them).
pub fn has_padding(dst: &Layout) -> bool {
    dst.cosize() > dst.size()
}

/// A compiled relayout from one layout to another, for elements of one size.
///
/// ``kernel(a)`` returns a new 1-D array of ``dst.cosize`` elements (padding slots zero, or
/// the pad value); ``kernel(a, out=b)`` writes into ``b`` and returns it. ``a`` and ``b`` are
/// C-contiguous buffers (NumPy arrays, anything with the buffer protocol, DLPack tensors such as
/// torch's) of the kernel's element size, holding at least ``src.cosize`` and ``dst.cosize``
/// elements from the lowest offset of their layouts. The result has ``a``'s element type, and
/// is a tensor of ``a``'s library for a DLPack tensor. The GIL is released while the kernel
/// runs.
#[pyclass(name = "Kernel", module = "relayout", frozen)]
pub struct Kernel {
    relayout: Relayout,
    /// The kernel for large new result arrays, compiled on first use (see [`options`]).
    fresh: OnceLock<Relayout>,
    options: Options,
    tuned: bool,
    src: PyLayout,
    dst: PyLayout,
    dtype: DType,
    pad: Option<Pad>,
}

impl Kernel {
    /// The kernel that writes a new result array: unless `same`, the same relayout with
    /// ordinary stores where the default would stream (see [`options`]).
    fn for_new_array(&self, py: Python<'_>, same: bool) -> PyResult<&Relayout> {
        if same {
            return Ok(&self.relayout);
        }
        if let Some(k) = self.fresh.get() {
            return Ok(k);
        }
        let options = for_fresh(self.options.clone(), true);
        let (src, dst) = (&self.src.layout, &self.dst.layout);
        let k = py
            .detach(|| compile_relayout_with(src, dst, options))
            .or_py()?;
        Ok(self.fresh.get_or_init(|| k))
    }
}

#[pymethods]
impl Kernel {
    #[pyo3(signature = (a, out=None))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        a: &Bound<'py, PyAny>,
        out: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let plan = self.relayout.plan();
        let (size, src_len, dst_len) = (plan.elem_size(), plan.src_len(), plan.dst_len());
        let source = Strided::new(a, "the source")?;
        let (src, n) = source.flat("the source", size, false)?;
        if n < src_len {
            return Err(Error::BufferTooShort {
                which: "source",
                needed: src_len,
                got: n,
            })
            .or_py();
        }
        match out {
            None => {
                let zeroed = self.pad.is_none() && has_padding(&self.dst.layout);
                let (array, dst) = source.new_like(&[dst_len], zeroed)?;
                let fresh = fresh_pages(dst_len * size);
                let kernel = self.for_new_array(py, self.tuned || !fresh)?;
                // SAFETY: `src` holds `src_len` elements (checked), `dst` is a new array of
                // `dst_len`, and both live until we return.
                unsafe { run(py, kernel, src, dst, self.pad) };
                source.result(array)
            }
            Some(out) => {
                let dst = out_buffer(out, size, dst_len, src, src_len * size)?;
                // SAFETY: both lengths were checked, the ranges do not overlap, and the
                // objects live until we return.
                unsafe { run(py, &self.relayout, src, dst, self.pad) };
                Ok(out.clone())
            }
        }
    }

    /// The loop nest the kernel runs, as text.
    #[getter]
    fn plan(&self) -> String {
        self.relayout.plan().to_string()
    }

    /// The kernel's Cranelift IR, as text.
    fn clif(&self) -> PyResult<String> {
        self.relayout.clif().map(str::to_string).or_py()
    }

    /// The kernel's machine code, as assembly text.
    fn asm(&self) -> PyResult<String> {
        self.relayout.asm().map(str::to_string).or_py()
    }

    /// The source layout.
    #[getter]
    fn src(&self) -> PyLayout {
        self.src.clone()
    }

    /// The destination layout.
    #[getter]
    fn dst(&self) -> PyLayout {
        self.dst.clone()
    }

    /// The element type it was compiled for (relayout's name, such as ``"f32"``).
    #[getter]
    fn dtype(&self) -> &'static str {
        self.dtype.name()
    }

    /// The threads a run uses (at most ``threads=``: one per MiB of destination).
    #[getter]
    fn threads(&self) -> usize {
        self.relayout.threads()
    }

    fn __repr__(&self) -> String {
        format!(
            "<relayout.Kernel {} -> {}, {}>",
            self.src.layout,
            self.dst.layout,
            self.dtype.name()
        )
    }
}

/// Compiles the relayout from ``src`` to ``dst`` (``Layout`` objects or layout text).
///
/// ``dtype`` is the element type (``"float32"``, ``"bf16"``, ``np.uint8``, ...; only its size
/// matters to the kernel); by default the type the layouts name (XLA's), else float32.
/// ``threads`` splits large runs between threads, ``pad_value`` is written to the destination's
/// padding slots, ``tune`` measures blockings on the first runs of large relayouts and keeps the
/// fastest. Kernels are cached: compiling the same pair again is quick.
#[pyfunction]
#[pyo3(signature = (src, dst, dtype=None, threads=1, pad_value=None, tune=false))]
pub fn compile(
    py: Python<'_>,
    src: &Bound<'_, PyAny>,
    dst: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    threads: usize,
    pad_value: Option<&Bound<'_, PyAny>>,
    tune: bool,
) -> PyResult<Kernel> {
    let src = PyLayout::from_arg(src)?;
    let dst = PyLayout::from_arg(dst)?;
    let given = dtype.map(dtype::parse).transpose()?;
    let dtype = agree([given, src.dtype, dst.dtype]).or_py()?;
    let mut options = Options::new().dtype(dtype).threads(threads).tune(tune);
    let pad = pad_value
        .map(|v| dtype::pad_bits(dtype, v))
        .transpose()?
        .map(|bits| Pad { bits });
    if let Some(pad) = pad {
        options = options.pad_bits(pad.bits);
    }
    let (s, d) = (&src.layout, &dst.layout);
    let relayout = py
        .detach(|| compile_relayout_with(s, d, options.clone()))
        .or_py()?;
    Ok(Kernel {
        relayout,
        fresh: OnceLock::new(),
        options,
        tuned: tune,
        src,
        dst,
        dtype,
        pad,
    })
}

/// The element type named by `dtype=` and the layouts, which must agree; float32 if none.
fn agree(named: [Option<DType>; 3]) -> Result<DType, Error> {
    let named: Vec<DType> = named.into_iter().flatten().collect();
    match named.split_first() {
        None => Ok(DType::F32),
        Some((first, rest)) => match rest.iter().find(|t| *t != first) {
            Some(other) => Err(Error::ElementType(format!(
                "conflicting element types {first} and {other} (from dtype= and the layouts)"
            ))),
            None => Ok(*first),
        },
    }
}
