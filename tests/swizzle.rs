//! CuTe's swizzled layouts (`Sw<B,M,S> o OFFSET o LAYOUT`): offsets from the command line by
//! CuTe's definition, and the JIT against the reference, bit for bit, at every element size,
//! from swizzled to plain layouts, back, and between swizzles.

mod common;

use common::guard::{check_guarded, Run};
use common::{check_pair, check_pair_pinned, run_cli, Pin};
use relayout::plan::{Kernel, Plan, Tactics};
use relayout::Layout;

/// CuTe's swizzle from its definition in NVIDIA/cutlass `include/cute/swizzle.hpp`:
/// `yyy_msk = ((1 << B) - 1) << (M + max(0,S))`, `apply(o) = o ^ shiftr(o & yyy_msk, S)`
/// (a negative `S` shifts left).
fn cute_swizzle(b: i64, m: i64, s: i64, o: i64) -> i64 {
    let yyy_msk = ((1i64 << b) - 1) << (m + s.max(0));
    let y = o & yyy_msk;
    o ^ if s >= 0 { y >> s } else { y << -s }
}

fn parse(text: &str) -> Layout {
    Layout::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// Swizzled layouts of shape [8, 64] (the example and variants) and their plain
/// neighbours.
const SWIZZLED_8X64: [&str; 6] = [
    "cute:Sw<3,4,3> o _0 o (8,64):(64,1)",
    "cute:Sw<3,3,3> o _0 o (8,64):(64,1)",
    "cute:Sw<2,4,3> o (8,64):(64,1)",
    "cute:Sw<3,4,3> o _0 o (8,64):(1,8)",
    "moye:Sw<2,0,-2> o 4 o (8, 64):(64, 1)",
    "cute:Sw<1,5,1> o 3 o (8,(16,4)):(64,(1,16))",
];

const PLAIN_8X64: [&str; 3] = [
    "cute:(8,64):(64,1)",
    "cute:(8,64):(1,8)",
    "cute:(8,(16,4)):(16,(1,128))",
];

#[test]
fn offsets_on_the_command_line_follow_cutes_definition() {
    let line = run_cli(&["offsets", "cute:Sw<3,4,3> o _0 o (8,64):(64,1)"]);
    let got: Vec<i64> = line
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    let want: Vec<i64> = (0..8)
        .flat_map(|r| (0..64).map(move |c| cute_swizzle(3, 4, 3, 64 * r + c)))
        .collect();
    assert_eq!(got, want);
    // Row 2 (offsets 128..191) has bit 7 set: bit 4 flips, so its runs of 16 swap in pairs.
    assert_eq!(got[128..132], [144, 145, 146, 147]);
    assert_eq!(got[144..148], [128, 129, 130, 131]);
    // A negative shift with an offset, in MoYe's spacing.
    let line = run_cli(&["offsets", "moye:Sw<2,0,-2> o 4 o (4, 4):(4, 1)"]);
    let got: Vec<i64> = line
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    let want: Vec<i64> = (0..16).map(|i| cute_swizzle(2, 0, -2, 4 + i)).collect();
    assert_eq!(got, want);
}

#[test]
fn swizzled_to_plain_back_and_between_swizzles() {
    for sw in SWIZZLED_8X64 {
        for plain in PLAIN_8X64 {
            check_pair(&parse(sw), &parse(plain));
            check_pair(&parse(plain), &parse(sw));
        }
        for other in SWIZZLED_8X64 {
            check_pair(&parse(sw), &parse(other));
        }
    }
}

#[test]
fn cutes_shared_memory_atoms_and_their_tilings() {
    // As CuTe prints them: the SM90 GMMA 128-byte swizzle atoms (8-bit K-major, 16-bit
    // MN-major), the K-major atom tiled to 128x128, and a three-mode tile with two stages.
    for (sw, plain) in [
        (
            "cute:Sw<3,4,3> o _0 o (_8,_128):(_128,_1)",
            "cute:(8,128):(128,1)",
        ),
        (
            "cute:Sw<3,3,3> o _0 o (_64,_8):(_1,_64)",
            "cute:(64,8):(8,1)",
        ),
        (
            "cute:Sw<3,4,3> o _0 o ((_8,_16),(_128,_1)):((_128,_1024),(_1,_0))",
            "cute:(128,128):(128,1)",
        ),
        (
            "cute:Sw<3,4,3> o _0 o (_64,_64,_2):(_64,_1,_4096)",
            "cute:(64,64,2):(1,64,4096)",
        ),
    ] {
        check_pair(&parse(sw), &parse(plain));
        check_pair(&parse(plain), &parse(sw));
    }
}

#[test]
fn odd_shapes_negative_strides_and_rank_one() {
    for (a, b) in [
        ("cute:Sw<2,1,3> o (5,12):(12,1)", "cute:(5,12):(1,5)"),
        ("cute:Sw<1,0,1> o (4,4):(-4,-1)", "cute:(4,4):(4,1)"),
        (
            "cute:Sw<3,2,-3> o 100 o (3,7,5):(35,5,1)",
            "cute:(3,7,5):(1,3,21)",
        ),
        ("cute:Sw<3,4,3> o _0 o 256:1", "cute:256:1"),
        ("cute:Sw<2,2,2> o 9:7", "cute:9:1"),
        ("cute:Sw<3,4,3> o (1,1):(0,0)", "cute:(1,1):(1,1)"),
    ] {
        check_pair(&parse(a), &parse(b));
        check_pair(&parse(b), &parse(a));
    }
    // A negative offset (a multiple of the run, so runs stay whole) swizzles negative offsets
    // as CuTe does, on their two's complement bits.
    let negative = parse("cute:Sw<3,4,3> o -32 o (8,64):(64,1)");
    assert_eq!(
        negative.offset(&[0, 0]).unwrap(),
        cute_swizzle(3, 4, 3, -32)
    );
    // -16 has bits 7..9 set, so bits 4..6 flip: -16 ^ 0b111_0000 = -128.
    assert_eq!(negative.min_offset(), -128);
    for plain in PLAIN_8X64 {
        check_pair(&negative, &parse(plain));
        check_pair(&parse(plain), &negative);
    }
    // A rank-0 layout: one element, at the swizzled base.
    let sw = relayout::layout::Swizzle::new(3, 4, 3).unwrap();
    let scalar = Layout::from_parts(&[], vec![], 200, None).unwrap();
    let scalar = scalar.with_swizzle(sw).unwrap();
    assert_eq!(scalar.offsets(), [cute_swizzle(3, 4, 3, 200)]);
    let one = Layout::row_major(&[]).unwrap();
    check_pair(&scalar, &one);
    check_pair(&one, &scalar);
    // A broadcast swizzled source reads some slots several times.
    check_pair(
        &parse("cute:Sw<3,4,3> o (8,64):(0,1)"),
        &parse("cute:(8,64):(64,1)"),
    );
}

#[test]
fn every_candidate_tactics_on_threads_with_padding() {
    let (sw, plain) = (
        parse("cute:Sw<3,3,3> o _0 o (32,64):(64,1)"),
        parse("cute:(32,64):(1,32)"),
    );
    for k in 0..Tactics::CANDIDATES.len() {
        let pin = Some(Pin::eager(k));
        check_pair_pinned::<u16>(&sw, &plain, None, pin);
        check_pair_pinned::<u16>(&plain, &sw, Some(7), pin);
        check_pair_pinned::<u64>(&plain, &sw, None, pin);
    }
    // A destination whose swizzled offsets leave holes: the pad value fills them.
    let holes = parse("cute:Sw<2,3,2> o (4,6):(32,1)");
    assert!(holes.cosize() > holes.size());
    check_pair_pinned::<u8>(&plain_of(&holes), &holes, Some(0x5A), None);
    check_pair_pinned::<u32>(&plain_of(&holes), &holes, Some(0x5A5A), None);
}

fn plain_of(layout: &Layout) -> Layout {
    Layout::row_major(layout.shape()).unwrap()
}

#[test]
fn kernels_stay_inside_guarded_buffers() {
    let pairs = [
        (SWIZZLED_8X64[0], PLAIN_8X64[0]),
        (SWIZZLED_8X64[4], SWIZZLED_8X64[5]),
        (
            "cute:Sw<3,2,-3> o 100 o (3,7,5):(35,5,1)",
            "cute:(3,7,5):(1,3,21)",
        ),
    ];
    for (a, b) in pairs {
        for (src, dst) in [(parse(a), parse(b)), (parse(b), parse(a))] {
            for elem_size in [1, 2, 4, 8] {
                for (pad, threads) in [(None, 1), (Some(0x7E57), 3)] {
                    let run = Run {
                        elem_size,
                        pad,
                        threads,
                        pin: None,
                    };
                    check_guarded(&src, &dst, run).unwrap_or_else(|e| panic!("{e}"));
                }
            }
        }
    }
}

/// The plan of a pair, checked by the verifier and the interpreter.
fn plan(src: &Layout, dst: &Layout, elem_size: usize) -> Plan {
    let plan = Plan::new(src, dst, elem_size).unwrap();
    plan.verify().unwrap_or_else(|v| panic!("{v}\n{plan}"));
    common::check_plan_moves_of(&plan, src, dst);
    plan
}

#[test]
fn runs_of_two_to_the_m_move_as_vector_copies() {
    // (swizzled, plain, 2^M): the swizzle leaves runs of 2^M contiguous on both sides, so each
    // point of the indexed loop swizzles one run's offset and copies the run whole.
    for (sw, plain, run) in [
        (
            "cute:Sw<3,4,3> o _0 o (8,64):(64,1)",
            "cute:(8,64):(64,1)",
            16,
        ),
        (
            "cute:Sw<3,3,3> o _0 o (8,64):(64,1)",
            "cute:(8,64):(64,1)",
            8,
        ),
        (
            "cute:Sw<3,3,3> o _0 o (_64,_8):(_1,_64)",
            "cute:(64,8):(1,64)",
            8,
        ),
        (
            "cute:Sw<3,4,3> o _0 o (_64,_64,_2):(_64,_1,_4096)",
            "cute:(64,64,2):(64,1,4096)",
            16,
        ),
        (
            "cute:Sw<3,4,3> o _0 o ((_8,_16),(_128,_1)):((_128,_1024),(_1,_0))",
            "cute:(128,128):(128,1)",
            16,
        ),
        (
            "cute:Sw<2,4,-3> o 32 o (8,64):(64,1)",
            "cute:(8,64):(64,1)",
            16,
        ),
    ] {
        let (sw, plain) = (parse(sw), parse(plain));
        for elem_size in [1, 2, 4, 8] {
            for (src, dst) in [(&sw, &plain), (&plain, &sw), (&sw, &sw)] {
                let plan = plan(src, dst, elem_size);
                let [region] = plan.regions() else {
                    panic!("one region\n{plan}");
                };
                let ix = region.indexed.as_ref().expect("an indexed loop");
                assert_eq!(ix.count() * run, sw.size(), "{plan}");
                assert_eq!(region.kernel.elements(), run, "{plan}");
                assert!(matches!(region.kernel, Kernel::Copy { .. }), "{plan}");
                let swizzled = [(src, ix.src_swizzle), (dst, ix.dst_swizzle)];
                for (layout, swizzle) in swizzled {
                    assert_eq!(layout.swizzle(), swizzle.map(|s| s.swizzle), "{plan}");
                }
            }
        }
    }
    let text = plan(
        &parse("cute:Sw<3,4,3> o _0 o (8,64):(64,1)"),
        &parse("cute:(8,64):(64,1)"),
        1,
    )
    .to_string();
    assert!(
        text.contains(
            "for x in [8, 4] (indexed: src += Sw<3,4,3>(64*x0 + 16*x1), dst += 64*x0 + 16*x1)"
        ) && text.contains("copy 16 contiguous elements"),
        "{text}"
    );
}

#[test]
fn rows_above_the_swizzle_are_walked_so_transposes_shuffle() {
    // (swizzled, transposed plain, 2^M): the rows lie a multiple of 2^(M+B+|S|) apart, above
    // every bit the swizzle reads or writes, so a transpose into (or out of) the swizzled side
    // walks them as a loop beside the runs and shuffles registers where a run fills a vector;
    // only the runs' positions along a row go through the swizzle.
    for (sw, plain, run) in [
        (
            "cute:Sw<2,2,2> o _0 o (64,64):(64,1)",
            "cute:(64,64):(1,64)",
            4,
        ),
        (
            "cute:Sw<3,3,3> o _0 o (16,512):(512,1)",
            "cute:(16,512):(1,16)",
            8,
        ),
        (
            "cute:Sw<3,4,3> o _0 o (8,1024):(1024,1)",
            "cute:(8,1024):(1,8)",
            16,
        ),
    ] {
        let (sw, plain) = (parse(sw), parse(plain));
        for elem_size in [1, 2, 4, 8] {
            for (src, dst) in [(&plain, &sw), (&sw, &plain)] {
                let plan = plan(src, dst, elem_size);
                let [region] = plan.regions() else {
                    panic!("one region\n{plan}");
                };
                let ix = region.indexed.as_ref().expect("an indexed loop");
                assert_eq!(ix.extents, [sw.shape()[1] / run], "{plan}");
                // Runs of a vector or more move through registers: tiles, or zips and
                // unzips where the rows are few.
                let shuffles = matches!(
                    region.kernel,
                    Kernel::Transpose { .. } | Kernel::Zip { .. } | Kernel::Unzip { .. }
                );
                assert!(shuffles || run * elem_size < 16, "{plan}");
            }
        }
        check_pair(&plain, &sw);
        check_pair(&sw, &plain);
    }
    // Rows above the swizzle that the runs' side also reads in order stay in the indexed loop,
    // which walks them outermost: a copy goes row by row.
    let copy = plan(
        &parse("cute:(8,1024):(1024,1)"),
        &parse("cute:Sw<3,4,3> o _0 o (8,1024):(1024,1)"),
        2,
    );
    let ix = copy.regions()[0].indexed.as_ref().expect("an indexed loop");
    assert_eq!(ix.extents, [8, 64], "{copy}");
}

#[test]
fn pairs_the_swizzle_cuts_into_elements_are_indexed_whole() {
    // No run to keep (M = 0), an offset inside a run, runs of two lengths, a run that the next
    // digit does not continue: every dim is indexed and each element swizzled on its own.
    for (src, dst) in [
        ("cute:Sw<2,0,-2> o 4 o (8,64):(64,1)", "cute:(8,64):(64,1)"),
        ("cute:Sw<3,4,3> o 3 o (8,64):(64,1)", "cute:(8,64):(64,1)"),
        (
            "cute:Sw<3,4,3> o (8,64):(64,1)",
            "cute:Sw<3,3,3> o (8,64):(64,1)",
        ),
        ("cute:Sw<3,4,3> o (8,64):(1,9)", "cute:(8,64):(64,1)"),
    ] {
        let (src, dst) = (parse(src), parse(dst));
        for (a, b) in [(&src, &dst), (&dst, &src)] {
            let plan = plan(a, b, 4);
            for region in plan.regions() {
                assert!(region.loops.is_empty(), "{plan}");
                assert_eq!(region.kernel, Kernel::Element, "{plan}");
                let ix = region.indexed.as_ref().expect("an indexed loop");
                assert_eq!(ix.extents, a.shape(), "{plan}");
            }
            check_pair(a, b);
        }
    }
}

#[test]
fn random_swizzled_pairs_take_both_routes() {
    use common::random_layouts::{generate, shape, Choices, Kind, Role};
    let (mut runs, mut elements) = (0, 0);
    for seed in 0..600u64 {
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut bytes = std::iter::from_fn(|| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            Some((state >> 24) as u8)
        });
        let mut c = Choices::new(&mut bytes);
        let shape = shape(&mut c);
        let Ok(generated) = generate(Kind::Swizzled, &shape, &mut c, Role::Destination) else {
            continue;
        };
        let sw = generated.layout;
        if !sw.is_injective() || sw.swizzle().is_none() {
            continue;
        }
        let row = Layout::row_major(&shape).unwrap();
        let plan = plan(&row, &sw, 2);
        let indexed_whole = plan
            .regions()
            .iter()
            .all(|r| r.kernel == Kernel::Element && r.loops.is_empty());
        if indexed_whole {
            elements += 1;
        } else {
            runs += 1;
        }
        if seed % 10 == 0 {
            check_pair(&sw, &row);
            check_pair(&row, &sw);
        }
    }
    assert!(
        runs > 40 && elements > 100,
        "{runs} pairs move runs, {elements} element by element"
    );
}
