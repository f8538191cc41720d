//! Buffers fenced by inaccessible pages, so that a kernel that reads or writes one element past
//! either end of its buffer faults (and the fault kills the test process, failing the test).
//!
//! [`Guarded`] maps its elements between two `PROT_NONE` pages, either flush against the page
//! after it ([`Edge::End`]: the last byte is the last byte of a page) or right after the page
//! before it ([`Edge::Start`]). [`check_guarded`] runs a compiled relayout with both buffers
//! guarded, at both edges, and compares the destination with the reference bit for bit.
//!
//! Shared with the fuzz targets (`fuzz/`), which include this file with `#[path]`.
#![allow(dead_code)]

use relayout::plan::Tactics;
use relayout::Target;
use relayout::{compile_relayout_with, reference, Element, Layout, Options};

/// Which end of the buffer touches an inaccessible page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edge {
    /// The byte after the last element is the first byte of a `PROT_NONE` page.
    End,
    /// The byte before the first element is the last byte of a `PROT_NONE` page.
    Start,
}

/// Both edges, for loops.
pub const EDGES: [Edge; 2] = [Edge::End, Edge::Start];

/// `len` elements of `T` in their own mapping, between two `PROT_NONE` pages.
pub struct Guarded<T> {
    map: *mut libc::c_void,
    map_len: usize,
    data: *mut T,
    len: usize,
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions; _SC_PAGESIZE is always supported on Linux.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    assert!(size > 0, "sysconf(_SC_PAGESIZE) failed");
    size as usize
}

impl<T: Element> Guarded<T> {
    /// A guarded buffer of `len` elements, every one set to `fill`.
    pub fn new(len: usize, edge: Edge, fill: T) -> Guarded<T> {
        let page = page_size();
        let bytes = len * std::mem::size_of::<T>();
        let data_pages = bytes.div_ceil(page).max(1);
        let map_len = (data_pages + 2) * page;
        // SAFETY: an anonymous private mapping at an address of the kernel's choosing; no
        // existing memory is affected. The result is checked against MAP_FAILED below.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert!(map != libc::MAP_FAILED, "mmap of {map_len} bytes failed");
        let base = map.cast::<u8>();
        // SAFETY: both ranges are whole pages inside the mapping just created (the first page and
        // the last page), so mprotect only changes memory this buffer owns.
        unsafe {
            let first = libc::mprotect(base.cast(), page, libc::PROT_NONE);
            let last = libc::mprotect(base.add(map_len - page).cast(), page, libc::PROT_NONE);
            assert!(first == 0 && last == 0, "mprotect failed");
        }
        let offset = match edge {
            Edge::Start => page,
            Edge::End => page + data_pages * page - bytes,
        };
        // SAFETY: `offset + bytes <= map_len - page`, so the data lies inside the accessible
        // middle pages. `offset` is a multiple of `size_of::<T>()` (pages and `bytes` are), so
        // the pointer is aligned for `T` (sizes 1, 2, 4, 8 divide the page size).
        let data = unsafe { base.add(offset) }.cast::<T>();
        let mut buffer = Guarded {
            map,
            map_len,
            data,
            len,
        };
        buffer.as_mut_slice().fill(fill);
        buffer
    }

    /// A guarded copy of `values`.
    pub fn from_slice(values: &[T], edge: Edge) -> Guarded<T> {
        let mut buffer = Guarded::new(values.len(), edge, T::from_bits(0));
        buffer.as_mut_slice().copy_from_slice(values);
        buffer
    }

    /// The elements.
    pub fn as_slice(&self) -> &[T] {
        // SAFETY: `data` points to `len` initialized (filled in `new`), aligned elements inside
        // the mapping, which lives as long as `self`; `&self` forbids mutation meanwhile.
        unsafe { std::slice::from_raw_parts(self.data, self.len) }
    }

    /// The elements, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as in `as_slice`; `&mut self` makes this the only reference to the elements.
        unsafe { std::slice::from_raw_parts_mut(self.data, self.len) }
    }
}

impl<T> Guarded<T> {
    /// Reads the byte just outside the buffer at `edge`: the first byte of the page after it
    /// ([`Edge::End`]) or the last byte of the page before it ([`Edge::Start`]). That byte is in
    /// a `PROT_NONE` page when the buffer was made at that edge, so this faults: it is how the
    /// tests prove the fence is there.
    pub fn read_outside(&self, edge: Edge) -> u8 {
        let bytes = self.len * std::mem::size_of::<T>();
        let data = self.data.cast::<u8>();
        // SAFETY: the address is inside this buffer's own mapping (one of its two guard pages
        // when the buffer sits at `edge`, an accessible padding byte otherwise), so the read
        // touches no other allocation; a read of a guard page faults, which is the point.
        unsafe {
            let outside = match edge {
                Edge::End => data.add(bytes),
                Edge::Start => data.sub(1),
            };
            std::ptr::read_volatile(outside)
        }
    }
}

impl<T> Drop for Guarded<T> {
    fn drop(&mut self) {
        // SAFETY: `map` and `map_len` are exactly the mapping created in `new`, unmapped once;
        // no slice borrowed from `self` outlives it.
        unsafe { libc::munmap(self.map, self.map_len) };
    }
}

/// Source data whose element `i` is a distinct pattern for each `i` (for any element size).
pub fn pattern<T: Element>(len: usize) -> Vec<T> {
    (0..len as u64)
        .map(|i| T::from_bits(i.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17) ^ i))
        .collect()
}

/// The marker a destination is filled with before a run, so untouched slots are compared too.
pub const MARKER: u64 = 0xA5A5_A5A5_A5A5_A5A5;

/// Tactics and a target to pin a kernel to, in place of the defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pin {
    pub tactics: Tactics,
    pub target: Target,
}

impl Pin {
    /// These tactics on the host.
    pub fn tactics(tactics: Tactics) -> Pin {
        Pin {
            tactics,
            target: Target::host(),
        }
    }

    /// The default tactics on `target`.
    pub fn defaults_on(target: Target) -> Pin {
        Pin {
            tactics: Tactics::default(),
            target,
        }
    }

    /// Candidate `k` of `Tactics::CANDIDATES` on a target that streams from the first byte and
    /// takes the runtime's tiles for every transpose, so that streamed copies and staged,
    /// streamed transposes, zips and unzips, and the runtime's 32-byte tiles, run on small
    /// layouts too.
    pub fn eager(k: usize) -> Pin {
        Pin {
            tactics: Tactics::CANDIDATES[k % Tactics::CANDIDATES.len()],
            target: Target {
                stream_min_bytes: 0,
                emitted_tiles_max_bytes: 0,
                ..Target::host()
            },
        }
    }

    /// `options` with this pin.
    pub fn apply(self, options: Options) -> Options {
        options.tactics(self.tactics).target(self.target)
    }
}

/// How to run a relayout in [`check_guarded`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    /// Bytes per element: 1, 2, 4 or 8.
    pub elem_size: usize,
    /// Write this pattern's bits to the padding slots.
    pub pad: Option<u64>,
    /// Threads for `Options::threads`.
    pub threads: usize,
    /// Tactics and target to pin, or `None` for the defaults.
    pub pin: Option<Pin>,
}

/// Compiles `src → dst` and runs it with both buffers guarded at each [`Edge`], comparing the
/// destination with the reference bit for bit. A stray access faults; a wrong value is an `Err`
/// that names the layouts.
pub fn check_guarded(src: &Layout, dst: &Layout, run: Run) -> Result<(), String> {
    match run.elem_size {
        1 => check_guarded_as::<u8>(src, dst, run),
        2 => check_guarded_as::<u16>(src, dst, run),
        4 => check_guarded_as::<u32>(src, dst, run),
        8 => check_guarded_as::<u64>(src, dst, run),
        n => Err(format!("no element type of {n} bytes")),
    }
}

fn check_guarded_as<T: Element + PartialEq + std::fmt::Debug>(
    src: &Layout,
    dst: &Layout,
    run: Run,
) -> Result<(), String> {
    let what = || format!("{src} -> {dst} with {run:?}");
    let mut options = Options::new()
        .elem_size(std::mem::size_of::<T>())
        .threads(run.threads)
        .min_bytes_per_thread(1);
    if let Some(bits) = run.pad {
        options = options.pad_bits(bits);
    }
    if let Some(pin) = run.pin {
        options = pin.apply(options);
    }
    let kernel =
        compile_relayout_with(src, dst, options).map_err(|e| format!("compile {}: {e}", what()))?;
    let a: Vec<T> = pattern(src.cosize());
    let marker = T::from_bits(MARKER);
    let mut want = vec![marker; dst.cosize()];
    reference::relayout(src, &a, dst, &mut want, run.pad.map(T::from_bits))
        .map_err(|e| format!("reference {}: {e}", what()))?;
    for edge in EDGES {
        let input = Guarded::from_slice(&a, edge);
        let mut output = Guarded::new(dst.cosize(), edge, marker);
        kernel
            .run(input.as_slice(), output.as_mut_slice())
            .map_err(|e| format!("run {}: {e}", what()))?;
        if output.as_slice() != want.as_slice() {
            let first = (0..want.len())
                .find(|&i| output.as_slice()[i] != want[i])
                .unwrap_or(0);
            return Err(format!(
                "{} at {edge:?}: first difference at slot {first}\nplan:\n{}\nwant {want:?}\ngot  {:?}",
                what(),
                kernel.plan(),
                output.as_slice()
            ));
        }
    }
    Ok(())
}
