//! The innermost operations: one element, a contiguous copy, and the shuffle-network tiles
//! (transpose, zip, unzip).

use cranelift_codegen::ir::{types, FuncRef, InstBuilder, StackSlot, Type, Value};

use super::network::{Network, Tile, VECTOR_BYTES};
use super::Emitter;
use crate::plan::{Kernel, Loop};

/// Zip and unzip groups up to this many are straight-line code rather than a loop.
const MAX_UNROLLED_TILES: usize = 4;
/// Copies up to this many bytes are straight-line code; longer ones loop over 64-byte blocks.
const STRAIGHT_COPY_BYTES: i64 = 256;
/// Vectors moved per iteration of a long copy.
const COPY_UNROLL: i64 = 4;
/// The rows of a single run handed to the streaming routine.
const ONE_ROW: Loop = Loop {
    extent: 1,
    src_stride: 0,
    dst_stride: 0,
};

impl Emitter<'_> {
    /// Emits `kernel` at source address `s` and destination address `d`.
    pub(super) fn kernel(&mut self, kernel: Kernel, s: Value, d: Value) {
        match (kernel, self.streaming, self.staging) {
            (Kernel::Copy { len }, Some(routine), _) => {
                self.stream_copy(routine, ONE_ROW, len, s, d)
            }
            (Kernel::Transpose { a, b, lanes }, _, Some(slot)) => {
                self.staged_transpose(slot, a, b, lanes, s, d)
            }
            (Kernel::Zip { short, long, lanes }, Some(routine), Some(slot)) => {
                self.streamed_zip((routine, slot), short, long, lanes, s, d)
            }
            _ => self.store_kernel(kernel, s, d),
        }
    }

    /// Emits `kernel` with ordinary stores.
    fn store_kernel(&mut self, kernel: Kernel, s: Value, d: Value) {
        match kernel {
            Kernel::Element => self.move_bytes(s, d, 0, self.elem_size),
            Kernel::Copy { len } => self.copy(s, d, len as i64 * self.elem_size),
            Kernel::Transpose { a, b, lanes } => self.transpose(a, b, lanes, s, d),
            Kernel::Zip { short, long, lanes } => self.zip(short, long, lanes, false, s, d),
            Kernel::Unzip { short, long, lanes } => self.zip(short, long, lanes, true, s, d),
        }
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
    fn copy(&mut self, s: Value, d: Value, bytes: i64) {
        if bytes <= STRAIGHT_COPY_BYTES {
            return self.move_bytes(s, d, 0, bytes);
        }
        let block = VECTOR_BYTES as i64 * COPY_UNROLL;
        let blocks = Loop {
            extent: (bytes / block) as usize,
            src_stride: block / self.elem_size,
            dst_stride: block / self.elem_size,
        };
        self.fixed_loop(blocks, s, d, |e, s, d| e.move_bytes(s, d, 0, block));
        let done = bytes / block * block;
        self.move_bytes(s, d, done, bytes - done);
    }

    /// Tiles of `lanes × lanes` elements: `lanes` vector loads along `a` (one per step of `b`),
    /// a shuffle network, `lanes` vector stores along `b`; the rest of each loop element-wise.
    /// When `b` holds only a few tiles (a strip of destination lines), or the region goes
    /// [`across`](crate::plan::Region::across) the source rows, each step along `a` transposes
    /// the whole strip, so every destination run is written at once.
    fn transpose(&mut self, a: Loop, b: Loop, lanes: usize, s: Value, d: Value) {
        let l = lanes as i64;
        let (whole_a, whole_b) = (a.extent / lanes, b.extent / lanes);
        let tiles_a = Loop {
            extent: whole_a,
            src_stride: l,
            dst_stride: l * a.dst_stride,
        };
        let tiles_b = Loop {
            extent: whole_b,
            src_stride: l * b.src_stride,
            dst_stride: l,
        };
        if whole_b <= MAX_UNROLLED_TILES || self.across {
            self.fixed_loop(tiles_a, s, d, |e, s, d| {
                e.fixed_loop(tiles_b, s, d, |e, s, d| e.transpose_tile(a, b, lanes, s, d))
            });
        } else {
            self.fixed_loop(tiles_b, s, d, |e, s, d| {
                e.fixed_loop(tiles_a, s, d, |e, s, d| e.transpose_tile(a, b, lanes, s, d))
            });
        }
        let rest_a = Loop {
            extent: a.extent % lanes,
            ..a
        };
        if rest_a.extent > 0 && whole_b > 0 {
            let done = (whole_a * lanes) as i64;
            let (s, d) = (self.advance(s, done), self.advance(d, done * a.dst_stride));
            let whole = Loop {
                extent: whole_b * lanes,
                ..b
            };
            self.nest(&[rest_a, whole], Kernel::Element, s, d);
        }
        let rest_b = Loop {
            extent: b.extent % lanes,
            ..b
        };
        if rest_b.extent > 0 {
            let done = (whole_b * lanes) as i64;
            let (s, d) = (self.advance(s, done * b.src_stride), self.advance(d, done));
            self.nest(&[rest_b, a], Kernel::Element, s, d);
        }
    }

    /// A transpose into the staging buffer `slot`, whose rows (one per step of `a`) are
    /// `b.extent` elements long, then the rows out to their places in the destination, one after
    /// another: by one call of the streaming routine when the region streams, else by vector
    /// copies.
    fn staged_transpose(
        &mut self,
        slot: StackSlot,
        a: Loop,
        b: Loop,
        lanes: usize,
        s: Value,
        d: Value,
    ) {
        let stage = self.b.ins().stack_addr(types::I64, slot, 0);
        let row = b.extent as i64;
        self.transpose(
            Loop {
                dst_stride: row,
                ..a
            },
            b,
            lanes,
            s,
            stage,
        );
        let rows = Loop {
            extent: a.extent,
            src_stride: row,
            dst_stride: a.dst_stride,
        };
        match self.streaming {
            Some(routine) => self.stream_copy(routine, rows, b.extent, stage, d),
            None => {
                let row_bytes = row * self.elem_size;
                self.fixed_loop(rows, stage, d, |e, s, d| e.copy(s, d, row_bytes));
            }
        }
    }

    /// A zip into the staging buffer `slot`, then one call of the streaming `routine` that writes
    /// the interleaved run (the zip's whole destination, `short.extent × long.extent` contiguous
    /// elements) to `d`.
    fn streamed_zip(
        &mut self,
        (routine, slot): (FuncRef, StackSlot),
        short: Loop,
        long: Loop,
        lanes: usize,
        s: Value,
        d: Value,
    ) {
        let stage = self.b.ins().stack_addr(types::I64, slot, 0);
        self.zip(short, long, lanes, false, s, stage);
        self.stream_copy(routine, ONE_ROW, short.extent * long.extent, stage, d);
    }

    /// The loop `steps` around `kernel` into the staging buffer, whose steps' destination blocks
    /// continue one another (the kernel's block is `steps.dst_stride` contiguous elements), then
    /// the joined run streamed out to `d` by one call of `routine`. The steps themselves store
    /// plainly, their element-wise tails included: nothing inside streams or stages again.
    pub(super) fn staged_loop(
        &mut self,
        (routine, slot): (FuncRef, StackSlot),
        steps: Loop,
        kernel: Kernel,
        s: Value,
        d: Value,
    ) {
        let stage = self.b.ins().stack_addr(types::I64, slot, 0);
        let (streaming, staging) = (self.streaming.take(), self.staging.take());
        self.fixed_loop(steps, s, stage, |e, s, d| e.store_kernel(kernel, s, d));
        (self.streaming, self.staging) = (streaming, staging);
        let run = steps.extent * steps.dst_stride as usize;
        self.stream_copy(routine, ONE_ROW, run, stage, d);
    }

    /// Copies `rows.extent` runs of `len` elements, each `rows` strides after the last, with one
    /// call of the streaming routine: at runs of a cache line or two, a call per run would cost
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
            len as i64 * self.elem_size,
            rows.src_stride * self.elem_size,
            rows.dst_stride * self.elem_size,
        ];
        self.call_stream_rows(routine, s, d, shape);
    }

    /// `stream_rows(s, d, rows, row_bytes, src_stride, dst_stride)`, the last four (byte counts)
    /// given as `shape`.
    fn call_stream_rows(&mut self, routine: FuncRef, s: Value, d: Value, shape: [i64; 4]) {
        let [rows, row_bytes, src_stride, dst_stride] =
            shape.map(|v| self.b.ins().iconst(types::I64, v));
        self.b
            .ins()
            .call(routine, &[s, d, rows, row_bytes, src_stride, dst_stride]);
    }

    /// One register tile: row `i` (`lanes` elements along `a`) loads from `s + i·b.src_stride`;
    /// after the transpose, column `j` stores to `d + j·a.dst_stride`.
    fn transpose_tile(&mut self, a: Loop, b: Loop, lanes: usize, s: Value, d: Value) {
        let network = Network::transpose(lanes, self.elem_size as usize);
        let dst_of = |i: usize, e: usize| e as i64 * a.dst_stride + i as i64;
        let tile = Tile {
            network: &network,
            load_at: (0..lanes as i64)
                .map(|i| i * b.src_stride * self.elem_size)
                .collect(),
            dst_of: &dst_of,
        };
        self.shuffle_tile(&tile, s, d);
    }

    /// Zip or unzip `short.extent` strips along `long`: whole groups of `lanes` steps of `long`
    /// through the shuffle network (unrolled when there are few), the rest element by element.
    fn zip(&mut self, short: Loop, long: Loop, lanes: usize, unzip: bool, s: Value, d: Value) {
        let k = short.extent;
        let elem = self.elem_size as usize;
        let (network, load_at): (Network, Vec<i64>) = if unzip {
            let run = (lanes * elem) as i64;
            (
                Network::unzip(k, elem),
                (0..k as i64).map(|i| i * run).collect(),
            )
        } else {
            let strip = short.src_stride * self.elem_size;
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
        };
        let groups = Loop {
            extent: long.extent / lanes,
            src_stride: lanes as i64 * long.src_stride,
            dst_stride: lanes as i64 * long.dst_stride,
        };
        if groups.extent <= MAX_UNROLLED_TILES {
            for g in 0..groups.extent as i64 {
                let s = self.advance(s, g * groups.src_stride);
                let d = self.advance(d, g * groups.dst_stride);
                self.shuffle_tile(&tile, s, d);
            }
        } else {
            self.fixed_loop(groups, s, d, |e, s, d| e.shuffle_tile(&tile, s, d));
        }
        let rest = Loop {
            extent: long.extent % lanes,
            ..long
        };
        if rest.extent > 0 {
            let done = (groups.extent * lanes) as i64;
            let s = self.advance(s, done * long.src_stride);
            let d = self.advance(d, done * long.dst_stride);
            self.nest(&[rest, short], Kernel::Element, s, d);
        }
    }
}
