//! The public handle: compile a relayout, run it on buffers, look inside.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::convert::{Conversion, PerIndex};
use crate::dtype::DType;
use crate::engine::offsets::OffsetKernels;
use crate::engine::{Candidate, Engine, Request, TuneKey};
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::packing;
use crate::plan::{BlockWrite, Blocking, LineOffsets, Packed, Plan, Tactics, Tiling, Walk};
use crate::target::Target;
use crate::tune::{Margin, Shares, Step, Tuner};

/// Destinations from this many bytes are tuned ([`Options::tune`]) even where they do not stream:
/// 1 MiB ([`Blocking::BEYOND_L2_BYTES`]), from where they outgrow the L2 cache, and how they are
/// best blocked and ordered depends on the last-level cache. On a 2-core Intel Xeon VM (family
/// 6, model 167), whose 24.5 MiB tensors stay in its cache and are written with ordinary
/// stores, NHWC → NCHW tuned among the stored blockings ran at 9.8–10.4 GB/s and with the
/// default alone at 8.9–9.1. On a 2-core AMD EPYC (Zen 4) VM, tuning from 1 MiB rather than 8
/// took 1001 × 1999 f32 (7.6 MiB, in its 32 MiB cache) from 0.45–0.46 of memcpy to 0.52–0.53
/// and left 700 × 2100 f32, 1501 × 1499 u16, 1024² f32 and 1024² u16 as fast as before
/// (`relayout bench`, tuned, two alternating runs of each build), tuning in 24–92 ms; NCHW →
/// NHWC of 8 images of 56² with 64 f32 channels (6.1 MiB) tuned in 16–18 ms and ran as fast as
/// untuned, while a 4 MiB copy and a 4 MiB odd/even zip, which have no distinct alternatives
/// there, stayed untuned (their first run ready in under a millisecond either way).
const TUNE_MIN_BYTES: usize = Blocking::BEYOND_L2_BYTES;

/// A plain element type a kernel can move: the primitive integers and floats of 1, 2, 4 and 8
/// bytes. (Use `u16` for `f16`/`bf16` data: a relayout only moves bits.)
pub trait Element: Copy + Send + Sync + 'static + private::Sealed {
    /// The element with the given bits (the low `size_of::<Self>()` bytes of `bits`).
    fn from_bits(bits: u64) -> Self;
    /// The element's bits, zero-extended.
    fn to_bits(self) -> u64;
}

mod private {
    pub trait Sealed {}
}

macro_rules! element {
    ($($t:ty => $bits:ty),*) => {$(
        impl private::Sealed for $t {}
        impl Element for $t {
            fn from_bits(bits: u64) -> Self {
                <$t>::from_ne_bytes((bits as $bits).to_ne_bytes())
            }
            fn to_bits(self) -> u64 {
                <$bits>::from_ne_bytes(self.to_ne_bytes()) as u64
            }
        }
    )*};
}
element!(u8 => u8, i8 => u8, u16 => u16, i16 => u16, u32 => u32, i32 => u32, f32 => u32,
         u64 => u64, i64 => u64, f64 => u64);

/// How to compile and run a relayout: element size, padding value, threads, tuning, and the
/// machine to plan for.
///
/// ```
/// use relayout::{compile_relayout_with, DType, Layout, Options};
///
/// let src = Layout::row_major(&[3, 5])?;
/// let dst = Layout::parse("xla:f32[3,5]{1,0:T(2,2)}")?;
/// let r = compile_relayout_with(&src, &dst, Options::new().pad_value(-1.0f32))?;
/// let a: Vec<f32> = (0..15).map(|i| i as f32).collect();
/// let mut b = vec![0.0f32; dst.cosize()];
/// r.run(&a, &mut b)?;
/// assert_eq!(b[17], 13.0); // (2, 3) lives at offset 17
/// assert_eq!(b[9], -1.0); // a padding slot
/// # Ok::<(), relayout::Error>(())
/// ```
///
/// `Options` is `Clone` rather than `Copy` because a per-index map ([`Options::per_index`])
/// holds its lists; cloning shares them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Options {
    elem_size: usize,
    /// The element type named with [`Options::dtype`], checked when compiling.
    dtype: Option<DType>,
    /// The conversion named with [`Options::convert`], unless it changes nothing.
    conversion: Option<Conversion>,
    /// The per-index affine map named with [`Options::per_index`].
    per_index: Option<PerIndex>,
    /// The pad element's bits (16-byte elements use all 128).
    pad_bits: Option<u128>,
    /// Bytes of the pad value given with [`Options::pad_value`], checked against a converting
    /// relayout's destination elements when compiling.
    pad_size: Option<usize>,
    threads: usize,
    min_bytes_per_thread: usize,
    tune: bool,
    tune_budget: Duration,
    cache: bool,
    tactics: Option<Tactics>,
    target: Target,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            elem_size: 4,
            dtype: None,
            conversion: None,
            per_index: None,
            pad_bits: None,
            pad_size: None,
            threads: 1,
            min_bytes_per_thread: DEFAULT_MIN_BYTES_PER_THREAD,
            tune: false,
            tune_budget: Options::DEFAULT_TUNE_BUDGET,
            cache: true,
            tactics: None,
            target: Target::host(),
        }
    }
}

impl Options {
    /// 4-byte elements, padding left untouched, one thread, no tuning, the kernel cache on.
    pub fn new() -> Options {
        Options::default()
    }

    /// Elements of this type: of its size, packed several to a byte for the sub-byte types
    /// ([`DType::packed`]; [`Relayout::run`] then takes the packed bytes), or, for `c128`, as
    /// two 8-byte halves ([`Relayout::run`] on `f64`/`u64` slices twice as long).
    ///
    /// ```
    /// use relayout::{compile_relayout_with, DType, Layout, Options};
    ///
    /// let l = Layout::row_major(&[4, 4])?;
    /// let r = compile_relayout_with(&l, &l, Options::new().dtype(DType::I4))?;
    /// assert_eq!(r.plan().dst_bytes(), 8);
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn dtype(self, dtype: DType) -> Options {
        Options {
            elem_size: dtype.size(),
            dtype: Some(dtype),
            conversion: None,
            ..self
        }
    }

    /// Convert every element on the way, in the kernel itself (one pass over memory): the
    /// source elements are of `conversion`'s source type, the destination's of its target type,
    /// and [`Relayout::run`] takes slices of each. Replaces [`Options::dtype`] and
    /// [`Options::elem_size`]; a pad value ([`Options::pad_value`]) is then a destination
    /// element. The rules are in [`Conversion`]'s module docs.
    ///
    /// ```
    /// use relayout::{compile_relayout_with, Conversion, DType, Layout, Options};
    ///
    /// let src = Layout::row_major(&[2, 2])?;
    /// let dst = Layout::col_major(&[2, 2])?;
    /// let to_f64 = Conversion::new(DType::F32, DType::F64)?;
    /// let r = compile_relayout_with(&src, &dst, Options::new().convert(to_f64))?;
    /// let mut out = [0.0f64; 4];
    /// r.run(&[1.5f32, 2.0, -0.0, 1e-40], &mut out)?;
    /// assert_eq!(out, [1.5, -0.0, 2.0, 1e-40f32 as f64]);
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn convert(self, conversion: Conversion) -> Options {
        Options {
            elem_size: conversion.from_type().size(),
            dtype: Some(conversion.from_type()),
            conversion: (!conversion.is_identity()).then_some(conversion),
            ..self
        }
    }

    /// Apply `map`, a scale and a shift per index of one logical dim, on the way (see
    /// [`PerIndex`]), in the kernel itself: one pass over memory, as for a per-tensor map. The
    /// element types are those of [`Options::convert`] (or [`Options::dtype`], for a map that
    /// keeps the type). Compiling fails, with [`Error::Conversion`], when the dim is out of
    /// range, the lists' length is not the dim's extent, a type has no numeric value, or the
    /// conversion has a per-tensor map too.
    ///
    /// ```
    /// use relayout::{compile_relayout_with, Conversion, DType, Error, Layout, Options, PerIndex};
    ///
    /// let l = Layout::row_major(&[2, 2])?;
    /// let q = Conversion::new(DType::F32, DType::U8)?;
    /// let columns = PerIndex::new(1, &[1.0, 2.0], &[0.0, 10.0])?;
    /// let r = compile_relayout_with(&l, &l, Options::new().convert(q).per_index(columns))?;
    /// let mut out = [0u8; 4];
    /// r.run(&[1.0f32, 1.0, 3.0, 3.0], &mut out)?;
    /// assert_eq!(out, [1, 12, 3, 16]);
    /// let wrong = PerIndex::new(1, &[1.0, 2.0, 3.0], &[])?;
    /// let e = compile_relayout_with(&l, &l, Options::new().convert(q).per_index(wrong));
    /// assert!(matches!(e, Err(Error::Conversion(_))));
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn per_index(self, map: PerIndex) -> Options {
        Options {
            per_index: Some(map),
            ..self
        }
    }

    /// Elements of `bytes` bytes (1, 2, 4 or 8; others fail when compiling).
    pub fn elem_size(self, bytes: usize) -> Options {
        Options {
            elem_size: bytes,
            dtype: None,
            conversion: None,
            ..self
        }
    }

    /// Write `value` to every padding slot of the destination (slots that hold no element);
    /// for `c128` elements, an 8-byte `value` is the real part (the imaginary part is 0).
    /// Also sets the element size to `T`'s, unless the elements are `c128` or the relayout converts
    /// ([`Options::convert`]): then `value` is a destination element, and compiling fails
    /// unless `T` is of the destination type's size.
    pub fn pad_value<T: Element>(self, value: T) -> Options {
        let elem_size = std::mem::size_of::<T>();
        if self.conversion.is_some() {
            return Options {
                pad_bits: Some(value.to_bits() as u128),
                pad_size: Some(elem_size),
                ..self
            };
        }
        if self.dtype == Some(DType::C128) && elem_size == WIDE_ELEMENT / 2 {
            // A real pad value for 16-byte complex elements: its imaginary part is 0.
            return self.pad_bits(value.to_bits());
        }
        Options {
            pad_size: Some(elem_size),
            elem_size,
            dtype: self.dtype.filter(|d| d.size() == elem_size),
            pad_bits: Some(value.to_bits() as u128),
            ..self
        }
    }

    /// Write the element with these bits (low bytes) to every padding slot of the destination.
    pub fn pad_bits(self, bits: u64) -> Options {
        self.pad_bits_wide(bits as u128)
    }

    /// [`Options::pad_bits`] for elements of up to 16 bytes (`c128`: the real part's bits
    /// low, the imaginary part's high).
    ///
    /// ```
    /// use relayout::{compile_relayout_with, DType, Layout, Options};
    ///
    /// let src = Layout::row_major(&[2])?;
    /// let dst = Layout::from_strides(&[2], &[2])?; // slots 0 and 2; slot 1 is padding
    /// let pad = 1.5f64.to_bits() as u128 | ((-2.0f64).to_bits() as u128) << 64;
    /// let options = Options::new().dtype(DType::C128).pad_bits_wide(pad);
    /// let r = compile_relayout_with(&src, &dst, options)?;
    /// let mut out = [0.0f64; 6]; // three c128 slots, as halves
    /// r.run(&[1.0f64, 2.0, 3.0, 4.0], &mut out)?; // 1+2i, 3+4i
    /// assert_eq!(out, [1.0, 2.0, 1.5, -2.0, 3.0, 4.0]);
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn pad_bits_wide(self, bits: u128) -> Options {
        Options {
            pad_bits: Some(bits),
            ..self
        }
    }

    /// Run on up to `threads` threads (at least 1; small relayouts use fewer, see
    /// [`Options::min_bytes_per_thread`]). The calling thread runs one part of the work and
    /// rayon's global pool the others, so parts beyond the pool's size (by default one thread per
    /// core) wait for a free thread rather than start new ones.
    pub fn threads(self, threads: usize) -> Options {
        Options {
            threads: threads.max(1),
            ..self
        }
    }

    /// Use another thread only for each further `bytes` of destination (at least 1; by
    /// default 1 MiB, below which handing work to another thread costs more than it saves).
    /// Setting it low splits even tiny relayouts, which tests of the split use.
    ///
    /// ```
    /// use relayout::{compile_relayout_with, Layout, Options};
    ///
    /// let src = Layout::row_major(&[4, 6])?;
    /// let dst = Layout::col_major(&[4, 6])?;
    /// let options = Options::new().threads(3).min_bytes_per_thread(1);
    /// let r = compile_relayout_with(&src, &dst, options)?;
    /// let a: Vec<f32> = (0..24).map(|i| i as f32).collect();
    /// let mut b = vec![0.0f32; 24];
    /// r.run(&a, &mut b)?; // on three threads
    /// assert_eq!(b[1], 6.0);
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn min_bytes_per_thread(self, bytes: usize) -> Options {
        Options {
            min_bytes_per_thread: bytes.max(1),
            ..self
        }
    }

    /// Tune large relayouts by measurement (the blocking of transposes, and whether copies, zips
    /// and unzips stream): compile each distinct candidate ([`Tactics::CANDIDATES`], ranked),
    /// run them on the first runs (every candidate is a correct kernel, so those runs do the
    /// real work), then keep the fastest (another candidate replaces the default only where it
    /// is faster by a tenth). Each measured candidate runs one to seven times in a
    /// row, a first warm-up run not counted (where runs are shorter than 20 ms); the runs stay
    /// within [`Options::tune_budget`] (two candidates are always measured), so for the largest
    /// tensors only the first candidates in rank are measured. The choice is remembered for the
    /// process (and [`crate::tuning`] keeps it across processes). Pairs with destinations under
    /// 1 MiB that do not stream (under the target's
    /// [`stream_min_bytes`](Target::stream_min_bytes)) or with a single distinct candidate are
    /// not tuned, nor are relayouts whose tactics [`Options::tactics`] pins.
    pub fn tune(self, on: bool) -> Options {
        Options { tune: on, ..self }
    }

    /// The default of [`Options::tune_budget`]: with compiling the candidates, tuning one case
    /// of the benchmark suite stays within half a second.
    pub const DEFAULT_TUNE_BUDGET: Duration = Duration::from_millis(400);

    /// How long the runs that tune a relayout ([`Options::tune`]) may take in all, about: the
    /// default's second run shows how long one takes, and the budget then buys up to six timed
    /// runs of every candidate (after a warm-up run each, for runs under 20 ms), or one of each,
    /// or one of as many candidates as fit in rank order (never fewer than two candidates,
    /// whatever the budget). It keeps room for one run four times as long as the default's
    /// (some candidates run that slowly on tensors far larger than the caches), and measuring
    /// stops once another run would overrun it.
    ///
    /// ```
    /// use std::time::Duration;
    /// use relayout::{compile_relayout_with, Layout, Options};
    ///
    /// let src = Layout::row_major(&[2048, 2048])?; // 16 MiB of f32: tuned
    /// let dst = Layout::col_major(&[2048, 2048])?;
    /// let options = Options::new().tune(true).tune_budget(Duration::from_millis(50));
    /// let r = compile_relayout_with(&src, &dst, options)?;
    /// let (a, mut b) = (vec![0f32; 2048 * 2048], vec![0f32; 2048 * 2048]);
    /// let mut runs = 0;
    /// while r.tactics().is_none() {
    ///     r.run(&a, &mut b)?;
    ///     runs += 1;
    /// }
    /// assert!(runs >= 3); // two candidates at least, the default's first run untimed
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn tune_budget(self, budget: Duration) -> Options {
        Options {
            tune_budget: budget,
            ..self
        }
    }

    /// Look the kernel up in the process-wide cache, and keep it there (the default); with
    /// `false`, compile afresh and keep the kernel to this [`Relayout`] alone, which is how
    /// compile time is measured.
    ///
    /// ```
    /// use relayout::{compile_relayout, compile_relayout_with, Layout, Options};
    ///
    /// let src = Layout::row_major(&[8, 8])?;
    /// let dst = Layout::col_major(&[8, 8])?;
    /// compile_relayout(&src, &dst)?;
    /// assert!(compile_relayout(&src, &dst)?.was_cached());
    /// assert!(!compile_relayout_with(&src, &dst, Options::new().cache(false))?.was_cached());
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn cache(self, on: bool) -> Options {
        Options { cache: on, ..self }
    }

    /// Compile with these tactics rather than the default or tuned ones (tuning is then off):
    /// for pinning what an earlier tuning chose (see [`Relayout::tactics`]), or for timing one
    /// candidate against another.
    ///
    /// ```
    /// use relayout::plan::{BlockWrite, Blocking, Tactics};
    /// use relayout::{compile_relayout_with, Layout, Options};
    ///
    /// let src = Layout::row_major(&[256, 256])?;
    /// let dst = Layout::col_major(&[256, 256])?;
    /// let staged = Tactics::fixed(Blocking {
    ///     write: BlockWrite::Staged,
    ///     ..Blocking::DEFAULT
    /// });
    /// let r = compile_relayout_with(&src, &dst, Options::new().tune(true).tactics(staged))?;
    /// assert_eq!(r.tactics(), Some(staged));
    /// assert!(r.plan().to_string().contains("staged"));
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn tactics(self, tactics: Tactics) -> Options {
        Options {
            tactics: Some(tactics),
            ..self
        }
    }

    /// Plan for this machine rather than the host ([`Target::host`]). Only plans for the
    /// host's vector width compile; the other facts (cache geometry, the streaming threshold,
    /// the staging limit) change the plan, not whether it runs, which is how the tests run
    /// streamed kernels on small tensors.
    ///
    /// ```
    /// use relayout::{compile_relayout_with, Layout, Options, Target};
    ///
    /// let eager = Target {
    ///     stream_min_bytes: 0,
    ///     ..Target::host()
    /// };
    /// let (src, dst) = (Layout::row_major(&[4, 256])?, Layout::row_major(&[4, 256])?);
    /// let r = compile_relayout_with(&src, &dst, Options::new().target(eager))?;
    /// assert!(r.plan().to_string().contains("streaming stores"));
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn target(self, target: Target) -> Options {
        Options { target, ..self }
    }
}

/// The bytes of a slice of packed elements: a slice of 1-byte elements.
fn bytes_of<T: Element>(slice: &[T]) -> Result<&[u8]> {
    check_byte_slice::<T>()?;
    // SAFETY: `T` is a 1-byte plain integer (`u8` or `i8`), which has the layout of `u8`.
    Ok(unsafe { std::slice::from_raw_parts(slice.as_ptr().cast(), slice.len()) })
}

/// [`bytes_of`] for a mutable slice.
fn bytes_of_mut<T: Element>(slice: &mut [T]) -> Result<&mut [u8]> {
    check_byte_slice::<T>()?;
    // SAFETY: as in `bytes_of`; the borrow of `slice` moves into the result.
    Ok(unsafe { std::slice::from_raw_parts_mut(slice.as_mut_ptr().cast(), slice.len()) })
}

fn check_byte_slice<T: Element>() -> Result<()> {
    match std::mem::size_of::<T>() {
        1 => Ok(()),
        size => Err(Error::ElementType(format!(
            "this relayout moves packed sub-byte elements, run on their bytes (u8 or i8 \
             slices), called with {size}-byte elements"
        ))),
    }
}

/// Bytes of the elements that move as two 8-byte halves (`c128`).
const WIDE_ELEMENT: usize = 16;

/// Destination bytes each thread should have at least, unless the options say otherwise: below
/// that, handing work to another thread costs more than it saves (on a 2-core VM, a 256 KiB
/// transpose ran at a third of its one-thread speed on two), so small relayouts use fewer.
const DEFAULT_MIN_BYTES_PER_THREAD: usize = 1 << 20;

/// A compiled relayout from one layout to another.
///
/// Cheap to clone (the machine code is shared), `Send + Sync`, and frees its machine code when the
/// last clone (and the kernel cache) lets go of it.
#[derive(Clone)]
pub struct Relayout {
    kernels: Kernels,
    options: Options,
    cache_hit: bool,
    /// The kernels for destinations that start part-way into a cache line, where they could
    /// differ from [`Relayout::plan`]'s.
    offsets: Option<Arc<OffsetKernels>>,
}

/// The kernel of a relayout, or the candidates it is choosing among (and what the choice is to
/// be remembered by).
#[derive(Clone)]
enum Kernels {
    One(Arc<Candidate>),
    Tuned(Arc<Tuner>, Arc<TuneKey>),
}

/// Compiles the relayout from `src` to `dst` for 4-byte elements (`f32`, `u32`, `i32`).
///
/// ```
/// use relayout::{compile_relayout, Layout};
///
/// let src = Layout::row_major(&[2, 3])?;
/// let dst = Layout::col_major(&[2, 3])?;
/// let r = compile_relayout(&src, &dst)?;
/// let mut out = [0u32; 6];
/// r.run(&[0u32, 1, 2, 3, 4, 5], &mut out)?;
/// assert_eq!(out, [0, 3, 1, 4, 2, 5]);
/// # Ok::<(), relayout::Error>(())
/// ```
pub fn compile_relayout(src: &Layout, dst: &Layout) -> Result<Relayout> {
    compile_relayout_with(src, dst, Options::new())
}

/// Compiles the relayout from `src` to `dst` with the given [`Options`]. Compiling a pair that
/// was compiled before (same layouts, element size, tactics and target) returns the cached
/// kernel.
pub fn compile_relayout_with(src: &Layout, dst: &Layout, options: Options) -> Result<Relayout> {
    if let Some(c) = options.conversion {
        if let Some(size) = options.pad_size.filter(|&s| s != c.to_type().size()) {
            return Err(Error::Conversion(format!(
                "a pad value of {size} bytes for {c}: the pad value is a destination element, \
                 {} bytes",
                c.to_type().size()
            )));
        }
    }
    let mut conversion = options.conversion;
    if let Some(map) = &options.per_index {
        let Some(c) = conversion.or_else(|| options.dtype.map(|t| Conversion::new(t, t).ok())?)
        else {
            return Err(Error::Conversion(format!(
                "per-index scales along dim {} without element types: name them with \
                 Options::convert or Options::dtype",
                map.dim()
            )));
        };
        conversion = Some(c);
    }
    let packed = options.dtype.and_then(DType::packed);
    // 16-byte elements move as their two 8-byte halves.
    let (src, dst, elem_size) = match options.dtype {
        Some(DType::C128) => (
            src.split_elements(2)?,
            dst.split_elements(2)?,
            WIDE_ELEMENT / 2,
        ),
        _ => (src.clone(), dst.clone(), options.elem_size),
    };
    let engine = Engine::global();
    let mut request = Request {
        src,
        dst,
        elem_size,
        packed,
        conversion,
        per_index: options.per_index.clone(),
        tactics: Tactics::default(),
        target: options.target,
        line_offsets: LineOffsets::default(),
    };
    let tune = options.tune && options.tactics.is_none();
    let key = TuneKey {
        request: request.clone(),
        threads: options.threads,
    };
    let remembered = tune.then(|| engine.remembered(&key)).flatten();
    request.tactics = options.tactics.or(remembered).unwrap_or_default();
    let (first, cache_hit) = engine.candidate(&request, options.cache)?;
    let offsets = OffsetKernels::of(&request, &first, options.cache);
    let dst_bytes = first.plan.dst_bytes();
    let large = dst_bytes >= TUNE_MIN_BYTES.min(options.target.stream_min_bytes);
    let alternatives = if tune && remembered.is_none() && large {
        engine.alternatives(&first, &request, options.cache)?
    } else {
        Vec::new()
    };
    let kernels = if alternatives.is_empty() {
        Kernels::One(Arc::new(first))
    } else {
        let margin = Margin::for_bytes(
            first.plan.src_bytes(),
            dst_bytes,
            options.target.stream_min_bytes,
        );
        let candidates: Vec<Candidate> = std::iter::once(first).chain(alternatives).collect();
        // Shares move half the bytes from which destinations are streamed, or more.
        let shares = Shares::of(
            &request,
            candidates.len(),
            options.target.stream_min_bytes / 2,
        );
        Kernels::Tuned(
            Arc::new(Tuner::new(candidates, options.tune_budget, margin, shares)),
            Arc::new(key),
        )
    };
    Ok(Relayout {
        kernels,
        options,
        cache_hit,
        offsets,
    })
}

impl Relayout {
    /// Moves every element of `src` to its place in `dst` (converting it, if the relayout
    /// was compiled with [`Options::convert`]).
    ///
    /// Fails when `S`'s size is not the compiled source element size or `D`'s not the
    /// destination's (the same, unless the relayout converts), or a slice is shorter than its
    /// layout's [`Layout::cosize`]. Destination slots that hold no element are left alone, or
    /// set to the pad value of the [`Options`].
    pub fn run<S: Element, D: Element>(&self, src: &[S], dst: &mut [D]) -> Result<()> {
        let plan = self.plan();
        if let Some(packed) = plan.packing() {
            return self.run_packed(packed, bytes_of(src)?, bytes_of_mut(dst)?);
        }
        for (which, compiled, called) in [
            ("source", plan.elem_size(), std::mem::size_of::<S>()),
            (
                "destination",
                plan.dst_elem_size(),
                std::mem::size_of::<D>(),
            ),
        ] {
            if compiled != called {
                return Err(Error::ElementType(format!(
                    "this relayout was compiled for {compiled}-byte {which} elements, called \
                     with {called}-byte elements"
                )));
            }
        }
        for (which, needed, got) in [
            ("source", plan.src_len(), src.len()),
            ("destination", plan.dst_len(), dst.len()),
        ] {
            if got < needed {
                return Err(Error::BufferTooShort { which, needed, got });
            }
        }
        if let Some(bits) = self.options.pad_bits {
            let dst = &mut dst[..plan.dst_len()];
            match self.options.dtype {
                // Each element is two halves: the low 8 bytes, then the high.
                Some(DType::C128) => dst.chunks_exact_mut(2).for_each(|pair| {
                    pair[0] = D::from_bits(bits as u64);
                    pair[1] = D::from_bits((bits >> 64) as u64);
                }),
                _ => dst.fill(D::from_bits(bits as u64)),
            }
        }
        // SAFETY: the lengths were checked above; `&[T]` and `&mut [T]` cannot overlap.
        unsafe { self.launch(src.as_ptr().cast(), dst.as_mut_ptr().cast()) };
        Ok(())
    }

    /// [`Relayout::run`] of packed sub-byte elements, on their bytes.
    fn run_packed(&self, packed: Packed, src: &[u8], dst: &mut [u8]) -> Result<()> {
        let plan = self.plan();
        let bits = packed.bits();
        packing::check_len("source", plan.src_len(), bits, src.len())?;
        packing::check_len("destination", plan.dst_len(), bits, dst.len())?;
        if let Some(pad) = self.options.pad_bits {
            // Whole bytes of pad elements, then the elements of a last partial byte.
            let whole = plan.dst_len() / packed.per_byte();
            dst[..whole].fill(packing::repeated(pad as u8, bits));
            for i in whole * packed.per_byte()..plan.dst_len() {
                packing::write(dst, i, bits, pad as u8);
            }
        }
        // SAFETY: the lengths were checked above; `&[u8]` and `&mut [u8]` cannot overlap.
        unsafe { self.launch(src.as_ptr(), dst.as_mut_ptr()) };
        Ok(())
    }

    /// Runs the kernel on raw pointers, with no checks; the pad value is not written.
    ///
    /// # Safety
    /// `src` must be valid for reads of [`Plan::src_len`] elements and `dst` for writes of
    /// [`Plan::dst_len`] elements of the compiled size (see [`Relayout::plan`]), each from the
    /// lowest address its layout touches, and the two ranges must not overlap.
    pub unsafe fn run_raw(&self, src: *const u8, dst: *mut u8) {
        // SAFETY: forwarded from the caller.
        unsafe { self.launch(src, dst) }
    }

    /// Runs the current kernel, or, while tuning, the next candidate, timed.
    ///
    /// # Safety
    /// As [`Relayout::run_raw`]. Every candidate reads and writes the same elements.
    unsafe fn launch(&self, src: *const u8, dst: *mut u8) {
        match &self.kernels {
            Kernels::One(c) => {
                let at_offset = self.at_line_offsets(c, src, dst);
                // SAFETY: forwarded from the caller; the kernels of every offset move the same
                // elements.
                unsafe { self.launch_candidate(at_offset.as_ref().unwrap_or(c), src, dst) }
            }
            Kernels::Tuned(tuner, key) => {
                let chosen = match tuner.next() {
                    Step::Whole(candidate, trial) => {
                        let at_offset = self.at_line_offsets(candidate, src, dst);
                        let candidate = at_offset.as_ref().unwrap_or(candidate);
                        let start = Instant::now();
                        // SAFETY: forwarded from the caller; all candidates move the same
                        // elements.
                        unsafe { self.launch_candidate(candidate, src, dst) };
                        trial.and_then(|i| tuner.record(i, start.elapsed()))
                    }
                    Step::Shared(round, kernels) => {
                        let start = Instant::now();
                        let times: Vec<Duration> = kernels
                            .iter()
                            .map(|share| {
                                let began = Instant::now();
                                // SAFETY: forwarded from the caller: each share's plan reads
                                // and writes the whole relayout's buffers (same start and
                                // length) and moves the elements of its slice, and the shares
                                // together move each element once (`tune::shares`).
                                unsafe { self.launch_candidate(share, src, dst) };
                                began.elapsed()
                            })
                            .collect();
                        tuner.record_shared(round, &times, start.elapsed())
                    }
                };
                if let Some(chosen) = chosen {
                    Engine::global().remember(TuneKey::clone(key), chosen.tactics);
                }
            }
        }
    }

    /// `candidate`'s kernel planned for buffers at `src` and `dst`, where one lies part-way
    /// into a cache line and the plan differs (see [`Plan::with_tactics_at`]); compiled on
    /// first use.
    fn at_line_offsets(
        &self,
        candidate: &Candidate,
        src: *const u8,
        dst: *mut u8,
    ) -> Option<Candidate> {
        self.offsets.as_ref()?.for_buffers(candidate, src, dst)
    }

    /// Splits the work of one kernel between the configured threads and runs it.
    ///
    /// # Safety
    /// As [`Relayout::run_raw`].
    unsafe fn launch_candidate(&self, candidate: &Candidate, src: *const u8, dst: *mut u8) {
        let work = candidate.plan.work();
        let threads = self.threads_for(&candidate.plan);
        if threads == 1 {
            // SAFETY: the caller guarantees the buffers; one call covers all the work.
            return unsafe { candidate.kernel.call(src, dst, 0, work) };
        }
        let (src, dst) = (src as usize, dst as usize);
        let kernel = &candidate.kernel;
        let bounds = candidate.plan.balanced_split(threads);
        let bounds = &bounds;
        let part = |t: usize| {
            let (begin, end) = (bounds[t], bounds[t + 1]);
            // SAFETY: the caller guarantees the buffers; the ranges `[begin, end)` of the parts
            // are disjoint and distinct outer iterations write distinct destination elements
            // (the destination is injective), so no two parts write the same byte.
            unsafe { kernel.call(src as *const u8, dst as *mut u8, begin, end) }
        };
        let part = &part;
        // Parts 1.. go to rayon's pool, whose threads persist between runs; this thread runs
        // part 0 and then waits for the rest (helping with them if it is a pool thread itself).
        rayon::in_place_scope(|scope| {
            for t in 1..threads {
                scope.spawn(move |_| part(t));
            }
            part(0);
        });
    }

    /// How many threads a run uses: [`Options::threads`] at most, one per
    /// [`Options::min_bytes_per_thread`] of destination, and no more than the outer iterations.
    ///
    /// ```
    /// use relayout::{compile_relayout_with, Layout, Options};
    ///
    /// let small = Layout::row_major(&[64, 64])?; // 16 KiB of f32
    /// let transposed = Layout::col_major(&[64, 64])?;
    /// let r = compile_relayout_with(&small, &transposed, Options::new().threads(4))?;
    /// assert_eq!(r.threads(), 1);
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn threads(&self) -> usize {
        self.threads_for(&self.current().plan)
    }

    fn threads_for(&self, plan: &Plan) -> usize {
        if !plan.splits_by_bytes() {
            return 1;
        }
        let bytes = plan.dst_bytes();
        self.options
            .threads
            .min(plan.work())
            .min(bytes / self.options.min_bytes_per_thread)
            .max(1)
    }

    /// The kernel in use: the only one, or while tuning the default, then the chosen one.
    fn current(&self) -> &Candidate {
        match &self.kernels {
            Kernels::One(c) => c,
            Kernels::Tuned(tuner, _) => tuner.current(),
        }
    }

    /// The loop nest the kernel runs (with [`Options::tune`], the chosen one once tuning ends).
    pub fn plan(&self) -> &Plan {
        &self.current().plan
    }

    /// The Cranelift IR of the kernel, as text (generated on first request).
    ///
    /// ```
    /// use relayout::{compile_relayout, Layout};
    ///
    /// let r = compile_relayout(&Layout::row_major(&[64, 64])?, &Layout::col_major(&[64, 64])?)?;
    /// assert!(r.clif()?.starts_with("function"));
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn clif(&self) -> Result<&str> {
        self.current().kernel.clif()
    }

    /// The kernel's machine code as assembly text: Cranelift's listing of its final code, made by
    /// compiling the function once more with disassembly on the first time it is asked for (so
    /// that ordinary compiles do not pay for it).
    pub fn asm(&self) -> Result<&str> {
        self.current().kernel.asm()
    }

    /// Microseconds spent planning and compiling this kernel (when it was compiled, not on a hit).
    pub fn compile_micros(&self) -> f64 {
        self.current().kernel.compile_micros
    }

    /// The tactics of the kernel in use, or `None` while [`Options::tune`] is still measuring
    /// the candidates.
    pub fn tactics(&self) -> Option<Tactics> {
        match &self.kernels {
            Kernels::One(c) => Some(c.tactics),
            Kernels::Tuned(tuner, _) => tuner.chosen().map(|c| c.tactics),
        }
    }

    /// The tactics in use flattened into one [`BlockingSummary`] (for tools that log a
    /// relayout's blocking as numbers and flags), or `None` while [`Options::tune`] is still
    /// measuring. [`Relayout::tactics`] and [`Plan::blocking`] are the exact values.
    ///
    /// ```
    /// use relayout::{compile_relayout, Layout};
    ///
    /// let r = compile_relayout(&Layout::row_major(&[8, 8])?, &Layout::col_major(&[8, 8])?)?;
    /// let b = r.blocking().unwrap();
    /// // The blocking fitted to the transpose's 32-byte rows.
    /// assert_eq!(b.run_bytes, r.plan().blocking().unwrap().run_bytes);
    /// assert_eq!((b.fitted, b.stage, b.stream, b.stream_copies), (true, false, false, true));
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn blocking(&self) -> Option<BlockingSummary> {
        // Once tuning has chosen, the plan in use is the chosen one's.
        self.tactics().map(|t| BlockingSummary::of(t, self.plan()))
    }

    /// Whether this handle came from the kernel cache rather than a fresh compilation.
    pub fn was_cached(&self) -> bool {
        self.cache_hit
    }

    /// The options it was compiled with.
    pub fn options(&self) -> Options {
        self.options.clone()
    }
}

/// [`Tactics`] and the blocking of a [`Plan`] made with them flattened into sizes and flags,
/// as [`Relayout::blocking`] reports them. The sizes and the `stage`, `stream` and `across`
/// flags are those of the blocking the plan's transposes are cut by ([`Plan::blocking`]: the
/// tactics' fixed blocking, or one fitted to the transpose's rows); a plan that does not
/// transpose reports the tactics' fixed blocking, or [`Blocking::DEFAULT`] if the tactics are
/// fitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BlockingSummary {
    /// Whether the tactics fit the blocking to each transpose's rows ([`Tiling::Fitted`])
    /// rather than fixing it.
    pub fitted: bool,
    /// Bytes of each destination run of a transpose block.
    pub run_bytes: usize,
    /// Bytes of a transpose block.
    pub block_bytes: usize,
    /// Strips per macro block.
    pub macro_strips: usize,
    /// Blocks per macro block.
    pub macro_blocks: usize,
    /// Whether transpose blocks are staged and copied out ([`BlockWrite::Staged`]).
    pub stage: bool,
    /// Whether transpose blocks into large destinations are staged and streamed out
    /// ([`BlockWrite::Streamed`]).
    pub stream: bool,
    /// Whether copies, zips and unzips into large destinations stream ([`LargeWrites`](crate::plan::LargeWrites)).
    pub stream_copies: bool,
    /// Whether transpose tiles are walked across the source rows ([`Walk::Across`]).
    pub across: bool,
}

impl BlockingSummary {
    /// The summary of `tactics` and of `plan`, planned with them.
    pub fn of(tactics: Tactics, plan: &Plan) -> BlockingSummary {
        let b = plan.blocking().unwrap_or(match tactics.tiling {
            Tiling::Fitted => Blocking::DEFAULT,
            Tiling::Fixed(b) => b,
        });
        BlockingSummary {
            fitted: tactics.tiling == Tiling::Fitted,
            run_bytes: b.run_bytes,
            block_bytes: b.block_bytes,
            macro_strips: b.macro_strips,
            macro_blocks: b.macro_blocks,
            stage: b.write == BlockWrite::Staged,
            stream: b.write == BlockWrite::Streamed,
            stream_copies: tactics.large_writes.streams(),
            across: b.walk == Walk::Across,
        }
    }
}

impl fmt::Debug for Relayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Relayout")
            .field("plan", self.plan())
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{reference, Target};

    /// Runs `src -> dst` for `T`, tuned with its first two runs shared ([`crate::tune`]), until
    /// it has chosen; every run, the shared ones too, writes a zeroed destination that must
    /// then equal the reference's.
    fn tune_in_shares<T: Element + PartialEq + std::fmt::Debug>(src: &str, dst: &str) {
        let (src, dst) = (Layout::parse(src).unwrap(), Layout::parse(dst).unwrap());
        // Streaming from 4 KiB: the tensors are beyond the cache, and large enough to tune.
        let target = Target {
            stream_min_bytes: 4096,
            ..Target::host()
        };
        let options = Options::new()
            .elem_size(std::mem::size_of::<T>())
            .tune(true)
            .target(target);
        let r = compile_relayout_with(&src, &dst, options).unwrap();
        let Kernels::Tuned(tuner, _) = &r.kernels else {
            panic!("{src} -> {dst} is not tuned");
        };
        assert!(tuner.share_next_runs(2), "{src} -> {dst} has no shares");
        let a: Vec<T> = (0..src.cosize() as u64).map(T::from_bits).collect();
        let mut want = vec![T::from_bits(0); dst.cosize()];
        reference::relayout(&src, &a, &dst, &mut want, None).unwrap();
        let mut runs = 0;
        while r.tactics().is_none() {
            let mut got = vec![T::from_bits(0); dst.cosize()];
            r.run(&a, &mut got).unwrap();
            assert!(got == want, "{src} -> {dst}: run {runs} differs");
            runs += 1;
            // Two shared runs, up to three nominees' (a warm-up and a trial each), then a
            // rematch (a warm-up and six trials a side).
            assert!(runs <= 2 + 3 * 2 + 2 * 7, "{src} -> {dst}: {runs} runs");
        }
    }

    #[test]
    fn shared_tuning_runs_move_every_element_once() {
        let t = |r: usize, c: usize| {
            (
                format!("cute:({r},{c}):({c},1)"),
                format!("cute:({r},{c}):(1,{r})"),
            )
        };
        let (s, d) = t(300, 200);
        tune_in_shares::<u32>(&s, &d);
        tune_in_shares::<u64>(&s, &d);
        let (s, d) = t(301, 257);
        tune_in_shares::<u16>(&s, &d);
        tune_in_shares::<u8>(&s, &d);
        tune_in_shares::<u32>(
            "tvm:[6,32,12,12] lambda n,c,h,w: [n, c, h, w]",
            "tvm:[6,32,12,12] lambda n,c,h,w: [n, c//16, h, w, c%16]",
        );
        tune_in_shares::<u32>(
            "tvm:[6,3,40,40] lambda n,c,h,w: [n, c, h, w]",
            "tvm:[6,3,40,40] lambda n,c,h,w: [n, h, w, c]",
        );
    }

    #[test]
    fn blocking_summary_reports_the_blocking_the_plan_was_cut_by() {
        let rows = Layout::row_major(&[8000, 8000]).unwrap();
        let cols = Layout::col_major(&[8000, 8000]).unwrap();
        let fitted = compile_relayout_with(&rows, &cols, Options::new().tune(false)).unwrap();
        let summary = fitted.blocking().unwrap();
        let cut = fitted.plan().blocking().unwrap();
        assert!(summary.fitted);
        assert_eq!(
            (summary.run_bytes, summary.block_bytes, summary.stream),
            (
                cut.run_bytes,
                cut.block_bytes,
                cut.write == BlockWrite::Streamed
            )
        );
        // A destination of 256 MB streams; the default's in-place 64-byte runs do not.
        assert_ne!(cut, Blocking::DEFAULT);
        let fixed = Tactics::fixed(Blocking::STREAMED_512);
        let options = Options::new().tune(false).tactics(fixed);
        let summary = compile_relayout_with(&rows, &cols, options)
            .unwrap()
            .blocking()
            .unwrap();
        assert!(!summary.fitted);
        assert_eq!((summary.run_bytes, summary.stream), (512, true));
        // A copy has no blocks: the fitted tactics report the default's sizes.
        let copy = compile_relayout_with(&rows, &rows, Options::new().tune(false)).unwrap();
        assert_eq!(copy.plan().blocking(), None);
        assert_eq!(
            copy.blocking().unwrap().run_bytes,
            Blocking::DEFAULT.run_bytes
        );
    }
}
