//! From a pair of layouts to a loop nest: refine, coalesce, order, pick the kernel.
//!
//! A [`Plan`] is a list of [`Region`]s, each a loop nest over a box of the logical index space
//! with an innermost [`Kernel`]. Most pairs give one region; a dim whose extent is not a whole
//! number of tiles (padding) adds a region per partial tile, and large contiguous copies are
//! split so that threads can share them. Dims whose digits do not refine (incompatible splits,
//! fused XLA/TVM sources) are iterated by an [`Indexed`] loop that evaluates their digits with
//! division and modulo; every other dim is walked by pointer increments.
//!
//! The planner knows nothing of Cranelift: [`Plan::for_each_move`] runs a plan without compiling
//! it, which is how the tests prove a plan moves every element exactly once.
//!
//! ```
//! use relayout::{plan::{Kernel, Plan}, Layout};
//!
//! let src = Layout::row_major(&[64, 32])?;
//! let dst = Layout::col_major(&[64, 32])?;
//! let plan = Plan::new(&src, &dst, 4)?;
//! assert!(matches!(plan.regions()[0].kernel, Kernel::Transpose { .. }));
//! # Ok::<(), relayout::Error>(())
//! ```

mod blocking;
mod check;
mod refine;
mod schedule;

use std::fmt;

pub use blocking::Blocking;
pub use refine::Loop;

use crate::error::{Error, Result};
use crate::layout::{Digit, Layout, Source};
use crate::reference::check_pair;

/// Destinations of at least this many bytes are written with streaming stores, which skip the
/// cache: worth it once the destination cannot stay in the cache anyway.
pub const STREAM_MIN_BYTES: usize = 8 << 20;

/// The most bytes a staging buffer holds (see [`Region::staged`]): it is a stack slot of the
/// generated function, and blocks larger than this are stored in place instead.
pub const MAX_STAGE_BYTES: usize = 64 << 10;

/// Regions beyond this count (from many padded dims at once) send the padded dims to the indexed
/// path instead.
const MAX_REGIONS: usize = 64;

/// The innermost operation of a region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// Move one element.
    Element,
    /// Copy `len` elements that are contiguous on both sides (16-byte vectors, then a tail).
    Copy {
        /// Elements per copy.
        len: usize,
    },
    /// Transpose `lanes × lanes` tiles in registers: `a` is contiguous in the source
    /// (`a.src_stride == 1`), `b` in the destination (`b.dst_stride == 1`). Loads run along
    /// `a`, stores along `b`; the parts of `a` and `b` beyond whole tiles move element by element.
    Transpose {
        /// The source-contiguous loop.
        a: Loop,
        /// The destination-contiguous loop.
        b: Loop,
        /// Elements per 16-byte vector.
        lanes: usize,
    },
    /// Interleave `short.extent` strips (2, 4, 8 …, fewer than `lanes`) in registers: each strip
    /// runs along `long`, which is contiguous in the source (`long.src_stride == 1`); the
    /// destination holds the strips interleaved (`short.dst_stride == 1`,
    /// `long.dst_stride == short.extent`). Loads one vector per strip, stores whole vectors of the
    /// interleaved run; no lane crosses into another strip's register.
    Zip {
        /// The short, destination-contiguous loop.
        short: Loop,
        /// The long, source-contiguous loop.
        long: Loop,
        /// Elements per 16-byte vector.
        lanes: usize,
    },
    /// The inverse of [`Kernel::Zip`]: the source holds `short.extent` strips interleaved
    /// (`short.src_stride == 1`, `long.src_stride == short.extent`) and the destination holds
    /// each strip contiguously along `long` (`long.dst_stride == 1`).
    Unzip {
        /// The short, source-contiguous loop.
        short: Loop,
        /// The long, destination-contiguous loop.
        long: Loop,
        /// Elements per 16-byte vector.
        lanes: usize,
    },
}

impl Kernel {
    /// The two loops a tile kernel (transpose, zip, unzip) covers, or `None` for the others.
    pub fn tile_loops(&self) -> Option<(Loop, Loop)> {
        match *self {
            Kernel::Transpose { a, b, .. } => Some((a, b)),
            Kernel::Zip { short, long, .. } | Kernel::Unzip { short, long, .. } => {
                Some((short, long))
            }
            Kernel::Element | Kernel::Copy { .. } => None,
        }
    }
}

/// Dims iterated by one flat counter whose coordinates and offsets are computed with div/mod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Indexed {
    /// Extents of the indexed dims (local dim `k` is the `k`-th of these).
    pub extents: Vec<usize>,
    /// Source digits over the local dims.
    pub src: Vec<Digit>,
    /// Destination digits over the local dims.
    pub dst: Vec<Digit>,
}

impl Indexed {
    /// Number of points the indexed loop visits.
    pub fn count(&self) -> usize {
        self.extents.iter().product()
    }
}

/// A loop nest over a box of the index space.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    /// Source buffer index (elements from the start of the slice) of the region's first element.
    pub src_base: i64,
    /// Destination buffer index of the region's first element.
    pub dst_base: i64,
    /// An outermost loop over dims that need div/mod, if any.
    pub indexed: Option<Indexed>,
    /// Affine loops, outermost first.
    pub loops: Vec<Loop>,
    /// The innermost operation.
    pub kernel: Kernel,
    /// Whether a transpose fills a staging buffer with its block (one row per destination run)
    /// and then writes the runs out one after another, rather than storing each tile in place;
    /// or a zip fills one with its interleaved run, or a zip or unzip with the runs of a
    /// [staged loop](Region::staged_loop), to be streamed out.
    pub staged: bool,
    /// Whether the kernel writes the destination with streaming (non-temporal) stores, which
    /// bypass the cache: a streamed copy hands its source runs to the runtime's streaming routine
    /// (those of its innermost loop as the rows of one call); a streamed transpose, zip or unzip
    /// is staged, and the runtime streams the staging buffer out.
    pub streamed: bool,
    /// Whether a transpose walks its register tiles across the source rows, the
    /// destination-contiguous loop inside: each step of the outer tile loop finishes whole
    /// destination runs and reads a little of every source row of the block, rather than walking
    /// along the source rows. (Blocks only a few tiles across go this way either way.)
    pub across: bool,
    /// Whether the innermost loop runs into the staging buffer with the kernel: a zip or unzip
    /// whose destination runs continue one another along that loop (odd/even strips, the
    /// `(2,1)` sub-tiles of an XLA tile) is staged for the whole loop, and the joined run
    /// streamed out with one call. Such a region is always [`staged`](Region::staged) and
    /// [`streamed`](Region::streamed).
    pub staged_loop: bool,
}

impl Region {
    /// Bytes of the staging buffer the region writes its blocks into, if it is
    /// [`staged`](Region::staged): the kernel's block, times the innermost loop's extent when
    /// that loop is staged too.
    pub fn stage_bytes(&self, elem_size: usize) -> Option<usize> {
        self.block_bytes(elem_size).filter(|_| self.staged)
    }

    /// Bytes of what the region would stage (see [`Region::stage_bytes`]), staged or not: `None`
    /// when its kernel is not a tile kernel.
    pub(crate) fn block_bytes(&self, elem_size: usize) -> Option<usize> {
        let (x, y) = self.kernel.tile_loops()?;
        let steps = match (self.staged_loop, self.loops.last()) {
            (true, Some(inner)) => inner.extent,
            _ => 1,
        };
        Some(x.extent * y.extent * steps * elem_size)
    }

    /// Iterations of the outermost loop: the unit in which work is split between threads.
    pub fn outer_extent(&self) -> usize {
        match (&self.indexed, self.loops.first()) {
            (Some(ix), _) => ix.count(),
            (None, Some(l)) => l.extent,
            (None, None) => 1,
        }
    }
}

/// The loop nests that move every element of `src` to its place in `dst`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    elem_size: usize,
    src_len: usize,
    dst_len: usize,
    regions: Vec<Region>,
}

impl Plan {
    /// Plans the relayout from `src` to `dst` for elements of `elem_size` bytes (1, 2, 4 or 8).
    ///
    /// Fails when the shapes differ, `dst` is not injective, or the element size is not one of
    /// those four.
    pub fn new(src: &Layout, dst: &Layout, elem_size: usize) -> Result<Plan> {
        Plan::with_blocking(src, dst, elem_size, Blocking::default())
    }

    /// [`Plan::new`] with transposes blocked as `blocking` says.
    pub fn with_blocking(
        src: &Layout,
        dst: &Layout,
        elem_size: usize,
        blocking: Blocking,
    ) -> Result<Plan> {
        if ![1, 2, 4, 8].contains(&elem_size) {
            return Err(Error::ElementType(format!(
                "element size {elem_size} bytes; relayout moves elements of 1, 2, 4 or 8 bytes"
            )));
        }
        check_pair(src, dst)?;
        let rank = src.rank();
        let mut boxes: Vec<Option<Vec<refine::DimBox>>> =
            (0..rank).map(|d| refine::refine_dim(src, dst, d)).collect();
        let region_count = |b: &[Option<Vec<refine::DimBox>>]| {
            b.iter()
                .flatten()
                .fold(1usize, |acc, v| acc.saturating_mul(v.len()))
        };
        if region_count(&boxes) > MAX_REGIONS {
            for b in boxes.iter_mut() {
                if b.as_ref().is_some_and(|v| v.len() > 1) {
                    *b = None;
                }
            }
        }
        let indexed_dims: Vec<usize> = (0..rank).filter(|&d| boxes[d].is_none()).collect();
        let indexed = (!indexed_dims.is_empty()).then(|| Indexed {
            extents: indexed_dims.iter().map(|&d| src.shape()[d]).collect(),
            src: local_digits(src, &indexed_dims),
            dst: local_digits(dst, &indexed_dims),
        });
        let src_base = src.base() - src.buffer_start();
        let dst_base = dst.base() - dst.buffer_start();
        let stream = dst.cosize().saturating_mul(elem_size) >= blocking.stream_min_bytes;
        let mut regions = Vec::new();
        for combo in box_combinations(&boxes) {
            let loops: Vec<Loop> = combo.iter().flat_map(|b| b.loops.iter().copied()).collect();
            let region = Region {
                src_base: src_base + combo.iter().map(|b| b.src_base).sum::<i64>(),
                dst_base: dst_base + combo.iter().map(|b| b.dst_base).sum::<i64>(),
                indexed: indexed.clone(),
                loops,
                kernel: Kernel::Element,
                staged: false,
                streamed: false,
                across: false,
                staged_loop: false,
            };
            regions.extend(schedule::schedule(region, elem_size, stream, blocking));
        }
        Ok(Plan {
            elem_size,
            src_len: src.cosize(),
            dst_len: dst.cosize(),
            regions,
        })
    }

    /// Bytes per element.
    pub fn elem_size(&self) -> usize {
        self.elem_size
    }

    /// Elements the source buffer must hold.
    pub fn src_len(&self) -> usize {
        self.src_len
    }

    /// Elements the destination buffer must hold.
    pub fn dst_len(&self) -> usize {
        self.dst_len
    }

    /// The regions, in the order the generated code runs them.
    pub fn regions(&self) -> &[Region] {
        &self.regions
    }

    /// Total outer iterations over all regions: the range the generated function takes.
    pub fn work(&self) -> usize {
        self.regions.iter().map(Region::outer_extent).sum()
    }

    /// Calls `f(src_index, dst_index)` for every element the plan moves, in plan order, without
    /// compiling anything. The tests use it to prove a plan moves each element exactly once.
    pub fn for_each_move(&self, f: impl FnMut(usize, usize)) {
        check::for_each_move(self, f)
    }
}

/// The digits of `layout` that read the dims in `dims`, renumbered to positions in `dims`.
fn local_digits(layout: &Layout, dims: &[usize]) -> Vec<Digit> {
    layout
        .digits()
        .iter()
        .filter(|g| g.source.dims().iter().any(|d| dims.contains(d)))
        .map(|g| {
            let local = |d: usize| dims.iter().position(|&x| x == d).unwrap_or(0);
            Digit {
                source: Source::fused(g.source.terms().into_iter().map(|(d, w)| (local(d), w))),
                ..g.clone()
            }
        })
        .collect()
}

/// Every choice of one box per separable dim.
fn box_combinations(boxes: &[Option<Vec<refine::DimBox>>]) -> Vec<Vec<refine::DimBox>> {
    boxes.iter().flatten().fold(vec![Vec::new()], |acc, dim| {
        acc.iter()
            .flat_map(|prefix| {
                dim.iter().map(move |b| {
                    let mut next = prefix.clone();
                    next.push(b.clone());
                    next
                })
            })
            .collect()
    })
}

impl fmt::Display for Plan {
    /// The loop nest as text, one region after another.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "plan: {}-byte elements, src {} elements, dst {} elements, {} region(s), work {}",
            self.elem_size,
            self.src_len,
            self.dst_len,
            self.regions.len(),
            self.work()
        )?;
        for (i, r) in self.regions.iter().enumerate() {
            writeln!(
                f,
                "region {i}: src at {}, dst at {}",
                r.src_base, r.dst_base
            )?;
            let mut indent = 1;
            if let Some(ix) = &r.indexed {
                let show = |ds: &[Digit]| {
                    ds.iter()
                        .map(|g| g.to_string())
                        .collect::<Vec<_>>()
                        .join(" + ")
                };
                writeln!(
                    f,
                    "  for x in {:?} (indexed: src += {}, dst += {})",
                    ix.extents,
                    show(&ix.src),
                    show(&ix.dst)
                )?;
                indent += 1;
            }
            let staged = r.stage_bytes(self.elem_size).map(|bytes| {
                let runs = match r.kernel {
                    Kernel::Transpose { a, .. } if !r.staged_loop => a.extent,
                    _ => 1,
                };
                format!(
                    "staged in a {bytes}-byte buffer, {} out as {runs} run(s) of {} bytes:",
                    if r.streamed { "streamed" } else { "copied" },
                    bytes / runs
                )
            });
            for (k, l) in r.loops.iter().enumerate() {
                if r.staged_loop && k + 1 == r.loops.len() {
                    if let Some(line) = &staged {
                        writeln!(f, "{}{line}", "  ".repeat(indent))?;
                    }
                }
                writeln!(
                    f,
                    "{}for {} (src += {}, dst += {})",
                    "  ".repeat(indent),
                    l.extent,
                    l.src_stride,
                    l.dst_stride
                )?;
                indent += 1;
            }
            let pad = "  ".repeat(indent);
            if let (false, Some(line)) = (r.staged_loop, &staged) {
                writeln!(f, "{pad}{line}")?;
            }
            match r.kernel {
                Kernel::Element => writeln!(f, "{pad}move 1 element")?,
                Kernel::Copy { len } if r.streamed => writeln!(
                    f,
                    "{pad}copy {len} contiguous elements ({} bytes, streaming stores)",
                    len * self.elem_size
                )?,
                Kernel::Copy { len } => writeln!(
                    f,
                    "{pad}copy {len} contiguous elements ({} bytes, 16-byte vectors)",
                    len * self.elem_size
                )?,
                Kernel::Transpose { a, b, lanes } => writeln!(
                    f,
                    "{pad}transpose {lanes}x{lanes} register tiles{}: a {} (src += 1, dst += {}) x b {} (src += {}, dst += 1)",
                    if r.across { " across source rows" } else { "" },
                    a.extent, a.dst_stride, b.extent, b.src_stride
                )?,
                Kernel::Zip { short, long, lanes } => writeln!(
                    f,
                    "{pad}zip {} strips of {} in registers ({lanes} lanes): strips at src += {}, interleaved into dst",
                    short.extent, long.extent, short.src_stride
                )?,
                Kernel::Unzip { short, long, lanes } => writeln!(
                    f,
                    "{pad}unzip {} interleaved strips of {} in registers ({lanes} lanes): strips to dst += {}",
                    short.extent, long.extent, short.dst_stride
                )?,
            }
        }
        Ok(())
    }
}
