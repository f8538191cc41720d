//! Runs a plan without compiling it: the independent check that a plan moves every element of
//! the source to the right slot exactly once.

use super::{Kernel, Loop, Plan, Region};
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
                let s: i128 = ix.src.iter().map(|g| g.eval(x)).sum();
                let d: i128 = ix.dst.iter().map(|g| g.eval(x)).sum();
                let (s, d) = (region.src_base + s as i64, region.dst_base + d as i64);
                walk(region, &region.loops, s, d, &mut f);
            }),
        }
    }
}

fn walk(region: &Region, loops: &[Loop], s: i64, d: i64, f: &mut impl FnMut(usize, usize)) {
    let Some((outer, inner)) = loops.split_first() else {
        return kernel(region.kernel, s, d, f);
    };
    for i in 0..outer.extent as i64 {
        walk(
            region,
            inner,
            s + i * outer.src_stride,
            d + i * outer.dst_stride,
            f,
        );
    }
}

fn kernel(kernel: Kernel, s: i64, d: i64, f: &mut impl FnMut(usize, usize)) {
    match kernel {
        Kernel::Element => f(s as usize, d as usize),
        Kernel::Copy { len } => (0..len).for_each(|k| f(s as usize + k, d as usize + k)),
        Kernel::Transpose { a, b, .. }
        | Kernel::Zip {
            short: a, long: b, ..
        }
        | Kernel::Unzip {
            short: a, long: b, ..
        } => {
            for j in 0..b.extent as i64 {
                for i in 0..a.extent as i64 {
                    let src = s + i * a.src_stride + j * b.src_stride;
                    let dst = d + i * a.dst_stride + j * b.dst_stride;
                    f(src as usize, dst as usize);
                }
            }
        }
    }
}
