//! The innermost operations: one element, a contiguous copy, and the in-register transpose.

use cranelift_codegen::ir::{types, Immediate, InstBuilder, Type, Value};

use super::Emitter;
use crate::plan::{Kernel, Loop};

/// Bytes per vector register (Cranelift's x86-64 and aarch64 vectors are 128-bit).
const VECTOR_BYTES: i64 = 16;
/// Copies up to this many bytes are straight-line code; longer ones loop over 64-byte blocks.
const STRAIGHT_COPY_BYTES: i64 = 256;
/// Vectors moved per iteration of a long copy.
const COPY_UNROLL: i64 = 4;

impl Emitter<'_> {
    /// Emits `kernel` at source address `s` and destination address `d`.
    pub(super) fn kernel(&mut self, kernel: Kernel, s: Value, d: Value) {
        match kernel {
            Kernel::Element => self.move_bytes(s, d, 0, self.elem_size),
            Kernel::Copy { len } => self.copy(s, d, len as i64 * self.elem_size),
            Kernel::Transpose { a, b, lanes } => self.transpose(a, b, lanes, s, d),
        }
    }

    /// Straight-line copy of `bytes` bytes at byte offset `at`: 16-byte vectors, then 8/4/2/1.
    fn move_bytes(&mut self, s: Value, d: Value, mut at: i64, mut bytes: i64) {
        for (width, ty) in [
            (VECTOR_BYTES, types::I8X16),
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
        let block = VECTOR_BYTES * COPY_UNROLL;
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
    fn transpose(&mut self, a: Loop, b: Loop, lanes: usize, s: Value, d: Value) {
        let l = lanes as i64;
        let (whole_a, whole_b) = (a.extent / lanes, b.extent / lanes);
        let rows = Loop {
            extent: whole_b,
            src_stride: l * b.src_stride,
            dst_stride: l,
        };
        let tiles = Loop {
            extent: whole_a,
            src_stride: l,
            dst_stride: l * a.dst_stride,
        };
        let rest_a = Loop {
            extent: a.extent % lanes,
            ..a
        };
        let strip_b = Loop { extent: lanes, ..b };
        self.fixed_loop(rows, s, d, |e, s, d| {
            e.fixed_loop(tiles, s, d, |e, s, d| e.transpose_tile(a, b, lanes, s, d));
            if rest_a.extent > 0 {
                let done = (whole_a * lanes) as i64;
                let (s, d) = (e.advance(s, done), e.advance(d, done * a.dst_stride));
                e.nest(&[rest_a, strip_b], Kernel::Element, s, d);
            }
        });
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

    /// One register tile: load row `i` (`lanes` elements along `a`) from `s + i·b.src_stride`,
    /// transpose, store column `j` to `d + j·a.dst_stride`.
    fn transpose_tile(&mut self, a: Loop, b: Loop, lanes: usize, s: Value, d: Value) {
        let mut regs: Vec<Value> = (0..lanes as i64)
            .map(|i| {
                let at = self.advance(s, i * b.src_stride);
                self.b.ins().load(types::I8X16, self.flags, at, 0)
            })
            .collect();
        let network = TransposeNetwork::new(lanes);
        for stage in &network.stages {
            let lo = self.shuffle_mask(&stage.lo_mask);
            let hi = self.shuffle_mask(&stage.hi_mask);
            let half = lanes / 2;
            let mut next = regs.clone();
            for p in 0..half {
                let (x, y) = (regs[2 * p], regs[2 * p + 1]);
                next[p] = self.b.ins().shuffle(x, y, lo);
                next[half + p] = self.b.ins().shuffle(x, y, hi);
            }
            regs = next;
        }
        for (reg, &column) in regs.iter().zip(&network.columns) {
            let at = self.advance(d, column as i64 * a.dst_stride);
            self.b.ins().store(self.flags, *reg, at, 0);
        }
    }

    fn shuffle_mask(&mut self, bytes: &[u8; 16]) -> Immediate {
        self.b.func.dfg.immediates.push(bytes.to_vec().into())
    }
}

/// The interleave stages that transpose `lanes` registers of `lanes` elements, and which column
/// each output register holds. Stage `k` pairs registers `2p` and `2p+1`, interleaving chunks of
/// `2^k` elements (`punpckl*`/`punpckh*`); low halves go to register `p`, high halves to
/// `lanes/2 + p`.
struct TransposeNetwork {
    stages: Vec<Stage>,
    /// `columns[r]`: the tile column that output register `r` holds (rows in order).
    columns: Vec<usize>,
}

struct Stage {
    lo_mask: [u8; 16],
    hi_mask: [u8; 16],
}

impl TransposeNetwork {
    fn new(lanes: usize) -> TransposeNetwork {
        let width = 16 / lanes;
        let mut labels: Vec<Vec<(usize, usize)>> = (0..lanes)
            .map(|row| (0..lanes).map(|col| (row, col)).collect())
            .collect();
        let mut stages = Vec::new();
        let mut chunk = 1;
        while chunk < lanes {
            let stage = Stage {
                lo_mask: interleave_mask(width * chunk, 0),
                hi_mask: interleave_mask(width * chunk, 8),
            };
            let half = lanes / 2;
            let mut next = labels.clone();
            for p in 0..half {
                let (x, y) = (&labels[2 * p], &labels[2 * p + 1]);
                next[p] = interleave(x, y, chunk, 0);
                next[half + p] = interleave(x, y, chunk, lanes / 2);
            }
            labels = next;
            stages.push(stage);
            chunk *= 2;
        }
        let columns = labels.iter().map(|reg| reg[0].1).collect();
        TransposeNetwork { stages, columns }
    }
}

/// Byte mask of `punpck{l,h}` on `chunk`-byte units: the half starting at byte `from` of both
/// operands, alternating `a`, `b`.
fn interleave_mask(chunk: usize, from: usize) -> [u8; 16] {
    let mut mask = [0u8; 16];
    for (i, m) in mask.iter_mut().enumerate() {
        let (unit, byte) = (i / chunk, i % chunk);
        let operand = unit % 2;
        let pos = from + (unit / 2) * chunk + byte;
        *m = (operand * 16 + pos) as u8;
    }
    mask
}

/// The same interleave on element labels: units of `chunk` elements from element `from`.
fn interleave<T: Copy>(x: &[T], y: &[T], chunk: usize, from: usize) -> Vec<T> {
    let units = x.len() / chunk;
    (0..units)
        .flat_map(|u| {
            let src = if u % 2 == 0 { x } else { y };
            let start = from + (u / 2) * chunk;
            src[start..start + chunk].iter().copied()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Applies the network's byte masks to labelled bytes (register `i`, byte `k` = `16·i + k`)
    /// and checks that output register `r` holds column `columns[r]` of the tile, rows in order.
    #[test]
    fn every_network_transposes() {
        for lanes in [2, 4, 8, 16] {
            let net = TransposeNetwork::new(lanes);
            let width = 16 / lanes;
            let mut regs: Vec<Vec<usize>> = (0..lanes)
                .map(|i| (0..16).map(|k| 16 * i + k).collect())
                .collect();
            for stage in &net.stages {
                let apply = |x: &[usize], y: &[usize], mask: &[u8; 16]| -> Vec<usize> {
                    mask.iter()
                        .map(|&m| {
                            if m < 16 {
                                x[m as usize]
                            } else {
                                y[m as usize - 16]
                            }
                        })
                        .collect()
                };
                let half = lanes / 2;
                let mut next = regs.clone();
                for p in 0..half {
                    next[p] = apply(&regs[2 * p], &regs[2 * p + 1], &stage.lo_mask);
                    next[half + p] = apply(&regs[2 * p], &regs[2 * p + 1], &stage.hi_mask);
                }
                regs = next;
            }
            for (r, reg) in regs.iter().enumerate() {
                let col = net.columns[r];
                let expected: Vec<usize> = (0..lanes)
                    .flat_map(|row| (0..width).map(move |t| 16 * row + col * width + t))
                    .collect();
                assert_eq!(reg, &expected, "lanes {lanes}, register {r}");
            }
        }
    }

    #[test]
    fn interleave_masks_are_punpck() {
        // punpckldq: a0 b0 a1 b1 in 32-bit units.
        assert_eq!(
            interleave_mask(4, 0),
            [0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23]
        );
        // punpckhqdq: a1 b1 in 64-bit units.
        assert_eq!(
            interleave_mask(8, 8),
            [8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31]
        );
    }
}
