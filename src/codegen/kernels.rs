//! The innermost operations: one element, a contiguous copy, and the shuffle-network tiles
//! (transpose, zip, unzip), each written the way its kernel says (in place, staged, streamed).

use cranelift_codegen::ir::{types, FuncRef, InstBuilder, Type, Value};

use super::convert::LaneIndex;
use super::network::{Network, Tile};
use super::{Emitter, StagedConversion, VECTOR_BYTES};
use crate::plan::{
    CopyWrite, Flush, Join, Kernel, Loop, TransposeTile, TransposeWrite, UnzipWrite, Walk, ZipTile,
    ZipWrite, ASK_GROUPS, SINGLE,
};
use crate::runtime::{BlockTranspose, CoreRoutine, JoinedEnds, Routine, TileStores};

/// Zip and unzip groups up to this many are straight-line code rather than a loop.
const MAX_UNROLLED_TILES: usize = 4;
/// Copies up to this many bytes are straight-line code; longer ones loop over 64-byte blocks.
const STRAIGHT_COPY_BYTES: i64 = 256;
/// Vectors moved per iteration of a long copy.
const COPY_UNROLL: i64 = 4;

/// The source rows a staged block reads: `rows` rows of `row_bytes` bytes, `row_stride` bytes
/// apart.
#[derive(Clone, Copy)]
pub(super) struct SourceBlock {
    pub(super) rows: usize,
    pub(super) row_bytes: i64,
    pub(super) row_stride: i64,
}

/// Where a staged block asks for a later block's source ([`Region::prefetch_step`]): `step`
/// on from its own source (in elements, or bytes once the kernel scales it), for `group`
/// blocks at a time ([`Region::prefetch_group`]).
///
/// [`Region::prefetch_step`]: crate::plan::Region::prefetch_step
/// [`Region::prefetch_group`]: crate::plan::Region::prefetch_group
#[derive(Clone, Copy)]
pub(super) struct Prefetch {
    pub(super) step: i64,
    pub(super) group: usize,
}

impl Prefetch {
    /// The same prefetch with its step mapped (elements to bytes).
    pub(super) fn with_step(self, step: impl Fn(i64) -> i64) -> Prefetch {
        Prefetch {
            step: step(self.step),
            ..self
        }
    }
}

/// A later block's source rows that a staged block asks for: `block`'s rows from `step` bytes
/// after byte address `s` (this block's source), `group` blocks at a time
/// ([`Region::prefetch_group`]).
///
/// [`Region::prefetch_group`]: crate::plan::Region::prefetch_group
#[derive(Clone, Copy)]
pub(super) struct Ahead {
    pub(super) block: SourceBlock,
    pub(super) step: i64,
    pub(super) group: usize,
    pub(super) s: Value,
}

impl Ahead {
    /// The rows `prefetch` (its step in bytes) asks for: `block`'s, a step on from `s`.
    pub(super) fn of(block: SourceBlock, prefetch: Option<Prefetch>, s: Value) -> Option<Ahead> {
        prefetch.map(|p| Ahead {
            block,
            step: p.step,
            group: p.group,
            s,
        })
    }
}

/// `tile` writing into the staging buffer: a row of `b.extent` elements per step of `a`.
pub(super) fn into_stage(tile: TransposeTile) -> TransposeTile {
    TransposeTile {
        a: Loop {
            dst_stride: tile.b.extent as i64,
            ..tile.a
        },
        ..tile
    }
}

/// Which way a zip network runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Strips {
    /// Strips in, interleaved out.
    Interleave,
    /// Interleaved in, strips out.
    Deinterleave,
}

impl Emitter<'_> {
    /// Emits `kernel` at source address `s` and destination address `d`; a staged transpose
    /// prefetches the source of a later block as `prefetch` says, if given.
    pub(super) fn kernel(
        &mut self,
        kernel: Kernel,
        prefetch: Option<Prefetch>,
        s: Value,
        d: Value,
    ) {
        if let Some(packed) = self.packed {
            return self.packed_kernel(packed, kernel, prefetch, s, d);
        }
        match kernel {
            Kernel::Element => self.element(s, d),
            Kernel::Copy {
                len,
                index_stride,
                write: CopyWrite::Stored,
            } => self.copy_elements(s, d, len, index_stride),
            Kernel::Copy {
                len,
                index_stride,
                write: write @ (CopyWrite::Streamed { rows, .. } | CopyWrite::Prefetched { rows }),
            } => match self.route {
                // The planner gives converting copies to no routine (the routines move bytes);
                // were one asked for, the rows are converted and stored.
                Some(_) => self.fixed_loop(rows, s, d, |e, s, d| {
                    e.copy_elements(s, d, len, index_stride)
                }),
                None => {
                    let routine = self.copy_routine(write);
                    self.stream_copy(routine, rows, len, s, d)
                }
            },
            Kernel::Transpose {
                tile,
                write: TransposeWrite::InPlace,
            } => self.transpose_block(tile, TileStores::Cached, s, d),
            Kernel::Transpose {
                tile,
                write: TransposeWrite::Streamed,
            } => self.transpose_block(tile, TileStores::Streamed, s, d),
            Kernel::Transpose {
                tile,
                write: TransposeWrite::Prefetched,
            } => self.transpose_block(tile, TileStores::Ahead, s, d),
            Kernel::Transpose {
                tile,
                write: TransposeWrite::Staged(flush),
            } => self.staged_transpose(tile, flush, prefetch, s, d),
            Kernel::Transpose {
                tile,
                write: TransposeWrite::Joined(join),
            } => self.joined_transpose(tile, join, prefetch, s, d),
            Kernel::Zip {
                tile,
                write: ZipWrite::InPlace,
            } => self.zip(tile, Strips::Interleave, s, d),
            Kernel::Zip {
                tile,
                write: ZipWrite::Prefetched,
            } => self.zip_asking_ahead(tile, Strips::Interleave, s, d),
            Kernel::Zip {
                tile,
                write: ZipWrite::StreamedTile,
            } => self.staged_run(SINGLE, 1, Strips::Interleave, tile, s, d),
            Kernel::Zip {
                tile,
                write: ZipWrite::StreamedRun { steps, pieces },
            } => self.staged_run(steps, pieces, Strips::Interleave, tile, s, d),
            Kernel::Unzip {
                tile,
                write: UnzipWrite::InPlace,
            } => self.zip(tile, Strips::Deinterleave, s, d),
            Kernel::Unzip {
                tile,
                write: UnzipWrite::Prefetched,
            } => self.zip_asking_ahead(tile, Strips::Deinterleave, s, d),
            Kernel::Unzip {
                tile,
                write: UnzipWrite::StreamedRun { steps, pieces },
            } => self.staged_run(steps, pieces, Strips::Deinterleave, tile, s, d),
            Kernel::Unzip {
                tile,
                write: UnzipWrite::StreamedStrips,
            } => self.staged_strips(tile, s, d),
            Kernel::Unzip {
                tile,
                write: UnzipWrite::JoinedStrips(join),
            } => self.joined_strips(tile, join, s, d),
        }
    }

    /// Moves (or converts) the element at `s` to `d`.
    fn element(&mut self, s: Value, d: Value) {
        match self.route {
            Some(route) => self.convert_element(route, s, d),
            None => self.move_bytes(s, d, 0, self.src_size),
        }
    }

    /// Copies (or converts) `len` elements contiguous on both sides, `index_stride` indices of
    /// a per-index map apart. A conversion goes a vector of source elements at a time,
    /// [`COPY_UNROLL`] vectors per iteration, then element-wise.
    fn copy_elements(&mut self, s: Value, d: Value, len: usize, index_stride: i64) {
        let Some(route) = self.route else {
            return self.copy(s, d, len as i64 * self.src_size);
        };
        let lanes = VECTOR_BYTES / self.src_size as usize;
        let unroll = COPY_UNROLL as usize;
        let run = Loop {
            index_stride,
            ..Loop::contiguous(len)
        };
        let blocks = run.stepping(lanes * unroll, len / (lanes * unroll));
        let index = LaneIndex {
            first: 0,
            step: index_stride,
        };
        // The vectors of a block convert together, so that narrowing packs them into whole
        // destination vectors.
        let block = |e: &mut Self, s: Value, d: Value, vectors: usize| {
            let loaded: Vec<Value> = (0..vectors)
                .map(|i| {
                    let (base, offset) = e.address(s, (i * lanes) as i64 * e.src_size);
                    e.b.ins().load(types::I8X16, e.flags, base, offset)
                })
                .collect();
            if !loaded.is_empty() {
                e.store_converted(route, &loaded, vectors * lanes, d, 0, index);
            }
        };
        self.fixed_loop(blocks, s, d, |e, s, d| block(e, s, d, unroll));
        let done = blocks.extent * lanes * unroll;
        let (s, d) = self.advance(s, d, (done as i64, done as i64));
        self.indexed_by(done as i64 * index_stride, |e| {
            block(e, s, d, (len - done) / lanes);
            let done_vectors = (len - done) / lanes * lanes;
            let (s, d) = e.advance(s, d, (done_vectors as i64, done_vectors as i64));
            e.indexed_by(done_vectors as i64 * index_stride, |e| {
                let rest = run.with_extent(len - done - done_vectors);
                e.nest(&[rest], Kernel::Element, s, d);
            });
        });
    }

    /// Straight-line copy of `bytes` bytes at byte offset `at`: 16-byte vectors, then 8/4/2/1.
    fn move_bytes(&mut self, s: Value, d: Value, mut at: i64, mut bytes: i64) {
        for (width, ty) in [
            (VECTOR_BYTES as i64, types::I8X16),
            (8, types::I64),
            (4, types::I32),
            (2, types::I16),
            (1, types::I8),
        ] {
            while bytes >= width {
                self.copy_one(ty, s, d, at);
                at += width;
                bytes -= width;
            }
        }
    }

    fn copy_one(&mut self, ty: Type, s: Value, d: Value, at: i64) {
        let at = i32::try_from(at).unwrap_or(i32::MAX);
        let v = self.b.ins().load(ty, self.flags, s, at);
        self.b.ins().store(self.flags, v, d, at);
    }

    /// Copies `bytes` contiguous bytes: a loop of 64-byte blocks when long, then the rest.
    pub(super) fn copy(&mut self, s: Value, d: Value, bytes: i64) {
        if bytes <= STRAIGHT_COPY_BYTES {
            return self.move_bytes(s, d, 0, bytes);
        }
        let block = VECTOR_BYTES as i64 * COPY_UNROLL;
        let blocks = Loop {
            extent: (bytes / block) as usize,
            src_stride: block / self.src_size,
            dst_stride: block / self.dst_size,
            index_stride: 0,
        };
        self.fixed_loop(blocks, s, d, |e, s, d| e.move_bytes(s, d, 0, block));
        let done = bytes / block * block;
        self.move_bytes(s, d, done, bytes - done);
    }

    /// Tiles of `lanes × lanes` elements: `lanes` vector loads along `a` (one per step of `b`),
    /// a shuffle network, `lanes` vector stores along `b`; the rest of each loop element-wise.
    /// When `b` holds only a few tiles (a strip of destination lines), or the tile walks
    /// [`across`](Walk::Across) the source rows, each step along `a` transposes the whole strip,
    /// so every destination run is written at once.
    fn transpose(&mut self, tile: TransposeTile, s: Value, d: Value) {
        let TransposeTile { a, b, lanes, .. } = tile;
        let l = lanes as i64;
        let (whole_a, whole_b) = (a.extent / lanes, b.extent / lanes);
        let tiles_a = Loop {
            extent: whole_a,
            src_stride: l,
            dst_stride: l * a.dst_stride,
            index_stride: l * a.index_stride,
        };
        // Tiles along `b` in groups whose rows store together (see `tiles_per_store`), then
        // the tiles that do not fill a group one by one.
        let group = match self.tiles_per_store() {
            g if whole_b >= g => g,
            _ => 1,
        };
        let runs = [
            (group, whole_b / group, 0),
            (1, whole_b % group, whole_b / group * group),
        ];
        let steps = runs.map(|(g, extent, first)| {
            let tiles_b = Loop {
                extent,
                src_stride: g as i64 * l * b.src_stride,
                dst_stride: g as i64 * l,
                index_stride: g as i64 * l * b.index_stride,
            };
            (g, tiles_b, first as i64 * l)
        });
        let tiles =
            |e: &mut Self, g: usize, s: Value, d: Value| e.transpose_tiles(a, b, lanes, g, s, d);
        let across = self.goes_across(tile);
        for (g, tiles_b, first) in steps {
            let (s, d) = self.advance(s, d, (first * b.src_stride, first));
            self.indexed_by(first * b.index_stride, |e| {
                if across {
                    e.fixed_loop(tiles_a, s, d, |e, s, d| {
                        e.fixed_loop(tiles_b, s, d, |e, s, d| tiles(e, g, s, d))
                    });
                } else {
                    e.fixed_loop(tiles_b, s, d, |e, s, d| {
                        e.fixed_loop(tiles_a, s, d, |e, s, d| tiles(e, g, s, d))
                    });
                }
            });
        }
        self.tile_edges(a, b, whole_a * lanes, whole_b * lanes, s, d);
    }

    /// Whether the tiles of `tile` go across the source rows (each step along `a` transposes
    /// the whole strip along `b`). A strip only a few tiles across goes across, so that each
    /// destination run is written at once; unless its source rows all start in one L1 set,
    /// where reading a little of every row evicts each line before its next read (f32 → i8
    /// weights, 4096 × 4096 into 16-row blocks, ran at 5.5–6.2 GB/s across and 7.0–8.6 along
    /// on a 2-core Zen 4 VM).
    fn goes_across(&self, tile: TransposeTile) -> bool {
        let row_bytes = (tile.b.src_stride * self.src_size).unsigned_abs() as usize;
        match tile.walk {
            Walk::Across => true,
            Walk::Along => {
                tile.b.extent / tile.lanes <= MAX_UNROLLED_TILES
                    && self.target.start_sets(row_bytes) > 1
            }
        }
    }

    /// The elements of a transpose over `a` and `b` beyond its whole tiles, which cover the
    /// first `done_a` steps of `a` and `done_b` of `b`: moved one by one.
    pub(super) fn tile_edges(
        &mut self,
        a: Loop,
        b: Loop,
        done_a: usize,
        done_b: usize,
        s: Value,
        d: Value,
    ) {
        let rest_a = a.with_extent(a.extent - done_a);
        if rest_a.extent > 0 && done_b > 0 {
            let done = done_a as i64;
            let (s, d) = self.advance(s, d, (done, done * a.dst_stride));
            self.indexed_by(done * a.index_stride, |e| {
                e.nest(&[rest_a, b.with_extent(done_b)], Kernel::Element, s, d)
            });
        }
        let rest_b = b.with_extent(b.extent - done_b);
        if rest_b.extent > 0 {
            let done = done_b as i64;
            let (s, d) = self.advance(s, d, (done * b.src_stride, done));
            self.indexed_by(done * b.index_stride, |e| {
                e.nest(&[rest_b, a], Kernel::Element, s, d)
            });
        }
    }

    /// A transpose into the staging buffer, whose rows (one per step of `a`) are `b.extent`
    /// elements long, then the rows out to their places in the destination, one after another:
    /// by one call of the streaming routine or of the routine that copies rows with ordinary
    /// stores.
    fn staged_transpose(
        &mut self,
        tile: TransposeTile,
        flush: Flush,
        prefetch: Option<Prefetch>,
        s: Value,
        d: Value,
    ) {
        let (a, b) = (tile.a, tile.b);
        let row = b.extent as i64;
        let into_stage = into_stage(tile);
        let rows = Loop {
            extent: a.extent,
            src_stride: row,
            dst_stride: a.dst_stride,
            index_stride: 0,
        };
        let size = self.src_size;
        let block = SourceBlock {
            rows: b.extent,
            row_bytes: a.extent as i64 * size,
            row_stride: b.src_stride * size,
        };
        let ahead = Ahead::of(block, prefetch.map(|p| p.with_step(|step| step * size)), s);
        let fill = |e: &mut Self, stage: Value| {
            e.transpose_block(into_stage, TileStores::Cached, s, stage);
        };
        match flush {
            Flush::Streamed => self.staged_streamed(rows, b.extent, d, fill, ahead),
            Flush::Copied => {
                let stage = self.stage_address();
                fill(self, stage);
                self.ask_ahead(ahead);
                self.flushing(|e| {
                    let routine = e.flush_routine(flush);
                    e.stream_copy(routine, rows, b.extent, stage, d);
                });
            }
        }
    }

    /// A joined transpose ([`TransposeWrite::Joined`]): the block and its extension along `b`
    /// into the staging buffer, whose rows are the extension longer than the runs, then the
    /// runs out by one call of the runtime's streaming routine of joined runs (the plain one
    /// where neither end joins).
    fn joined_transpose(
        &mut self,
        tile: TransposeTile,
        join: Join,
        prefetch: Option<Prefetch>,
        s: Value,
        d: Value,
    ) {
        let (a, b) = (tile.a, tile.b);
        let extended = TransposeTile {
            b: b.with_extent(b.extent + join.extension()),
            ..tile
        };
        let rows = Loop {
            extent: a.extent,
            src_stride: extended.b.extent as i64,
            dst_stride: a.dst_stride,
            index_stride: 0,
        };
        let size = self.src_size;
        let block = SourceBlock {
            rows: extended.b.extent,
            row_bytes: a.extent as i64 * size,
            row_stride: b.src_stride * size,
        };
        let stage = self.stage_address();
        self.transpose_block(into_stage(extended), TileStores::Cached, s, stage);
        let ends = JoinedEnds::of(join);
        let ahead = Ahead::of(block, prefetch.map(|p| p.with_step(|step| step * size)), s);
        self.flushing(|e| match ahead {
            Some(ahead) => e.stream_copy_asking(ends, rows, b.extent, stage, d, ahead),
            None => e.stream_copy_joined(ends, rows, b.extent, stage, d),
        });
    }

    /// The transpose `tile` from `s` to `d` (the destination, or a staging buffer): by a call
    /// of the runtime's block transpose where the elements move as they are (no conversion in
    /// registers), the tiles are whole vectors of contiguous source elements and the plan takes
    /// its tiles from the runtime ([`Tiles`]), else by tiles emitted here. Tiles store as
    /// `stores` says where the runtime has such a routine, else with cached stores.
    ///
    /// [`Tiles`]: super::Tiles
    fn transpose_block(&mut self, tile: TransposeTile, stores: TileStores, s: Value, d: Value) {
        let size = self.src_size;
        let plain = self.route.is_none()
            && self.table.is_none()
            && self.dst_size == size
            && self.tiles == super::Tiles::Runtime;
        let vectors = tile.a.src_stride == 1
            && tile.b.dst_stride == 1
            && tile.lanes as i64 * size == VECTOR_BYTES as i64;
        let across = self.goes_across(tile);
        let routine = BlockTranspose::of(size as usize, across, stores)
            .or_else(|| BlockTranspose::of(size as usize, across, TileStores::Cached));
        match routine.filter(|_| plain && vectors) {
            Some(t) => {
                let routine = self.block_transpose_routine(t);
                let shape = [
                    tile.a.extent as i64,
                    tile.b.extent as i64,
                    tile.b.src_stride * size,
                    tile.a.dst_stride * size,
                ];
                self.call_stream_rows(routine, s, d, shape);
            }
            None => self.transpose(tile, s, d),
        }
    }

    /// Asks the runtime's prefetching routine for `ahead`'s rows at once (nothing for none): a
    /// later block of a staged transpose ([`Region::prefetch_step`]), called once this block's
    /// source is read and before its stage goes out, so that the later block's reads overlap
    /// this block's writes.
    ///
    /// [`Region::prefetch_step`]: crate::plan::Region::prefetch_step
    pub(super) fn ask_ahead(&mut self, ahead: Option<Ahead>) {
        let Some(ahead) = ahead else {
            return;
        };
        let routine = self.prefetch_routine();
        let [next, shape @ ..] = self.ask_arguments(ahead);
        self.b.ins().call(
            routine,
            &[next, next, shape[0], shape[1], shape[2], shape[3]],
        );
    }

    /// The prefetching routine's source address and `[rows, row bytes, stride, group]` for
    /// `ahead` (the last arguments of the streaming routines that ask as they go).
    fn ask_arguments(&mut self, ahead: Ahead) -> [Value; 5] {
        let next = self.offset(ahead.s, ahead.step);
        let Ahead { block, group, .. } = ahead;
        let [rows, row_bytes, stride, group] = [
            block.rows as i64,
            block.row_bytes,
            block.row_stride,
            group as i64,
        ]
        .map(|v| self.b.ins().iconst(types::I64, v));
        [next, rows, row_bytes, stride, group]
    }

    /// The zips or unzips of `steps` (a single one for [`SINGLE`]) into the staging buffer,
    /// whose destination blocks continue one another (`steps.dst_stride` is the tile's element
    /// count), then the joined run streamed out to `d` by one call of the streaming routine.
    /// Steps cut into `pieces` are visited a chunk of each piece in turn ([`Kernel::pieces`]).
    /// The tiles themselves store plainly, their element-wise tails included.
    ///
    /// [`Kernel::pieces`]: crate::plan::Kernel::pieces
    fn staged_run(
        &mut self,
        steps: Loop,
        pieces: usize,
        strips: Strips,
        tile: ZipTile,
        s: Value,
        d: Value,
    ) {
        let block = tile.elements();
        let zip = move |e: &mut Self, s: Value, d: Value| e.zip(tile, strips, s, d);
        self.staged_streamed(
            SINGLE,
            steps.extent * block,
            d,
            |e, stage| match (steps.extent, pieces) {
                (1, _) => zip(e, s, stage),
                (_, 1) => e.fixed_loop(steps, s, stage, zip),
                _ => {
                    let [chunks, side_by_side, chunk] =
                        pieces_side_by_side(steps, pieces, block * e.src_size as usize);
                    e.fixed_loop(chunks, s, stage, |e, s, d| {
                        e.fixed_loop(side_by_side, s, d, |e, s, d| e.fixed_loop(chunk, s, d, zip))
                    });
                }
            },
            None,
        );
    }

    /// An unzip into the staging buffer, one row of `long.extent` elements per strip, then the
    /// rows out to their strips' places in the destination by one call of the streaming routine.
    fn staged_strips(&mut self, tile: ZipTile, s: Value, d: Value) {
        let (into_stage, rows) = strips_through_stage(tile, 0);
        let fill = |e: &mut Self, stage| e.zip(into_stage, Strips::Deinterleave, s, stage);
        self.staged_streamed(rows, tile.long.extent, d, fill, None);
    }

    /// A joined unzip ([`UnzipWrite::JoinedStrips`]): the strips and their extension along
    /// `long` into the staging buffer, whose rows are the extension longer than the runs, then
    /// the runs out by one call of the runtime's streaming routine of joined runs (the plain one
    /// where neither end joins).
    fn joined_strips(&mut self, tile: ZipTile, join: Join, s: Value, d: Value) {
        let (into_stage, rows) = strips_through_stage(tile, join.extension());
        let stage = self.stage_address();
        self.zip(into_stage, Strips::Deinterleave, s, stage);
        let ends = JoinedEnds::of(join);
        self.flushing(|e| e.stream_copy_joined(ends, rows, tile.long.extent, stage, d));
    }

    /// [`stream_copy`](Self::stream_copy) by the runtime's streaming routine that joins `ends`
    /// of its rows, or by the plain one for none.
    fn stream_copy_joined(
        &mut self,
        ends: Option<JoinedEnds>,
        rows: Loop,
        len: usize,
        s: Value,
        d: Value,
    ) {
        let routine = match ends {
            Some(j) => self.joined_ends_routine(j),
            None => self.stream_routine(),
        };
        self.stream_copy(routine, rows, len, s, d);
    }

    /// Runs `fill`, which writes a block into the staging buffer (at the address it is given),
    /// then streams the block's `rows.extent` rows of `len` elements (`rows` strides apart in
    /// the buffer and in `d`) out to `d`. Where the runtime converts rows of the plan's
    /// conversion (`StagedConversion::ByRoutine`), the buffer holds source elements and the
    /// runtime's routine converts them as it stores; otherwise the tiles store converted
    /// elements and the streaming routine copies them. Blocks that ask for a later block's
    /// source (`ahead`) ask as they stream out, a share before each row, where their rows
    /// are copied by the streaming routine; by a separate call before the runtime converts them
    /// otherwise.
    fn staged_streamed(
        &mut self,
        rows: Loop,
        len: usize,
        d: Value,
        fill: impl FnOnce(&mut Self, Value),
        ahead: Option<Ahead>,
    ) {
        let stage = self.stage_address();
        match self.staged_conversion {
            StagedConversion::ByRoutine(c) => {
                self.unconverted(|e| fill(e, stage));
                self.ask_ahead(ahead);
                let routine = self.convert_rows_routine(c);
                let shape = [
                    rows.extent as i64,
                    len as i64,
                    rows.src_stride * self.src_size,
                    rows.dst_stride * self.dst_size,
                ];
                self.call_stream_rows(routine, stage, d, shape);
            }
            StagedConversion::InRegisters => {
                fill(self, stage);
                self.flushing(|e| match ahead {
                    Some(ahead) => e.stream_copy_asking(None, rows, len, stage, d, ahead),
                    None => e.stream_copy_joined(None, rows, len, stage, d),
                });
            }
        }
    }

    /// Copies `rows.extent` runs of `len` elements, each `rows` strides after the last, with one
    /// call of `routine` (the streaming routine or another of its signature): at runs of a cache line or two, a call per run would cost
    /// more than the stores (on a 2-core AMD EPYC VM, NHWC → NCHW16c in 64-byte runs moved 17 GB/s
    /// with a call per run and 28 with one call per four).
    pub(super) fn stream_copy(
        &mut self,
        routine: FuncRef,
        rows: Loop,
        len: usize,
        s: Value,
        d: Value,
    ) {
        let shape = [
            rows.extent as i64,
            len as i64 * self.dst_size,
            rows.src_stride * self.src_size,
            rows.dst_stride * self.dst_size,
        ];
        self.call_stream_rows(routine, s, d, shape);
    }

    /// As [`stream_copy`](Self::stream_copy) with the runtime's streaming routine that joins
    /// `ends` of its rows (if any) and asks for `ahead`'s rows as it goes, a share before each
    /// row, where a separate call would ask for them all at once.
    fn stream_copy_asking(
        &mut self,
        ends: Option<JoinedEnds>,
        rows: Loop,
        len: usize,
        s: Value,
        d: Value,
        ahead: Ahead,
    ) {
        let routine = self.asking_routine(ends);
        let shape = [
            rows.extent as i64,
            len as i64 * self.dst_size,
            rows.src_stride * self.src_size,
            rows.dst_stride * self.dst_size,
        ]
        .map(|v| self.b.ins().iconst(types::I64, v));
        let ask = self.ask_arguments(ahead);
        let args: Vec<Value> = [s, d].into_iter().chain(shape).chain(ask).collect();
        self.b.ins().call(routine, &args);
    }

    /// `stream_rows(s, d, rows, row_bytes, src_stride, dst_stride)`, the last four (byte counts)
    /// given as `shape`; the row conversion routine takes the same arguments, its row length
    /// counted in elements.
    fn call_stream_rows(&mut self, routine: FuncRef, s: Value, d: Value, shape: [i64; 4]) {
        let [rows, row_bytes, src_stride, dst_stride] =
            shape.map(|v| self.b.ins().iconst(types::I64, v));
        self.b
            .ins()
            .call(routine, &[s, d, rows, row_bytes, src_stride, dst_stride]);
    }

    /// `group` register tiles side by side along `b`. In one tile, row `i` (`lanes` elements
    /// along `a`) loads from `s + i·b.src_stride`; after the transpose, column `j` stores to
    /// `d + j·a.dst_stride`, and the columns of the tiles of a group store together.
    fn transpose_tiles(
        &mut self,
        a: Loop,
        b: Loop,
        lanes: usize,
        group: usize,
        s: Value,
        d: Value,
    ) {
        let network = Network::transpose(lanes, self.src_size as usize);
        let dst_of = |i: usize, e: usize| e as i64 * a.dst_stride + i as i64;
        // Output lanes run along `b`: the first at step `i` of `b` and `e` of `a`.
        let index_of = |i: usize, e: usize| LaneIndex {
            first: i as i64 * b.index_stride + e as i64 * a.index_stride,
            step: b.index_stride,
        };
        let tile = Tile {
            network: &network,
            load_at: (0..lanes as i64)
                .map(|i| i * b.src_stride * self.src_size)
                .collect(),
            dst_of: &dst_of,
            index_of: Some(&index_of),
        };
        if group == 1 {
            return self.shuffle_tile(&tile, s, d);
        }
        self.sharing_table_loads(|e| {
            // Row `o` of tile `k` continues row `o` of tile `k - 1` in the destination.
            let mut rows: Vec<(Vec<Value>, i64, Option<LaneIndex>)> = Vec::new();
            for k in 0..group {
                let (s, _) = e.advance(s, d, ((k * lanes) as i64 * b.src_stride, 0));
                for (o, (reg, at, index)) in e.shuffled(&tile, s).into_iter().enumerate() {
                    match rows.get_mut(o) {
                        Some((regs, _, _)) => regs.push(reg),
                        None => rows.push((vec![reg], at, index)),
                    }
                }
            }
            for (regs, at, index) in rows {
                e.store_vectors(&regs, group * lanes, d, at * e.dst_size, index);
            }
        });
    }

    /// Transpose tiles along `b` whose rows are converted and stored together when a conversion
    /// narrows the elements: two (so that f32 → bf16 stores 16 bytes, not two 8-byte halves),
    /// else one. Not more: four tiles of f32 (f32 → i8) hold 16 registers at once, which spill
    /// (x86-64 code here has 16 vector registers); on a 2-core Zen 4 VM, f32 → i8 weights into
    /// 16-row blocks ran at 3.8–5.0 GB/s with four and 5.1–5.3 with two.
    fn tiles_per_store(&self) -> usize {
        match self.route {
            Some(_) if self.dst_size < self.src_size => 2,
            _ => 1,
        }
    }

    /// Zip or unzip `short.extent` strips along `long`: whole groups of `lanes` steps of `long`
    /// through the shuffle network (unrolled when there are few), the rest element by element.
    fn zip(&mut self, tile: ZipTile, strips: Strips, s: Value, d: Value) {
        let ZipTile { short, long, lanes } = tile;
        let unzip = strips == Strips::Deinterleave;
        let k = short.extent;
        let elem = self.src_size as usize;
        let (network, load_at): (Network, Vec<i64>) = if unzip {
            let run = (lanes * elem) as i64;
            (
                Network::unzip(k, elem),
                (0..k as i64).map(|i| i * run).collect(),
            )
        } else {
            let strip = short.src_stride * self.src_size;
            (
                Network::zip(k, elem),
                (0..k as i64).map(|i| i * strip).collect(),
            )
        };
        let dst_of = |i: usize, e: usize| {
            if unzip {
                let q = i * lanes + e;
                (q % k) as i64 * short.dst_stride + (q / k) as i64
            } else {
                (e * k + i) as i64
            }
        };
        let tile = Tile {
            network: &network,
            load_at,
            dst_of: &dst_of,
            index_of: None,
        };
        let groups = Loop {
            extent: long.extent / lanes,
            src_stride: lanes as i64 * long.src_stride,
            dst_stride: lanes as i64 * long.dst_stride,
            index_stride: 0,
        };
        if groups.extent <= MAX_UNROLLED_TILES {
            for g in 0..groups.extent as i64 {
                let (s, d) = self.advance(s, d, (g * groups.src_stride, g * groups.dst_stride));
                self.shuffle_tile(&tile, s, d);
            }
        } else {
            self.fixed_loop(groups, s, d, |e, s, d| e.shuffle_tile(&tile, s, d));
        }
        let rest = long.with_extent(long.extent % lanes);
        if rest.extent > 0 {
            let done = (groups.extent * lanes) as i64;
            let (s, d) = self.advance(s, d, (done * long.src_stride, done * long.dst_stride));
            self.nest(&[rest, short], Kernel::Element, s, d);
        }
    }

    /// [`Emitter::zip`] asking ahead ([`ZipWrite::Prefetched`]): the groups of `lanes` steps in
    /// calls' worth of [`ASK_GROUPS`], each asking the runtime first for the lines those groups
    /// store, 2 KiB further along each destination row (the strips of an unzip, the one run of
    /// a zip); the groups past the last whole call's worth, and the tail, as [`Emitter::zip`]
    /// stores them.
    fn zip_asking_ahead(&mut self, tile: ZipTile, strips: Strips, s: Value, d: Value) {
        let ZipTile { short, long, lanes } = tile;
        let bytes = ASK_GROUPS as i64 * lanes as i64 * self.dst_size;
        let rows_asked = match strips {
            Strips::Deinterleave => [
                short.extent as i64,
                bytes,
                0,
                short.dst_stride * self.dst_size,
            ],
            Strips::Interleave => [1, bytes * short.extent as i64, 0, 0],
        };
        let calls = long.stepping(ASK_GROUPS * lanes, long.extent / (ASK_GROUPS * lanes));
        self.fixed_loop(calls, s, d, |e, s, d| {
            let routine = e.routine(Routine::Core(CoreRoutine::AskAheadToWrite));
            e.call_stream_rows(routine, s, d, rows_asked);
            let asked = long.with_extent(ASK_GROUPS * lanes);
            e.zip(
                ZipTile {
                    long: asked,
                    ..tile
                },
                strips,
                s,
                d,
            );
        });
        let done = calls.extent * ASK_GROUPS * lanes;
        let (s, d) = self.advance(
            s,
            d,
            (done as i64 * long.src_stride, done as i64 * long.dst_stride),
        );
        if done < long.extent {
            let rest = long.with_extent(long.extent - done);
            self.zip(ZipTile { long: rest, ..tile }, strips, s, d);
        }
    }
}

/// The loops that visit `steps` cut into `pieces` equal pieces side by side, outermost first:
/// the chunks along a piece, the pieces, and the steps of one chunk (as many as read about
/// [`CHUNK_BYTES`] of source at `step_bytes` a step, as the side-by-side streaming routine reads
/// long rows, and divide a piece).
///
/// [`CHUNK_BYTES`]: crate::runtime::CHUNK_BYTES
fn pieces_side_by_side(steps: Loop, pieces: usize, step_bytes: usize) -> [Loop; 3] {
    let per_piece = steps.extent / pieces;
    let mut chunk = (crate::runtime::CHUNK_BYTES / step_bytes.max(1)).clamp(1, per_piece);
    while !per_piece.is_multiple_of(chunk) {
        chunk -= 1;
    }
    [
        steps.stepping(chunk, per_piece / chunk),
        steps.stepping(per_piece, pieces),
        steps.with_extent(chunk),
    ]
}

/// An unzip's strips through the staging buffer: the unzip into it, one row per strip of
/// `long.extent + extension` elements (the strips `extension` elements further along `long`),
/// and the rows out of it, each to its strip's place in the destination.
fn strips_through_stage(tile: ZipTile, extension: usize) -> (ZipTile, Loop) {
    let row = tile.long.extent + extension;
    let into_stage = ZipTile {
        short: Loop {
            dst_stride: row as i64,
            ..tile.short
        },
        ..tile.with_long_extent(row)
    };
    let rows = Loop {
        extent: tile.short.extent,
        src_stride: row as i64,
        dst_stride: tile.short.dst_stride,
        index_stride: 0,
    };
    (into_stage, rows)
}
