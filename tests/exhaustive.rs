//! Exhaustive small shapes: every shape of rank 1 to 3 with extents 1 to 8, and of rank 4 with
//! extents 1 to 6 and 8, each in every layout kind the notations can write (every permutation,
//! packed, odd/even, XLA-style tiled, and a fused TVM-style split), relaid out to and from
//! row-major by the JIT and compared with the reference bit for bit at element sizes 1, 2, 4 and
//! 8 (the plan interpreter checks each plan too). Each rank is its own test so they run in
//! parallel.
//!
//! Rank 4 leaves out extent 7, which ranks 1 to 3 cover: its tails (7 = 4 + 3 f32 lanes, 3 × 2 + 1
//! f64 ones) and its padding under splits by 2 and 4 are those of 3 and 5. Each rank-4 shape
//! costs about 300 JIT compiles, and the 1,695 shapes with a 7 took two of the test's five
//! minutes on a 2-core CI machine.

mod common;

use common::{check_pair, permutations};
use relayout::{Digit, Layout, Source};

/// Extents 1 to 8.
const EVERY_EXTENT: [usize; 8] = [1, 2, 3, 4, 5, 6, 7, 8];
/// Extents 1 to 8 but 7, for rank 4.
const EXTENTS_OF_RANK_4: [usize; 7] = [1, 2, 3, 4, 5, 6, 8];

/// Every shape of `rank` dims whose extents are among `extents`.
fn shapes(rank: usize, extents: &[usize]) -> Vec<Vec<usize>> {
    (0..rank).fold(vec![vec![]], |acc, _| {
        acc.iter()
            .flat_map(|s| {
                extents.iter().map(move |&e| {
                    let mut next = s.clone();
                    next.push(e);
                    next
                })
            })
            .collect()
    })
}

/// A dense row-major layout over physical digits (outermost first), each `(dim, div, ext)`:
/// digit extents are `ext`, or what is left of the dim above `div`; padding where a split does
/// not divide.
fn physical(shape: &[usize], digits: &[(usize, usize, Option<usize>)]) -> Layout {
    let extents: Vec<usize> = digits
        .iter()
        .map(|&(d, div, ext)| ext.unwrap_or(shape[d].div_ceil(div)))
        .collect();
    let mut stride = 1i64;
    let mut out = vec![];
    for (&(d, div, ext), &e) in digits.iter().zip(&extents).rev() {
        out.push(Digit::new(Source::Dim(d), div, ext, stride));
        stride *= e as i64;
    }
    Layout::from_parts(shape, out, 0, Some(stride as usize)).unwrap()
}

/// Every layout kind of `shape`.
fn kinds(shape: &[usize]) -> Vec<Layout> {
    let rank = shape.len();
    let whole = |d: usize| (d, 1, None);
    let mut out: Vec<Layout> = permutations(rank)
        .iter()
        .map(|order| Layout::ordered(shape, order).unwrap())
        .collect();
    for d in 0..rank {
        for k in [2, 4] {
            // Packed: dim d split by k, the inner part innermost (NCHWc).
            let mut digits: Vec<_> = (0..rank)
                .map(|x| if x == d { (d, k, None) } else { whole(x) })
                .collect();
            digits.push((d, 1, Some(k)));
            out.push(physical(shape, &digits));
        }
    }
    let last = rank - 1;
    for n in [2, 4] {
        // Odd/even strips of n on the last dim (Morello's oe(n)).
        let mut digits: Vec<_> = (0..last).map(whole).collect();
        digits.extend([(last, n, None), (last, 1, Some(2)), (last, 2, Some(n / 2))]);
        out.push(physical(shape, &digits));
    }
    if rank >= 2 {
        // XLA-style (2,4) tiles over the last two dims, padded where they do not divide.
        let prev = rank - 2;
        let mut digits: Vec<_> = (0..prev).map(whole).collect();
        digits.extend([
            (prev, 2, None),
            (last, 4, None),
            (prev, 1, Some(2)),
            (last, 1, Some(4)),
        ]);
        out.push(physical(shape, &digits));
    }
    // TVM-style fused split: the row-major index v as [v // 3, v % 3] in rows of 4.
    let size: usize = shape.iter().product();
    let mut weight = 1i64;
    let mut terms = vec![];
    for d in (0..rank).rev() {
        terms.push((d, weight));
        weight *= shape[d] as i64;
    }
    let fused = Source::fused(terms);
    let digits = vec![
        Digit::new(fused.clone(), 3, None, 4),
        Digit::new(fused, 1, Some(3), 1),
    ];
    out.push(Layout::from_parts(shape, digits, 0, Some(size.div_ceil(3) * 4)).unwrap());
    out
}

/// Checks every kind of every shape of `rank` with `extents` against row-major, both ways,
/// sharing the shapes among all cores.
fn every_kind_to_and_from_row_major(rank: usize, extents: &[usize]) {
    let all = shapes(rank, extents);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|scope| {
        for t in 0..threads {
            let all = &all;
            scope.spawn(move || {
                for shape in all.iter().skip(t).step_by(threads) {
                    let rm = Layout::row_major(shape).unwrap();
                    for layout in kinds(shape) {
                        check_pair(&rm, &layout);
                        check_pair(&layout, &rm);
                    }
                }
            });
        }
    });
}

#[test]
fn rank_1() {
    every_kind_to_and_from_row_major(1, &EVERY_EXTENT);
}

#[test]
fn rank_2() {
    every_kind_to_and_from_row_major(2, &EVERY_EXTENT);
    // At rank 2, every pair of kinds too.
    for shape in shapes(2, &EVERY_EXTENT) {
        let all = kinds(&shape);
        for src in &all {
            for dst in &all {
                check_pair(src, dst);
            }
        }
    }
}

#[test]
fn rank_3() {
    every_kind_to_and_from_row_major(3, &EVERY_EXTENT);
}

#[test]
fn rank_4() {
    every_kind_to_and_from_row_major(4, &EXTENTS_OF_RANK_4);
}
