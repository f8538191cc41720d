//! From a pair of layouts to a loop nest: refine, coalesce, order, block, pick the kernels.
//!
//! Read [`ir`] first: it holds the types a plan is made of ([`Plan`], [`Region`], [`Loop`],
//! [`Kernel`] and each kernel's way of writing). The planner fills them in four steps:
//! `refine` merges the digit boundaries of the two layouts, dim by dim, into loops with one
//! stride on each side (or boxes, where padding leaves a partial tile); `schedule` coalesces the
//! loops of each region, picks its kernel, orders and blocks its loops and decides how the kernel
//! writes, as the [`Tactics`] and the [`Target`] say. [`Plan::verify`] checks a plan's structural
//! invariants, and [`Plan::for_each_move`] runs it without compiling anything, which is how the
//! tests prove a plan moves every element exactly once.
//!
//! Most pairs give one region, and a pair of empty layouts (an extent of 0) none; a dim whose extent is not a whole number of tiles (padding) adds a
//! region per partial tile, and large contiguous copies (and long zips and unzips with few outer
//! iterations) are split so that threads can share them. Dims whose digits do not refine (incompatible splits, fused XLA/TVM sources) are
//! iterated by an [`Indexed`] loop that evaluates their offsets with division and modulo; every
//! other dim is walked by pointer increments. A swizzled layout's offsets are swizzled in the
//! indexed loop, once per point ([`IndexedSwizzle`]); where the swizzle leaves runs of `2^M`
//! offsets whole, the dims (or low parts of dims) inside a run are walked outside it, so that a
//! point moves a run, and only the dims above are indexed (see `swizzle`).
//!
//! ```
//! use relayout::{plan::{Kernel, Plan}, Layout};
//!
//! let src = Layout::row_major(&[64, 32])?;
//! let dst = Layout::col_major(&[64, 32])?;
//! let plan = Plan::new(&src, &dst, 4)?;
//! assert!(matches!(plan.regions()[0].kernel, Kernel::Transpose { .. }));
//! plan.verify().expect("the planner's plans are well formed");
//! # Ok::<(), relayout::Error>(())
//! ```

mod display;
mod interpret;
pub mod ir;
mod lines;
mod numbers;
mod packed;
mod refine;
mod schedule;
mod swizzle;
mod tactics;
mod verify;

use ir::NotCompared;
pub use ir::{
    CopyWrite, Flush, Indexed, IndexedSwizzle, Join, Kernel, LongReads, Loop, OffsetTerm, Packed,
    Plan, Region, RunHead, RunTail, TransposeTile, TransposeWrite, UnzipWrite, Walk, ZipTile,
    ZipWrite, ASK_GROUPS, SINGLE,
};
pub use lines::LineOffsets;
pub use tactics::{
    short_source_rows, BlockWrite, Blocking, LargeWrites, LoopOrder, Tactics, Tiling,
    SHORT_SOURCE_ROW_MAX_BYTES,
};
pub use verify::{Rule, Violation};

use crate::convert::{Conversion, PerIndex};
use crate::error::{Error, Result};
use crate::layout::{check_pair, Layout, Source};
use crate::target::Target;

/// What happens to each element: moved as it is (elements of this many bytes, or sub-byte
/// elements packed several to a byte), or converted (with a per-index affine map, or none).
#[derive(Clone)]
enum Elements {
    Moved(usize),
    Packed(Packed),
    Converted(Conversion, Option<PerIndex>),
}

/// Regions beyond this count (from many padded dims at once) send the padded dims to the indexed
/// path instead.
const MAX_REGIONS: usize = 64;

impl Plan {
    /// Plans the relayout from `src` to `dst` for elements of `elem_size` bytes (1, 2, 4 or 8),
    /// with the default [`Tactics`], for the host ([`Target::host`]).
    ///
    /// Fails when the shapes differ, `dst` is not injective, or the element size is not one of
    /// those four.
    pub fn new(src: &Layout, dst: &Layout, elem_size: usize) -> Result<Plan> {
        Plan::with_tactics(src, dst, elem_size, Tactics::default(), Target::host())
    }

    /// [`Plan::new`] with the given tactics, for the given machine.
    ///
    /// ```
    /// use relayout::plan::{Blocking, BlockWrite, Plan, Tactics};
    /// use relayout::{Layout, Target};
    ///
    /// let (src, dst) = (Layout::row_major(&[256, 256])?, Layout::col_major(&[256, 256])?);
    /// let staged = Tactics::fixed(Blocking { write: BlockWrite::Staged, ..Blocking::DEFAULT });
    /// let plan = Plan::with_tactics(&src, &dst, 4, staged, Target::host())?;
    /// assert!(plan.stage_bytes().is_some());
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn with_tactics(
        src: &Layout,
        dst: &Layout,
        elem_size: usize,
        tactics: Tactics,
        target: Target,
    ) -> Result<Plan> {
        Plan::build(
            src,
            dst,
            Elements::Moved(elem_size),
            tactics,
            target,
            LineOffsets::default(),
        )
    }

    /// [`Plan::with_tactics`] for buffers that lie `line_offsets` bytes past the start of a
    /// cache line of `target` (see [`LineOffsets`]). Transposes whose rows along a side all
    /// start at the same place in their lines, and span at least 32 lines, move the elements
    /// up to each row's next line on their own first, so that their blocks read and their runs
    /// write whole lines. The plan is correct wherever the buffers lie, and fastest where they
    /// lie as planned; [`Relayout::run`](crate::Relayout::run) plans so for the buffers it is
    /// given.
    ///
    /// ```
    /// use relayout::plan::{LineOffsets, Plan, Tactics};
    /// use relayout::{Layout, Target};
    ///
    /// let (src, dst) = (Layout::row_major(&[640, 640])?, Layout::col_major(&[640, 640])?);
    /// let host = Target::host();
    /// let aligned = Plan::with_tactics(&src, &dst, 4, Tactics::default(), host)?;
    /// // A destination 16 bytes into a line: the first 12 f32 of each of its rows (40 lines
    /// // long) go first.
    /// let at = LineOffsets { src: 0, dst: 16 };
    /// let offset = Plan::with_tactics_at(&src, &dst, 4, Tactics::default(), host, at)?;
    /// assert!(offset.regions().len() > aligned.regions().len());
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn with_tactics_at(
        src: &Layout,
        dst: &Layout,
        elem_size: usize,
        tactics: Tactics,
        target: Target,
        line_offsets: LineOffsets,
    ) -> Result<Plan> {
        let elements = Elements::Moved(elem_size);
        Plan::build(src, dst, elements, tactics, target, line_offsets)
    }

    /// [`Plan::with_tactics`] for a relayout that converts every element on the way: the
    /// kernels load source elements and store destination elements of `conversion`'s types (a
    /// conversion that changes nothing plans as a plain relayout).
    ///
    /// ```
    /// use relayout::plan::{Plan, Tactics};
    /// use relayout::{Conversion, DType, Layout, Target};
    ///
    /// let (src, dst) = (Layout::row_major(&[64, 64])?, Layout::col_major(&[64, 64])?);
    /// let to_bf16 = Conversion::new(DType::F32, DType::BF16)?;
    /// let plan = Plan::converting(&src, &dst, to_bf16, Tactics::default(), Target::host())?;
    /// assert_eq!((plan.elem_size(), plan.dst_elem_size()), (4, 2));
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn converting(
        src: &Layout,
        dst: &Layout,
        conversion: Conversion,
        tactics: Tactics,
        target: Target,
    ) -> Result<Plan> {
        let from = conversion.from_type();
        let elements = if conversion.is_identity() {
            from.packed()
                .map_or(Elements::Moved(from.size()), Elements::Packed)
        } else {
            Elements::Converted(conversion, None)
        };
        Plan::build(src, dst, elements, tactics, target, LineOffsets::default())
    }

    /// [`Plan::converting`] with a per-index affine map on the way (see [`PerIndex`]): the
    /// loops carry the index along the map's dim ([`Loop::index_stride`]). Fails with
    /// [`Error::Conversion`] when the map does not fit the conversion or the layouts' shape.
    ///
    /// ```
    /// use relayout::plan::{Plan, Tactics};
    /// use relayout::{Conversion, DType, Layout, PerIndex, Target};
    ///
    /// let (src, dst) = (Layout::row_major(&[4, 64])?, Layout::col_major(&[4, 64])?);
    /// let rows = PerIndex::new(0, &[1.0, 2.0, 3.0, 4.0], &[])?;
    /// let q = Conversion::new(DType::F32, DType::I8)?;
    /// let plan = Plan::converting_per_index(&src, &dst, q, rows, Tactics::default(), Target::host())?;
    /// assert_eq!(plan.per_index().map(|m| m.dim()), Some(0));
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn converting_per_index(
        src: &Layout,
        dst: &Layout,
        conversion: Conversion,
        map: PerIndex,
        tactics: Tactics,
        target: Target,
    ) -> Result<Plan> {
        map.check(&conversion, src.shape())?;
        Plan::build(
            src,
            dst,
            Elements::Converted(conversion, Some(map)),
            tactics,
            target,
            LineOffsets::default(),
        )
    }

    /// [`Plan::with_tactics`] for sub-byte elements packed several to a byte (see [`Packed`]):
    /// the layouts' offsets count elements.
    ///
    /// ```
    /// use relayout::plan::{Kernel, Packed, Plan, Tactics};
    /// use relayout::{Layout, Target};
    ///
    /// let (src, dst) = (Layout::row_major(&[64, 64])?, Layout::col_major(&[64, 64])?);
    /// let int4 = Packed::new(4)?;
    /// let plan = Plan::packed(&src, &dst, int4, Tactics::default(), Target::host())?;
    /// assert_eq!((plan.dst_len(), plan.dst_bytes()), (4096, 2048));
    /// assert!(matches!(plan.regions()[0].kernel, Kernel::Transpose { .. })); // nibble pairs
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn packed(
        src: &Layout,
        dst: &Layout,
        packed: Packed,
        tactics: Tactics,
        target: Target,
    ) -> Result<Plan> {
        Plan::build(
            src,
            dst,
            Elements::Packed(packed),
            tactics,
            target,
            LineOffsets::default(),
        )
    }

    fn build(
        src: &Layout,
        dst: &Layout,
        elements: Elements,
        tactics: Tactics,
        target: Target,
        line_offsets: LineOffsets,
    ) -> Result<Plan> {
        let (elem_size, conversion, packed, per_index) = match elements {
            Elements::Moved(size) => (size, None, None, None),
            Elements::Packed(p) => (1, None, Some(p), None),
            Elements::Converted(c, map) => (c.from_type().size(), Some(c), None, map),
        };
        let dst_elem_size = conversion.map_or(elem_size, |c| c.to_type().size());
        if ![1, 2, 4, 8].contains(&elem_size) {
            return Err(Error::ElementType(format!(
                "element size {elem_size} bytes; relayout moves elements of 1, 2, 4 or 8 bytes"
            )));
        }
        if target.vector_bytes < elem_size || !target.vector_bytes.is_power_of_two() {
            return Err(Error::Unsupported(format!(
                "a target with {}-byte vectors for {elem_size}-byte elements",
                target.vector_bytes
            )));
        }
        check_pair(src, dst)?;
        if src.is_empty() {
            // An empty tensor: nothing to move, no buffer to touch (both cosizes are 0).
            return Ok(Plan {
                elem_size,
                packed,
                conversion,
                per_index,
                src_len: src.cosize(),
                dst_len: dst.cosize(),
                elements: 0,
                target,
                regions: Vec::new(),
                blocking: NotCompared(None),
            });
        }
        // A swizzle changes the offsets of whole digits, so the dims of a swizzled pair are
        // indexed, their offsets computed and swizzled at each point; but where the swizzle
        // leaves runs of 2^M contiguous, the pair is reshaped so that the dims (or low parts of
        // dims) inside a run are loops outside the swizzle (see `swizzle`).
        // With a per-index map, a swizzled pair is indexed whole (the split would reshape the
        // map's dim).
        let swizzled = src.swizzle().is_some() || dst.swizzle().is_some();
        let split = swizzled.then(|| swizzle::split(src, dst).filter(|_| per_index.is_none()));
        let (walked_src, walked_dst, loopable) = match split {
            None => (src.clone(), dst.clone(), vec![true; src.rank()]),
            Some(None) => (src.clone(), dst.clone(), vec![false; src.rank()]),
            Some(Some(split)) => (split.src, split.dst, split.walked),
        };
        let (src_walked, dst_walked) = (&walked_src, &walked_dst);
        let rank = src_walked.rank();
        let mut boxes: Vec<Option<Vec<refine::DimBox>>> = (0..rank)
            .map(|d| {
                let scaled = per_index.as_ref().is_some_and(|m| m.dim() == d);
                loopable[d]
                    .then(|| refine::refine_dim(src_walked, dst_walked, d, scaled))
                    .flatten()
            })
            .collect();
        let region_count = |b: &[Option<Vec<refine::DimBox>>]| {
            b.iter()
                .flatten()
                .fold(1usize, |acc, v| acc.saturating_mul(v.len()))
        };
        if region_count(&boxes) > MAX_REGIONS {
            for b in boxes.iter_mut() {
                if b.as_ref().is_some_and(|v| v.len() > 1) {
                    *b = None;
                }
            }
        }
        let indexed_dims: Vec<usize> = (0..rank).filter(|&d| boxes[d].is_none()).collect();
        // A swizzle needs the indexed loop even with no dims (a rank-0 layout's one offset).
        let indexed = (!indexed_dims.is_empty() || swizzled).then(|| {
            let extents: Vec<usize> = indexed_dims
                .iter()
                .map(|&d| src_walked.shape()[d])
                .collect();
            Indexed {
                src: offset_terms(src_walked, &indexed_dims, &extents),
                dst: offset_terms(dst_walked, &indexed_dims, &extents),
                extents,
                src_swizzle: indexed_swizzle(src),
                dst_swizzle: indexed_swizzle(dst),
                index: per_index
                    .as_ref()
                    .and_then(|m| indexed_dims.iter().position(|&d| d == m.dim())),
            }
        });
        let src_base = outer_base(src);
        let dst_base = outer_base(dst);
        let cx = schedule::Context {
            elem_size,
            dst_elem_size,
            converts: conversion.is_some(),
            zips: per_index.is_none() && packed.is_none(),
            target,
            dst_bytes: packed.map_or(dst.cosize().saturating_mul(dst_elem_size), |p| {
                p.bytes_for(dst.cosize())
            }),
            tactics,
            line_offsets: line_offsets.within(target.line_bytes),
        };
        let mut regions = Vec::new();
        // The blocking of the transpose that moves the most elements, and how many it moves.
        let mut blocking: Option<(usize, Blocking)> = None;
        for combo in box_combinations(&boxes) {
            let loops: Vec<Loop> = combo.iter().flat_map(|b| b.loops.iter().copied()).collect();
            let region = Region {
                src_base: src_base + combo.iter().map(|b| b.src_base).sum::<i64>(),
                dst_base: dst_base + combo.iter().map(|b| b.dst_base).sum::<i64>(),
                index_base: combo.iter().map(|b| b.index_base).sum::<i64>(),
                indexed: indexed.clone(),
                loops,
                kernel: Kernel::Element,
            };
            let elements = region.elements();
            let scheduled = schedule::schedule(region, cx);
            if let Some(b) = scheduled.blocking {
                if blocking.is_none_or(|(most, _)| elements > most) {
                    blocking = Some((elements, b));
                }
            }
            match packed {
                None => regions.extend(scheduled.regions),
                Some(p) => {
                    regions.extend(scheduled.regions.into_iter().map(|r| packed::lower(r, p)))
                }
            }
        }
        let plan = Plan {
            elem_size,
            packed,
            conversion,
            per_index,
            src_len: src.cosize(),
            dst_len: dst.cosize(),
            elements: src.size(),
            target,
            regions,
            blocking: NotCompared(blocking.map(|(_, b)| b)),
        };
        if cfg!(debug_assertions) {
            if let Err(violation) = plan.verify() {
                panic!(
                    "the planner made a malformed plan ({violation}) for {src} -> {dst}:\n{plan}"
                );
            }
        }
        Ok(plan)
    }

    /// Calls `f(src_index, dst_index)` for every element the plan moves, in plan order, without
    /// compiling anything. The tests use it to prove a plan moves each element exactly once.
    pub fn for_each_move(&self, mut f: impl FnMut(usize, usize)) {
        interpret::for_each_move(self, |s, d, _| f(s, d))
    }

    /// [`Plan::for_each_move`] with each element's index along the dim of the plan's per-index
    /// map ([`Plan::per_index`]; 0 without one), as the loops carry it: `f(src_index,
    /// dst_index, index)`. The tests use it to prove the index the kernels read is the
    /// element's coordinate.
    ///
    /// ```
    /// use relayout::plan::{Plan, Tactics};
    /// use relayout::{Conversion, DType, Layout, PerIndex, Target};
    ///
    /// let src = Layout::row_major(&[3, 4])?;
    /// let dst = Layout::col_major(&[3, 4])?;
    /// let columns = PerIndex::new(1, &[1.0; 4], &[])?;
    /// let c = Conversion::new(DType::F32, DType::F16)?;
    /// let plan = Plan::converting_per_index(&src, &dst, c, columns, Tactics::default(), Target::host())?;
    /// plan.for_each_indexed_move(|s, _, column| assert_eq!(s % 4, column as usize));
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn for_each_indexed_move(&self, f: impl FnMut(usize, usize, i64)) {
        interpret::for_each_move(self, f)
    }

    /// Checks the plan's structural invariants (see [`Violation`]): what the code generator
    /// relies on, and that every access stays inside the buffers. The planner runs it on every
    /// plan in debug builds.
    pub fn verify(&self) -> std::result::Result<(), Violation> {
        verify::verify(self)
    }
}

/// The swizzle of a swizzled layout's indexed offsets, with the layout's base inside it.
fn indexed_swizzle(layout: &Layout) -> Option<IndexedSwizzle> {
    layout.swizzle().map(|swizzle| IndexedSwizzle {
        swizzle,
        base: layout.base(),
    })
}

/// The part of a region's base that the layout gives outside any swizzle: the base and the
/// buffer start for an affine layout, the buffer start alone for a swizzled one (whose base is
/// swizzled with the indexed offsets).
fn outer_base(layout: &Layout) -> i64 {
    match layout.swizzle() {
        Some(_) => -layout.buffer_start(),
        None => layout.base() - layout.buffer_start(),
    }
}

/// The offset terms of `layout`'s digits that read the dims in `dims` (whose extents are
/// `extents`), with those dims renumbered to their positions in `dims`.
fn offset_terms(layout: &Layout, dims: &[usize], extents: &[usize]) -> Vec<OffsetTerm> {
    let local = |d: usize| dims.iter().position(|&x| x == d).unwrap_or(0);
    layout
        .digits()
        .iter()
        .filter(|g| g.source.dims().iter().any(|d| dims.contains(d)))
        .map(|g| {
            let source = Source::fused(g.source.terms().into_iter().map(|(d, w)| (local(d), w)));
            let (lowest, _) = source.range(extents);
            OffsetTerm {
                inputs: source.terms(),
                shift: g.shift,
                div: g.div,
                modulus: g.ext,
                stride: g.stride,
                nonnegative: lowest + g.shift as i128 >= 0,
            }
        })
        .collect()
}

/// Every choice of one box per separable dim.
fn box_combinations(boxes: &[Option<Vec<refine::DimBox>>]) -> Vec<Vec<refine::DimBox>> {
    boxes.iter().flatten().fold(vec![Vec::new()], |acc, dim| {
        acc.iter()
            .flat_map(|prefix| {
                dim.iter().map(move |b| {
                    let mut next = prefix.clone();
                    next.push(b.clone());
                    next
                })
            })
            .collect()
    })
}
