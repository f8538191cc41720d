//! The plan IR: what a relayout does, as types a reader meets first.
//!
//! A [`Plan`] is a list of [`Region`]s. A region is a loop nest over a box of the logical index
//! space: an optional [`Indexed`] loop (dims whose offsets need division and modulo), then affine
//! [`Loop`]s, outermost first, then one [`Kernel`]. Each kernel variant carries how it writes
//! the destination as an enum of its own ([`CopyWrite`], [`TransposeWrite`], [`ZipWrite`],
//! [`UnzipWrite`]), so every way of writing the planner can choose is one value and no other can
//! be written; a loop that a kernel consumes whole (the rows of a streamed copy, the steps of a
//! staged run) belongs to the kernel, not to the region's loops.
//!
//! The outermost loop of each region (the indexed loop, or the first affine loop) is the unit of
//! work that threads share: the generated function runs a range of the plan's
//! [`work`](Plan::work), the outer loops of all regions one after another.
//!
//! ```
//! use relayout::plan::{Kernel, Plan, TransposeWrite};
//! use relayout::Layout;
//!
//! let plan = Plan::new(&Layout::row_major(&[64, 32])?, &Layout::col_major(&[64, 32])?, 4)?;
//! let Kernel::Transpose { tile, write } = plan.regions()[0].kernel else { panic!() };
//! assert_eq!((tile.lanes, tile.a.src_stride, tile.b.dst_stride), (4, 1, 1));
//! assert_eq!(write, TransposeWrite::InPlace);
//! # Ok::<(), relayout::Error>(())
//! ```

use super::tactics::Blocking;
use crate::convert::{Conversion, PerIndex};
use crate::layout::{Digit, Source, Swizzle};
use crate::target::Target;

/// One iteration dimension: `extent` steps of `src_stride` and `dst_stride` elements, and of
/// `index_stride` along the dim of a per-index affine map ([`Plan::per_index`]; 0 for loops
/// over other dims, and in plans without one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Loop {
    /// Number of iterations.
    pub extent: usize,
    /// Source elements between consecutive iterations.
    pub src_stride: i64,
    /// Destination elements between consecutive iterations.
    pub dst_stride: i64,
    /// Steps of the per-index map's dim between consecutive iterations.
    pub index_stride: i64,
}

impl Loop {
    /// A loop of `extent` steps along which both sides are contiguous.
    pub const fn contiguous(extent: usize) -> Loop {
        Loop {
            extent,
            src_stride: 1,
            dst_stride: 1,
            index_stride: 0,
        }
    }

    /// This loop with another extent.
    pub const fn with_extent(self, extent: usize) -> Loop {
        Loop { extent, ..self }
    }

    /// `steps` steps of this loop as one step of a new loop of `extent` iterations.
    pub const fn stepping(self, steps: usize, extent: usize) -> Loop {
        Loop {
            extent,
            src_stride: self.src_stride * steps as i64,
            dst_stride: self.dst_stride * steps as i64,
            index_stride: self.index_stride * steps as i64,
        }
    }
}

/// The innermost operation of a region, with how it writes the destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// Move one element.
    Element,
    /// Copy `len` elements that are contiguous on both sides.
    Copy {
        /// Elements per copy.
        len: usize,
        /// Steps of the per-index map's dim from one element of the copy to the next (0
        /// without a per-index map).
        index_stride: i64,
        /// How the copy writes.
        write: CopyWrite,
    },
    /// Transpose `lanes × lanes` register tiles.
    Transpose {
        /// The two loops and the walk over the tiles.
        tile: TransposeTile,
        /// Where the tiles are stored.
        write: TransposeWrite,
    },
    /// Interleave `short.extent` strips in registers (see [`ZipTile`]): each strip runs along
    /// `long`, contiguous in the source; the destination holds the strips interleaved.
    Zip {
        /// The strips.
        tile: ZipTile,
        /// Where the interleaved runs are stored.
        write: ZipWrite,
    },
    /// The inverse of [`Kernel::Zip`]: the source holds the strips interleaved, the destination
    /// each strip contiguously along `long`.
    Unzip {
        /// The strips.
        tile: ZipTile,
        /// Where the strips are stored.
        write: UnzipWrite,
    },
}

/// How a contiguous copy writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CopyWrite {
    /// 16-byte vector loads and stores, unrolled.
    Stored,
    /// Streaming stores: the runs of `rows` (one copy per step; a single run when `rows.extent`
    /// is 1) go to the runtime's streaming routine as the rows of one call.
    Streamed {
        /// The rows of one call.
        rows: Loop,
        /// How the routine reads rows of two pages or more.
        reads: LongReads,
    },
    /// Ordinary stores by the runtime's row routine, which asks for the lines of source and
    /// destination a little ahead of its loads and stores ([`LargeWrites::Prefetched`]): the
    /// runs of `rows` as the rows of one call, as [`CopyWrite::Streamed`].
    ///
    /// [`LargeWrites::Prefetched`]: crate::plan::LargeWrites::Prefetched
    Prefetched {
        /// The rows of one call.
        rows: Loop,
    },
}

/// How the runtime's streaming routine reads a streamed copy's rows of two pages or more.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LongReads {
    /// Each row in order (the default: robust wherever the destination lies against the
    /// source; see the runtime's `stream_lines`).
    InOrder,
    /// Four pages side by side, a few lines of each in turn ([`LargeWrites::StreamedInPieces`],
    /// rows of two pages or more).
    ///
    /// [`LargeWrites::StreamedInPieces`]: crate::plan::LargeWrites::StreamedInPieces
    PagesSideBySide,
}

/// The loops of a transpose: `a` is contiguous in the source (`a.src_stride == 1`), `b` in the
/// destination (`b.dst_stride == 1`). Loads run along `a`, stores along `b`; the parts of `a`
/// and `b` beyond whole tiles move element by element.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TransposeTile {
    /// The source-contiguous loop.
    pub a: Loop,
    /// The destination-contiguous loop.
    pub b: Loop,
    /// Elements per vector.
    pub lanes: usize,
    /// The order in which the register tiles of a block are visited.
    pub walk: Walk,
    /// How many blocks ahead along the region's innermost loop a staged block prefetches its
    /// source (1 to [`Blocking::MAX_PREFETCH_AHEAD`]; see [`Region::prefetch_step`]).
    ///
    /// [`Blocking::MAX_PREFETCH_AHEAD`]: crate::plan::Blocking::MAX_PREFETCH_AHEAD
    pub prefetch_ahead: usize,
    /// For how many consecutive blocks one prefetch asks at a time (1 to
    /// [`Blocking::MAX_PREFETCH_GROUP`]; see [`Region::prefetch_group`]).
    ///
    /// [`Blocking::MAX_PREFETCH_GROUP`]: crate::plan::Blocking::MAX_PREFETCH_GROUP
    pub prefetch_group: usize,
}

/// The order in which a transpose visits its register tiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Walk {
    /// Along the source rows: tiles along `b` in the outer loop, along `a` inside (blocks only a
    /// few tiles across along `b` go across either way).
    #[default]
    Along,
    /// Across the source rows: each step of the outer tile loop (along `a`) finishes whole
    /// destination runs and reads a little of every source row of the block.
    Across,
}

/// Where a transpose stores its tiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TransposeWrite {
    /// Each register tile straight to its place in the destination.
    InPlace,
    /// As [`TransposeWrite::InPlace`], each destination row a tile stores asking for the line 2
    /// KiB further along that row to be read for writing, so that the lines the next blocks
    /// store into are on their way when those blocks come (by the runtime's block transpose,
    /// for 4- and 8-byte elements that move as they are, where the CPU has AVX; elsewhere, and
    /// for the elements past the whole tiles, stored as [`TransposeWrite::InPlace`] stores
    /// them). Large writes [`Prefetched`](crate::plan::LargeWrites::Prefetched) write the
    /// in-place blocks of large destinations this way.
    Prefetched,
    /// Each register tile straight to its place in the destination with streaming stores of
    /// whole cache lines (tiles 64 bytes wide along `b`, of 4- and 8-byte elements, where the
    /// CPU has AVX): a line of each destination row at a time, or where the rows are a line
    /// long and follow one another, the lines they cover, each put together from two rows
    /// where the destination starts part-way into a line; elsewhere, and for the elements past
    /// the whole tiles, stored as [`TransposeWrite::InPlace`] stores them.
    Streamed,
    /// The whole block into the staging buffer, one row per destination run, then the runs out
    /// one after another.
    Staged(Flush),
    /// As [`TransposeWrite::Staged`] with [`Flush::Streamed`], for destination rows that are not
    /// whole cache lines apart, so that the runs of most rows start and end inside a line: the
    /// lines where this block's runs meet the runs of the blocks before and after it along `b`
    /// are written whole, by one of the two, with streaming stores, instead of in part by both
    /// with ordinary stores (each of which first reads the line from memory).
    Joined(Join),
}

/// How the runs of a [`TransposeWrite::Joined`] block meet the runs beside them along `b` (and
/// those of an [`UnzipWrite::JoinedStrips`] unzip the runs beside them along `long`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Join {
    /// Where each run starts.
    pub head: RunHead,
    /// Where each run ends.
    pub tail: RunTail,
}

/// How a joined run treats the line it starts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RunHead {
    /// Its part of that line with ordinary stores: the first run of each destination row.
    Stored,
    /// Not at all: the run before it (the block one step back along `b`, the unzip one step
    /// back along `long`) writes that line whole.
    Joined,
}

/// How a joined run treats the line it ends in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RunTail {
    /// Its part of that line with ordinary stores: the last run of a row, and the run before
    /// one too short to lend it a line.
    Stored,
    /// The whole line, streamed: the block transposes (the unzip unzips) `extension` more
    /// elements along `b` (`long`): a cache line's worth, which the next one moves again, into
    /// the staging buffer, and each run goes on to the end of the line the next run starts in.
    Joined {
        /// Elements along `b` (`long`) the kernel reads past its own.
        extension: usize,
    },
}

impl Join {
    /// Elements along `b` (`long`) the block (the unzip) reads past its own.
    pub fn extension(self) -> usize {
        match self.tail {
            RunTail::Stored => 0,
            RunTail::Joined { extension } => extension,
        }
    }
}

/// How a staged block leaves the staging buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Flush {
    /// One call of the runtime's routine that copies rows with ordinary stores.
    Copied,
    /// One call of the runtime's streaming routine.
    Streamed,
}

/// The loops of a zip or unzip. For a zip, `long` is contiguous in the source
/// (`long.src_stride == 1`) and the destination interleaves the strips
/// (`short.dst_stride == 1`, `long.dst_stride == short.extent`); an unzip is the mirror image
/// (`short.src_stride == 1`, `long.src_stride == short.extent`, `long.dst_stride == 1`). A
/// vector of each strip is loaded and whole vectors of the other side stored; no lane crosses
/// into another strip's register.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ZipTile {
    /// The short loop of strips ([`ZipTile::interleaves`]), contiguous on the
    /// interleaved side.
    pub short: Loop,
    /// The long loop along each strip.
    pub long: Loop,
    /// Elements per vector.
    pub lanes: usize,
}

impl ZipTile {
    /// Whether the planner zips or unzips `k` strips of `lanes`-element vectors: 2 to `lanes`,
    /// and with 4 lanes or fewer (elements of 4 bytes or more in 16-byte vectors) up to one
    /// short of twice the lanes, where a transpose's square tiles would overlap. On a 2-core
    /// Intel Xeon VM (family 6, model 85), NHWC → NCHW of 32 × 224² pixels (`relayout bench`,
    /// tuned, two alternating rounds) ran at 0.96–0.97 of memcpy in tiles and 1.03–1.07
    /// unzipped with 5 f32 channels, 1.01 and 1.05–1.06 with 6, 1.01 and 1.05–1.07 with 7, 0.97
    /// and 1.15 with 3 f64 channels; 2-byte elements unzipped past their lanes ran no faster (9
    /// channels) or slower (10: 0.97 against 0.92). Zips of 6 and 7 f32 strips ran slower than
    /// the tiles of then on that VM (NCHW → NHWC 1.13 against 1.18–1.21 of memcpy, 1.10–1.12
    /// against 1.18–1.19); on a 2-core AMD EPYC (Zen 4) VM, against today's tiles (streamed
    /// whole lines at a time), zips of 5 to 7 f32 channels of 224² moved 16.5–21.5 GB/s against
    /// 8.9–10.6 untuned, 14.1–20.0 against 11.9–14.3 tuned (tuning in 53–67 ms against
    /// 293–394) and 19.2–25.1 against 13.6–22.3 on two threads (`relayout bench`, two
    /// alternating runs of each build).
    ///
    /// ```
    /// use relayout::plan::ZipTile;
    ///
    /// assert!(ZipTile::interleaves(7, 4) && !ZipTile::interleaves(8, 4));
    /// assert!(ZipTile::interleaves(8, 8) && !ZipTile::interleaves(9, 8));
    /// ```
    pub const fn interleaves(k: usize, lanes: usize) -> bool {
        k >= 2 && (k <= lanes || (lanes <= 4 && k < 2 * lanes))
    }

    /// Whether the shuffle networks take `k` strips of `lanes`-element vectors (2 to one short
    /// of twice the lanes, the counts they are built and tested for): what a plan may ask of
    /// them, of which [`ZipTile::interleaves`] chooses the faster.
    pub const fn shuffles(k: usize, lanes: usize) -> bool {
        k >= 2 && k < 2 * lanes
    }

    /// Elements of one tile: every strip whole.
    pub fn elements(&self) -> usize {
        self.short.extent * self.long.extent
    }

    /// The same tile over `extent` steps of its long loop (a chunk of the run).
    pub const fn with_long_extent(self, extent: usize) -> ZipTile {
        ZipTile {
            long: self.long.with_extent(extent),
            ..self
        }
    }
}

/// Where a zip stores its interleaved run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ZipWrite {
    /// Vector stores straight to the destination.
    InPlace,
    /// As [`ZipWrite::InPlace`], asking ahead: before every [`ASK_GROUPS`] groups of
    /// `tile.lanes` steps, one call of the runtime asks for the lines of destination those
    /// groups store, 2 KiB further along, to be written (large writes
    /// [`Prefetched`](crate::plan::LargeWrites::Prefetched), runs of at least twice that).
    Prefetched,
    /// The interleaved run into the staging buffer, then streamed out by one call.
    StreamedTile,
    /// The zips of `steps`, whose interleaved runs continue one another in the destination
    /// (`steps.dst_stride` is the tile's element count), into the staging buffer, then the
    /// joined run streamed out by one call.
    StreamedRun {
        /// The steps staged together.
        steps: Loop,
        /// Into how many equal pieces the steps are cut, read side by side (see
        /// [`Kernel::pieces`]); 1 reads them in order.
        pieces: usize,
    },
}

/// Where an unzip stores its strips.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnzipWrite {
    /// Vector stores straight to the destination.
    InPlace,
    /// As [`UnzipWrite::InPlace`], asking ahead as [`ZipWrite::Prefetched`] does, in each
    /// strip.
    Prefetched,
    /// The unzips of `steps`, whose destination blocks continue one another (see
    /// [`ZipWrite::StreamedRun`]), into the staging buffer, then streamed out by one call.
    StreamedRun {
        /// The steps staged together.
        steps: Loop,
        /// Into how many equal pieces the steps are cut, read side by side (see
        /// [`Kernel::pieces`]); 1 reads them in order.
        pieces: usize,
    },
    /// The strips into the staging buffer, one row of `long.extent` elements per strip, then
    /// streamed out by one call as `short.extent` rows `short.dst_stride` apart: for strips
    /// that land far apart (planes of NCHW from few-channel NHWC).
    StreamedStrips,
    /// As [`UnzipWrite::StreamedStrips`], for strips that are not whole cache lines apart (planes
    /// of an odd size), so that most runs start and end inside a line: the runs meet the runs of
    /// the unzips before and after them along `long` as a [`TransposeWrite::Joined`] block's
    /// meet the blocks' beside it along `b`, each shared line written whole by one of the two,
    /// with streaming stores. The strips are unzipped `extension` elements further along `long`
    /// into rows that much longer.
    JoinedStrips(Join),
}

impl Kernel {
    /// The loops the kernel iterates inside itself, outermost first: the rows of a streamed
    /// copy and its run, a transpose's two loops, the staged steps of a zip or unzip and its two
    /// loops. Those loops around [`Kernel::Element`] move the same elements in the same places.
    pub fn loops(&self) -> Vec<Loop> {
        match *self {
            Kernel::Element => Vec::new(),
            Kernel::Copy {
                len,
                index_stride,
                write,
            } => vec![
                write.rows(),
                Loop {
                    index_stride,
                    ..Loop::contiguous(len)
                },
            ],
            Kernel::Transpose { tile, .. } => vec![tile.b, tile.a],
            Kernel::Zip { tile, write } => vec![write.steps(), tile.long, tile.short],
            Kernel::Unzip { tile, write } => vec![write.steps(), tile.long, tile.short],
        }
    }

    /// The loops that bound what the kernel reads and writes: its [`loops`](Kernel::loops),
    /// with `b` of a [`TransposeWrite::Joined`] transpose and `long` of an
    /// [`UnzipWrite::JoinedStrips`] unzip longer by their extension, which the kernel reads and
    /// into whose first line it may write.
    pub fn reach(&self) -> Vec<Loop> {
        match *self {
            Kernel::Transpose {
                tile,
                write: TransposeWrite::Joined(join),
            } => vec![tile.b.with_extent(tile.b.extent + join.extension()), tile.a],
            Kernel::Unzip {
                tile,
                write: UnzipWrite::JoinedStrips(join),
            } => vec![
                SINGLE,
                tile.long.with_extent(tile.long.extent + join.extension()),
                tile.short,
            ],
            _ => self.loops(),
        }
    }

    /// Elements the kernel moves each time it runs.
    pub fn elements(&self) -> usize {
        match *self {
            Kernel::Element => 1,
            Kernel::Copy { len, write, .. } => len * write.rows().extent,
            Kernel::Transpose { tile, .. } => tile.a.extent * tile.b.extent,
            Kernel::Zip { tile, write } => tile.elements() * write.steps().extent,
            Kernel::Unzip { tile, write } => tile.elements() * write.steps().extent,
        }
    }

    /// Elements of the staging buffer the kernel fills, if it stages.
    pub fn stage_elements(&self) -> Option<usize> {
        Some(match *self {
            Kernel::Transpose {
                tile,
                write: TransposeWrite::Staged(_),
            } => tile.a.extent * tile.b.extent,
            Kernel::Transpose {
                tile,
                write: TransposeWrite::Joined(join),
            } => tile.a.extent * (tile.b.extent + join.extension()),
            Kernel::Unzip {
                tile,
                write: UnzipWrite::JoinedStrips(join),
            } => tile.short.extent * (tile.long.extent + join.extension()),
            Kernel::Zip {
                tile,
                write: ZipWrite::StreamedTile,
            }
            | Kernel::Unzip {
                tile,
                write: UnzipWrite::StreamedStrips,
            } => tile.elements(),
            Kernel::Zip {
                tile,
                write: ZipWrite::StreamedRun { steps, .. },
            }
            | Kernel::Unzip {
                tile,
                write: UnzipWrite::StreamedRun { steps, .. },
            } => tile.elements() * steps.extent,
            _ => return None,
        })
    }

    /// Bytes of the staging buffer the kernel fills with elements of `elem_size` bytes, if it
    /// stages.
    pub fn stage_bytes(&self, elem_size: usize) -> Option<usize> {
        self.stage_elements().map(|n| n * elem_size)
    }

    /// Whether the kernel writes with streaming stores (through the runtime's routine).
    pub fn streams(&self) -> bool {
        matches!(
            self,
            Kernel::Copy {
                write: CopyWrite::Streamed { .. },
                ..
            } | Kernel::Transpose {
                write: TransposeWrite::Staged(Flush::Streamed)
                    | TransposeWrite::Joined(_)
                    | TransposeWrite::Streamed,
                ..
            } | Kernel::Zip {
                write: ZipWrite::StreamedTile | ZipWrite::StreamedRun { .. },
                ..
            } | Kernel::Unzip {
                write: UnzipWrite::StreamedRun { .. }
                    | UnzipWrite::StreamedStrips
                    | UnzipWrite::JoinedStrips(_),
                ..
            }
        )
    }

    /// Into how many pieces a staged zip or unzip cuts its steps (1 for every other kernel).
    /// Where the steps read one contiguous stream of source, a run of four pages is read as
    /// four pieces of a page side by side, a few lines of each in turn, so that the hardware
    /// prefetchers, which follow a stream only within its page, work on four pages at once
    /// (as the side-by-side streaming routine reads long rows; see `runtime`).
    pub fn pieces(&self) -> usize {
        match *self {
            Kernel::Zip {
                write: ZipWrite::StreamedRun { pieces, .. },
                ..
            }
            | Kernel::Unzip {
                write: UnzipWrite::StreamedRun { pieces, .. },
                ..
            } => pieces,
            _ => 1,
        }
    }
}

impl CopyWrite {
    /// The rows of one call: `rows` when the runtime's routine copies, a single run otherwise.
    pub fn rows(&self) -> Loop {
        match *self {
            CopyWrite::Stored => SINGLE,
            CopyWrite::Streamed { rows, .. } | CopyWrite::Prefetched { rows } => rows,
        }
    }
}

impl ZipWrite {
    /// The steps staged together, or a single step.
    pub fn steps(&self) -> Loop {
        match *self {
            ZipWrite::InPlace | ZipWrite::Prefetched | ZipWrite::StreamedTile => SINGLE,
            ZipWrite::StreamedRun { steps, .. } => steps,
        }
    }
}

impl UnzipWrite {
    /// The steps staged together, or a single step.
    pub fn steps(&self) -> Loop {
        match *self {
            UnzipWrite::InPlace
            | UnzipWrite::Prefetched
            | UnzipWrite::StreamedStrips
            | UnzipWrite::JoinedStrips(_) => SINGLE,
            UnzipWrite::StreamedRun { steps, .. } => steps,
        }
    }
}

/// How many groups of a zip's or unzip's `lanes` steps each call that asks ahead covers
/// ([`ZipWrite::Prefetched`]): 16, 256 bytes of each f32 strip. On a 2-core Intel Xeon VM
/// (family 6, model 85), in `relayout bench … --candidates` runs, complex f32 numbers split into
/// planes went from 1.09–1.12 of memcpy with ordinary stores to 1.14 asking every 16 groups,
/// 1.13–1.15 every 32 and 1.11 every 64, complex f64 from 1.10–1.11 to 1.15 (16 and 32), NCHW →
/// NHWC of 4 f32 channels from 1.12–1.13 to 1.19 (16) and 1.17 (32); NHWC → NCHW of 3 channels
/// stayed at 1.09–1.10 (16) and lost asking for more at once (1.06–1.08 every 32, 1.00 every 64).
pub const ASK_GROUPS: usize = 16;

/// A loop of one step that goes nowhere: what a kernel that consumes no loop runs over.
pub const SINGLE: Loop = Loop {
    extent: 1,
    src_stride: 0,
    dst_stride: 0,
    index_stride: 0,
};

/// One term of an offset computed with division and modulo:
/// `stride · (((Σ weight·x[dim] + shift) floordiv div) mod modulus)`, over the dims of an
/// [`Indexed`] loop (numbered by their position in it).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OffsetTerm {
    /// The `(dim, weight)` terms of the sum the digit reads.
    pub inputs: Vec<(usize, i64)>,
    /// Added to the sum before dividing.
    pub shift: i64,
    /// The divisor; at least 1.
    pub div: usize,
    /// The radix, or `None` for no modulo.
    pub modulus: Option<usize>,
    /// Elements between consecutive values.
    pub stride: i64,
    /// Whether the shifted sum is never negative over the loop's extents, so that division and
    /// modulo can be unsigned.
    pub nonnegative: bool,
}

impl OffsetTerm {
    /// The term's value, in elements, at the point `x` of the indexed dims.
    pub fn eval(&self, x: &[usize]) -> i128 {
        let sum: i128 = self
            .inputs
            .iter()
            .map(|&(d, w)| w as i128 * x[d] as i128)
            .sum();
        let v = (sum + self.shift as i128).div_euclid(self.div as i128);
        let v = match self.modulus {
            Some(m) => v.rem_euclid(m as i128),
            None => v,
        };
        self.stride as i128 * v
    }

    /// The term as a layout digit over the indexed dims (for its range and its text).
    pub(crate) fn digit(&self) -> Digit {
        Digit {
            source: Source::fused(self.inputs.iter().copied()),
            shift: self.shift,
            div: self.div,
            ext: self.modulus,
            stride: self.stride,
        }
    }
}

/// Dims iterated by one flat counter whose coordinates and offsets are computed with division
/// and modulo: the dims whose digits do not refine into strided loops, and every dim of a
/// swizzled layout whose digits the swizzle can change.
///
/// Each side's offset at a point is the sum of its terms, or, for a swizzled side,
/// `swizzle(base + Σ terms)` (see [`IndexedSwizzle`]); the region's base and loops add to it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Indexed {
    /// Extents of the indexed dims (local dim `k` is the `k`-th of these).
    pub extents: Vec<usize>,
    /// Source offset terms over the local dims.
    pub src: Vec<OffsetTerm>,
    /// Destination offset terms over the local dims.
    pub dst: Vec<OffsetTerm>,
    /// The swizzle of the source offset, if the source is swizzled.
    pub src_swizzle: Option<IndexedSwizzle>,
    /// The swizzle of the destination offset, if the destination is swizzled.
    pub dst_swizzle: Option<IndexedSwizzle>,
    /// The local dim that is the per-index map's dim, if that dim is indexed: its coordinate
    /// is the point's index along the map's dim.
    pub index: Option<usize>,
}

/// The swizzle of one side of an [`Indexed`] loop: that side's indexed offset is
/// `swizzle(base + Σ terms)`, in elements, where `base` is the layout's base (the region's base
/// then holds only what lies outside the swizzle: the buffer start and the loops' origin).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IndexedSwizzle {
    /// The layout's swizzle.
    pub swizzle: Swizzle,
    /// Added to the terms before the swizzle.
    pub base: i64,
}

impl IndexedSwizzle {
    /// `swizzle(base + sum)`.
    pub fn apply(&self, sum: i128) -> i128 {
        // The planner's offsets are bounded by MAX_OFFSET, far inside i64.
        self.swizzle.apply((self.base as i128 + sum) as i64) as i128
    }
}

impl Indexed {
    /// Number of points the indexed loop visits.
    pub fn count(&self) -> usize {
        self.extents.iter().product()
    }

    /// The source and destination offsets, in elements, at the point `x` of the indexed dims:
    /// the sum of each side's terms, swizzled where that side is.
    pub fn offsets(&self, x: &[usize]) -> (i128, i128) {
        (
            side_offset(&self.src, self.src_swizzle, x),
            side_offset(&self.dst, self.dst_swizzle, x),
        )
    }
}

/// One side's offset at `x`: its terms summed, then swizzled if it has a swizzle.
fn side_offset(terms: &[OffsetTerm], swizzle: Option<IndexedSwizzle>, x: &[usize]) -> i128 {
    let sum: i128 = terms.iter().map(|t| t.eval(x)).sum();
    match swizzle {
        Some(s) => s.apply(sum),
        None => sum,
    }
}

/// Sub-byte elements packed several to a byte, in XLA's bit order (see [`crate::packing`]).
///
/// A packed plan's offsets count elements. Its kernels move whole bytes where every offset they
/// start from is a whole number of bytes (copies of whole bytes; for 4-bit elements,
/// transposes of nibble pairs), and single elements, read-modify-write, elsewhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Packed {
    bits: u32,
}

impl Packed {
    /// Two 4-bit elements to a byte (`s4`, `u4`, `f4e2m1fn`).
    pub const FOUR_BITS: Packed = Packed { bits: 4 };
    /// Four 2-bit elements to a byte (`s2`, `u2`).
    pub const TWO_BITS: Packed = Packed { bits: 2 };
    /// The tile of a transpose of 4-bit elements, in elements along its source-contiguous
    /// loop `a` and its destination-contiguous loop `b`: 16 source row pairs of 8 bytes make 16
    /// destination rows of 16 bytes.
    pub const TRANSPOSE_TILE: (usize, usize) = (16, 32);

    /// Elements of `bits` bits (2 or 4).
    pub fn new(bits: u32) -> crate::error::Result<Packed> {
        crate::packing::check_bits(bits)?;
        Ok(Packed { bits })
    }

    /// Bits per element.
    pub fn bits(&self) -> u32 {
        self.bits
    }

    /// Elements per byte.
    pub fn per_byte(&self) -> usize {
        crate::packing::per_byte(self.bits)
    }

    /// Bytes that hold `elements` elements.
    pub fn bytes_for(&self, elements: usize) -> usize {
        crate::packing::bytes_for(elements, self.bits)
    }
}

/// A loop nest over a box of the index space.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Region {
    /// Source buffer index (elements from the start of the slice) of the region's first element.
    pub src_base: i64,
    /// Destination buffer index of the region's first element.
    pub dst_base: i64,
    /// Index along the per-index map's dim of the region's first element (0 without one).
    pub index_base: i64,
    /// An outermost loop over dims that need div/mod, if any.
    pub indexed: Option<Indexed>,
    /// Affine loops, outermost first.
    pub loops: Vec<Loop>,
    /// The innermost operation.
    pub kernel: Kernel,
}

impl Region {
    /// Bytes of the staging buffer the region fills, if its kernel stages.
    pub fn stage_bytes(&self, elem_size: usize) -> Option<usize> {
        self.kernel.stage_bytes(elem_size)
    }

    /// Whether the code asks the CPU for a later block's source while it writes this one out:
    /// a staged transpose inside a loop that moves along the source (the runtime's prefetching
    /// routine, called between filling the stage and flushing it).
    pub fn prefetches(&self) -> bool {
        self.prefetch_step().is_some()
    }

    /// Where the prefetched block's source starts, in source elements from this block's, when
    /// the code prefetches ([`Region::prefetches`]): the innermost loop's source stride times
    /// the tile's [`prefetch_ahead`](TransposeTile::prefetch_ahead) (prefetches past the loop's
    /// end ask for memory the loop does not read, which is harmless: a prefetch never faults).
    pub fn prefetch_step(&self) -> Option<i64> {
        let Kernel::Transpose {
            tile,
            write: TransposeWrite::Staged(_) | TransposeWrite::Joined(_),
        } = self.kernel
        else {
            return None;
        };
        let step = self.loops.last()?.src_stride;
        (step != 0).then_some(step.saturating_mul(tile.prefetch_ahead as i64))
    }

    /// For how many blocks one prefetch asks, when the code prefetches ([`Region::prefetches`]):
    /// the tile's [`prefetch_group`](TransposeTile::prefetch_group) where the innermost loop
    /// steps along the source rows by whole blocks (each block's source continues the one
    /// before it, so that `n` blocks' rows are runs `n` times as long), else 1. The blocks whose
    /// prefetched source starts on a multiple of the group's bytes ask for the group (counted
    /// from address 0, so that one of every `n` consecutive blocks does), the others for
    /// nothing.
    pub fn prefetch_group(&self) -> usize {
        match (self.kernel, self.loops.last()) {
            (Kernel::Transpose { tile, .. }, Some(l))
                if self.prefetches() && l.src_stride == tile.a.extent as i64 =>
            {
                tile.prefetch_group.max(1)
            }
            _ => 1,
        }
    }

    /// Iterations of the outermost loop: the unit in which work is split between threads.
    pub fn outer_extent(&self) -> usize {
        match (&self.indexed, self.loops.first()) {
            (Some(ix), _) => ix.count(),
            (None, Some(l)) => l.extent,
            (None, None) => 1,
        }
    }

    /// Elements the region moves.
    pub fn elements(&self) -> usize {
        let indexed = self.indexed.as_ref().map_or(1, Indexed::count);
        let loops: usize = self.loops.iter().map(|l| l.extent).product();
        indexed * loops * self.kernel.elements()
    }
}

/// The loop nests that move every element of a source layout to its place in a destination
/// layout, for one [`Target`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Plan {
    pub(super) elem_size: usize,
    /// How elements pack into bytes, for sub-byte elements (then offsets count elements and
    /// `elem_size` is 1).
    pub(super) packed: Option<Packed>,
    /// The conversion of every element on the way, if the types differ.
    pub(super) conversion: Option<Conversion>,
    /// The per-index affine map on the way, if any (then `conversion` is set).
    pub(super) per_index: Option<PerIndex>,
    pub(super) src_len: usize,
    pub(super) dst_len: usize,
    pub(super) elements: usize,
    pub(super) target: Target,
    pub(super) regions: Vec<Region>,
    /// The blocking of the transpose that moves the most elements, if the plan transposes.
    /// Plans compare by what they move and how, not by this: the engine keys kernels by plan,
    /// and tuning measures only candidates whose plans differ, so two blockings that cut a
    /// transpose into the same loops make one plan.
    pub(super) blocking: NotCompared<Option<Blocking>>,
}

/// A value a plan carries for the record that its comparisons and hash leave out (every two are
/// equal).
#[derive(Debug, Clone, Copy)]
pub(super) struct NotCompared<T>(pub(super) T);

impl<T> PartialEq for NotCompared<T> {
    fn eq(&self, _: &NotCompared<T>) -> bool {
        true
    }
}

impl<T> Eq for NotCompared<T> {}

impl<T> std::hash::Hash for NotCompared<T> {
    fn hash<H: std::hash::Hasher>(&self, _: &mut H) {}
}

impl Plan {
    /// Bytes per source element (and per destination element, unless the plan converts).
    pub fn elem_size(&self) -> usize {
        self.elem_size
    }

    /// How the elements pack into bytes, if they are sub-byte elements several to a byte
    /// (then [`Plan::src_len`] and [`Plan::dst_len`] count elements, not bytes).
    pub fn packing(&self) -> Option<Packed> {
        self.packed
    }

    /// Bytes the source buffer must hold: [`Plan::src_len`] elements, packed if they pack.
    pub fn src_bytes(&self) -> usize {
        self.bytes_of(self.src_len, self.elem_size)
    }

    /// Bytes the destination buffer must hold.
    pub fn dst_bytes(&self) -> usize {
        self.bytes_of(self.dst_len, self.dst_elem_size())
    }

    fn bytes_of(&self, elements: usize, size: usize) -> usize {
        match self.packed {
            Some(p) => p.bytes_for(elements),
            None => elements.saturating_mul(size),
        }
    }

    /// Whether threads may split the plan's work: always, unless the plan packs sub-byte
    /// elements and moves some of them one at a time (a byte may then hold elements of two
    /// outer iterations, and the read-modify-write of one thread would undo the other's).
    pub fn splits_by_bytes(&self) -> bool {
        self.packed.is_none_or(|_| {
            self.regions.iter().all(|r| match r.kernel {
                Kernel::Copy { .. } => true,
                // The packed transpose moves whole tiles; beyond them, elements one by one.
                Kernel::Transpose { tile, .. } => {
                    let (along_a, along_b) = Packed::TRANSPOSE_TILE;
                    tile.a.extent % along_a == 0 && tile.b.extent % along_b == 0
                }
                Kernel::Element | Kernel::Zip { .. } | Kernel::Unzip { .. } => false,
            })
        })
    }

    /// The blocking the plan's transposes are cut by (of the one that moves the most elements,
    /// if its regions transpose by different ones), `None` if it does not transpose: the
    /// tactics' fixed blocking, or the one fitted to the transpose's rows
    /// ([`Tiling::blocking`](super::Tiling::blocking)).
    ///
    /// ```
    /// use relayout::plan::{Blocking, Plan, Tactics, Tiling};
    /// use relayout::{Layout, Target};
    ///
    /// let (src, dst) = (Layout::row_major(&[256, 256])?, Layout::col_major(&[256, 256])?);
    /// let host = Target::host();
    /// // Rows of 1 KiB each way, 256 KiB written: a blocking fitted to them, not streamed.
    /// let fitted = Tiling::Fitted.blocking(4, 1024, 1024, 256 << 10, false, host);
    /// assert_eq!(Plan::new(&src, &dst, 4)?.blocking(), Some(fitted));
    /// let long_runs = Tactics::fixed(Blocking::LONG_RUNS);
    /// let plan = Plan::with_tactics(&src, &dst, 4, long_runs, host)?;
    /// assert_eq!(plan.blocking(), Some(Blocking::LONG_RUNS));
    /// // A copy has no blocks.
    /// assert_eq!(Plan::new(&src, &src, 4)?.blocking(), None);
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn blocking(&self) -> Option<Blocking> {
        self.blocking.0
    }

    /// Bytes per destination element.
    pub fn dst_elem_size(&self) -> usize {
        self.conversion
            .map_or(self.elem_size, |c| c.to_type().size())
    }

    /// The conversion each element goes through on the way, if the plan converts.
    pub fn conversion(&self) -> Option<Conversion> {
        self.conversion
    }

    /// The per-index affine map each element goes through on the way, if any: each loop's
    /// [`index_stride`](Loop::index_stride), each region's
    /// [`index_base`](Region::index_base) and the indexed loops' [`index`](Indexed::index)
    /// track the index along its dim.
    pub fn per_index(&self) -> Option<&PerIndex> {
        self.per_index.as_ref()
    }

    /// Elements the source buffer must hold.
    pub fn src_len(&self) -> usize {
        self.src_len
    }

    /// Elements the destination buffer must hold.
    pub fn dst_len(&self) -> usize {
        self.dst_len
    }

    /// Elements of the logical tensor: what the plan moves, each exactly once.
    pub fn elements(&self) -> usize {
        self.elements
    }

    /// The machine the plan was made for.
    pub fn target(&self) -> Target {
        self.target
    }

    /// The regions, in the order the generated code runs them.
    pub fn regions(&self) -> &[Region] {
        &self.regions
    }

    /// Total outer iterations over all regions: the range the generated function takes.
    pub fn work(&self) -> usize {
        self.regions.iter().map(Region::outer_extent).sum()
    }

    /// Where `parts` threads split [`Plan::work`] so that each moves about as many elements:
    /// `parts + 1` ascending bounds from 0 to the work (`parts` 0 counts as 1). Outer iterations of different regions
    /// move different amounts (the whole blocks of a transpose against its leftover strips), so
    /// equal counts of iterations would leave one thread most of the work.
    ///
    /// ```
    /// use relayout::{plan::Plan, Layout};
    ///
    /// // 8000 columns: 31 strips of 256 in one region, 64 leftover columns in another.
    /// let src = Layout::row_major(&[8000, 8000])?;
    /// let plan = Plan::new(&src, &Layout::col_major(&[8000, 8000])?, 1)?;
    /// let bounds = plan.balanced_split(2);
    /// assert_eq!((bounds[0], bounds[2]), (0, plan.work()));
    /// assert!(bounds[1] < plan.work() / 2); // the big iterations come first
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn balanced_split(&self, parts: usize) -> Vec<usize> {
        let parts = parts.max(1);
        // Elements moved by each outer iteration, region by region.
        let per_iteration: Vec<(usize, usize)> = self
            .regions
            .iter()
            .map(|r| {
                let n = r.outer_extent();
                (n, r.elements() / n.max(1))
            })
            .collect();
        let total: u128 = per_iteration
            .iter()
            .map(|&(n, each)| n as u128 * each as u128)
            .sum();
        let mut bounds = vec![0];
        let (mut done_work, mut done_elements) = (0usize, 0u128);
        let mut regions = per_iteration.iter().peekable();
        for t in 1..parts {
            let goal = total * t as u128 / parts as u128;
            // Whole regions that end before the goal, then iterations of the one it falls in.
            while let Some(&&(n, each)) = regions.peek() {
                let region = n as u128 * each as u128;
                if done_elements + region > goal {
                    let steps = (goal - done_elements) / (each.max(1) as u128);
                    bounds.push(done_work + steps as usize);
                    break;
                }
                (done_work, done_elements) = (done_work + n, done_elements + region);
                regions.next();
            }
            if bounds.len() <= t {
                bounds.push(done_work);
            }
        }
        bounds.push(self.work());
        for i in 1..bounds.len() {
            bounds[i] = bounds[i].max(bounds[i - 1]);
        }
        bounds
    }

    /// Whether some kernel writes with streaming stores (which a run must fence afterwards).
    pub fn streams(&self) -> bool {
        self.regions.iter().any(|r| r.kernel.streams())
    }

    /// Bytes of the largest staging buffer any region fills.
    pub fn stage_bytes(&self) -> Option<usize> {
        self.regions
            .iter()
            .filter_map(|r| self.region_stage_bytes(r))
            .max()
    }

    /// Bytes of the staging buffer `region` fills with destination elements, if its kernel
    /// stages (packed elements counted as the bytes they fill).
    pub fn region_stage_bytes(&self, region: &Region) -> Option<usize> {
        let elements = region.kernel.stage_elements()?;
        Some(self.bytes_of(elements, self.dst_elem_size()))
    }
}
