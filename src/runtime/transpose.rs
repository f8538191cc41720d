//! Transposes of a block by the runtime: the register tiles of transposes of 1- and 2-byte
//! elements, compiled ahead of time instead of emitted into every kernel.
//!
//! A transpose kernel moves a block with register tiles and the elements past the last whole
//! tile, into the destination or into a staging buffer that it then streams or copies out. A
//! 16 × 16-byte tile is 16 loads, 64 shuffles and 16 stores, an 8 × 8 u16 one 48 shuffles;
//! emitted by the code generator (once per region), those bodies were most of a kernel's code,
//! and Cranelift's time grows with the code. Here they are one call per block (of 4–16 KiB
//! where blocks are staged, so the call costs nothing measurable).
//! On a 2-core Intel Xeon VM (family 6, model 167), compiling the 8000² u8 transpose went from
//! 651–684 to 190–203 µs and the u16 one from 370–397 to 218–232 (three alternating runs of
//! 300 uncached compiles each), and in `relayout bench --no-tune` (three alternating runs of
//! each build, fraction of memcpy's speed) u8 ran at 0.79–0.83 against 0.80–0.81 with emitted
//! tiles and u16 at 0.97–0.98 against 0.97–0.99, where the CPU has AVX
//! ([`transpose_block_vex`]); in SSE2's encoding alone, u8 ran at 0.65–0.70 against 0.70–0.78.
//! Tiles of two 16-byte halves in AVX2 vectors (two tiles side by side) made u16 much slower
//! (0.60–0.64). Blocks transposed straight into the destination (tensors too small to stage,
//! and tuning's candidates with ordinary stores) call the routines too: a 1000 × 3000 u8
//! transpose compiled in 284–287 µs instead of 1331–1348 and ran at 0.65 of memcpy against
//! 0.59–0.63, u16 in 264–284 µs against 557–571 at 0.57–0.66 against 0.63–0.70 (five
//! alternating runs each; the same kernel's runs spread by 4% there).
//!
//! The 4 × 4 f32 and 2 × 2 f64 tiles (8 and 2 shuffles) stay emitted: the same routine for
//! them, in SSE2's encoding, took 8000² f32 from 0.56–0.59 of memcpy to 0.44–0.47 and NCHW →
//! NHWC from 0.67–0.83 to 0.46–0.54 in alternating runs, while their compile time gained
//! little (AVX's encoding was not tried for them).
//! [`BlockTranspose`] names the routines: one per element size and order of the tiles
//! ([`Walk`](crate::plan::Walk)).

/// A routine that transposes a block into the destination or a staging buffer (the stage): its
/// element size and whether it visits the tiles across the source rows (each step along them
/// finishes whole stage rows) or along them.
///
/// The routine is called like the streaming routine, with six 64-bit arguments: the source
/// block, the stage, the block's extent along the source rows (`a`, the stage's rows), its
/// extent across them (`b`, the source rows), the bytes from one source row to the next and
/// the bytes from one stage row to the next. Element `(i, j)` (`i` along `a`,
/// `j` along `b`) goes from `src + j · src_stride + i · size` to `stage + i · stage_stride +
/// j · size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BlockTranspose {
    /// Bytes of an element: 1 or 2.
    pub(crate) elem_size: usize,
    /// Whether the tiles go across the source rows (tiles along `b` inside), else along them.
    pub(crate) across: bool,
}

/// The instance of the generic routine `$routine` for the element size and tile order of the
/// [`BlockTranspose`] `$t`.
macro_rules! instance {
    ($routine:ident, $t:expr) => {
        match ($t.elem_size, $t.across) {
            (1, false) => $routine::<1, 16, false> as Routine,
            (1, true) => $routine::<1, 16, true>,
            (2, false) => $routine::<2, 8, false>,
            _ => $routine::<2, 8, true>,
        }
    };
}

impl BlockTranspose {
    /// Every routine, in the order the JIT module declares them.
    pub(crate) const ALL: [BlockTranspose; 4] = [
        BlockTranspose::new(1, false),
        BlockTranspose::new(1, true),
        BlockTranspose::new(2, false),
        BlockTranspose::new(2, true),
    ];

    const fn new(elem_size: usize, across: bool) -> BlockTranspose {
        BlockTranspose { elem_size, across }
    }

    /// The routine for `elem_size`-byte elements, if the runtime has one.
    pub(crate) fn of(elem_size: usize, across: bool) -> Option<BlockTranspose> {
        let t = BlockTranspose::new(elem_size, across);
        BlockTranspose::ALL.contains(&t).then_some(t)
    }

    /// Where the routine comes in [`BlockTranspose::ALL`].
    pub(crate) fn position(self) -> usize {
        (self.elem_size.trailing_zeros() as usize) * 2 + usize::from(self.across)
    }

    /// The symbol under which the JIT module resolves the routine.
    pub(crate) fn symbol(self) -> &'static str {
        const SYMBOLS: [&str; 4] = [
            "relayout_transpose_block_1_along",
            "relayout_transpose_block_1_across",
            "relayout_transpose_block_2_along",
            "relayout_transpose_block_2_across",
        ];
        SYMBOLS[self.position()]
    }

    /// The routine's address: in the first of [`Encoding::PREFERRED`] the CPU runs.
    pub(crate) fn routine(self) -> *const u8 {
        let routine = Encoding::PREFERRED
            .into_iter()
            .find_map(|encoding| self.compiled(encoding))
            .unwrap_or_else(|| self.baseline());
        routine as *const u8
    }

    /// The routine compiled in `encoding`, if the CPU runs that encoding.
    fn compiled(self, encoding: Encoding) -> Option<Routine> {
        match encoding {
            Encoding::Baseline => Some(self.baseline()),
            #[cfg(target_arch = "x86_64")]
            Encoding::Vex if std::is_x86_feature_detected!("avx") => {
                Some(instance!(transpose_block_vex, self))
            }
            #[cfg(target_arch = "x86_64")]
            Encoding::Vex => None,
        }
    }

    /// The routine in the architecture's baseline encoding.
    fn baseline(self) -> Routine {
        instance!(transpose_block, self)
    }
}

/// The instruction encodings the routines are compiled in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Encoding {
    /// AVX's three-operand (VEX) encoding of the SSE2 shuffles ([`transpose_block_vex`]).
    #[cfg(target_arch = "x86_64")]
    Vex,
    /// What every CPU of the architecture runs.
    Baseline,
}

impl Encoding {
    /// Every encoding, the fastest first.
    const PREFERRED: [Encoding; if cfg!(target_arch = "x86_64") { 2 } else { 1 }] = [
        #[cfg(target_arch = "x86_64")]
        Encoding::Vex,
        Encoding::Baseline,
    ];
}

/// A block transpose's signature (see [`BlockTranspose`]).
type Routine = unsafe extern "C" fn(*const u8, *mut u8, i64, i64, i64, i64);

/// Bytes of a register tile's rows.
const TILE_BYTES: usize = 16;

/// Defines a routine of [`BlockTranspose`]'s signature, generic over the element size, the
/// tile's lanes and the tiles' order, with the attributes given (its docs, its target features).
macro_rules! block_transpose_routine {
    ($(#[$attr:meta])* $name:ident) => {
        $(#[$attr])*
        unsafe extern "C" fn $name<const SIZE: usize, const LANES: usize, const ACROSS: bool>(
            src: *const u8,
            stage: *mut u8,
            a: i64,
            b: i64,
            src_stride: i64,
            stage_stride: i64,
        ) {
            let shape = [a, b, src_stride, stage_stride];
            let block = Block::<SIZE, LANES, ACROSS>::new(src, stage, shape);
            // SAFETY: forwarded from the caller (who calls a routine with target features only
            // where the CPU has them).
            unsafe { block.transpose() }
        }
    };
}

block_transpose_routine!(
    /// Transposes the block `a × b` of `SIZE`-byte elements at `src` into `stage` (see
    /// [`BlockTranspose`]): whole tiles of `LANES` (`16 / SIZE`) elements square, across or along
    /// the source rows as `ACROSS` says, then the elements past them one by one.
    ///
    /// # Safety
    /// `src` must be valid for reads of every element of the block and `stage` for writes of
    /// every element it receives; the two must not overlap. Negative extents count as zero.
    transpose_block
);

#[cfg(target_arch = "x86_64")]
block_transpose_routine!(
    /// [`transpose_block`] in AVX's three-operand (VEX) encoding of the same SSE2 shuffles.
    /// SSE2's encoding overwrites one input of each shuffle, and every pair of rows feeds two
    /// (its low and high halves), so the baseline build copies a register before each pair: on
    /// a 2-core Intel Xeon VM (family 6, model 167) the 8000² u8 transpose moved 0.65–0.70 of
    /// memcpy that way and 0.79–0.83 in this encoding, as fast as the tiles the code generator
    /// emits (0.80–0.81), in alternating `relayout bench --no-tune` runs.
    ///
    /// # Safety
    /// As [`transpose_block`]; the CPU must have AVX.
    #[target_feature(enable = "avx")]
    transpose_block_vex
);

/// One call's block.
#[derive(Clone, Copy)]
struct Block<const SIZE: usize, const LANES: usize, const ACROSS: bool> {
    src: *const u8,
    stage: *mut u8,
    a: usize,
    b: usize,
    src_stride: isize,
    stage_stride: isize,
}

impl<const SIZE: usize, const LANES: usize, const ACROSS: bool> Block<SIZE, LANES, ACROSS> {
    fn new(src: *const u8, stage: *mut u8, [a, b, src_stride, stage_stride]: [i64; 4]) -> Self {
        Block {
            src,
            stage,
            a: a.max(0) as usize,
            b: b.max(0) as usize,
            src_stride: src_stride as isize,
            stage_stride: stage_stride as isize,
        }
    }

    fn from(&self, i: usize, j: usize) -> *const u8 {
        self.src
            .wrapping_offset(j as isize * self.src_stride + (i * SIZE) as isize)
    }

    fn to(&self, i: usize, j: usize) -> *mut u8 {
        self.stage
            .wrapping_offset(i as isize * self.stage_stride + (j * SIZE) as isize)
    }

    /// The whole tiles, then the elements past them.
    ///
    /// # Safety
    /// As [`transpose_block`].
    #[inline(always)]
    unsafe fn transpose(self) {
        let (whole_a, whole_b) = (self.a / LANES * LANES, self.b / LANES * LANES);
        let tile = |i: usize, j: usize| {
            let (from, to) = (self.from(i, j), self.to(i, j));
            // SAFETY: the tile's rows lie in the block, which the caller promises.
            unsafe {
                transpose_tile::<Vector, SIZE, LANES>(from, self.src_stride, to, self.stage_stride)
            }
        };
        if ACROSS {
            for i in (0..whole_a).step_by(LANES) {
                for j in (0..whole_b).step_by(LANES) {
                    tile(i, j);
                }
            }
        } else {
            for j in (0..whole_b).step_by(LANES) {
                for i in (0..whole_a).step_by(LANES) {
                    tile(i, j);
                }
            }
        }
        let element = |i: usize, j: usize| {
            // SAFETY: element `(i, j)` is in the block, which the caller promises.
            unsafe { std::ptr::copy_nonoverlapping(self.from(i, j), self.to(i, j), SIZE) }
        };
        for j in 0..whole_b {
            (whole_a..self.a).for_each(|i| element(i, j));
        }
        for j in whole_b..self.b {
            (0..self.a).for_each(|i| element(i, j));
        }
    }
}

/// Vectors that hold a 16-byte row of a register tile, and the instructions a tile needs.
trait TileRows: Copy {
    /// The vector at `p`.
    ///
    /// # Safety
    /// `p` must be valid for reads of the vector; the CPU must have the type's features.
    unsafe fn load(p: *const u8) -> Self;

    /// `x` and `y` interleaved in units of `unit` bytes: their low halves, then their high
    /// halves.
    ///
    /// # Safety
    /// The CPU must have the type's features.
    unsafe fn unpack(unit: usize, x: Self, y: Self) -> (Self, Self);

    /// Stores the vector at `dst`.
    ///
    /// # Safety
    /// `dst` must be valid for writes of the vector; the CPU must have the type's features.
    unsafe fn store(self, dst: *mut u8);
}

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::__m128i;

/// A tile's rows in the vectors every CPU of the architecture has.
#[cfg(target_arch = "x86_64")]
type Vector = Sse2;
#[cfg(not(target_arch = "x86_64"))]
type Vector = Portable;

/// One tile's rows as plain bytes, interleaved one unit at a time (architectures without the
/// x86-64 shuffles).
#[cfg(not(target_arch = "x86_64"))]
#[derive(Clone, Copy)]
struct Portable([u8; TILE_BYTES]);

#[cfg(not(target_arch = "x86_64"))]
impl TileRows for Portable {
    unsafe fn load(p: *const u8) -> Self {
        // SAFETY: the caller's promise.
        Portable(unsafe { p.cast::<[u8; TILE_BYTES]>().read_unaligned() })
    }

    unsafe fn unpack(unit: usize, x: Self, y: Self) -> (Self, Self) {
        let half = TILE_BYTES / 2;
        let mut out = [[0u8; TILE_BYTES]; 2];
        for (h, out) in out.iter_mut().enumerate() {
            for k in 0..half / unit {
                let from = h * half + k * unit;
                out[2 * k * unit..][..unit].copy_from_slice(&x.0[from..from + unit]);
                out[(2 * k + 1) * unit..][..unit].copy_from_slice(&y.0[from..from + unit]);
            }
        }
        (Portable(out[0]), Portable(out[1]))
    }

    unsafe fn store(self, dst: *mut u8) {
        // SAFETY: the caller's promise.
        unsafe { dst.cast::<[u8; TILE_BYTES]>().write_unaligned(self.0) }
    }
}

/// One tile's rows in SSE2 vectors (part of the x86-64 baseline).
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct Sse2(__m128i);

#[cfg(target_arch = "x86_64")]
impl TileRows for Sse2 {
    #[inline(always)]
    unsafe fn load(p: *const u8) -> Self {
        // SAFETY: the caller's promise; the load accepts any alignment.
        Sse2(unsafe { std::arch::x86_64::_mm_loadu_si128(p.cast()) })
    }

    #[inline(always)]
    unsafe fn unpack(unit: usize, x: Self, y: Self) -> (Self, Self) {
        use std::arch::x86_64::*;
        let (x, y) = (x.0, y.0);
        // SAFETY: SSE2 is part of the x86-64 baseline.
        let (lo, hi) = unsafe {
            match unit {
                1 => (_mm_unpacklo_epi8(x, y), _mm_unpackhi_epi8(x, y)),
                2 => (_mm_unpacklo_epi16(x, y), _mm_unpackhi_epi16(x, y)),
                4 => (_mm_unpacklo_epi32(x, y), _mm_unpackhi_epi32(x, y)),
                _ => (_mm_unpacklo_epi64(x, y), _mm_unpackhi_epi64(x, y)),
            }
        };
        (Sse2(lo), Sse2(hi))
    }

    #[inline(always)]
    unsafe fn store(self, dst: *mut u8) {
        // SAFETY: the caller's promise; the store accepts any alignment.
        unsafe { std::arch::x86_64::_mm_storeu_si128(dst.cast(), self.0) }
    }
}

/// One register tile: `LANES` (`16 / SIZE`) rows of 16 bytes from `src` (rows `src_stride`
/// apart) become the columns of the rows at `dst` (rows `dst_stride` apart). Each stage
/// interleaves pairs of rows in units of one, two, four… elements; after the last, column `c`
/// is in the row at the bit-reversed position of `c`. Every size and count is a constant here,
/// so the stages unroll into the shuffles alone.
///
/// # Safety
/// Each of the rows must be valid for the vector at both sides, and the sides must not
/// overlap; the CPU must have `V`'s features.
#[inline(always)]
unsafe fn transpose_tile<V: TileRows, const SIZE: usize, const LANES: usize>(
    src: *const u8,
    src_stride: isize,
    dst: *mut u8,
    dst_stride: isize,
) {
    // The rows' addresses one stride after another (a pointer moved on, where multiples of
    // the stride kept for every row would not all fit in registers).
    // SAFETY: the caller's promise.
    let first = unsafe { V::load(src) };
    let mut rows = [first; LANES];
    let mut from = src;
    for row in rows.iter_mut().skip(1) {
        from = from.wrapping_offset(src_stride);
        // SAFETY: the caller's promise.
        *row = unsafe { V::load(from) };
    }
    let mut unit = SIZE;
    for _ in 0..LANES.trailing_zeros() {
        // SAFETY: the caller's promise.
        rows = unsafe { interleave::<V, LANES>(rows, unit) };
        unit *= 2;
    }
    // Column `c` is in the row at the bit-reversed position of `c` (a table, so that the loop
    // unrolls into stores of registers).
    const REVERSED: [usize; 16] = [0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15];
    let mut to = dst;
    for c in 0..LANES {
        let row = rows[REVERSED[c * (TILE_BYTES / LANES)]];
        // SAFETY: the caller's promise.
        unsafe { row.store(to) };
        to = to.wrapping_offset(dst_stride);
    }
}

/// One stage of a tile: rows `2k` and `2k + 1` interleaved in units of `unit` bytes, the low
/// halves into row `k` and the high halves into row `k + LANES / 2`.
///
/// # Safety
/// The CPU must have `V`'s features.
#[inline(always)]
unsafe fn interleave<V: TileRows, const LANES: usize>(rows: [V; LANES], unit: usize) -> [V; LANES] {
    let half = LANES / 2;
    let mut next = rows;
    for k in 0..half {
        // SAFETY: the caller's promise.
        let (low, high) = unsafe { V::unpack(unit, rows[2 * k], rows[2 * k + 1]) };
        (next[k], next[k + half]) = (low, high);
    }
    next
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Transposes blocks with every routine, with whole tiles and every remainder on both
    /// sides, from a source with padded rows into a padded stage, and compares every byte
    /// (padding included) with the element-by-element answer.
    #[test]
    fn every_routine_transposes_blocks_of_any_extent() {
        let mut routines = vec![];
        for t in BlockTranspose::ALL {
            assert_eq!(BlockTranspose::of(t.elem_size, t.across), Some(t));
            for encoding in Encoding::PREFERRED {
                routines.extend(t.compiled(encoding).map(|routine| (t, encoding, routine)));
            }
        }
        for (t, encoding, routine) in routines {
            let size = t.elem_size;
            let lanes = TILE_BYTES / size;
            for a in [
                0,
                1,
                lanes - 1,
                lanes,
                2 * lanes + 1,
                3 * lanes + lanes / 2 + 1,
                4 * lanes,
            ] {
                for b in [0, 1, lanes - 1, lanes, 2 * lanes + 1, 3 * lanes] {
                    let src_stride = (a + 3) * size;
                    let stage_stride = (b + 5) * size;
                    let src: Vec<u8> = (0..b.max(1) * src_stride).map(|k| k as u8 ^ 0x5a).collect();
                    let mut got = vec![0xeeu8; a.max(1) * stage_stride];
                    let mut want = got.clone();
                    for i in 0..a {
                        for j in 0..b {
                            let (from, to) =
                                (j * src_stride + i * size, i * stage_stride + j * size);
                            want[to..to + size].copy_from_slice(&src[from..from + size]);
                        }
                    }
                    // SAFETY: the buffers hold every element of the block at these strides.
                    unsafe {
                        routine(
                            src.as_ptr(),
                            got.as_mut_ptr(),
                            a as i64,
                            b as i64,
                            src_stride as i64,
                            stage_stride as i64,
                        )
                    };
                    assert!(got == want, "{t:?} ({encoding:?}): {a} x {b}");
                }
            }
        }
    }
}
