//! The machine a plan is made for: the few facts of it that the planner and the code generator
//! both depend on, in one value.
//!
//! A [`Target`] is given to the planner (through [`Options::target`](crate::Options::target) or
//! [`Plan::with_tactics`](crate::plan::Plan::with_tactics)), recorded in the [`Plan`], and read
//! back by the code generator, so the two agree on the vector width, the cache line and the
//! staging limit by construction rather than by convention. Plans can be made for other
//! machines than the host (the planner's tests describe some), but only plans for 16-byte
//! vectors can be compiled: that is the widest vector Cranelift's x86-64 and aarch64 backends
//! emit.
//!
//! ```
//! use relayout::plan::Plan;
//! use relayout::{Layout, Target};
//!
//! // A machine whose streaming threshold is 0 bytes: even a small transpose streams.
//! let eager = Target {
//!     stream_min_bytes: 0,
//!     ..Target::host()
//! };
//! let (src, dst) = (Layout::row_major(&[64, 64])?, Layout::col_major(&[64, 64])?);
//! let plan = Plan::with_tactics(&src, &dst, 4, Default::default(), eager)?;
//! assert_eq!(plan.target(), eager);
//! # Ok::<(), relayout::Error>(())
//! ```
//!
//! [`Plan`]: crate::plan::Plan

use std::sync::OnceLock;

/// Bytes of the vectors Cranelift emits (its x86-64 and aarch64 backends are 128-bit only), and
/// so of every vector in generated code.
pub const CRANELIFT_VECTOR_BYTES: usize = 16;

/// Bytes of a cache line on the hosts relayout runs on (x86-64 and aarch64 cores): the unit the
/// runtime's streaming routine writes whole.
pub(crate) const HOST_LINE_BYTES: usize = 64;

/// The facts of a machine that decide a plan.
///
/// ```
/// use relayout::Target;
///
/// let host = Target::host();
/// assert_eq!(host.vector_bytes, 16);
/// assert_eq!(host.l1_way_bytes(), 4096);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Target {
    /// Bytes of one vector register; a tile kernel moves `vector_bytes / element size` lanes.
    pub vector_bytes: usize,
    /// Bytes of a cache line.
    pub line_bytes: usize,
    /// Sets of the L1 data cache (lines that lie a multiple of `l1_sets × line_bytes` apart
    /// compete for one set).
    pub l1_sets: usize,
    /// Destinations of at least this many bytes are large enough to write with streaming
    /// (non-temporal) stores, which skip the cache: worth it once the destination cannot stay in
    /// the cache anyway. The tests set 0 to run the streamed kernels on small layouts.
    pub stream_min_bytes: usize,
    /// The most bytes a staging buffer holds: it is a stack slot of the generated function, and
    /// blocks larger than this are written in place instead.
    pub stage_limit_bytes: usize,
    /// Transposes of 4- and 8-byte elements whose source and destination together hold at
    /// most this many bytes emit 16-byte register tiles into the kernel: they fit in the L1
    /// cache, where a call of the runtime's block transpose and its loops cost more than its
    /// tiles save. Larger ones take their tiles from the runtime where the CPU has AVX (32-byte
    /// tiles, one call per block). The tests set 0 to run the runtime's tiles on small
    /// layouts.
    pub emitted_tiles_max_bytes: usize,
}

impl Target {
    /// How many L1 sets the first lines of rows `row_bytes` apart fall into: 1 when they are a
    /// multiple of a way (`l1_sets × line_bytes`) apart, every set when they are not a whole
    /// number of lines apart.
    pub(crate) fn start_sets(self, row_bytes: usize) -> usize {
        let (line, sets) = (self.line_bytes.max(1), self.l1_sets.max(1));
        if !row_bytes.is_multiple_of(line) {
            return sets;
        }
        let mut lines = (row_bytes / line) % sets;
        let mut gcd = sets;
        while lines != 0 {
            (gcd, lines) = (lines, gcd % lines);
        }
        sets / gcd
    }

    /// The host as relayout models it: Cranelift's 16-byte vectors, 64-byte lines, an L1 data
    /// cache of 64 sets (4 KiB a way, as in the 32–48 KiB L1 caches of current x86-64 cores),
    /// streaming from a quarter of the last-level cache (see [`Target::stream_min_bytes_for`];
    /// 8 MiB where the cache's size is unknown), staging up to 64 KiB, the runtime's tiles for
    /// 4- and 8-byte transposes above 32 KiB of source and destination (on a 2-core Intel Xeon
    /// VM, family 6, model 167, `relayout bench --no-tune`, two alternating runs each: 64² f32
    /// ran at 0.21 of memcpy with emitted tiles against 0.17 with the runtime's, 128² at
    /// 0.52–0.53 against 0.63–0.65, 256² at 0.41–0.43 against 0.48).
    ///
    /// The cache's size is read once per process (on Linux, from sysfs).
    pub fn host() -> Target {
        static HOST: OnceLock<Target> = OnceLock::new();
        *HOST.get_or_init(|| Target {
            vector_bytes: CRANELIFT_VECTOR_BYTES,
            line_bytes: HOST_LINE_BYTES,
            l1_sets: 64,
            stream_min_bytes: Target::stream_min_bytes_for(last_level_cache_bytes()),
            stage_limit_bytes: 64 << 10,
            emitted_tiles_max_bytes: 32 << 10,
        })
    }

    /// The host's [`stream_min_bytes`](Target::stream_min_bytes) for a last-level cache of
    /// `llc_bytes` (`None`: unknown): a quarter of it, at most 36 MiB; 8 MiB if unknown.
    ///
    /// Streaming stores pay off once the destination would not stay in the cache anyway; while
    /// source and destination fit, ordinary stores leave the destination there for whatever
    /// reads it next, and cost no memory traffic at all. The quarter comes from 2-core AMD EPYC
    /// VMs (Zen 3, 4 and 5: 32 MiB of L3 per core complex), where streaming paid from 8 MiB of
    /// destination. The bound comes from a 2-core Intel Xeon VM (family 6, model 167) that
    /// reports the 480 MiB L3 of its host, of which it holds far less, and how much less
    /// changes by the hour (the host's other guests share it). 1-D copies in GB/s, ordinary
    /// stores against streaming ones (`relayout bench`, the threshold moved): one day 32 MiB
    /// 12.1 against 9.9, 36 MiB 11.1 against 10.7, 40 MiB 10.8 against 10.9, 44 MiB 9.3
    /// against 10.8; in a busy hour of another, 28 MiB 11.9 against 11.9, 32 MiB 10.9 against
    /// 12.3, 36 MiB 8.4 against 12.5, and in a quiet one, 36 MiB 10.8–12.2 against 10.4–11.2.
    /// Streaming holds its speed, ordinary stores fall off wherever the cache ends that hour.
    /// Transposes of 36.8 MiB went the same way, in GB/s, three alternating untuned runs each:
    /// busy, NHWC → NCHW with 12 channels 5.7–6.4 stored against 8.4–8.6 streamed, NCHW → NHWC
    /// with 3 channels 6.7–9.7 against 9.5–10.1; quiet, 8.6–9.1 against 8.4–8.6 and 10.1–12.2
    /// against 9.5–9.6, and NHWC → NCHW with 3 channels 11.9–12.4 against 8.5–9.1. From this
    /// bound on, tuning ([`Options::tune`](crate::Options::tune)) measures ordinary stores
    /// against streaming for every kernel where the relayout runs; below it nothing streams
    /// (the streamed blockings of transposes store their blocks in place there).
    ///
    /// ```
    /// use relayout::Target;
    ///
    /// assert_eq!(Target::stream_min_bytes_for(Some(32 << 20)), 8 << 20);
    /// assert_eq!(Target::stream_min_bytes_for(Some(480 << 20)), 36 << 20);
    /// assert_eq!(Target::stream_min_bytes_for(None), 8 << 20);
    /// ```
    pub const fn stream_min_bytes_for(llc_bytes: Option<usize>) -> usize {
        const MOST: usize = 36 << 20;
        const UNKNOWN: usize = 8 << 20;
        match llc_bytes {
            Some(bytes) if bytes / 4 < MOST => bytes / 4,
            Some(_) => MOST,
            None => UNKNOWN,
        }
    }

    /// Bytes of one way of the L1 data cache: lines this far apart fall into the same set.
    pub const fn l1_way_bytes(&self) -> usize {
        self.l1_sets * self.line_bytes
    }

    /// Elements of `elem_size` bytes in one vector.
    pub const fn lanes(&self, elem_size: usize) -> usize {
        self.vector_bytes / elem_size
    }
}

/// Bytes of the host's last-level cache, the largest data or unified cache of CPU 0 that sysfs
/// lists, if it lists one.
#[cfg(target_os = "linux")]
fn last_level_cache_bytes() -> Option<usize> {
    let caches = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache").ok()?;
    caches
        .filter_map(|entry| {
            let dir = entry.ok()?.path();
            let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
            let kind = read("type")?;
            (kind.trim() != "Instruction").then_some(())?;
            parse_cache_size(&read("size")?)
        })
        .max()
}

#[cfg(not(target_os = "linux"))]
fn last_level_cache_bytes() -> Option<usize> {
    None
}

/// A cache size as sysfs writes it: `32768K`, `2M` or a plain count of bytes.
fn parse_cache_size(text: &str) -> Option<usize> {
    let text = text.trim();
    let (digits, unit) = match text.strip_suffix(['K', 'k']) {
        Some(digits) => (digits, 1 << 10),
        None => match text.strip_suffix(['M', 'm']) {
            Some(digits) => (digits, 1 << 20),
            None => (text, 1),
        },
    };
    digits.parse::<usize>().ok()?.checked_mul(unit)
}

impl std::fmt::Display for Target {
    /// `vector 16, line 64, l1 sets 64, stream from 8388608, stage up to 65536, emitted tiles
    /// up to 32768` (bytes).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "vector {}, line {}, l1 sets {}, stream from {}, stage up to {}, emitted tiles up to {}",
            self.vector_bytes,
            self.line_bytes,
            self.l1_sets,
            self.stream_min_bytes,
            self.stage_limit_bytes,
            self.emitted_tiles_max_bytes
        )
    }
}

impl Default for Target {
    /// [`Target::host`].
    fn default() -> Target {
        Target::host()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_sizes_parse_as_sysfs_writes_them() {
        assert_eq!(parse_cache_size("32768K\n"), Some(32 << 20));
        assert_eq!(parse_cache_size("491520K"), Some(480 << 20));
        assert_eq!(parse_cache_size("2M"), Some(2 << 20));
        assert_eq!(parse_cache_size("4096"), Some(4096));
        assert_eq!(parse_cache_size("big"), None);
        assert_eq!(parse_cache_size(""), None);
        assert_eq!(parse_cache_size("99999999999999999999K"), None);
    }

    #[test]
    fn the_host_streams_from_a_quarter_of_its_cache_at_most_36_mib() {
        let host = Target::host();
        assert_eq!(
            host.stream_min_bytes,
            Target::stream_min_bytes_for(last_level_cache_bytes())
        );
        assert!(host.stream_min_bytes <= 36 << 20);
        assert_eq!(Target::stream_min_bytes_for(Some(8 << 20)), 2 << 20);
    }
}
