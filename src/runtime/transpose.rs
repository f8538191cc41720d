//! Transposes of a block by the runtime: the register tiles of transposes of 1- and 2-byte
//! elements, compiled ahead of time instead of emitted into every kernel.
//!
//! A transpose kernel moves a block with register tiles and the elements past the last whole
//! tile, into the destination or into a staging buffer that it then streams or copies out. A
//! 16 × 16-byte tile is 16 loads, 64 shuffles and 16 stores, an 8 × 8 u16 one 48 shuffles;
//! emitted by the code generator (once per region), those bodies were most of a kernel's code,
//! and Cranelift's time grows with the code. Here they are one call per block (of 4–36 KiB
//! where blocks are staged, so the call costs nothing measurable).
//! On a 2-core Intel Xeon VM (family 6, model 167), compiling the 8000² u8 transpose went from
//! 651–684 to 190–203 µs and the u16 one from 370–397 to 218–232 (three alternating runs of
//! 300 uncached compiles each), and in `relayout bench --no-tune` (three alternating runs of
//! each build, fraction of memcpy's speed) u8 ran at 0.79–0.83 against 0.80–0.81 with emitted
//! tiles and u16 at 0.97–0.98 against 0.97–0.99, where the CPU has AVX
//! ([`transpose_block_vex`]); in SSE2's encoding alone, u8 ran at 0.65–0.70 against 0.70–0.78.
//! Two 16-byte tiles side by side in AVX2 vectors (each half of a vector bound for its own
//! destination rows) made u16 much slower (0.60–0.64); one above the other, each vector a
//! whole destination row, they run faster where the CPU has AVX2 ([`Stacked`]). Blocks
//! transposed straight into the destination (tensors too small to stage, and tuning's
//! candidates with ordinary stores) call the routines too: a 1000 × 3000 u8
//! transpose compiled in 284–287 µs instead of 1331–1348 and ran at 0.65 of memcpy against
//! 0.59–0.63, u16 in 264–284 µs against 557–571 at 0.57–0.66 against 0.63–0.70 (five
//! alternating runs each; the same kernel's runs spread by 4% there).
//!
//! 4- and 8-byte elements go through the runtime only where the CPU has AVX: its 32-byte
//! vectors hold 8 × 8 f32 and 4 × 4 f64 tiles ([`Wide`]), half the loads and stores of
//! Cranelift's 16-byte tiles, which SSE2 alone cannot match (the 16-byte routine in SSE2's
//! encoding took 8000² f32 from 0.56–0.59 of memcpy to 0.44–0.47). On the Intel Xeon VM, in
//! three alternating `relayout bench --no-tune` runs of each build against the emitted 4 × 4
//! and 2 × 2 tiles: 8000² f32 0.65 of memcpy against 0.60–0.61, 8192² f32 0.56–0.57 against
//! 0.53–0.55, 512² f32 0.64–0.68 against 0.52–0.59, 8000² f64 0.74–0.77 against 0.69–0.71,
//! NCHW → NCHW16c 0.75–0.80 against 0.63–0.72, the 256³ reversal 1.15–1.16 against 1.01–1.03;
//! NCHW → NHWC 0.83–0.84 against 0.80–0.84; NHWC → NCHW 0.55–0.56 against 0.57–0.58; the
//! kernels compiled 20–60 µs faster. AVX-512's 64-byte vectors (16 × 16 f32 and 8 × 8 f64
//! tiles, 64 and 24 shuffles) were slower there in alternating runs against these tiles: 8000²
//! f32 0.63 of memcpy against 0.67–0.69, 512² 0.54–0.57 against 0.62, NCHW → NHWC 0.63–0.65
//! against 0.83–0.84, the 256³ reversal 0.98–1.04 against 1.17–1.18; 8000² f64 0.75–0.79
//! against 0.76–0.77.
//! [`BlockTranspose`] names the routines: one per element size and order of the tiles
//! ([`Walk`](crate::plan::Walk)), and for 4- and 8-byte elements one more per order whose tiles
//! are 64 bytes wide at the destination and stream whole lines ([`Lines`],
//! [`TileStores::Streamed`], [`BandLines`]), in AVX-512's encoding where the CPU has it
//! ([`transpose_block_evex`]).

use std::ops::Range;

use super::hints::{ask, Ask, AHEAD_BYTES};

/// A routine that transposes a block into the destination or a staging buffer (the stage): its
/// element size, whether it visits the tiles across the source rows (each step along them
/// finishes whole stage rows) or along them, and how its tiles store.
///
/// The routine is called like the streaming routine, with six 64-bit arguments: the source
/// block, the stage, the block's extent along the source rows (`a`, the stage's rows), its
/// extent across them (`b`, the source rows), the bytes from one source row to the next and
/// the bytes from one stage row to the next. Element `(i, j)` (`i` along `a`,
/// `j` along `b`) goes from `src + j · src_stride + i · size` to `stage + i · stage_stride +
/// j · size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BlockTranspose {
    /// Bytes of an element: 1, 2, 4 or 8.
    pub(crate) elem_size: usize,
    /// Whether the tiles go across the source rows (tiles along `b` inside), else along them.
    pub(crate) across: bool,
    /// How the tiles store their rows.
    pub(crate) stores: TileStores,
}

/// How a block transpose's tiles store their rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TileStores {
    /// Ordinary stores, which keep the rows in the cache: into a staging buffer, or into a
    /// destination small enough to stay there.
    Cached,
    /// Streaming (non-temporal) stores of whole destination lines straight from registers
    /// ([`Lines`] tiles, for 4- and 8-byte elements where the CPU has AVX): no staging buffer,
    /// no read of the destination for ownership. Where a band of tiles writes rows of a line
    /// that follow one another, from a line or 16, 32 or 48 bytes into one, the lines they
    /// cover are streamed, put together from two rows off a line, and the band's first line
    /// stored ordinarily ([`BandLines`]); other rows that do not start a line, and the edges
    /// past the whole tiles, store ordinarily.
    Streamed,
    /// Ordinary stores, each destination row of a tile asking for the line
    /// [`AHEAD_BYTES`](super::hints::AHEAD_BYTES) further along that row to be read for writing
    /// (for 4- and 8-byte elements where the CPU has AVX): where the next blocks continue the
    /// rows (the destination written row band by row band), the lines they will store into are
    /// on their way by then. Elements past the tiles, moved one by one, store without asking. On a 2-core Intel Xeon VM (family 6, model 85), NCHW → NCHW16c (24.5 MiB
    /// of f32, 4 KiB blocks one after another at the destination) ran at 1.14–1.16 of memcpy this
    /// way against 1.03 without asking (`relayout bench --candidates`, two alternating runs).
    Ahead,
}

/// The instance of the generic routine `$routine` for the element size and tile order of the
/// [`BlockTranspose`] `$t`, whose tiles of 1-, 2-, 4- and 8-byte elements are `$one`, `$two`,
/// `$four` and `$eight` (16-byte ones finish what those leave, asking ahead as `$ask` says);
/// given only `$four` and `$eight`, 1- and 2-byte elements take 16-byte tiles alone.
macro_rules! instance {
    ($routine:ident, $t:expr, [$four:ty, $eight:ty], $ask:literal) => {
        instance!(
            $routine,
            $t,
            [Narrow<1, 16, $ask>, Narrow<2, 8, $ask>, $four, $eight],
            $ask
        )
    };
    ($routine:ident, $t:expr, [$one:ty, $two:ty, $four:ty, $eight:ty], $ask:literal) => {
        match ($t.elem_size, $t.across) {
            (1, false) => $routine::<1, $one, Narrow<1, 16, $ask>, false> as Routine,
            (1, true) => $routine::<1, $one, Narrow<1, 16, $ask>, true>,
            (2, false) => $routine::<2, $two, Narrow<2, 8, $ask>, false>,
            (2, true) => $routine::<2, $two, Narrow<2, 8, $ask>, true>,
            (4, false) => $routine::<4, $four, Narrow<4, 4, $ask>, false>,
            (4, true) => $routine::<4, $four, Narrow<4, 4, $ask>, true>,
            (8, false) => $routine::<8, $eight, Narrow<8, 2, $ask>, false>,
            _ => $routine::<8, $eight, Narrow<8, 2, $ask>, true>,
        }
    };
}

impl BlockTranspose {
    /// Every routine.
    pub(crate) const ALL: [BlockTranspose; 16] = [
        BlockTranspose::new(1, false, TileStores::Cached),
        BlockTranspose::new(1, true, TileStores::Cached),
        BlockTranspose::new(2, false, TileStores::Cached),
        BlockTranspose::new(2, true, TileStores::Cached),
        BlockTranspose::new(4, false, TileStores::Cached),
        BlockTranspose::new(4, true, TileStores::Cached),
        BlockTranspose::new(8, false, TileStores::Cached),
        BlockTranspose::new(8, true, TileStores::Cached),
        BlockTranspose::new(4, false, TileStores::Streamed),
        BlockTranspose::new(4, true, TileStores::Streamed),
        BlockTranspose::new(8, false, TileStores::Streamed),
        BlockTranspose::new(8, true, TileStores::Streamed),
        BlockTranspose::new(4, false, TileStores::Ahead),
        BlockTranspose::new(4, true, TileStores::Ahead),
        BlockTranspose::new(8, false, TileStores::Ahead),
        BlockTranspose::new(8, true, TileStores::Ahead),
    ];

    const fn new(elem_size: usize, across: bool, stores: TileStores) -> BlockTranspose {
        BlockTranspose {
            elem_size,
            across,
            stores,
        }
    }

    /// The routine for `elem_size`-byte elements whose tiles store as `stores` says, if the
    /// runtime has one that beats emitted tiles on this CPU: with cached stores, for 1- and
    /// 2-byte elements always, for 4- and 8-byte ones where it has 32-byte vectors ([`Wide`]
    /// tiles); with streamed stores or stores that ask ahead, for 4- and 8-byte elements there
    /// ([`Lines`] tiles, [`Wide`] ones that ask).
    pub(crate) fn of(elem_size: usize, across: bool, stores: TileStores) -> Option<BlockTranspose> {
        let t = BlockTranspose::new(elem_size, across, stores);
        let fast = match stores {
            TileStores::Cached => elem_size <= 2 || Encoding::has_wide_tiles(),
            TileStores::Streamed | TileStores::Ahead => Encoding::has_wide_tiles(),
        };
        (BlockTranspose::ALL.contains(&t) && fast).then_some(t)
    }

    /// Where the routine comes in [`BlockTranspose::ALL`].
    fn position(self) -> usize {
        let size = self.elem_size.trailing_zeros() as usize;
        let across = usize::from(self.across);
        match self.stores {
            TileStores::Cached => size * 2 + across,
            TileStores::Streamed => 8 + (size - 2) * 2 + across,
            TileStores::Ahead => 12 + (size - 2) * 2 + across,
        }
    }

    /// The symbol under which the JIT module resolves the routine.
    pub(crate) fn symbol(self) -> &'static str {
        const SYMBOLS: [&str; 16] = [
            "relayout_transpose_block_1_along",
            "relayout_transpose_block_1_across",
            "relayout_transpose_block_2_along",
            "relayout_transpose_block_2_across",
            "relayout_transpose_block_4_along",
            "relayout_transpose_block_4_across",
            "relayout_transpose_block_8_along",
            "relayout_transpose_block_8_across",
            "relayout_transpose_block_4_along_streamed",
            "relayout_transpose_block_4_across_streamed",
            "relayout_transpose_block_8_along_streamed",
            "relayout_transpose_block_8_across_streamed",
            "relayout_transpose_block_4_along_ahead",
            "relayout_transpose_block_4_across_ahead",
            "relayout_transpose_block_8_along_ahead",
            "relayout_transpose_block_8_across_ahead",
        ];
        SYMBOLS[self.position()]
    }

    /// The routine's address: in the first of [`Encoding::PREFERRED`] the CPU runs (a routine
    /// with streamed stores on a CPU without AVX stores its tiles as the cached one does).
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
            Encoding::Evex if Encoding::has_evex() && self.stores == TileStores::Streamed => {
                Some(instance!(transpose_block_evex, self, [Lines<4>, Lines<8>], false))
            }
            #[cfg(target_arch = "x86_64")]
            Encoding::Evex => None,
            #[cfg(target_arch = "x86_64")]
            Encoding::Avx2
                if Encoding::has_stacked_tiles()
                    && self.stores == TileStores::Cached
                    && self.elem_size <= 2 =>
            {
                type One = Narrow<1, 16, false>;
                type Two = Narrow<2, 8, false>;
                Some(match (self.elem_size, self.across) {
                    (1, false) => transpose_block_avx2::<1, Stacked<1, 16>, One, false> as Routine,
                    (1, true) => transpose_block_avx2::<1, Stacked<1, 16>, One, true>,
                    (2, false) => transpose_block_avx2::<2, Stacked<2, 8>, Two, false>,
                    _ => transpose_block_avx2::<2, Stacked<2, 8>, Two, true>,
                })
            }
            #[cfg(target_arch = "x86_64")]
            Encoding::Avx2 => None,
            #[cfg(target_arch = "x86_64")]
            Encoding::Vex if Encoding::has_wide_tiles() => Some(match self.stores {
                TileStores::Cached => {
                    instance!(transpose_block_vex, self, [Wide<4, false>, Wide<8, false>], false)
                }
                TileStores::Streamed => {
                    instance!(transpose_block_vex, self, [Lines<4>, Lines<8>], false)
                }
                TileStores::Ahead => {
                    instance!(transpose_block_vex, self, [Wide<4, true>, Wide<8, true>], true)
                }
            }),
            #[cfg(target_arch = "x86_64")]
            Encoding::Vex => None,
        }
    }

    /// The routine in the architecture's baseline encoding.
    fn baseline(self) -> Routine {
        match self.stores {
            TileStores::Ahead => {
                instance!(transpose_block, self, [Narrow<4, 4, true>, Narrow<8, 2, true>], true)
            }
            TileStores::Cached | TileStores::Streamed => {
                instance!(transpose_block, self, [Narrow<4, 4, false>, Narrow<8, 2, false>], false)
            }
        }
    }
}

/// The instruction encodings the routines are compiled in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Encoding {
    /// AVX-512's encoding (EVEX) of [`Encoding::Vex`]'s instructions, for its 32 vector
    /// registers: the line tiles' routines alone ([`transpose_block_evex`]).
    #[cfg(target_arch = "x86_64")]
    Evex,
    /// AVX2's 32-byte integer shuffles: the stacked tiles of 1- and 2-byte elements with cached
    /// stores ([`transpose_block_avx2`]).
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// AVX's three-operand (VEX) encoding of the SSE2 shuffles, and AVX's 32-byte tiles of 4-
    /// and 8-byte elements ([`transpose_block_vex`]).
    #[cfg(target_arch = "x86_64")]
    Vex,
    /// What every CPU of the architecture runs.
    Baseline,
}

impl Encoding {
    /// Whether the CPU runs [`Encoding::Vex`], whose tiles of 4- and 8-byte elements are
    /// [`Wide`].
    fn has_wide_tiles() -> bool {
        #[cfg(target_arch = "x86_64")]
        return std::is_x86_feature_detected!("avx");
        #[cfg(not(target_arch = "x86_64"))]
        return false;
    }

    /// Whether the CPU runs [`Encoding::Avx2`], whose tiles of 1- and 2-byte elements are
    /// [`Stacked`].
    #[cfg(target_arch = "x86_64")]
    fn has_stacked_tiles() -> bool {
        std::is_x86_feature_detected!("avx") && std::is_x86_feature_detected!("avx2")
    }

    /// Whether the CPU runs [`Encoding::Evex`].
    #[cfg(target_arch = "x86_64")]
    fn has_evex() -> bool {
        std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512vl")
    }

    /// Every encoding, the fastest first.
    const PREFERRED: [Encoding; if cfg!(target_arch = "x86_64") { 4 } else { 1 }] = [
        #[cfg(target_arch = "x86_64")]
        Encoding::Evex,
        #[cfg(target_arch = "x86_64")]
        Encoding::Avx2,
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
/// tiles (the largest, and the ones that finish the block's edges) and the tiles' order, with
/// the attributes given (its docs, its target features).
macro_rules! block_transpose_routine {
    ($(#[$attr:meta])* $name:ident) => {
        $(#[$attr])*
        unsafe extern "C" fn $name<
            const SIZE: usize,
            Large: Tile,
            Small: Tile,
            const ACROSS: bool,
        >(
            src: *const u8,
            stage: *mut u8,
            a: i64,
            b: i64,
            src_stride: i64,
            stage_stride: i64,
        ) {
            let shape = [a, b, src_stride, stage_stride];
            let block = Block::<SIZE, ACROSS>::new(src, stage, shape);
            // SAFETY: forwarded from the caller (who calls a routine with target features only
            // where the CPU has them).
            unsafe { block.transpose::<Large, Small>() }
        }
    };
}

block_transpose_routine!(
    /// Transposes the block `a × b` of `SIZE`-byte elements at `src` into `stage` (see
    /// [`BlockTranspose`]): whole `Large` tiles, across or along the source rows as `ACROSS`
    /// says, then whole `Small` tiles along the edges they leave, then the elements past those
    /// one by one.
    ///
    /// # Safety
    /// `src` must be valid for reads of every element of the block and `stage` for writes of
    /// every element it receives; the two must not overlap. Negative extents count as zero.
    transpose_block
);

#[cfg(target_arch = "x86_64")]
block_transpose_routine!(
    /// [`transpose_block`] in AVX's three-operand (VEX) encoding of the same SSE2 shuffles, and
    /// with AVX's 32-byte tiles for 4- and 8-byte elements ([`Wide`]).
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

#[cfg(target_arch = "x86_64")]
block_transpose_routine!(
    /// [`transpose_block`] with AVX2's tiles of two 16-byte tiles stacked ([`Stacked`]), for
    /// 1- and 2-byte elements with cached stores.
    ///
    /// # Safety
    /// As [`transpose_block`]; the CPU must have AVX and AVX2.
    #[target_feature(enable = "avx,avx2")]
    transpose_block_avx2
);

#[cfg(target_arch = "x86_64")]
block_transpose_routine!(
    /// [`transpose_block_vex`] in AVX-512's encoding (EVEX), for the line tiles
    /// ([`TileStores::Streamed`]) alone. It came in for its 32 vector registers: the line tiles
    /// first made their rows from two 8 × 8 tiles, and AVX's 16 registers spilled the source
    /// rows to the stack, where they waited for their loads, and (as far as the runs tell)
    /// later loads whose addresses matched a waiting spill's in their low 12 bits waited too: on
    /// a 2-core AMD EPYC (Zen 4) VM, NCHW → NCHW16c of 24.5 MiB f32 took 6.3–6.7 ms a run in
    /// AVX's encoding with the stack at some offsets in its page and 1.0–1.7 ms at the others (a
    /// probe running the kernel at 90 stack depths), so that one process in four to eight ran
    /// it at a fifth of its speed; in this encoding, 1.0–1.9 ms at every offset. The tiles now
    /// make half their rows at a time ([`TileAt::line_halves_f32`]), which spills no rows in
    /// either encoding, and this one runs faster: in eight alternating `relayout bench
    /// nchw_to_nchw16c --no-tune` runs, 1.37–1.69 of memcpy against 1.24–1.45 (the AVX build
    /// keeps fewer of its 16 rows' addresses in general registers and reloads the rest from the
    /// stack each tile; why the two differ is not known). The other routines keep AVX's
    /// encoding: in this one the staged transposes of 4- and 8-byte elements ran ten times
    /// slower (8000² f32 at 0.07 of memcpy against 0.76–0.89, `relayout bench`), for a reason
    /// not looked into.
    ///
    /// # Safety
    /// As [`transpose_block`]; the CPU must have AVX-512F and AVX-512VL.
    #[target_feature(enable = "avx,avx2,avx512f,avx512vl")]
    transpose_block_evex
);

/// One call's block.
#[derive(Clone, Copy)]
struct Block<const SIZE: usize, const ACROSS: bool> {
    src: *const u8,
    stage: *mut u8,
    a: usize,
    b: usize,
    src_stride: isize,
    stage_stride: isize,
}

impl<const SIZE: usize, const ACROSS: bool> Block<SIZE, ACROSS> {
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

    /// The tile that starts at element `(i, j)`, storing its rows from `first_row` on.
    fn tile_at(&self, i: usize, j: usize, first_row: usize) -> TileAt {
        TileAt {
            src: self.from(i, j),
            src_stride: self.src_stride,
            dst: self.to(i, j),
            dst_stride: self.stage_stride,
            first_row,
        }
    }

    /// The whole `Large` tiles, then whole `Small` tiles along the edges they leave, then the
    /// edges past those ([`Block::edges`]); `Small` tiles alone where `Large` ones do not suit
    /// the source rows ([`Tile::suits`]). `Large` tiles are a whole number of `Small` ones on
    /// each side.
    ///
    /// # Safety
    /// As [`transpose_block`]; the CPU must have the tiles' features.
    #[inline(always)]
    unsafe fn transpose<Large: Tile, Small: Tile>(self) {
        if !Large::suits(self.src_stride) {
            // SAFETY: the caller's promise.
            return unsafe { self.transpose::<Small, Small>() };
        }
        let whole = |n: usize, lanes: usize| n / lanes * lanes;
        let (large_a, large_b) = (whole(self.a, Large::A), whole(self.b, Large::B));
        let (small_a, small_b) = (whole(self.a, Small::A), whole(self.b, Small::B));
        // SAFETY: every tile lies in the block, which the caller promises.
        unsafe {
            self.tiles::<Large>(0..large_a, 0..large_b);
            self.tiles::<Small>(large_a..small_a, 0..small_b);
            self.tiles::<Small>(0..large_a, large_b..small_b);
            self.edges::<Small>(small_a, small_b);
        }
    }

    /// The elements past the first `small_a` along the source rows and `small_b` across them
    /// (whole `T` tiles): by tiles that end at the block's edge where the block is a tile wide
    /// on that side, else one by one. Such a tile overlaps the whole tiles before it. Along the
    /// source rows it reads some of their elements again and stores only its rows past
    /// `small_a`; across them it rewrites some of their elements with the same values (the
    /// tiles store whole rows). On a 2-core Intel Xeon VM (family 6, model 167), in two
    /// alternating `relayout bench` runs of each build, NHWC → NCHW of 32 images of 224² f32
    /// went from 7.0–7.3 GB/s to 7.8–8.2 with 6 channels (a third of whose elements had moved
    /// one by one), from 7.4–8.6 to 9.8–10.5 with 5 and from 5.4–5.6 to 5.9–6.2 with 7. (Those
    /// channel counts now unzip in that direction; the other direction keeps these tiles.)
    ///
    /// # Safety
    /// As [`transpose_block`]; the CPU must have `T`'s features.
    #[inline(always)]
    unsafe fn edges<T: Tile>(&self, small_a: usize, small_b: usize) {
        let lanes = T::A;
        debug_assert_eq!(T::A, T::B, "edge tiles are square");
        let (a, b) = (self.a, self.b);
        // The tile that ends at the last row of the stage, and the first of its rows to store.
        let last_rows = (a > small_a && a >= lanes).then(|| (a - lanes, small_a + lanes - a));
        let last_columns = (b > small_b && b >= lanes).then(|| b - lanes);
        let tile = |i: usize, j: usize, first_row: usize| {
            // SAFETY: the tile lies in the block, which the caller promises.
            unsafe { T::transpose(self.tile_at(i, j, first_row)) }
        };
        let elements = |is: Range<usize>, js: Range<usize>| {
            for j in js {
                for i in is.clone() {
                    // SAFETY: element `(i, j)` is in the block, which the caller promises.
                    unsafe { std::ptr::copy_nonoverlapping(self.from(i, j), self.to(i, j), SIZE) }
                }
            }
        };
        match last_rows {
            Some((i, first)) => (0..small_b).step_by(lanes).for_each(|j| tile(i, j, first)),
            None => elements(small_a..a, 0..small_b),
        }
        match (last_columns, last_rows) {
            (Some(j), last_rows) => {
                (0..small_a).step_by(lanes).for_each(|i| tile(i, j, 0));
                match last_rows {
                    Some((i, first)) => tile(i, j, first),
                    None => elements(small_a..a, small_b..b),
                }
            }
            (None, _) => elements(0..a, small_b..b),
        }
    }

    /// The `T` tiles that start at `i` in `is` along the source rows and `j` in `js` across
    /// them (both ranges whole tiles), across or along the source rows as `ACROSS` says.
    ///
    /// # Safety
    /// Every tile must lie in the block; the CPU must have `T`'s features.
    #[inline(always)]
    unsafe fn tiles<T: Tile>(&self, is: Range<usize>, js: Range<usize>) {
        if js.len() == T::B {
            // One tile across: a band of tiles along the source rows, in either order.
            let first = self.tile_at(is.start, js.start, 0);
            // SAFETY: the caller's promise.
            return unsafe { T::transpose_band(first, is.len() / T::A, (T::A * SIZE) as isize) };
        }
        let tile = |i: usize, j: usize| {
            // SAFETY: the caller's promise.
            unsafe { T::transpose(self.tile_at(i, j, 0)) }
        };
        if ACROSS {
            for i in is.step_by(T::A) {
                js.clone().step_by(T::B).for_each(|j| tile(i, j));
            }
        } else {
            for j in js.step_by(T::B) {
                is.clone().step_by(T::A).for_each(|i| tile(i, j));
            }
        }
    }
}

/// A register tile of elements: `B` rows of `A` elements, `src_stride` bytes apart at the
/// source, become its columns, `A` rows of `B` elements `dst_stride` bytes apart at the
/// destination.
trait Tile {
    /// Elements along the source rows (`a`): the destination rows the tile stores.
    const A: usize;
    /// Elements across them (`b`): the source rows the tile reads.
    const B: usize;

    /// Transposes the tile `at` says.
    ///
    /// # Safety
    /// Each of the rows must be valid for the tile's width at both sides, and the sides must
    /// not overlap; the CPU must have the tile's features.
    unsafe fn transpose(at: TileAt);

    /// Whether the tile suits source rows `src_stride` bytes apart; a block whose large tiles
    /// do not takes its small ones alone ([`Block::transpose`]).
    #[inline(always)]
    fn suits(src_stride: isize) -> bool {
        let _ = src_stride;
        true
    }

    /// Transposes a band of `tiles` tiles along the source rows, the first at `first`, each
    /// the next `src_step` bytes along the source rows and `A` rows further at the
    /// destination: one tile after another.
    ///
    /// # Safety
    /// As [`Tile::transpose`], for every tile of the band.
    #[inline(always)]
    unsafe fn transpose_band(first: TileAt, tiles: usize, src_step: isize) {
        // SAFETY: the caller's promise.
        unsafe { tile_by_tile::<Self>(first, tiles, src_step) }
    }
}

/// [`Tile::transpose_band`] one tile after another.
///
/// # Safety
/// As [`Tile::transpose_band`].
#[inline(always)]
unsafe fn tile_by_tile<T: Tile + ?Sized>(first: TileAt, tiles: usize, src_step: isize) {
    for k in 0..tiles {
        let at = first.advanced(k as isize * src_step, (k * T::A) as isize);
        // SAFETY: the caller's promise.
        unsafe { T::transpose(at) }
    }
}

/// Where a register tile's rows are read and its columns written, and which of those it
/// stores.
#[derive(Clone, Copy)]
struct TileAt {
    src: *const u8,
    /// Bytes from one source row to the next.
    src_stride: isize,
    dst: *mut u8,
    /// Bytes from one destination row to the next.
    dst_stride: isize,
    /// The first destination row stored (a tile at an edge stores only the rows past the whole
    /// tiles before it).
    first_row: usize,
}

impl TileAt {
    /// The tile `src_bytes` further along the source rows and `dst_rows` destination rows
    /// further.
    #[inline(always)]
    fn advanced(self, src_bytes: isize, dst_rows: isize) -> TileAt {
        TileAt {
            src: self.src.wrapping_offset(src_bytes),
            dst: self.dst.wrapping_offset(dst_rows * self.dst_stride),
            ..self
        }
    }
}

/// A tile of 16-byte rows: `LANES` (`16 / SIZE`) elements of `SIZE` bytes on a side, shuffled
/// in the architecture's baseline vectors ([`transpose_tile`]); with `ASK_AHEAD`, each row
/// stored asks for the line [`AHEAD_BYTES`] further along its destination row
/// ([`TileStores::Ahead`]).
struct Narrow<const SIZE: usize, const LANES: usize, const ASK_AHEAD: bool>;

impl<const SIZE: usize, const LANES: usize, const ASK_AHEAD: bool> Tile
    for Narrow<SIZE, LANES, ASK_AHEAD>
{
    const A: usize = LANES;
    const B: usize = LANES;

    #[inline(always)]
    unsafe fn transpose(at: TileAt) {
        // SAFETY: the caller's promise.
        unsafe { transpose_tile::<Vector, SIZE, LANES, ASK_AHEAD>(at) }
    }
}

/// Two 16-byte tiles of 1- or 2-byte elements, one above the other, shuffled together in AVX2
/// vectors ([`StackedRows`]): `2 × LANES` source rows of `LANES` elements become `LANES`
/// destination rows of 32 bytes. Its shuffles and stores are half those of two [`Narrow`]
/// tiles (8 × 8 u16: 24 shuffles, 8 loads into high halves and 8 stores for 16 rows, where two
/// 16-byte tiles take 48 and 16). The shuffles are what holds 1- and 2-byte transposes back
/// once their blocks read whole lines: on a 2-core AMD EPYC (Zen 4) VM, `relayout bench
/// --no-tune` moved 256² u16 in the L2 at 31.6 GB/s with 16-byte tiles and 37.4 this way (u8
/// 25.6 and 29.9). Beyond the cache, in the blocking fitted before (512-byte runs across in 8
/// KiB blocks), 8000² u16 ran at 0.48–0.72 of memcpy against 0.44–0.51 (pinned blockings
/// timed back to back after memcpy, separate processes); with the 2-byte blocking that came
/// with these tiles ([`Blocking::streamed`](crate::plan::Blocking::streamed)), one process
/// timing both builds' kernels in alternating order after memcpy (medians of 11 rounds) ran it
/// 1.45–1.56 times as fast as before, NCHW → NHWC of 32 images of 56² with 64 u16 channels
/// 1.13–1.23 times; with 64 u8 channels (224²) 1.04–1.08 times, 8000² u8 0.98–1.04.
#[cfg(target_arch = "x86_64")]
struct Stacked<const SIZE: usize, const LANES: usize>;

#[cfg(target_arch = "x86_64")]
impl<const SIZE: usize, const LANES: usize> Tile for Stacked<SIZE, LANES> {
    const A: usize = LANES;
    const B: usize = 2 * LANES;

    #[inline(always)]
    unsafe fn transpose(at: TileAt) {
        // SAFETY: the caller's promise.
        unsafe { transpose_tile::<StackedRows, SIZE, LANES, false>(at) }
    }

    /// Not for source rows a multiple of [`L1_WAY_BYTES`] apart: the lines of all `2 × LANES`
    /// rows then fall into one set of the L1, which holds 8 of them on AMD's Zen CPUs (12 on
    /// recent Intel ones), and the tile's reads evict one another. On the Zen 4 VM, 8192² u16
    /// ran at 0.59–0.63 of memcpy in these tiles and at 0.67–0.74 in 16-byte ones (three
    /// alternating `relayout bench --no-tune` runs).
    #[inline(always)]
    fn suits(src_stride: isize) -> bool {
        !src_stride.unsigned_abs().is_multiple_of(L1_WAY_BYTES)
    }
}

/// Bytes of one way of the L1 data cache (its sets × a line) on the x86-64 CPUs the tiles were
/// measured on: rows this far apart start in the same set.
#[cfg(target_arch = "x86_64")]
const L1_WAY_BYTES: usize = 4096;

/// A tile of 32-byte rows in AVX vectors: 8 × 8 elements of 4 bytes or 4 × 4 of 8. Unpacks
/// interleave rows within each 16-byte half of a vector (4-byte units, then 8-byte ones for
/// 4-byte elements), and a last step swaps halves between rows four apart (two for 8-byte
/// elements): 24 shuffles for 64 f32, where the 16-byte tiles take 32 and twice the loads
/// and stores. With `ASK_AHEAD`, each row stored asks for the line
/// [`AHEAD_BYTES`](super::hints::AHEAD_BYTES) further along its destination row
/// ([`TileStores::Ahead`]).
#[cfg(target_arch = "x86_64")]
struct Wide<const SIZE: usize, const ASK_AHEAD: bool>;

#[cfg(target_arch = "x86_64")]
impl<const SIZE: usize, const ASK_AHEAD: bool> Tile for Wide<SIZE, ASK_AHEAD> {
    const A: usize = 32 / SIZE;
    const B: usize = 32 / SIZE;

    #[inline(always)]
    unsafe fn transpose(at: TileAt) {
        // SAFETY: the caller's promise.
        unsafe {
            match SIZE {
                4 => at.store_rows::<8, ASK_AHEAD>(at.columns_8x8_f32()),
                _ => at.store_rows::<4, ASK_AHEAD>(at.columns_4x4_f64()),
            }
        }
    }
}

/// A tile of 64-byte destination rows, whole cache lines, streamed straight from registers: 8
/// destination rows of 16 elements of 4 bytes, or 4 of 8 elements of 8 bytes, each row the columns
/// of the top and bottom halves of the tile's source rows side by side, made half the rows at a
/// time ([`TileAt::line_halves_f32`]), so that each line is written whole by two consecutive
/// streaming stores. A tile that stores only half a line (a [`Wide`] one) leaves the
/// write-combining buffer to wait for the other half: on a 2-core Intel Xeon VM (family 6, model
/// 167), a 2048 × 4096 f64 transpose stored in place that way moved 8.7 GB/s at best, whole lines
/// 10.5, and staged blocks streamed out 8.3 (`relayout bench` with a tuning file per blocking, runs
/// of 128 to 512 bytes in blocks of 4 to 16 KiB). Square tiles of whole lines (16 × 16 f32, 8 × 8
/// f64, two such bands) ran f64 as fast and f32 no faster (4096 × 11008 f32: 1.08–1.12 of memcpy
/// against 1.12–1.24).
#[cfg(target_arch = "x86_64")]
struct Lines<const SIZE: usize>;

#[cfg(target_arch = "x86_64")]
impl<const SIZE: usize> Tile for Lines<SIZE> {
    const A: usize = LINE / 2 / SIZE;
    const B: usize = LINE / SIZE;

    #[inline(always)]
    unsafe fn transpose(at: TileAt) {
        // SAFETY: the caller's promise; `half` is 0 or 1, and the rows stored, `first` on,
        // are the tile's.
        unsafe {
            for half in 0..2 {
                match SIZE {
                    4 => at.store_lines(half * 4, at.line_halves_f32(half)),
                    _ => at.store_lines(half * 2, at.line_halves_f64(half)),
                }
            }
        }
    }

    /// A band of tiles whose destination rows follow one another (64 bytes apart) from the
    /// start of a line or 16, 32 or 48 bytes into one goes out as whole lines ([`BandLines`]).
    /// Other bands go tile by tile, storing every row that does not start a line ordinarily.
    #[inline(always)]
    unsafe fn transpose_band(first: TileAt, tiles: usize, src_step: isize) {
        let rows_follow = first.dst_stride == LINE as isize && first.first_row == 0;
        // SAFETY: the caller's promise.
        unsafe {
            match (rows_follow, first.dst as usize % LINE) {
                (true, 0) => Self::band_of_lines::<0>(first, tiles, src_step),
                (true, 16) => Self::band_of_lines::<1>(first, tiles, src_step),
                (true, 32) => Self::band_of_lines::<2>(first, tiles, src_step),
                (true, 48) => Self::band_of_lines::<3>(first, tiles, src_step),
                _ => tile_by_tile::<Self>(first, tiles, src_step),
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
impl<const SIZE: usize> Lines<SIZE> {
    /// [`Tile::transpose_band`] for destination rows that follow one another from `QUARTERS`
    /// × 16 bytes into a line, through [`BandLines`].
    ///
    /// # Safety
    /// As [`Tile::transpose_band`]; `first.dst` must lie `QUARTERS` × 16 bytes into a cache
    /// line and the destination rows [`LINE`] bytes apart.
    #[inline(always)]
    unsafe fn band_of_lines<const QUARTERS: usize>(first: TileAt, tiles: usize, src_step: isize) {
        let mut lines = BandLines::<QUARTERS>::new(first.dst);
        for k in 0..tiles {
            let at = first.advanced(k as isize * src_step, (k * Self::A) as isize);
            // SAFETY: the caller's promise; `half` is 0 or 1, and each tile lies in the band.
            unsafe {
                for half in 0..2 {
                    match SIZE {
                        4 => lines.push_all(at.line_halves_f32(half)),
                        _ => lines.push_all(at.line_halves_f64(half)),
                    }
                }
            }
        }
        // SAFETY: as above.
        unsafe { lines.finish() }
    }
}

/// The destination rows of a band of [`Lines`] tiles, 64 bytes each, one after another from
/// `QUARTERS` × 16 bytes into a line: at a line, or in a buffer 16, 32 or 48 bytes past one
/// (large allocations of glibc's `malloc` start 16 bytes past a page). Each whole line the
/// rows cover (the last `QUARTERS` quarters of one row and the first of the next, put together
/// in registers) is streamed; the band's first line, and its last where the rows end inside
/// one, are stored ordinarily (what else lies in those lines, the rows before and after the
/// band or past the buffer, is left alone).
///
/// Rows that do not start a line otherwise store ordinarily, each line read before it is
/// written: on a 2-core AMD EPYC (Zen 4) VM, NCHW → NCHW16c of 24.5 MiB f32, 16 bytes past a
/// line, ran at 0.75–0.97 of memcpy that way and at 1.60–1.69 this way (`relayout bench
/// --page-offset 16`, two alternating runs of each build). At a line, storing the band's first
/// line ordinarily rather than streaming it took the same relayout from 1.12–1.37 to
/// 1.33–1.66 (six alternating `relayout bench --no-tune` runs; each band is a page of its
/// destination there). Why is not known: asking for the line before streaming it did about as
/// well (1.56–1.63 against 1.64–1.73), asking for each run's first line in the streaming of
/// staged blocks lost (the 8000² f32 transpose 0.47 against 0.65–0.71).
#[cfg(target_arch = "x86_64")]
struct BandLines<const QUARTERS: usize> {
    /// Where the next row starts.
    row: *mut u8,
    /// The left and right halves of the row before it, once a row is in.
    last: Option<(std::arch::x86_64::__m256, std::arch::x86_64::__m256)>,
}

#[cfg(target_arch = "x86_64")]
impl<const QUARTERS: usize> BandLines<QUARTERS> {
    /// Bytes from the start of a row back to the start of its line.
    const SHIFT: usize = QUARTERS * 16;

    fn new(row: *mut u8) -> Self {
        BandLines { row, last: None }
    }

    /// Stores the rows `left[k]` then `right[k]`, one after another.
    ///
    /// # Safety
    /// The first row pushed must start where `self` was made, `QUARTERS` × 16 bytes into a
    /// cache line (so that the lines streamed start lines), and every row's 64 bytes, each
    /// row right after the one before, must be valid for writes; the CPU must have AVX.
    #[inline(always)]
    unsafe fn push_all<const N: usize>(
        &mut self,
        (left, right): (
            [std::arch::x86_64::__m256; N],
            [std::arch::x86_64::__m256; N],
        ),
    ) {
        for (left, right) in left.into_iter().zip(right) {
            // SAFETY: the caller's promise.
            unsafe { self.push(left, right) }
        }
    }

    /// Stores the row `left` then `right`: the first row's bytes in the band's first line,
    /// stored; for every later row, the line that ends with its first `4 - QUARTERS` quarters,
    /// streamed.
    ///
    /// # Safety
    /// As [`BandLines::push_all`].
    #[inline(always)]
    unsafe fn push(&mut self, left: std::arch::x86_64::__m256, right: std::arch::x86_64::__m256) {
        use std::arch::x86_64::*;
        // SAFETY: the caller's promise; `line` starts a line (the caller's promise on where the
        // rows start), so both halves are 32-byte aligned, and lies in this row and the one
        // before; the first row's stores accept any alignment and stay in its row.
        unsafe {
            match self.last {
                Some((last_left, last_right)) => {
                    let (low, high) = match QUARTERS {
                        0 => (left, right),
                        1 => (
                            _mm256_permute2f128_ps::<0x21>(last_right, left),
                            _mm256_permute2f128_ps::<0x21>(left, right),
                        ),
                        2 => (last_right, left),
                        _ => (
                            _mm256_permute2f128_ps::<0x21>(last_left, last_right),
                            _mm256_permute2f128_ps::<0x21>(last_right, left),
                        ),
                    };
                    let line = self.row.wrapping_sub(Self::SHIFT).cast::<f32>();
                    _mm256_stream_ps(line, low);
                    _mm256_stream_ps(line.wrapping_add(8), high);
                }
                None => {
                    let head = self.row.cast::<f32>();
                    match QUARTERS {
                        0 => {
                            _mm256_storeu_ps(head, left);
                            _mm256_storeu_ps(head.wrapping_add(8), right);
                        }
                        1 => {
                            _mm256_storeu_ps(head, left);
                            _mm_storeu_ps(head.wrapping_add(8), _mm256_castps256_ps128(right));
                        }
                        2 => _mm256_storeu_ps(head, left),
                        _ => _mm_storeu_ps(head, _mm256_castps256_ps128(left)),
                    }
                }
            }
        }
        self.last = Some((left, right));
        self.row = self.row.wrapping_add(LINE);
    }

    /// Stores the last row's bytes in the line after the last one streamed: its last
    /// `QUARTERS` quarters.
    ///
    /// # Safety
    /// As [`BandLines::push_all`].
    #[inline(always)]
    unsafe fn finish(self) {
        use std::arch::x86_64::*;
        let Some((left, right)) = self.last else {
            return;
        };
        let tail = self.row.wrapping_sub(Self::SHIFT).cast::<f32>();
        // SAFETY: the caller's promise; the stores accept any alignment.
        unsafe {
            match QUARTERS {
                0 => {}
                1 => _mm_storeu_ps(tail, _mm256_extractf128_ps::<1>(right)),
                2 => _mm256_storeu_ps(tail, right),
                _ => {
                    _mm_storeu_ps(tail, _mm256_extractf128_ps::<1>(left));
                    _mm256_storeu_ps(tail.wrapping_add(4), right);
                }
            }
        }
    }
}

/// Bytes of a [`Lines`] tile's destination rows: a cache line.
#[cfg(target_arch = "x86_64")]
const LINE: usize = 64;

/// The rows of [`Wide`] and [`Lines`] tiles.
#[cfg(target_arch = "x86_64")]
impl TileAt {
    /// Source row `k`.
    ///
    /// # Safety
    /// As [`Tile::transpose`].
    #[inline(always)]
    unsafe fn load(self, k: isize) -> std::arch::x86_64::__m256 {
        let p = self.src.wrapping_offset(k * self.src_stride);
        // SAFETY: the caller's promise; the load accepts any alignment.
        unsafe { std::arch::x86_64::_mm256_loadu_ps(p.cast()) }
    }

    /// Stores `v` as destination row `k`, if that is one of the rows stored; with
    /// `ASK_AHEAD`, asking for the line [`AHEAD_BYTES`] further along the row first.
    ///
    /// # Safety
    /// As [`Tile::transpose`].
    #[inline(always)]
    unsafe fn store<const ASK_AHEAD: bool>(self, k: isize, v: std::arch::x86_64::__m256) {
        if (k as usize) < self.first_row {
            return;
        }
        let p = self.dst.wrapping_offset(k * self.dst_stride);
        if ASK_AHEAD {
            ask(Ask::Write, p.wrapping_add(AHEAD_BYTES));
        }
        // SAFETY: the caller's promise; the store accepts any alignment.
        unsafe { std::arch::x86_64::_mm256_storeu_ps(p.cast(), v) }
    }

    /// The tile that starts `rows` source rows further on: the bottom half of a [`Lines`] tile.
    #[inline(always)]
    fn below(self, rows: usize) -> TileAt {
        TileAt {
            src: self.src.wrapping_offset(rows as isize * self.src_stride),
            ..self
        }
    }

    /// Stores destination row `first + k` (if it is one of the rows stored) as `left[k]` then
    /// `right[k]`: 64 bytes, streamed where the row starts a cache line, else stored ordinarily.
    ///
    /// # Safety
    /// As [`Tile::transpose`], for 64-byte destination rows; `first + N` must not exceed the
    /// tile's destination rows.
    #[inline(always)]
    unsafe fn store_lines<const N: usize>(
        self,
        first: usize,
        (left, right): (
            [std::arch::x86_64::__m256; N],
            [std::arch::x86_64::__m256; N],
        ),
    ) {
        use std::arch::x86_64::*;
        for (row, (left, right)) in (first..).zip(left.into_iter().zip(right)) {
            if row < self.first_row {
                continue;
            }
            let p = self.dst.wrapping_offset(row as isize * self.dst_stride);
            let (p, q) = (p.cast::<f32>(), p.wrapping_add(LINE / 2).cast::<f32>());
            // SAFETY: the caller's promise; the streaming stores only where the row starts a
            // line (so both are 32-byte aligned), the others accept any alignment.
            unsafe {
                if (p as usize).is_multiple_of(LINE) {
                    _mm256_stream_ps(p, left);
                    _mm256_stream_ps(q, right);
                } else {
                    _mm256_storeu_ps(p, left);
                    _mm256_storeu_ps(q, right);
                }
            }
        }
    }

    /// Stores `rows` as destination rows 0, 1, … (those of them stored), asking ahead as
    /// [`TileAt::store`] does.
    ///
    /// # Safety
    /// As [`Tile::transpose`].
    #[inline(always)]
    unsafe fn store_rows<const N: usize, const ASK_AHEAD: bool>(
        self,
        rows: [std::arch::x86_64::__m256; N],
    ) {
        for (k, row) in rows.into_iter().enumerate() {
            // SAFETY: the caller's promise.
            unsafe { self.store::<ASK_AHEAD>(k as isize, row) };
        }
    }

    /// Destination rows `4 * half` to `4 * half + 3` of a [`Lines`] tile of 4-byte elements:
    /// each row's left half (source rows 0–7) and right half (rows 8–15).
    ///
    /// # Safety
    /// As [`Tile::transpose`], for the 16 source rows of 8 elements; `half` must be 0 or 1.
    #[inline(always)]
    unsafe fn line_halves_f32(
        self,
        half: usize,
    ) -> (
        [std::arch::x86_64::__m256; 4],
        [std::arch::x86_64::__m256; 4],
    ) {
        // SAFETY: the caller's promise.
        unsafe {
            (
                self.columns_8x4_f32(half),
                self.below(8).columns_8x4_f32(half),
            )
        }
    }

    /// Destination rows `2 * half` and `2 * half + 1` of a [`Lines`] tile of 8-byte elements:
    /// each row's left half (source rows 0–3) and right half (rows 4–7).
    ///
    /// # Safety
    /// As [`Tile::transpose`], for the 8 source rows of 4 elements; `half` must be 0 or 1.
    #[inline(always)]
    unsafe fn line_halves_f64(
        self,
        half: usize,
    ) -> (
        [std::arch::x86_64::__m256; 2],
        [std::arch::x86_64::__m256; 2],
    ) {
        // SAFETY: the caller's promise.
        unsafe {
            (
                self.columns_4x2_f64(half),
                self.below(4).columns_4x2_f64(half),
            )
        }
    }

    /// The 16 bytes `half` × 16 bytes into source row `low` in the low half of a vector and the
    /// same bytes of row `high` in its high half.
    ///
    /// # Safety
    /// As [`Tile::transpose`], for the two rows, each 32 bytes long; `half` must be 0 or 1.
    #[inline(always)]
    unsafe fn load_pair(self, low: usize, high: usize, half: usize) -> std::arch::x86_64::__m256 {
        let at = |row: usize| self.below(row).src.wrapping_add(half * 16).cast::<f32>();
        // SAFETY: the caller's promise: each 16 bytes lie in their row; the loads accept any
        // alignment.
        unsafe { std::arch::x86_64::_mm256_loadu2_m128(at(high), at(low)) }
    }

    /// Columns `4 * half` to `4 * half + 3` of 8 source rows of 4-byte elements, each column
    /// one vector. Rows `k` and `k + 4` are loaded into the halves of one vector, so a 4 × 4
    /// transpose within the halves ([`columns_within_halves_f32`]) finishes each column: 16
    /// shuffles and 8 loads into high halves for the 8 columns, where
    /// [`TileAt::columns_8x8_f32`] takes 24 shuffles. Made four columns at a time, a [`Lines`]
    /// tile's 16 rows and the 8 destination rows they fill do not all wait in registers at
    /// once: in AVX's 16, the 8 × 8 tiles spilled source rows to the stack straight after
    /// loading them, and with the stack at some offsets in its page NCHW → NCHW16c ran at a
    /// fifth of its speed ([`transpose_block_evex`]'s docs); this way AVX's build took 1.1–2.1
    /// ms a run at every one of 90 stack depths on a 2-core AMD EPYC (Zen 4) VM.
    ///
    /// # Safety
    /// As [`Tile::transpose`], for the source rows; `half` must be 0 or 1.
    #[inline(always)]
    unsafe fn columns_8x4_f32(self, half: usize) -> [std::arch::x86_64::__m256; 4] {
        // SAFETY: the caller's promise (AVX included).
        unsafe {
            columns_within_halves_f32(std::array::from_fn(|k| self.load_pair(k, k + 4, half)))
        }
    }

    /// Columns `2 * half` and `2 * half + 1` of 4 source rows of 8-byte elements, each column
    /// one vector, as [`TileAt::columns_8x4_f32`] makes them (rows `k` and `k + 2` in one
    /// vector).
    ///
    /// # Safety
    /// As [`Tile::transpose`], for the source rows; `half` must be 0 or 1.
    #[inline(always)]
    unsafe fn columns_4x2_f64(self, half: usize) -> [std::arch::x86_64::__m256; 2] {
        use std::arch::x86_64::*;
        // SAFETY: the caller's promise (AVX included).
        unsafe {
            let r = std::array::from_fn(|k| _mm256_castps_pd(self.load_pair(k, k + 2, half)));
            columns_within_halves_f64(r).map(|column| _mm256_castpd_ps(column))
        }
    }

    /// The destination rows (source columns) of an 8 × 8 tile of 4-byte elements.
    ///
    /// # Safety
    /// As [`Tile::transpose`], for the source rows.
    #[inline(always)]
    unsafe fn columns_8x8_f32(self) -> [std::arch::x86_64::__m256; 8] {
        use std::arch::x86_64::*;
        // SAFETY: the caller's promise (AVX included).
        unsafe {
            let r: [__m256; 8] = std::array::from_fn(|k| self.load(k as isize));
            // Within each half, column `c` of rows 0–3, then of rows 4–7.
            let top = columns_within_halves_f32([r[0], r[1], r[2], r[3]]);
            let bottom = columns_within_halves_f32([r[4], r[5], r[6], r[7]]);
            // Column `c` (and `c + 4` in the high halves) of the top and bottom four rows.
            std::array::from_fn(|k| match k {
                0..4 => _mm256_permute2f128_ps::<0x20>(top[k], bottom[k]),
                _ => _mm256_permute2f128_ps::<0x31>(top[k - 4], bottom[k - 4]),
            })
        }
    }

    /// The destination rows (source columns) of a 4 × 4 tile of 8-byte elements.
    ///
    /// # Safety
    /// As [`Tile::transpose`], for the source rows.
    #[inline(always)]
    unsafe fn columns_4x4_f64(self) -> [std::arch::x86_64::__m256; 4] {
        use std::arch::x86_64::*;
        // SAFETY: the caller's promise (AVX included).
        unsafe {
            let r: [__m256d; 4] = std::array::from_fn(|k| _mm256_castps_pd(self.load(k as isize)));
            // Within each half, column `c` of rows 0–1, then of rows 2–3.
            let top = columns_within_halves_f64([r[0], r[1]]);
            let bottom = columns_within_halves_f64([r[2], r[3]]);
            // Column `c` (and `c + 2` in the high halves) of the top and bottom two rows.
            std::array::from_fn(|k| {
                let column = match k {
                    0..2 => _mm256_permute2f128_pd::<0x20>(top[k], bottom[k]),
                    _ => _mm256_permute2f128_pd::<0x31>(top[k - 2], bottom[k - 2]),
                };
                _mm256_castpd_ps(column)
            })
        }
    }
}

/// Within each 16-byte half of the vectors: column `c` of the four rows `r` of 4-byte
/// elements as vector `c` (unpacks, then shuffles: 8 of them).
///
/// # Safety
/// The CPU must have AVX.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn columns_within_halves_f32(
    r: [std::arch::x86_64::__m256; 4],
) -> [std::arch::x86_64::__m256; 4] {
    use std::arch::x86_64::*;
    // SAFETY: the caller's promise.
    unsafe {
        // Pairs of rows interleaved by elements.
        let t = [
            _mm256_unpacklo_ps(r[0], r[1]),
            _mm256_unpackhi_ps(r[0], r[1]),
            _mm256_unpacklo_ps(r[2], r[3]),
            _mm256_unpackhi_ps(r[2], r[3]),
        ];
        // Pairs of those interleaved by two elements.
        [
            _mm256_shuffle_ps::<0x44>(t[0], t[2]),
            _mm256_shuffle_ps::<0xEE>(t[0], t[2]),
            _mm256_shuffle_ps::<0x44>(t[1], t[3]),
            _mm256_shuffle_ps::<0xEE>(t[1], t[3]),
        ]
    }
}

/// Within each 16-byte half of the vectors: column `c` of the two rows `r` of 8-byte elements
/// as vector `c` (two unpacks).
///
/// # Safety
/// The CPU must have AVX.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn columns_within_halves_f64(
    r: [std::arch::x86_64::__m256d; 2],
) -> [std::arch::x86_64::__m256d; 2] {
    use std::arch::x86_64::*;
    // SAFETY: the caller's promise.
    unsafe {
        [
            _mm256_unpacklo_pd(r[0], r[1]),
            _mm256_unpackhi_pd(r[0], r[1]),
        ]
    }
}

/// Vectors that hold a 16-byte row of a register tile (or two, one in each 16-byte half:
/// [`StackedRows`]), and the instructions a tile needs.
trait TileRows: Copy {
    /// The row at `p`, and where the vector holds two rows ([`StackedRows`]), the row
    /// `below` bytes further on in its high half.
    ///
    /// # Safety
    /// `p` (and `p + below`, for two rows) must be valid for reads of a row; the CPU must have
    /// the type's features.
    unsafe fn load(p: *const u8, below: isize) -> Self;

    /// `x` and `y` interleaved in units of `unit` bytes: their low halves, then their high
    /// halves (of each 16-byte row, for vectors of two).
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
    unsafe fn load(p: *const u8, _below: isize) -> Self {
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
    unsafe fn load(p: *const u8, _below: isize) -> Self {
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

/// Two 16-byte rows of a [`Stacked`] tile in one AVX2 vector, the second `LANES` source rows
/// below the first: AVX2's unpacks interleave within each 16-byte half, so each half makes the
/// columns of its own 16-byte tile, and each vector a whole 32-byte destination row.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct StackedRows(std::arch::x86_64::__m256i);

#[cfg(target_arch = "x86_64")]
impl TileRows for StackedRows {
    #[inline(always)]
    unsafe fn load(p: *const u8, below: isize) -> Self {
        use std::arch::x86_64::_mm256_loadu2_m128i;
        let high = p.wrapping_offset(below);
        // SAFETY: the caller's promise (AVX2 included); the loads accept any alignment.
        StackedRows(unsafe { _mm256_loadu2_m128i(high.cast(), p.cast()) })
    }

    #[inline(always)]
    unsafe fn unpack(unit: usize, x: Self, y: Self) -> (Self, Self) {
        use std::arch::x86_64::*;
        let (x, y) = (x.0, y.0);
        // SAFETY: the caller's promise (AVX2).
        let (lo, hi) = unsafe {
            match unit {
                1 => (_mm256_unpacklo_epi8(x, y), _mm256_unpackhi_epi8(x, y)),
                2 => (_mm256_unpacklo_epi16(x, y), _mm256_unpackhi_epi16(x, y)),
                4 => (_mm256_unpacklo_epi32(x, y), _mm256_unpackhi_epi32(x, y)),
                _ => (_mm256_unpacklo_epi64(x, y), _mm256_unpackhi_epi64(x, y)),
            }
        };
        (StackedRows(lo), StackedRows(hi))
    }

    #[inline(always)]
    unsafe fn store(self, dst: *mut u8) {
        // SAFETY: the caller's promise (AVX2 included); the store accepts any alignment.
        unsafe { std::arch::x86_64::_mm256_storeu_si256(dst.cast(), self.0) }
    }
}

/// One register tile: `LANES` (`16 / SIZE`) rows of 16 bytes at the source become the
/// columns of the rows at the destination, of which those from `at.first_row` on are stored.
/// Each stage interleaves pairs of rows in units of one, two, four… elements; after the last,
/// column `c` is in the row at the bit-reversed position of `c`. Every size and count is a
/// constant here, so the stages unroll into the shuffles alone. Vectors of two rows
/// ([`StackedRows`]) make two such tiles at once, the second `LANES` source rows below the
/// first, and store destination rows twice as long.
///
/// # Safety
/// Each of the rows (`2 × LANES` of them for vectors of two rows) must be valid for the
/// vector's rows at both sides, and the sides must not overlap; the CPU must have `V`'s
/// features.
#[inline(always)]
unsafe fn transpose_tile<
    V: TileRows,
    const SIZE: usize,
    const LANES: usize,
    const ASK_AHEAD: bool,
>(
    at: TileAt,
) {
    let TileAt {
        src,
        src_stride,
        dst,
        dst_stride,
        first_row,
    } = at;
    // Vectors of two rows hold rows `k` and `k + LANES` ([`Stacked`] tiles).
    let below = LANES as isize * src_stride;
    // The rows' addresses one stride after another (a pointer moved on, where multiples of
    // the stride kept for every row would not all fit in registers).
    // SAFETY: the caller's promise.
    let first = unsafe { V::load(src, below) };
    let mut rows = [first; LANES];
    let mut from = src;
    for row in rows.iter_mut().skip(1) {
        from = from.wrapping_offset(src_stride);
        // SAFETY: the caller's promise.
        *row = unsafe { V::load(from, below) };
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
    let mut to = dst.wrapping_offset(first_row as isize * dst_stride);
    for c in first_row..LANES {
        let row = rows[REVERSED[c * (TILE_BYTES / LANES)]];
        if ASK_AHEAD {
            ask(Ask::Write, to.wrapping_add(AHEAD_BYTES));
        }
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

    /// Each routine sits at its position in [`BlockTranspose::ALL`], under a symbol naming its
    /// element size, order and stores.
    #[test]
    fn block_transposes_are_listed_in_order_under_their_names() {
        for (i, t) in BlockTranspose::ALL.into_iter().enumerate() {
            assert_eq!(t.position(), i);
            let order = if t.across { "across" } else { "along" };
            let stores = match t.stores {
                TileStores::Cached => "",
                TileStores::Streamed => "_streamed",
                TileStores::Ahead => "_ahead",
            };
            let name = format!("relayout_transpose_block_{}_{order}{stores}", t.elem_size);
            assert_eq!(t.symbol(), name);
        }
    }

    /// Stacked tiles give way to 16-byte ones where the source rows all start in one L1 set.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn stacked_tiles_suit_rows_in_more_than_one_l1_set() {
        for stride in [16_000, 2 * 4096 + 64, 4097, -16_000, 64] {
            assert!(Stacked::<2, 8>::suits(stride), "{stride}");
        }
        for stride in [0, 4096, 16_384, -8192] {
            assert!(!Stacked::<2, 8>::suits(stride), "{stride}");
            assert!(!Stacked::<1, 16>::suits(stride), "{stride}");
        }
        assert!(Wide::<4, false>::suits(4096) && Narrow::<2, 8, false>::suits(4096));
    }

    /// Transposes blocks with every routine, with whole tiles and every remainder on both
    /// sides, from a source with padded rows into a padded stage, and compares every byte
    /// (padding included) with the element-by-element answer.
    #[test]
    fn every_routine_transposes_blocks_of_any_extent() {
        let mut routines = vec![];
        for t in BlockTranspose::ALL {
            let wide_only = t.stores != TileStores::Cached || t.elem_size > 2;
            let expected = (!wide_only || Encoding::has_wide_tiles()).then_some(t);
            assert_eq!(
                BlockTranspose::of(t.elem_size, t.across, t.stores),
                expected
            );
            for encoding in Encoding::PREFERRED {
                routines.extend(t.compiled(encoding).map(|routine| (t, encoding, routine)));
            }
        }
        for (t, encoding, routine) in routines {
            let size = t.elem_size;
            // Extents around the 16-byte tiles and around the widest (64-byte rows).
            let (lanes, widest) = (TILE_BYTES / size, 64 / size);
            let along = [
                0,
                1,
                lanes - 1,
                lanes,
                lanes + 1,
                2 * lanes - 1,
                2 * lanes + 1,
                3 * lanes + lanes / 2 + 1,
            ];
            let across = [
                0,
                1,
                lanes - 1,
                lanes,
                lanes + 1,
                2 * lanes - 1,
                2 * lanes + 1,
                3 * lanes,
            ];
            let wide = [
                widest,
                widest + lanes,
                2 * widest + lanes / 2 + 3,
                4 * widest,
            ];
            // Stage rows that start anywhere, rows that each start a cache line (where
            // streamed tiles stream; every architecture's test uses x86-64's line) and rows
            // that follow one another.
            const LINE: usize = 64;
            let strides = |b: usize| {
                [
                    (b + 5) * size,
                    ((b + 5) * size).next_multiple_of(LINE),
                    (b * size).max(1),
                ]
            };
            // The stage at a line, and as far into one as a buffer may start (rows of whole
            // lines that follow one another stream whole lines from 16, 32 or 48 bytes in).
            let shifts = [0, 16, 32, 48, 8];
            let cases = along.into_iter().chain(wide).flat_map(|a| {
                let bs = across.into_iter().chain(wide);
                bs.flat_map(move |b| {
                    strides(b).into_iter().flat_map(move |stage_stride| {
                        shifts.map(|shift| (a, b, stage_stride, shift))
                    })
                })
            });
            for (a, b, stage_stride, shift) in cases {
                // Source rows just past the block's width, and (with one stage of each block)
                // 4 KiB apart, in one set of the L1, where stacked tiles give way to 16-byte
                // ones.
                let src_stride = match shift == 8 && stage_stride == (b + 5) * size {
                    true => 4096,
                    false => (a + 3) * size,
                };
                // Bytes that do not repeat along a row or from one row to the next (a row read
                // in place of another would go unnoticed otherwise).
                let byte = |k: usize| ((k as u32).wrapping_mul(0x9e37_79b9) >> 24) as u8;
                let src: Vec<u8> = (0..b.max(1) * src_stride).map(byte).collect();
                let mut buffer = vec![0xeeu8; a.max(1) * stage_stride + 2 * LINE];
                let start = buffer.as_ptr().align_offset(LINE) + shift;
                // The whole buffer is compared: nothing outside the stage may change.
                let mut want = buffer.clone();
                for i in 0..a {
                    for j in 0..b {
                        let (from, to) = (j * src_stride + i * size, i * stage_stride + j * size);
                        let to = start + to;
                        want[to..to + size].copy_from_slice(&src[from..from + size]);
                    }
                }
                let got = &mut buffer;
                // SAFETY: the buffers hold every element of the block at these strides, from
                // `start` on.
                unsafe {
                    routine(
                        src.as_ptr(),
                        got.as_mut_ptr().add(start),
                        a as i64,
                        b as i64,
                        src_stride as i64,
                        stage_stride as i64,
                    )
                };
                assert!(
                    *got == want,
                    "{t:?} ({encoding:?}): {a} x {b}, {stage_stride}, {shift} bytes into a line"
                );
            }
        }
    }
}
