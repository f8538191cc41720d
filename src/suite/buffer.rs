//! Benchmark buffers that start on a page boundary.

use std::ops::{Deref, DerefMut};

/// Bytes of a memory page, the alignment of a [`PageAligned`] buffer.
const PAGE_BYTES: usize = 4096;

/// A buffer of `len` elements whose first element starts a 4 KiB memory page.
///
/// The benchmarks keep every contender's data in these, so that no contender's speed depends on
/// where the allocator happened to put a buffer. Where two buffers start relative to each other
/// can matter a lot: on a 2-core AMD EPYC (Zen 3) VM with glibc 2.36, `memcpy` of 16 KiB moved
/// 3 GB/s when the destination started 16 bytes past a page offset of the source (as two
/// consecutive 16 KiB heap allocations do) and 90 GB/s or more at every 32-byte multiple tried.
///
/// ```
/// use relayout::suite::PageAligned;
///
/// let buf = PageAligned::from_fn(1000, |i| i as u16);
/// assert_eq!(buf.len(), 1000);
/// assert_eq!(buf[999], 999);
/// assert_eq!(buf.as_ptr() as usize % 4096, 0);
/// ```
#[derive(Debug, Clone)]
pub struct PageAligned<T> {
    storage: Vec<T>,
    start: usize,
    len: usize,
}

impl<T: Copy> PageAligned<T> {
    /// A buffer whose element `i` is `f(i)`.
    ///
    /// # Panics
    /// As `Vec::with_capacity` does, when `len` elements and a page more cannot be allocated.
    pub fn from_fn(len: usize, f: impl FnMut(usize) -> T) -> PageAligned<T> {
        PageAligned::from_fn_past(len, 0, f)
    }

    /// [`PageAligned::from_fn`] with the first element `past` bytes after the start of a page
    /// (rounded down to a whole element, and taken modulo the page): where a `Vec` of more than
    /// 128 KiB from glibc's allocator starts (16 bytes past a page), for instance.
    ///
    /// ```
    /// use relayout::suite::PageAligned;
    ///
    /// let buf = PageAligned::from_fn_past(100_000, 16, |i| i as f32);
    /// assert_eq!(buf.as_ptr() as usize % 4096, 16);
    /// assert_eq!(buf[5], 5.0);
    /// ```
    pub fn from_fn_past(len: usize, past: usize, mut f: impl FnMut(usize) -> T) -> PageAligned<T> {
        let size = std::mem::size_of::<T>().max(1);
        let past = past % PAGE_BYTES / size;
        let slack = PAGE_BYTES.div_ceil(size) + past;
        let mut storage: Vec<T> = Vec::with_capacity(len.saturating_add(slack));
        let start = (storage.as_ptr().align_offset(PAGE_BYTES) + past)
            .min(slack)
            .min(storage.capacity() - len);
        storage.extend((0..start + len).map(|i: usize| f(i.saturating_sub(start))));
        PageAligned {
            storage,
            start,
            len,
        }
    }

    /// A buffer of `len` copies of `value`.
    pub fn filled(len: usize, value: T) -> PageAligned<T> {
        PageAligned::from_fn(len, |_| value)
    }

    /// [`PageAligned::filled`], `past` bytes after the start of a page (see
    /// [`PageAligned::from_fn_past`]).
    pub fn filled_past(len: usize, past: usize, value: T) -> PageAligned<T> {
        PageAligned::from_fn_past(len, past, |_| value)
    }
}

impl<T> Deref for PageAligned<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        &self.storage[self.start..self.start + self.len]
    }
}

impl<T> DerefMut for PageAligned<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.storage[self.start..self.start + self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_element_size_starts_a_page() {
        fn check<T: Copy + PartialEq + std::fmt::Debug>(value: T) {
            for len in [0, 1, 17, 5000] {
                let buf = PageAligned::filled(len, value);
                assert_eq!(buf.len(), len);
                assert!(buf.iter().all(|&x| x == value));
                if len > 0 {
                    assert_eq!(buf.as_ptr() as usize % PAGE_BYTES, 0);
                }
            }
        }
        check(1u8);
        check(2u16);
        check(3u32);
        check(4u64);
    }

    #[test]
    fn buffers_start_past_a_page_as_asked() {
        // (bytes asked, element size, bytes past the page): whole elements, within a page.
        for (past, size, want) in [(16, 4, 16), (18, 4, 16), (4096 + 48, 8, 48), (7, 1, 7)] {
            let check = |at: usize, len: usize| {
                assert_eq!(
                    at % PAGE_BYTES,
                    want,
                    "{past} bytes of {size}-byte elements"
                );
                assert!(len > 0);
            };
            match size {
                1 => {
                    let b = PageAligned::from_fn_past(5000, past, |i| i as u8);
                    check(b.as_ptr() as usize, b.len());
                    assert_eq!(b[4999], (4999 % 256) as u8);
                }
                4 => {
                    let b = PageAligned::filled_past(5000, past, 3u32);
                    check(b.as_ptr() as usize, b.len());
                    assert!(b.iter().all(|&x| x == 3));
                }
                _ => {
                    let b = PageAligned::from_fn_past(5000, past, |i| i as u64);
                    check(b.as_ptr() as usize, b.len());
                    assert_eq!(b[4999], 4999);
                }
            }
        }
        assert!(PageAligned::from_fn_past(0, 16, |i| i as u32).is_empty());
    }

    #[test]
    fn elements_come_from_their_index() {
        let mut buf = PageAligned::from_fn(300, |i| i as u32 * 3);
        assert_eq!(buf[..4], [0, 3, 6, 9]);
        buf[0] = 7;
        assert_eq!(buf[0], 7);
    }
}
