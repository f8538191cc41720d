//! Prefetch hints, which Cranelift cannot emit: asking the CPU for a cache line before the
//! code reads or writes it. A hint accesses no memory architecturally and does not fault on any
//! address, so any address will do; where the architecture has none, they do nothing.

/// How far ahead of their stores, in bytes along the rows they write, the routines that ask
/// for lines ahead ask: the row copies of [`LargeWrites::Prefetched`] (in the order they copy)
/// the block transposes of [`TileStores::Ahead`] (along each destination row) and the zips and
/// unzips of [`ZipWrite::Prefetched`] (by [`super::ask_ahead_to_write`]). A store into
/// a line that is not in the cache waits for the line to be read first; asked for this far
/// ahead, those reads overlap the copy. On a 2-core Intel Xeon VM (family 6, model 85), a C
/// loop of 16-byte loads and stores copied 64 MiB at 5.3 GB/s (glibc's `memcpy` 5.1, streaming
/// stores 4.6–4.9), at 5.8–6.1 asking for the destination's lines 256 bytes to 4 KiB ahead
/// (2 KiB best), and at 6.1–6.3 asking 2–4 KiB ahead for the source's too.
///
/// [`LargeWrites::Prefetched`]: crate::plan::LargeWrites::Prefetched
/// [`TileStores::Ahead`]: super::TileStores::Ahead
/// [`ZipWrite::Prefetched`]: crate::plan::ZipWrite::Prefetched
pub(super) const AHEAD_BYTES: usize = 2048;

/// What a prefetch hint asks the CPU to do with a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ask {
    /// Read it into the cache (`prefetcht0`).
    Read,
    /// Read it into the L2 cache, not the L1 (`prefetcht1`).
    ReadIntoL2,
    /// Read it into the cache to be written (`prefetchw` where the CPU has it, `prefetcht0`
    /// otherwise).
    Write,
}

/// Asks for the line at `at` as `what` says (inlined with a constant `what`, one instruction).
#[inline(always)]
pub(super) fn ask(what: Ask, at: *const u8) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_ET0, _MM_HINT_T0, _MM_HINT_T1};
        let at = at.cast::<i8>();
        // SAFETY: a prefetch is a hint: it accesses no memory architecturally and does not
        // fault on any address.
        unsafe {
            match what {
                Ask::Read => _mm_prefetch::<_MM_HINT_T0>(at),
                Ask::ReadIntoL2 => _mm_prefetch::<_MM_HINT_T1>(at),
                Ask::Write => _mm_prefetch::<_MM_HINT_ET0>(at),
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (what, at);
}
