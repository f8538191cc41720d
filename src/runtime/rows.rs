//! Conversions of staged rows on their way out, which the generated code calls once per block
//! instead of converting in its own vectors: Cranelift's vectors hold four f32, and f32 → bf16
//! rounding takes about eight vector instructions, so on XLA's bf16 tiles the conversion, not
//! memory, was the limit; here AVX-512F converts 16 lanes at once (AVX2 eight). bf16 → f32 is
//! cheap in any width, but converting on the way out lets a transpose stage its bf16 elements,
//! half the bytes of the f32 ones.
//!
//! Each routine converts by the rules of [`crate::convert`], bit for bit as the generated code
//! would, and writes the whole cache lines of each destination row with streaming stores (the
//! caller runs [`super::fence`] before anyone else reads the destination), the lines a row
//! covers in part with ordinary stores.

#[cfg(target_arch = "x86_64")]
use super::{Rows, LINE_BYTES};
use crate::dtype::DType;

/// A conversion the runtime does on staged rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RowConversion {
    /// f32 to bf16: rounded to nearest, ties to even, subnormals exact, NaNs quiet.
    F32ToBf16,
    /// bf16 to f32: exact, NaNs quiet.
    Bf16ToF32,
}

impl RowConversion {
    /// Every row conversion.
    #[cfg(test)]
    pub(crate) const ALL: [RowConversion; 2] = [RowConversion::F32ToBf16, RowConversion::Bf16ToF32];

    /// The row conversion from `from` to `to`, if the runtime has one.
    pub(crate) fn of(from: DType, to: DType) -> Option<RowConversion> {
        match (from, to) {
            (DType::F32, DType::BF16) => Some(RowConversion::F32ToBf16),
            (DType::BF16, DType::F32) => Some(RowConversion::Bf16ToF32),
            _ => None,
        }
    }

    /// The symbol under which the JIT module resolves the routine.
    pub(crate) fn symbol(self) -> &'static str {
        match self {
            RowConversion::F32ToBf16 => "relayout_convert_rows_f32_bf16",
            RowConversion::Bf16ToF32 => "relayout_convert_rows_bf16_f32",
        }
    }

    /// The routine for this host, of the streaming routine's signature (its row length counted
    /// in elements): AVX-512F where the CPU has it, AVX2 where it has that; `None` elsewhere
    /// (the generated code then converts in its own vectors).
    pub(crate) fn routine(self) -> Option<*const u8> {
        #[cfg(target_arch = "x86_64")]
        {
            let avx512 = std::arch::is_x86_feature_detected!("avx512f");
            let avx2 = std::arch::is_x86_feature_detected!("avx2");
            let routine = match (self, avx512, avx2) {
                (RowConversion::F32ToBf16, true, _) => convert_rows::<F32ToBf16<Avx512>>,
                (RowConversion::F32ToBf16, false, true) => convert_rows::<F32ToBf16<Avx2>>,
                (RowConversion::Bf16ToF32, true, _) => convert_rows::<Bf16ToF32<Avx512>>,
                (RowConversion::Bf16ToF32, false, true) => convert_rows::<Bf16ToF32<Avx2>>,
                _ => return None,
            };
            Some(routine as *const u8)
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = self;
            None
        }
    }
}

/// The bf16 bits of the f32 with bits `x`: rounded to nearest, ties to even, subnormals exact,
/// a NaN quiet with the top of its payload kept.
#[cfg(target_arch = "x86_64")]
fn brain(x: u32) -> u16 {
    let high = x >> 16;
    if x & 0x7fff_ffff > 0x7f80_0000 {
        return (high | 0x40) as u16;
    }
    (x.wrapping_add(0x7fff + (high & 1)) >> 16) as u16
}

/// The f32 bits of the bf16 with bits `x`: the same value, a NaN made quiet.
#[cfg(target_arch = "x86_64")]
fn single(x: u16) -> u32 {
    let quiet = if x & 0x7fff > 0x7f80 { 0x40 } else { 0 };
    ((x | quiet) as u32) << 16
}

/// A row conversion's element rule, whatever the vectors.
#[cfg(target_arch = "x86_64")]
trait Rule {
    /// Bytes of a source and of a destination element.
    const SIZES: (usize, usize);

    /// Converts one element by the rule.
    ///
    /// # Safety
    /// A source element readable at `src`, a destination one writable at `dst`.
    unsafe fn one(src: *const u8, dst: *mut u8);
}

#[cfg(target_arch = "x86_64")]
impl<V> Rule for F32ToBf16<V> {
    const SIZES: (usize, usize) = (4, 2);

    unsafe fn one(src: *const u8, dst: *mut u8) {
        // SAFETY: the caller's promise: one element at each side, any alignment.
        unsafe {
            let x = src.cast::<u32>().read_unaligned();
            dst.cast::<u16>().write_unaligned(brain(x));
        }
    }
}

#[cfg(target_arch = "x86_64")]
impl<V> Rule for Bf16ToF32<V> {
    const SIZES: (usize, usize) = (2, 4);

    unsafe fn one(src: *const u8, dst: *mut u8) {
        // SAFETY: the caller's promise: one element at each side, any alignment.
        unsafe {
            let x = src.cast::<u16>().read_unaligned();
            dst.cast::<u32>().write_unaligned(single(x));
        }
    }
}

/// One row conversion compiled for one set of CPU features.
#[cfg(target_arch = "x86_64")]
trait Convert: Rule {
    /// Elements one [`Convert::block`] converts: a destination piece that divides the line.
    const LANES: usize;

    /// Converts `LANES` elements at `src` into `dst`, with a streaming store when `stream`
    /// (then `dst` is aligned to the `LANES` destination elements' bytes).
    ///
    /// # Safety
    /// `LANES` source elements readable at `src`, as many destination ones writable at `dst`,
    /// and the features.
    unsafe fn block(src: *const u8, dst: *mut u8, stream: bool);

    /// Converts every row of `job` (through [`convert_loop`], compiled with the features
    /// [`Convert::block`] needs, so that it inlines).
    ///
    /// # Safety
    /// As [`convert_rows`].
    unsafe fn rows(job: Rows);
}

/// Converts `rows` rows of `elements` elements from `src` (rows `src_stride` bytes apart) to
/// `dst` (rows `dst_stride` bytes apart).
///
/// # Safety
/// For every `r < rows`, the `elements` source elements at `src + r·src_stride` must be
/// readable, the `elements` destination elements at `dst + r·dst_stride` writable, and the two
/// must not overlap; the CPU must have the features `C` uses ([`RowConversion::routine`] picks
/// `C` by what it has).
#[cfg(target_arch = "x86_64")]
unsafe extern "C" fn convert_rows<C: Convert>(
    src: *const u8,
    dst: *mut u8,
    rows: i64,
    elements: i64,
    src_stride: i64,
    dst_stride: i64,
) {
    // The streaming routine's job, its row length counted in elements.
    let job = Rows::new(src, dst, [rows, elements, src_stride, dst_stride]);
    // SAFETY: forwarded from the caller.
    unsafe { C::rows(job) }
}

/// [`Convert::rows`]'s loop (`job.row_bytes` counts elements here), row by row.
///
/// # Safety
/// As [`convert_rows`]; `C`'s features must be enabled where this is inlined.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn convert_loop<C: Convert>(job: Rows) {
    if job.row_bytes == 0 {
        // No elements to convert, and no rows the caller vouches for.
        return;
    }
    for r in 0..job.rows as isize {
        // SAFETY: row `r` of each side is inside the ranges the caller vouches for (the
        // offsets fit in `isize` because they address memory that exists).
        unsafe {
            let src = job.src.offset(r * job.src_stride);
            let dst = job.dst.offset(r * job.dst_stride);
            convert_row::<C>(src, dst, job.row_bytes);
        }
    }
}

/// One row of `n` elements at any alignment: the whole destination cache lines it covers in
/// blocks with streaming stores, the lines it covers in part (at most one at each end) with
/// ordinary stores, as [`super::copy_row`] does (a line streamed in part goes to memory as a
/// partial write); where the destination is not aligned to its elements, all with ordinary
/// stores.
///
/// # Safety
/// `n` source elements readable at `src`, `n` destination elements writable at `dst`, not
/// overlapping; `C`'s features.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn convert_row<C: Convert>(src: *const u8, dst: *mut u8, n: usize) {
    const { assert!(LINE_BYTES.is_multiple_of(C::SIZES.1 * C::LANES)) };
    let (s, d) = C::SIZES;
    let per_line = LINE_BYTES / d;
    // Elements before the first line boundary, and the end of the whole lines after it.
    let head = match (dst as usize).is_multiple_of(d) {
        true => (dst.align_offset(LINE_BYTES) / d).min(n),
        false => n,
    };
    let body_end = head + (n - head) / per_line * per_line;
    // SAFETY: every access stays within the first `n` elements of each side (`head ≤
    // body_end ≤ n`, blocks end at or before their range's end); the streamed blocks lie in
    // `[head, body_end)`, whole lines from a line boundary, so each is aligned to its bytes (a
    // divisor of the line); the caller promises the features.
    unsafe {
        let at = |i: usize| (src.add(s * i), dst.add(d * i));
        let plain = |from: usize, to: usize| {
            let mut i = from;
            while i + C::LANES <= to {
                let (x, y) = at(i);
                C::block(x, y, false);
                i += C::LANES;
            }
            while i < to {
                let (x, y) = at(i);
                C::one(x, y);
                i += 1;
            }
        };
        plain(0, head);
        let mut i = head;
        while i < body_end {
            let (x, y) = at(i);
            C::block(x, y, true);
            i += C::LANES;
        }
        plain(body_end, n);
    }
}

/// [`Convert::rows`] compiled with the CPU feature `$feature`, so that the loop inlines
/// [`Convert::block`].
#[cfg(target_arch = "x86_64")]
macro_rules! rows_with_feature {
    ($feature:literal) => {
        #[target_feature(enable = $feature)]
        unsafe fn rows(job: Rows) {
            // SAFETY: forwarded from the caller, who promises the feature (enabled here).
            unsafe { convert_loop::<Self>(job) }
        }
    };
}

/// f32 → bf16 with the vectors of `V`.
#[cfg(target_arch = "x86_64")]
struct F32ToBf16<V>(std::marker::PhantomData<V>);

/// bf16 → f32 with the vectors of `V`.
#[cfg(target_arch = "x86_64")]
struct Bf16ToF32<V>(std::marker::PhantomData<V>);

/// 512-bit vectors (AVX-512F).
#[cfg(target_arch = "x86_64")]
struct Avx512;

/// 256-bit vectors (AVX2).
#[cfg(target_arch = "x86_64")]
struct Avx2;

#[cfg(target_arch = "x86_64")]
impl Convert for F32ToBf16<Avx512> {
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

    rows_with_feature!("avx512f");
}

#[cfg(target_arch = "x86_64")]
impl Convert for F32ToBf16<Avx2> {
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

    rows_with_feature!("avx2");
}

#[cfg(target_arch = "x86_64")]
impl Convert for Bf16ToF32<Avx512> {
    const LANES: usize = 16;

    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn block(src: *const u8, dst: *mut u8, stream: bool) {
        use std::arch::x86_64::*;
        // SAFETY: the caller's promise: 32 bytes at `src`, 64 at `dst` (aligned to 64 when
        // streamed), and AVX-512F; the load accepts any alignment.
        unsafe {
            let x = _mm512_cvtepu16_epi32(_mm256_loadu_si256(src.cast()));
            let y = _mm512_slli_epi32::<16>(x);
            let f = _mm512_castsi512_ps(y);
            let is_nan = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(f, f);
            let y = _mm512_mask_or_epi32(y, is_nan, y, _mm512_set1_epi32(0x0040_0000));
            match stream {
                true => _mm512_stream_si512(dst.cast(), y),
                false => _mm512_storeu_si512(dst.cast(), y),
            }
        }
    }

    rows_with_feature!("avx512f");
}

#[cfg(target_arch = "x86_64")]
impl Convert for Bf16ToF32<Avx2> {
    const LANES: usize = 8;

    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn block(src: *const u8, dst: *mut u8, stream: bool) {
        use std::arch::x86_64::*;
        // SAFETY: the caller's promise: 16 bytes at `src`, 32 at `dst` (aligned to 32 when
        // streamed), and AVX2; the load accepts any alignment.
        unsafe {
            let x = _mm256_cvtepu16_epi32(_mm_loadu_si128(src.cast()));
            let y = _mm256_slli_epi32::<16>(x);
            let f = _mm256_castsi256_ps(y);
            let is_nan = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_UNORD_Q>(f, f));
            let quiet = _mm256_and_si256(is_nan, _mm256_set1_epi32(0x0040_0000));
            let y = _mm256_or_si256(y, quiet);
            match stream {
                true => _mm256_stream_si256(dst.cast(), y),
                false => _mm256_storeu_si256(dst.cast(), y),
            }
        }
    }

    rows_with_feature!("avx2");
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;
    use crate::convert::Conversion;

    /// A row conversion routine, as the JIT calls it.
    type Routine = unsafe extern "C" fn(*const u8, *mut u8, i64, i64, i64, i64);

    /// Source bits that test every branch of `from → to`: zeros, subnormals, ties, values that
    /// round up into the next binade or to infinity, infinities, NaNs with payloads (quiet and
    /// signalling), each with either sign, then pseudo-random bits.
    fn inputs(from: DType, n: usize) -> Vec<u32> {
        let special: &[u32] = match from {
            DType::F32 => &[
                0,
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
            ],
            _ => &[
                0, 1, 0x7f, 0x80, 0x7f7f, 0x7f80, 0x7f81, 0x7fbf, 0x7fc0, 0x7fff,
            ],
        };
        let sign = if from == DType::F32 { 31 } else { 15 };
        let mask = if from == DType::F32 { u32::MAX } else { 0xffff };
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        (0..n)
            .map(|i| match special.get(i / 2) {
                Some(&x) => x | ((i as u32 & 1) << sign),
                None => {
                    state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                    (state >> 32) as u32 & mask
                }
            })
            .collect()
    }

    /// Three rows of several lengths around the blocks, `gap` bytes apart, going up or down,
    /// into destinations at a line, off it by whole elements (a head and a tail of ordinary
    /// stores around streamed lines) and by half an element (no streaming): each element as
    /// the conversion rules say, nothing else written.
    fn check(routine: Routine, conversion: RowConversion) {
        let (from, to) = match conversion {
            RowConversion::F32ToBf16 => (DType::F32, DType::BF16),
            RowConversion::Bf16ToF32 => (DType::BF16, DType::F32),
        };
        let (s, d) = (from.size(), to.size());
        let rule = Conversion::new(from, to).unwrap();
        let xs = inputs(from, 3 * 200);
        let src: Vec<u8> = xs
            .iter()
            .flat_map(|&x| x.to_le_bytes().into_iter().take(s))
            .collect();
        for elements in [0usize, 7, 8, 16, 31, 32, 64, 100, 150] {
            let gap = (d * elements).next_multiple_of(64).max(64);
            let places = [(0usize, true), (2, true), (4, true), (16, true), (64, true)];
            let down = [(0, false), (2, false), (16, false)];
            for (offset, up) in places.into_iter().chain(down) {
                let mut dst = vec![0xEEu8; 3 * gap + 192];
                let base = dst.as_mut_ptr().align_offset(64) + offset;
                // Rows going up from `base`, or down from the highest of the three.
                let (first, stride) = match up {
                    true => (base, gap as i64),
                    false => (base + 2 * gap, -(gap as i64)),
                };
                // SAFETY: 3 rows of `elements` source elements, `200·s` bytes apart in `src`
                // (`600·s` bytes), and of `d·elements ≤ gap` bytes in the three slots of `gap`
                // bytes from `base` (below 128) in `dst`; distinct allocations; the routines
                // are those the CPU has the features of.
                unsafe {
                    routine(
                        src.as_ptr(),
                        dst.as_mut_ptr().add(first),
                        3,
                        elements as i64,
                        (200 * s) as i64,
                        stride,
                    )
                };
                super::super::fence();
                for (i, &got) in dst.iter().enumerate() {
                    let at = i.wrapping_sub(base);
                    let (slot, col) = (at / gap, at % gap / d);
                    let row = if up { slot } else { 2usize.wrapping_sub(slot) };
                    let want = match i >= base && row < 3 && col < elements {
                        true => {
                            let y = rule.apply(xs[row * 200 + col] as u64);
                            y.to_le_bytes()[at % gap % d]
                        }
                        false => 0xEE,
                    };
                    assert_eq!(
                        got, want,
                        "{conversion:?}, {elements} elements, offset {offset}, up {up}, byte {i}"
                    );
                }
            }
        }
    }

    #[test]
    fn rows_convert_as_the_rules_say() {
        for conversion in RowConversion::ALL {
            if let Some(host) = conversion.routine() {
                // SAFETY: the host's routine is a function of this signature.
                check(
                    unsafe { std::mem::transmute::<*const u8, Routine>(host) },
                    conversion,
                );
            }
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            check(convert_rows::<F32ToBf16<Avx2>>, RowConversion::F32ToBf16);
            check(convert_rows::<Bf16ToF32<Avx2>>, RowConversion::Bf16ToF32);
        }
        if std::arch::is_x86_feature_detected!("avx512f") {
            check(convert_rows::<F32ToBf16<Avx512>>, RowConversion::F32ToBf16);
            check(convert_rows::<Bf16ToF32<Avx512>>, RowConversion::Bf16ToF32);
        }
    }
}
