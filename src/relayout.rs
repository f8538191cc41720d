//! The public handle: compile a relayout, run it on buffers, look inside.

use std::fmt;
use std::sync::Arc;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::jit::{self, Compiled};
use crate::layout::Layout;
use crate::plan::Plan;

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

/// How to compile and run a relayout: element size, padding value, threads.
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Options {
    elem_size: usize,
    pad_bits: Option<u64>,
    threads: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            elem_size: 4,
            pad_bits: None,
            threads: 1,
        }
    }
}

impl Options {
    /// 4-byte elements, padding left untouched, one thread.
    pub fn new() -> Options {
        Options::default()
    }

    /// Elements of this type's size.
    pub fn dtype(self, dtype: DType) -> Options {
        Options {
            elem_size: dtype.size(),
            ..self
        }
    }

    /// Elements of `bytes` bytes (1, 2, 4 or 8; others fail when compiling).
    pub fn elem_size(self, bytes: usize) -> Options {
        Options {
            elem_size: bytes,
            ..self
        }
    }

    /// Write `value` to every padding slot of the destination (slots that hold no element);
    /// also sets the element size to `T`'s.
    pub fn pad_value<T: Element>(self, value: T) -> Options {
        Options {
            elem_size: std::mem::size_of::<T>(),
            pad_bits: Some(value.to_bits()),
            ..self
        }
    }

    /// Write the element with these bits (low bytes) to every padding slot of the destination.
    pub fn pad_bits(self, bits: u64) -> Options {
        Options {
            pad_bits: Some(bits),
            ..self
        }
    }

    /// Run on `threads` threads (at least 1).
    pub fn threads(self, threads: usize) -> Options {
        Options {
            threads: threads.max(1),
            ..self
        }
    }
}

/// A compiled relayout from one layout to another.
///
/// Cheap to clone (the machine code is shared), `Send + Sync`, and frees its machine code when the
/// last clone (and the kernel cache) lets go of it.
#[derive(Clone)]
pub struct Relayout {
    plan: Arc<Plan>,
    kernel: Arc<Compiled>,
    options: Options,
    cache_hit: bool,
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
/// was compiled before (same layouts and element size) returns the cached kernel.
pub fn compile_relayout_with(src: &Layout, dst: &Layout, options: Options) -> Result<Relayout> {
    let (plan, kernel, cache_hit) = jit::cached(src, dst, options.elem_size)?;
    Ok(Relayout {
        plan,
        kernel,
        options,
        cache_hit,
    })
}

impl Relayout {
    /// Moves every element of `src` to its place in `dst`.
    ///
    /// Fails when `T`'s size is not the compiled element size or a slice is shorter than its
    /// layout's [`Layout::cosize`]. Destination slots that hold no element are left alone, or
    /// set to the pad value of the [`Options`].
    pub fn run<T: Element>(&self, src: &[T], dst: &mut [T]) -> Result<()> {
        if std::mem::size_of::<T>() != self.plan.elem_size() {
            return Err(Error::ElementType(format!(
                "this relayout was compiled for {}-byte elements, called with {}-byte elements",
                self.plan.elem_size(),
                std::mem::size_of::<T>()
            )));
        }
        for (which, needed, got) in [
            ("source", self.plan.src_len(), src.len()),
            ("destination", self.plan.dst_len(), dst.len()),
        ] {
            if got < needed {
                return Err(Error::BufferTooShort { which, needed, got });
            }
        }
        if let Some(bits) = self.options.pad_bits {
            dst[..self.plan.dst_len()].fill(T::from_bits(bits));
        }
        // SAFETY: the lengths were checked above; `&[T]` and `&mut [T]` cannot overlap.
        unsafe { self.launch(src.as_ptr().cast(), dst.as_mut_ptr().cast()) };
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

    /// Splits the work between the configured threads and runs the kernel.
    ///
    /// # Safety
    /// As [`Relayout::run_raw`].
    unsafe fn launch(&self, src: *const u8, dst: *mut u8) {
        let work = self.plan.work();
        let threads = self.options.threads.min(work).max(1);
        if threads == 1 {
            // SAFETY: the caller guarantees the buffers; one call covers all the work.
            return unsafe { self.kernel.call(src, dst, 0, work) };
        }
        let (src, dst) = (src as usize, dst as usize);
        std::thread::scope(|scope| {
            for t in 0..threads {
                let (begin, end) = (work * t / threads, work * (t + 1) / threads);
                let kernel = &self.kernel;
                scope.spawn(move || {
                    // SAFETY: the caller guarantees the buffers; the ranges `[begin, end)` are
                    // disjoint and distinct outer iterations write distinct destination
                    // elements (the destination is injective), so threads never write the same
                    // byte.
                    unsafe { kernel.call(src as *const u8, dst as *mut u8, begin, end) }
                });
            }
        });
    }

    /// The loop nest the kernel runs.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The Cranelift IR of the kernel, as text (generated on first request).
    ///
    /// ```
    /// use relayout::{compile_relayout, Layout};
    ///
    /// let r = compile_relayout(&Layout::row_major(&[64, 64])?, &Layout::col_major(&[64, 64])?)?;
    /// assert!(r.clif()?.contains("shuffle"));
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn clif(&self) -> Result<&str> {
        self.kernel.clif()
    }

    /// The kernel's machine code as assembly text: Cranelift's listing of its final code, made by
    /// compiling the function once more with disassembly on the first time it is asked for (so
    /// that ordinary compiles do not pay for it).
    pub fn asm(&self) -> Result<&str> {
        self.kernel.asm()
    }

    /// Microseconds spent planning and compiling this kernel (when it was compiled, not on a hit).
    pub fn compile_micros(&self) -> f64 {
        self.kernel.compile_micros
    }

    /// Whether this handle came from the kernel cache rather than a fresh compilation.
    pub fn was_cached(&self) -> bool {
        self.cache_hit
    }

    /// The options it was compiled with.
    pub fn options(&self) -> Options {
        self.options
    }
}

impl fmt::Debug for Relayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Relayout")
            .field("plan", &self.plan)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}
