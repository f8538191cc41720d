//! Where a relayout's buffers lie in their cache lines.

/// Bytes past the start of a cache line at which the lowest address of each buffer lies: 0 at a
/// line's start (or where unknown). A transpose cuts its rows into runs and blocks counted from
/// the buffer's start; planned for these offsets ([`Plan::with_tactics_at`]), it moves the
/// elements up to each long row's next line on their own, so that its blocks read and its runs
/// write whole lines. A `Vec` of more than 128 KiB from glibc's allocator starts 16 bytes past
/// a page, and so does a NumPy array's data.
///
/// ```
/// use relayout::plan::LineOffsets;
///
/// let at = LineOffsets::of(0x7f00_0000_1010 as *const u8, 0x7f00_0010_0040 as *const u8, 64);
/// assert_eq!(at, LineOffsets { src: 16, dst: 0 });
/// assert!(LineOffsets::default().is_aligned());
/// ```
///
/// [`Plan::with_tactics_at`]: crate::plan::Plan::with_tactics_at
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct LineOffsets {
    /// The source buffer's offset in its line, in bytes.
    pub src: usize,
    /// The destination buffer's offset in its line, in bytes.
    pub dst: usize,
}

impl LineOffsets {
    /// The offsets of the buffers at `src` and `dst` in lines of `line_bytes` (at least 1).
    pub fn of(src: *const u8, dst: *const u8, line_bytes: usize) -> LineOffsets {
        let line = line_bytes.max(1);
        LineOffsets {
            src: src as usize % line,
            dst: dst as usize % line,
        }
    }

    /// Whether both buffers start a line.
    pub fn is_aligned(self) -> bool {
        self == LineOffsets::default()
    }

    /// These offsets in lines of `line_bytes` (whole lines dropped).
    pub(crate) fn within(self, line_bytes: usize) -> LineOffsets {
        let line = line_bytes.max(1);
        LineOffsets {
            src: self.src % line,
            dst: self.dst % line,
        }
    }
}
