//! Runs a plan without compiling it: the independent check that a plan moves every element of
//! the source to the right slot exactly once (and, with a per-index map, knows each element's
//! index along the map's dim).

use super::ir::{Kernel, Loop, Plan, Region};
use crate::layout::for_each_coord;

/// A point of a loop nest: source index, destination index, index along a per-index map's dim.
type Point = (i64, i64, i64);

/// See [`Plan::for_each_indexed_move`].
pub(super) fn for_each_move(plan: &Plan, mut f: impl FnMut(usize, usize, i64)) {
    for region in plan.regions() {
        let base = (region.src_base, region.dst_base, region.index_base);
        match &region.indexed {
            None => walk(region, &region.loops, base, &mut f),
            Some(ix) => for_each_coord(&ix.extents, |x| {
                let (s, d) = ix.offsets(x);
                let i = ix.index.map_or(0, |k| x[k] as i64);
                let at = (base.0 + s as i64, base.1 + d as i64, base.2 + i);
                walk(region, &region.loops, at, &mut f);
            }),
        }
    }
}

/// The loops `loops` from `at`, then the region's kernel at each point.
fn walk(region: &Region, loops: &[Loop], at: Point, f: &mut impl FnMut(usize, usize, i64)) {
    each_step(loops, at, &mut |at| kernel(region.kernel, at, f));
}

/// Calls `body` at the start of every iteration of the nest `loops` (outermost first).
fn each_step(loops: &[Loop], at: Point, body: &mut impl FnMut(Point)) {
    let Some((outer, inner)) = loops.split_first() else {
        return body(at);
    };
    let (s, d, x) = at;
    for i in 0..outer.extent as i64 {
        let next = (
            s + i * outer.src_stride,
            d + i * outer.dst_stride,
            x + i * outer.index_stride,
        );
        each_step(inner, next, body);
    }
}

/// The moves of one run of `kernel` at `at`, with the loops it consumes.
fn kernel(kernel: Kernel, at: Point, f: &mut impl FnMut(usize, usize, i64)) {
    let mut visit = |(s, d, x): Point| f(s as usize, d as usize, x);
    match kernel {
        Kernel::Element => visit(at),
        Kernel::Copy {
            len,
            index_stride,
            write,
        } => {
            let run = Loop {
                index_stride,
                ..Loop::contiguous(len)
            };
            each_step(&[write.rows(), run], at, &mut visit)
        }
        Kernel::Transpose { tile, .. } => each_step(&[tile.b, tile.a], at, &mut visit),
        Kernel::Zip { tile, write } => {
            each_step(&[write.steps(), tile.long, tile.short], at, &mut visit)
        }
        Kernel::Unzip { tile, write } => {
            each_step(&[write.steps(), tile.long, tile.short], at, &mut visit)
        }
    }
}
