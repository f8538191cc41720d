//! The kernels of packed (sub-byte) plans. Their pointers count elements (a byte address
//! times the elements per byte), so the plan's element offsets add to them; each kernel turns
//! them into byte addresses where it touches memory.
//!
//! - A single element is read from its byte and written into its byte, the other elements of
//!   that byte kept (XLA's bit order: the first element of a byte in its high bits).
//! - A copy the planner kept moves whole bytes, as a byte copy (or the streaming routine).
//! - A 4-bit transpose the planner kept combines each pair of source rows into one row of
//!   bytes that each hold a destination nibble pair, then transposes those bytes: per tile of
//!   16 elements along `a` and 32 along `b`, 32 eight-byte loads, masks and shifts, one byte
//!   interleave per row pair, the 16 × 16 byte transpose network, 16 stores of 16 bytes; tiles
//!   side by side along `a` go in pairs, 32 sixteen-byte loads and one set of masks and shifts
//!   for both. It
//!   stores in place, or, as the byte transposes do, into the staging buffer whose rows are then
//!   copied (or streamed) out whole.

use cranelift_codegen::ir::{types, FuncRef, InstBuilder, Value};

use super::kernels::{into_stage, Ahead, Prefetch, SourceBlock};
use super::network::Network;
use super::{Emitter, VECTOR_BYTES};
use crate::plan::{CopyWrite, Flush, Kernel, Loop, Packed, TransposeTile, TransposeWrite};

/// Elements of a 4-bit transpose tile along `a` (16 bytes of nibble pairs per destination row)
/// and along `b` (16 source row pairs).
const TILE_A: usize = Packed::TRANSPOSE_TILE.0;
const TILE_B: usize = Packed::TRANSPOSE_TILE.1;

/// The two nibble masks of the 4-bit transpose, as vectors.
#[derive(Clone, Copy)]
struct Nibbles {
    low: Value,
    high: Value,
}

impl Emitter<'_> {
    /// Emits a packed plan's kernel at element addresses `s` and `d`.
    pub(super) fn packed_kernel(
        &mut self,
        packed: Packed,
        kernel: Kernel,
        prefetch: Option<Prefetch>,
        s: Value,
        d: Value,
    ) {
        match kernel {
            Kernel::Element => self.packed_element(packed, s, d),
            Kernel::Copy { len, write, .. } => {
                let (s, d) = (self.byte_address(packed, s), self.byte_address(packed, d));
                let bytes = len / packed.per_byte();
                match write {
                    CopyWrite::Stored => self.copy(s, d, bytes as i64),
                    CopyWrite::Streamed { rows, .. } | CopyWrite::Prefetched { rows } => {
                        let routine = self.copy_routine(write);
                        self.byte_rows(packed, rows, bytes, routine, s, d)
                    }
                }
            }
            // The planner lowers streamed tiles to tiles in place (nibbles take no streaming
            // stores); were one left, it is stored in place.
            Kernel::Transpose {
                tile,
                write:
                    TransposeWrite::InPlace | TransposeWrite::Streamed | TransposeWrite::Prefetched,
            } => self.nibble_transpose(tile, s, d),
            Kernel::Transpose {
                tile,
                write: TransposeWrite::Staged(flush),
            } => self.staged_nibble_transpose(tile, flush, prefetch, s, d),
            // The planner lowers the other kernels to element moves, and joins no runs of
            // nibbles (the verifier checks both); were one left, its loops around element
            // moves do the same.
            Kernel::Zip { .. }
            | Kernel::Unzip { .. }
            | Kernel::Transpose {
                write: TransposeWrite::Joined(_),
                ..
            } => self.nest(&kernel.loops(), Kernel::Element, s, d),
        }
    }

    /// Copies `rows` (element strides) of `bytes` bytes each from byte address `s` to byte
    /// address `d`, by one call of the runtime's row routine `routine`.
    fn byte_rows(
        &mut self,
        packed: Packed,
        rows: Loop,
        bytes: usize,
        routine: FuncRef,
        s: Value,
        d: Value,
    ) {
        let k = packed.per_byte() as i64;
        let rows = Loop {
            extent: rows.extent,
            src_stride: rows.src_stride / k,
            dst_stride: rows.dst_stride / k,
            index_stride: 0,
        };
        self.stream_copy(routine, rows, bytes, s, d)
    }

    /// A 4-bit transpose through the staging buffer: the block's tiles into staging rows of
    /// `b.extent` elements (one per step of `a`, whole bytes: the planner staged only then),
    /// then those rows out to the destination one after another.
    fn staged_nibble_transpose(
        &mut self,
        tile: TransposeTile,
        flush: Flush,
        prefetch: Option<Prefetch>,
        s: Value,
        d: Value,
    ) {
        let row = tile.b.extent;
        let k = PACKED_4.per_byte();
        let into_stage = into_stage(tile);
        let stage = self.stage_address();
        let shift = PACKED_4.per_byte().trailing_zeros() as i64;
        let stage_elements = self.b.ins().ishl_imm_u(stage, shift);
        self.nibble_transpose(into_stage, s, stage_elements);
        let block = SourceBlock {
            rows: tile.b.extent,
            row_bytes: tile.a.extent.div_ceil(k) as i64,
            row_stride: tile.b.src_stride / k as i64,
        };
        let s_bytes = self.byte_address(PACKED_4, s);
        self.ask_ahead(Ahead::of(
            block,
            prefetch.map(|p| p.with_step(|step| step / k as i64)),
            s_bytes,
        ));
        let rows = Loop {
            extent: tile.a.extent,
            src_stride: row as i64,
            dst_stride: tile.a.dst_stride,
            index_stride: 0,
        };
        let d = self.byte_address(PACKED_4, d);
        let routine = self.flush_routine(flush);
        self.byte_rows(PACKED_4, rows, row / k, routine, stage, d);
    }

    /// The byte address of element address `p`.
    fn byte_address(&mut self, packed: Packed, p: Value) -> Value {
        let shift = packed.per_byte().trailing_zeros() as i64;
        self.b.ins().ushr_imm_u(p, shift)
    }

    /// How far element address `p`'s bits sit above its byte's least significant bit:
    /// `bits · (k - 1 - p mod k)`, which is `bits · ((p mod k) xor (k - 1))`.
    fn bit_shift(&mut self, packed: Packed, p: Value) -> Value {
        let last = packed.per_byte() as i64 - 1;
        let within = self.b.ins().band_imm_u(p, last);
        let flipped = self.b.ins().bxor_imm_u(within, last);
        self.b.ins().imul_imm_u(flipped, packed.bits() as i64)
    }

    /// Moves one element: its bits out of the source byte, into the destination byte.
    fn packed_element(&mut self, packed: Packed, s: Value, d: Value) {
        let mask = (1i64 << packed.bits()) - 1;
        let (from, to) = (self.byte_address(packed, s), self.byte_address(packed, d));
        let (s_shift, d_shift) = (self.bit_shift(packed, s), self.bit_shift(packed, d));
        let byte = self.b.ins().uload8(types::I32, self.flags, from, 0);
        let value = self.b.ins().ushr(byte, s_shift);
        let value = self.b.ins().band_imm_u(value, mask);
        let value = self.b.ins().ishl(value, d_shift);
        let old = self.b.ins().uload8(types::I32, self.flags, to, 0);
        let slot = self.b.ins().iconst(types::I32, mask);
        let slot = self.b.ins().ishl(slot, d_shift);
        let kept = self.b.ins().band_not(old, slot);
        let new = self.b.ins().bor(kept, value);
        self.b.ins().istore8(self.flags, new, to, 0);
    }

    /// A transpose of 4-bit elements whose source rows (steps of `b`) and destination rows
    /// (steps of `a`) start on whole bytes: whole tiles through registers, the edges element by
    /// element.
    fn nibble_transpose(&mut self, tile: TransposeTile, s: Value, d: Value) {
        let TransposeTile { a, b, .. } = tile;
        let (whole_a, whole_b) = (a.extent / TILE_A, b.extent / TILE_B);
        let tiles_a = Loop {
            extent: whole_a,
            src_stride: TILE_A as i64,
            dst_stride: TILE_A as i64 * a.dst_stride,
            index_stride: 0,
        };
        let tiles_b = Loop {
            extent: whole_b,
            src_stride: TILE_B as i64 * b.src_stride,
            dst_stride: TILE_B as i64,
            index_stride: 0,
        };
        if whole_a > 0 && whole_b > 0 {
            let nibbles = Nibbles {
                low: self.splat_byte(0x0f),
                high: self.splat_byte(0xf0),
            };
            // Tiles in pairs along `a` (16 bytes of each source row), then the odd one.
            let pairs = Loop {
                extent: whole_a / 2,
                src_stride: 2 * tiles_a.src_stride,
                dst_stride: 2 * tiles_a.dst_stride,
                index_stride: 0,
            };
            let odd = whole_a % 2 == 1;
            self.fixed_loop(tiles_b, s, d, |e, s, d| {
                e.fixed_loop(pairs, s, d, |e, s, d| {
                    e.nibble_tiles(a, b, Width::Pair, nibbles, s, d)
                });
                if odd {
                    let done = (whole_a - 1) as i64;
                    let (s, d) =
                        e.advance(s, d, (done * tiles_a.src_stride, done * tiles_a.dst_stride));
                    e.nibble_tiles(a, b, Width::Single, nibbles, s, d);
                }
            });
        }
        self.tile_edges(a, b, whole_a * TILE_A, whole_b * TILE_B, s, d);
    }

    /// A vector of 16 bytes `byte`.
    fn splat_byte(&mut self, byte: i64) -> Value {
        let x = self.b.ins().iconst(types::I8, byte);
        self.b.ins().splat(types::I8X16, x)
    }

    /// One tile, or two side by side along `a` (`width`): row pair `r` of the source (rows
    /// `2r` and `2r + 1` along `b`, 16 elements along `a` each per tile, 8 bytes) becomes
    /// register `r` of each tile, whose byte `j` holds the destination nibble pair of element
    /// `j` along `a`; the byte transpose turns register `r`'s bytes into byte `r` of destination
    /// rows `0..16` of its tile. A pair of tiles loads 16 bytes of each source row at once and
    /// pairs the nibbles of both tiles with the same masks and shifts.
    fn nibble_tiles(
        &mut self,
        a: Loop,
        b: Loop,
        width: Width,
        nibbles: Nibbles,
        s: Value,
        d: Value,
    ) {
        let (s, d) = (
            self.byte_address(PACKED_4, s),
            self.byte_address(PACKED_4, d),
        );
        // Bytes between source rows along `b`, and between destination rows along `a` (both
        // strides are even: the planner kept this kernel only then).
        let (row_bytes, dst_row_bytes) = (b.src_stride / 2, a.dst_stride / 2);
        let tiles = width.tiles();
        let mut registers: Vec<Vec<Value>> = vec![Vec::new(); tiles];
        for r in 0..VECTOR_BYTES as i64 {
            let load = |e: &mut Self, at: i64| match width {
                Width::Single => e.load_half(s, at),
                Width::Pair => e.load_vector(s, at),
            };
            let even = load(self, 2 * r * row_bytes);
            let odd = load(self, (2 * r + 1) * row_bytes);
            for (tile, pairs) in self
                .nibble_pairs(even, odd, nibbles, tiles)
                .into_iter()
                .enumerate()
            {
                registers[tile].push(pairs);
            }
        }
        let network = Network::transpose(VECTOR_BYTES, 1);
        for (tile, pairs) in registers.into_iter().enumerate() {
            let first_row = (tile * TILE_A) as i64;
            for (reg, (_, j)) in self.run_network(&network, pairs) {
                let (base, offset) = self.address(d, (first_row + j as i64) * dst_row_bytes);
                self.b.ins().store(self.flags, reg, base, offset);
            }
        }
    }

    /// Eight bytes at `s + at`, in the low half of a vector.
    fn load_half(&mut self, s: Value, at: i64) -> Value {
        let (base, offset) = self.address(s, at);
        let x = self.b.ins().load(types::I64, self.flags, base, offset);
        let v = self.b.ins().scalar_to_vector(types::I64X2, x);
        self.bitcast(types::I8X16, v)
    }

    /// Sixteen bytes at `s + at`.
    fn load_vector(&mut self, s: Value, at: i64) -> Value {
        let (base, offset) = self.address(s, at);
        self.b.ins().load(types::I8X16, self.flags, base, offset)
    }

    /// From the bytes of a source row `x` and of the next row `y` (8 bytes, 16 elements along
    /// `a`, per tile), for each of `tiles` tiles the 16 bytes that each hold element `j` of `x`
    /// (high nibble) and of `y` (low nibble), in the order of `j`.
    fn nibble_pairs(&mut self, x: Value, y: Value, n: Nibbles, tiles: usize) -> Vec<Value> {
        // Even `j`: the high nibbles of `x` and `y`; odd `j`: their low nibbles.
        let y_down = self.shift_words(y, false);
        let x_up = self.shift_words(x, true);
        let x_high = self.b.ins().band(x, n.high);
        let y_high = self.b.ins().band(y_down, n.low);
        let even = self.b.ins().bor(x_high, y_high);
        let x_low = self.b.ins().band(x_up, n.high);
        let y_low = self.b.ins().band(y, n.low);
        let odd = self.b.ins().bor(x_low, y_low);
        // Tile `t` interleaves bytes `8t..8t + 8` of `even` and `odd`.
        (0..tiles)
            .map(|t| {
                let interleave: [u8; VECTOR_BYTES] =
                    std::array::from_fn(|i| ((i % 2) * 16 + 8 * t + i / 2) as u8);
                let mask = self.shuffle_mask(&interleave);
                self.b.ins().shuffle(even, odd, mask)
            })
            .collect()
    }

    /// `v` shifted by 4 bits up (or down) within 16-bit lanes; the caller masks off the bits
    /// that cross a byte.
    fn shift_words(&mut self, v: Value, up: bool) -> Value {
        let words = self.bitcast(types::I16X8, v);
        let shifted = match up {
            true => self.b.ins().ishl_imm_u(words, 4),
            false => self.b.ins().ushr_imm_u(words, 4),
        };
        self.bitcast(types::I8X16, shifted)
    }
}

/// 4-bit elements: what the transpose tiles are for.
const PACKED_4: Packed = Packed::FOUR_BITS;

/// How many tiles along `a` one call of the 4-bit tile kernel moves.
#[derive(Clone, Copy)]
enum Width {
    /// One tile: 8 bytes of each source row.
    Single,
    /// Two tiles side by side: 16 bytes of each source row.
    Pair,
}

impl Width {
    fn tiles(self) -> usize {
        match self {
            Width::Single => 1,
            Width::Pair => 2,
        }
    }
}
