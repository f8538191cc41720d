//! The choices the planner leaves to the caller or to tuning: how transposes are cut into blocks
//! and how they store them ([`Tiling`], [`Blocking`]), whether copies, zips and unzips into
//! large destinations stream ([`LargeWrites`]), and in which order the loops around the kernels
//! run ([`LoopOrder`]); the default of each, and the candidates that tuning measures against
//! each other.

use std::fmt;
use std::str::FromStr;

use super::ir::Walk;
use crate::error::{Error, Result};
use crate::target::Target;

/// Everything the planner may be told to choose one way or another.
///
/// ```
/// use relayout::plan::{LargeWrites, LoopOrder, Tactics, Tiling};
///
/// let default = Tactics::default();
/// assert_eq!(default.tiling, Tiling::Fitted);
/// assert_eq!(default.large_writes, LargeWrites::Streamed);
/// assert_eq!(default.order, LoopOrder::Fitted);
/// assert_eq!(Tactics::CANDIDATES[0], default);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Tactics {
    /// How transposes are cut into blocks.
    pub tiling: Tiling,
    /// How copies, zips and unzips write destinations of at least the target's
    /// [`stream_min_bytes`](Target::stream_min_bytes).
    pub large_writes: LargeWrites,
    /// In which order the loops around the kernels run.
    pub order: LoopOrder,
}

/// In which order the loops around a kernel run, from outermost to innermost: the loops of the
/// layouts' dims outside the kernel and, around a transpose, the loops over its macro blocks
/// (strips of destination runs, blocks along the source runs). The loops inside a macro block
/// keep their order (strips outside blocks), and so does an element move's innermost loop.
///
/// Which order is fastest depends on the shapes and the machine, as HPTT's measured search over
/// loop orders shows; on a 2-core AMD EPYC (Zen 4) VM, NHWC → NCHW of 64 f32 channels in blocks
/// of 512-byte runs along the source rows ran at 0.25–0.60 of memcpy with the blocks in strips
/// and at 0.96–1.02 band by band of destination rows (the destination's order; three and
/// four runs), while the (0,2,1) permutation of 64 × 512² f32 went the other way (0.66–0.74
/// against 0.58–0.64).
///
/// ```
/// use relayout::plan::{LoopOrder, Plan, Tactics};
/// use relayout::{Layout, Target};
///
/// // Attention heads (B, S, H, D) → (B, H, S, D): copies of D elements, in the order of the
/// // source's dims or of the destination's.
/// let src = Layout::from_strides(&[2, 64, 8, 16], &[8192, 128, 16, 1])?;
/// let dst = Layout::from_strides(&[2, 64, 8, 16], &[8192, 16, 1024, 1])?;
/// let with = |order| Tactics { order, ..Tactics::default() };
/// let host = Target::host();
/// let by_source = Plan::with_tactics(&src, &dst, 4, with(LoopOrder::Source), host)?;
/// let by_destination = Plan::with_tactics(&src, &dst, 4, with(LoopOrder::Destination), host)?;
/// // Innermost outer loop: the heads (source stride 16) or the sequence (destination stride 16).
/// let innermost = |plan: &Plan| *plan.regions()[0].loops.last().unwrap();
/// assert_eq!(innermost(&by_source).src_stride, 16);
/// assert_eq!(innermost(&by_destination).dst_stride, 16);
/// # Ok::<(), relayout::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum LoopOrder {
    /// The planner's rule: around copies that stream, the source's order; around zips and
    /// unzips that stream, the destination's; around every other kernel, by the larger of each
    /// loop's two strides (on a tie, the larger source stride outside), so both sides walk
    /// memory forwards in long runs as far as they can.
    /// Around a transpose, strips of destination runs outside the blocks along the source runs.
    #[default]
    Fitted,
    /// By source stride, largest outside: the source is read from start to end, and around a
    /// transpose a strip of source rows is finished before the next.
    Source,
    /// By destination stride, largest outside: the destination is written from start to end,
    /// and around a transpose a band of destination rows is finished before the next.
    Destination,
}

impl LoopOrder {
    /// The order this stands for around a transpose of `elem_size`-byte elements whose source
    /// rows (one per step along the destination-contiguous loop) lie `src_row_bytes` apart,
    /// into a destination whose writes stream (`streams`) or not. The fitted order is the
    /// destination's where such a transpose streams and its source rows are short
    /// ([`short_source_rows`]): each block then reads one or two lines of many source rows and
    /// the next block the next lines of the same rows, while the blocks' staged runs go out one
    /// band of destination rows after another. On a 2-core AMD EPYC (Zen 4) VM that ran
    /// NHWC → NCHW of 64 f32 channels at 0.96–1.04 of memcpy, against 0.69–0.76 for the blocks
    /// in strips. Every other order stands for itself.
    ///
    /// ```
    /// use relayout::plan::LoopOrder;
    ///
    /// // 64 f32 channels: 256-byte source rows.
    /// assert_eq!(LoopOrder::Fitted.around_transpose(4, 256, true), LoopOrder::Destination);
    /// assert_eq!(LoopOrder::Fitted.around_transpose(4, 256, false), LoopOrder::Fitted);
    /// assert_eq!(LoopOrder::Fitted.around_transpose(4, 32768, true), LoopOrder::Fitted);
    /// assert_eq!(LoopOrder::Source.around_transpose(4, 256, true), LoopOrder::Source);
    /// ```
    pub const fn around_transpose(
        self,
        elem_size: usize,
        src_row_bytes: usize,
        streams: bool,
    ) -> LoopOrder {
        match self {
            LoopOrder::Fitted if streams && short_source_rows(elem_size, src_row_bytes) => {
                LoopOrder::Destination
            }
            order => order,
        }
    }
}

/// Whether a transpose of `elem_size`-byte elements whose source rows lie `src_row_bytes` apart
/// has short source rows, which its fitted tactics read a line or two at a time, band by band
/// of destination rows, in 512-byte runs ([`Blocking::streamed`],
/// [`LoopOrder::around_transpose`]), and, up to 512 bytes, in 512-byte runs stored in place where
/// the writes do not stream ([`Blocking::fitted`]): rows from 256 bytes to 1 KiB, of elements
/// of 2 bytes or more. Shorter rows fill too few lines per block, and 1-byte elements ran no faster in bands
/// (NHWC → NCHW of 256 and 512 u8 channels: 0.43–0.47 of memcpy against 0.49–0.51) on the
/// 2-core AMD EPYC (Zen 4) VM.
pub const fn short_source_rows(elem_size: usize, src_row_bytes: usize) -> bool {
    elem_size >= 2 && src_row_bytes >= 256 && src_row_bytes <= SHORT_SOURCE_ROW_MAX_BYTES
}

/// The longest source rows that [`short_source_rows`] calls short: 1 KiB.
pub const SHORT_SOURCE_ROW_MAX_BYTES: usize = 1024;

/// How transposes are cut into blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Tiling {
    /// The default blocking: into large destinations whose writes stream, staged blocks streamed
    /// out, fitted to the element size and the rows ([`Blocking::streamed`]); otherwise
    /// fitted to the element size and the destination's row stride ([`Blocking::fitted`]).
    #[default]
    Fitted,
    /// This blocking, whatever the destination.
    Fixed(Blocking),
}

/// How copies, zips and unzips write large destinations, and whether fitted tiling stages and
/// streams transposes into them. Which is faster depends on the machine: on a 2-core AMD EPYC
/// (Zen 3) VM, NHWC → NCHW16c (64-byte runs into four places at once) ran at 0.51–0.59 of memcpy streamed and 0.81–0.85 with ordinary stores, while XLA's
/// `T(8,128)` tiles ran at 1.25–1.30 streamed and 0.97–0.99 without; on a Zen 5 VM NHWC →
/// NCHW16c was the other way round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum LargeWrites {
    /// Streaming stores: copies of a cache line or more read the source in order and stream,
    /// zips of long runs and zips and unzips whose runs continue one another go through the
    /// staging buffer and stream.
    #[default]
    Streamed,
    /// As [`LargeWrites::Streamed`], and staged zips and unzips whose steps read one
    /// contiguous stream of source (odd/even strips) stage four times as many steps and read
    /// them as four pieces side by side, a few lines of each in turn ([`Kernel::pieces`]): the
    /// hardware prefetchers follow a stream only within its page. On a 2-core Intel Xeon VM
    /// (family 6, model 167), in three alternating runs of each build (`relayout bench`),
    /// odd/even strips of f32 went from 7.8–8.9 GB/s to 9.7–10.8 that way, and back from
    /// 7.5–9.0 to 9.6–11.4, of bf16 from 7.0–8.3 to 8.8–9.0 and back from 7.1–8.9 to 9.4–10.4;
    /// on a Zen 4 VM a C model of odd/even strips staged in 16 KiB runs read in order had lost
    /// to 4 KiB ones (12.3 GB/s against 22.5), so this is a candidate of tuning, not the default.
    ///
    /// [`Kernel::pieces`]: crate::plan::Kernel::pieces
    StreamedInPieces,
    /// Ordinary stores.
    Stored,
    /// Ordinary stores, as [`LargeWrites::Stored`], that ask for the lines they are about to
    /// write 2 KiB ahead where the runtime writes them: copies of a cache line or more go to
    /// the runtime's routine that asks for the lines of source and destination ahead of its
    /// loads and stores, and transposes whose blocking stores register tiles in place (the
    /// fitted one of destinations that do not stream) store them by the runtime's block
    /// transpose that asks, each destination row it stores, for the line 2 KiB further along
    /// that row ([`TransposeWrite::Prefetched`]). A store into a line that is not in the cache
    /// waits for the line to be read first; asked for ahead, those reads overlap the stores.
    /// On a 2-core Intel Xeon VM (family 6, model 85) a C loop of 16-byte loads and stores
    /// copied 64 MiB at 5.3 GB/s, and at 6.1–6.2 asking for the lines 2 KiB ahead, where glibc's
    /// `memcpy` moved 5.1 and streaming stores 4.6–4.9; the suite's identity copy went from 1.04
    /// of memcpy (streamed or stored) to 1.15–1.17 this way, XLA's `T(8,128)` tiles from 1.09
    /// (stored, in the destination's order) to 1.16–1.18, NCHW → NCHW16c from 1.03 (stored)
    /// to 1.14–1.16. Zips and unzips of long runs ask by calls of the runtime, every
    /// [`ASK_GROUPS`] groups ([`ZipWrite::Prefetched`]; Cranelift has no prefetch to emit into
    /// their own loops); shorter ones store as [`LargeWrites::Stored`] has them.
    ///
    /// [`TransposeWrite::Prefetched`]: crate::plan::TransposeWrite::Prefetched
    /// [`ASK_GROUPS`]: crate::plan::ASK_GROUPS
    /// [`ZipWrite::Prefetched`]: crate::plan::ZipWrite::Prefetched
    Prefetched,
}

impl LargeWrites {
    /// Whether large destinations are written with streaming stores.
    pub fn streams(self) -> bool {
        matches!(self, LargeWrites::Streamed | LargeWrites::StreamedInPieces)
    }
}

/// How a transpose stores its blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BlockWrite {
    /// Each register tile in place.
    InPlace,
    /// Each block into a staging buffer, one row per destination run, then copied out run after
    /// run.
    Staged,
    /// Into large destinations (see [`Target::stream_min_bytes`]), each block staged and then
    /// streamed out (non-temporal stores: no read-for-ownership of the destination); into
    /// smaller ones, in place.
    Streamed,
    /// Into large destinations, each register tile of 4- or 8-byte elements streamed straight
    /// to its place, whole cache lines at a time, with no staging buffer; into smaller ones, and
    /// for other elements, in place. Blocks whose destination rows are shorter than a line and
    /// lie end to end, whole lines together, are staged and streamed out as one run instead
    /// (for elements of 2 bytes and more). On a 2-core Intel Xeon VM (family 6, model 167) a 2048 ×
    /// 4096 f64 transpose (destination rows 16 KiB apart) ran at 1.39–1.50 of memcpy this way
    /// (256-byte runs across the source rows in 8 and 16 KiB blocks) against 1.13 for the best
    /// staged candidate, while 8000² f32 and f64 transposes ran as fast either way.
    StreamedTiles,
}

/// How a transpose is cut into blocks and how it stores them.
///
/// ```
/// use relayout::plan::{Blocking, BlockWrite};
/// use relayout::Target;
///
/// let host = Target::host();
/// // 1-byte elements in rows 3 KiB apart (4 different L1 sets): the default stays.
/// assert_eq!(Blocking::fitted(1, 3072, 4096, 64 << 20, host), Blocking::DEFAULT);
/// // Rows 4 KiB apart all start in the same set: blocks are staged and copied out.
/// assert_eq!(Blocking::fitted(4, 4096, 4096, 64 << 20, host).write, BlockWrite::Staged);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Blocking {
    /// Bytes of each destination run a block writes (a strip along the destination-contiguous
    /// loop); at least one vector.
    pub run_bytes: usize,
    /// Bytes of one block (strip × width along the source-contiguous loop).
    pub block_bytes: usize,
    /// Strips per macro block (the nearest divisor of the strip count is used).
    pub macro_strips: usize,
    /// Blocks per macro block along the source runs (the nearest divisor is used).
    pub macro_blocks: usize,
    /// How the blocks are stored.
    pub write: BlockWrite,
    /// The order of the register tiles in a block. Reading many source rows at once
    /// ([`Walk::Across`]) keeps more of them in flight from memory: on a 2-core AMD EPYC (Zen 4)
    /// VM, staged and streamed blocks of an 8000² f32 transpose went from 4.6 to 8.9 GB/s and of
    /// NCHW → NHWC from 6.8 to 11.5 this way, while the 256³ reversal fell from 6.7 to 3.2 (its
    /// source rows are 256 KiB apart).
    pub walk: Walk,
    /// How many blocks ahead along the innermost loop a staged block asks the CPU for its source
    /// rows (1: the next block), while it writes itself out. Counts beyond
    /// [`Blocking::MAX_PREFETCH_AHEAD`] count as that, 0 as 1. Where the innermost loop is long
    /// and many source rows are read at once, further is faster: on a 2-core AMD EPYC (Zen 4)
    /// VM, the 8000² f64 transpose in 8 KiB blocks went from 0.69–0.77 of memcpy to 0.78–0.93
    /// three blocks ahead; where the loop has only a few blocks, the prefetches land past its
    /// end (the 64 × 512² (0,2,1) permutation, 4 blocks a loop: 0.97 against 0.68).
    pub prefetch_ahead: usize,
    /// For how many consecutive blocks one prefetch asks at a time (1: each block for its own
    /// source). Where the blocks continue one another along the source rows, every
    /// `prefetch_group`-th block asks for the rows of the next `prefetch_group` blocks at once,
    /// so that memory serves longer runs of each row together (see
    /// [`Blocking::STREAMED_256_GROUPED`]). Counts beyond [`Blocking::MAX_PREFETCH_GROUP`] count
    /// as that, 0 as 1.
    pub prefetch_group: usize,
}

impl Blocking {
    /// Strips of 64-byte destination runs (one line of each destination row) by 4 KiB blocks,
    /// grouped 16 × 4 into macro blocks; tiles stored in place.
    pub const DEFAULT: Blocking = Blocking {
        run_bytes: 64,
        block_bytes: 4096,
        macro_strips: 16,
        macro_blocks: 4,
        write: BlockWrite::InPlace,
        walk: Walk::Along,
        prefetch_ahead: 1,
        prefetch_group: 1,
    };

    /// 256-byte destination runs in 4 KiB blocks: a block writes fewer destination rows, four
    /// lines of each.
    pub const LONG_RUNS: Blocking = Blocking {
        run_bytes: 256,
        ..Blocking::DEFAULT
    };

    /// 128-byte destination runs in 4 KiB blocks: two lines of each destination row and of
    /// each source row a block, where [`Blocking::DEFAULT`] writes one line of each of 64
    /// destination rows and [`Blocking::LONG_RUNS`] reads one line of each of 64 source rows
    /// (for 4-byte elements).
    pub const MEDIUM_RUNS: Blocking = Blocking {
        run_bytes: 128,
        ..Blocking::DEFAULT
    };

    /// 1 KiB destination runs, 16 rows a block, staged and copied out.
    pub const STAGED_RUNS: Blocking = Blocking {
        run_bytes: 1024,
        block_bytes: 16384,
        macro_strips: 1,
        macro_blocks: 1,
        write: BlockWrite::Staged,
        walk: Walk::Along,
        prefetch_ahead: 1,
        prefetch_group: 1,
    };

    /// 256-byte runs in blocks of 16 KiB, in macro blocks of 4 × 4, staged and streamed. With
    /// the next block's source prefetched while each block goes out, it was the fastest
    /// candidate or close to it on every large f32 transpose of the suite on a 2-core AMD EPYC
    /// (Zen 4) VM (0.59–0.95 of memcpy, against 0.30–0.92 for tiles stored in place: 8192² f32
    /// 0.83 against 0.35, the 256³ reversal 0.76 against 0.32), until blocks of half the size
    /// ([`Blocking::STREAMED_256_NARROW`]) beat it. The fitted blocking of 2- and 4-byte
    /// elements whose long source rows start in more than one L1 set ([`Blocking::streamed`]).
    pub const STREAMED_256: Blocking = Blocking {
        run_bytes: 256,
        block_bytes: 16384,
        macro_strips: 4,
        write: BlockWrite::Streamed,
        ..Blocking::DEFAULT
    };

    /// 256-byte runs in blocks of 8 KiB, in macro blocks of 4 × 4, staged and streamed: for
    /// 4-byte elements 32 runs a block, two lines of each of 64 source rows, as
    /// [`Blocking::STREAMED_512`] reads 8-byte elements. The fitted blocking of 2- and 4-byte
    /// elements into large destinations whose source rows are long and all start in one L1 set
    /// ([`Blocking::streamed`]). On a 2-core
    /// AMD EPYC (Zen 4) VM, against blocks of 16 KiB ([`Blocking::STREAMED_256`]; `relayout
    /// bench` with the choice pinned in a tuning file, two runs each): 8000² f32 0.88–0.89 of
    /// memcpy against 0.75–0.77, NCHW → NHWC 1.02–1.12 against 0.70–0.73, the (0,2,1)
    /// permutation of 64 × 512² 0.93–0.95 against 0.63–0.78; 8192² f32 (0.81 against
    /// 0.78–0.82) and the 256³ reversal (0.77–0.78 against 0.78–0.81) within the runs' spread.
    /// Sessions later, with the tiles of AVX-512, on the same VM (one process timing both pinned
    /// blockings back to back after memcpy, three processes), 8000² f32 ran at 0.75–0.79
    /// against 0.81–0.86, NCHW → NHWC with 64 channels of 56² 0.94–0.96 against 1.12–1.14, the
    /// (0,2,1) permutation 0.80–0.91 against 0.74–0.89 and 4096 × 11008 f32 0.83–1.03 against
    /// 0.78–1.00, and 16 KiB blocks took this one's place for rows that start in more than one
    /// L1 set.
    pub const STREAMED_256_NARROW: Blocking = Blocking {
        block_bytes: 8192,
        ..Blocking::STREAMED_256
    };

    /// 128-byte runs in blocks of 8 KiB, in macro blocks of 4 × 4, staged and streamed: for
    /// 4-byte elements 64 runs a block, four lines of each of 32 source rows, where
    /// [`Blocking::STREAMED_256_NARROW`] reads two lines of each of 64. A candidate of tuning:
    /// on a 2-core Intel Xeon VM (family 6, model 167), pinned in a tuning file against the
    /// fitted blocking (`relayout bench`, two alternating runs each, GB/s), it moved 7.9–8.1
    /// against 6.9–7.4 for 8192² f32, 8.0–8.7 against 7.4–7.5 for 8000² f32, 7.9–8.3 against
    /// 7.2–7.3 for the 4096 × 11008 f32 weight transpose and 9.9–11.7 against 8.9–9.2 for NCHW
    /// → NHWC of 16 × 256 channels of 56²; but 3.1–3.2 against 3.8–3.9 for 3001 × 4999 f32,
    /// 8.4–8.7 against 8.8–8.9 for the (0,2,1) permutation of 64 × 512², and the same for
    /// 8000² u16. It was never measured on the AMD EPYC VMs the fitted blockings come from.
    pub const STREAMED_128: Blocking = Blocking {
        run_bytes: 128,
        ..Blocking::STREAMED_256_NARROW
    };

    /// [`Blocking::STREAMED_256_NARROW`] with each block's source prefetched three blocks ahead
    /// ([`Blocking::prefetch_ahead`]): the fitted blocking of elements of more than 4 bytes into
    /// large destinations whose source rows lie at least [`Blocking::FAR_SOURCE_ROW_BYTES`]
    /// apart, and a candidate of tuning. On a 2-core AMD EPYC (Zen 4) VM (`relayout bench
    /// --candidates`, two runs each, against the blockings fitted before): 8000² f64 0.86–0.98
    /// of memcpy against 0.65–0.68 (in five alternating untuned runs of each build, medians 0.81
    /// against 0.77), 8000 × 4000 f64 0.84–0.87 against 0.79–0.82. For f32 it was no better
    /// than [`Blocking::STREAMED_256_NARROW`] on the whole: 2000 × 16000 0.80 against 0.71–0.78
    /// and the 256³ reversal 0.86–0.89 against 0.78–0.79, but 8000² 0.83 against 0.86 (medians of
    /// five alternating runs) and 8192² within the spread. Rows closer together lose: the (0,2,1)
    /// permutation of 64 × 512² (rows of 2 KiB in f32, 4 KiB in f64) ran at 0.70–0.74 against
    /// 0.92–1.11 in f32 and 0.84–0.93 against 0.96–0.99 in f64.
    pub const STREAMED_256_AHEAD: Blocking = Blocking::STREAMED_256_NARROW.prefetching(3);

    /// [`Blocking::STREAMED_256_NARROW`] with the source of eight blocks asked for at a time
    /// ([`Blocking::prefetch_group`]): for 4-byte elements, 1 KiB of each of 64 source rows
    /// every eighth block, where each block reads 128 bytes of each. The fitted blocking of 2-
    /// and 4-byte elements into large destinations whose source rows lie at least
    /// [`Blocking::VERY_FAR_SOURCE_ROW_BYTES`] apart ([`Blocking::streamed`]). Such rows each
    /// lie in a DRAM row of their own, and memory serves many short runs from many rows more
    /// slowly than a few long ones: on a 2-core Intel Xeon VM (family 6, model 85), a C loop
    /// reading 64 MiB in turn from 32 or 64 places 1 MiB apart moved 6.5 GB/s 256 bytes of each
    /// place at a time, 9.4–9.5 a KiB at a time, and 8.1 reading 256 bytes at a time but
    /// prefetching 1 KiB of each place every fourth turn. There the 4-D reversal of 64⁴ f32
    /// (source rows 1 MiB apart) moved 3.13–3.22 GB/s this way against 2.75–2.81 with each
    /// block asking for its own source (prefetching 512 bytes at a time: 2.70–2.79), the 256³
    /// reversal (rows 256 KiB apart) 3.01 against 2.88–2.92; transposes of closer rows ran
    /// slower (8000² f32 in 128-byte runs, rows 32000 bytes apart, 3.58–3.65 against 3.70–3.91,
    /// 8000² f64 3.45–3.53 against 3.70–3.78).
    pub const STREAMED_256_GROUPED: Blocking = Blocking {
        prefetch_group: 8,
        ..Blocking::STREAMED_256_NARROW
    };

    /// From how far apart source rows the fitted blocking of 2- and 4-byte elements asks for
    /// the source of eight blocks at a time ([`Blocking::STREAMED_256_GROUPED`]): 256 KiB.
    pub const VERY_FAR_SOURCE_ROW_BYTES: usize = 256 * 1024;

    /// From how far apart source rows the fitted blocking of 8-byte elements prefetches three
    /// blocks ahead ([`Blocking::STREAMED_256_AHEAD`]): 16 KiB. Such rows each lie on
    /// pages of their own, and a block reads from dozens of them at once.
    pub const FAR_SOURCE_ROW_BYTES: usize = 16 * 1024;

    /// 512-byte runs, 16 rows a block, staged and streamed.
    pub const STREAMED_512: Blocking = Blocking {
        run_bytes: 512,
        block_bytes: 8192,
        macro_strips: 1,
        macro_blocks: 1,
        write: BlockWrite::Streamed,
        walk: Walk::Along,
        prefetch_ahead: 1,
        prefetch_group: 1,
    };

    /// 256-byte runs across the source rows in 16 KiB blocks, each register tile streamed
    /// straight to the destination ([`BlockWrite::StreamedTiles`]): a candidate of tuning, the
    /// fastest for the 2048 × 4096 f64 transpose on a 2-core Intel Xeon VM (family 6, model 167)
    /// at 1.34–1.48 of memcpy (as were 128-byte runs in 16 KiB blocks), against 0.60–0.65 for
    /// 512-byte runs and 1.10–1.13 for the best staged blocking (`relayout bench` with each
    /// blocking pinned in a tuning file).
    pub const STREAMED_TILES: Blocking = Blocking {
        run_bytes: 256,
        block_bytes: 16384,
        macro_strips: 1,
        macro_blocks: 1,
        write: BlockWrite::StreamedTiles,
        walk: Walk::Across,
        prefetch_ahead: 1,
        prefetch_group: 1,
    };

    /// 512-byte runs in 8 KiB blocks with no macro blocks, stored in place: the geometry of
    /// [`Blocking::STREAMED_512`] for destinations that do not stream. The fitted blocking of
    /// transposes with short source rows ([`short_source_rows`], see [`Blocking::fitted`]).
    pub const SHORT_SOURCE_RUNS: Blocking = Blocking {
        write: BlockWrite::InPlace,
        ..Blocking::STREAMED_512
    };

    /// 256-byte runs in 16 KiB blocks (four lines of each of 64 source rows of f32), 4 × 4
    /// macro blocks, stored in place: the geometry of [`Blocking::STREAMED_256`] for
    /// destinations that do not stream. The fitted blocking of transposes of 2- and 4-byte
    /// elements that stay in the last-level cache, from long source rows into destination rows
    /// longer than a line ([`Blocking::fitted`]).
    pub const LLC_RUNS: Blocking = Blocking {
        write: BlockWrite::InPlace,
        ..Blocking::STREAMED_256
    };

    /// 1 KiB runs, 16 rows a block, stored in place, no macro blocks: the fitted blocking of
    /// 4-byte transposes that run from the L2 ([`Blocking::fitted`]).
    pub const L2_RUNS: Blocking = Blocking {
        write: BlockWrite::InPlace,
        ..Blocking::STREAMED_1K
    };

    /// 512-byte runs, 64 rows a block (32 KiB), staged and streamed, walked along the source
    /// rows, no macro blocks: the fitted blocking of transposes whose rows are not whole lines
    /// apart ([`Blocking::streamed`]), whose runs join where the destination's rows start
    /// inside a line (`relayout plan` says "joined").
    pub const STREAMED_512_WIDE: Blocking = Blocking {
        block_bytes: 32768,
        ..Blocking::STREAMED_512
    };

    /// 1 KiB runs, 16 rows a block, staged and streamed.
    pub const STREAMED_1K: Blocking = Blocking {
        run_bytes: 1024,
        block_bytes: 16384,
        macro_strips: 1,
        macro_blocks: 1,
        write: BlockWrite::Streamed,
        walk: Walk::Along,
        prefetch_ahead: 1,
        prefetch_group: 1,
    };

    /// The default blocking for transposes of `elem_size`-byte elements whose destination rows
    /// (one per step along the source-contiguous loop) lie `row_bytes` apart on `target`, into
    /// destinations whose writes do not stream. [`Blocking::DEFAULT`] writes one line of each
    /// of many destination rows per block. Where those lines crowd into a few L1 sets they
    /// evict each other half-written: where the rows start in only two sets (rows 2 KiB apart,
    /// or an odd multiple of that, on a 64-set L1) a block writes fewer rows with longer runs
    /// ([`Blocking::LONG_RUNS`]), and where they all start in one set (a multiple of 4 KiB
    /// apart) a block is staged and its runs copied out one after another. On a 2-core AMD
    /// EPYC VM this took 512² f32 transposes from 8 to 25 GB/s and 1024² from 3 to 19.
    ///
    /// Elements of 2 bytes or more whose destination rows lie closer together write two lines
    /// of each ([`Blocking::MEDIUM_RUNS`]). On a 2-core Intel Xeon VM (family 6, model 167), in
    /// GB/s, two alternating `relayout bench` runs with each blocking pinned in a tuning file:
    /// NCHW → NHWC of 32 × 56² pixels with 64 f32 channels (256-byte rows) 12.4–12.6 against
    /// 11.0–11.4, with 32 (128-byte rows) 14.0–14.3 against 13.0–13.5, 16 images of 128
    /// channels (512-byte rows) 12.1–12.3 against 9.8–10.0; u16 with 64 channels 12.8–12.9
    /// against 12.0–12.4, with 128 9.8–10.5 against 9.2–9.4; 64 × 40000 f32 13.1–13.3 against
    /// 12.2–12.3. 256-byte runs there read only one line of each source row a block and ran
    /// slowest (NCHW → NHWC with 64 f32 channels 9.3–9.4). Rows shorter than such a run keep
    /// the default: NCHW → NCHW16c (64-byte rows) moved 13.6–13.9 GB/s with it against
    /// 13.8–14.0 (tuned, four alternating runs).
    ///
    /// Elements of 2 bytes or more whose destination rows lie at least
    /// [`Blocking::FAR_DESTINATION_ROW_BYTES`] apart take the longer runs too. On a 2-core Intel
    /// Xeon VM (family 6, model 167), in two alternating `relayout bench --no-tune` runs of each
    /// blocking (fraction of memcpy's speed): 1000² f32 0.73–0.74 against 0.58–0.60, 2000² f32
    /// 0.80 against 0.65–0.67, 3001 × 2500 f32 0.66–0.68 against 0.47–0.50, 2000² u16 0.77
    /// against 0.58, 300 × 400 f32 0.69–0.71 against 0.63–0.64, NHWC → NCHW with 64 channels
    /// (24.5 MiB) 0.79 against 0.61–0.66; 1400 × 1500 f64 and 6 or 12 channels back to planes
    /// ran the same either way. The default stays for 1-byte elements (3000² u8 ran at 0.56
    /// with longer runs against 0.65–0.67); rows closer together ran slower with 256-byte runs
    /// than with the default (NCHW → NHWC with 64 channels: 0.62 against 0.77–0.79) and take
    /// 128-byte runs instead (above).
    ///
    /// Beyond the L2 and below the size from which the target streams
    /// ([`Target::stream_min_bytes`]), 2- and 4-byte elements whose source rows are longer than
    /// short ones (more than [`SHORT_SOURCE_ROW_MAX_BYTES`]) and whose destination rows are longer
    /// than a line (and do not all start in one L1 set) take 256-byte runs in 16 KiB blocks
    /// instead ([`Blocking::LLC_RUNS`]: four lines of each of 64 f32 source rows a block, where
    /// the rules above read one or two): such transposes stay in the last-level cache. Larger
    /// ones stream, or, in the tuning candidates that store them, keep the rules above.
    /// On a 2-core AMD EPYC (Zen 4) VM (the build before and this one, untuned, alternating in one
    /// process after memcpy, each kernel eight times a round, medians of 15 rounds, new against old
    /// speed over two to five processes): 1001 × 1999 f32 1.22–1.44, 1000² f32 1.04–1.17, 1536 ×
    /// 1200 f32 (rows in two L1 sets) 1.05–1.44, 1200 × 1536 1.29–1.34, 700 × 2100 0.99–1.42; NCHW
    /// → NHWC of 8 images of 56² with 64 f32 channels 0.98–1.48, 2 images of 256 channels
    /// 0.94–1.46, 8 images of 128 u16 channels 0.97–1.16; 1501 × 1499 u16 1.01–1.18, 2000 × 1000
    /// u16 0.98–1.21. Kernels whose plans did not change ran at 0.79–1.18 times the old speed in
    /// the same runs, so single figures mean little. 8-byte elements lost that way (NCHW → NHWC
    /// with 32 f64 channels: 0.66–0.72), as did 2-byte source rows of 128 bytes (NHWC → NCHW of 64
    /// u16 channels: 0.87–0.93) and 2000² u8 (0.93); they keep the rules above and below.
    ///
    /// 4-byte elements whose destination holds at most [`Blocking::BEYOND_L2_BYTES`] (so that
    /// source and destination fit a 2 MiB L2 together) take 1 KiB runs in 16 KiB blocks, in
    /// place, with no macro blocks ([`Blocking::L2_RUNS`]), unless their rows all start in one
    /// L1 set: a block writes 16 destination rows a line at a time for 16 lines, where the
    /// default writes one line of each of 64 rows. On a 2-core Intel Xeon VM (family 6, model
    /// 85), in two or three alternating `relayout bench` runs of each build (GB/s): 150² f32
    /// 20.3–20.4 against 16.3–16.6, 256² 23.6–23.7 against 21.5, 200 × 1000 10.4–10.6 against
    /// 8.7–8.9, 512² 8.6–8.7 against 8.1–8.4, 64² 23.0–23.1 against 22.5; the kernels also
    /// compiled in 130–160 µs instead of 150–280 (fewer loops). Not measured on the AMD EPYC
    /// VMs, where [`Blocking::LONG_RUNS`] took 512² f32 from 8 to 25 GB/s.
    ///
    /// Short source rows ([`short_source_rows`]) no longer than 512 bytes take 512-byte runs in
    /// 8 KiB blocks ([`Blocking::SHORT_SOURCE_RUNS`]) beyond the L2, wherever the destination
    /// rows start in more than two L1 sets: a block then reads one line of each of 128 source
    /// rows (f32) that the next blocks read on from the L1, where 256-byte runs read 64 and
    /// macro blocks take them from the L2. On a 2-core Intel Xeon VM (family 6, model 167), in
    /// two alternating `relayout bench --no-tune` runs of each build, GB/s: NHWC → NCHW of 32
    /// images of 56² with 64 f32 channels 10.2–11.1 against 8.8–9.2, with 128 u16 channels
    /// 8.6–8.9 against 6.5–7.8, 100000 × 64 f32 10.1–10.4 against 8.6–9.2. With two threads
    /// (each blocking pinned in a tuning file, three runs each) 64 f32 channels moved 21.7–22.3
    /// GB/s against 13.7–21.5. Source rows of 1 KiB read 128 KiB a strip, more than the L1
    /// holds, and ran slower this way (8 images of 256 f32 channels: 6.7–8.8 against 8.5–9.7
    /// with one thread, 9.0–17 against 15–18 with two).
    ///
    /// ```
    /// use relayout::plan::Blocking;
    /// use relayout::Target;
    ///
    /// // A host whose cache holds 128 MiB: writes stream from 32 MiB.
    /// let host = Target {
    ///     stream_min_bytes: 32 << 20,
    ///     ..Target::host()
    /// };
    /// // 2000² f32: rows 8000 bytes apart, starting in every L1 set.
    /// assert_eq!(Blocking::fitted(4, 8000, 8000, 16_000_000, host), Blocking::LLC_RUNS);
    /// assert_eq!(Blocking::fitted(4, 8000, 8000, 40_000_000, host), Blocking::LONG_RUNS);
    /// assert_eq!(Blocking::fitted(8, 8000, 8000, 16_000_000, host), Blocking::LONG_RUNS);
    /// assert_eq!(Blocking::fitted(1, 8000, 8000, 4_000_000, host), Blocking::DEFAULT);
    /// // NCHW -> NHWC of 32 images of 56² with 64 f32 channels: destination rows of 256
    /// // bytes, one after another, source rows of 56² f32; 150 × 64 f32 stays in the L2.
    /// assert_eq!(Blocking::fitted(4, 256, 12_544, 25_690_112, host), Blocking::LLC_RUNS);
    /// assert_eq!(Blocking::fitted(8, 256, 25_088, 51_380_224, host), Blocking::MEDIUM_RUNS);
    /// assert_eq!(Blocking::fitted(4, 256, 600, 38_400, host), Blocking::L2_RUNS);
    /// assert_eq!(Blocking::fitted(2, 256, 600, 19_200, host), Blocking::DEFAULT);
    /// assert_eq!(Blocking::fitted(1, 256, 3136, 6_422_528, host), Blocking::DEFAULT);
    /// // And back, NHWC -> NCHW: source rows of 256 bytes.
    /// assert_eq!(Blocking::fitted(4, 12_544, 256, 25_690_112, host), Blocking::SHORT_SOURCE_RUNS);
    /// ```
    pub fn fitted(
        elem_size: usize,
        row_bytes: usize,
        src_row_bytes: usize,
        dst_bytes: usize,
        target: Target,
    ) -> Blocking {
        let beyond_l2 = dst_bytes >= Blocking::BEYOND_L2_BYTES;
        match target.start_sets(row_bytes) {
            1 => Blocking::STAGED_RUNS,
            _ if elem_size == 4 && dst_bytes <= Blocking::BEYOND_L2_BYTES => Blocking::L2_RUNS,
            _ if beyond_l2
                && dst_bytes < target.stream_min_bytes
                && matches!(elem_size, 2 | 4)
                && row_bytes > target.line_bytes
                && src_row_bytes > SHORT_SOURCE_ROW_MAX_BYTES =>
            {
                Blocking::LLC_RUNS
            }
            2 => Blocking::LONG_RUNS,
            _ if beyond_l2
                && short_source_rows(elem_size, src_row_bytes)
                && src_row_bytes <= Blocking::SHORT_SOURCE_RUNS.run_bytes =>
            {
                Blocking::SHORT_SOURCE_RUNS
            }
            _ if elem_size < 2 => Blocking::DEFAULT,
            _ if row_bytes >= Blocking::FAR_DESTINATION_ROW_BYTES => Blocking::LONG_RUNS,
            _ if beyond_l2 && row_bytes >= Blocking::MEDIUM_RUNS.run_bytes => Blocking::MEDIUM_RUNS,
            _ => Blocking::DEFAULT,
        }
    }

    /// From how many bytes of destination the fitted blocking of transposes that do not stream is
    /// chosen for memory rather than for the L2 ([`Blocking::fitted`]): 256-byte runs in 16 KiB
    /// blocks from long source rows ([`Blocking::LLC_RUNS`]), 512-byte runs from short ones
    /// ([`Blocking::SHORT_SOURCE_RUNS`]) and 128-byte runs into rows closer than
    /// [`Blocking::FAR_DESTINATION_ROW_BYTES`] ([`Blocking::MEDIUM_RUNS`]). 1 MiB, about what
    /// leaves a core's L2 cache. Smaller transposes run from the L2 and are bound by their tiles
    /// and edges, not by memory: on a 2-core Intel Xeon VM (family 6, model 167), untuned, 150² f32
    /// moved 26 GB/s with 128-byte runs against 30–32 with the default, and 200 × 300 f32 30
    /// against 39–41, while 200 × 1000 ran as fast either way; 1000 × 128 f32 moved 21–22 GB/s with
    /// 512-byte runs against 24 with the default, and 4000 × 128 u16 16–17 against 18. From this
    /// size on, relayouts also run kernels planned for buffers that start part-way into a cache
    /// line ([`Plan::with_tactics_at`](crate::plan::Plan::with_tactics_at)), and relayouts asked to
    /// tune ([`Options::tune`](crate::Options::tune)) are tuned even where their writes do not
    /// stream.
    pub const BEYOND_L2_BYTES: usize = 1 << 20;

    /// From how far apart destination rows the fitted blocking of transposes that do not
    /// stream writes 256-byte runs ([`Blocking::LONG_RUNS`], see [`Blocking::fitted`]), and
    /// that of streamed transposes whose rows are not whole lines apart takes 512-byte runs in
    /// 32 KiB blocks ([`Blocking::STREAMED_512_WIDE`], see [`Blocking::streamed`]): 1 KiB.
    pub const FAR_DESTINATION_ROW_BYTES: usize = 1024;

    /// The fitted blocking of transposes of `elem_size`-byte elements whose destination rows lie
    /// `dst_row_bytes` apart and whose source rows (one per step along the destination-contiguous
    /// loop) `src_row_bytes` apart on `target`, into large destinations whose writes stream: blocks
    /// staged, streamed out and prefetched, of 512-byte runs walked along the source rows
    /// ([`Blocking::STREAMED_512`]) where the source rows are short ([`short_source_rows`]: the
    /// fitted loop order then runs the blocks band by band of destination rows); for 8-byte
    /// elements whose source rows lie at least [`Blocking::FAR_SOURCE_ROW_BYTES`] apart, of
    /// 256-byte runs along them in 8 KiB blocks prefetched three blocks ahead
    /// ([`Blocking::STREAMED_256_AHEAD`]); otherwise of 256-byte runs along the source rows in 8
    /// KiB blocks ([`Blocking::STREAMED_256_NARROW`]) for 2- and 4-byte elements whose source rows
    /// all start in one L1 set (for the others, in 16 KiB blocks: [`Blocking::STREAMED_256`],
    /// below), across them in 16 KiB blocks (`Blocking::STREAMED_256.across()`) for 1-byte
    /// elements and for 2- and 4-byte elements whose source rows are no longer than a run, and of
    /// 512-byte runs (64 elements, as for 4 bytes) along them for 8-byte elements. On a 2-core AMD
    /// EPYC (Zen 4) VM, in `relayout bench --candidates` runs over four sessions, those were the
    /// fastest candidates or within a few percent of them: u8 8000² 0.72–0.75 of memcpy against
    /// 0.64–0.68 for 256-byte runs along in 16 KiB blocks (and 0.73 against 0.55 for 8 KiB blocks
    /// along); u16 in 8 KiB blocks along against 16 KiB blocks across, the blocking fitted before:
    /// 8000² 0.80–0.84 against 0.68–0.83 (median 0.81 against 0.74, four runs), 8192² 0.70–0.71
    /// against 0.34–0.40, the (0,2,1) permutation of 64 × 512² 0.66–0.73 against 0.57–0.61 (neither
    /// u8 nor u16 gained from prefetching further ahead); for NHWC → NCHW with short source rows
    /// (channels × element size from 256 bytes to 1 KiB: 64, 96, 128 and 256 f32 channels, 128 u16,
    /// 32, 64 and 128 f64), 0.63–1.07 against 0.45–0.87 for the blocking fitted before; for far
    /// rows, see [`Blocking::STREAMED_256_AHEAD`].
    ///
    /// Where the rows of either side are not a whole number of lines apart (odd extents), 1, 2 and
    /// 4-byte elements whose source rows are longer than 256 bytes and whose destination rows lie
    /// at least 1 KiB apart go in 512-byte runs along the source rows in 32 KiB blocks
    /// ([`Blocking::STREAMED_512_WIDE`]). Every run of such rows starts and ends inside a line on
    /// one side or both: each line the destination's runs cover in part would be stored (read from
    /// memory first), and each the source's runs cover in part is read twice. Where the
    /// destination's rows are the odd ones, runs of up to 512 bytes join (see `relayout plan`: each
    /// block transposes a line's worth more source rows, so that each run streams the line it
    /// shares with the next whole), and the wide blocks read 64 elements of each source row (a line
    /// of u8, two of u16, four of f32). Before the runs joined, 1 KiB runs in 16 KiB blocks
    /// ([`Blocking::STREAMED_1K`]) left fewer lines in part; on a 2-core AMD EPYC (Zen 3) VM they
    /// had taken 3001 × 4999 u8 from 11.7–12.2 ms to 7.7, u16 from 21.7–22.3 to 12.2–12.3 and f32
    /// from 28.9–30.0 to 22.5–27.2 against 256-byte runs not joined. On a 2-core AMD EPYC (Zen 4)
    /// VM (the two builds' untuned kernels alternating in one process after memcpy, medians of nine
    /// rounds, new against old speed), these blocks took 3001 × 4999 u8 1.56 times as fast as the 1
    /// KiB runs, 3001 × 5056 u8 (destination rows odd only) 1.64, 3008 × 4999 u8 (source rows odd
    /// only) 1.55, 7999 × 8001 u8 1.43, 1000 × 30001 u8 1.75, 30001 × 1000 u8 1.67; u16 1.31, 1.22,
    /// 1.24, 1.19, 1.19 and 1.21; 4095 × 4097 u8 1.15 and u16 1.39, 2001 × 2999 (in the L3) u8 1.09
    /// and u16 1.27; f32 3001 × 4999 1.06–1.25 (three processes), 4095 × 4097 1.37, 7999 × 8001
    /// 1.10, 3008 × 4999 1.02–1.04, 3001 × 5056 0.95–1.11, and lost 2–12% on the two long and
    /// narrow shapes (1000 × 30001 0.92–0.98, 30001 × 1000 0.88–0.96), where the 1 KiB runs stay a
    /// tuning candidate. 8-byte elements keep the blockings below, whose 256- and 512-byte runs
    /// join there too (see `joins_runs` in the schedule); the new blocking was not measured for
    /// them, and 1 KiB runs had lost (2000 × 4001 f64 ran at 19.9–21.4 ms in 1 KiB runs against
    /// 15.4–16.5, Zen 3).
    ///
    /// Where destination rows lie no more than a cache line apart (NCHW → NCHW16c: 16 channels
    /// a row; NCHW → NHWC with 16 f32 channels or 8 f64), a few register tiles along them
    /// already fill whole destination lines, so the tiles go straight out across the source
    /// rows ([`Blocking::STREAMED_TILES`]; in place for 1- and 2-byte elements) and skip the
    /// staging buffer, whose bursts of streaming stores otherwise wait between the bursts of
    /// loads. Rows shorter than a line that lie end to end are staged and streamed as one run
    /// instead, for elements of 2 bytes and more that move as they are (see
    /// [`BlockWrite::StreamedTiles`]); the Zen 3 figures below were of staged rows streamed one
    /// by one. On a 2-core AMD EPYC (Zen 3) VM (ratios to memcpy, ten rounds interleaved with
    /// it, the staged blocking fitted before against this one): 32 images of 64 × 56² into
    /// NCHW16c f32 0.50 against 0.84, f64 0.71 against 1.15, u16 0.29 against 0.73; into
    /// NCHW8c f32 0.60 against 1.03, f64 0.59 against 0.91; NCHW4c f64 0.37 against 0.93;
    /// NCHW → NHWC with 16 f32 channels 0.54 against 0.88, 8 f64 0.56 against 1.06, 64 u8
    /// 0.57 against 0.94, 32 u16 0.41 against 0.60; 16 × 2²⁰ f32 transposed 0.49 against
    /// 0.88. Rows two lines apart did not gain (32 f32 channels: 0.54 against 0.44; NCHW32c
    /// f32 0.42 against 0.46).
    ///
    /// 4-byte elements whose source rows are two lines or shorter (NHWC → NCHW with up to 32
    /// f32 channels) go in 512-byte runs along them ([`Blocking::STREAMED_512`]) rather than
    /// 256-byte runs across: on the same VM (eight rounds), 64 images of 224² with 10, 12, 14,
    /// 16 and 20 channels ran at 0.97, 1.34, 1.19, 0.64 and 0.62 of memcpy against 0.71, 1.10,
    /// 1.04, 0.50 and 0.53; 24 and 32 channels at 0.64 against 0.65 and 0.55 against 0.50. 2-
    /// and 8-byte elements lost that way (24 and 32 u16 channels 1.14 and 0.51 against 1.20
    /// and 0.61, 8 f64 0.74 against 0.82) and keep their blockings.
    ///
    /// Longer source rows of 2- and 4-byte elements that start in more than one L1 set (not a
    /// multiple of the L1's way, 4 KiB, apart) go in 256-byte runs along them in 16 KiB blocks
    /// ([`Blocking::STREAMED_256`]), at any distance of destination rows beyond a line: two lines
    /// of each of 128 u16 source rows a block, four of each of 64 f32 rows. 2-byte elements took it
    /// first, for the runtime's tiles of two 16-byte tiles stacked where the CPU has AVX2 (on the
    /// Zen 4 VM, pinned blockings back to back after memcpy, medians of seven rounds: 8000² u16 at
    /// 0.91–1.03 of memcpy against 0.48–0.72 with 512-byte runs across in 8 KiB blocks, which read
    /// half a line of each of 256 rows; the (0,2,1) permutation of 64 × 512² u16 as fast). 4-byte
    /// elements followed: on the same VM, with AVX-512, the 512-byte runs across that they took
    /// before (one line of each of 128 f32 rows a block) lost on every shape tried, pinned
    /// blockings back to back after memcpy (two processes): 8000² f32 0.62–0.70 of memcpy against
    /// 0.75–0.82, 6000² 0.72–0.86 against 0.91–1.15, 4096 × 11008 0.79–0.83 against 0.96–1.02,
    /// 1536² to 4608² with rows in 2 to 16 sets 0.58–0.83 against 0.87–1.17, NCHW → NHWC with 64
    /// channels of 56² 0.66 against 1.08–1.09, 256 channels 0.93–0.97 against 1.00–1.18 (level in
    /// `relayout bench`), the (0,2,1) permutation of 64 × 512² 0.61–0.64 against 0.72–0.81; 32
    /// channels, whose destination rows two lines apart took 256-byte runs in 8 KiB blocks before,
    /// 0.72–0.75 against 0.86–0.99. On the Zen 3 VM, with the AVX tiles of then, across had won
    /// against 256-byte runs in 8 KiB blocks (back-to-back runs, ms: 8000² f32 54–66 against
    /// 84–111, 8064² 50–53 against 92–108, the (0,2,1) permutation 19–20 against 24–25). The rule
    /// is measured on the Zen 4 VM alone: on the Zen 3 and Intel VMs, and without AVX-512, it is
    /// not known; the runs across stay a tuning candidate, the eighth distinct plan in rank for
    /// 8000² f32, which the budget of the largest transposes may not reach. Rows in one set keep
    /// 256-byte runs in 8 KiB blocks, which read two lines of each row where 16 KiB blocks read
    /// four (8192² f32 0.69–0.73 of memcpy in 8 KiB blocks against 0.73–0.77 in 16 KiB, level).
    ///
    /// ```
    /// use relayout::plan::Blocking;
    /// use relayout::Target;
    ///
    /// let host = Target::host();
    /// // An 8000² f64 transpose: rows 64000 bytes apart.
    /// assert_eq!(Blocking::streamed(8, 64000, 64000, host), Blocking::STREAMED_256_AHEAD);
    /// // The (0,2,1) permutation of 64 × 512² f64: rows of 4 KiB.
    /// assert_eq!(Blocking::streamed(8, 4096, 4096, host), Blocking::STREAMED_512);
    /// // The 4-D reversal of 64⁴ f32: rows 1 MiB apart.
    /// assert_eq!(Blocking::streamed(4, 1 << 20, 1 << 20, host), Blocking::STREAMED_256_GROUPED);
    /// // 3001 × 4999 u16: rows of 6002 and 9998 bytes, not whole lines.
    /// assert_eq!(Blocking::streamed(2, 6002, 9998, host), Blocking::STREAMED_512_WIDE);
    /// // 8000² u16: rows 16000 bytes apart, in 32 L1 sets; 8192² u16: all in one set.
    /// assert_eq!(Blocking::streamed(2, 16000, 16000, host), Blocking::STREAMED_256);
    /// assert_eq!(Blocking::streamed(2, 16384, 16384, host), Blocking::STREAMED_256_NARROW);
    /// // 8000² f32: rows 32000 bytes apart, in 16 L1 sets; 8192² f32: all in one set.
    /// assert_eq!(Blocking::streamed(4, 32000, 32000, host), Blocking::STREAMED_256);
    /// assert_eq!(Blocking::streamed(4, 32768, 32768, host), Blocking::STREAMED_256_NARROW);
    /// // NCHW -> NCHW16c f32: destination rows of 64 bytes, source rows of 56² f32.
    /// assert_eq!(Blocking::streamed(4, 64, 12544, host), Blocking::STREAMED_TILES);
    /// ```
    pub fn streamed(
        elem_size: usize,
        dst_row_bytes: usize,
        src_row_bytes: usize,
        target: Target,
    ) -> Blocking {
        let runs = Blocking::STREAMED_256.run_bytes;
        let whole_lines = |bytes: usize| bytes.is_multiple_of(target.line_bytes.max(1));
        let odd_rows = !(whole_lines(dst_row_bytes) && whole_lines(src_row_bytes));
        match elem_size {
            _ if short_source_rows(elem_size, src_row_bytes) => Blocking::STREAMED_512,
            _ if dst_row_bytes <= target.line_bytes => Blocking::STREAMED_TILES,
            4 if src_row_bytes <= 2 * target.line_bytes => Blocking::STREAMED_512,
            0..=4
                if odd_rows
                    && src_row_bytes > runs
                    && dst_row_bytes >= Blocking::FAR_DESTINATION_ROW_BYTES =>
            {
                Blocking::STREAMED_512_WIDE
            }
            0..=1 => Blocking::STREAMED_256.across(),
            2..=4 if src_row_bytes <= runs => Blocking::STREAMED_256.across(),
            2..=4 if src_row_bytes >= Blocking::VERY_FAR_SOURCE_ROW_BYTES => {
                Blocking::STREAMED_256_GROUPED
            }
            2..=4 if target.start_sets(src_row_bytes) > 1 => Blocking::STREAMED_256,
            2..=4 => Blocking::STREAMED_256_NARROW,
            _ if src_row_bytes >= Blocking::FAR_SOURCE_ROW_BYTES => Blocking::STREAMED_256_AHEAD,
            _ => Blocking::STREAMED_512,
        }
    }

    /// The most blocks ahead a staged block prefetches ([`Blocking::prefetch_ahead`]).
    pub const MAX_PREFETCH_AHEAD: usize = 16;

    /// This blocking with each block's source prefetched `blocks` blocks ahead
    /// ([`Blocking::prefetch_ahead`]).
    ///
    /// ```
    /// use relayout::plan::Blocking;
    ///
    /// let far = Blocking::STREAMED_256_NARROW.prefetching(3);
    /// assert_eq!(far.prefetch_ahead, 3);
    /// assert_eq!(far.block_bytes, Blocking::STREAMED_256_NARROW.block_bytes);
    /// ```
    pub const fn prefetching(self, blocks: usize) -> Blocking {
        Blocking {
            prefetch_ahead: blocks,
            ..self
        }
    }

    /// How many blocks ahead this blocking prefetches: [`Blocking::prefetch_ahead`] within 1 to
    /// [`Blocking::MAX_PREFETCH_AHEAD`] (a caller's 0 or huge count is only advice).
    pub(crate) fn prefetch_blocks(self) -> usize {
        self.prefetch_ahead.clamp(1, Blocking::MAX_PREFETCH_AHEAD)
    }

    /// The most consecutive blocks one prefetch asks for ([`Blocking::prefetch_group`]).
    pub const MAX_PREFETCH_GROUP: usize = 64;

    /// For how many blocks one prefetch asks: [`Blocking::prefetch_group`] within 1 to
    /// [`Blocking::MAX_PREFETCH_GROUP`].
    pub(crate) fn prefetch_blocks_at_once(self) -> usize {
        self.prefetch_group.clamp(1, Blocking::MAX_PREFETCH_GROUP)
    }

    /// This blocking with its register tiles walked across the source rows ([`Walk::Across`]).
    ///
    /// ```
    /// use relayout::plan::{Blocking, Walk};
    ///
    /// let across = Blocking::STREAMED_512.across();
    /// assert_eq!(across.walk, Walk::Across);
    /// assert_eq!(across.run_bytes, Blocking::STREAMED_512.run_bytes);
    /// ```
    pub const fn across(self) -> Blocking {
        Blocking {
            walk: Walk::Across,
            ..self
        }
    }
}

impl fmt::Display for Blocking {
    /// `run 256, block 8192, macro 4x4, write streamed, walk along, prefetch 3, group 8` (no
    /// `prefetch` for the next block, no `group` for a block at a time): the blocking's part of
    /// the form [`Tactics`] displays.
    ///
    /// ```
    /// use relayout::plan::Blocking;
    ///
    /// assert_eq!(
    ///     Blocking::STREAMED_256.to_string(),
    ///     "run 256, block 16384, macro 4x4, write streamed, walk along"
    /// );
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "run {}, block {}, macro {}x{}, write {}, walk {}",
            self.run_bytes,
            self.block_bytes,
            self.macro_strips,
            self.macro_blocks,
            match self.write {
                BlockWrite::InPlace => "in-place",
                BlockWrite::Staged => "staged",
                BlockWrite::Streamed => "streamed",
                BlockWrite::StreamedTiles => "streamed tiles",
            },
            match self.walk {
                Walk::Along => "along",
                Walk::Across => "across",
            }
        )?;
        if self.prefetch_ahead != 1 {
            write!(f, ", prefetch {}", self.prefetch_ahead)?;
        }
        if self.prefetch_group != 1 {
            write!(f, ", group {}", self.prefetch_group)?;
        }
        Ok(())
    }
}

impl Default for Blocking {
    /// [`Blocking::DEFAULT`].
    fn default() -> Blocking {
        Blocking::DEFAULT
    }
}

impl Tiling {
    /// The blocking for transposes of `elem_size`-byte elements whose destination rows (one per
    /// step along the source-contiguous loop) lie `dst_row_bytes` apart and whose source rows
    /// (one per step along the destination-contiguous loop) lie `src_row_bytes` apart on
    /// `target`, into a destination of `dst_bytes` whose writes stream (`streams`: large, and
    /// [`LargeWrites::Streamed`]) or not.
    pub fn blocking(
        self,
        elem_size: usize,
        dst_row_bytes: usize,
        src_row_bytes: usize,
        dst_bytes: usize,
        streams: bool,
        target: Target,
    ) -> Blocking {
        match self {
            Tiling::Fitted if streams => {
                Blocking::streamed(elem_size, dst_row_bytes, src_row_bytes, target)
            }
            Tiling::Fitted => {
                Blocking::fitted(elem_size, dst_row_bytes, src_row_bytes, dst_bytes, target)
            }
            Tiling::Fixed(blocking) => blocking,
        }
    }
}

impl Tactics {
    /// The tactics worth measuring against each other, ranked: tuning measures them in this
    /// order as far as its budget goes ([`Options::tune_budget`]). First the default; then the
    /// default with staged zips and unzips that read one stream of source read in pieces side
    /// by side ([`LargeWrites::StreamedInPieces`]; it plans what the default plans for every
    /// other kernel, so it costs no measurement there); then 128-byte runs streamed along the
    /// source rows in 8 KiB blocks ([`Blocking::STREAMED_128`]), which beat it on the large f32
    /// transposes of long source rows on a 2-core Intel Xeon VM (family 6, model 167); then
    /// 256-byte runs along them in 16 KiB blocks ([`Blocking::STREAMED_256`]), the fastest
    /// candidate for most large transposes on a 2-core AMD EPYC Zen 3 VM (family 25, model 1:
    /// 2048 × 4096 f64 0.85–0.87 of memcpy against 0.61–0.62 for the default and 0.74–0.82 for
    /// the 128-byte runs, 8192² f32 0.43 against 0.26 and 0.34, in runs interleaved with
    /// memcpy), where ranked seventeenth it was never measured on the 64 MiB ones; then
    /// 256-byte runs across the source rows in 16 KiB blocks, which most often beat the default
    /// on a 2-core AMD EPYC (Zen 4) VM for u8, u16 and NHWC → NCHW (`relayout bench
    /// --candidates`), and on the Zen 3 VM the 8000² u16 transpose (0.57–0.65 of memcpy
    /// against 0.32–0.53 for the default, runs interleaved with memcpy), ranked before the
    /// prefetched stores so that tensors of about 100 MiB, whose budget buys three or four
    /// candidates, reach it (for copies it plans what the default plans, so their order stays);
    /// then 256-byte runs along the source rows in 8 KiB blocks
    /// ([`Blocking::STREAMED_256_NARROW`]), the default's blocking for long 2- and 4-byte source
    /// rows until 512-byte runs across them took its place where the rows start in more than one L1
    /// set (faster by 1.25–2× on the Zen 3 VM; 256-byte runs in 16 KiB blocks have since replaced
    /// them on the Zen 4 VM, see [`Blocking::streamed`]): the fastest or close to it for those on
    /// the Zen 4 VM, so tuning measures it early on machines that favour it; then ordinary stores
    /// that ask for lines ahead ([`LargeWrites::Prefetched`]: large copies and in-place transposes
    /// on a 2-core Intel Xeon VM, family 6, model 85, ran at 1.15–1.17 of memcpy where the
    /// others reached 1.03–1.09; ranked after the 128-byte runs, so that the budget of the
    /// largest transposes, a few runs, still reaches those: ranked before them, it took 8192²
    /// f32 from 0.72 of memcpy to 0.52–0.58, tuned); then runs of 512 bytes along the source
    /// rows, which most often beat the default for f64 on the Zen 4 VM; then the default with
    /// ordinary stores for copies and zips (and tiles stored in place, fitted to the
    /// destination's rows, for transposes: where no transpose is involved, the only
    /// alternative, as the others plan what the default plans); then runs of 512 bytes across
    /// the source rows, and runs of 512 bytes along and across them in the destination's loop
    /// order (band by band of destination rows: on that VM the fastest for NHWC → NCHW with
    /// short source rows); the default in the source's order; then the rest: runs of 1 KiB along
    /// and across, 256-byte runs in 4 KiB and 16 KiB blocks stored in place, no macro blocks, in
    /// the destination's order 1 KiB runs, the default, and the default with ordinary stores,
    /// then 256-byte runs in 8 KiB blocks prefetched three blocks ahead
    /// ([`Blocking::STREAMED_256_AHEAD`], the default for 8-byte elements whose source rows are
    /// far apart, and on the Zen 4 VM sometimes faster for f32 ones too), and the default with
    /// ordinary stores in the source's order: where source and destination together fit in
    /// the last-level cache, on a 2-core Intel Xeon VM (family 6, model 167) NHWC → NCHW16c
    /// of 24.5 MiB ran at 13.9 GB/s that way against 10.2–11.0 in the other orders with
    /// ordinary stores and 10.9 streamed, where the source and destination stayed in its
    /// cache from one run to the next (`relayout bench`, one run each); and the prefetched
    /// stores in the destination's order (XLA's `T(8,128)` f32 tiles at 1.16–1.19 of memcpy on
    /// the model-85 Xeon, against 1.11 in the source's order); then 512-byte runs in 32 KiB
    /// blocks ([`Blocking::STREAMED_512_WIDE`], the default where rows are not whole lines
    /// apart, for the transposes whose rows are); and at the very last, register
    /// tiles streamed straight to the destination in runs of 256 bytes across the source rows
    /// ([`Blocking::STREAMED_TILES`]), the fastest for a 2048 × 4096 f64 transpose on the
    /// model-167 Xeon, and at 0.08–0.11 of memcpy the slowest of all for every large transpose
    /// measured on a 2-core AMD EPYC (Zen 4) VM (`relayout bench --candidates`: that f64
    /// transpose, 8000² f32, NCHW → NHWC of 256 channels, the (0,2,1) permutation): ranked
    /// ninth, its one run of the 8000² f32 transpose (250–280 ms) took tuning to 0.49–0.52 s;
    /// last, it is measured where the budget reaches every candidate
    /// (the 64 MiB f64 transpose's runs take about 6 ms).
    ///
    /// [`Options::tune_budget`]: crate::Options::tune_budget
    pub const CANDIDATES: [Tactics; 26] = [
        Tactics::fitted(LargeWrites::Streamed),
        Tactics::fitted(LargeWrites::StreamedInPieces),
        Tactics::fixed(Blocking::STREAMED_128),
        Tactics::fixed(Blocking::STREAMED_256),
        Tactics::fixed(Blocking::STREAMED_256.across()),
        Tactics::fixed(Blocking::STREAMED_256_NARROW),
        Tactics::fitted(LargeWrites::Prefetched),
        Tactics::fixed(Blocking::STREAMED_512),
        Tactics::fitted(LargeWrites::Stored),
        Tactics::fixed(Blocking::STREAMED_512.across()),
        Tactics::fixed(Blocking::STREAMED_512).ordered(LoopOrder::Destination),
        Tactics::fixed(Blocking::STREAMED_512.across()).ordered(LoopOrder::Destination),
        Tactics::fitted(LargeWrites::Streamed).ordered(LoopOrder::Source),
        Tactics::fixed(Blocking::STREAMED_1K),
        Tactics::fixed(Blocking::STREAMED_1K.across()),
        Tactics::fixed(Blocking::LONG_RUNS),
        Tactics::fixed(Blocking::LLC_RUNS),
        Tactics::fixed(Blocking {
            macro_strips: 1,
            macro_blocks: 1,
            ..Blocking::DEFAULT
        }),
        Tactics::fixed(Blocking::STREAMED_1K).ordered(LoopOrder::Destination),
        Tactics::fitted(LargeWrites::Streamed).ordered(LoopOrder::Destination),
        Tactics::fitted(LargeWrites::Stored).ordered(LoopOrder::Destination),
        Tactics::fixed(Blocking::STREAMED_256_AHEAD),
        Tactics::fitted(LargeWrites::Stored).ordered(LoopOrder::Source),
        Tactics::fitted(LargeWrites::Prefetched).ordered(LoopOrder::Destination),
        Tactics::fixed(Blocking::STREAMED_512_WIDE),
        Tactics::fixed(Blocking::STREAMED_TILES),
    ];

    /// Fitted tiling, large destinations written as `large_writes` says, loops in the fitted
    /// order.
    const fn fitted(large_writes: LargeWrites) -> Tactics {
        Tactics {
            tiling: Tiling::Fitted,
            large_writes,
            order: LoopOrder::Fitted,
        }
    }

    /// This blocking for transposes, large destinations streamed, loops in the fitted order.
    pub const fn fixed(blocking: Blocking) -> Tactics {
        Tactics {
            tiling: Tiling::Fixed(blocking),
            large_writes: LargeWrites::Streamed,
            order: LoopOrder::Fitted,
        }
    }

    /// These tactics with the loops in `order`.
    ///
    /// ```
    /// use relayout::plan::{LoopOrder, Tactics};
    ///
    /// let t = Tactics::default().ordered(LoopOrder::Destination);
    /// assert_eq!(t.order, LoopOrder::Destination);
    /// assert_eq!(t.tiling, Tactics::default().tiling);
    /// ```
    pub const fn ordered(self, order: LoopOrder) -> Tactics {
        Tactics { order, ..self }
    }
}

impl fmt::Display for Tactics {
    /// `fitted, large streamed` or
    /// `run 256, block 8192, macro 4x4, write streamed, walk along, prefetch 3, group 8, large
    /// streamed, order destination` (no `prefetch` for the next block, no `group` for a block
    /// at a time, no `order` for the fitted order):
    /// the form tuning files hold, which
    /// [`str::parse`] reads back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.tiling {
            Tiling::Fitted => write!(f, "fitted")?,
            Tiling::Fixed(b) => write!(f, "{b}")?,
        }
        let large = match self.large_writes {
            LargeWrites::Streamed => "streamed",
            LargeWrites::StreamedInPieces => "streamed in pieces",
            LargeWrites::Stored => "stored",
            LargeWrites::Prefetched => "prefetched",
        };
        write!(f, ", large {large}")?;
        match self.order {
            LoopOrder::Fitted => Ok(()),
            LoopOrder::Source => write!(f, ", order source"),
            LoopOrder::Destination => write!(f, ", order destination"),
        }
    }
}

impl FromStr for Tactics {
    type Err = Error;

    /// Reads the form [`Tactics`] displays; without an `order` field, the fitted order.
    ///
    /// ```
    /// use relayout::plan::Tactics;
    ///
    /// for t in Tactics::CANDIDATES {
    ///     assert_eq!(t.to_string().parse::<Tactics>()?, t);
    /// }
    /// assert!("fitted, large sideways".parse::<Tactics>().is_err());
    /// assert!("fitted, large stored, order upwards".parse::<Tactics>().is_err());
    /// # Ok::<(), relayout::Error>(())
    /// ```
    fn from_str(text: &str) -> Result<Tactics> {
        let bad = |what: String| Error::Parse {
            notation: "tactics",
            column: 1,
            message: format!("{what} in '{text}'"),
        };
        let fields: Vec<(&str, &str)> = text
            .split(',')
            .map(|field| {
                let field = field.trim();
                field.split_once(' ').unwrap_or((field, ""))
            })
            .collect();
        let get = |name: &str| {
            fields
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| *v)
                .ok_or_else(|| bad(format!("no '{name}'")))
        };
        let number = |name: &str| {
            get(name)?
                .parse::<usize>()
                .map_err(|_| bad(format!("'{name}' is not a count")))
        };
        let large_writes = match get("large")? {
            "streamed" => LargeWrites::Streamed,
            "streamed in pieces" => LargeWrites::StreamedInPieces,
            "stored" => LargeWrites::Stored,
            "prefetched" => LargeWrites::Prefetched,
            other => return Err(bad(format!("large writes '{other}'"))),
        };
        let order = match get("order") {
            Err(_) => LoopOrder::Fitted,
            Ok("source") => LoopOrder::Source,
            Ok("destination") => LoopOrder::Destination,
            Ok(other) => return Err(bad(format!("loop order '{other}'"))),
        };
        if fields.first() == Some(&("fitted", "")) {
            return Ok(Tactics {
                tiling: Tiling::Fitted,
                large_writes,
                order,
            });
        }
        // A count from 1 to `most`, 1 where the field is missing.
        let optional_count = |name: &str, most: usize, what: fn(usize) -> String| {
            if get(name).is_err() {
                return Ok(1);
            }
            match number(name)? {
                n @ 1.. if n <= most => Ok(n),
                n => Err(bad(format!("{} (1 to {most})", what(n)))),
            }
        };
        let (strips, blocks) = get("macro")?
            .split_once('x')
            .ok_or_else(|| bad("'macro' is not STRIPSxBLOCKS".into()))?;
        let count = |v: &str| v.parse::<usize>().map_err(|_| bad(format!("macro '{v}'")));
        let blocking = Blocking {
            run_bytes: number("run")?,
            block_bytes: number("block")?,
            macro_strips: count(strips)?,
            macro_blocks: count(blocks)?,
            write: match get("write")? {
                "in-place" => BlockWrite::InPlace,
                "staged" => BlockWrite::Staged,
                "streamed" => BlockWrite::Streamed,
                "streamed tiles" => BlockWrite::StreamedTiles,
                other => return Err(bad(format!("write '{other}'"))),
            },
            walk: match get("walk")? {
                "along" => Walk::Along,
                "across" => Walk::Across,
                other => return Err(bad(format!("walk '{other}'"))),
            },
            prefetch_ahead: optional_count("prefetch", Blocking::MAX_PREFETCH_AHEAD, |n| {
                format!("prefetch {n} blocks ahead")
            })?,
            prefetch_group: optional_count("group", Blocking::MAX_PREFETCH_GROUP, |n| {
                format!("prefetch groups of {n} blocks")
            })?,
        };
        Ok(Tactics {
            tiling: Tiling::Fixed(blocking),
            large_writes,
            order,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Plan;
    use crate::Layout;

    #[test]
    fn blockings_that_cut_the_same_loops_make_one_plan_that_reports_its_own() {
        // The transpose of an n × n f32 matrix, blocked by `b`.
        let plan = |n: usize, b: Blocking| {
            let (src, dst) = (Layout::row_major(&[n, n]), Layout::col_major(&[n, n]));
            let tactics = Tactics::fixed(b);
            Plan::with_tactics(&src.unwrap(), &dst.unwrap(), 4, tactics, Target::host()).unwrap()
        };
        // An 8 × 8 matrix is smaller than a block of either.
        let (short, long) = (plan(8, Blocking::DEFAULT), plan(8, Blocking::LONG_RUNS));
        assert_eq!(short, long);
        assert_eq!(short.regions(), long.regions());
        assert_eq!(short.blocking(), Some(Blocking::DEFAULT));
        assert_eq!(long.blocking(), Some(Blocking::LONG_RUNS));
        // Loops cut otherwise make another plan.
        assert_ne!(plan(512, Blocking::DEFAULT), plan(512, Blocking::LONG_RUNS));
    }

    #[test]
    fn prefetch_groups_read_back_and_refuse_nonsense() {
        let grouped = Tactics::fixed(Blocking::STREAMED_256_GROUPED);
        let text = grouped.to_string();
        assert!(text.contains(", group 8,"), "{text}");
        assert_eq!(text.parse::<Tactics>().unwrap(), grouped);
        let plain = Tactics::fixed(Blocking::STREAMED_256_NARROW).to_string();
        assert!(!plain.contains("group"), "{plain}");
        for bad in ["0", "65", "many"] {
            let text = text.replace("group 8", &format!("group {bad}"));
            assert!(text.parse::<Tactics>().is_err(), "{text}");
        }
        assert_eq!(Blocking::STREAMED_256_GROUPED.prefetch_blocks_at_once(), 8);
        let huge = Blocking {
            prefetch_group: usize::MAX,
            ..Blocking::DEFAULT
        };
        assert_eq!(huge.prefetch_blocks_at_once(), Blocking::MAX_PREFETCH_GROUP);
    }

    #[test]
    fn rows_fall_into_sets_by_their_stride() {
        let host = Target::host();
        for (row_bytes, sets) in [
            (4096, 1),
            (32768, 1),
            (2048, 2),
            (6144, 2),
            (1024, 4),
            (3072, 4),
            (32000, 16),
            (12544, 16),
            (64, 64),
            (100, 64),
        ] {
            assert_eq!(host.start_sets(row_bytes), sets, "{row_bytes}");
        }
        // A machine with twice the sets: rows 4 KiB apart now start in two.
        let big_l1 = Target {
            l1_sets: 128,
            ..host
        };
        assert_eq!(big_l1.start_sets(4096), 2);
        assert_eq!(big_l1.start_sets(8192), 1);
    }

    #[test]
    fn fitting_follows_the_l1_sets() {
        // A host whose writes stream from 1 GiB.
        let host = Target {
            stream_min_bytes: 1 << 30,
            ..Target::host()
        };
        let (large, small) = (2 * Blocking::BEYOND_L2_BYTES, Blocking::BEYOND_L2_BYTES - 1);
        // (element size, destination rows, source rows, destination bytes, blocking). Source
        // rows of 256 and 512 bytes beyond the L2 take 512-byte runs, wherever the destination
        // rows start; not 1-byte elements, rows of a KiB, nor rows in two L1 sets. Longer
        // source rows of 2- and 4-byte elements beyond the L2 take 256-byte runs in 16 KiB
        // blocks into destination rows longer than a line, unless those start in one set.
        // 4-byte elements up to 1 MiB of destination take 1 KiB runs unless their rows start
        // in one set.
        let long = 8000;
        let mut cases = vec![
            (1, 3072, long, large, Blocking::DEFAULT),
            (2, 3072, long, small, Blocking::LONG_RUNS),
            (4, 3072, long, small, Blocking::L2_RUNS),
            (4, 2048, long, Blocking::BEYOND_L2_BYTES, Blocking::L2_RUNS),
            (
                4,
                2048,
                long,
                Blocking::BEYOND_L2_BYTES + 1,
                Blocking::LLC_RUNS,
            ),
            (4, 4096, long, small, Blocking::STAGED_RUNS),
            (4, 960, long, large, Blocking::LLC_RUNS),
            (8, 960, long, large, Blocking::MEDIUM_RUNS),
            (8, 3072, long, large, Blocking::LONG_RUNS),
            (2, 3072, long, large, Blocking::LLC_RUNS),
            (4, 3072, 1024, large, Blocking::LONG_RUNS),
            (4, 960, long, small, Blocking::L2_RUNS),
            (2, 960, long, small, Blocking::DEFAULT),
            (2, 256, long, large, Blocking::LLC_RUNS),
            (1, 960, long, large, Blocking::DEFAULT),
            (4, 64, long, large, Blocking::DEFAULT),
            (1, 2048, long, small, Blocking::LONG_RUNS),
            (4, 8192, long, large, Blocking::STAGED_RUNS),
            (4, 12_544, 256, small, Blocking::L2_RUNS),
            (2, 12_544, 256, small, Blocking::LONG_RUNS),
            (1, 12_544, 256, large, Blocking::DEFAULT),
            (4, 12_544, 1024, large, Blocking::LONG_RUNS),
            (4, 2048, 256, large, Blocking::LONG_RUNS),
        ];
        for (elem_size, src_row) in [(4, 256), (2, 512), (8, 512)] {
            for dst_row in [960, 3072, 12_544] {
                cases.push((
                    elem_size,
                    dst_row,
                    src_row,
                    large,
                    Blocking::SHORT_SOURCE_RUNS,
                ));
            }
        }
        for (elem_size, dst_row, src_row, dst_bytes, blocking) in cases {
            let fitted = Blocking::fitted(elem_size, dst_row, src_row, dst_bytes, host);
            assert_eq!(
                fitted, blocking,
                "{elem_size} bytes, rows {dst_row}, {src_row}"
            );
        }
        let fixed = Blocking::STREAMED_512;
        assert_eq!(
            Tiling::Fixed(fixed).blocking(4, 4096, 4096, 1 << 30, true, host),
            fixed
        );
        assert_eq!(
            Tiling::Fitted.blocking(4, 4096, 4096, 1 << 20, false, host),
            Blocking::STAGED_RUNS
        );
        for (elem_size, src_row_bytes, streamed) in [
            (1, 3072, Blocking::STREAMED_256.across()),
            (2, 3072, Blocking::STREAMED_256),
            (2, 256 - 2, Blocking::STREAMED_256.across()),
            (4, 3072, Blocking::STREAMED_256),
            (4, 128, Blocking::STREAMED_512),
            (4, 192, Blocking::STREAMED_256.across()),
            (8, 3072, Blocking::STREAMED_512),
            // Short source rows: 512-byte runs, band by band of destination rows.
            (1, 256, Blocking::STREAMED_256.across()),
            (2, 256, Blocking::STREAMED_512),
            (4, 256, Blocking::STREAMED_512),
            (4, 1024, Blocking::STREAMED_512),
            (4, 1088, Blocking::STREAMED_256),
            // Source rows not whole lines apart: 512-byte runs in 32 KiB blocks, but not for
            // 8-byte elements.
            (4, 1028, Blocking::STREAMED_512_WIDE),
            (1, 4999, Blocking::STREAMED_512_WIDE),
            (2, 9998, Blocking::STREAMED_512_WIDE),
            (8, 39992, Blocking::STREAMED_256_AHEAD),
            (8, 4008, Blocking::STREAMED_512),
            (8, 512, Blocking::STREAMED_512),
            // Far rows: three blocks ahead for 8-byte elements only.
            (8, 16384, Blocking::STREAMED_256_AHEAD),
            (8, 64000, Blocking::STREAMED_256_AHEAD),
            (8, 16380, Blocking::STREAMED_512),
            (4, 64000, Blocking::STREAMED_256),
            (2, 16000, Blocking::STREAMED_256),
            // Source rows a multiple of 4 KiB apart (all in one L1 set): along them.
            (4, 32768, Blocking::STREAMED_256_NARROW),
            (2, 16384, Blocking::STREAMED_256_NARROW),
            (4, 4096, Blocking::STREAMED_256_NARROW),
            (1, 8000, Blocking::STREAMED_256.across()),
        ] {
            assert_eq!(
                Tiling::Fitted.blocking(elem_size, 3072, src_row_bytes, 1 << 30, true, host),
                streamed
            );
            let bands = LoopOrder::Fitted.around_transpose(elem_size, src_row_bytes, true)
                == LoopOrder::Destination;
            assert_eq!(bands, short_source_rows(elem_size, src_row_bytes));
        }
        // Destination rows not whole lines apart: 512-byte runs in 32 KiB blocks where the
        // source rows are longer than a run (3001 × 5008 f32), the blockings of short source
        // rows where they are not.
        for (elem_size, src_row_bytes, streamed) in [
            (4, 20032, Blocking::STREAMED_512_WIDE),
            (2, 3072, Blocking::STREAMED_512_WIDE),
            (1, 3072, Blocking::STREAMED_512_WIDE),
            (4, 256, Blocking::STREAMED_512),
            (4, 128, Blocking::STREAMED_512),
            (2, 128, Blocking::STREAMED_256.across()),
            (8, 20032, Blocking::STREAMED_256_AHEAD),
        ] {
            assert_eq!(
                Tiling::Fitted.blocking(elem_size, 12004, src_row_bytes, 1 << 30, true, host),
                streamed,
                "{elem_size} bytes, source rows {src_row_bytes}"
            );
        }
        // Destination rows odd but closer than a 1 KiB run (the (2,1,0) reversal of 40 × 2 ×
        // 65536 u16: 160 bytes apart) keep the blocking of their source rows.
        assert_eq!(
            Tiling::Fitted.blocking(2, 160, 262_144, 1 << 30, true, host),
            Blocking::STREAMED_256_GROUPED
        );
        // Destination rows a line apart or closer take their tiles straight out, unless the
        // source rows are short; rows two lines apart stay staged.
        for (elem_size, dst_row_bytes, src_row_bytes, streamed) in [
            (4, 64, 12_544, Blocking::STREAMED_TILES),
            (8, 64, 1 << 20, Blocking::STREAMED_TILES),
            (1, 40, 3136, Blocking::STREAMED_TILES),
            (4, 64, 256, Blocking::STREAMED_512),
            // 2- and 4-byte elements go along the source rows in 16 KiB blocks, at any distance
            // of destination rows, unless the source rows all start in one set.
            (4, 128, 12_544, Blocking::STREAMED_256),
            (4, 192, 12_544, Blocking::STREAMED_256),
            (4, 256, 12_288, Blocking::STREAMED_256_NARROW),
            (2, 256, 16_000, Blocking::STREAMED_256),
            (2, 128, 6272, Blocking::STREAMED_256),
            (2, 256, 16_384, Blocking::STREAMED_256_NARROW),
        ] {
            assert_eq!(
                Tiling::Fitted.blocking(
                    elem_size,
                    dst_row_bytes,
                    src_row_bytes,
                    1 << 30,
                    true,
                    host
                ),
                streamed,
                "{elem_size} bytes, rows {dst_row_bytes}, {src_row_bytes}"
            );
        }
    }

    #[test]
    fn prefetch_distances_read_back_and_stay_in_range() {
        let ahead = Tactics::fixed(Blocking::STREAMED_256_AHEAD);
        let text = ahead.to_string();
        assert!(text.contains(", prefetch 3,"), "{text}");
        assert_eq!(text.parse::<Tactics>().unwrap(), ahead);
        // The next block is the default: no field, and lines written before it existed read so.
        let next = Tactics::fixed(Blocking::STREAMED_256_NARROW);
        assert!(!next.to_string().contains("prefetch"));
        let old = "run 256, block 8192, macro 4x4, write streamed, walk along, large streamed";
        assert_eq!(old.parse::<Tactics>().unwrap(), next);
        for bad in ["0", "17", "-1", "far"] {
            let text = old.replace("large", &format!("prefetch {bad}, large"));
            let err = text.parse::<Tactics>().unwrap_err().to_string();
            assert!(err.contains("prefetch"), "{text}: {err}");
        }
    }

    #[test]
    fn candidates_are_distinct_and_start_with_the_default() {
        assert_eq!(Tactics::CANDIDATES[0], Tactics::default());
        for (i, a) in Tactics::CANDIDATES.iter().enumerate() {
            for b in &Tactics::CANDIDATES[i + 1..] {
                assert_ne!(a, b);
            }
        }
    }

    /// On a large transpose, 16 KiB blocks of 256-byte runs are the third distinct plan tuning
    /// measures (after the default and the 128-byte runs), along the source rows, and the
    /// fourth, across them, before the prefetched stores: within the three or four candidates
    /// a 122 MiB tensor's budget buys on the Zen 3 VM. For 2- and 4-byte elements whose rows
    /// start in more than one L1 set the first are the default's blocks, and 8 KiB blocks come
    /// fourth.
    #[test]
    fn sixteen_kib_blocks_are_measured_third_and_fourth_on_large_transposes() {
        use crate::{Layout, Target};
        let fixed = Tactics::fixed;
        // The f64 weights (64 MiB) and the 8000² u16 and f32 transposes (122 and 244 MiB, whose
        // budgets buy three or four candidates on the Zen 3 VM).
        for (shape, elem_size, expected) in [
            (
                [2048, 4096],
                8,
                [
                    Tactics::default(),
                    fixed(Blocking::STREAMED_128),
                    fixed(Blocking::STREAMED_256),
                    fixed(Blocking::STREAMED_256.across()),
                    fixed(Blocking::STREAMED_256_NARROW),
                    Tactics::fitted(LargeWrites::Prefetched),
                ],
            ),
            (
                [8000, 8000],
                2,
                [
                    Tactics::default(),
                    fixed(Blocking::STREAMED_128),
                    fixed(Blocking::STREAMED_256.across()),
                    fixed(Blocking::STREAMED_256_NARROW),
                    Tactics::fitted(LargeWrites::Prefetched),
                    fixed(Blocking::STREAMED_512),
                ],
            ),
            (
                [8000, 8000],
                4,
                [
                    Tactics::default(),
                    fixed(Blocking::STREAMED_128),
                    fixed(Blocking::STREAMED_256.across()),
                    fixed(Blocking::STREAMED_256_NARROW),
                    Tactics::fitted(LargeWrites::Prefetched),
                    fixed(Blocking::STREAMED_512),
                ],
            ),
        ] {
            let (src, dst) = (
                Layout::row_major(&shape).unwrap(),
                Layout::col_major(&shape).unwrap(),
            );
            let mut distinct: Vec<(Tactics, crate::plan::Plan)> = Vec::new();
            for tactics in Tactics::CANDIDATES {
                let plan =
                    crate::plan::Plan::with_tactics(&src, &dst, elem_size, tactics, Target::host())
                        .unwrap();
                if distinct.iter().all(|(_, p)| *p != plan) {
                    distinct.push((tactics, plan));
                }
            }
            let ranked: Vec<Tactics> = distinct.iter().map(|(t, _)| *t).collect();
            assert_eq!(ranked[..6], expected, "{elem_size}-byte elements");
        }
    }
}
