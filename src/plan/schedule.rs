//! Steps 2–4 of planning for one region: coalesce its loops, pick the innermost kernel, order
//! the outer loops, cut transposes into blocks and long copies, zips and unzips into chunks, and
//! decide how each kernel writes.

use super::ir::{
    CopyWrite, Flush, Join, Kernel, LongReads, Loop, Region, RunHead, RunTail, TransposeTile,
    TransposeWrite, UnzipWrite, Walk, ZipTile, ZipWrite, ASK_GROUPS,
};
use super::numbers::{gcd, lcm};
use super::tactics::{BlockWrite, Blocking, LargeWrites, LoopOrder, Tactics};
use super::LineOffsets;
use crate::target::Target;

/// Contiguous copies longer than this many bytes are split into chunks of this size.
const COPY_CHUNK_BYTES: usize = 16 * 1024;
/// A region with fewer outer iterations than this, around a zip or unzip of a long run, has the
/// run cut into chunks, so that threads (which split the outer iterations) share it evenly:
/// two threads split 16 iterations 8 to 8, and any count above it within about 6%.
const SHARED_WORK: usize = 16;
/// Zips that stream are cut into interleaved runs of at most about this many bytes.
const ZIP_CHUNK_BYTES: usize = 4096;
/// Zips whose interleaved run has at least this many bytes stream it out from a staging buffer,
/// one call per run: on a 2-core AMD EPYC VM that took XLA's `T(8,128)(2,1)` bf16 tiles (512-byte
/// runs) from 0.43 to 0.52 of memcpy, while odd/even strips (64-byte runs) fell from 1.0 to 0.78.
const STREAM_ZIP_MIN_BYTES: usize = 512;
/// Zips and unzips whose runs continue one another along their innermost loop (the loops of a
/// streamed zip or unzip are ordered by the destination, so that they do where they can) are
/// staged for up to this many bytes of that loop at a time, and the joined run streamed out with
/// one call. On a 2-core AMD EPYC (Zen 4) VM a C model of odd/even strips of 16 f32 moved
/// 16.7 GB/s with ordinary stores, and 17.7, 19.9, 22.5 and 12.3 GB/s staged in runs of 256
/// bytes, 1, 4 and 16 KiB; relayout's odd/even strips went from 13 to 18–20 GB/s, and XLA's
/// `T(8,128)(2,1)` bf16 tiles (four 512-byte runs a tile) from 10.2–10.4 to 14.1–14.8.
const STAGED_RUN_BYTES: usize = 4096;

/// Into how many pieces of [`STAGED_RUN_BYTES`] a staged run that reads one contiguous stream
/// of source is cut, read side by side ([`LargeWrites::StreamedInPieces`]). On a 2-core Intel
/// Xeon VM (family 6, model 167), a C loop of streaming stores copied 256 MiB at 9.5 GB/s
/// straight through and at 12.3 reading four pages side by side, 256 bytes of each in turn;
/// there the suite's odd/even strips, which read one stream, ran at 7.6 GB/s, where XLA's
/// `T(8,128)` tiles, which read eight rows at once, ran at 12.6.
const STAGED_PIECES: usize = crate::runtime::PIECES_AT_ONCE;

/// What one region is planned for.
#[derive(Clone, Copy)]
pub(super) struct Context {
    /// Bytes of a source element: what the kernels load, and so their lanes.
    pub elem_size: usize,
    /// Bytes of a destination element (the source's unless the plan converts): what a staging
    /// buffer holds.
    pub dst_elem_size: usize,
    /// Whether elements change type on the way. A converting copy does not stream: the
    /// streaming routine moves bytes, not elements.
    pub converts: bool,
    /// Whether zips and unzips may be chosen. Not where a per-index affine map converts the
    /// elements (its kernels need the index along its dim lane by lane, which zips and unzips
    /// do not follow), nor for elements packed several to a byte (which move one by one
    /// unless a transpose moves whole bytes).
    pub zips: bool,
    pub target: Target,
    /// Bytes of the destination.
    pub dst_bytes: usize,
    pub tactics: Tactics,
    /// Where the buffers lie in their cache lines.
    pub line_offsets: LineOffsets,
}

impl Context {
    /// Whether the destination is large enough to stream ([`Target::stream_min_bytes`]).
    fn large(&self) -> bool {
        self.dst_bytes >= self.target.stream_min_bytes
    }

    /// Whether copies, zips and unzips stream (and fitted transposes stage and stream).
    fn streams_runs(&self) -> bool {
        self.large() && self.tactics.large_writes.streams()
    }

    /// Whether copies and transposes stored in place ask for their lines ahead
    /// ([`LargeWrites::Prefetched`]).
    fn asks_ahead(&self) -> bool {
        self.large() && self.tactics.large_writes == LargeWrites::Prefetched
    }

    /// Whether register tiles can be the runtime's 32-byte ones, which stream straight to the
    /// destination ([`TransposeWrite::Streamed`]) or ask for its lines ahead
    /// ([`TransposeWrite::Prefetched`]): 4- and 8-byte elements that move as they are.
    fn wide_tiles(&self) -> bool {
        !self.converts && matches!(self.elem_size, 4 | 8)
    }

    /// Whether a staging buffer of `elements` destination elements fits the target's limit.
    fn fits(&self, elements: usize) -> bool {
        elements.saturating_mul(self.dst_elem_size) <= self.target.stage_limit_bytes
    }
}

/// One region as scheduled: the regions it became, and for a transpose the blocking its blocks
/// were cut by.
pub(super) struct Scheduled {
    pub regions: Vec<Region>,
    pub blocking: Option<Blocking>,
}

/// Schedules one region (its loops in any order, its kernel an element move). A long copy comes
/// back as two regions: whole chunks, then the rest; a transpose as its blocks and partial
/// blocks, with the blocking the tactics gave it (fitted to its rows, or fixed).
pub(super) fn schedule(region: Region, cx: Context) -> Scheduled {
    let mut loops = coalesce(
        region
            .loops
            .iter()
            .copied()
            .filter(|l| l.extent > 1)
            .collect(),
    );
    let elem_size = cx.elem_size;
    let lanes = cx.target.lanes(elem_size);
    let kernel = pick_kernel(&mut loops, lanes, cx.zips);
    let loop_order = match kernel {
        Kernel::Transpose { tile, .. } => cx.tactics.order.around_transpose(
            elem_size,
            src_row_bytes(tile, elem_size),
            cx.streams_runs(),
        ),
        _ => cx.tactics.order,
    };
    let order = match loop_order {
        LoopOrder::Source => Order::Source,
        LoopOrder::Destination => Order::Destination,
        LoopOrder::Fitted => match kernel {
            Kernel::Copy { len, .. } if len * elem_size >= cx.target.line_bytes => Order::Source,
            Kernel::Zip { .. } | Kernel::Unzip { .. } if cx.streams_runs() => Order::Destination,
            _ => Order::Both,
        },
    };
    order_outer(&mut loops, kernel, order);
    let region = Region {
        loops,
        kernel,
        ..region
    };
    let mut transpose_blocking = None;
    let regions = match kernel {
        Kernel::Copy {
            len,
            index_stride,
            write,
        } if len * elem_size > 4 * COPY_CHUNK_BYTES => split_tile_loop(
            region,
            Loop {
                index_stride,
                ..Loop::contiguous(len)
            },
            COPY_CHUNK_BYTES / elem_size,
            |len| Kernel::Copy {
                len,
                index_stride,
                write,
            },
        ),
        Kernel::Transpose { tile, .. } => {
            let dst_row_bytes = tile.a.dst_stride.unsigned_abs() as usize * elem_size;
            let blocking = cx.tactics.tiling.blocking(
                elem_size,
                dst_row_bytes,
                src_row_bytes(tile, elem_size),
                cx.dst_bytes,
                cx.streams_runs(),
                cx.target,
            );
            transpose_blocking = Some(blocking);
            let streams = cx.large()
                && matches!(
                    blocking.write,
                    BlockWrite::Streamed | BlockWrite::StreamedTiles
                );
            let (mut region, mut tile, mut heads) = (region, tile, Vec::new());
            for rows in [Rows::Destination, Rows::Source] {
                let peeled = peel_to_line(&region, tile, rows, streams, cx);
                if let Some((head, rest, rest_tile)) = peeled {
                    (region, tile) = (rest, rest_tile);
                    heads.push(head);
                }
            }
            heads.extend(block_transpose(region, tile, blocking, loop_order, cx));
            heads
        }
        Kernel::Unzip { tile, write } => {
            let (mut regions, region, tile) = match peel_unzip_to_line(&region, tile, write, cx) {
                Some((head, rest, rest_tile)) => (vec![head], rest, rest_tile),
                None => (Vec::new(), region, tile),
            };
            let chunk = |extent| Kernel::Unzip {
                tile: tile.with_long_extent(extent),
                write,
            };
            match zip_chunk_steps(tile, Strips::Destination, region.outer_extent(), cx) {
                Some(steps) if joins_strips(tile, steps, cx) => {
                    let extension = cx.target.line_bytes / cx.dst_elem_size;
                    let strips = joined_strips(&region, tile.long, steps, extension, chunk);
                    regions.extend(strips.into_iter().map(|(region, join)| {
                        let Kernel::Unzip { tile, .. } = region.kernel else {
                            unreachable!("the strips of an unzip are unzips")
                        };
                        // A rest that joins neither end is an unzip like any other, whose
                        // write `choose_writes` decides.
                        let write = match join {
                            Some(Join {
                                head: RunHead::Stored,
                                tail: RunTail::Stored,
                            })
                            | None => write,
                            Some(join) => UnzipWrite::JoinedStrips(join),
                        };
                        Region {
                            kernel: Kernel::Unzip { tile, write },
                            ..region
                        }
                    }))
                }
                Some(steps) => regions.extend(split_tile_loop(region, tile.long, steps, chunk)),
                None => regions.push(region),
            }
            regions
        }
        Kernel::Zip { tile, write } => {
            match zip_chunk_steps(tile, Strips::Source, region.outer_extent(), cx) {
                Some(steps) => split_tile_loop(region, tile.long, steps, |extent| Kernel::Zip {
                    tile: tile.with_long_extent(extent),
                    write,
                }),
                None => vec![region],
            }
        }
        _ => vec![region],
    };
    let regions: Vec<Region> = if cx.streams_runs() {
        regions
            .into_iter()
            .flat_map(|r| stage_runs(r, cx))
            .collect()
    } else {
        regions
    };
    Scheduled {
        regions: regions.into_iter().map(|r| choose_writes(r, cx)).collect(),
        blocking: transpose_blocking,
    }
}

/// Which side of a zip or unzip holds its strips (the short dim's rows along the long loop).
#[derive(Clone, Copy)]
enum Strips {
    /// A zip reads strips and writes one interleaved run.
    Source,
    /// An unzip reads one interleaved run and writes strips.
    Destination,
}

/// Into chunks of how many steps of its long loop a zip or unzip is cut, if at all. Where runs
/// stream, into interleaved runs of about [`ZIP_CHUNK_BYTES`] of whole lines: a zip's
/// interleaved run, an unzip's strips, so that consecutive chunks stream whole lines and none
/// is stored in part by two of them. A zip of 3 f32 strips is cut into runs of 336 steps
/// (4032 bytes, 63 lines) rather than 340 (4080 bytes, a line shared by each two chunks and
/// stored with ordinary stores): NCHW → NHWC with 3 channels of 224 × 224, 64 images, ran
/// 3.54–3.96 ms (median 3.68) against 3.17–3.35 (3.20) on a 2-core AMD EPYC (Zen 3) VM, six
/// alternating runs of each. Elsewhere, where the region has fewer than [`SHARED_WORK`] outer
/// iterations (`outer`), a tile of more than four [`COPY_CHUNK_BYTES`] is cut into chunks of
/// about that many bytes, as long copies are, so that threads can share it: a complex split of 64 MiB is otherwise one unzip, one outer iteration
/// that a single thread moves. Such chunks hold whole calls of asking ahead ([`ASK_GROUPS`]
/// groups of lanes), so that a chunk leaves no groups that store without asking.
fn zip_chunk_steps(tile: ZipTile, strips: Strips, outer: usize, cx: Context) -> Option<usize> {
    let elem_size = cx.elem_size;
    let lanes = cx.target.lanes(elem_size);
    let step_bytes = tile.short.extent * elem_size;
    let tile_bytes = tile.elements() * elem_size;
    let (chunk_bytes, unit) = if cx.streams_runs() {
        if tile_bytes <= ZIP_CHUNK_BYTES {
            return None;
        }
        // Steps whose bytes (in the interleaved run, or in each strip) are whole lines.
        let line = cx.target.line_bytes;
        let whole_lines = match strips {
            Strips::Destination => line / gcd(line, elem_size),
            Strips::Source => line / gcd(line, step_bytes),
        };
        let unit = lcm(whole_lines, lanes);
        (ZIP_CHUNK_BYTES, unit)
    } else {
        if outer >= SHARED_WORK || tile_bytes <= 4 * COPY_CHUNK_BYTES {
            return None;
        }
        (COPY_CHUNK_BYTES, lanes * ASK_GROUPS)
    };
    Some((chunk_bytes / step_bytes / unit).max(1) * unit)
}

/// Whether a copy of `len` elements goes to one of the runtime's row routines: at least a
/// cache line, into a large destination written by them.
fn copies_by_routine(len: usize, cx: Context) -> bool {
    (cx.streams_runs() || cx.asks_ahead())
        && !cx.converts
        && len * cx.elem_size >= cx.target.line_bytes
}

/// Bytes of destination that one call of the runtime's routine writes, about, where a copy's
/// rows are taken end to end ([`take_copy_rows`]): a page, whose source rows stay in the L1
/// while the copy's inner loop comes back to them.
const END_TO_END_ROWS_BYTES: usize = 4096;

/// Lines a copy's rows span at least to be taken end to end ([`take_copy_rows`]). With its
/// 64-byte rows taken end to end (in calls of 4 KiB), NHWC → NCHW16c read each source pixel's
/// 256 bytes in four passes and ran at 0.75–0.81 of memcpy between buffers at a page against
/// 1.42–1.61 (on the Zen 4 VM of [`take_copy_rows`]), and no faster than before between
/// buffers 16 bytes past one (0.51–0.57 against 0.55–0.64): its rows stay where they are.
const END_TO_END_MIN_ROW_LINES: i64 = 4;

/// Takes from a copy's loops the rows of one call of the runtime's routine: none where the
/// region has only its outer work loop, which threads split; else the innermost loop, unless
/// its rows would not all start and end on lines of the destination, span
/// [`END_TO_END_MIN_ROW_LINES`] lines, and another inner loop puts the rows end to end there
/// (its destination stride the copy's length): then about [`END_TO_END_ROWS_BYTES`] of that
/// loop (as many steps as divide it), whose rows the routine writes as one run, streaming the
/// lines where rows meet too ([`crate::runtime`]'s rows end to end). XLA's `T(8,128)` f32
/// tiles copy 512-byte rows, eight of them end to end in each tile; into a destination 16
/// bytes past a line (a `Vec` from glibc's allocator, a NumPy array) the rows of the innermost
/// loop stored two lines of every row in part, each read from memory first. On a 2-core AMD
/// EPYC (Zen 4) VM (`relayout bench --no-tune --page-offset 16`, three alternating runs of
/// each build), the tiles went from 0.97–1.14 of memcpy to 1.33–1.38 (1.46–1.54 with buffers
/// at a page, where they keep the innermost loop: taken end to end there, they ran 7% slower).
fn take_copy_rows(region: &mut Region, len: usize, cx: Context) -> Loop {
    let loops = &mut region.loops;
    let Some(innermost) = loops.len().checked_sub(1).filter(|&i| i > 0) else {
        return super::ir::SINGLE;
    };
    let line = cx.target.line_bytes as i64;
    let size = cx.elem_size as i64;
    let row_bytes = len as i64 * size;
    let on_lines = |bytes: i64| bytes.rem_euclid(line) == 0;
    let start = cx.line_offsets.dst as i64 + region.dst_base * size;
    let whole_lines = on_lines(start)
        && on_lines(row_bytes)
        && loops.iter().all(|l| on_lines(l.dst_stride * size));
    let end_to_end = (1..=innermost)
        .rev()
        .find(|&i| loops[i].dst_stride == len as i64);
    let long_rows = row_bytes >= END_TO_END_MIN_ROW_LINES * line;
    let Some(i) = end_to_end.filter(|_| !whole_lines && long_rows) else {
        return loops.remove(innermost);
    };
    let run = loops[i];
    let most = (END_TO_END_ROWS_BYTES / row_bytes as usize).clamp(1, run.extent);
    let steps = (1..=most)
        .rev()
        .find(|&k| run.extent.is_multiple_of(k))
        .unwrap_or(1);
    match steps {
        _ if steps == run.extent => loops.remove(i),
        1 => loops.remove(innermost),
        _ => {
            loops[i] = run.stepping(steps, run.extent / steps);
            run.with_extent(steps)
        }
    }
}

/// How copies, zips and unzips write, where [`stage_runs`] and [`block_transpose`] have not
/// decided it: copies of a cache line or more into large destinations go to the runtime's
/// streaming routine (the one that reads rows of two pages or more four pages side by side
/// where large writes are [`LargeWrites::StreamedInPieces`]), or to its routine that asks for
/// lines ahead where large writes are [`LargeWrites::Prefetched`] (the runs of the copy's
/// innermost loop, unless that is the outer work loop that threads split, as the rows of one
/// call); so do zips of long interleaved runs, and unzips whose strips are a cache line or more,
/// through the staging buffer (an unzip's strips as rows of one call).
fn choose_writes(mut region: Region, cx: Context) -> Region {
    region.kernel = match region.kernel {
        Kernel::Copy {
            len,
            index_stride,
            write: CopyWrite::Stored,
        } if copies_by_routine(len, cx) => {
            let rows = take_copy_rows(&mut region, len, cx);
            let write = match cx.tactics.large_writes {
                LargeWrites::Prefetched => CopyWrite::Prefetched { rows },
                LargeWrites::StreamedInPieces
                    if len * cx.elem_size >= crate::runtime::SIDE_BY_SIDE_MIN_BYTES =>
                {
                    CopyWrite::Streamed {
                        rows,
                        reads: LongReads::PagesSideBySide,
                    }
                }
                _ => CopyWrite::Streamed {
                    rows,
                    reads: LongReads::InOrder,
                },
            };
            Kernel::Copy {
                len,
                index_stride,
                write,
            }
        }
        Kernel::Zip {
            tile,
            write: ZipWrite::InPlace,
        } if cx.streams_runs()
            && tile.elements() * cx.elem_size >= STREAM_ZIP_MIN_BYTES
            && cx.fits(tile.elements()) =>
        {
            Kernel::Zip {
                tile,
                write: ZipWrite::StreamedTile,
            }
        }
        Kernel::Unzip {
            tile,
            write: UnzipWrite::InPlace,
        } if cx.streams_runs()
            && tile.elements() * cx.elem_size >= STREAM_ZIP_MIN_BYTES
            && tile.long.extent * cx.elem_size >= cx.target.line_bytes
            && cx.fits(tile.elements()) =>
        {
            Kernel::Unzip {
                tile,
                write: UnzipWrite::StreamedStrips,
            }
        }
        Kernel::Zip {
            tile,
            write: ZipWrite::InPlace,
        } if cx.asks_ahead() && asks_by_call(tile) => Kernel::Zip {
            tile,
            write: ZipWrite::Prefetched,
        },
        Kernel::Unzip {
            tile,
            write: UnzipWrite::InPlace,
        } if cx.asks_ahead() && asks_by_call(tile) => Kernel::Unzip {
            tile,
            write: UnzipWrite::Prefetched,
        },
        kernel => kernel,
    };
    region
}

/// Whether a zip or unzip stored in place where large writes ask ahead asks by calls of the
/// runtime ([`ZipWrite::Prefetched`]): where its run holds at least two calls' worth of groups
/// ([`ASK_GROUPS`]).
fn asks_by_call(tile: ZipTile) -> bool {
    tile.long.extent / tile.lanes >= 2 * ASK_GROUPS
}

/// Stages the innermost loop of a zip or unzip whose destination blocks (the kernel's block,
/// when it is contiguous and at most [`STAGED_RUN_BYTES`]) continue one another along that loop:
/// the loop is cut into runs of up to [`STAGED_RUN_BYTES`], each staged and streamed out as one
/// ([`ZipWrite::StreamedRun`], [`UnzipWrite::StreamedRun`]); steps that do not fill a whole run
/// stay in a region of their own, written as [`choose_writes`] says. With
/// [`LargeWrites::StreamedInPieces`], where the steps also read one contiguous stream of source
/// (odd/even strips), a run is [`STAGED_PIECES`] times as long and read as that many pieces side
/// by side ([`Kernel::pieces`]), where the loop has at least two such runs and the staging
/// buffer holds one.
fn stage_runs(region: Region, cx: Context) -> Vec<Region> {
    let elem_size = cx.elem_size;
    let tile = match region.kernel {
        Kernel::Zip { tile, .. } => tile,
        Kernel::Unzip { tile, .. } if tile.short.dst_stride == tile.long.extent as i64 => tile,
        _ => return vec![region],
    };
    let block = tile.elements();
    let Some((&inner, outer)) = region.loops.split_last() else {
        return vec![region];
    };
    if inner.dst_stride != block as i64 || block * elem_size > STAGED_RUN_BYTES {
        return vec![region];
    }
    let piece = (STAGED_RUN_BYTES / (block * elem_size))
        .max(1)
        .min(inner.extent);
    // The source of one step is contiguous (an unzip's interleaved strips; a zip's strips
    // one after another), and the next step's follows it.
    let source_block = match region.kernel {
        Kernel::Zip { .. } => tile.short.src_stride == tile.long.extent as i64,
        _ => true,
    };
    let one_stream = source_block && inner.src_stride == block as i64;
    let in_pieces = cx.tactics.large_writes == LargeWrites::StreamedInPieces;
    let pieces = match STAGED_PIECES * piece {
        run if in_pieces && one_stream && inner.extent >= 2 * run && cx.fits(run * block) => {
            STAGED_PIECES
        }
        _ => 1,
    };
    let steps = piece * pieces;
    let (whole, rest) = (inner.extent / steps, inner.extent % steps);
    // The outermost loop is the threads' unit of work, so a staged loop needs one around it.
    if whole == 0 || (whole == 1 && outer.is_empty()) || !cx.fits(steps * block) {
        return vec![region];
    }
    let mut loops = outer.to_vec();
    if whole > 1 {
        loops.push(inner.stepping(steps, whole));
    }
    let steps = inner.with_extent(steps);
    let kernel = match region.kernel {
        Kernel::Zip { tile, .. } => Kernel::Zip {
            tile,
            write: ZipWrite::StreamedRun { steps, pieces },
        },
        _ => Kernel::Unzip {
            tile,
            write: UnzipWrite::StreamedRun { steps, pieces },
        },
    };
    let mut out = vec![Region {
        loops,
        kernel,
        ..region.clone()
    }];
    if rest > 0 {
        let done = (whole * steps.extent) as i64;
        let mut loops = outer.to_vec();
        loops.push(inner.with_extent(rest));
        out.push(Region {
            src_base: region.src_base + done * inner.src_stride,
            dst_base: region.dst_base + done * inner.dst_stride,
            index_base: region.index_base + done * inner.index_stride,
            loops,
            ..region
        });
    }
    out
}

/// Merges loops that continue each other on both sides (CuTe's coalesce rule on both layouts at
/// once): `(e1, s1, t1)` and `(e2, e1·s1, e1·t1)` become `(e1·e2, s1, t1)`; the index strides
/// of a per-index map must continue each other too.
fn coalesce(mut loops: Vec<Loop>) -> Vec<Loop> {
    'merge: loop {
        for i in 0..loops.len() {
            for j in 0..loops.len() {
                let (inner, outer) = (loops[i], loops[j]);
                let e = inner.extent as i64;
                if i != j
                    && inner.src_stride.checked_mul(e) == Some(outer.src_stride)
                    && inner.dst_stride.checked_mul(e) == Some(outer.dst_stride)
                    && inner.index_stride.checked_mul(e) == Some(outer.index_stride)
                {
                    loops[i].extent *= outer.extent;
                    loops.remove(j);
                    continue 'merge;
                }
            }
        }
        return loops;
    }
}

/// Chooses the kernel from the loops and removes the loops it consumes:
/// a loop contiguous on both sides is a copy; a short loop of strips interleaved with a long
/// one is a zip or unzip (only with `zips`; see [`pick_zip`]); a source-contiguous and a
/// destination-contiguous loop of at least `lanes` each form a transpose; anything else moves
/// single elements, with the destination-contiguous (or smallest destination stride) loop
/// innermost.
///
/// A short loop of exactly `lanes` would also make a transpose, but one of blocks a few
/// elements wide (four f32 channels: each block's destination rows 16 bytes long), which the
/// zip streams as one contiguous run. On a 2-core Intel Xeon VM (family 6, model 167), in three
/// alternating `relayout bench` runs of each build, NCHW → NHWC of 64 images of 4 × 224² f32
/// went from 6.0–6.5 GB/s to 10.1–11.2 that way, NHWC → NCHW from 6.8–7.1 to 7.7–9.2, and
/// 2²³ complex f64 into real and imaginary planes from 5.6–6.0 to 6.9–7.1.
fn pick_kernel(loops: &mut Vec<Loop>, lanes: usize, zips: bool) -> Kernel {
    if let Some(i) = loops
        .iter()
        .position(|l| l.src_stride == 1 && l.dst_stride == 1)
    {
        let run = loops.remove(i);
        return Kernel::Copy {
            len: run.extent,
            index_stride: run.index_stride,
            write: CopyWrite::Stored,
        };
    }
    if let Some(kernel) = zips.then(|| pick_zip(loops, lanes)).flatten() {
        return kernel;
    }
    let a = loops
        .iter()
        .position(|l| l.src_stride == 1 && l.extent >= lanes);
    let b = loops
        .iter()
        .position(|l| l.dst_stride == 1 && l.extent >= lanes);
    if let (Some(ia), Some(ib)) = (a, b) {
        let (la, lb) = (loops[ia], loops[ib]);
        remove_two(loops, ia, ib);
        return Kernel::Transpose {
            tile: TransposeTile {
                a: la,
                b: lb,
                lanes,
                walk: Walk::Along,
                prefetch_ahead: 1,
                prefetch_group: 1,
            },
            write: TransposeWrite::InPlace,
        };
    }
    if let Some(i) = (0..loops.len()).min_by_key(|&i| {
        let l = loops[i];
        (l.dst_stride.unsigned_abs(), l.src_stride.unsigned_abs())
    }) {
        let inner = loops.remove(i);
        loops.push(inner);
    }
    Kernel::Element
}

/// A zip or unzip: a short loop of strips that is contiguous on one side and interleaved with
/// a long loop (at least `lanes`) that is contiguous on the other, of as many strips as
/// [`ZipTile::interleaves`] takes.
fn pick_zip(loops: &mut Vec<Loop>, lanes: usize) -> Option<Kernel> {
    for (i, short) in loops.iter().enumerate() {
        for (j, long) in loops.iter().enumerate() {
            let k = short.extent;
            if i == j || long.extent < lanes || !ZipTile::interleaves(k, lanes) {
                continue;
            }
            let (short, long) = (*short, *long);
            let tile = ZipTile { short, long, lanes };
            let zip = short.dst_stride == 1 && long.src_stride == 1 && long.dst_stride == k as i64;
            let kernel = if zip {
                Kernel::Zip {
                    tile,
                    write: ZipWrite::InPlace,
                }
            } else if short.src_stride == 1 && long.src_stride == k as i64 && long.dst_stride == 1 {
                Kernel::Unzip {
                    tile,
                    write: UnzipWrite::InPlace,
                }
            } else {
                continue;
            };
            remove_two(loops, i, j);
            return Some(kernel);
        }
    }
    None
}

/// Cuts a transpose into blocks as [`Blocking`] describes: strips of destination runs along `b`,
/// blocks along `a`, and macro blocks of strips and blocks, so that one macro block touches a few
/// hundred pages on each side (the TLB's reach) while the source is still read in long strips;
/// each block walks its tiles and is stored as the blocking says (staged only where the block
/// fits the target's staging limit, streamed only into large destinations). The macro loops go
/// inside the region's other loops, strips outside blocks, unless `order` names a side: then
/// they are sorted with the others by that side's strides.
fn block_transpose(
    region: Region,
    tile: TransposeTile,
    blocking: Blocking,
    order: LoopOrder,
    cx: Context,
) -> Vec<Region> {
    let elem_size = cx.elem_size;
    let lanes = tile.lanes;
    let tile = TransposeTile {
        walk: blocking.walk,
        prefetch_ahead: blocking.prefetch_blocks(),
        prefetch_group: blocking.prefetch_blocks_at_once(),
        ..tile
    };
    let strip = lanes.max(blocking.run_bytes / elem_size);
    let width = (blocking.block_bytes / elem_size / strip).max(lanes);
    let outer = region.loops.len();
    let kernel = |a: Loop, b: Loop| {
        let fits = cx.fits(a.extent * b.extent);
        let write = match blocking.write {
            BlockWrite::Streamed if cx.large() && fits => TransposeWrite::Staged(Flush::Streamed),
            BlockWrite::Staged if fits => TransposeWrite::Staged(Flush::Copied),
            BlockWrite::StreamedTiles
                if cx.large()
                    && fits
                    && !cx.converts
                    && elem_size > 1
                    && short_rows_end_to_end(a, b, cx) =>
            {
                TransposeWrite::Staged(Flush::Streamed)
            }
            BlockWrite::StreamedTiles if cx.large() && cx.wide_tiles() => TransposeWrite::Streamed,
            _ if cx.asks_ahead() && cx.wide_tiles() => TransposeWrite::Prefetched,
            _ => TransposeWrite::InPlace,
        };
        Kernel::Transpose {
            tile: TransposeTile { a, b, ..tile },
            write,
        }
    };
    let region = Region {
        kernel: kernel(tile.a, tile.b),
        ..region
    };
    let extension = cx.target.line_bytes / cx.dst_elem_size;
    let strip_kernel = |extent| kernel(tile.a, tile.b.with_extent(extent));
    let strips: Vec<(Region, Option<Join>)> = if joins_runs(tile, strip, width, blocking, cx) {
        joined_strips(&region, tile.b, strip, extension, strip_kernel)
    } else {
        split_tile_loop(region, tile.b, strip, strip_kernel)
            .into_iter()
            .map(|r| (r, None))
            .collect()
    };
    let mut out = Vec::new();
    for (r, join) in strips {
        let Kernel::Transpose { tile: t, .. } = r.kernel else {
            out.push(r);
            continue;
        };
        // The blocks of a strip join their runs as the strip does.
        let rejoin = |k: Kernel| match join {
            Some(join) => joined(k, join),
            None => k,
        };
        let whole = rejoin(kernel(t.a, t.b));
        out.extend(split_tile_loop(
            Region { kernel: whole, ..r },
            t.a,
            width,
            |extent| rejoin(kernel(t.a.with_extent(extent), t.b)),
        ));
    }
    let most_strips = most_macro_strips(strip, src_row_bytes(tile, elem_size));
    let mut out: Vec<Region> = out
        .into_iter()
        .flat_map(|r| {
            cut_macro_loop(
                r,
                outer,
                MacroLoop::Strips,
                blocking.macro_strips,
                most_strips,
            )
        })
        .flat_map(|r| {
            cut_macro_loop(
                r,
                outer,
                MacroLoop::Blocks,
                blocking.macro_blocks,
                usize::MAX,
            )
        })
        .collect();
    for r in &mut out {
        // The loops inside a macro block: none where a region has only strips or only blocks.
        let mut inner = Vec::new();
        if let [strips, blocks] = r.loops[outer..] {
            let (strips_out, strips_in) = group(strips, blocking.macro_strips, most_strips);
            let (blocks_out, blocks_in) = group(blocks, blocking.macro_blocks, usize::MAX);
            r.loops.truncate(outer);
            r.loops.extend(
                [strips_out, blocks_out]
                    .into_iter()
                    .filter(|l| l.extent > 1),
            );
            inner.extend([strips_in, blocks_in].into_iter().filter(|l| l.extent > 1));
        }
        // The fitted order keeps the strip and block loops inside the others, strips outside
        // blocks; an order by one side sorts them with the others.
        match order {
            LoopOrder::Fitted => {}
            LoopOrder::Source => sort_loops(&mut r.loops, Order::Source),
            LoopOrder::Destination => sort_loops(&mut r.loops, Order::Destination),
        }
        r.loops.extend(inner);
    }
    out
}

/// Whether a transpose block's destination rows (one per step of `a`, each `b` long) are shorter
/// than a cache line and lie end to end, so that together they are whole lines: NCHW → NHWC with 8
/// f32 channels (rows of 32 bytes). Where the blocking streams tiles
/// ([`BlockWrite::StreamedTiles`]), such blocks of 2-byte elements and wider that move as they are
/// (a converting plan's rows leave the stage one by one) are staged and streamed out instead, as
/// one run (the streaming routine takes such rows as one). On a 2-core AMD EPYC (Zen 4) VM, NCHW →
/// NHWC of 224² images (`relayout bench --candidates`, two runs) moved 12.5–15.8 GB/s staged
/// against 7.5–7.9 with streamed tiles for 8 f32 channels, 8.3–12.5 against 8.4–8.7 for 10,
/// 9.2–12.8 against 7.3–7.9 for 12, 8.5–13.2 against 7.8–8.2 for 14, 7.5–13.9 against 8.8–9.6 for 4
/// f64 channels and 8.8–15.3 against 8.1–8.3 for 6, 11.9–12.7 against 9.2–9.5 for 16 u16 channels
/// (stored in place) and 9.2–11.1 against 8.6–9.0 for 24; 1-byte elements stay in place (32 u8
/// channels: 6.0–6.2 against 6.7–7.0). Rows with gaps would go out one by one: 8 f32 channels 48
/// bytes apart ran at 4.8 staged against 6.0.
fn short_rows_end_to_end(a: Loop, b: Loop, cx: Context) -> bool {
    let size = cx.dst_elem_size as i64;
    a.dst_stride == b.extent as i64 && a.dst_stride * size < cx.target.line_bytes as i64
}

/// Whether the strips of destination runs of a transpose blocked as `blocking` (`strip` elements
/// along `b`, blocks of up to `width` along `a`) join their runs ([`TransposeWrite::Joined`]):
/// where they are staged and streamed, at least two whole strips long, each a whole number of cache
/// lines up to 512 bytes ([`MAX_JOINED_RUN_BYTES`]), the destination's rows (one per step of `a`)
/// are not whole lines apart, so that most runs start and end inside a line; of elements that move
/// as they are, and the block with a line's worth more along `b` still fits the staging limit.
fn joins_runs(
    tile: TransposeTile,
    strip: usize,
    width: usize,
    blocking: Blocking,
    cx: Context,
) -> bool {
    let line = cx.target.line_bytes;
    let size = cx.dst_elem_size;
    blocking.write == BlockWrite::Streamed
        && cx.large()
        && !cx.converts
        && cx.zips
        && tile.b.extent / strip >= 2
        && (strip * size).is_multiple_of(line)
        && strip * size <= MAX_JOINED_RUN_BYTES
        && !(tile.a.dst_stride.unsigned_abs() as usize * size).is_multiple_of(line)
        && cx.fits(width.min(tile.a.extent) * (strip + line / size))
}

/// Whether the chunks of `steps` elements an unzip's `long` is cut into join their runs
/// ([`UnzipWrite::JoinedStrips`]), as [`joins_runs`] joins a transpose's: where its strips are
/// staged and streamed ([`choose_writes`]), the unzip is at least two chunks long, each a whole
/// number of cache lines, the strips (destination rows) are not whole lines apart, of elements
/// that move as they are, and a chunk with a line's worth more along `long` fits the staging
/// limit. On a 2-core AMD EPYC (Zen 4) VM, NHWC → NCHW into planes of 227² f32 (206 116 bytes
/// apart) ran at 1.05 of memcpy with 3 channels and 0.95 with 5 unjoined, where planes of 224²
/// (whole lines apart) ran at 1.41 and 1.38 (`relayout bench`); joined, untuned, 1.09–1.19 and
/// 1.19–1.28 times as fast, and with 6 channels of 149² 1.52–1.77 (both builds alternating in
/// one process after memcpy, three processes).
fn joins_strips(tile: ZipTile, steps: usize, cx: Context) -> bool {
    let line = cx.target.line_bytes;
    let size = cx.dst_elem_size;
    let chunk = tile.with_long_extent(steps);
    cx.streams_runs()
        && !cx.converts
        && cx.zips
        && chunk.elements() * cx.elem_size >= STREAM_ZIP_MIN_BYTES
        && tile.long.extent / steps >= 2
        && (steps * size).is_multiple_of(line)
        && !(tile.short.dst_stride.unsigned_abs() as usize * size).is_multiple_of(line)
        && cx.fits(tile.short.extent * (steps + line / size))
}

/// The longest runs [`joins_runs`] joins: 512 bytes, the runs of the blocking fitted to rows that
/// are not whole lines apart ([`Blocking::STREAMED_512_WIDE`]). Joining spares the runs the reads
/// of the lines they share (each asked for early, but read from memory before its ordinary stores),
/// and costs the transpose of a line's worth more source rows a block. On a 2-core Intel Xeon VM
/// (family 6, model 85), in `relayout bench --candidates --runs 5` (two rounds of each build,
/// alternating), joined against stored in part: 128-byte runs ([`Blocking::STREAMED_128`]) took
/// 3001 × 4999 f32 from 0.53 of memcpy to 0.60 and 2001 × 3001 f64 from 0.54–0.55 to 0.61–0.62,
/// while 256- and 512-byte runs moved by no more than the rounds' spread, or lost up to 0.06, and
/// 1- and 2-byte elements lost (with the 16-byte tiles of then). On a 2-core AMD EPYC (Zen 4) VM,
/// with the stacked tiles of 1- and 2-byte elements, the same pinned blocking joined against not
/// (both builds' kernels alternating in one process after memcpy, medians of nine rounds): 512-byte
/// runs in 32 KiB blocks (four blocks a macro block, where the fitted blocking has none) took 3001
/// × 4999 u8 1.31 times as fast, 6001 × 8001 u8 1.38, 3001 × 4999 f32 1.61 and 2001 × 4001 f32
/// 1.23; in 16 KiB blocks, 3001 × 4999 u16 1.27 and 3001 × 5056 u16 (destination rows odd only)
/// 1.42; 256-byte runs in 16 KiB blocks, 3001 × 4999 u16 1.94 and f32 1.35; and the blockings
/// fitted to 8-byte elements, whose 256- and 512-byte runs now join, took 3001 × 4999 f64 1.04–1.35
/// times as fast, 4095 × 4097 1.46–1.49, 30001 × 1000 1.36–1.38, 2001 × 4001 0.92–0.98 and 1000 ×
/// 30001 0.90–0.99 (two processes each). Runs of 1 and 2 KiB gained on some shapes and lost on
/// others (7999 × 8001 u16 0.84–0.91) and do not join.
const MAX_JOINED_RUN_BYTES: usize = 512;

/// `kernel` (a staged and streamed transpose) with its runs joined as `join` says; any other
/// kernel as it is.
fn joined(kernel: Kernel, join: Join) -> Kernel {
    match kernel {
        Kernel::Transpose {
            tile,
            write: TransposeWrite::Staged(Flush::Streamed),
        } => Kernel::Transpose {
            tile,
            write: TransposeWrite::Joined(join),
        },
        k => k,
    }
}

/// [`split_tile_loop`] for strips whose runs join (a transpose's `b` cut into strips,
/// [`joins_runs`]; an unzip's `long` cut into chunks, [`joins_strips`]), `b` cut into strips of
/// `strip` elements: the first strip stores the heads of its runs and lends each the line it
/// ends in (`extension` elements more); the strips after it leave their heads to the strip
/// before and lend their tails on, as far as the next strip has the elements to lend (the
/// rest of `b` past the whole strips, if any, must have `extension`); the last run of each row
/// stores its tail.
fn joined_strips(
    region: &Region,
    b: Loop,
    strip: usize,
    extension: usize,
    kernel: impl Fn(usize) -> Kernel,
) -> Vec<(Region, Option<Join>)> {
    let (whole, rest) = (b.extent / strip, b.extent % strip);
    let lent = RunTail::Joined { extension };
    let join = |head, tail| Some(Join { head, tail });
    // Whether the last whole strip lends the rest its line.
    let lends_rest = rest >= extension;
    let mut out = vec![(
        advanced(region, b, 0, kernel(strip)),
        join(RunHead::Stored, lent),
    )];
    let lending = if lends_rest { whole - 1 } else { whole - 2 };
    if lending > 0 {
        let mut middle = advanced(region, b, strip, kernel(strip));
        if lending > 1 {
            middle.loops.push(b.stepping(strip, lending));
        }
        out.push((middle, join(RunHead::Joined, lent)));
    }
    if !lends_rest {
        out.push((
            advanced(region, b, (whole - 1) * strip, kernel(strip)),
            join(RunHead::Joined, RunTail::Stored),
        ));
    }
    if rest > 0 {
        let head = if lends_rest {
            RunHead::Joined
        } else {
            RunHead::Stored
        };
        out.push((
            advanced(region, b, whole * strip, kernel(rest)),
            join(head, RunTail::Stored),
        ));
    }
    out
}

/// Lines a transpose's rows must span for [`peel_to_line`] to move their first elements on
/// their own. The destination line each row shares with the next is then finished by two
/// regions far apart, one read for ownership more a row: on a 2-core Intel Xeon VM (family 6,
/// model 167), into a buffer 16 bytes past a line (untuned, the best of seven runs of each
/// build), NCHW → NHWC with 64 f32 channels (rows of 4 lines) ran 20% slower peeled and with
/// 256 (16 lines) 8% slower, while rows of 32 lines and more ran faster (512² f32 by 25%,
/// 2000² f32 by 25–30%, NHWC → NCHW with 64 channels by 20%, 2000² f64 twice as fast).
const PEELED_ROW_LINES: i64 = 32;

/// [`PEELED_ROW_LINES`] for transposes that stream their blocks out: the partial lines of
/// streamed runs are stored ordinarily and read for ownership from memory, a line each time,
/// so rows of two 256-byte runs pay already. On the Intel Xeon VM, with both buffers 16 bytes
/// past a line, the streamed 256³ reversal (rows of 16 lines) moved 2.8–3.0 GB/s unpeeled,
/// 3.9 peeled and 8.0 between aligned buffers (`relayout bench --no-tune --page-offset`).
const STREAMED_PEELED_ROW_LINES: i64 = 8;

/// The side of a transpose whose rows [`peel_to_line`] lines up.
#[derive(Clone, Copy)]
enum Rows {
    /// The source rows, along the tile's `a`: its blocks then read whole lines.
    Source,
    /// The destination rows, along the tile's `b`: its runs then write whole lines.
    Destination,
}

/// Where a buffer starts part-way into a cache line ([`Context::line_offsets`]) and every row
/// of a transpose on that side starts at the same place in its line, the elements of each row
/// up to its next line as a region of their own (tiles stored in place), and the rest of the
/// transpose with its tile, whose blocks then read (source) or whose runs write (destination)
/// whole lines. Rows must span [`PEELED_ROW_LINES`] lines. A run that starts or ends part-way
/// into a line leaves it to the next strip, a read for ownership more where it has left the
/// cache by then, and a streamed run stores its partial lines ordinarily; a block that reads
/// part of a line splits the 32-byte loads of its tiles. On a 2-core Intel Xeon VM (family 6,
/// model 167), untuned (the best of seven runs), a streamed 4000² f32 transpose moved 7.4 GB/s
/// from an aligned source into a
/// destination 16 bytes past a line peeled (7.5 into an aligned one), 3.7 unpeeled, and 5.2
/// from a source 16 bytes past a line with the destination peeled alone; with both buffers 16
/// bytes past a line, peeling both sides took it from 3.7 to 7.5. Source rows are peeled only
/// where the destination rows are long too: NCHW → NHWC with 64 f32 channels (destination
/// rows of 4 lines, source rows of 196) ran 10–18% slower with its source peeled, its 98
/// blocks a row becoming 97 and a tail.
fn peel_to_line(
    region: &Region,
    tile: TransposeTile,
    rows: Rows,
    streams: bool,
    cx: Context,
) -> Option<(Region, Region, TransposeTile)> {
    let lines = match streams {
        true => STREAMED_PEELED_ROW_LINES,
        false => PEELED_ROW_LINES,
    };
    let (run, across) = match rows {
        Rows::Source => (tile.a, tile.b),
        Rows::Destination => (tile.b, tile.a),
    };
    // Source rows are peeled only where the destination rows are long too: into short ones
    // the unpeeled blocks ran faster.
    if matches!(rows, Rows::Source) && !spans_lines(tile.b, lines, cx) {
        return None;
    }
    let head = line_head(region, run, across, rows, lines, tile.lanes, cx)?;
    let with_run = |run: Loop| match rows {
        Rows::Source => TransposeTile { a: run, ..tile },
        Rows::Destination => TransposeTile { b: run, ..tile },
    };
    let in_place = |tile: TransposeTile| Kernel::Transpose {
        tile,
        write: TransposeWrite::InPlace,
    };
    let first = Region {
        kernel: in_place(with_run(run.with_extent(head))),
        ..region.clone()
    };
    let rest_tile = with_run(run.with_extent(run.extent - head));
    let rest = advanced(region, run, head, in_place(rest_tile));
    Some((first, rest, rest_tile))
}

/// [`peel_to_line`] for an unzip: the first strips' elements up to each strip's next
/// destination line, unzipped in place on their own, and the rest with its tile, whose runs
/// of each strip then cover whole lines. On the Intel Xeon VM, with both buffers 16 bytes past
/// a page (`relayout bench --no-tune --page-offset 16`, two runs of each build, GB/s), NHWC →
/// NCHW of 64 images of 224² went from 5.9–6.4 to 6.6–7.0 with 3 f32 channels and from 5.4–5.9
/// to 6.4–6.8 with 4, and 2²³ complex f32 into real and imaginary planes from 5.7–6.3 to
/// 6.9–7.3 (6.5–6.9, 7.0–7.3 and 7.0–7.3 between buffers at a page).
fn peel_unzip_to_line(
    region: &Region,
    tile: ZipTile,
    write: UnzipWrite,
    cx: Context,
) -> Option<(Region, Region, ZipTile)> {
    let lines = match cx.streams_runs() {
        true => STREAMED_PEELED_ROW_LINES,
        false => PEELED_ROW_LINES,
    };
    let head = line_head(
        region,
        tile.long,
        tile.short,
        Rows::Destination,
        lines,
        tile.lanes,
        cx,
    )?;
    let with_long = |extent: usize| ZipTile {
        long: tile.long.with_extent(extent),
        ..tile
    };
    let first = Region {
        kernel: Kernel::Unzip {
            tile: with_long(head),
            write: UnzipWrite::InPlace,
        },
        ..region.clone()
    };
    let rest_tile = with_long(tile.long.extent - head);
    let kernel = Kernel::Unzip {
        tile: rest_tile,
        write,
    };
    Some((first, advanced(region, tile.long, head, kernel), rest_tile))
}

/// Whether `run` spans at least `lines` cache lines of the target.
fn spans_lines(run: Loop, lines: i64, cx: Context) -> bool {
    (run.extent as i64) * (cx.elem_size as i64) >= lines * cx.target.line_bytes as i64
}

/// How many elements of `run`, a kernel's loop contiguous on the side `rows` names, come
/// before the next line of that side's buffer ([`Context::line_offsets`]), where that buffer
/// lies part-way into a line, the kernel's other loop (`across`) and the region's loops step
/// whole lines on that side (so every row starts at the same place in its line), `run` spans
/// `lines` lines, and those elements are a whole number, at least `lanes` and fewer than the
/// run's.
fn line_head(
    region: &Region,
    run: Loop,
    across: Loop,
    rows: Rows,
    lines: i64,
    lanes: usize,
    cx: Context,
) -> Option<usize> {
    let line = cx.target.line_bytes as i64;
    let size = cx.elem_size as i64;
    let (offset, base) = match rows {
        Rows::Source => (cx.line_offsets.src, region.src_base),
        Rows::Destination => (cx.line_offsets.dst, region.dst_base),
    };
    let stride = |l: &Loop| match rows {
        Rows::Source => l.src_stride,
        Rows::Destination => l.dst_stride,
    };
    let whole_lines = |l: &Loop| (stride(l) * size).rem_euclid(line) == 0;
    if offset == 0
        || cx.converts
        || stride(&run) != 1
        || !whole_lines(&across)
        || !region.loops.iter().all(whole_lines)
        || !spans_lines(run, lines, cx)
    {
        return None;
    }
    let start = (offset as i64 + base * size).rem_euclid(line);
    let head_bytes = (line - start) % line;
    let head = (head_bytes / size) as usize;
    (head_bytes % size == 0 && head >= lanes && head < run.extent).then_some(head)
}

/// `region` with its bases `steps` steps along `run` further, and `kernel`.
fn advanced(region: &Region, run: Loop, steps: usize, kernel: Kernel) -> Region {
    let done = steps as i64;
    Region {
        src_base: region.src_base + done * run.src_stride,
        dst_base: region.dst_base + done * run.dst_stride,
        index_base: region.index_base + done * run.index_stride,
        kernel,
        ..region.clone()
    }
}

/// Bytes between the source rows of a transpose tile: one step along its destination-contiguous
/// loop.
fn src_row_bytes(tile: TransposeTile, elem_size: usize) -> usize {
    tile.b.src_stride.unsigned_abs() as usize * elem_size
}

/// Source pages one macro block of a transpose may read from: half of the 2048 entries of the
/// second-level TLB of the x86-64 cores relayout has run on, leaving the rest to the
/// destination. Macro blocks of more rows than that, each on its own page, missed the TLB on
/// every read: on a 2-core Intel Xeon VM (family 6, model 167), a 2900² u16 transpose in
/// 256-byte runs, 128 source rows a strip, grouped 22 strips (2816 rows) to a macro block,
/// moved 5.7–6.7 GB/s, and 10.1–11.0 in groups of 11, 8 or 2 (`relayout bench` with each
/// blocking pinned in a tuning file, two alternating runs).
const MACRO_SOURCE_PAGES: usize = 1024;

/// Bytes of the pages [`MACRO_SOURCE_PAGES`] counts: the smallest x86-64 and aarch64 page.
const PAGE_BYTES: usize = 4096;

/// The most strips of `strip` source rows, `row_bytes` apart, that one macro block may group
/// ([`MACRO_SOURCE_PAGES`]); at least 1.
fn most_macro_strips(strip: usize, row_bytes: usize) -> usize {
    let rows_per_page = (PAGE_BYTES / row_bytes.max(1)).max(1);
    (MACRO_SOURCE_PAGES * rows_per_page / strip.max(1)).max(1)
}

/// Which of a transpose's two last loops [`cut_macro_loop`] cuts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MacroLoop {
    /// The strips of source rows (the outer one).
    Strips,
    /// The blocks along each strip (the inner one).
    Blocks,
}

/// Cuts a region whose last loops (from `outer` on) are a transpose's strips and blocks into
/// whole macro blocks along `which` of them and a region of the strips or blocks left, where no
/// divisor of their count within `most` comes within half of the macro block's count
/// (`target`, at most `most`) and, for strips, the divisor nearest `target` is more than
/// `most`: a prime count of 23 strips, 16 asked for and at most 8 allowed, becomes 16 and 7
/// instead of one group of 23 or 23 of one; 79 blocks, 4 asked for, become 76 and 3. Counts
/// below the macro block's, and other regions, stay as they are.
///
/// Without the cut, blocks without such a divisor group one at a time, and macro blocks of
/// strips alone ran slower than none: on a 2-core AMD EPYC (Zen 4) VM a 3072 × 5056 u16
/// transpose (79 blocks of 64 elements a strip) in 256-byte runs with 4 × 4 macro blocks moved
/// at 0.68–0.75 of memcpy, with no macro blocks at 0.95–0.98, and with the cut at 0.84–1.01
/// (3072 × 4992, whose 78 blocks group 3 at a time, at 0.77–1.03). Strips whose count has no
/// divisor near `target` are not cut where one within `most` would be allowed: 6016 × 5056 u16
/// (47 strips, 79 blocks) ran at 0.89–0.91 times its speed with them cut into groups of 4, and
/// macro blocks of strips alone ran at 0.60–0.75 of memcpy where blocks alone ran at 0.69–0.88
/// (6016 × 5056, 6016 × 5120 and 6144 × 5120 u16). Pinned blockings back to back after memcpy
/// in one process, or the two builds' kernels alternating, medians of nine rounds, two or more
/// processes each.
fn cut_macro_loop(
    region: Region,
    outer: usize,
    which: MacroLoop,
    target: usize,
    most: usize,
) -> Vec<Region> {
    let width = target.min(most).max(1);
    let [strips, blocks] = region.loops[outer..] else {
        return vec![region];
    };
    let (at, cut) = match which {
        MacroLoop::Strips => (outer, strips),
        MacroLoop::Blocks => (outer + 1, blocks),
    };
    let (_, grouped) = group(cut, width, most);
    // Strips group by their nearest divisor wherever `most` allows it.
    let strips_allowed =
        || which == MacroLoop::Strips && group(cut, target, usize::MAX).1.extent <= most;
    if cut.extent < width || grouped.extent * 2 >= width || strips_allowed() {
        return vec![region];
    }
    let (whole, rest) = (cut.extent / width * width, cut.extent % width);
    let part = |first: usize, extent: usize| {
        let done = first as i64;
        let mut r = Region {
            src_base: region.src_base + done * cut.src_stride,
            dst_base: region.dst_base + done * cut.dst_stride,
            index_base: region.index_base + done * cut.index_stride,
            ..region.clone()
        };
        r.loops[at] = cut.with_extent(extent);
        r
    };
    let mut out = vec![part(0, whole)];
    if rest > 0 {
        out.push(part(whole, rest));
    }
    out
}

/// Splits `l` into an outer and an inner loop, the inner one of the extent that divides `l.extent`
/// and is nearest `target` by ratio, at most four times `target` and at most `most`.
fn group(l: Loop, target: usize, most: usize) -> (Loop, Loop) {
    let ratio = |g: usize| (g as f64 / target as f64).ln().abs();
    let inner = (1..=l.extent.min(target.saturating_mul(4)).min(most))
        .filter(|&g| l.extent.is_multiple_of(g))
        .min_by(|&x, &y| ratio(x).total_cmp(&ratio(y)))
        .unwrap_or(1);
    (l.stepping(inner, l.extent / inner), l.with_extent(inner))
}

/// Removes the loops at two distinct positions.
fn remove_two(loops: &mut Vec<Loop>, i: usize, j: usize) {
    loops.remove(i.max(j));
    loops.remove(i.min(j));
}

/// Orders the loops outside the kernel (all but an element kernel's innermost loop) by `order`:
/// the tactics' [`LoopOrder`] where it names a side, or else the fitted rule, from the largest
/// strides outside to the smallest inside, so both sides walk memory forwards in long runs as
/// far as possible. Around copies that stream ([`Order::Source`]) the order follows the
/// source alone: it is read from start to end while the streaming stores fill whole destination
/// lines in a few places at once, which on a 2-core AMD EPYC VM ran NHWC → NCHW16c at 28 GB/s
/// against 15 for walking the destination in order (and 12 for either order with ordinary
/// stores). Around zips and unzips that stream ([`Order::Destination`]) it follows the
/// destination, so that the runs of consecutive steps join into one staged run (see
/// [`stage_runs`]).
fn order_outer(loops: &mut [Loop], kernel: Kernel, order: Order) {
    let sortable = match kernel {
        Kernel::Element => loops.len().saturating_sub(1),
        _ => loops.len(),
    };
    sort_loops(&mut loops[..sortable], order);
}

/// Sorts `loops` from the largest key outside to the smallest inside, the key as `order` says.
fn sort_loops(loops: &mut [Loop], order: Order) {
    loops.sort_by_key(|l| {
        let (src, dst) = (l.src_stride.unsigned_abs(), l.dst_stride.unsigned_abs());
        std::cmp::Reverse(match order {
            Order::Source => (src, dst),
            Order::Destination => (dst, src),
            Order::Both => (dst.max(src), src),
        })
    });
}

/// How [`order_outer`] sorts the loops around a kernel.
#[derive(Clone, Copy)]
enum Order {
    /// By source stride: the source is read from start to end.
    Source,
    /// By destination stride: the destination is written from start to end.
    Destination,
    /// By the larger stride of the two, then the source's: where two loops tie, the one that
    /// moves further in the source goes outside, so the loop inside it continues the source
    /// rows the last steps read. A 4-D reversal (64⁴ f32, 64 MiB) ties its two middle loops
    /// (strides 64 and 4096 elements, swapped on the two sides); with the destination's
    /// stride breaking the tie it ran at 0.71–0.78 of memcpy, with the source's at 1.02–1.06,
    /// and 32⁴ (4 MiB, not streamed) at 0.45–0.46 against 0.50–0.52, on a 2-core Intel Xeon
    /// VM (family 6, model 167; `relayout bench --no-tune`, three alternating runs each).
    Both,
}

/// Splits one loop of a region's kernel (`run`, with extent and strides) into whole blocks of
/// `block` steps, as a new innermost loop of the region around a kernel of `block` steps, plus a
/// region for the remaining steps; `kernel(n)` is the kernel over `n` steps.
fn split_tile_loop(
    region: Region,
    run: Loop,
    block: usize,
    kernel: impl Fn(usize) -> Kernel,
) -> Vec<Region> {
    let (whole, rest) = (run.extent / block, run.extent % block);
    if whole <= 1 {
        return vec![region];
    }
    let mut main = region.clone();
    main.loops.push(run.stepping(block, whole));
    main.kernel = kernel(block);
    let mut out = vec![main];
    if rest > 0 {
        out.push(advanced(&region, run, whole * block, kernel(rest)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A loop of `extent` steps of `src` and `dst` elements.
    fn l(extent: usize, src: i64, dst: i64) -> Loop {
        Loop {
            extent,
            src_stride: src,
            dst_stride: dst,
            index_stride: 0,
        }
    }

    /// [`l`] with an index stride.
    fn li(extent: usize, src: i64, dst: i64, index: i64) -> Loop {
        Loop {
            index_stride: index,
            ..l(extent, src, dst)
        }
    }

    #[test]
    fn coalescing_merges_loops_that_continue_each_other_on_both_sides() {
        for (loops, want) in [
            // Row-major 4×8 on both sides: one run of 32.
            (vec![l(4, 8, 8), l(8, 1, 1)], vec![l(32, 1, 1)]),
            // In any order.
            (vec![l(8, 1, 1), l(4, 8, 8)], vec![l(32, 1, 1)]),
            // A transpose continues on one side only: nothing merges.
            (vec![l(4, 8, 1), l(8, 1, 4)], vec![l(4, 8, 1), l(8, 1, 4)]),
            // Three levels, the middle one a gap on the destination side.
            (
                vec![l(2, 24, 48), l(3, 8, 16), l(8, 1, 1)],
                vec![l(6, 8, 16), l(8, 1, 1)],
            ),
            // Negative strides continue too.
            (vec![l(3, -4, -4), l(4, -1, -1)], vec![l(12, -1, -1)]),
            // The index of a per-index map must continue as well: two pieces of its dim merge,
            // a dim of its own beside it does not.
            (vec![li(4, 8, 8, 8), li(8, 1, 1, 1)], vec![li(32, 1, 1, 1)]),
            (
                vec![li(4, 8, 8, 1), l(8, 1, 1)],
                vec![li(4, 8, 8, 1), l(8, 1, 1)],
            ),
        ] {
            assert_eq!(coalesce(loops.clone()), want, "{loops:?}");
        }
    }

    #[test]
    fn the_kernel_follows_the_contiguous_loops() {
        let copy = |len| Kernel::Copy {
            len,
            index_stride: 0,
            write: CopyWrite::Stored,
        };
        let transpose = |a, b| Kernel::Transpose {
            tile: TransposeTile {
                a,
                b,
                lanes: 4,
                walk: Walk::Along,
                prefetch_ahead: 1,
                prefetch_group: 1,
            },
            write: TransposeWrite::InPlace,
        };
        let zip = |short, long| Kernel::Zip {
            tile: ZipTile {
                short,
                long,
                lanes: 4,
            },
            write: ZipWrite::InPlace,
        };
        let unzip = |short, long| Kernel::Unzip {
            tile: ZipTile {
                short,
                long,
                lanes: 4,
            },
            write: UnzipWrite::InPlace,
        };
        // (loops, kernel, the loops left around it), for 4 lanes.
        for (loops, kernel, left) in [
            (
                vec![l(5, 16, 16), l(16, 1, 1)],
                copy(16),
                vec![l(5, 16, 16)],
            ),
            (
                vec![l(8, 1, 8), l(8, 8, 1)],
                transpose(l(8, 1, 8), l(8, 8, 1)),
                vec![],
            ),
            // A short source-contiguous side and a long destination-contiguous one: too short
            // to transpose, zipped instead.
            (
                vec![l(2, 16, 1), l(16, 1, 2)],
                zip(l(2, 16, 1), l(16, 1, 2)),
                vec![],
            ),
            (
                vec![l(2, 1, 16), l(16, 2, 1)],
                unzip(l(2, 1, 16), l(16, 2, 1)),
                vec![],
            ),
            // Three strips (RGB pixels) unzip through a gather network.
            (
                vec![l(16, 3, 1), l(3, 1, 16)],
                unzip(l(3, 1, 16), l(16, 3, 1)),
                vec![],
            ),
            // As many strips as lanes: a zip, not a transpose.
            (
                vec![l(4, 16, 1), l(16, 1, 4)],
                zip(l(4, 16, 1), l(16, 1, 4)),
                vec![],
            ),
            // Neither side contiguous: element moves, the smaller destination stride inside.
            (
                vec![l(16, 6, 1), l(3, 2, 16)],
                Kernel::Element,
                vec![l(3, 2, 16), l(16, 6, 1)],
            ),
            (
                vec![l(3, 2, 16), l(16, 6, 1)],
                Kernel::Element,
                vec![l(3, 2, 16), l(16, 6, 1)],
            ),
        ] {
            let mut got = loops.clone();
            assert_eq!(pick_kernel(&mut got, 4, true), kernel, "{loops:?}");
            assert_eq!(got, left, "{loops:?}");
        }
    }

    #[test]
    fn outer_loops_are_ordered_by_the_chosen_side() {
        let loops = [l(4, 1000, 10), l(5, 10, 1000), l(6, 100, 100)];
        for (order, want) in [
            (Order::Source, [1000, 100, 10]),
            (Order::Destination, [10, 100, 1000]),
            // The larger stride of the two, then the source's.
            (Order::Both, [1000, 10, 100]),
        ] {
            let mut got = loops;
            order_outer(&mut got, copy_kernel(), order);
            assert_eq!(got.map(|l| l.src_stride), want, "{:?}", want);
        }
        // Around element moves the innermost loop stays where the kernel choice put it.
        let mut got = [l(4, 1, 100), l(5, 100, 1), l(6, 7, 7)];
        order_outer(&mut got, Kernel::Element, Order::Both);
        assert_eq!(got[2], l(6, 7, 7));
    }

    fn copy_kernel() -> Kernel {
        Kernel::Copy {
            len: 8,
            index_stride: 0,
            write: CopyWrite::Stored,
        }
    }

    #[test]
    fn loops_split_into_whole_blocks_and_a_rest() {
        let region = Region {
            src_base: 5,
            dst_base: 7,
            index_base: 0,
            indexed: None,
            loops: vec![l(3, 100, 100)],
            kernel: copy_kernel(),
        };
        let copy = |len| Kernel::Copy {
            len,
            index_stride: 0,
            write: CopyWrite::Stored,
        };
        let parts = split_tile_loop(region.clone(), Loop::contiguous(70), 16, copy);
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].loops, vec![l(3, 100, 100), l(4, 16, 16)]);
        assert_eq!(parts[0].kernel, copy(16));
        assert_eq!(
            (parts[1].src_base, parts[1].dst_base, parts[1].kernel),
            (5 + 64, 7 + 64, copy(6))
        );
        assert_eq!(parts[1].loops, vec![l(3, 100, 100)]);
        // One block or less: the region as it was.
        assert_eq!(
            split_tile_loop(region.clone(), Loop::contiguous(20), 16, copy),
            vec![region]
        );
    }

    #[test]
    fn groups_take_the_divisor_nearest_the_target() {
        for (extent, target, inner) in [
            (64, 16, 16),
            (60, 16, 15),
            (7, 4, 7),
            (13, 4, 13),
            (13, 2, 1),
            (100, 1, 1),
            (48, usize::MAX, 48),
        ] {
            let (outer, inside) = group(l(extent, 2, 3), target, usize::MAX);
            assert_eq!(inside, l(inner, 2, 3), "{extent} by {target}");
            assert_eq!(outer, l(extent / inner, 2 * inner as i64, 3 * inner as i64));
        }
        // At most `most`: 22 by 16 takes 22 unbounded, 11 within 12, 2 within 8.
        for (most, inner) in [(usize::MAX, 22), (12, 11), (8, 2)] {
            assert_eq!(
                group(l(22, 2, 3), 16, most).1,
                l(inner, 2, 3),
                "within {most}"
            );
        }
    }

    #[test]
    fn macro_blocks_read_at_most_a_thousand_source_pages() {
        // Rows on pages of their own: 1024 rows; rows of 1 KiB share pages four at a time.
        assert_eq!(most_macro_strips(128, 5800), 8);
        assert_eq!(most_macro_strips(128, 1024), 32);
        assert_eq!(most_macro_strips(4096, 8192), 1);
        // 23 strips (a prime) of 128 rows 6 KiB apart, with 16 strips a macro block asked for:
        // cut into two macro blocks of 8 and a region of the 7 strips left.
        let strips = l(23, 128 * 3001, 128);
        let blocks = l(312, 16, 16 * 3001);
        let region = Region {
            loops: vec![l(2, 1, 1), strips, blocks],
            kernel: Kernel::Element,
            src_base: 5,
            dst_base: 7,
            index_base: 0,
            indexed: None,
        };
        let parts = cut_macro_loop(region.clone(), 1, MacroLoop::Strips, 16, 8);
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].loops, [l(2, 1, 1), strips.with_extent(16), blocks]);
        assert_eq!(parts[1].loops, [l(2, 1, 1), strips.with_extent(7), blocks]);
        assert_eq!(parts[1].src_base, 5 + 16 * 128 * 3001);
        assert_eq!(parts[1].dst_base, 7 + 16 * 128);
        // A strip count with a divisor near the macro block's (22 = 2 × 11, within 12) stays
        // whole, as does a region without both loops.
        let near = Region {
            loops: vec![l(2, 1, 1), strips.with_extent(22), blocks],
            ..region.clone()
        };
        assert_eq!(
            cut_macro_loop(near.clone(), 1, MacroLoop::Strips, 16, 12),
            [near]
        );
        let blocks_only = Region {
            loops: vec![l(2, 1, 1), blocks],
            ..region.clone()
        };
        assert_eq!(
            cut_macro_loop(blocks_only.clone(), 1, MacroLoop::Strips, 16, 8),
            [blocks_only]
        );
        // 79 blocks (a prime), 4 a macro block: 76 and a region of the 3 left; 78 (grouped 3
        // at a time) stay whole.
        let prime = Region {
            loops: vec![l(2, 1, 1), strips, blocks.with_extent(79)],
            ..region.clone()
        };
        let parts = cut_macro_loop(prime, 1, MacroLoop::Blocks, 4, usize::MAX);
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].loops, [l(2, 1, 1), strips, blocks.with_extent(76)]);
        assert_eq!(parts[1].loops, [l(2, 1, 1), strips, blocks.with_extent(3)]);
        assert_eq!(parts[1].src_base, 5 + 76 * 16);
        assert_eq!(parts[1].dst_base, 7 + 76 * 16 * 3001);
        let divisible = Region {
            loops: vec![l(2, 1, 1), strips, blocks.with_extent(78)],
            ..region.clone()
        };
        assert_eq!(
            cut_macro_loop(divisible.clone(), 1, MacroLoop::Blocks, 4, usize::MAX),
            [divisible]
        );
        // Fewer blocks than a macro block's (2 of 5) stay whole: no region of none.
        let few = Region {
            loops: vec![l(2, 1, 1), strips, blocks.with_extent(2)],
            ..region
        };
        assert_eq!(
            cut_macro_loop(few.clone(), 1, MacroLoop::Blocks, 5, usize::MAX),
            [few]
        );
    }
}
