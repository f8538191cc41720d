//! Copies of rows with ordinary stores, which keep the destination in the cache: the runs of
//! staged blocks too small to stream ([`store_rows_routine`]), and large copies that ask for the
//! lines they are about to read and write a little ahead of their loads and stores
//! ([`store_rows_ahead_routine`]).

use super::hints::{ask, Ask, AHEAD_BYTES};
use super::{rows_routine, Rows, RowsJob};

/// The routine that copies rows with ordinary stores.
///
/// Staged transposes too small to stream ([`Flush::Copied`]) call it once per block to copy
/// the block's runs out, so that their code moves nothing itself and compiles with the
/// single-pass register allocator (the 64³ f32 reversal compiled in half the time).
///
/// [`Flush::Copied`]: crate::plan::Flush::Copied
pub(crate) fn store_rows_routine() -> *const u8 {
    rows_routine::<StoreRows<false>> as *const u8
}

/// The routine that copies rows with ordinary stores and asks for the lines of source and
/// destination [`AHEAD_BYTES`] ahead of its loads and stores: copies of a
/// line or more into large destinations call it when large writes are
/// [`LargeWrites::Prefetched`].
///
/// [`LargeWrites::Prefetched`]: crate::plan::LargeWrites::Prefetched
pub(crate) fn store_rows_ahead_routine() -> *const u8 {
    rows_routine::<StoreRows<true>> as *const u8
}

/// Copies `rows` rows of `row_bytes` bytes from `src` (rows `src_stride` bytes apart) to `dst`
/// (rows `dst_stride` bytes apart) with ordinary stores, which keep the destination in the
/// cache; with `AHEAD`, asking for the lines [`AHEAD_BYTES`] further on as it goes ([`Ahead`]).
///
/// # Safety
/// For every `r < rows`, the `row_bytes` bytes at `src + r·src_stride` must be readable, those at
/// `dst + r·dst_stride` writable, and the two must not overlap.
struct StoreRows<const AHEAD: bool>;

impl<const AHEAD: bool> RowsJob for StoreRows<AHEAD> {
    unsafe fn run(job: Rows) {
        if job.row_bytes == 0 {
            return;
        }
        let mut ahead = Ahead::new(&job);
        for r in 0..job.rows as isize {
            // SAFETY: the caller guarantees row `r` readable at its source, writable at its
            // destination, and the two apart.
            unsafe {
                store_row(
                    job.src.offset(r * job.src_stride),
                    job.dst.offset(r * job.dst_stride),
                    job.row_bytes,
                    |bytes| {
                        if AHEAD {
                            ahead.ask_and_pass(bytes)
                        }
                    },
                )
            };
        }
    }
}

/// Copies `len` bytes from `src` to `dst`: 64 bytes at a time in four 16-byte vectors, the rest
/// by `memcpy`, telling `before` how many bytes it is about to copy before each piece. The runs
/// of staged blocks are a few hundred bytes, where a `memcpy` call per run cost more than the
/// copy: on a 2-core Intel Xeon VM (family 6, model 85) the 64³ f32 reversal moved 5.3–5.5 GB/s
/// with a call per run, 6.3–6.9 with vector copies emitted into the kernel, and 6.5–6.9 with
/// these.
///
/// # Safety
/// `len` bytes readable at `src` and writable at `dst`, the two apart.
#[inline(always)]
unsafe fn store_row(src: *const u8, dst: *mut u8, len: usize, mut before: impl FnMut(usize)) {
    const CHUNK: usize = 64;
    let whole = len - len % CHUNK;
    #[cfg(target_arch = "x86_64")]
    for at in (0..whole).step_by(CHUNK) {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_storeu_si128};
        before(CHUNK);
        // SAFETY: `at + CHUNK <= len`, inside both rows; the loads and stores are unaligned.
        unsafe {
            let (s, d) = (src.add(at).cast::<__m128i>(), dst.add(at).cast::<__m128i>());
            let v = [0, 1, 2, 3].map(|i| _mm_loadu_si128(s.add(i)));
            for (i, v) in v.into_iter().enumerate() {
                _mm_storeu_si128(d.add(i), v);
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let whole = 0;
    if whole < len {
        before(len - whole);
        // SAFETY: the bytes from `whole` to `len`, inside both rows.
        unsafe { std::ptr::copy_nonoverlapping(src.add(whole), dst.add(whole), len - whole) };
    }
}

/// A place [`AHEAD_BYTES`] ahead of a row copy, in the order the copy goes (row after row):
/// row `row`, `at` bytes into it. Past the call's last row it goes on, on each side, only where
/// the call's rows are one contiguous run there (a single row, or rows a row apart): the next
/// call most likely continues that run.
struct Ahead<'a> {
    job: &'a Rows,
    row: usize,
    at: usize,
}

impl<'a> Ahead<'a> {
    /// The place [`AHEAD_BYTES`] from the start of `job` (whose rows are not empty).
    fn new(job: &'a Rows) -> Ahead<'a> {
        Ahead {
            job,
            row: AHEAD_BYTES / job.row_bytes,
            at: AHEAD_BYTES % job.row_bytes,
        }
    }

    /// Asks for the lines of source and destination at this place, then moves `bytes` on.
    #[inline(always)]
    fn ask_and_pass(&mut self, bytes: usize) {
        let job = self.job;
        // The place's offset on a side whose rows are `stride` bytes apart; past the last row,
        // only if they continue one another.
        let offset = |stride: isize| {
            let row_start = if self.row < job.rows {
                (self.row as isize).wrapping_mul(stride)
            } else if job.rows == 1 || stride == job.row_bytes as isize {
                let last = (job.rows as isize - 1).wrapping_mul(stride);
                last.wrapping_add(((self.row + 1 - job.rows) * job.row_bytes) as isize)
            } else {
                return None;
            };
            Some(row_start.wrapping_add(self.at as isize))
        };
        if let Some(offset) = offset(job.src_stride) {
            ask(Ask::Read, job.src.wrapping_offset(offset));
        }
        if let Some(offset) = offset(job.dst_stride) {
            ask(Ask::Write, job.dst.wrapping_offset(offset));
        }
        self.at += bytes;
        while self.at >= job.row_bytes {
            self.at -= job.row_bytes;
            self.row += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row's bytes arrive at their place, whatever their length and stride, and nothing
    /// between the rows is written, with and without asking ahead.
    #[test]
    fn stored_rows_copy_exactly_their_bytes() {
        let src: Vec<u8> = (0..4096).map(|i| (i * 7 + 3) as u8).collect();
        for len in [0, 1, 15, 16, 63, 64, 65, 100, 256, 259] {
            for (src_stride, dst_stride) in [(len as i64, len as i64), (300, 512), (-300, 400)] {
                for ahead in [false, true] {
                    let rows = 5;
                    let mut dst = vec![0xa5u8; 4096];
                    let (s0, d0) = (if src_stride < 0 { 2048 } else { 0 }, 8);
                    let routine = if ahead {
                        rows_routine::<StoreRows<true>>
                    } else {
                        rows_routine::<StoreRows<false>>
                    };
                    // SAFETY: five rows of at most 259 bytes, at most 512 bytes apart, start
                    // at 8 or 2048 ± 1200 bytes: all inside both 4096-byte buffers.
                    unsafe {
                        routine(
                            src.as_ptr().add(s0),
                            dst.as_mut_ptr().add(d0),
                            rows,
                            len as i64,
                            src_stride,
                            dst_stride,
                        )
                    };
                    let mut expected = vec![0xa5u8; 4096];
                    for r in 0..rows {
                        let s = (s0 as i64 + r * src_stride) as usize;
                        let d = (d0 as i64 + r * dst_stride) as usize;
                        expected[d..d + len].copy_from_slice(&src[s..s + len]);
                    }
                    assert!(
                        dst == expected,
                        "len {len}, strides {src_stride}, {dst_stride}, ahead {ahead}"
                    );
                }
            }
        }
    }

    /// The place ahead stays [`AHEAD_BYTES`] ahead of the bytes passed, in row order, whatever
    /// the rows' length.
    #[test]
    fn the_place_ahead_keeps_its_distance() {
        for row_bytes in [1, 64, 100, 2048, 5000] {
            let job = Rows::new(std::ptr::null(), std::ptr::null_mut(), [3, row_bytes, 0, 0]);
            let mut ahead = Ahead::new(&job);
            let mut passed = 0;
            for bytes in [64, 64, 17, 64, 1, 64].into_iter().cycle().take(200) {
                let place = ahead.row * row_bytes as usize + ahead.at;
                assert_eq!(place, passed + AHEAD_BYTES, "rows of {row_bytes}");
                assert!(ahead.at < row_bytes as usize);
                ahead.ask_and_pass(bytes);
                passed += bytes;
            }
        }
    }
}
