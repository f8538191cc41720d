//! Runs a plan without compiling it: the independent check that a plan moves every element of
//! the source to the right slot exactly once.

use super::ir::{Kernel, Loop, Plan, Region};
use crate::layout::for_each_coord;

/// See [`Plan::for_each_move`].
pub(super) fn for_each_move(plan: &Plan, mut f: impl FnMut(usize, usize)) {
    for region in plan.regions() {
        match &region.indexed {
            None => walk(
                region,
                &region.loops,
                region.src_base,
                region.dst_base,
                &mut f,
            ),
            Some(ix) => for_each_coord(&ix.extents, |x| {
                let (s, d) = ix.offsets(x);
                let (s, d) = (region.src_base + s as i64, region.dst_base + d as i64);
                walk(region, &region.loops, s, d, &mut f);
            }),
        }
    }
}

/// The loops `loops` from `(s, d)`, then the region's kernel at each point.
fn walk(region: &Region, loops: &[Loop], s: i64, d: i64, f: &mut impl FnMut(usize, usize)) {
    each_step(loops, s, d, &mut |s, d| kernel(region.kernel, s, d, f));
}

/// Calls `body` at the start of every iteration of the nest `loops` (outermost first).
fn each_step(loops: &[Loop], s: i64, d: i64, body: &mut impl FnMut(i64, i64)) {
    let Some((outer, inner)) = loops.split_first() else {
        return body(s, d);
    };
    for i in 0..outer.extent as i64 {
        each_step(
            inner,
            s + i * outer.src_stride,
            d + i * outer.dst_stride,
            body,
        );
    }
}

/// The moves of one run of `kernel` at `(s, d)`, with the loops it consumes.
fn kernel(kernel: Kernel, s: i64, d: i64, f: &mut impl FnMut(usize, usize)) {
    match kernel {
        Kernel::Element => f(s as usize, d as usize),
        Kernel::Copy { len, write } => {
            let run = Loop::contiguous(len);
            each_step(&[write.rows(), run], s, d, &mut |s, d| {
                f(s as usize, d as usize)
            })
        }
        Kernel::Transpose { tile, .. } => tile_moves(tile.a, tile.b, s, d, f),
        Kernel::Zip { tile, write } => each_step(&[write.steps()], s, d, &mut |s, d| {
            tile_moves(tile.short, tile.long, s, d, f)
        }),
        Kernel::Unzip { tile, write } => each_step(&[write.steps()], s, d, &mut |s, d| {
            tile_moves(tile.short, tile.long, s, d, f)
        }),
    }
}

/// Every point of the two loops `x` (inner) and `y` (outer) of a tile kernel.
fn tile_moves(x: Loop, y: Loop, s: i64, d: i64, f: &mut impl FnMut(usize, usize)) {
    each_step(&[y, x], s, d, &mut |s, d| f(s as usize, d as usize));
}
