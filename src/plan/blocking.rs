//! How transposes are cut into blocks and which kernels stream: the default, fitted to the L1
//! cache's sets, and the candidates that tuning measures against each other.

use super::STREAM_MIN_BYTES;

/// How transposes are cut into blocks, and which kernels write large destinations with
/// streaming stores.
///
/// The default is fitted to the destination's row stride ([`Blocking::fitted`]);
/// [`Blocking::CANDIDATES`] are the alternatives that `Options::tune` measures when the
/// destination is large, because the best choice there depends on the machine's caches, TLB and
/// memory more than a model can tell.
///
/// ```
/// use relayout::plan::Blocking;
///
/// // Rows 3 KiB apart start in 4 different L1 sets: the default stays.
/// assert_eq!(Blocking::default().fitted(3072), Blocking::default());
/// // Rows 4 KiB apart all start in the same set: blocks are staged and copied out.
/// assert!(Blocking::default().fitted(4096).stage);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Blocking {
    /// Bytes of each destination run a transpose block writes (a strip along the
    /// destination-contiguous loop); at least one cache line.
    pub run_bytes: usize,
    /// Bytes of one transpose block (strip × width along the source-contiguous loop).
    pub block_bytes: usize,
    /// Strips per macro block (the nearest divisor of the strip count is used).
    pub macro_strips: usize,
    /// Blocks per macro block along the source runs (the nearest divisor is used).
    pub macro_blocks: usize,
    /// Whether each block is transposed into a staging buffer, one row per destination run, and
    /// then written out run after run, rather than storing each register tile in place.
    pub stage: bool,
    /// Whether transposes of large destinations (see
    /// [`STREAM_MIN_BYTES`](super::STREAM_MIN_BYTES)) are staged and the staging buffer written
    /// out with streaming stores (non-temporal stores: no read-for-ownership of the destination).
    pub stream: bool,
    /// Whether copies of a cache line or more and zips of long runs into large destinations
    /// write with streaming stores (copies reading the source in order, zips through a staging
    /// buffer), rather than ordinary ones. Which is faster depends on the machine: on a 2-core
    /// AMD EPYC (Zen 3) VM, NHWC → NCHW16c (64-byte runs into four places at once) ran at 0.51–0.59
    /// of memcpy streamed and 0.81–0.85 with ordinary stores, while XLA's `T(8,128)` tiles ran at
    /// 1.25–1.30 streamed and 0.97–0.99 without; on a Zen 5 VM NHWC → NCHW16c was the other way
    /// round.
    pub stream_copies: bool,
    /// Whether a block's register tiles are walked across the source rows (each step of the
    /// outer tile loop finishes whole destination runs, reading a little of every source row of
    /// the block) rather than along them ([`Region::across`](super::Region::across)). Reading
    /// many source rows at once keeps more of them in flight from memory: on a 2-core AMD EPYC
    /// (Zen 4) VM, staged and streamed blocks of an 8000² f32 transpose went from 4.6 to 8.9 GB/s
    /// and of NCHW → NHWC from 6.8 to 11.5 this way, while the 256³ reversal fell from 6.7 to 3.2
    /// (its source rows are 256 KiB apart).
    pub across: bool,
    /// Destinations of at least this many bytes are large enough to stream: copies, zips and
    /// unzips (as [`Blocking::stream_copies`] says) and transposes (as [`Blocking::stream`]
    /// says). [`STREAM_MIN_BYTES`](super::STREAM_MIN_BYTES) in every candidate; the tests set 0
    /// to run the streamed and staged kernels on small random layouts.
    pub stream_min_bytes: usize,
}

/// The L1 data cache that [`Blocking::fitted`] assumes: sets of 64-byte lines, 4 KiB per way,
/// as in the 32–48 KiB L1 caches of current x86-64 cores.
const L1_SETS: usize = 64;
const LINE_BYTES: usize = 64;

impl Blocking {
    /// The blockings worth measuring against each other: the default (fitted, so for rows that
    /// start in one or two L1 sets the plan it gives, and that `Relayout::blocking` reports as the
    /// default, is [`Blocking::fitted`]'s), the default with ordinary stores for copies and zips,
    /// 256-byte runs in 4 KiB and 16 KiB blocks, no macro blocks, and staged blocks streamed out
    /// with runs of 256 bytes (64 rows a block), 512 and 1024 bytes (16 rows a block), each of
    /// those last three once along and once [`across`](Blocking::across) the source rows.
    pub const CANDIDATES: [Blocking; 11] = [
        Blocking::DEFAULT,
        Blocking {
            stream_copies: false,
            ..Blocking::DEFAULT
        },
        Blocking::LONG_RUNS,
        Blocking {
            run_bytes: 256,
            block_bytes: 16384,
            macro_strips: 4,
            ..Blocking::DEFAULT
        },
        Blocking {
            macro_strips: 1,
            macro_blocks: 1,
            ..Blocking::DEFAULT
        },
        Blocking::STREAMED_256,
        Blocking::STREAMED_512,
        Blocking::STREAMED_1K,
        Blocking {
            across: true,
            ..Blocking::STREAMED_256
        },
        Blocking {
            across: true,
            ..Blocking::STREAMED_512
        },
        Blocking {
            across: true,
            ..Blocking::STREAMED_1K
        },
    ];

    /// 256-byte runs, 64 rows a block, in macro blocks of 4 × 4, staged and streamed.
    const STREAMED_256: Blocking = Blocking {
        run_bytes: 256,
        block_bytes: 16384,
        macro_strips: 4,
        stream: true,
        ..Blocking::DEFAULT
    };

    /// 512-byte runs, 16 rows a block, staged and streamed.
    const STREAMED_512: Blocking = Blocking {
        run_bytes: 512,
        block_bytes: 8192,
        macro_strips: 1,
        macro_blocks: 1,
        stream: true,
        ..Blocking::DEFAULT
    };

    /// 1 KiB runs, 16 rows a block, staged and streamed.
    const STREAMED_1K: Blocking = Blocking {
        run_bytes: 1024,
        block_bytes: 16384,
        macro_strips: 1,
        macro_blocks: 1,
        stream: true,
        ..Blocking::DEFAULT
    };

    /// Strips of 64-byte destination runs (one line of each destination row) by 4 KiB blocks,
    /// grouped 16 × 4 into macro blocks; tiles stored in place.
    const DEFAULT: Blocking = Blocking {
        run_bytes: 64,
        block_bytes: 4096,
        macro_strips: 16,
        macro_blocks: 4,
        stage: false,
        stream: false,
        stream_copies: true,
        across: false,
        stream_min_bytes: STREAM_MIN_BYTES,
    };

    /// 256-byte destination runs in 4 KiB blocks: a block writes fewer destination rows, four
    /// lines of each.
    const LONG_RUNS: Blocking = Blocking {
        run_bytes: 256,
        ..Blocking::DEFAULT
    };

    /// 1 KiB destination runs, 16 rows a block, staged and copied out.
    const STAGED_RUNS: Blocking = Blocking {
        run_bytes: 1024,
        block_bytes: 16384,
        macro_strips: 1,
        macro_blocks: 1,
        stage: true,
        stream: false,
        stream_copies: true,
        across: false,
        stream_min_bytes: STREAM_MIN_BYTES,
    };

    /// This blocking for transposes whose destination rows (one per step along the
    /// source-contiguous loop) lie `row_bytes` apart. Any blocking but the default is kept as it
    /// is. The default writes one line of each of many destination rows per block, which is
    /// fastest unless those lines crowd into a few L1 sets and evict each other half-written:
    /// where the rows start in only two sets (rows 2 KiB apart, or an odd multiple of that) a
    /// block writes fewer rows with longer runs, and where they all start in one set (a multiple
    /// of 4 KiB apart) a block is staged and its runs copied out one after another. On a 2-core
    /// AMD EPYC VM this took 512² f32 transposes from 8 to 25 GB/s and 1024² from 3 to 19.
    /// Whether copies stream ([`Blocking::stream_copies`]), and from what size anything streams
    /// ([`Blocking::stream_min_bytes`]), are kept as they are either way.
    pub fn fitted(self, row_bytes: usize) -> Blocking {
        let (stream_copies, stream_min_bytes) = (self.stream_copies, self.stream_min_bytes);
        if (Blocking {
            stream_copies: true,
            stream_min_bytes: STREAM_MIN_BYTES,
            ..self
        }) != Blocking::DEFAULT
        {
            return self;
        }
        let fitted = match start_sets(row_bytes) {
            1 => Blocking::STAGED_RUNS,
            2 => Blocking::LONG_RUNS,
            _ => Blocking::DEFAULT,
        };
        Blocking {
            stream_copies,
            stream_min_bytes,
            ..fitted
        }
    }
}

impl Default for Blocking {
    /// Strips of 64-byte destination runs by 4 KiB blocks in macro blocks of 16 × 4, tiles
    /// stored in place; see [`Blocking::fitted`] for how it adapts to the destination.
    fn default() -> Blocking {
        Blocking::DEFAULT
    }
}

/// How many L1 sets the first lines of rows `row_bytes` apart fall into.
fn start_sets(row_bytes: usize) -> usize {
    if !row_bytes.is_multiple_of(LINE_BYTES) {
        return L1_SETS;
    }
    let mut lines = (row_bytes / LINE_BYTES) % L1_SETS;
    let mut sets = L1_SETS;
    while lines != 0 {
        (sets, lines) = (lines, sets % lines);
    }
    L1_SETS / sets
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_fall_into_sets_by_their_stride() {
        for (row_bytes, sets) in [
            (4096, 1),
            (32768, 1),
            (2048, 2),
            (6144, 2),
            (1024, 4),
            (3072, 4),
            (32000, 16),
            (12544, 16),
            (64, 64),
            (100, 64),
        ] {
            assert_eq!(start_sets(row_bytes), sets, "{row_bytes}");
        }
    }

    #[test]
    fn only_the_default_is_fitted() {
        let default = Blocking::default();
        assert_eq!(default.fitted(3072), default);
        assert_eq!(default.fitted(2048), Blocking::LONG_RUNS);
        assert_eq!(default.fitted(8192), Blocking::STAGED_RUNS);
        for c in &Blocking::CANDIDATES[2..] {
            assert_eq!(c.fitted(4096), *c);
        }
    }

    #[test]
    fn fitting_keeps_ordinary_stores_for_copies() {
        let ordinary = Blocking {
            stream_copies: false,
            ..Blocking::default()
        };
        assert_eq!(ordinary.fitted(3072), ordinary);
        let staged = ordinary.fitted(8192);
        assert!(staged.stage && !staged.stream_copies);
        assert_eq!(
            Blocking {
                stream_copies: true,
                ..staged
            },
            Blocking::STAGED_RUNS
        );
    }

    #[test]
    fn fitting_keeps_the_streaming_threshold() {
        let early = Blocking {
            stream_min_bytes: 0,
            ..Blocking::default()
        };
        let staged = early.fitted(8192);
        assert!(staged.stage, "the default is still fitted");
        assert_eq!(staged.stream_min_bytes, 0);
        assert_eq!(early.fitted(2048).stream_min_bytes, 0);
    }
}
