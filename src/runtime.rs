//! Routines the generated code calls: stores that bypass the cache (non-temporal stores), which
//! Cranelift cannot emit. Kernels for large destinations finish a block of the destination in a
//! small staging buffer (or read a contiguous source run directly) and hand it to
//! [`stream_rows`], once per block, which writes it out with streaming stores.
//!
//! The routine runs once per block, and a block can be as small as four rows of one cache line
//! (NHWC → NCHW16c), so what it spends per row counts: a destination line that takes 7 cycles to
//! stream has no room for alignment arithmetic and `memcpy` calls for empty heads and tails. Rows
//! of whole, aligned cache lines (the usual case: staged runs and copies of whole lines) go
//! through a loop of loads and streaming stores alone; only other rows pay for heads and tails.
//! On a 2-core AMD EPYC (Zen 4) VM that took NHWC → NCHW16c from 9 to 24 GB/s.

/// The symbol under which the JIT module resolves [`stream_rows`].
pub(crate) const STREAM_ROWS: &str = "relayout_stream_rows";

/// The streaming routine for this host, as the address the JIT module resolves [`STREAM_ROWS`]
/// to: [`stream_rows`] with 64-byte streaming stores where the CPU has AVX-512F, 32-byte ones
/// where it has AVX, 16-byte ones otherwise.
pub(crate) fn stream_rows_routine() -> *const u8 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            return stream_rows::<Avx512> as *const u8;
        }
        if std::arch::is_x86_feature_detected!("avx") {
            return stream_rows::<Avx> as *const u8;
        }
    }
    stream_rows::<Baseline> as *const u8
}

/// One call's rows: `rows` rows of `row_bytes` bytes from `src` (rows `src_stride` bytes apart)
/// to `dst` (rows `dst_stride` bytes apart).
#[derive(Clone, Copy)]
struct Rows {
    src: *const u8,
    dst: *mut u8,
    rows: usize,
    row_bytes: usize,
    src_stride: isize,
    dst_stride: isize,
}

/// Streaming stores of one width, and the loop over a call's rows compiled with the CPU
/// features they need.
trait Streamer {
    /// Bytes of one streaming store; destinations must be aligned to it.
    const WIDTH: usize;

    /// Copies `WIDTH` bytes from `src` to `dst` with one streaming store.
    ///
    /// # Safety
    /// `WIDTH` bytes readable at `src` and writable at `dst`, `dst` aligned to `WIDTH`, and the
    /// CPU has the implementation's features.
    unsafe fn stream(src: *const u8, dst: *mut u8);

    /// Copies every row of `job` (through [`copy_rows`], compiled with the features
    /// [`Streamer::stream`] needs, so that it inlines).
    ///
    /// # Safety
    /// As [`stream_rows`], for `job`'s rows.
    unsafe fn rows(job: Rows);
}

/// Copies `rows` rows of `row_bytes` bytes from `src` (rows `src_stride` bytes apart) to `dst`
/// (rows `dst_stride` bytes apart), with streaming stores for the whole cache lines of each
/// destination row and ordinary stores for the lines it covers in part. The stores are weakly
/// ordered: the caller runs [`fence`] before it lets anyone else read the destination.
///
/// # Safety
/// For every `r < rows`, the `row_bytes` bytes at `src + r·src_stride` must be readable, those at
/// `dst + r·dst_stride` writable, and the two must not overlap; the CPU must have the features
/// `S` uses ([`stream_rows_routine`] picks `S` by what the CPU has).
unsafe extern "C" fn stream_rows<S: Streamer>(
    src: *const u8,
    dst: *mut u8,
    rows: i64,
    row_bytes: i64,
    src_stride: i64,
    dst_stride: i64,
) {
    let job = Rows {
        src,
        dst,
        rows: rows.max(0) as usize,
        row_bytes: row_bytes.max(0) as usize,
        src_stride: src_stride as isize,
        dst_stride: dst_stride as isize,
    };
    // SAFETY: forwarded from the caller.
    unsafe { S::rows(job) }
}

/// Bytes of a cache line: this routine streams whole lines only.
const LINE_BYTES: usize = crate::target::HOST_LINE_BYTES;

/// [`Streamer::rows`]'s loop: rows of whole, aligned cache lines with nothing but loads and
/// streaming stores, any other row through [`copy_row`].
///
/// # Safety
/// As [`stream_rows`]; `S`'s features must be enabled where this is inlined.
#[inline(always)]
unsafe fn copy_rows<S: Streamer>(job: Rows) {
    const { assert!(LINE_BYTES.is_multiple_of(S::WIDTH)) };
    if job.row_bytes == 0 {
        // No bytes to move, and none the caller vouches for.
        return;
    }
    let whole_lines = |x: usize| x.is_multiple_of(LINE_BYTES);
    let whole = whole_lines(job.dst as usize)
        && whole_lines(job.dst_stride.unsigned_abs())
        && whole_lines(job.row_bytes);
    for r in 0..job.rows as isize {
        // SAFETY: row `r` of each side is inside the ranges the caller vouches for, and the
        // offsets fit in `isize` because they address memory that exists.
        let (src, dst) = unsafe {
            (
                job.src.offset(r * job.src_stride),
                job.dst.offset(r * job.dst_stride),
            )
        };
        if whole {
            let mut at = 0;
            while at < job.row_bytes {
                // SAFETY: `at + WIDTH ≤ row_bytes` (a multiple of the line, so of `WIDTH`, which
                // divides the line), `dst + at` is aligned to `WIDTH` (`dst` and the stride are
                // multiples of the line, `at` of `WIDTH`); the caller's features.
                unsafe { S::stream(src.add(at), dst.add(at)) };
                at += S::WIDTH;
            }
        } else {
            // SAFETY: forwarded from the caller, for this row.
            unsafe { copy_row::<S>(src, dst, job.row_bytes) };
        }
    }
}

/// One row at any alignment: the whole cache lines it covers with streaming stores, the lines
/// it covers in part (at most one at each end) with ordinary stores. A line streamed in part
/// would go to memory as a partial write, and so would the stores of the next row or call to the
/// rest of it: on a 2-core AMD EPYC (Zen 4) VM, with 16-byte streaming stores up to those
/// lines, a destination 16 bytes past a line took NHWC → NCHW16c from 23 to 10 GB/s and odd/even
/// strips (4 KiB staged runs) from 17 to 11.
///
/// # Safety
/// `len` bytes at `src` readable, at `dst` writable, not overlapping; `S`'s features.
#[inline(always)]
unsafe fn copy_row<S: Streamer>(src: *const u8, dst: *mut u8, len: usize) {
    let head = dst.align_offset(LINE_BYTES).min(len);
    let body_end = head + (len - head) / LINE_BYTES * LINE_BYTES;
    // SAFETY: every access stays within `[0, len)` of both pointers (the caller's ranges):
    // `head ≤ body_end ≤ len`, and the streaming stores move whole `WIDTH` pieces (a divisor of
    // the line) from `head` to `body_end`, at addresses aligned to the line and so to `WIDTH`;
    // the loads accept any alignment; the caller promises the features.
    unsafe {
        if head > 0 {
            std::ptr::copy_nonoverlapping(src, dst, head);
        }
        let mut at = head;
        while at < body_end {
            S::stream(src.add(at), dst.add(at));
            at += S::WIDTH;
        }
        if body_end < len {
            std::ptr::copy_nonoverlapping(src.add(body_end), dst.add(body_end), len - body_end);
        }
    }
}

/// 16-byte streaming stores (SSE2), or ordinary copies on other architectures.
struct Baseline;

impl Streamer for Baseline {
    const WIDTH: usize = 16;

    #[cfg(target_arch = "x86_64")]
    unsafe fn stream(src: *const u8, dst: *mut u8) {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
        // SAFETY: the caller's promise: 16 bytes at each side, `dst` aligned to 16; SSE2 is part
        // of the x86-64 baseline; the load accepts any alignment.
        unsafe { _mm_stream_si128(dst.cast::<__m128i>(), _mm_loadu_si128(src.cast())) }
    }

    #[cfg(not(target_arch = "x86_64"))]
    unsafe fn stream(src: *const u8, dst: *mut u8) {
        // SAFETY: the caller's promise.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, 16) }
    }

    unsafe fn rows(job: Rows) {
        // SAFETY: forwarded from the caller; no features beyond the baseline.
        unsafe { copy_rows::<Self>(job) }
    }
}

/// A [`Streamer`] of `$width`-byte streaming stores that needs the CPU feature `$feature`.
#[cfg(target_arch = "x86_64")]
macro_rules! wide_streamer {
    ($(#[$doc:meta])* $name:ident, $feature:literal, $width:literal,
     $vector:ident, $load:ident, $store:ident) => {
        $(#[$doc])*
        struct $name;

        impl Streamer for $name {
            const WIDTH: usize = $width;

            #[inline]
            #[target_feature(enable = $feature)]
            unsafe fn stream(src: *const u8, dst: *mut u8) {
                use std::arch::x86_64::{$load, $store, $vector};
                // SAFETY: the caller's promise: `WIDTH` bytes at each side, `dst` aligned to
                // `WIDTH`, and the feature; the load accepts any alignment.
                unsafe { $store(dst.cast::<$vector>(), $load(src.cast())) }
            }

            #[target_feature(enable = $feature)]
            unsafe fn rows(job: Rows) {
                // SAFETY: forwarded from the caller, who promises the feature (enabled here, so
                // `stream` inlines).
                unsafe { copy_rows::<Self>(job) }
            }
        }
    };
}

#[cfg(target_arch = "x86_64")]
wide_streamer!(
    /// 32-byte streaming stores (AVX).
    Avx, "avx", 32, __m256i, _mm256_loadu_si256, _mm256_stream_si256
);

#[cfg(target_arch = "x86_64")]
wide_streamer!(
    /// 64-byte streaming stores (AVX-512F): a whole cache line per store.
    Avx512, "avx512f", 64, __m512i, _mm512_loadu_si512, _mm512_stream_si512
);

/// The symbol under which the JIT module resolves the f32 → bf16 row conversion
/// ([`convert_rows_f32_bf16_routine`]).
pub(crate) const CONVERT_ROWS_F32_BF16: &str = "relayout_convert_rows_f32_bf16";

/// The routine that converts staged rows of f32 to bf16 on their way out, for this host: 16
/// lanes at a time where the CPU has AVX-512F, 8 where it has AVX2; `None` elsewhere (the
/// generated code then converts in its own 128-bit vectors). Cranelift's vectors hold four f32,
/// and f32 → bf16 rounding takes about eight vector instructions, so on the XLA tiles the
/// conversion, not memory, was the limit.
pub(crate) fn convert_rows_f32_bf16_routine() -> Option<*const u8> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            return Some(convert_rows_f32_bf16::<Avx512> as *const u8);
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            return Some(convert_rows_f32_bf16::<Avx2> as *const u8);
        }
    }
    None
}

/// The bf16 bits of the f32 with bits `x`, by relayout's rule: rounded to nearest, ties to
/// even, subnormals exact, a NaN quiet with the top of its payload kept.
#[cfg(target_arch = "x86_64")]
fn brain(x: u32) -> u16 {
    let high = x >> 16;
    if x & 0x7fff_ffff > 0x7f80_0000 {
        return (high | 0x40) as u16;
    }
    (x.wrapping_add(0x7fff + (high & 1)) >> 16) as u16
}

/// Conversions of f32 lanes to bf16, and the loop over a call's rows compiled with the CPU
/// features they need.
#[cfg(target_arch = "x86_64")]
trait Brain {
    /// Elements one [`Brain::block`] converts.
    const LANES: usize;

    /// Converts `LANES` f32 at `src` into bf16 at `dst`, with a streaming store when `stream`
    /// (then `dst` is aligned to `2·LANES` bytes).
    ///
    /// # Safety
    /// `4·LANES` bytes readable at `src`, `2·LANES` writable at `dst`, and the features.
    unsafe fn block(src: *const u8, dst: *mut u8, stream: bool);

    /// Converts every row of `job` (through [`brain_rows`], so that `block` inlines).
    ///
    /// # Safety
    /// As [`convert_rows_f32_bf16`].
    unsafe fn rows(job: Rows);
}

/// Converts `rows` rows of `elements` f32 from `src` (rows `src_stride` bytes apart) to bf16 at
/// `dst` (rows `dst_stride` bytes apart), each by [`brain`]'s rule. Rows of whole, aligned
/// cache lines are written with streaming stores (the caller runs [`fence`] before anyone else
/// reads the destination), other rows with ordinary stores.
///
/// # Safety
/// For every `r < rows`, the `4·elements` bytes at `src + r·src_stride` must be readable, the
/// `2·elements` at `dst + r·dst_stride` writable, and the two must not overlap; the CPU must
/// have the features `B` uses ([`convert_rows_f32_bf16_routine`] picks `B` by what it has).
#[cfg(target_arch = "x86_64")]
unsafe extern "C" fn convert_rows_f32_bf16<B: Brain>(
    src: *const u8,
    dst: *mut u8,
    rows: i64,
    elements: i64,
    src_stride: i64,
    dst_stride: i64,
) {
    let job = Rows {
        src,
        dst,
        rows: rows.max(0) as usize,
        row_bytes: elements.max(0) as usize,
        src_stride: src_stride as isize,
        dst_stride: dst_stride as isize,
    };
    // SAFETY: forwarded from the caller.
    unsafe { B::rows(job) }
}

/// [`Brain::rows`]'s loop; `job.row_bytes` counts elements here.
///
/// # Safety
/// As [`convert_rows_f32_bf16`]; `B`'s features must be enabled where this is inlined.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn brain_rows<B: Brain>(job: Rows) {
    let n = job.row_bytes;
    let whole_lines = |x: usize| x.is_multiple_of(LINE_BYTES);
    let stream = whole_lines(job.dst as usize)
        && whole_lines(job.dst_stride.unsigned_abs())
        && whole_lines(2 * n);
    for r in 0..job.rows as isize {
        // SAFETY: row `r` of each side is inside the ranges the caller vouches for; blocks of
        // `LANES` elements up to `n`, then single elements; a streamed block starts at a
        // multiple of `2·LANES` bytes (a divisor of the line) of a line-aligned row.
        unsafe {
            let src = job.src.offset(r * job.src_stride);
            let dst = job.dst.offset(r * job.dst_stride);
            let mut i = 0;
            while i + B::LANES <= n {
                B::block(src.add(4 * i), dst.add(2 * i), stream);
                i += B::LANES;
            }
            while i < n {
                let x = src.add(4 * i).cast::<u32>().read_unaligned();
                dst.add(2 * i).cast::<u16>().write_unaligned(brain(x));
                i += 1;
            }
        }
    }
}

/// 32 lanes a block, two vectors of 16 (AVX-512F): a whole cache line of bf16.
#[cfg(target_arch = "x86_64")]
impl Brain for Avx512 {
    const LANES: usize = 32;

    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn block(src: *const u8, dst: *mut u8, stream: bool) {
        use std::arch::x86_64::*;
        let brain16 = |x: __m512i| {
            let high = _mm512_srli_epi32::<16>(x);
            let odd = _mm512_and_si512(high, _mm512_set1_epi32(1));
            let sum = _mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7fff)), odd);
            let rounded = _mm512_srli_epi32::<16>(sum);
            let nan = _mm512_or_si512(high, _mm512_set1_epi32(0x40));
            let f = _mm512_castsi512_ps(x);
            let is_nan = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(f, f);
            _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(is_nan, rounded, nan))
        };
        // SAFETY: the caller's promise: 128 bytes at `src`, 64 at `dst` (aligned to 64 when
        // streamed), and AVX-512F; the loads accept any alignment.
        unsafe {
            let low = brain16(_mm512_loadu_si512(src.cast()));
            let high = brain16(_mm512_loadu_si512(src.add(64).cast()));
            let y = _mm512_inserti64x4::<1>(_mm512_castsi256_si512(low), high);
            match stream {
                true => _mm512_stream_si512(dst.cast(), y),
                false => _mm512_storeu_si512(dst.cast(), y),
            }
        }
    }

    #[target_feature(enable = "avx512f")]
    unsafe fn rows(job: Rows) {
        // SAFETY: forwarded from the caller, who promises the feature (enabled here).
        unsafe { brain_rows::<Self>(job) }
    }
}

/// 16 lanes a block, two vectors of 8 (AVX2): half a cache line of bf16.
#[cfg(target_arch = "x86_64")]
struct Avx2;

#[cfg(target_arch = "x86_64")]
impl Brain for Avx2 {
    const LANES: usize = 16;

    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn block(src: *const u8, dst: *mut u8, stream: bool) {
        use std::arch::x86_64::*;
        let brain8 = |x: __m256i| {
            let high = _mm256_srli_epi32::<16>(x);
            let odd = _mm256_and_si256(high, _mm256_set1_epi32(1));
            let sum = _mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)), odd);
            let rounded = _mm256_srli_epi32::<16>(sum);
            let nan = _mm256_or_si256(high, _mm256_set1_epi32(0x40));
            let f = _mm256_castsi256_ps(x);
            let is_nan = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_UNORD_Q>(f, f));
            _mm256_blendv_epi8(rounded, nan, is_nan)
        };
        // SAFETY: the caller's promise: 64 bytes at `src`, 32 at `dst` (aligned to 32 when
        // streamed), and AVX2; the loads accept any alignment.
        unsafe {
            let low = brain8(_mm256_loadu_si256(src.cast()));
            let high = brain8(_mm256_loadu_si256(src.add(32).cast()));
            // Every lane is below 2^16, so the saturating pack keeps it; the pack works within
            // 128-bit halves, and the permute puts the four 64-bit pieces back in order.
            let packed = _mm256_packus_epi32(low, high);
            let y = _mm256_permute4x64_epi64::<0b11_01_10_00>(packed);
            match stream {
                true => _mm256_stream_si256(dst.cast(), y),
                false => _mm256_storeu_si256(dst.cast(), y),
            }
        }
    }

    #[target_feature(enable = "avx2")]
    unsafe fn rows(job: Rows) {
        // SAFETY: forwarded from the caller, who promises the feature (enabled here).
        unsafe { brain_rows::<Self>(job) }
    }
}

/// Orders this thread's streaming stores before everything that follows (`mfence` on x86-64).
pub(crate) fn fence() {
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert::Conversion;
    use crate::dtype::DType;

    type Routine = unsafe extern "C" fn(*const u8, *mut u8, i64, i64, i64, i64);

    /// Three rows of every length up to past two 64-byte stores, at every destination offset
    /// within 64 bytes, rows a multiple of 64 bytes apart (up or down, where whole aligned rows
    /// take the fast loop) or not, land where they belong and nothing else changes.
    fn check_routine(routine: Routine) {
        let src: Vec<u8> = (0..400).map(|i| (i * 7 % 251) as u8).collect();
        for stride in [110i64, 128, -128] {
            let gap = stride.unsigned_abs() as usize;
            for offset in 0..64 {
                let lengths = [0, 1, 15, 16, 17, 31, 32, 33, 48, 64, 77, 96, 100, 110, 128];
                for row_bytes in lengths.into_iter().filter(|&len| len <= gap) {
                    let mut dst = vec![0xEEu8; 3 * gap + 64];
                    // The first row's start: the lowest row when rows go up, the highest when
                    // they go down.
                    let first = offset + if stride < 0 { 2 * gap } else { 0 };
                    // SAFETY: 3 rows of at most `gap` bytes, `gap` bytes apart in `src` (400
                    // bytes) and in `dst` from `offset` < 64 (`3·gap + 64` bytes); distinct
                    // allocations. The routines under test are the baseline one and those the
                    // CPU has the features of.
                    unsafe {
                        routine(
                            src.as_ptr(),
                            dst.as_mut_ptr().add(first),
                            3,
                            row_bytes as i64,
                            gap as i64,
                            stride,
                        )
                    };
                    fence();
                    for (i, &got) in dst.iter().enumerate() {
                        let at = i.wrapping_sub(offset);
                        let (slot, col) = (at / gap, at % gap);
                        let row = if stride < 0 {
                            2usize.wrapping_sub(slot)
                        } else {
                            slot
                        };
                        let inside = i >= offset && row < 3 && col < row_bytes;
                        let want = if inside { src[row * gap + col] } else { 0xEE };
                        assert_eq!(
                            got, want,
                            "stride {stride} offset {offset} row bytes {row_bytes} byte {i}"
                        );
                    }
                }
            }
        }
    }

    /// f32 bits that test every branch of the bf16 rounding: zeros, subnormals, ties, values
    /// that round up into the next binade or to infinity, infinities and NaNs with payloads.
    fn brain_inputs(n: usize) -> Vec<u32> {
        let special = [
            0u32,
            1,
            0x7fff,
            0x8000,
            0x8001,
            0x1_8000,
            0x0001_0000,
            0x007f_ffff,
            0x0080_0000,
            0x3f80_8000,
            0x3f81_8000,
            0x3f80_7fff,
            0x7f7f_ffff,
            0x7f80_0000,
            0x7f80_0001,
            0x7fc0_0000,
            0x7fff_ffff,
            0x7fbf_ffff,
        ];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        (0..n)
            .map(|i| match special.get(i / 2) {
                Some(&x) => x | ((i as u32 & 1) << 31),
                None => {
                    state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                    (state >> 32) as u32
                }
            })
            .collect()
    }

    #[test]
    fn rows_convert_to_bf16_as_the_rules_say() {
        type Convert = unsafe extern "C" fn(*const u8, *mut u8, i64, i64, i64, i64);
        let Some(host) = convert_rows_f32_bf16_routine() else {
            return;
        };
        // SAFETY: the host's routine is a function of this signature (what the JIT calls).
        let host = unsafe { std::mem::transmute::<*const u8, Convert>(host) };
        let rule = Conversion::new(DType::F32, DType::BF16).unwrap();
        let mut routines = vec![host];
        if std::arch::is_x86_feature_detected!("avx2") {
            routines.push(convert_rows_f32_bf16::<Avx2>);
        }
        if std::arch::is_x86_feature_detected!("avx512f") {
            routines.push(convert_rows_f32_bf16::<Avx512>);
        }
        let xs = brain_inputs(3 * 200);
        let src: Vec<u8> = xs.iter().flat_map(|x| x.to_le_bytes()).collect();
        for routine in routines {
            // Rows of whole lines at a line-aligned destination (streamed) and not; lengths
            // around the blocks of 16 and 32.
            for (elements, gap) in [(0, 64), (7, 64), (16, 64), (32, 64), (64, 128), (100, 256)] {
                for offset in [0usize, 2, 64] {
                    let mut dst = vec![0xEEu8; 3 * gap + 192];
                    let base = dst.as_mut_ptr().align_offset(64) + offset;
                    // SAFETY: 3 rows of `elements` f32, 800 bytes apart in `src` (2400 bytes),
                    // and of `2·elements ≤ gap` bytes, `gap` apart in `dst` from `base`
                    // (below 128); distinct allocations; the routines are the host's and those
                    // the CPU has the features of.
                    unsafe {
                        routine(
                            src.as_ptr(),
                            dst.as_mut_ptr().add(base),
                            3,
                            elements as i64,
                            800,
                            gap as i64,
                        )
                    };
                    fence();
                    for (i, pair) in dst.chunks(2).enumerate() {
                        let at = (2 * i).wrapping_sub(base);
                        let (row, col) = (at / gap, at % gap / 2);
                        let got = u16::from_le_bytes([pair[0], pair[1]]);
                        let want = match 2 * i >= base && row < 3 && col < elements {
                            true => rule.apply(xs[row * 200 + col] as u64) as u16,
                            false => 0xEEEE,
                        };
                        assert_eq!(
                            got,
                            want,
                            "{elements} elements, offset {offset}, byte {}",
                            2 * i
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn rows_land_where_they_belong_at_any_alignment() {
        check_routine(stream_rows::<Baseline>);
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx") {
            check_routine(stream_rows::<Avx>);
        }
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx512f") {
            check_routine(stream_rows::<Avx512>);
        }
        // SAFETY: the host's routine is a function of this signature (what the JIT calls).
        check_routine(unsafe { std::mem::transmute::<*const u8, Routine>(stream_rows_routine()) });
    }
}
