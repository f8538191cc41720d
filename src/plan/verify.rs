//! The plan verifier: structural invariants that the code generator relies on, checked on the
//! plan alone, independently of how the planner made it (regalloc2's checker is the model: an
//! independent check of the compiler's output, not a second copy of its logic).
//!
//! Beside it, [`Plan::for_each_move`] proves the semantics (every element moves once, to the
//! right slot); the verifier proves the shapes: each kernel's loops have the strides its code
//! assumes, tile lanes fill a vector, staging buffers fit, kernels that consume a loop have a
//! loop around them for threads to split, the regions cover exactly the tensor's elements, and
//! every address a plan touches lies inside its buffers.

use std::fmt;

use super::ir::{
    Join, Kernel, Loop, Packed, Plan, Region, RunTail, TransposeWrite, UnzipWrite, ZipTile,
    ZipWrite, SINGLE,
};
use super::packed::moves_whole_bytes;
use crate::layout::for_each_coord;

/// A broken invariant of a plan: which region (if one), which rule, and what was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The region at fault, or `None` for the plan as a whole.
    pub region: Option<usize>,
    /// The invariant that does not hold.
    pub rule: Rule,
    /// What was found.
    pub detail: String,
}

/// The invariants [`Plan::verify`] checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Elements are 1, 2, 4 or 8 bytes.
    ElementSize,
    /// Every loop, tile and copy has at least one step.
    Extent,
    /// A tile kernel's loops are contiguous where its loads and stores assume it.
    TileStrides,
    /// A tile kernel's lanes fill exactly one vector of the target.
    Lanes,
    /// A zip or unzip has as many strips as the shuffle networks take ([`ZipTile::shuffles`]).
    Strips,
    /// A staging buffer fits the target's limit.
    StageLimit,
    /// The steps of a staged run continue one another in the destination.
    StagedRun,
    /// A joined transpose's or unzip's runs that write the line the next run starts in are whole
    /// lines long and read a line's worth of elements past their own.
    JoinedRun,
    /// A kernel that consumes a loop has a loop around it (the unit threads split).
    ThreadLoop,
    /// The regions move as many elements as the tensor has.
    Coverage,
    /// Every access lies inside the source and destination buffers.
    Bounds,
    /// The index along a per-index map's dim stays inside the map (every table read lies
    /// inside the table), kernels that do not follow the index lane by lane (zips, unzips) are
    /// absent, and plans without a map carry no index.
    Index,
    /// A packed (sub-byte) plan moves whole bytes only where every offset its kernel starts
    /// from is a whole byte on both sides: copies of whole bytes, in-place transposes of 4-bit
    /// nibble pairs, and single elements elsewhere; it does not convert.
    Packed,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.region {
            Some(i) => write!(f, "region {i}: {:?}: {}", self.rule, self.detail),
            None => write!(f, "{:?}: {}", self.rule, self.detail),
        }
    }
}

impl std::error::Error for Violation {}

type Check = Result<(), Violation>;

/// See [`Plan::verify`].
pub(super) fn verify(plan: &Plan) -> Check {
    if ![1, 2, 4, 8].contains(&plan.elem_size) {
        return Err(broken(
            None,
            Rule::ElementSize,
            format!("{} bytes", plan.elem_size),
        ));
    }
    for (i, region) in plan.regions.iter().enumerate() {
        region_shape(plan, region).map_err(|(rule, detail)| broken(Some(i), rule, detail))?;
    }
    let moved: usize = plan.regions.iter().map(Region::elements).sum();
    if moved != plan.elements {
        return Err(broken(
            None,
            Rule::Coverage,
            format!("the regions move {moved} elements of {}", plan.elements),
        ));
    }
    Ok(())
}

fn broken(region: Option<usize>, rule: Rule, detail: String) -> Violation {
    Violation {
        region,
        rule,
        detail,
    }
}

type RegionCheck = Result<(), (Rule, String)>;

/// A packed plan's kernel is a single element move, or starts on whole bytes and moves whole
/// bytes (see [`Rule::Packed`]).
fn packed_kernel(packed: Packed, region: &Region) -> RegionCheck {
    if region.kernel == Kernel::Element || moves_whole_bytes(region, packed) {
        return Ok(());
    }
    Err((
        Rule::Packed,
        format!(
            "{:?} in a plan of {}-bit elements does not move whole bytes",
            region.kernel,
            packed.bits()
        ),
    ))
}

fn region_shape(plan: &Plan, region: &Region) -> RegionCheck {
    let loops = region.kernel.reach();
    let indexed = region.indexed.as_ref().map_or(&[][..], |ix| &ix.extents);
    if let Some(l) = region.loops.iter().chain(&loops).find(|l| l.extent == 0) {
        return Err((Rule::Extent, format!("a loop of no steps: {l:?}")));
    }
    if indexed.contains(&0) {
        return Err((Rule::Extent, format!("indexed extents {indexed:?}")));
    }
    kernel_shape(plan, region.kernel)?;
    if let Some(packed) = plan.packed {
        if plan.conversion.is_some() {
            return Err((Rule::Packed, "a packed plan converts".into()));
        }
        packed_kernel(packed, region)?;
    }
    let consumed = match region.kernel {
        Kernel::Copy { write, .. } => write.rows(),
        Kernel::Zip { write, .. } => write.steps(),
        Kernel::Unzip { write, .. } => write.steps(),
        Kernel::Element | Kernel::Transpose { .. } => SINGLE,
    };
    if consumed != SINGLE && region.loops.is_empty() && region.indexed.is_none() {
        return Err((
            Rule::ThreadLoop,
            "the kernel consumes the only loop of its region".into(),
        ));
    }
    if let Some(bytes) = plan.region_stage_bytes(region) {
        if bytes > plan.target.stage_limit_bytes {
            return Err((
                Rule::StageLimit,
                format!(
                    "{bytes} bytes staged, over the limit of {}",
                    plan.target.stage_limit_bytes
                ),
            ));
        }
    }
    index_reach(plan, region, &loops)?;
    for (side, base, len, stride) in [
        (
            "source",
            region.src_base,
            plan.src_len,
            src_stride as fn(&Loop) -> i64,
        ),
        ("destination", region.dst_base, plan.dst_len, dst_stride),
    ] {
        let (lo, hi) = reach(region, &loops, base, stride, side == "source", len);
        if lo < 0 || hi >= len as i128 {
            return Err((
                Rule::Bounds,
                format!("{side} indexes {lo}..={hi} of a buffer of {len} elements"),
            ));
        }
    }
    Ok(())
}

/// The [`Rule::Index`] checks of one region whose kernel iterates `kernel_loops`.
fn index_reach(plan: &Plan, region: &Region, kernel_loops: &[Loop]) -> RegionCheck {
    let all = region.loops.iter().chain(kernel_loops);
    let copy_index = match region.kernel {
        Kernel::Copy { index_stride, .. } => index_stride,
        _ => 0,
    };
    let Some(map) = &plan.per_index else {
        let carried = region.index_base != 0
            || region.indexed.as_ref().is_some_and(|ix| ix.index.is_some())
            || all.clone().any(|l| l.index_stride != 0)
            || copy_index != 0;
        return match carried {
            true => Err((Rule::Index, "an index without a per-index map".into())),
            false => Ok(()),
        };
    };
    if matches!(region.kernel, Kernel::Zip { .. } | Kernel::Unzip { .. }) {
        return Err((Rule::Index, "a zip or unzip under a per-index map".into()));
    }
    let (mut lo, mut hi) = (region.index_base as i128, region.index_base as i128);
    for l in all {
        let last = l.index_stride as i128 * (l.extent as i128 - 1);
        lo += last.min(0);
        hi += last.max(0);
    }
    if let Some(ix) = &region.indexed {
        if let Some(k) = ix.index {
            let extent = *ix.extents.get(k).ok_or((
                Rule::Index,
                format!("indexed dim {k} of {}", ix.extents.len()),
            ))?;
            hi += extent as i128 - 1;
        }
    }
    if lo < 0 || hi >= map.len() as i128 {
        return Err((
            Rule::Index,
            format!("indexes {lo}..={hi} of a map of {}", map.len()),
        ));
    }
    Ok(())
}

fn src_stride(l: &Loop) -> i64 {
    l.src_stride
}

fn dst_stride(l: &Loop) -> i64 {
    l.dst_stride
}

/// The tile kernels' own rules.
fn kernel_shape(plan: &Plan, kernel: Kernel) -> RegionCheck {
    let vector = plan.target.vector_bytes;
    let lanes_fill = |lanes: usize| {
        if lanes * plan.elem_size == vector {
            Ok(())
        } else {
            Err((
                Rule::Lanes,
                format!(
                    "{lanes} lanes of {} bytes in a {vector}-byte vector",
                    plan.elem_size
                ),
            ))
        }
    };
    let strides = |ok: bool, what: &str| {
        if ok {
            Ok(())
        } else {
            Err((Rule::TileStrides, what.to_string()))
        }
    };
    match kernel {
        Kernel::Element | Kernel::Copy { .. } => Ok(()),
        Kernel::Transpose { tile, write } => {
            lanes_fill(tile.lanes)?;
            strides(
                tile.a.src_stride == 1 && tile.b.dst_stride == 1,
                &format!(
                    "a transpose needs a.src_stride == 1 and b.dst_stride == 1: {:?} {:?}",
                    tile.a, tile.b
                ),
            )?;
            match write {
                TransposeWrite::Joined(join) => joined(plan, tile.b.extent, join),
                _ => Ok(()),
            }
        }
        Kernel::Zip { tile, write } => {
            lanes_fill(tile.lanes)?;
            strips(tile)?;
            let k = tile.short.extent as i64;
            strides(
                tile.short.dst_stride == 1
                    && tile.long.src_stride == 1
                    && tile.long.dst_stride == k,
                &format!("a zip interleaves its strips into the destination: {tile:?}"),
            )?;
            if let ZipWrite::StreamedRun { steps, pieces } = write {
                continued(tile, steps, pieces)?;
            }
            Ok(())
        }
        Kernel::Unzip { tile, write } => {
            lanes_fill(tile.lanes)?;
            strips(tile)?;
            let k = tile.short.extent as i64;
            strides(
                tile.short.src_stride == 1
                    && tile.long.src_stride == k
                    && tile.long.dst_stride == 1,
                &format!("an unzip reads its strips interleaved: {tile:?}"),
            )?;
            match write {
                UnzipWrite::StreamedRun { steps, pieces } => {
                    if tile.short.dst_stride != tile.long.extent as i64 {
                        return Err((
                            Rule::StagedRun,
                            format!("a staged unzip's strips must be contiguous: {tile:?}"),
                        ));
                    }
                    continued(tile, steps, pieces)
                }
                UnzipWrite::JoinedStrips(join) => joined(plan, tile.long.extent, join),
                _ => Ok(()),
            }
        }
    }
}

/// A joined run (of `run` elements) that lends the next its line is whole lines long and reads a
/// line further.
fn joined(plan: &Plan, run: usize, join: Join) -> RegionCheck {
    let line = plan.target.line_bytes;
    let size = plan.dst_elem_size();
    match join.tail {
        RunTail::Joined { extension }
            if extension * size != line || !(run * size).is_multiple_of(line) =>
        {
            Err((
                Rule::JoinedRun,
                format!(
                    "runs of {run} elements of {size} bytes, extended by {extension}, \
                     with {line}-byte lines"
                ),
            ))
        }
        _ => Ok(()),
    }
}

/// As many strips as the shuffle networks take ([`ZipTile::shuffles`]).
fn strips(tile: ZipTile) -> RegionCheck {
    let k = tile.short.extent;
    if ZipTile::shuffles(k, tile.lanes) {
        Ok(())
    } else {
        Err((
            Rule::Strips,
            format!("{k} strips with {} lanes", tile.lanes),
        ))
    }
}

/// The steps of a staged run write one contiguous run: each step's block follows the last; and
/// they cut into their pieces evenly.
fn continued(tile: ZipTile, steps: Loop, pieces: usize) -> RegionCheck {
    if pieces == 0 || !steps.extent.is_multiple_of(pieces) {
        return Err((
            Rule::StagedRun,
            format!("{} staged steps in {pieces} equal pieces", steps.extent),
        ));
    }
    if steps.dst_stride == tile.elements() as i64 {
        Ok(())
    } else {
        Err((
            Rule::StagedRun,
            format!(
                "steps {} elements apart in the destination, blocks of {}",
                steps.dst_stride,
                tile.elements()
            ),
        ))
    }
}

/// Indexed loops of up to this many points are enumerated when the bounds of their terms taken
/// one by one do not already prove the region inside its buffers (terms of one dim are
/// correlated, so the sum of their ranges can exceed the range of their sum).
const MAX_ENUMERATED_POINTS: usize = 1 << 22;

/// The lowest and highest index the region touches on one side: its base, plus the extreme
/// values of its indexed terms, plus each loop's extreme step. The indexed terms' extremes are
/// bounded term by term, and exact when that is not enough to stay inside `len` elements and the
/// indexed loop has at most [`MAX_ENUMERATED_POINTS`] points.
fn reach(
    region: &Region,
    kernel_loops: &[Loop],
    base: i64,
    stride: fn(&Loop) -> i64,
    source: bool,
    len: usize,
) -> (i128, i128) {
    let (mut lo, mut hi) = (base as i128, base as i128);
    for l in region.loops.iter().chain(kernel_loops) {
        let last = stride(l) as i128 * (l.extent as i128 - 1);
        lo += last.min(0);
        hi += last.max(0);
    }
    let Some(ix) = &region.indexed else {
        return (lo, hi);
    };
    let (terms, swizzle) = if source {
        (&ix.src, ix.src_swizzle)
    } else {
        (&ix.dst, ix.dst_swizzle)
    };
    let (mut term_lo, mut term_hi) = (0i128, 0i128);
    for term in terms {
        let (a, b) = term.digit().value_range(&ix.extents);
        let s = term.stride as i128;
        term_lo += (a * s).min(b * s);
        term_hi += (a * s).max(b * s);
    }
    if let Some(s) = swizzle {
        // The swizzle maps each block of 2^top_bit offsets onto itself.
        let base = s.base as i128;
        (term_lo, term_hi) = s.swizzle.span_bound(base + term_lo, base + term_hi);
    }
    let inside = lo + term_lo >= 0 && hi + term_hi < len as i128;
    if !inside && ix.count() <= MAX_ENUMERATED_POINTS {
        (term_lo, term_hi) = (i128::MAX, i128::MIN);
        for_each_coord(&ix.extents, |x| {
            let (s, d) = ix.offsets(x);
            let at = if source { s } else { d };
            term_lo = term_lo.min(at);
            term_hi = term_hi.max(at);
        });
    }
    (lo + term_lo, hi + term_hi)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::Layout;
    use crate::plan::{CopyWrite, LongReads, Tactics, TransposeWrite};
    use crate::target::Target;

    fn plan(src: &Layout, dst: &Layout, elem: usize) -> Plan {
        Plan::with_tactics(src, dst, elem, Tactics::default(), Target::host()).unwrap()
    }

    fn transpose_plan() -> Plan {
        plan(
            &Layout::row_major(&[64, 48]).unwrap(),
            &Layout::col_major(&[64, 48]).unwrap(),
            4,
        )
    }

    /// Applies `edit` to the first region of `plan` and returns the rule the verifier reports.
    fn rule_after(mut plan: Plan, edit: impl FnOnce(&mut Plan)) -> Rule {
        assert_eq!(plan.verify(), Ok(()), "{plan}");
        edit(&mut plan);
        plan.verify().expect_err("the edit breaks the plan").rule
    }

    #[test]
    fn the_planners_plans_pass() {
        for (src, dst) in [
            (Layout::row_major(&[64, 48]), Layout::col_major(&[64, 48])),
            (
                Layout::row_major(&[7, 5, 3]),
                Layout::ordered(&[7, 5, 3], &[1, 2, 0]),
            ),
            (
                Layout::parse("xla:f32[33,65]{1,0}"),
                Layout::parse("xla:f32[33,65]{1,0:T(8,128)}"),
            ),
            (
                Layout::parse("morello:[32] [0]"),
                Layout::parse("morello:[32] [0, 0 oe(8)]"),
            ),
        ] {
            let (src, dst) = (src.unwrap(), dst.unwrap());
            for elem in [1, 2, 4, 8] {
                assert_eq!(plan(&src, &dst, elem).verify(), Ok(()));
                assert_eq!(plan(&dst, &src, elem).verify(), Ok(()));
            }
        }
    }

    #[test]
    fn a_packed_kernel_that_splits_a_byte_is_caught() {
        use crate::plan::{Packed, Tactics};
        use crate::Target;
        let (src, dst) = (Layout::row_major(&[64, 48]), Layout::col_major(&[64, 48]));
        let (src, dst) = (src.unwrap(), dst.unwrap());
        let nibbles = |s: &Layout, d: &Layout| {
            Plan::packed(s, d, Packed::FOUR_BITS, Tactics::default(), Target::host()).unwrap()
        };
        // A transpose whose destination rows start mid-byte.
        let odd_rows = |p: &mut Plan| {
            if let Kernel::Transpose { tile, .. } = &mut p.regions[0].kernel {
                tile.a.dst_stride += 1;
            }
        };
        assert_eq!(rule_after(nibbles(&src, &dst), odd_rows), Rule::Packed);
        // The same transpose for 2-bit elements, which have no transpose kernel.
        let two_bits = |p: &mut Plan| p.packed = Some(Packed::TWO_BITS);
        assert_eq!(rule_after(nibbles(&src, &dst), two_bits), Rule::Packed);
        // A copy of an odd number of elements.
        let odd_copy = |p: &mut Plan| {
            if let Kernel::Copy { len, .. } = &mut p.regions[0].kernel {
                *len -= 1;
            }
            p.regions[0].loops.clear();
            p.elements = p.regions[0].elements();
        };
        assert_eq!(rule_after(nibbles(&src, &src), odd_copy), Rule::Packed);
    }

    #[test]
    fn joined_runs_shorter_than_whole_lines_or_extended_by_less_are_caught() {
        use crate::plan::{RunTail, TransposeWrite, UnzipWrite};
        // Streamed from the first byte: a transpose and an unzip into rows 4001 f32 apart,
        // whose first regions lend the next their line.
        let eager = Target {
            stream_min_bytes: 0,
            ..Target::host()
        };
        let planned = |src: Layout, dst: Layout| {
            Plan::with_tactics(&src, &dst, 4, Tactics::default(), eager).unwrap()
        };
        let transpose = || {
            let (src, dst) = (
                Layout::row_major(&[4001, 40]),
                Layout::col_major(&[4001, 40]),
            );
            planned(src.unwrap(), dst.unwrap())
        };
        let unzip = || {
            let src = Layout::from_strides(&[4001, 3], &[3, 1]).unwrap();
            planned(src, Layout::col_major(&[4001, 3]).unwrap())
        };
        // The first region's join, for `edit` to change.
        fn tail(plan: &mut Plan) -> &mut RunTail {
            match &mut plan.regions[0].kernel {
                Kernel::Transpose {
                    write: TransposeWrite::Joined(join),
                    ..
                }
                | Kernel::Unzip {
                    write: UnzipWrite::JoinedStrips(join),
                    ..
                } => &mut join.tail,
                k => panic!("not joined: {k:?}"),
            }
        }
        let shorter = |p: &mut Plan| *tail(p) = RunTail::Joined { extension: 8 };
        assert_eq!(rule_after(transpose(), shorter), Rule::JoinedRun);
        assert_eq!(rule_after(unzip(), shorter), Rule::JoinedRun);
        let part_line = |p: &mut Plan| {
            if let Kernel::Unzip { tile, .. } = &mut p.regions[0].kernel {
                tile.long.extent -= 4;
            }
        };
        assert_eq!(rule_after(unzip(), part_line), Rule::JoinedRun);
    }

    #[test]
    fn each_rule_catches_its_fault() {
        assert_eq!(
            rule_after(transpose_plan(), |p| p.elem_size = 3),
            Rule::ElementSize
        );
        assert_eq!(
            rule_after(transpose_plan(), |p| p.regions[0]
                .loops
                .push(Loop::contiguous(0))),
            Rule::Extent
        );
        assert_eq!(
            rule_after(transpose_plan(), |p| {
                if let Kernel::Transpose { tile, .. } = &mut p.regions[0].kernel {
                    tile.a.src_stride = 2;
                }
            }),
            Rule::TileStrides
        );
        assert_eq!(
            rule_after(transpose_plan(), |p| {
                if let Kernel::Transpose { tile, .. } = &mut p.regions[0].kernel {
                    tile.lanes = 8;
                }
            }),
            Rule::Lanes
        );
        assert_eq!(
            rule_after(transpose_plan(), |p| {
                p.target.stage_limit_bytes = 16;
                if let Kernel::Transpose { write, .. } = &mut p.regions[0].kernel {
                    *write = TransposeWrite::Staged(crate::plan::Flush::Copied);
                }
            }),
            Rule::StageLimit
        );
        assert_eq!(
            rule_after(transpose_plan(), |p| p.regions[0].dst_base += 1),
            Rule::Bounds
        );
        assert_eq!(
            rule_after(transpose_plan(), |p| {
                let extra = p.regions[0].clone();
                p.regions.push(extra);
            }),
            Rule::Coverage
        );
    }

    #[test]
    fn kernels_that_consume_a_loop_keep_one_for_threads() {
        let copy = plan(
            &Layout::row_major(&[4, 64]).unwrap(),
            &Layout::row_major(&[4, 64]).unwrap(),
            4,
        );
        assert_eq!(
            rule_after(copy, |p| {
                let r = &mut p.regions[0];
                r.loops.clear();
                r.kernel = Kernel::Copy {
                    len: 64,
                    index_stride: 0,
                    write: CopyWrite::Streamed {
                        rows: Loop::contiguous(4).stepping(64, 4),
                        reads: LongReads::InOrder,
                    },
                };
            }),
            Rule::ThreadLoop
        );
    }

    #[test]
    fn indices_stay_inside_the_per_index_map() {
        use crate::convert::{Conversion, PerIndex};
        use crate::dtype::DType;
        let (src, dst) = (
            Layout::row_major(&[6, 40]).unwrap(),
            Layout::col_major(&[6, 40]).unwrap(),
        );
        let c = Conversion::new(DType::F32, DType::I8).unwrap();
        let rows = PerIndex::new(0, &[1.0; 6], &[]).unwrap();
        let per_index =
            Plan::converting_per_index(&src, &dst, c, rows, Tactics::default(), Target::host())
                .unwrap();
        assert_eq!(
            rule_after(per_index.clone(), |p| p.regions[0].index_base += 1),
            Rule::Index
        );
        assert_eq!(rule_after(per_index, |p| p.per_index = None), Rule::Index);
        // A plan without a map carries no index.
        assert_eq!(
            rule_after(transpose_plan(), |p| p.regions[0].index_base = 1),
            Rule::Index
        );
    }

    #[test]
    fn zips_keep_their_strip_rules() {
        let zip = plan(
            &Layout::parse("morello:[64] [0]").unwrap(),
            &Layout::parse("morello:[64] [0, 0 oe(8)]").unwrap(),
            4,
        );
        let is_zip = |p: &Plan| {
            p.regions
                .iter()
                .position(|r| matches!(r.kernel, Kernel::Zip { .. } | Kernel::Unzip { .. }))
        };
        // The edit `f` of the first zip's or unzip's tile.
        let edit = |f: fn(&mut ZipTile)| {
            move |p: &mut Plan| {
                let at = is_zip(p).unwrap();
                match &mut p.regions[at].kernel {
                    Kernel::Zip { tile, .. } | Kernel::Unzip { tile, .. } => f(tile),
                    _ => unreachable!(),
                }
            }
        };
        assert_eq!(
            rule_after(zip.clone(), edit(|t| t.short.extent = 1)),
            Rule::Strips
        );
        assert_eq!(
            rule_after(zip, edit(|t| t.long.dst_stride += 1)),
            Rule::TileStrides
        );
        // Six f32 channels unzip (more strips than lanes); eight, twice the lanes, are more
        // than the networks take.
        let six = plan(
            &Layout::ordered(&[2, 6, 40], &[0, 2, 1]).unwrap(),
            &Layout::row_major(&[2, 6, 40]).unwrap(),
            4,
        );
        let unzips = |p: &Plan| matches!(p.regions[0].kernel, Kernel::Unzip { .. });
        assert!(unzips(&six), "{six}");
        assert_eq!(rule_after(six, edit(|t| t.short.extent = 8)), Rule::Strips);
    }

    #[test]
    fn correlated_indexed_terms_are_bounded_exactly() {
        use crate::layout::{Digit, Source};
        // Digits of one dim of 15: 18·(x%2) + 108·(x/2%3) + 6·(x/6). Their ranges add up to 246,
        // past the buffer of 241; the largest offset is 240 (x = 11).
        let src = Layout::new(
            &[15],
            vec![
                Digit::new(Source::Dim(0), 1, Some(2), 18),
                Digit::new(Source::Dim(0), 2, Some(3), 108),
                Digit::new(Source::Dim(0), 6, None, 6),
            ],
        )
        .unwrap();
        // A split by 4 that does not refine against the split by 6: the indexed path.
        let dst = Layout::new(
            &[15],
            vec![
                Digit::new(Source::Dim(0), 1, Some(4), 1),
                Digit::new(Source::Dim(0), 4, None, 4),
            ],
        )
        .unwrap();
        let plan = plan(&src, &dst, 1);
        assert!(plan.regions[0].indexed.is_some(), "{plan}");
        assert_eq!(plan.src_len, 241);
        assert_eq!(plan.verify(), Ok(()));
    }
}
