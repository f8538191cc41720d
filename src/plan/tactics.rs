//! The choices the planner leaves to the caller or to tuning: how transposes are cut into blocks
//! and how they store them ([`Tiling`], [`Blocking`]), and whether copies, zips and unzips into
//! large destinations stream ([`LargeWrites`]); the default of each, and the candidates that
//! tuning measures against each other.

use std::fmt;
use std::str::FromStr;

use super::ir::Walk;
use crate::error::{Error, Result};
use crate::target::Target;

/// Everything the planner may be told to choose one way or another.
///
/// ```
/// use relayout::plan::{LargeWrites, Tactics, Tiling};
///
/// let default = Tactics::default();
/// assert_eq!(default.tiling, Tiling::Fitted);
/// assert_eq!(default.large_writes, LargeWrites::Streamed);
/// assert_eq!(Tactics::CANDIDATES[0], default);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Tactics {
    /// How transposes are cut into blocks.
    pub tiling: Tiling,
    /// How copies, zips and unzips write destinations of at least the target's
    /// [`stream_min_bytes`](Target::stream_min_bytes).
    pub large_writes: LargeWrites,
}

/// How transposes are cut into blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Tiling {
    /// The default blocking: into large destinations whose writes stream, staged blocks streamed
    /// out, fitted to the element size and the source rows ([`Blocking::streamed`]); otherwise
    /// fitted to the destination's row stride ([`Blocking::fitted`]).
    #[default]
    Fitted,
    /// This blocking, whatever the destination.
    Fixed(Blocking),
}

/// How copies, zips and unzips write large destinations, and whether fitted tiling stages and
/// streams transposes into them. Which is faster depends on the machine: on a 2-core AMD EPYC
/// (Zen 3) VM, NHWC → NCHW16c (64-byte runs into four places at once) ran at 0.51–0.59 of memcpy streamed and 0.81–0.85 with ordinary stores, while XLA's
/// `T(8,128)` tiles ran at 1.25–1.30 streamed and 0.97–0.99 without; on a Zen 5 VM NHWC →
/// NCHW16c was the other way round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum LargeWrites {
    /// Streaming stores: copies of a cache line or more read the source in order and stream,
    /// zips of long runs and zips and unzips whose runs continue one another go through the
    /// staging buffer and stream.
    #[default]
    Streamed,
    /// Ordinary stores.
    Stored,
}

/// How a transpose stores its blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BlockWrite {
    /// Each register tile in place.
    InPlace,
    /// Each block into a staging buffer, one row per destination run, then copied out run after
    /// run.
    Staged,
    /// Into large destinations (see [`Target::stream_min_bytes`]), each block staged and then
    /// streamed out (non-temporal stores: no read-for-ownership of the destination); into
    /// smaller ones, in place.
    Streamed,
}

/// How a transpose is cut into blocks and how it stores them.
///
/// ```
/// use relayout::plan::{Blocking, BlockWrite};
/// use relayout::Target;
///
/// let host = Target::host();
/// // Rows 3 KiB apart start in 4 different L1 sets: the default stays.
/// assert_eq!(Blocking::fitted(3072, host), Blocking::DEFAULT);
/// // Rows 4 KiB apart all start in the same set: blocks are staged and copied out.
/// assert_eq!(Blocking::fitted(4096, host).write, BlockWrite::Staged);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Blocking {
    /// Bytes of each destination run a block writes (a strip along the destination-contiguous
    /// loop); at least one vector.
    pub run_bytes: usize,
    /// Bytes of one block (strip × width along the source-contiguous loop).
    pub block_bytes: usize,
    /// Strips per macro block (the nearest divisor of the strip count is used).
    pub macro_strips: usize,
    /// Blocks per macro block along the source runs (the nearest divisor is used).
    pub macro_blocks: usize,
    /// How the blocks are stored.
    pub write: BlockWrite,
    /// The order of the register tiles in a block. Reading many source rows at once
    /// ([`Walk::Across`]) keeps more of them in flight from memory: on a 2-core AMD EPYC (Zen 4)
    /// VM, staged and streamed blocks of an 8000² f32 transpose went from 4.6 to 8.9 GB/s and of
    /// NCHW → NHWC from 6.8 to 11.5 this way, while the 256³ reversal fell from 6.7 to 3.2 (its
    /// source rows are 256 KiB apart).
    pub walk: Walk,
}

impl Blocking {
    /// Strips of 64-byte destination runs (one line of each destination row) by 4 KiB blocks,
    /// grouped 16 × 4 into macro blocks; tiles stored in place.
    pub const DEFAULT: Blocking = Blocking {
        run_bytes: 64,
        block_bytes: 4096,
        macro_strips: 16,
        macro_blocks: 4,
        write: BlockWrite::InPlace,
        walk: Walk::Along,
    };

    /// 256-byte destination runs in 4 KiB blocks: a block writes fewer destination rows, four
    /// lines of each.
    pub const LONG_RUNS: Blocking = Blocking {
        run_bytes: 256,
        ..Blocking::DEFAULT
    };

    /// 1 KiB destination runs, 16 rows a block, staged and copied out.
    pub const STAGED_RUNS: Blocking = Blocking {
        run_bytes: 1024,
        block_bytes: 16384,
        macro_strips: 1,
        macro_blocks: 1,
        write: BlockWrite::Staged,
        walk: Walk::Along,
    };

    /// 256-byte runs, 64 rows a block, in macro blocks of 4 × 4, staged and streamed: the
    /// fitted blocking of 4-byte elements into large destinations ([`Blocking::streamed`]).
    /// With the next block's source prefetched while each block goes out, it was the fastest
    /// candidate or close to it on every large f32 transpose of the suite on a 2-core AMD EPYC
    /// (Zen 4) VM (0.59–0.95 of memcpy, against 0.30–0.92 for tiles stored in place: 8192² f32
    /// 0.83 against 0.35, the 256³ reversal 0.76 against 0.32).
    pub const STREAMED_256: Blocking = Blocking {
        run_bytes: 256,
        block_bytes: 16384,
        macro_strips: 4,
        write: BlockWrite::Streamed,
        ..Blocking::DEFAULT
    };

    /// 512-byte runs, 16 rows a block, staged and streamed.
    const STREAMED_512: Blocking = Blocking {
        run_bytes: 512,
        block_bytes: 8192,
        macro_strips: 1,
        macro_blocks: 1,
        write: BlockWrite::Streamed,
        walk: Walk::Along,
    };

    /// 1 KiB runs, 16 rows a block, staged and streamed.
    const STREAMED_1K: Blocking = Blocking {
        run_bytes: 1024,
        block_bytes: 16384,
        macro_strips: 1,
        macro_blocks: 1,
        write: BlockWrite::Streamed,
        walk: Walk::Along,
    };

    /// The default blocking for transposes whose destination rows (one per step along the
    /// source-contiguous loop) lie `row_bytes` apart on `target`. The default writes one line of
    /// each of many destination rows per block, which is fastest unless those lines crowd into a
    /// few L1 sets and evict each other half-written: where the rows start in only two sets (rows
    /// 2 KiB apart, or an odd multiple of that, on a 64-set L1) a block writes fewer rows with
    /// longer runs, and where they all start in one set (a multiple of 4 KiB apart) a block is
    /// staged and its runs copied out one after another. On a 2-core AMD EPYC VM this took 512²
    /// f32 transposes from 8 to 25 GB/s and 1024² from 3 to 19.
    pub fn fitted(row_bytes: usize, target: Target) -> Blocking {
        match target.start_sets(row_bytes) {
            1 => Blocking::STAGED_RUNS,
            2 => Blocking::LONG_RUNS,
            _ => Blocking::DEFAULT,
        }
    }

    /// The fitted blocking of transposes of `elem_size`-byte elements whose source rows (one
    /// per step along the destination-contiguous loop) lie `src_row_bytes` apart, into large
    /// destinations whose writes stream: blocks staged, streamed out and prefetched, of 256-byte
    /// runs walked along the source rows ([`Blocking::STREAMED_256`]) for 4-byte elements,
    /// across them for 1- and 2-byte elements and for 4-byte elements whose source rows are no
    /// longer than a run, and of 512-byte runs (64 elements, as for 4 bytes) along them for
    /// 8-byte elements (whatever their rows: no 8-byte case with short rows was measured). On a 2-core
    /// AMD EPYC (Zen 4) VM, in two sessions' `relayout bench --candidates` runs, those were the
    /// fastest candidates or within a few percent of them: u8 8000² 0.72–0.75 of memcpy against
    /// 0.64–0.68 for 256-byte runs along, u16 0.74–0.79 against 0.65–0.67, f64 0.79–0.84
    /// against 0.59, NHWC → NCHW of 64 f32 channels (256-byte source rows) 0.79–0.84 against
    /// 0.68–0.72.
    pub const fn streamed(elem_size: usize, src_row_bytes: usize) -> Blocking {
        let runs = Blocking::STREAMED_256.run_bytes;
        match elem_size {
            0..=2 => Blocking::STREAMED_256.across(),
            3..=4 if src_row_bytes <= runs => Blocking::STREAMED_256.across(),
            3..=4 => Blocking::STREAMED_256,
            _ => Blocking::STREAMED_512,
        }
    }

    /// This blocking with runs across the source rows.
    const fn across(self) -> Blocking {
        Blocking {
            walk: Walk::Across,
            ..self
        }
    }
}

impl Default for Blocking {
    /// [`Blocking::DEFAULT`].
    fn default() -> Blocking {
        Blocking::DEFAULT
    }
}

impl Tiling {
    /// The blocking for transposes of `elem_size`-byte elements whose destination rows (one per
    /// step along the source-contiguous loop) lie `dst_row_bytes` apart and whose source rows
    /// (one per step along the destination-contiguous loop) lie `src_row_bytes` apart on
    /// `target`, into a destination whose writes stream (`streams`: large, and
    /// [`LargeWrites::Streamed`]) or not.
    pub fn blocking(
        self,
        elem_size: usize,
        dst_row_bytes: usize,
        src_row_bytes: usize,
        streams: bool,
        target: Target,
    ) -> Blocking {
        match self {
            Tiling::Fitted if streams => Blocking::streamed(elem_size, src_row_bytes),
            Tiling::Fitted => Blocking::fitted(dst_row_bytes, target),
            Tiling::Fixed(blocking) => blocking,
        }
    }
}

impl Tactics {
    /// The tactics worth measuring against each other, ranked: tuning measures them in this
    /// order as far as its budget goes ([`Options::tune_budget`]). First the default; then
    /// staged blocks streamed out in the two orders that most often beat it on a 2-core AMD EPYC
    /// (Zen 4) VM (`relayout bench --candidates`: runs of 256 bytes across the source rows for
    /// u8, u16 and NHWC → NCHW, runs of 512 bytes along them for f64); then the default with
    /// ordinary stores for copies and zips (and tiles stored in place, fitted to the
    /// destination's rows, for transposes: where no transpose is involved, the only
    /// alternative, as the others plan what the default plans); then the rest: runs of 512
    /// bytes across and 1 KiB along and across, 256-byte runs in 4 KiB and 16 KiB blocks stored
    /// in place, no macro blocks, and 256-byte runs streamed along (the default's blocking for
    /// large transposes, a candidate of its own where the default differs).
    ///
    /// [`Options::tune_budget`]: crate::Options::tune_budget
    pub const CANDIDATES: [Tactics; 11] = [
        Tactics::fitted(LargeWrites::Streamed),
        Tactics::fixed(Blocking::STREAMED_256.across()),
        Tactics::fixed(Blocking::STREAMED_512),
        Tactics::fitted(LargeWrites::Stored),
        Tactics::fixed(Blocking::STREAMED_512.across()),
        Tactics::fixed(Blocking::STREAMED_1K),
        Tactics::fixed(Blocking::STREAMED_1K.across()),
        Tactics::fixed(Blocking::LONG_RUNS),
        Tactics::fixed(Blocking {
            run_bytes: 256,
            block_bytes: 16384,
            macro_strips: 4,
            ..Blocking::DEFAULT
        }),
        Tactics::fixed(Blocking {
            macro_strips: 1,
            macro_blocks: 1,
            ..Blocking::DEFAULT
        }),
        Tactics::fixed(Blocking::STREAMED_256),
    ];

    /// Fitted tiling, large destinations written as `large_writes` says.
    const fn fitted(large_writes: LargeWrites) -> Tactics {
        Tactics {
            tiling: Tiling::Fitted,
            large_writes,
        }
    }

    /// This blocking for transposes, large destinations streamed.
    pub const fn fixed(blocking: Blocking) -> Tactics {
        Tactics {
            tiling: Tiling::Fixed(blocking),
            large_writes: LargeWrites::Streamed,
        }
    }
}

impl fmt::Display for Tactics {
    /// `fitted, large streamed` or
    /// `run 256, block 16384, macro 4x4, write streamed, walk across, large streamed`: the form
    /// tuning files hold, which [`str::parse`] reads back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.tiling {
            Tiling::Fitted => write!(f, "fitted")?,
            Tiling::Fixed(b) => write!(
                f,
                "run {}, block {}, macro {}x{}, write {}, walk {}",
                b.run_bytes,
                b.block_bytes,
                b.macro_strips,
                b.macro_blocks,
                match b.write {
                    BlockWrite::InPlace => "in-place",
                    BlockWrite::Staged => "staged",
                    BlockWrite::Streamed => "streamed",
                },
                match b.walk {
                    Walk::Along => "along",
                    Walk::Across => "across",
                }
            )?,
        }
        let large = match self.large_writes {
            LargeWrites::Streamed => "streamed",
            LargeWrites::Stored => "stored",
        };
        write!(f, ", large {large}")
    }
}

impl FromStr for Tactics {
    type Err = Error;

    /// Reads the form [`Tactics`] displays.
    ///
    /// ```
    /// use relayout::plan::Tactics;
    ///
    /// for t in Tactics::CANDIDATES {
    ///     assert_eq!(t.to_string().parse::<Tactics>()?, t);
    /// }
    /// assert!("fitted, large sideways".parse::<Tactics>().is_err());
    /// # Ok::<(), relayout::Error>(())
    /// ```
    fn from_str(text: &str) -> Result<Tactics> {
        let bad = |what: String| Error::Parse {
            notation: "tactics",
            column: 1,
            message: format!("{what} in '{text}'"),
        };
        let fields: Vec<(&str, &str)> = text
            .split(',')
            .map(|field| {
                let field = field.trim();
                field.split_once(' ').unwrap_or((field, ""))
            })
            .collect();
        let get = |name: &str| {
            fields
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| *v)
                .ok_or_else(|| bad(format!("no '{name}'")))
        };
        let number = |name: &str| {
            get(name)?
                .parse::<usize>()
                .map_err(|_| bad(format!("'{name}' is not a count")))
        };
        let large_writes = match get("large")? {
            "streamed" => LargeWrites::Streamed,
            "stored" => LargeWrites::Stored,
            other => return Err(bad(format!("large writes '{other}'"))),
        };
        if fields.first() == Some(&("fitted", "")) {
            return Ok(Tactics {
                tiling: Tiling::Fitted,
                large_writes,
            });
        }
        let (strips, blocks) = get("macro")?
            .split_once('x')
            .ok_or_else(|| bad("'macro' is not STRIPSxBLOCKS".into()))?;
        let count = |v: &str| v.parse::<usize>().map_err(|_| bad(format!("macro '{v}'")));
        let blocking = Blocking {
            run_bytes: number("run")?,
            block_bytes: number("block")?,
            macro_strips: count(strips)?,
            macro_blocks: count(blocks)?,
            write: match get("write")? {
                "in-place" => BlockWrite::InPlace,
                "staged" => BlockWrite::Staged,
                "streamed" => BlockWrite::Streamed,
                other => return Err(bad(format!("write '{other}'"))),
            },
            walk: match get("walk")? {
                "along" => Walk::Along,
                "across" => Walk::Across,
                other => return Err(bad(format!("walk '{other}'"))),
            },
        };
        Ok(Tactics {
            tiling: Tiling::Fixed(blocking),
            large_writes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_fall_into_sets_by_their_stride() {
        let host = Target::host();
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
            assert_eq!(host.start_sets(row_bytes), sets, "{row_bytes}");
        }
        // A machine with twice the sets: rows 4 KiB apart now start in two.
        let big_l1 = Target {
            l1_sets: 128,
            ..host
        };
        assert_eq!(big_l1.start_sets(4096), 2);
        assert_eq!(big_l1.start_sets(8192), 1);
    }

    #[test]
    fn fitting_follows_the_l1_sets() {
        let host = Target::host();
        assert_eq!(Blocking::fitted(3072, host), Blocking::DEFAULT);
        assert_eq!(Blocking::fitted(2048, host), Blocking::LONG_RUNS);
        assert_eq!(Blocking::fitted(8192, host), Blocking::STAGED_RUNS);
        let fixed = Blocking::STREAMED_512;
        assert_eq!(
            Tiling::Fixed(fixed).blocking(4, 4096, 4096, true, host),
            fixed
        );
        assert_eq!(
            Tiling::Fitted.blocking(4, 4096, 4096, false, host),
            Blocking::STAGED_RUNS
        );
        for (elem_size, src_row_bytes, streamed) in [
            (1, 3072, Blocking::STREAMED_256.across()),
            (2, 3072, Blocking::STREAMED_256.across()),
            (4, 3072, Blocking::STREAMED_256),
            (4, 256, Blocking::STREAMED_256.across()),
            (8, 3072, Blocking::STREAMED_512),
        ] {
            assert_eq!(
                Tiling::Fitted.blocking(elem_size, 3072, src_row_bytes, true, host),
                streamed
            );
        }
    }

    #[test]
    fn candidates_are_distinct_and_start_with_the_default() {
        assert_eq!(Tactics::CANDIDATES[0], Tactics::default());
        for (i, a) in Tactics::CANDIDATES.iter().enumerate() {
            for b in &Tactics::CANDIDATES[i + 1..] {
                assert_ne!(a, b);
            }
        }
    }
}
