//! Routines the generated code calls: stores that bypass the cache (non-temporal stores), which
//! Cranelift cannot emit. Kernels for large destinations finish a block of the destination in a
//! small staging buffer (or read a contiguous source run directly) and hand it to
//! [`stream_rows`], once per block, which writes it out in 16-byte streaming stores.

/// The symbol under which the JIT module resolves [`stream_rows`].
pub(crate) const STREAM_ROWS: &str = "relayout_stream_rows";

/// The streaming routine for this host, as the address the JIT module resolves [`STREAM_ROWS`]
/// to: [`stream_rows`] with 32-byte streaming stores where the CPU has AVX, 16-byte ones
/// otherwise.
pub(crate) fn stream_rows_routine() -> *const u8 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx") {
        return stream_rows::<Avx> as *const u8;
    }
    stream_rows::<Baseline> as *const u8
}

/// How one row is copied with streaming stores.
trait RowStreamer {
    /// Copies `len` bytes from `src` to `dst`.
    ///
    /// # Safety
    /// `len` bytes at `src` readable, at `dst` writable, not overlapping, and the CPU has the
    /// features the implementation uses.
    unsafe fn row(src: *const u8, dst: *mut u8, len: usize);
}

/// Copies `rows` rows of `row_bytes` bytes from `src` (rows `src_stride` bytes apart) to `dst`
/// (rows `dst_stride` bytes apart), with streaming stores for the aligned part of each
/// destination row and ordinary stores for its unaligned head and tail. The stores are weakly
/// ordered: the caller runs [`fence`] before it lets anyone else read the destination.
///
/// # Safety
/// For every `r < rows`, the `row_bytes` bytes at `src + r·src_stride` must be readable, those at
/// `dst + r·dst_stride` writable, and the two must not overlap; the CPU must have the features
/// `R` uses ([`stream_rows_routine`] picks `R` by what the CPU has).
unsafe extern "C" fn stream_rows<R: RowStreamer>(
    src: *const u8,
    dst: *mut u8,
    rows: i64,
    row_bytes: i64,
    src_stride: i64,
    dst_stride: i64,
) {
    for r in 0..rows {
        // SAFETY: row `r` of each side is inside the ranges the caller vouches for; the offsets
        // fit in `isize` because they address memory that exists; the CPU features are the
        // caller's promise too.
        unsafe {
            R::row(
                src.offset((r * src_stride) as isize),
                dst.offset((r * dst_stride) as isize),
                row_bytes as usize,
            )
        }
    }
}

/// 16-byte streaming stores (SSE2, part of the x86-64 baseline), or ordinary copies on other
/// architectures.
struct Baseline;

impl RowStreamer for Baseline {
    #[cfg(target_arch = "x86_64")]
    unsafe fn row(src: *const u8, dst: *mut u8, len: usize) {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
        let head = dst.align_offset(16).min(len);
        let body_end = head + (len - head) / 16 * 16;
        // SAFETY: every access below stays within `[0, len)` of both pointers (the caller's
        // ranges); `_mm_stream_si128` gets 16-byte-aligned addresses (from `align_offset`),
        // `_mm_loadu_si128` accepts any alignment, and SSE2 is part of the x86-64 baseline.
        unsafe {
            std::ptr::copy_nonoverlapping(src, dst, head);
            let mut at = head;
            while at < body_end {
                let v = _mm_loadu_si128(src.add(at).cast::<__m128i>());
                _mm_stream_si128(dst.add(at).cast::<__m128i>(), v);
                at += 16;
            }
            std::ptr::copy_nonoverlapping(src.add(body_end), dst.add(body_end), len - body_end);
        }
    }

    #[cfg(not(target_arch = "x86_64"))]
    unsafe fn row(src: *const u8, dst: *mut u8, len: usize) {
        // SAFETY: forwarded from the caller.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, len) }
    }
}

/// 32-byte streaming stores (AVX).
#[cfg(target_arch = "x86_64")]
struct Avx;

#[cfg(target_arch = "x86_64")]
impl RowStreamer for Avx {
    unsafe fn row(src: *const u8, dst: *mut u8, len: usize) {
        // SAFETY: forwarded from the caller, who promises AVX.
        unsafe { avx_row(src, dst, len) }
    }
}

/// [`Avx`]'s row: ordinary stores up to 16-byte alignment, one 16-byte streaming store up to
/// 32-byte alignment, 32-byte streaming stores, then the same in reverse for the tail.
///
/// # Safety
/// `len` bytes at `src` readable, at `dst` writable, not overlapping; the CPU has AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn avx_row(src: *const u8, dst: *mut u8, len: usize) {
    use std::arch::x86_64::{
        __m128i, __m256i, _mm256_loadu_si256, _mm256_stream_si256, _mm_loadu_si128,
        _mm_stream_si128,
    };
    let head = dst.align_offset(16).min(len);
    let wide_start =
        (head + dst.wrapping_add(head).align_offset(32)).min(head + (len - head) / 16 * 16);
    let wide_end = wide_start + (len - wide_start) / 32 * 32;
    let body_end = wide_end + (len - wide_end) / 16 * 16;
    // SAFETY: every access stays within `[0, len)` of both pointers (the caller's ranges):
    // `head ≤ wide_start ≤ wide_end ≤ body_end ≤ len`, and each step below moves whole 16- or
    // 32-byte pieces inside those bounds. Streaming stores get addresses aligned to their width
    // (16 from `head` on, 32 from `wide_start` to `wide_end`); the loads accept any alignment;
    // the caller promises AVX.
    unsafe {
        std::ptr::copy_nonoverlapping(src, dst, head);
        let narrow = |at: usize| {
            let v = _mm_loadu_si128(src.add(at).cast::<__m128i>());
            _mm_stream_si128(dst.add(at).cast::<__m128i>(), v);
        };
        let mut at = head;
        while at < wide_start {
            narrow(at);
            at += 16;
        }
        while at < wide_end {
            let v = _mm256_loadu_si256(src.add(at).cast::<__m256i>());
            _mm256_stream_si256(dst.add(at).cast::<__m256i>(), v);
            at += 32;
        }
        while at < body_end {
            narrow(at);
            at += 16;
        }
        std::ptr::copy_nonoverlapping(src.add(body_end), dst.add(body_end), len - body_end);
    }
}

/// Orders this thread's streaming stores before everything that follows (`mfence` on x86-64).
pub(crate) fn fence() {
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
}

#[cfg(test)]
mod tests {
    use super::*;

    type Routine = unsafe extern "C" fn(*const u8, *mut u8, i64, i64, i64, i64);

    /// Three rows of every length up to past two 32-byte stores, at every destination offset
    /// within 32 bytes, land where they belong and nothing else changes.
    fn check_routine(routine: Routine) {
        let src: Vec<u8> = (0..400).map(|i| (i * 7 % 251) as u8).collect();
        for offset in 0..32 {
            for row_bytes in [0, 1, 15, 16, 17, 31, 32, 33, 48, 64, 77, 96, 100] {
                let mut dst = vec![0xEEu8; 3 * 110 + 32];
                // SAFETY: 3 rows of at most 100 bytes, 110 bytes apart in `src` (400 bytes) and
                // in `dst` from `offset` < 32 (362 bytes); distinct allocations. The routines
                // under test are the baseline one and those the CPU has the features of.
                unsafe {
                    routine(
                        src.as_ptr(),
                        dst.as_mut_ptr().add(offset),
                        3,
                        row_bytes,
                        110,
                        110,
                    )
                };
                fence();
                for (i, &got) in dst.iter().enumerate() {
                    let (row, col) = (i.wrapping_sub(offset) / 110, i.wrapping_sub(offset) % 110);
                    let inside = i >= offset && row < 3 && col < row_bytes as usize;
                    let want = if inside { src[i - offset] } else { 0xEE };
                    assert_eq!(got, want, "offset {offset} row bytes {row_bytes} byte {i}");
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
        // SAFETY: the host's routine is a function of this signature (what the JIT calls).
        check_routine(unsafe { std::mem::transmute::<*const u8, Routine>(stream_rows_routine()) });
    }
}
