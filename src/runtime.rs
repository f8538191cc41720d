//! Routines the generated code calls: stores that bypass the cache (non-temporal stores), which
//! Cranelift cannot emit. Kernels for large destinations finish a block of the destination in a
//! small staging buffer (or read a contiguous source run directly) and hand it to
//! [`stream_rows`], once per block, which writes it out in 16-byte streaming stores.

/// The symbol under which the JIT module resolves [`stream_rows`].
pub(crate) const STREAM_ROWS: &str = "relayout_stream_rows";

/// Copies `rows` rows of `row_bytes` bytes from `src` (rows `src_stride` bytes apart) to `dst`
/// (rows `dst_stride` bytes apart), with streaming stores for the 16-byte-aligned part of each
/// destination row and ordinary stores for its unaligned head and tail. The stores are weakly
/// ordered: the caller runs [`fence`] before it lets anyone else read the destination.
///
/// # Safety
/// For every `r < rows`, the `row_bytes` bytes at `src + r·src_stride` must be readable, those at
/// `dst + r·dst_stride` writable, and the two must not overlap.
pub(crate) unsafe extern "C" fn stream_rows(
    src: *const u8,
    dst: *mut u8,
    rows: i64,
    row_bytes: i64,
    src_stride: i64,
    dst_stride: i64,
) {
    for r in 0..rows {
        // SAFETY: row `r` of each side is inside the ranges the caller vouches for; the offsets
        // fit in `isize` because they address memory that exists.
        unsafe {
            stream_row(
                src.offset((r * src_stride) as isize),
                dst.offset((r * dst_stride) as isize),
                row_bytes as usize,
            )
        }
    }
}

/// One row of [`stream_rows`].
///
/// # Safety
/// `len` bytes at `src` readable, at `dst` writable, not overlapping.
#[cfg(target_arch = "x86_64")]
unsafe fn stream_row(src: *const u8, dst: *mut u8, len: usize) {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
    let head = dst.align_offset(16).min(len);
    let body_end = head + (len - head) / 16 * 16;
    // SAFETY: every access below stays within `[0, len)` of both pointers (the caller's ranges);
    // `_mm_stream_si128` gets 16-byte-aligned addresses (from `align_offset`), `_mm_loadu_si128`
    // accepts any alignment, and SSE2 is part of the x86-64 baseline.
    unsafe {
        if head > 0 {
            std::ptr::copy_nonoverlapping(src, dst, head);
        }
        let mut at = head;
        while at < body_end {
            let v = _mm_loadu_si128(src.add(at).cast::<__m128i>());
            _mm_stream_si128(dst.add(at).cast::<__m128i>(), v);
            at += 16;
        }
        if body_end < len {
            std::ptr::copy_nonoverlapping(src.add(body_end), dst.add(body_end), len - body_end);
        }
    }
}

/// One row of [`stream_rows`]: an ordinary copy where there are no streaming stores.
///
/// # Safety
/// `len` bytes at `src` readable, at `dst` writable, not overlapping.
#[cfg(not(target_arch = "x86_64"))]
unsafe fn stream_row(src: *const u8, dst: *mut u8, len: usize) {
    // SAFETY: forwarded from the caller.
    unsafe { std::ptr::copy_nonoverlapping(src, dst, len) }
}

/// Orders this thread's streaming stores before everything that follows (`mfence` on x86-64).
pub(crate) fn fence() {
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_land_where_they_belong_at_any_alignment() {
        let src: Vec<u8> = (0..=255).collect();
        for offset in 0..16 {
            for row_bytes in [0, 1, 15, 16, 17, 64, 77] {
                let mut dst = vec![0xEEu8; 3 * 100 + 100];
                // SAFETY: 3 rows of at most 77 bytes, 80 bytes apart in `src` (256 bytes) and
                // 100 apart from `offset` in `dst` (400 bytes); distinct allocations.
                unsafe {
                    stream_rows(
                        src.as_ptr(),
                        dst.as_mut_ptr().add(offset),
                        3,
                        row_bytes,
                        80,
                        100,
                    )
                };
                fence();
                for r in 0..3usize {
                    for i in 0..100usize {
                        let want = if i < row_bytes as usize {
                            src[80 * r + i]
                        } else {
                            0xEE
                        };
                        assert_eq!(
                            dst[offset + 100 * r + i],
                            want,
                            "offset {offset} row {r} byte {i}"
                        );
                    }
                }
            }
        }
    }
}
