//! Loop orders ([`LoopOrder`]): the source's and the destination's order put the loops around
//! each kernel where they say, and every order moves every element exactly once, bit for bit
//! against the reference, at every element size, on small shapes with short extents.

mod common;

use common::{check_pair_pinned_at_every_size, check_plan_moves_of, permutations, Pin};
use relayout::plan::{Blocking, Kernel, LoopOrder, Plan, Region, Tactics};
use relayout::{Layout, Target};

/// The loops of `region` that its kernel's order leaves to the tactics: all of them, but an
/// element move's innermost loop.
fn ordered_loops(region: &Region) -> &[relayout::plan::Loop] {
    match region.kernel {
        Kernel::Element => &region.loops[..region.loops.len().saturating_sub(1)],
        _ => &region.loops,
    }
}

#[test]
fn source_and_destination_orders_sort_the_loops_by_their_side() {
    // Macro blocks of one strip and one block: the loops over strips and blocks are then the
    // only block loops, and sorted with the others.
    let blocking = Blocking {
        macro_strips: 1,
        macro_blocks: 1,
        ..Blocking::DEFAULT
    };
    let shapes: [&[usize]; 3] = [&[5, 7, 3, 12], &[9, 64, 40], &[3, 13, 6, 15]];
    let mut fitted_differs = false;
    for shape in shapes {
        let src = Layout::row_major(shape).unwrap();
        for order in permutations(shape.len()) {
            let dst = Layout::ordered(shape, &order).unwrap();
            for elem in [1usize, 2, 4, 8] {
                let plan_of = |order| {
                    let tactics = Tactics::fixed(blocking).ordered(order);
                    Plan::with_tactics(&src, &dst, elem, tactics, Target::host()).unwrap()
                };
                let fitted = plan_of(LoopOrder::Fitted);
                for (side, stride) in [
                    (
                        LoopOrder::Source,
                        (|l: &relayout::plan::Loop| l.src_stride) as fn(&_) -> i64,
                    ),
                    (LoopOrder::Destination, |l| l.dst_stride),
                ] {
                    let plan = plan_of(side);
                    for region in plan.regions() {
                        let strides: Vec<u64> = ordered_loops(region)
                            .iter()
                            .map(|l| stride(l).unsigned_abs())
                            .collect();
                        assert!(
                            strides.windows(2).all(|w| w[0] >= w[1]),
                            "{side:?} order, {elem}-byte elements, {src} -> {dst}:\n{plan}"
                        );
                    }
                    fitted_differs |= plan != fitted;
                    check_plan_moves_of(&plan, &src, &dst);
                }
            }
        }
    }
    assert!(fitted_differs, "no order changed any plan");
}

#[test]
fn every_order_moves_every_element_once_bit_for_bit() {
    // Every blocking the candidates use, in each order, with streams from the first byte (so
    // staged and streamed blocks, streamed copies and zips run on small shapes), on
    // permutations of short extents from 3 to 15 with partial blocks and vector tails.
    let eager = Target {
        stream_min_bytes: 0,
        ..Target::host()
    };
    let pairs = [
        (vec![3, 15, 7], vec![2, 1, 0]),
        (vec![4, 11, 9, 5], vec![0, 2, 1, 3]),
        (vec![6, 10, 13, 8], vec![3, 2, 1, 0]),
        (vec![70, 3, 130], vec![0, 2, 1]),
        (vec![12, 2, 200], vec![2, 0, 1]),
    ];
    let mut tactics: Vec<Tactics> = Vec::new();
    for candidate in Tactics::CANDIDATES {
        for order in [LoopOrder::Fitted, LoopOrder::Source, LoopOrder::Destination] {
            let t = candidate.ordered(order);
            if !tactics.contains(&t) {
                tactics.push(t);
            }
        }
    }
    for (shape, axes) in pairs {
        let src = Layout::row_major(&shape).unwrap();
        let dst = Layout::ordered(&shape, &axes).unwrap();
        for &t in &tactics {
            for target in [Target::host(), eager] {
                check_plan_moves_of(
                    &Plan::with_tactics(&src, &dst, 4, t, target).unwrap(),
                    &src,
                    &dst,
                );
                let pin = Some(Pin { tactics: t, target });
                check_pair_pinned_at_every_size(&src, &dst, pin);
            }
        }
    }
}
