//! The JIT against the reference on exhaustive small cases.

mod common;

use common::{
    check_pair, check_pair_as, check_pair_on, check_pair_pinned_at_every_size, check_plan_moves_of,
    permutations,
};
use relayout::{compile_relayout, Digit, Layout, Source};

#[test]
fn every_permutation_pair_of_small_shapes() {
    let shapes: Vec<Vec<usize>> = vec![
        vec![1],
        vec![7],
        vec![33],
        vec![4, 4],
        vec![3, 5],
        vec![16, 17],
        vec![2, 3, 4],
        vec![5, 1, 8],
        vec![2, 2, 2, 3],
    ];
    for shape in &shapes {
        let orders = permutations(shape.len());
        for so in &orders {
            for dor in &orders {
                let src = Layout::ordered(shape, so).unwrap();
                let dst = Layout::ordered(shape, dor).unwrap();
                check_pair(&src, &dst);
            }
        }
    }
}

#[test]
fn transposes_with_tails_for_every_element_size() {
    // Small tiles with tails, and blocks of destination lines (with partial blocks) beyond.
    for (m, n) in [
        (16, 16),
        (17, 33),
        (64, 40),
        (5, 100),
        (100, 5),
        (150, 150),
        (40, 133),
    ] {
        let src = Layout::row_major(&[m, n]).unwrap();
        let dst = Layout::col_major(&[m, n]).unwrap();
        check_pair(&src, &dst);
        check_pair(&dst, &src);
    }
}

#[test]
fn transposes_into_rows_that_share_l1_sets() {
    use relayout::plan::Plan;
    // Destination rows 512 to 4096 elements apart: at each element size some of them start in
    // two L1 sets (blocks of longer runs) or in one (staged blocks, copied out), with whole and
    // partial strips and blocks on both sides.
    for stride in [512, 1024, 2048, 4096] {
        for (m, n) in [(500, 37), (33, 70)] {
            let src = Layout::row_major(&[m, n]).unwrap();
            let dst = Layout::from_strides(&[m, n], &[1, stride]).unwrap();
            check_pair(&src, &dst);
        }
    }
    let src = Layout::row_major(&[500, 37]).unwrap();
    let dst = Layout::from_strides(&[500, 37], &[1, 1024]).unwrap();
    let plan = Plan::new(&src, &dst, 4).unwrap();
    assert!(plan.stage_bytes().is_some(), "{plan}");
    assert!(!plan.streams(), "{plan}");
}

/// Checks that the transposes of `src -> dst` for `elem_size`-byte elements write runs of at
/// most `run` elements, that long, and that the plan and its kernel move every element right.
fn check_longest_run(src: &Layout, dst: &Layout, elem_size: usize, run: usize) {
    check_longest_block(src, dst, elem_size, (run, None));
}

/// Checks that the transposes of `src -> dst` for `elem_size`-byte elements, planned for a
/// target that does not stream them, write runs of at most `run` elements, that long, in
/// blocks of at most `width` destination rows, that many (where given), and that the plan and
/// its kernel move every element right.
fn check_longest_block(
    src: &Layout,
    dst: &Layout,
    elem_size: usize,
    (run, width): (usize, Option<usize>),
) {
    use relayout::plan::{Kernel, Plan, Tactics};
    let roomy = common::streams_from_1_gib();
    let plan = Plan::with_tactics(src, dst, elem_size, Tactics::default(), roomy).unwrap();
    let tiles: Vec<_> = plan
        .regions()
        .iter()
        .filter_map(|r| match r.kernel {
            Kernel::Transpose { tile, .. } => Some(tile),
            _ => None,
        })
        .collect();
    let runs = tiles.iter().map(|t| t.b.extent).max();
    assert_eq!(runs, Some(run), "{plan}");
    if let Some(width) = width {
        assert_eq!(
            tiles.iter().map(|t| t.a.extent).max(),
            Some(width),
            "{plan}"
        );
    }
    check_plan_moves_of(&plan, src, dst);
    match elem_size {
        8 => check_pair_as::<u64>(src, dst, None),
        4 => check_pair_as::<u32>(src, dst, None),
        _ => check_pair_as::<u16>(src, dst, None),
    }
}

#[test]
fn close_destination_rows_beyond_the_l2_take_longer_runs() {
    // NCHW -> NHWC of 56² pixels with 64 channels: destination rows of 512 (f64), 256 (f32)
    // or 128 (u16) bytes, in a cache that holds them. Four images (6.1, 3.1 or 1.5 MiB) of f32
    // write 256-byte runs, 64 a block (16 KiB), of u16 their whole rows, 64 a block (8 KiB;
    // 128-byte runs in 4 KiB blocks had been 32), of f64 128-byte runs, 32 a block; one image
    // of u16 (392 KiB) stays in the L2 and writes one line of each row.
    for (images, elem_size, block) in [
        (4, 4, (64, Some(64))),
        (4, 2, (64, Some(64))),
        (4, 8, (16, Some(32))),
        (1, 2, (32, None)),
    ] {
        let src = Layout::row_major(&[images, 64, 3136]).unwrap();
        let dst = Layout::ordered(&[images, 64, 3136], &[0, 2, 1]).unwrap();
        check_longest_block(&src, &dst, elem_size, block);
    }
}

#[test]
fn short_source_rows_take_512_byte_runs() {
    // NHWC -> NCHW of 56² pixels: source rows of 256 (64 f32 or 128 u16 channels) or 512
    // bytes (128 f32). Four or two images (3.1 MiB) write 512-byte runs; one image of 128 u16
    // channels (784 KiB) stays in the L2 and writes 256-byte runs.
    for (images, channels, elem_size, run) in [
        (4, 64, 4, 128),
        (2, 128, 4, 128),
        (4, 128, 2, 256),
        (1, 128, 2, 128),
    ] {
        let src = Layout::row_major(&[images, 3136, channels]).unwrap();
        let dst = Layout::ordered(&[images, 3136, channels], &[0, 2, 1]).unwrap();
        check_longest_run(&src, &dst, elem_size, run);
    }
}

#[test]
fn macro_blocks_of_a_prime_block_count_are_cut_ragged() {
    use common::guard::{check_guarded, Pin, Run};
    use relayout::plan::{Blocking, Plan, Tactics};
    // 500 × 1088 u16 in 256-byte runs, 64 elements of each source row a block: 17 blocks a
    // strip (a prime), 4 a macro block. Where the strips have a loop, the planner puts 16
    // blocks in macro blocks of 4 and gives the one left a region of its own (the rest of the
    // strips, one strip, walks its 17 blocks in one loop). On one and two threads, in guard
    // pages.
    let src = Layout::row_major(&[500, 1088]).unwrap();
    let dst = Layout::col_major(&[500, 1088]).unwrap();
    let pin = Pin {
        tactics: Tactics::fixed(Blocking::LLC_RUNS),
        target: common::streams_from_1_gib(),
    };
    let plan = Plan::with_tactics(&src, &dst, 2, pin.tactics, pin.target).unwrap();
    let strip = 128 * 1088;
    let block_loops: Vec<usize> = plan
        .regions()
        .iter()
        .filter(|r| r.loops.iter().any(|l| l.src_stride == strip))
        .flat_map(|r| r.loops.iter().filter(|l| l.src_stride == 64))
        .map(|l| l.extent)
        .collect();
    assert!(block_loops.contains(&4), "{plan}");
    assert!(!block_loops.contains(&17), "{plan}");
    common::check_plan_moves_of(&plan, &src, &dst);
    for threads in [1, 2] {
        let run = Run {
            elem_size: 2,
            pad: None,
            threads,
            pin: Some(pin),
        };
        check_guarded(&src, &dst, run).unwrap_or_else(|e| panic!("{e}\n{plan}"));
    }
}

#[test]
fn macro_blocks_of_a_prime_strip_count_are_cut_ragged() {
    use relayout::plan::{Blocking, Plan, Tactics};
    // u16 rows 6 KiB apart, 128-row strips: 23 strips (a prime) would make one macro block of
    // 2944 rows, one page each; the planner cuts 16 strips in macro blocks of 8 and a region
    // of the 7 left, beside the regions of the strips' and blocks' tails. Its 17.7 MB stream
    // on a host whose last-level cache is under 71 MB, so the target is one that does not.
    let src = Layout::row_major(&[2950, 3001]).unwrap();
    let dst = Layout::col_major(&[2950, 3001]).unwrap();
    // The blocking of 256-byte runs in 4 KiB blocks, 16 strips a macro block.
    let roomy = common::streams_from_1_gib();
    let long_runs = Tactics::fixed(Blocking::LONG_RUNS);
    let plan = Plan::with_tactics(&src, &dst, 2, long_runs, roomy).unwrap();
    assert!(!plan.streams(), "{plan}");
    let strip_loops: Vec<usize> = plan
        .regions()
        .iter()
        .filter_map(|r| r.loops.iter().find(|l| l.dst_stride == 128))
        .map(|l| l.extent)
        .collect();
    assert!(
        strip_loops.contains(&8) && strip_loops.contains(&7),
        "{plan}"
    );
    check_plan_moves_of(&plan, &src, &dst);
    check_pair_as::<u16>(&src, &dst, None);
}

#[test]
fn staged_transposes_inside_loops_prefetch_the_next_block() {
    use relayout::plan::Plan;
    // 1024² f32: staged blocks in a loop along the source; 512²: tiles in place.
    for (shape, prefetches) in [([1024, 1024], true), ([512, 512], false)] {
        let src = Layout::row_major(&shape).unwrap();
        let dst = Layout::col_major(&shape).unwrap();
        let plan = Plan::new(&src, &dst, 4).unwrap();
        let planned = plan.regions().iter().any(|r| r.prefetches());
        assert_eq!(planned, prefetches, "{plan}");
        assert_eq!(
            plan.to_string().contains("prefetched"),
            prefetches,
            "{plan}"
        );
        let kernel = compile_relayout(&src, &dst).unwrap();
        // The prefetching routine is the runtime's second import (`u0:1`).
        let clif = kernel.clif().unwrap();
        assert_eq!(clif.contains("= u0:1 "), prefetches, "{plan}\n{clif}");
        check_pair(&src, &dst);
    }
}

#[test]
fn streamed_blocks_ask_for_the_next_block_as_they_stream_out() {
    use relayout::plan::Plan;
    // Staged blocks that stream out (a target that streams from the first byte) ask for the
    // next block's source rows through the streaming routine itself, a share before each row
    // it writes (its eleven arguments: the rows to write, then the rows to ask for), with no
    // separate call of the prefetching routine; blocks copied out with ordinary stores (the
    // host's target, 1024² f32) keep the separate call (see
    // `staged_transposes_inside_loops_prefetch_the_next_block`).
    let target = streams_from_the_first_byte();
    for (elem_size, shape) in [(4, [1024, 1024]), (2, [512, 992]), (8, [256, 2048])] {
        let src = Layout::row_major(&shape).unwrap();
        let dst = Layout::col_major(&shape).unwrap();
        let plan = Plan::with_tactics(&src, &dst, elem_size, Default::default(), target).unwrap();
        assert!(plan.regions().iter().any(|r| r.prefetches()), "{plan}");
        let dtype = match elem_size {
            2 => relayout::DType::U16,
            4 => relayout::DType::F32,
            _ => relayout::DType::F64,
        };
        let options = relayout::Options::new()
            .dtype(dtype)
            .target(target)
            .tune(false);
        let kernel = relayout::compile_relayout_with(&src, &dst, options).unwrap();
        let clif = kernel.clif().unwrap();
        // The routines it imports, by their count of arguments: `fnN = u0:K sigM` lines, the
        // signatures from `sigM = (i64, …)` lines.
        let params_of = |sig: &str| {
            clif.lines()
                .map(str::trim)
                .find(|l| l.starts_with(&format!("{sig} = (")))
                .map(|l| l.matches("i64").count())
        };
        let imports: Vec<Option<usize>> = clif
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with("fn"))
            .map(|l| params_of(l.rsplit(' ').next().unwrap()))
            .collect();
        // One streaming routine that asks (eleven arguments); besides it at most the block
        // transpose (six), where a separate prefetching routine would make a second of six.
        let count = |n| imports.iter().filter(|&&p| p == Some(n)).count();
        assert_eq!(count(11), 1, "{elem_size} bytes\n{plan}\n{clif}");
        assert!(count(6) <= 1, "{elem_size} bytes\n{plan}\n{clif}");
        assert_eq!(count(6) + count(11), imports.len(), "{clif}");
        check_default_plan_on(&plan, &src, &dst, elem_size, target);
    }
}

#[test]
fn streamed_zips_cut_their_runs_into_whole_lines() {
    use relayout::plan::{Kernel, Plan};
    // A zip of k strips into an interleaved run (NCHW → NHWC with k channels) on a target that
    // streams from the first byte is cut into staged chunks of about 4 KiB that are whole
    // cache lines of destination, so that no line is stored in part by two chunks: 3 f32
    // channels in chunks of 336 steps (4032 bytes), not 340 (4080).
    let target = streams_from_the_first_byte();
    let line = target.line_bytes;
    for (elem_size, k, long) in [
        (4, 3, 3000),
        (2, 3, 5000),
        (2, 6, 3000),
        (2, 7, 3000),
        (1, 3, 9000),
        (8, 3, 1500),
    ] {
        let plane = k as i64 * long as i64;
        let src = Layout::from_strides(&[2, k, long], &[plane, long as i64, 1]).unwrap();
        let dst = Layout::from_strides(&[2, k, long], &[plane, 1, k as i64]).unwrap();
        let plan = Plan::with_tactics(&src, &dst, elem_size, Default::default(), target).unwrap();
        // The chunks are the largest staged zips; the rest of each strip is a region of its own.
        let bytes = plan
            .regions()
            .iter()
            .filter(|r| matches!(r.kernel, Kernel::Zip { .. }))
            .filter_map(|r| r.kernel.stage_bytes(elem_size))
            .max()
            .unwrap_or_else(|| panic!("no staged zip\n{plan}"));
        assert!(
            bytes % line == 0 && bytes > 4096 - 2 * k * elem_size * line,
            "{bytes}\n{plan}"
        );
        check_default_plan_on(&plan, &src, &dst, elem_size, target);
    }
}

#[test]
fn streamed_copies_read_long_rows_side_by_side_only_in_pieces() {
    use common::guard::{check_guarded, Pin, Run};
    use relayout::plan::{CopyWrite, Kernel, LargeWrites, LongReads, Plan, Tactics};
    // The default streams a long copy's rows in order; tactics that read in pieces read rows of
    // two pages or more four pages side by side, by a routine of their own.
    let target = streams_from_the_first_byte();
    // A copy of 64 × 5000 elements: chunks of 16 KiB, then a shorter rest.
    let layout = Layout::row_major(&[64, 5000]).unwrap();
    for (large_writes, want) in [
        (LargeWrites::Streamed, LongReads::InOrder),
        (LargeWrites::StreamedInPieces, LongReads::PagesSideBySide),
    ] {
        let tactics = Tactics {
            large_writes,
            ..Tactics::default()
        };
        let plan = Plan::with_tactics(&layout, &layout, 4, tactics, target).unwrap();
        // Rows of two pages (8 KiB) or more read as the tactics say; shorter ones (the rest of
        // the copy) in order.
        let reads: Vec<(usize, LongReads)> = plan
            .regions()
            .iter()
            .filter_map(|r| match r.kernel {
                Kernel::Copy {
                    len,
                    write: CopyWrite::Streamed { reads, .. },
                    ..
                } => Some((len * 4, reads)),
                _ => None,
            })
            .collect();
        assert!(reads.iter().any(|&(bytes, _)| bytes >= 8192), "{plan}");
        for (bytes, reads) in reads {
            let expected = if bytes >= 8192 {
                want
            } else {
                LongReads::InOrder
            };
            assert_eq!(reads, expected, "{bytes} bytes\n{plan}");
        }
        for elem_size in [1, 4, 8] {
            let run = Run {
                elem_size,
                pad: None,
                threads: 1,
                pin: Some(Pin { tactics, target }),
            };
            check_guarded(&layout, &layout, run).unwrap();
        }
    }
}

#[test]
fn far_source_rows_prefetch_three_blocks_ahead() {
    use relayout::plan::{Blocking, Kernel, Plan, Tactics};
    use relayout::{reference, DType, Options};
    // A target that streams from the first byte plans large transposes at test sizes. Rows of
    // 16 KiB (8-byte elements) are far apart: the prefetched block is three steps along the
    // innermost loop; rows of 8 KiB, and 4-byte elements, prefetch the next block.
    let eager = streams_from_the_first_byte();
    for (shape, elem_size, ahead) in [
        ([40, 2048], 8, 3),
        ([40, 1024], 8, 1),
        ([40, 4096], 4, 1),
        ([37, 3000], 8, 3),
    ] {
        let src = Layout::row_major(&shape).unwrap();
        let dst = Layout::col_major(&shape).unwrap();
        let plan = Plan::with_tactics(&src, &dst, elem_size, Tactics::default(), eager).unwrap();
        let region = plan
            .regions()
            .iter()
            .find(|r| r.prefetches())
            .unwrap_or_else(|| panic!("no region prefetches:\n{plan}"));
        let Kernel::Transpose { tile, .. } = region.kernel else {
            panic!("{plan}");
        };
        assert_eq!(tile.prefetch_ahead, ahead, "{plan}");
        let step = region.loops.last().unwrap().src_stride;
        assert_eq!(region.prefetch_step(), Some(ahead as i64 * step), "{plan}");
        assert_eq!(
            plan.to_string().contains("3 blocks ahead prefetched"),
            ahead == 3,
            "{plan}"
        );
        // Prefetches past the innermost loop's end (and past the buffer) change nothing.
        if elem_size != 8 {
            continue;
        }
        let a: Vec<u64> = (0..src.cosize() as u64).collect();
        let mut want = vec![0u64; dst.cosize()];
        reference::relayout(&src, &a, &dst, &mut want, None).unwrap();
        for blocks in [ahead, Blocking::MAX_PREFETCH_AHEAD] {
            let tactics = Tactics::fixed(Blocking::STREAMED_256_NARROW.prefetching(blocks));
            let options = Options::new()
                .dtype(DType::U64)
                .tactics(tactics)
                .target(eager);
            let kernel = relayout::compile_relayout_with(&src, &dst, options).unwrap();
            let mut got = vec![0u64; dst.cosize()];
            kernel.run(&a, &mut got).unwrap();
            assert!(got == want, "{}", kernel.plan());
        }
    }
}

#[test]
fn very_far_source_rows_prefetch_groups_of_blocks() {
    use common::guard::{check_guarded, Pin, Run};
    use relayout::plan::{Blocking, Kernel, Plan, Tactics};
    // Source rows 256 KiB apart (4-byte elements) or more are very far apart: blocks that
    // continue one another along the source rows ask for eight blocks' source at a time.
    // Rows closer together, and 8-byte elements, ask block by block.
    let eager = streams_from_the_first_byte();
    let reversal = |n: usize, k: usize| {
        let shape = [n, 2, k];
        let src = Layout::row_major(&shape).unwrap();
        (src, Layout::ordered(&shape, &[2, 1, 0]).unwrap())
    };
    for ((src, dst), elem_size, group) in [
        (reversal(40, 32768), 4, 8),
        (reversal(40, 32768), 2, 1),
        (reversal(40, 16384), 4, 1),
        (reversal(40, 65536), 2, 8),
        (reversal(40, 32768), 8, 1),
    ] {
        let plan = Plan::with_tactics(&src, &dst, elem_size, Tactics::default(), eager).unwrap();
        let region = plan
            .regions()
            .iter()
            .find(|r| r.prefetches())
            .unwrap_or_else(|| panic!("no region prefetches:\n{plan}"));
        let Kernel::Transpose { tile, .. } = region.kernel else {
            panic!("{plan}");
        };
        assert_eq!(region.prefetch_group(), group, "{plan}");
        let expected = (group > 1).then_some(Blocking::STREAMED_256_GROUPED.prefetch_group);
        assert_eq!(
            (group > 1).then_some(tile.prefetch_group),
            expected,
            "{plan}"
        );
        assert_eq!(
            region.loops.last().unwrap().src_stride,
            tile.a.extent as i64,
            "{plan}"
        );
        assert_eq!(
            plan.to_string().contains("8 blocks at a time"),
            group == 8,
            "{plan}"
        );
        common::check_plan_moves_of(&plan, &src, &dst);
    }
    // Groups of any size move the same elements (the prefetches only ask), in guard pages.
    let (src, dst) = reversal(3, 4096);
    for group in [1, 3, 8, Blocking::MAX_PREFETCH_GROUP] {
        let blocking = Blocking {
            prefetch_group: group,
            ..Blocking::STREAMED_256_NARROW
        };
        for elem_size in [1, 2, 4, 8] {
            let pin = Some(Pin {
                tactics: Tactics::fixed(blocking),
                target: eager,
            });
            let run = Run {
                elem_size,
                pad: None,
                threads: 1,
                pin,
            };
            check_guarded(&src, &dst, run).unwrap();
        }
    }
}

#[test]
fn large_transposes_stage_and_stream_by_default() {
    use relayout::plan::{Flush, Kernel, LargeWrites, Plan, Tactics, TransposeWrite, Walk};
    // 2048² f32 (16 MiB) streams; with ordinary stores for large writes (a candidate of
    // tuning) its tiles are stored in place, fitted to the destination's rows.
    let src = Layout::row_major(&[2048, 2048]).unwrap();
    let dst = Layout::col_major(&[2048, 2048]).unwrap();
    let writes = |tactics: Tactics| -> Vec<TransposeWrite> {
        let plan =
            Plan::with_tactics(&src, &dst, 4, tactics, common::streams_from_8_mib()).unwrap();
        plan.regions()
            .iter()
            .filter_map(|r| match r.kernel {
                Kernel::Transpose { write, .. } => Some(write),
                _ => None,
            })
            .collect()
    };
    let default = writes(Tactics::default());
    assert!(!default.is_empty());
    assert!(default
        .iter()
        .all(|&w| w == TransposeWrite::Staged(Flush::Streamed)));
    let stored = writes(Tactics {
        large_writes: LargeWrites::Stored,
        ..Tactics::default()
    });
    assert!(stored
        .iter()
        .all(|&w| w != TransposeWrite::Staged(Flush::Streamed)));
    // The default blocks follow the element size: 256-byte runs walked along the source rows
    // for u16 and f32 (128 and 64 elements), 64 elements of f64 (512 bytes), and 256-byte runs
    // walked across them for u8; source rows 16 KiB apart or more (2048 f64), 256-byte runs for
    // f64 too (32 elements);
    // where the source rows are short (NHWC -> NCHW of 64 f32 channels: 256 bytes), 512-byte
    // runs along them, band by band of destination rows.
    let square = |side: usize| {
        let src = Layout::row_major(&[side, side]).unwrap();
        (src, Layout::col_major(&[side, side]).unwrap())
    };
    let nhwc_to_nchw = (
        Layout::parse("cute:(8,4096,64):(262144,64,1)").unwrap(),
        Layout::parse("cute:(8,4096,64):(262144,1,4096)").unwrap(),
    );
    for (elem_size, (src, dst), run, walk) in [
        (1, square(4096), 256, Walk::Across),
        (2, square(4096), 128, Walk::Along),
        (4, square(2048), 64, Walk::Along),
        (8, square(2048), 32, Walk::Along),
        (8, square(1536), 64, Walk::Along),
        (4, nhwc_to_nchw.clone(), 128, Walk::Along),
    ] {
        let plan = Plan::with_tactics(
            &src,
            &dst,
            elem_size,
            Tactics::default(),
            common::streams_from_8_mib(),
        )
        .unwrap();
        let Kernel::Transpose { tile, write } = plan.regions()[0].kernel else {
            panic!("a transpose\n{plan}");
        };
        assert_eq!(write, TransposeWrite::Staged(Flush::Streamed), "{plan}");
        assert_eq!((tile.b.extent, tile.walk), (run, walk), "{plan}");
    }
    // Band by band: the loop over blocks along the channels (a band of 16 destination rows)
    // outside the loop over strips of 128 pixels; the square transposes keep strips outside.
    let dst_strides = |plan: &Plan| -> Vec<i64> {
        plan.regions()[0]
            .loops
            .iter()
            .map(|l| l.dst_stride)
            .collect()
    };
    let plan = Plan::with_tactics(
        &nhwc_to_nchw.0,
        &nhwc_to_nchw.1,
        4,
        Tactics::default(),
        common::streams_from_8_mib(),
    )
    .unwrap();
    assert_eq!(dst_strides(&plan), [262144, 16 * 4096, 128], "{plan}");
    let (src, dst) = square(2048);
    let plan = Plan::with_tactics(
        &src,
        &dst,
        4,
        Tactics::default(),
        common::streams_from_8_mib(),
    )
    .unwrap();
    let strides = dst_strides(&plan);
    assert!(strides.windows(2).any(|w| w[0] < w[1]), "{plan}");
}

#[test]
fn odd_rows_stream_joined_512_byte_runs_in_32k_blocks_by_default() {
    use relayout::plan::TransposeWrite;
    // Rows not whole lines apart on either side (odd extents) stream 512-byte runs in 32 KiB
    // blocks (64 runs a block) by default for 1-, 2- and 4-byte elements whose destination
    // rows lie 1 KiB apart or more; 8-byte elements, and rows whole lines apart, keep their
    // blockings (16, 32 or 64 runs of 256 or 512 bytes a block). Runs join wherever the
    // destination's rows are the odd ones, 8-byte elements' too.
    for (elem_size, (rows, cols), run_bytes, runs) in [
        (1, (2100, 301), 512, 64),
        (2, (1050, 601), 512, 64),
        (4, (525, 301), 512, 64),
        (4, (512, 301), 512, 64),
        (4, (525, 320), 512, 64),
        (4, (512, 320), 256, 64),
        (4, (512, 1024), 256, 32),
        (8, (263, 301), 512, 16),
    ] {
        let (tile, write, plan) = default_transpose_checked(elem_size, rows, cols);
        assert_eq!(
            (tile.b.extent * elem_size, tile.a.extent),
            (run_bytes, runs),
            "{elem_size} bytes\n{plan}"
        );
        let odd_destination_rows = !(rows * elem_size).is_multiple_of(64);
        assert_eq!(
            matches!(write, TransposeWrite::Joined(_)),
            odd_destination_rows,
            "{elem_size} bytes\n{plan}"
        );
    }
}

#[test]
fn short_destination_rows_take_tiles_straight_out_or_stream_one_run_by_default() {
    use common::guard::{check_guarded, Pin, Run};
    use relayout::plan::{Flush, Kernel, Plan, Tactics, TransposeWrite, Walk};
    // Destination rows a line apart (NCHW -> NCHW16c, NCHW -> NHWC with 16 f32 channels) take
    // their register tiles across the source rows straight to the destination by default:
    // streamed for 4- and 8-byte elements, in place for 1- and 2-byte ones. Shorter rows that
    // lie end to end (NCHW -> NHWC with 10 f32 channels) are whole lines together: their blocks
    // are staged and streamed out as one run, for elements of 2 bytes and more. Rows two lines
    // apart stay staged.
    let staged = TransposeWrite::Staged(Flush::Streamed);
    for (elem_size, (rows, cols), write) in [
        (4, (16, 600), TransposeWrite::Streamed),
        (4, (10, 601), staged),
        (4, (8, 600), staged),
        (8, (8, 600), TransposeWrite::Streamed),
        (8, (6, 600), staged),
        (2, (32, 600), TransposeWrite::InPlace),
        (2, (12, 600), staged),
        (1, (40, 700), TransposeWrite::InPlace),
    ] {
        let (tile, got, plan) = default_transpose_checked(elem_size, rows, cols);
        assert_eq!(
            (got, tile.walk),
            (write, Walk::Across),
            "{elem_size} bytes\n{plan}"
        );
        // `relayout plan` says so.
        let one_run = plan.to_string().contains(", end to end: one run of");
        assert_eq!(one_run, write == staged, "{plan}");
    }
    let (_, write, plan) = default_transpose_checked(4, 32, 600);
    assert!(matches!(write, TransposeWrite::Staged(_)), "{plan}");
    // Rows of 8 f32 with gaps between them (12 apart) would go out one by one: streamed tiles.
    let eager = Pin::defaults_on(streams_from_the_first_byte());
    let src = Layout::row_major(&[8, 600]).unwrap();
    let dst = Layout::from_strides(&[8, 600], &[1, 12]).unwrap();
    let plan = Plan::with_tactics(&src, &dst, 4, Tactics::default(), eager.target).unwrap();
    assert!(
        matches!(
            plan.regions()[0].kernel,
            Kernel::Transpose {
                write: TransposeWrite::Streamed,
                ..
            }
        ),
        "{plan}"
    );
    let run = Run {
        elem_size: 4,
        pad: None,
        threads: 1,
        pin: Some(eager),
    };
    check_guarded(&src, &dst, run).unwrap();
}

#[test]
fn short_f32_source_rows_take_512_byte_runs_by_default() {
    use relayout::plan::Walk;
    // Source rows of 4-byte elements two lines long or shorter (NHWC -> NCHW with few
    // channels) go in 512-byte runs along them by default; longer rows, and 2-byte elements,
    // keep 256-byte runs across them.
    for (elem_size, (rows, cols), run_bytes, walk) in [
        (4, (600, 12), 512, Walk::Along),
        (4, (700, 32), 512, Walk::Along),
        (4, (600, 10), 512, Walk::Along),
        (4, (600, 48), 256, Walk::Across),
        (2, (600, 32), 256, Walk::Across),
    ] {
        let (tile, _, plan) = default_transpose_checked(elem_size, rows, cols);
        assert_eq!(
            (tile.b.extent * elem_size, tile.walk),
            (run_bytes, walk),
            "{elem_size} bytes\n{plan}"
        );
    }
}

#[test]
fn long_source_rows_in_many_l1_sets_take_256_byte_runs_in_wide_blocks_by_default() {
    use relayout::plan::Blocking;
    // 2- and 4-byte elements whose source rows are long, whole lines apart and spread over
    // more than one L1 set go in 256-byte runs along the source rows in 16 KiB blocks by
    // default, at any distance of destination rows; rows a multiple of 4 KiB apart (one set)
    // keep 256-byte runs in 8 KiB blocks.
    let along = Blocking::STREAMED_256_NARROW;
    let wide = Blocking::STREAMED_256;
    for (elem_size, (rows, cols), blocking) in [
        (4, (256, 496), wide),
        (4, (384, 784), wide),
        (2, (512, 992), wide),
        (2, (64, 992), wide),
        (4, (256, 1024), along),
        (2, (512, 2048), along),
        (4, (32, 496), wide),
    ] {
        let (tile, _, plan) = default_transpose_checked(elem_size, rows, cols);
        let strip = (blocking.run_bytes / elem_size).min(rows);
        let width = blocking.block_bytes / blocking.run_bytes;
        assert_eq!(
            (tile.b.extent, tile.a.extent, tile.walk),
            (strip, width, blocking.walk),
            "{elem_size} bytes, {rows} x {cols}\n{plan}"
        );
    }
}

/// Plans the transpose of a `rows × cols` row-major tensor of `elem_size`-byte elements into
/// column-major with the default tactics, on a target that streams from the first byte; checks
/// that the plan moves every element once and that its kernel matches the reference in guard
/// pages; returns the plan's transpose tile and write, and the plan.
fn default_transpose_checked(
    elem_size: usize,
    rows: usize,
    cols: usize,
) -> (
    relayout::plan::TransposeTile,
    relayout::plan::TransposeWrite,
    relayout::plan::Plan,
) {
    use common::guard::{check_guarded, Pin, Run};
    use relayout::plan::{Kernel, Plan, Tactics};
    let eager = Pin::defaults_on(streams_from_the_first_byte());
    let shape = [rows, cols];
    let src = Layout::row_major(&shape).unwrap();
    let dst = Layout::col_major(&shape).unwrap();
    let plan = Plan::with_tactics(&src, &dst, elem_size, Tactics::default(), eager.target).unwrap();
    let Kernel::Transpose { tile, write } = plan.regions()[0].kernel else {
        panic!("a transpose\n{plan}");
    };
    common::check_plan_moves_of(&plan, &src, &dst);
    let run = Run {
        elem_size,
        pad: None,
        threads: 1,
        pin: Some(eager),
    };
    check_guarded(&src, &dst, run).unwrap();
    (tile, write, plan)
}

#[test]
fn transposes_call_the_runtimes_tiles() {
    use relayout::{compile_relayout_with, DType, Options};
    // Large transposes stage their blocks through the runtime's block transpose, and small
    // ones call it straight into the destination (a call, no shuffles in the kernel); both move
    // every element where the reference does. 4- and 8-byte elements take that path where the
    // CPU has AVX's 32-byte vectors, and emit their 16-byte tiles elsewhere and where source
    // and destination fit in the target's `emitted_tiles_max_bytes` (32 KiB).
    #[cfg(target_arch = "x86_64")]
    let wide = std::arch::is_x86_feature_detected!("avx");
    #[cfg(not(target_arch = "x86_64"))]
    let wide = false;
    let square = |side: usize| {
        let src = Layout::row_major(&[side, side]).unwrap();
        (src, Layout::col_major(&[side, side]).unwrap())
    };
    for (src, dst) in [square(4100), square(100), square(64), square(40)] {
        for dtype in [DType::U8, DType::U16, DType::F32, DType::F64] {
            let kernel = compile_relayout_with(&src, &dst, Options::new().dtype(dtype)).unwrap();
            let ir = kernel.clif().unwrap();
            let max_bytes = relayout::Target::host().emitted_tiles_max_bytes;
            let in_l1 = 2 * src.size() * dtype.size() <= max_bytes;
            let emits_tiles = dtype.size() >= 4 && (!wide || in_l1);
            assert_eq!(ir.contains("shuffle"), emits_tiles, "{dtype:?}\n{ir}");
            assert_eq!(
                ir.contains("call "),
                !emits_tiles || src.size() > 10000,
                "{dtype:?}\n{ir}"
            );
        }
        check_pair_as::<u8>(&src, &dst, None);
        check_pair_as::<u16>(&src, &dst, None);
        check_pair_as::<u32>(&src, &dst, None);
        check_pair_as::<u64>(&src, &dst, None);
    }
}

#[test]
fn every_candidate_tactics_moves_every_element() {
    use relayout::plan::{Plan, Tactics};
    use relayout::Target;
    // Transposes with tails on both sides, rows that share L1 sets, and a batch of them (NCHW ->
    // NHWC), at every element size: each candidate's plan, interpreted and run.
    let pairs = [
        (
            Layout::row_major(&[150, 150]),
            Layout::col_major(&[150, 150]),
        ),
        (Layout::row_major(&[40, 133]), Layout::col_major(&[40, 133])),
        (
            Layout::row_major(&[500, 37]),
            Layout::from_strides(&[500, 37], &[1, 1024]),
        ),
        (
            Layout::row_major(&[3, 20, 7, 9]),
            Layout::ordered(&[3, 20, 7, 9], &[0, 2, 3, 1]),
        ),
    ];
    for (src, dst) in pairs {
        let (src, dst) = (src.unwrap(), dst.unwrap());
        for &tactics in &Tactics::CANDIDATES {
            check_plan_moves_of(
                &Plan::with_tactics(&src, &dst, 4, tactics, Target::host()).unwrap(),
                &src,
                &dst,
            );
            let pin = Some(common::Pin::tactics(tactics));
            check_pair_pinned_at_every_size(&src, &dst, pin);
        }
    }
}

#[test]
fn streamed_candidates_along_and_across_source_rows() {
    use relayout::plan::{BlockWrite, Plan, Tactics, Tiling, Walk};
    use relayout::{compile_relayout_with, reference, Options};
    // 9 MB: large enough to stream, with partial blocks on both sides.
    let src = Layout::row_major(&[1100, 2050]).unwrap();
    let dst = Layout::col_major(&[1100, 2050]).unwrap();
    let a: Vec<u32> = common::pattern(src.cosize());
    let mut want = vec![0u32; dst.cosize()];
    reference::relayout(&src, &a, &dst, &mut want, None).unwrap();
    let streamed = Tactics::CANDIDATES
        .into_iter()
        .filter_map(|t| match t.tiling {
            Tiling::Fixed(b) if b.write == BlockWrite::Streamed => Some((t, b)),
            _ => None,
        });
    for (tactics, blocking) in streamed {
        let plan =
            Plan::with_tactics(&src, &dst, 4, tactics, common::streams_from_8_mib()).unwrap();
        let text = plan.to_string();
        assert!(text.contains("streamed out"), "{text}");
        assert_eq!(
            text.contains("across source rows"),
            blocking.walk == Walk::Across,
            "{text}"
        );
        let options = Options::new()
            .elem_size(4)
            .tactics(tactics)
            .target(common::streams_from_8_mib());
        let r = compile_relayout_with(&src, &dst, options).unwrap();
        let mut got = vec![0u32; dst.cosize()];
        r.run(&a, &mut got).unwrap();
        assert!(
            got == want,
            "{blocking:?} differs from the reference\n{plan}"
        );
    }
}

#[test]
fn streamed_tile_candidates_match_the_reference() {
    use relayout::plan::{BlockWrite, Plan, Tactics, Tiling};
    let streamed_tiles: Vec<Tactics> = Tactics::CANDIDATES
        .into_iter()
        .filter(|t| matches!(t.tiling, Tiling::Fixed(b) if b.write == BlockWrite::StreamedTiles))
        .collect();
    assert!(!streamed_tiles.is_empty());
    // Destination rows of 1088 elements start a cache line each (where the tiles stream);
    // rows of 1100 f32 start one every fourth row, of 1100 f64 every other row. 2050 source
    // rows leave partial tiles and blocks.
    for rows in [1088, 1100] {
        let src = Layout::row_major(&[rows, 2050]).unwrap();
        let dst = Layout::col_major(&[rows, 2050]).unwrap();
        for &tactics in &streamed_tiles {
            for elem_size in [4, 8] {
                let target = common::streams_from_8_mib();
                let plan = Plan::with_tactics(&src, &dst, elem_size, tactics, target).unwrap();
                let text = plan.to_string();
                assert!(text.contains("streaming whole lines"), "{text}");
                assert!(plan.streams(), "{text}");
                check_plan_moves_of(&plan, &src, &dst);
            }
            let pin = common::Pin {
                tactics,
                target: common::streams_from_8_mib(),
            };
            check_line_aligned::<u32>(&src, &dst, pin);
            check_line_aligned::<u64>(&src, &dst, pin);
        }
    }
}

/// Runs `src` → `dst` pinned to `pin` into a destination that starts a cache line, and compares
/// it with the reference.
fn check_line_aligned<T: relayout::Element + PartialEq + std::fmt::Debug>(
    src: &Layout,
    dst: &Layout,
    pin: common::Pin,
) {
    use relayout::{compile_relayout_with, reference, Options};
    let a: Vec<T> = common::pattern(src.cosize());
    let mut want = vec![T::from_bits(0); dst.cosize()];
    reference::relayout(src, &a, dst, &mut want, None).unwrap();
    let options = pin.apply(Options::new().elem_size(std::mem::size_of::<T>()));
    let r = compile_relayout_with(src, dst, options).unwrap();
    let mut buffer = vec![T::from_bits(0); dst.cosize() + 64];
    let start = buffer.as_ptr().align_offset(64);
    let got = &mut buffer[start..start + dst.cosize()];
    r.run(&a, got).unwrap();
    assert!(
        *got == want,
        "{} bytes, {:?}: differs from the reference",
        std::mem::size_of::<T>(),
        pin.tactics
    );
}

#[test]
fn long_copies_are_split_and_correct() {
    let src = Layout::row_major(&[3, 70_001]).unwrap();
    check_pair(&src, &src);
}

/// `[0, 0 oe(8)]` on `[n]` written as digits: strips of 8, evens first, then odds.
fn odd_even(n: usize) -> Layout {
    Layout::from_parts(
        &[n],
        vec![
            Digit::new(Source::Dim(0), 8, None, 8),
            Digit::new(Source::Dim(0), 1, Some(2), 4),
            Digit::new(Source::Dim(0), 2, Some(4), 1),
        ],
        0,
        Some(n.div_ceil(8) * 8),
    )
    .unwrap()
}

#[test]
fn odd_even_and_padded_layouts() {
    for n in [8, 16, 21, 64] {
        let rm = Layout::row_major(&[n]).unwrap();
        check_pair(&rm, &odd_even(n));
        check_pair(&odd_even(n), &rm);
        check_pair_as::<u32>(&rm, &odd_even(n), Some(0xdead));
    }
}

/// `rows` rows of `n` elements in odd/even strips of 16 (Morello's `oe(16)`: evens first, then
/// odds), rows `row_stride` elements apart.
fn odd_even_rows(rows: usize, n: usize, row_stride: i64) -> Layout {
    Layout::new(
        &[rows, n],
        vec![
            Digit::new(Source::Dim(0), 1, None, row_stride),
            Digit::new(Source::Dim(1), 16, None, 16),
            Digit::new(Source::Dim(1), 1, Some(2), 8),
            Digit::new(Source::Dim(1), 2, Some(8), 1),
        ],
    )
    .unwrap()
}

#[test]
fn streamed_odd_even_strips_in_staged_runs() {
    use relayout::plan::{Plan, Tactics};
    let machine = common::streams_from_8_mib();
    // Over 8 MiB of destination, so the short runs of each strip are staged a page at a time and
    // streamed out: with a partial run at the end of each row, rows that do not continue one
    // another (a gap between them, filled with the pad value once), both directions.
    for (rows, n, gap, u16_too) in [(2, 2_200_016, 32, true), (300, 8208, 48, false)] {
        let src = Layout::row_major(&[rows, n]).unwrap();
        let dst = odd_even_rows(rows, n, (n + gap) as i64);
        for (from, to) in [(&src, &dst), (&dst, &src)] {
            let plan = Plan::with_tactics(from, to, 4, Tactics::default(), machine).unwrap();
            let staged = plan
                .regions()
                .iter()
                .filter(|r| common::stages_a_run(r))
                .count();
            assert!(staged > 0 && plan.regions().len() > staged, "{plan}");
            common::check_plan_moves_of(&plan, from, to);
            check_pair_on::<u32>(from, to, None, machine);
            if u16_too {
                check_pair_on::<u16>(from, to, None, machine);
            }
        }
        check_pair_on::<u32>(&src, &dst, Some(0xdead_beef), machine);
    }
}

#[test]
fn staged_runs_of_zips_with_element_tails() {
    use relayout::plan::{Plan, Tactics};
    let machine = common::streams_from_8_mib();
    // Pairs of strips of 17 (not a whole number of vectors, so each zip and unzip ends in
    // element moves) interleaved into 34-element runs that continue one another, over 8 MiB:
    // the runs are staged and streamed, tails and all.
    let src = Layout::row_major(&[70_000, 2, 17]).unwrap();
    let dst = Layout::ordered(&[70_000, 2, 17], &[0, 2, 1]).unwrap();
    for (from, to) in [(&src, &dst), (&dst, &src)] {
        let plan = Plan::with_tactics(from, to, 4, Tactics::default(), machine).unwrap();
        assert!(plan.regions().iter().any(common::stages_a_run), "{plan}");
        check_pair_on::<u32>(from, to, None, machine);
    }
}

#[test]
fn streamed_xla_sub_tiles_in_staged_runs() {
    use relayout::plan::{Plan, Tactics};
    let machine = common::streams_from_8_mib();
    // XLA's (2,1) bf16 sub-tiles inside (8,128) tiles, over 8 MiB: each pair of rows is zipped
    // into a 512-byte run, a tile's four runs are staged together and streamed out; rows and
    // columns that leave the last tiles partly padded.
    for dims in ["2050,2200", "2048,2176"] {
        let src = Layout::parse(&format!("xla:bf16[{dims}]{{1,0}}")).unwrap();
        let dst = Layout::parse(&format!("xla:bf16[{dims}]{{1,0:T(8,128)(2,1)}}")).unwrap();
        let plan = Plan::with_tactics(&src, &dst, 2, Tactics::default(), machine).unwrap();
        assert!(plan.regions().iter().any(common::stages_a_run), "{plan}");
        check_pair_on::<u16>(&src, &dst, None, machine);
        check_pair_on::<u16>(&src, &dst, Some(0xbeef), machine);
    }
}

#[test]
fn negative_strides_and_broadcast_sources() {
    let src = Layout::from_strides(&[4, 5], &[-5, 1]).unwrap();
    let dst = Layout::col_major(&[4, 5]).unwrap();
    check_pair(&src, &dst);
    let bcast = Layout::from_strides(&[4, 5], &[0, 1]).unwrap();
    check_pair(&bcast, &dst);
    assert!(compile_relayout(&dst, &bcast).is_err());
}

#[test]
fn incompatible_splits_use_the_indexed_path() {
    // A dim of 6 split by 2 on one side and by 3 on the other.
    let by2 = Layout::new(
        &[6],
        vec![
            Digit::new(Source::Dim(0), 1, Some(2), 3),
            Digit::new(Source::Dim(0), 2, None, 1),
        ],
    )
    .unwrap();
    let by3 = Layout::new(
        &[6],
        vec![
            Digit::new(Source::Dim(0), 1, Some(3), 2),
            Digit::new(Source::Dim(0), 3, None, 1),
        ],
    )
    .unwrap();
    check_pair(&by2, &by3);
    // A fused source: offset of (i, j) on [3, 7] is 7i + j split as (v // 4, v % 4) in a 6x4 buffer.
    let fused = Layout::from_parts(
        &[3, 7],
        vec![
            Digit::new(Source::fused([(0, 7), (1, 1)]), 4, None, 4),
            Digit::new(Source::fused([(0, 7), (1, 1)]), 1, Some(4), 1),
        ],
        0,
        Some(24),
    )
    .unwrap();
    check_pair(&Layout::col_major(&[3, 7]).unwrap(), &fused);
}

#[test]
fn a_cached_kernel_is_reused() {
    let src = Layout::row_major(&[9, 11]).unwrap();
    let dst = Layout::col_major(&[9, 11]).unwrap();
    let first = compile_relayout(&src, &dst).unwrap();
    let second = compile_relayout(&src, &dst).unwrap();
    assert!(second.was_cached());
    assert_eq!(first.clif().unwrap(), second.clif().unwrap());
}

#[test]
fn compiling_without_the_cache_leaves_it_alone() {
    use relayout::{compile_relayout_with, Options};
    let src = Layout::row_major(&[9, 13]).unwrap();
    let dst = Layout::col_major(&[9, 13]).unwrap();
    let fresh = compile_relayout_with(&src, &dst, Options::new().cache(false)).unwrap();
    assert!(!fresh.was_cached());
    assert!(!compile_relayout(&src, &dst).unwrap().was_cached());
    assert!(compile_relayout(&src, &dst).unwrap().was_cached());
    check_pair(&src, &dst);
}

#[test]
fn broadcast_gaps_stay_on_the_fast_path() {
    // (4,(2,2)):(1,(0,3)) as a source: dim 1's low digit is a stride-0 gap.
    let src = Layout::new(
        &[4, 4],
        vec![
            Digit::new(Source::Dim(0), 1, None, 1),
            Digit::new(Source::Dim(1), 2, None, 3),
        ],
    )
    .unwrap();
    assert!(src.is_separable());
    assert!(!src.is_injective());
    check_pair(&src, &Layout::col_major(&[4, 4]).unwrap());
}

/// `[n, c]` row-major against `c` split into blocks of `k` moved innermost (NCHWc-style packing
/// of a 2-D tensor: `[c // k, n, c % k]`).
fn packed(n: usize, c: usize, k: usize) -> Layout {
    Layout::parse(&format!(
        "tvm:[{n},{c}] lambda n, c: [c // {k}, n, c % {k}]"
    ))
    .unwrap()
}

#[test]
fn zip_and_unzip_kernels_for_short_strips() {
    use relayout::plan::{Kernel, Plan};
    for elem in [1usize, 2, 4, 8] {
        let lanes = 16 / elem;
        for k in [2, 4, 8].into_iter().filter(|&k| k < lanes) {
            for n in [lanes, 3 * lanes + 1, 40] {
                // Strips of k interleaved in the source become rows of n: unzip; and back: zip.
                let rows = Layout::row_major(&[k, n]).unwrap();
                let interleaved = Layout::col_major(&[k, n]).unwrap();
                let unzip = Plan::new(&interleaved, &rows, elem).unwrap();
                assert!(
                    matches!(unzip.regions()[0].kernel, Kernel::Unzip { .. }),
                    "{elem}-byte, k {k}, n {n}:\n{unzip}"
                );
                let zip = Plan::new(&rows, &interleaved, elem).unwrap();
                assert!(
                    matches!(zip.regions()[0].kernel, Kernel::Zip { .. }),
                    "{elem}-byte, k {k}, n {n}:\n{zip}"
                );
                check_pair(&interleaved, &rows);
                check_pair(&rows, &interleaved);
            }
        }
    }
    // Packing with blocks of 4 and 8 (including a padded last block) in both directions.
    for (n, c, k) in [(16, 8, 4), (33, 16, 8), (17, 12, 8), (64, 6, 4)] {
        let rm = Layout::row_major(&[n, c]).unwrap();
        check_pair(&rm, &packed(n, c, k));
        check_pair(&packed(n, c, k), &rm);
    }
    // XLA's (2,1) sub-tiles pair rows of 16-bit elements.
    for (r, c) in [(16, 256), (10, 130)] {
        let src = Layout::parse(&format!("xla:bf16[{r},{c}]{{1,0}}")).unwrap();
        let dst = Layout::parse(&format!("xla:bf16[{r},{c}]{{1,0:T(8,128)(2,1)}}")).unwrap();
        check_pair(&src, &dst);
        check_pair(&dst, &src);
    }
}

#[test]
fn large_destinations_are_streamed_and_correct() {
    use relayout::plan::{Plan, Tactics};
    let machine = common::streams_from_8_mib();
    // 12 MB of u32 in runs of 1_000_003 elements (runs after the first start unaligned),
    // and a permutation that moves runs of 300_000 elements.
    let long = Layout::row_major(&[3, 1_000_003]).unwrap();
    let runs = Layout::row_major(&[3, 4, 300_000]).unwrap();
    let swapped = Layout::ordered(&[3, 4, 300_000], &[1, 0, 2]).unwrap();
    for (src, dst) in [(&long, &long), (&runs, &swapped)] {
        assert!(dst.cosize() * 4 >= machine.stream_min_bytes);
        let plan = Plan::with_tactics(src, dst, 4, Tactics::default(), machine).unwrap();
        assert!(plan.streams(), "{plan}");
        check_pair_on::<u32>(src, dst, None, machine);
        check_pair_on::<u32>(src, dst, Some(7), machine);
    }
    // 1-byte elements in runs of an odd length: every run after the first starts unaligned.
    let bytes = Layout::row_major(&[3, 3_000_001]).unwrap();
    check_pair_on::<u8>(&bytes, &bytes, None, machine);
}

#[test]
fn large_destinations_stream_short_runs_and_zips() {
    use relayout::plan::{CopyWrite, Kernel, Plan, Tactics, ZipWrite};
    let machine = common::streams_from_8_mib();
    // NHWC to NCHW16c (64-byte runs of 16 u32, one per channel block of a pixel) and XLA's
    // (8,128) tiles (512-byte runs), both over 8 MiB: streamed copies whose innermost loop is
    // handed to the streaming routine as rows.
    let nhwc = "tvm:[11,56,56,64] lambda n,h,w,c: [n, h, w, c]";
    let nchw16c = "tvm:[11,56,56,64] lambda n,h,w,c: [n, c//16, h, w, c%16]";
    let rows = "xla:u32[1032,2304]{1,0}";
    let tiles = "xla:u32[1032,2304]{1,0:T(8,128)}";
    for (src, dst) in [(nhwc, nchw16c), (rows, tiles)] {
        let (src, dst) = (Layout::parse(src).unwrap(), Layout::parse(dst).unwrap());
        let plan = Plan::with_tactics(&src, &dst, 4, Tactics::default(), machine).unwrap();
        assert!(
            plan.regions()
                .iter()
                .any(|r| matches!(r.kernel, Kernel::Copy { len, write: CopyWrite::Streamed { .. }, .. } if len < 1024)),
            "{plan}"
        );
        check_pair_on::<u32>(&src, &dst, None, machine);
        check_pair_on::<u32>(&src, &dst, Some(7), machine);
    }
    // XLA's (8,128)(2,1) bf16 tiles over 8 MiB: 512-byte zips staged and streamed out.
    let src = Layout::parse("xla:bf16[2048,2304]{1,0}").unwrap();
    let dst = Layout::parse("xla:bf16[2048,2304]{1,0:T(8,128)(2,1)}").unwrap();
    let plan = Plan::with_tactics(&src, &dst, 2, Tactics::default(), machine).unwrap();
    assert!(
        plan.regions().iter().any(|r| matches!(
            r.kernel,
            Kernel::Zip {
                write: ZipWrite::StreamedTile | ZipWrite::StreamedRun { .. },
                ..
            }
        )),
        "{plan}"
    );
    check_pair_on::<u16>(&src, &dst, None, machine);
    check_pair_on::<u16>(&dst, &src, None, machine);
    // Two strips of 2_100_001 u16 zipped (one zip as long as the tensor): cut into runs that a
    // staging buffer holds, the last with an element-wise tail written into the stage.
    let src = Layout::row_major(&[2, 2_100_001]).unwrap();
    let dst = Layout::col_major(&[2, 2_100_001]).unwrap();
    let plan = Plan::with_tactics(&src, &dst, 2, Tactics::default(), machine).unwrap();
    assert!(plan.stage_bytes().is_some(), "{plan}");
    for bytes in plan.regions().iter().filter_map(|r| r.stage_bytes(2)) {
        assert!(bytes <= machine.stage_limit_bytes, "{plan}");
    }
    check_pair_on::<u16>(&src, &dst, None, machine);
}

#[test]
fn staging_is_bounded_whatever_the_blocking() {
    use relayout::plan::{BlockWrite, Blocking, Plan, Tactics, Walk};
    use relayout::Target;
    // A caller's blocking of 1 MiB staged blocks: too large for a stack slot, so stored in place.
    let huge = Blocking {
        run_bytes: 4096,
        block_bytes: 1 << 20,
        macro_strips: 1,
        macro_blocks: 1,
        write: BlockWrite::Streamed,
        walk: Walk::Along,
        prefetch_ahead: 1,
        prefetch_group: 1,
    };
    let src = Layout::row_major(&[1024, 2048]).unwrap();
    let dst = Layout::col_major(&[1024, 2048]).unwrap();
    let host = Target::host();
    let plan = Plan::with_tactics(&src, &dst, 4, Tactics::fixed(huge), host).unwrap();
    for r in plan.regions() {
        assert!(
            r.stage_bytes(4).is_none_or(|b| b <= host.stage_limit_bytes),
            "{plan}"
        );
    }
    check_pair_as::<u32>(&src, &dst, None);
}

/// Runs a tuned relayout of 4-byte elements until it has chosen, checking every run (each
/// trial of a candidate) against the reference, and that the choice is kept and remembered;
/// returns how many runs the tuning took. The budget is ample, so every candidate has its
/// trials however slow the machine.
fn tune_to_the_end(src: &Layout, dst: &Layout, target: relayout::Target) -> usize {
    use relayout::{compile_relayout_with, reference, Options};
    let ample = std::time::Duration::from_secs(3600);
    let options = Options::new()
        .elem_size(4)
        .tune(true)
        .tune_budget(ample)
        .target(target);
    let r = compile_relayout_with(src, dst, options.clone()).unwrap();
    assert_eq!(r.tactics(), None, "tuning starts by measuring");
    let a: Vec<u32> = common::pattern(src.cosize());
    let mut want = vec![0u32; dst.cosize()];
    reference::relayout(src, &a, dst, &mut want, None).unwrap();
    let mut runs = 0;
    while r.tactics().is_none() {
        let mut got = vec![0u32; dst.cosize()];
        r.run(&a, &mut got).unwrap();
        assert!(
            got == want,
            "run {runs} (a trial) differs from the reference"
        );
        runs += 1;
        // Seven runs of each candidate at most, and of two of them again.
        assert!(runs <= 7 * (relayout::plan::Tactics::CANDIDATES.len() + 2));
    }
    let chosen = r.tactics().unwrap();
    let mut got = vec![0u32; dst.cosize()];
    r.run(&a, &mut got).unwrap();
    assert!(got == want);
    // Compiling again remembers the choice.
    let again = compile_relayout_with(src, dst, options).unwrap();
    assert_eq!(again.tactics(), Some(chosen));
    runs
}

#[test]
fn tuning_measures_the_candidates_then_keeps_one() {
    // A 9 MB destination: large enough to tune, with several distinct blockings.
    let src = Layout::row_major(&[1100, 2048]).unwrap();
    let dst = Layout::col_major(&[1100, 2048]).unwrap();
    let runs = tune_to_the_end(&src, &dst, relayout::Target::host());
    assert!(runs >= 14, "at least two candidates, seven runs each");
}

#[test]
fn large_destinations_that_do_not_stream_are_tuned_too() {
    // A 1.6 MB transpose on a machine whose cache holds it (streaming from 1 GiB): its
    // blockings with ordinary stores are still measured, from 1 MiB of destination.
    let roomy = common::streams_from_1_gib();
    let src = Layout::row_major(&[200, 2048]).unwrap();
    let dst = Layout::col_major(&[200, 2048]).unwrap();
    let runs = tune_to_the_end(&src, &dst, roomy);
    assert!(runs >= 14, "at least two candidates, seven runs each");
    // Under 1 MiB, nothing is measured.
    let small = Layout::row_major(&[120, 2048]).unwrap();
    let small_t = Layout::col_major(&[120, 2048]).unwrap();
    let options = relayout::Options::new()
        .elem_size(4)
        .tune(true)
        .target(roomy);
    let r = relayout::compile_relayout_with(&small, &small_t, options).unwrap();
    assert!(r.tactics().is_some(), "a small destination is not tuned");
}

#[test]
fn large_copies_are_tuned_between_streaming_ordinary_and_prefetched_stores() {
    use relayout::plan::{CopyWrite, Kernel, LargeWrites, Plan, Tactics};
    // NHWC -> NCHW16c of 9.6 MB: 64-byte copies into four places at once.
    let src = Layout::parse("tvm:[12,56,56,64] lambda n,h,w,c: [n, h, w, c]").unwrap();
    let dst = Layout::parse("tvm:[12,56,56,64] lambda n,h,w,c: [n, c//16, h, w, c%16]").unwrap();
    let host = common::streams_from_8_mib();
    let streamed = Plan::with_tactics(&src, &dst, 4, Tactics::default(), host).unwrap();
    assert!(
        streamed.regions().iter().all(|r| r.kernel.streams()),
        "{streamed}"
    );
    let ordinary_tactics_in = |order| Tactics {
        large_writes: LargeWrites::Stored,
        order,
        ..Tactics::default()
    };
    let ordinary = ordinary_tactics_in(relayout::plan::LoopOrder::Fitted);
    let ordinary = Plan::with_tactics(&src, &dst, 4, ordinary, host).unwrap();
    assert!(!ordinary.streams(), "{ordinary}");
    // Those are two of the six plans the candidates give, both in the source's order (copies of
    // a cache line or more run in it, streamed or not); two more take the destination's order,
    // streamed and with ordinary stores, and the last two copy by the routine that asks for
    // lines ahead, in either order.
    use relayout::plan::LoopOrder;
    let by_destination = Tactics::default().ordered(LoopOrder::Destination);
    let by_destination = Plan::with_tactics(&src, &dst, 4, by_destination, host).unwrap();
    assert!(by_destination.streams(), "{by_destination}");
    assert_ne!(by_destination, streamed);
    let by_source = ordinary_tactics_in(LoopOrder::Source);
    let by_source = Plan::with_tactics(&src, &dst, 4, by_source, host).unwrap();
    assert_eq!(by_source, ordinary);
    let stored_by_destination = ordinary_tactics_in(LoopOrder::Destination);
    let stored_by_destination =
        Plan::with_tactics(&src, &dst, 4, stored_by_destination, host).unwrap();
    assert!(!stored_by_destination.streams(), "{stored_by_destination}");
    assert_ne!(stored_by_destination, ordinary);
    // Prefetched: the copies go to the routine that asks for lines ahead, in either order.
    let prefetched_in = |order| Tactics {
        large_writes: LargeWrites::Prefetched,
        order,
        ..Tactics::default()
    };
    for order in [LoopOrder::Fitted, LoopOrder::Destination] {
        let prefetched = Plan::with_tactics(&src, &dst, 4, prefetched_in(order), host).unwrap();
        assert!(!prefetched.streams(), "{prefetched}");
        assert!(
            prefetched.regions().iter().all(|r| matches!(
                r.kernel,
                Kernel::Copy {
                    write: CopyWrite::Prefetched { .. },
                    ..
                }
            )),
            "{prefetched}"
        );
    }
    let distinct: Vec<Plan> = Tactics::CANDIDATES
        .iter()
        .fold(Vec::new(), |mut plans, &t| {
            let plan = Plan::with_tactics(&src, &dst, 4, t, host).unwrap();
            if !plans.contains(&plan) {
                plans.push(plan);
            }
            plans
        });
    assert_eq!(distinct.len(), 6);
    // A warm-up run and six trials each; or, when the default's second run takes 20 ms or
    // more (as it can on a slow machine), six trials each and the default's untimed first run.
    // Where the trials put another candidate ahead of the default, the two run again as
    // in the trials.
    let runs = tune_to_the_end(&src, &dst, host);
    assert!(
        [6 * 7, 6 * 7 + 2 * 7, 6 * 6 + 1, 6 * 6 + 1 + 2 * 6].contains(&runs),
        "{runs} runs"
    );
}

#[test]
fn prefetched_transposes_store_tiles_in_place_asking_ahead() {
    use common::guard::Pin;
    use relayout::plan::{Kernel, Plan, TransposeWrite};
    use relayout::Target;
    // A target that streams from the first byte and takes the runtime's tiles for every
    // transpose plans large destinations at test sizes. With prefetched large writes,
    // transposes of 4- and 8-byte elements store their tiles in place asking for lines ahead
    // (the blocking fitted to stores that do not stream), 1- and 2-byte ones in place; zips
    // store in place, as ordinary stores have them.
    let eager = Target {
        stream_min_bytes: 0,
        emitted_tiles_max_bytes: 0,
        ..Target::host()
    };
    let (prefetched, stored) = prefetched_and_stored();
    let transposes = |plan: &Plan| -> Vec<TransposeWrite> {
        let writes = plan.regions().iter().filter_map(|r| match r.kernel {
            Kernel::Transpose { write, .. } => Some(write),
            _ => None,
        });
        writes.collect()
    };
    // NCHW -> NCHW16c (16 rows of 64 bytes a block), a 2-D transpose with edges on both sides,
    // and NHWC -> NCHW with 10 channels (not a whole number of tiles, and too many to unzip
    // but in bytes).
    let pairs = [
        (
            "tvm:[2,32,5,7] lambda n,c,h,w: [n, c, h, w]",
            "tvm:[2,32,5,7] lambda n,c,h,w: [n, c//16, h, w, c%16]",
        ),
        ("cute:(37,45):(45,1)", "cute:(37,45):(1,37)"),
        ("cute:(3,50,10):(500,10,1)", "cute:(3,50,10):(500,1,50)"),
    ];
    for (src, dst) in pairs {
        let (src, dst) = (Layout::parse(src).unwrap(), Layout::parse(dst).unwrap());
        for elem_size in [1, 2, 4, 8] {
            let plan = Plan::with_tactics(&src, &dst, elem_size, prefetched, eager).unwrap();
            let writes = transposes(&plan);
            let asks = |w: &TransposeWrite| *w == TransposeWrite::Prefetched;
            match elem_size {
                4 | 8 => assert!(!writes.is_empty() && writes.iter().all(asks), "{plan}"),
                _ => assert!(!writes.iter().any(asks), "{plan}"),
            }
            // The same plan as ordinary stores but for the asking.
            let plain = Plan::with_tactics(&src, &dst, elem_size, stored, eager).unwrap();
            let unasked = transposes(&plain);
            assert_eq!(writes.len(), unasked.len(), "{plan}{plain}");
            assert!(
                unasked.iter().all(|w| *w == TransposeWrite::InPlace),
                "{plain}"
            );
            common::check_plan_moves_of(&plan, &src, &dst);
        }
        let pin = Some(Pin {
            tactics: prefetched,
            target: eager,
        });
        check_pair_pinned_at_every_size(&src, &dst, pin);
    }
    // Odd/even strips: zips of 16-element strips, too short to ask by calls, stored in place
    // with prefetched large writes.
    let src = Layout::parse("morello:[4096] [0]").unwrap();
    let dst = Layout::parse("morello:[4096] [0, 0 oe(16)]").unwrap();
    let plan = Plan::with_tactics(&src, &dst, 4, prefetched, eager).unwrap();
    let plain = Plan::with_tactics(&src, &dst, 4, stored, eager).unwrap();
    assert!(!plan.streams(), "{plan}");
    assert_eq!(plan, plain);
}

#[test]
fn long_zips_and_unzips_with_few_outer_iterations_are_cut_for_threads() {
    use common::guard::{check_guarded, Pin, Run};
    use relayout::plan::{Kernel, Plan, ASK_GROUPS};
    let eager = streams_from_the_first_byte();
    let (prefetched, stored) = prefetched_and_stored();
    // A complex split and join, and one image of three channels into pixels and back: each is
    // a single zip or unzip of a long run unless the planner cuts the run. Sixteen images of
    // the same size already give threads sixteen iterations to share.
    let one_run = [
        ("cute:(160009,2):(2,1)", "cute:(160009,2):(1,160009)"),
        ("cute:(160009,2):(1,160009)", "cute:(160009,2):(2,1)"),
        ("cute:(3,160009):(160009,1)", "cute:(3,160009):(1,3)"),
        ("cute:(160009,3):(3,1)", "cute:(160009,3):(1,160009)"),
    ];
    let images = [
        (
            "cute:(16,3,22003):(66009,22003,1)",
            "cute:(16,3,22003):(66009,1,3)",
        ),
        (
            "cute:(16,22003,3):(66009,3,1)",
            "cute:(16,22003,3):(66009,1,22003)",
        ),
    ];
    for (pairs, cut) in [(&one_run[..], true), (&images[..], false)] {
        for &(src, dst) in pairs {
            let (src, dst) = (Layout::parse(src).unwrap(), Layout::parse(dst).unwrap());
            for tactics in [prefetched, stored] {
                for elem_size in [1, 2, 4, 8] {
                    let plan = Plan::with_tactics(&src, &dst, elem_size, tactics, eager).unwrap();
                    let (first, rest) = plan.regions().split_first().unwrap();
                    let tile = match first.kernel {
                        Kernel::Zip { tile, .. } | Kernel::Unzip { tile, .. } => Some(tile),
                        _ => None,
                    };
                    assert!(tile.is_some(), "{plan}");
                    if let Some(tile) = tile.filter(|_| cut) {
                        // Whole calls of asking ahead in each chunk, the rest in one more
                        // region; two threads split the chunks evenly.
                        assert!(plan.work() >= 16, "{plan}");
                        assert_eq!(tile.long.extent % (tile.lanes * ASK_GROUPS), 0, "{plan}");
                        assert!(rest.len() <= 1, "{plan}");
                        let half = plan.balanced_split(2)[1];
                        assert!(half.abs_diff(plan.work() / 2) <= 1, "{plan}");
                    } else if let Some(tile) = tile {
                        assert_eq!((plan.work(), plan.regions().len()), (16, 1), "{plan}");
                        assert_eq!(tile.long.extent, 22003, "{plan}");
                    }
                    common::check_plan_moves_of(&plan, &src, &dst);
                    let pin = Some(Pin {
                        tactics,
                        target: eager,
                    });
                    let run = Run {
                        elem_size,
                        pad: None,
                        threads: 2,
                        pin,
                    };
                    check_guarded(&src, &dst, run).unwrap();
                }
            }
        }
    }
}

/// The host, streaming (or asking ahead) from the first byte, so that test sizes plan as large
/// destinations do.
/// `plan` (the default tactics' on `target`) moves every element once, and the kernel of those
/// tactics on `target` matches the reference in guard pages.
fn check_default_plan_on(
    plan: &relayout::plan::Plan,
    src: &Layout,
    dst: &Layout,
    elem_size: usize,
    target: relayout::Target,
) {
    use common::guard::{check_guarded, Pin, Run};
    common::check_plan_moves_of(plan, src, dst);
    let run = Run {
        elem_size,
        pad: None,
        threads: 1,
        pin: Some(Pin::defaults_on(target)),
    };
    check_guarded(src, dst, run).unwrap();
}

fn streams_from_the_first_byte() -> relayout::Target {
    relayout::Target {
        stream_min_bytes: 0,
        ..relayout::Target::host()
    }
}

/// Tactics with large writes prefetched, and with them stored, the rest default.
fn prefetched_and_stored() -> (relayout::plan::Tactics, relayout::plan::Tactics) {
    use relayout::plan::{LargeWrites, Tactics};
    let with = |large_writes| Tactics {
        large_writes,
        ..Tactics::default()
    };
    (with(LargeWrites::Prefetched), with(LargeWrites::Stored))
}

#[test]
fn prefetched_zips_and_unzips_of_long_runs_ask_ahead_by_calls() {
    use common::guard::Pin;
    use relayout::plan::{Kernel, Plan, UnzipWrite, ZipTile, ZipWrite, ASK_GROUPS};
    let eager = streams_from_the_first_byte();
    let (prefetched, stored) = prefetched_and_stored();
    // Each zip and unzip of a plan: whether it zips, whether it asks ahead, and whether its run
    // holds two calls' worth of groups.
    let zips = |plan: &Plan| -> Vec<(bool, bool, bool)> {
        let long = |tile: ZipTile| tile.long.extent / tile.lanes >= 2 * ASK_GROUPS;
        let zips = plan.regions().iter().filter_map(|r| match r.kernel {
            Kernel::Zip { tile, write } => Some((true, write == ZipWrite::Prefetched, long(tile))),
            Kernel::Unzip { tile, write } => {
                Some((false, write == UnzipWrite::Prefetched, long(tile)))
            }
            _ => None,
        });
        zips.collect()
    };
    // Complex numbers split into planes and back, three channels into pixels and back (runs
    // of a few calls' worth, the last one short, and an element-wise tail).
    let pairs = [
        ("cute:(5003,2):(2,1)", "cute:(5003,2):(1,5003)", false),
        ("cute:(5003,2):(1,5003)", "cute:(5003,2):(2,1)", true),
        (
            "cute:(2,3,1001):(3003,1001,1)",
            "cute:(2,3,1001):(3003,1,3)",
            true,
        ),
        (
            "cute:(2,1001,3):(3003,3,1)",
            "cute:(2,1001,3):(3003,1,1001)",
            false,
        ),
    ];
    for (src, dst, zip) in pairs {
        let (src, dst) = (Layout::parse(src).unwrap(), Layout::parse(dst).unwrap());
        for elem_size in [1, 2, 4, 8] {
            let plan = Plan::with_tactics(&src, &dst, elem_size, prefetched, eager).unwrap();
            let plain = Plan::with_tactics(&src, &dst, elem_size, stored, eager).unwrap();
            // As ordinary stores plan them (which may take other kernels than zips for some
            // element sizes, never for f32), asking wherever the run holds two calls' worth.
            let (asked, unasked) = (zips(&plan), zips(&plain));
            assert_eq!(asked.len(), unasked.len(), "{plan}{plain}");
            assert!(elem_size != 4 || asked.iter().any(|z| z.1), "{plan}");
            for (&(z, asks, long), &(plain_z, plain_asks, _)) in asked.iter().zip(&unasked) {
                assert_eq!((z, plain_z), (zip, zip), "{plan}{plain}");
                assert_eq!(asks, long, "{plan}");
                assert!(!plain_asks, "{plain}");
            }
            if asked.iter().any(|z| z.1) {
                assert!(plan.to_string().contains("lines asked for ahead"), "{plan}");
            }
            common::check_plan_moves_of(&plan, &src, &dst);
        }
        let pin = Some(Pin {
            tactics: prefetched,
            target: eager,
        });
        check_pair_pinned_at_every_size(&src, &dst, pin);
    }
}

#[test]
fn channels_past_the_lanes_finish_their_blocks_with_edge_tiles() {
    // NHWC <-> NCHW with more channels than lanes and not a whole number of tiles, large
    // enough that every element size that does not zip or unzip them takes the runtime's
    // block transpose (past the emitted tiles' limit), whose edges are tiles that overlap the
    // whole ones: every element lands where the reference puts it, and only there.
    for k in [5usize, 6, 7, 9, 13] {
        let shape = [2, k, 1531];
        let planar = Layout::row_major(&shape).unwrap();
        let interleaved = Layout::ordered(&shape, &[0, 2, 1]).unwrap();
        check_pair(&planar, &interleaved);
        check_pair(&interleaved, &planar);
    }
}

#[test]
fn short_strips_of_any_extent_zip_and_unzip_in_registers() {
    use relayout::plan::{Kernel, Plan, ZipTile};
    // k strips of n elements interleaved (NCHW -> NHWC with k channels, RGB pixels) and back,
    // for every k from 3 to 15, with whole vectors and element tails along the strips: every
    // k up to the lane count of an element size takes a shuffle network, not element moves,
    // and so do a few more than the lanes of 4- and 8-byte elements where the planner takes
    // them (`ZipTile::interleaves`; otherwise more strips than lanes make a transpose).
    for k in 3..=15usize {
        for n in [16, 37] {
            let planar = Layout::row_major(&[2, k, n]).unwrap();
            let interleaved = Layout::ordered(&[2, k, n], &[0, 2, 1]).unwrap();
            check_pair(&planar, &interleaved);
            check_pair(&interleaved, &planar);
            for elem in [1usize, 2, 4, 8] {
                let lanes = 16 / elem;
                let ways = [
                    (&planar, &interleaved, ZipTile::interleaves(k, lanes)),
                    (&interleaved, &planar, ZipTile::interleaves(k, lanes)),
                ];
                for (from, to, takes) in ways {
                    let plan = Plan::new(from, to, elem).unwrap();
                    let shuffled = plan
                        .regions()
                        .iter()
                        .any(|r| matches!(r.kernel, Kernel::Zip { .. } | Kernel::Unzip { .. }));
                    assert_eq!(shuffled, takes, "k {k}, {elem}-byte elements:\n{plan}");
                    assert!(takes || k > lanes, "k {k}, {elem}-byte elements");
                }
            }
        }
    }
    // Three channels of a batch of images, both ways, with a pad value and on two threads.
    let nchw = Layout::row_major(&[4, 3, 33, 35]).unwrap();
    let nhwc = Layout::ordered(&[4, 3, 33, 35], &[0, 2, 3, 1]).unwrap();
    check_pair(&nchw, &nhwc);
    check_pair(&nhwc, &nchw);
}

#[test]
fn tuning_choices_are_saved_and_loaded() {
    use relayout::plan::Tactics;
    use relayout::{compile_relayout_with, tuning, Error, Options, Target};
    let dir = std::env::temp_dir().join(format!("relayout-tuning-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A 9.5 MB transpose tuned to the end: its choice is saved.
    let (src, dst) = (
        Layout::row_major(&[1150, 2048]).unwrap(),
        Layout::col_major(&[1150, 2048]).unwrap(),
    );
    tune_to_the_end(&src, &dst, Target::host());
    let chosen = compile_relayout_with(&src, &dst, Options::new().tune(true))
        .unwrap()
        .tactics()
        .unwrap();
    let saved = dir.join("saved.tsv");
    assert!(tuning::save(&saved).unwrap() >= 1);
    let text = std::fs::read_to_string(&saved).unwrap();
    let line = format!("\t{src}\t{dst}\t{chosen}");
    assert!(text.lines().any(|l| l.ends_with(&line)), "{text}");
    // A choice written for a pair this process never tuned is used without measuring.
    let (other_src, other_dst) = (
        Layout::row_major(&[1160, 2048]).unwrap(),
        Layout::col_major(&[1160, 2048]).unwrap(),
    );
    let pinned = Tactics::CANDIDATES[7];
    let host = Target::host();
    let written = dir.join("written.tsv");
    let mine = format!(
        "{}\t1\t4\t{host}\t{other_src}\t{other_dst}\t{pinned}\n",
        tuning::cpu()
    );
    let foreign = format!("another cpu\t1\t4\t{host}\t{src}\t{dst}\t{pinned}\n");
    std::fs::write(&written, format!("# comment\n{mine}{foreign}")).unwrap();
    assert_eq!(
        tuning::load(&written).unwrap(),
        1,
        "the other CPU's line is skipped"
    );
    let r = compile_relayout_with(&other_src, &other_dst, Options::new().tune(true)).unwrap();
    assert_eq!(r.tactics(), Some(pinned));
    // Saving again keeps the loaded choice beside this process's own.
    tuning::save(&saved).unwrap();
    assert!(std::fs::read_to_string(&saved)
        .unwrap()
        .contains(mine.trim_end()));
    // A broken line is an error that names it; a missing file is an I/O error.
    let broken = dir.join("broken.tsv");
    std::fs::write(&broken, format!("{mine}a\tb\n")).unwrap();
    let err = tuning::load(&broken).unwrap_err();
    assert!(matches!(err, Error::Parse { .. }), "{err}");
    assert!(err.to_string().contains("line 2"), "{err}");
    let err = tuning::load(dir.join("missing.tsv")).unwrap_err();
    assert!(matches!(err, Error::Io(_)), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn few_channel_unzips_stream_their_strips() {
    use relayout::plan::{Kernel, Plan, Tactics, UnzipWrite};
    let machine = common::streams_from_8_mib();
    // NHWC -> NCHW with 3 channels over 8 MiB: the strips (one per channel plane) are unzipped
    // a chunk at a time into the staging buffer and streamed out as three rows; a plane that is
    // not a whole number of chunks, and one element past a vector, end each batch. Planes that
    // are not whole lines apart join their chunks' runs.
    for (hw, elem) in [(174_768, 4), (174_763, 4), (700_001, 1), (350_003, 2)] {
        let nhwc = Layout::ordered(&[4, 3, hw], &[0, 2, 1]).unwrap();
        let nchw = Layout::row_major(&[4, 3, hw]).unwrap();
        let plan = Plan::with_tactics(&nhwc, &nchw, elem, Tactics::default(), machine).unwrap();
        let whole_lines = (hw * elem).is_multiple_of(machine.line_bytes);
        assert!(
            plan.regions().iter().any(|r| match r.kernel {
                Kernel::Unzip {
                    write: UnzipWrite::StreamedStrips,
                    ..
                } => whole_lines,
                Kernel::Unzip {
                    write: UnzipWrite::JoinedStrips(_),
                    ..
                } => !whole_lines,
                _ => false,
            }),
            "{plan}"
        );
        common::check_plan_moves_of(&plan, &nhwc, &nchw);
        match elem {
            1 => check_pair_on::<u8>(&nhwc, &nchw, None, machine),
            2 => check_pair_on::<u16>(&nhwc, &nchw, None, machine),
            _ => check_pair_on::<u32>(&nhwc, &nchw, None, machine),
        }
    }
}

#[test]
fn staged_strips_of_one_source_stream_read_as_pieces_side_by_side() {
    use common::guard::{check_guarded, Pin, Run};
    use relayout::plan::{LargeWrites, Plan, Tactics};
    // A target that streams from the first byte stages odd/even strips at test sizes; with
    // `StreamedInPieces` a run of four pages is read as four pieces side by side.
    let eager = streams_from_the_first_byte();
    let in_pieces = Tactics {
        large_writes: LargeWrites::StreamedInPieces,
        ..Tactics::default()
    };
    // (Two lanes of 8-byte elements leave no strip count for a zip.)
    for elem_size in [1, 2, 4] {
        // Elements of one run: four pieces of 4 KiB.
        let run = 4 * 4096 / elem_size;
        // Two whole runs and three steps of 32 more (a region of their own); too short for two.
        // Strips of 16: whole vectors of every element size.
        for (n, pieces) in [(2 * run + 96, 4), (2 * run - 32, 1)] {
            let row = format!("morello:[{n}] [0]");
            let strips = format!("morello:[{n}] [0, 0 oe(32)]");
            for (src, dst) in [(&row, &strips), (&strips, &row)] {
                let (src, dst) = (Layout::parse(src).unwrap(), Layout::parse(dst).unwrap());
                let plan = Plan::with_tactics(&src, &dst, elem_size, in_pieces, eager).unwrap();
                let most = plan.regions().iter().map(|r| r.kernel.pieces()).max();
                assert_eq!(most, Some(pieces), "{plan}");
                assert_eq!(
                    plan.to_string().contains("read as 4 pieces side by side"),
                    pieces == 4,
                    "{plan}"
                );
                common::check_plan_moves_of(&plan, &src, &dst);
                let pin = Some(Pin {
                    tactics: in_pieces,
                    target: eager,
                });
                for threads in [1, 2] {
                    let run = Run {
                        elem_size,
                        pad: None,
                        threads,
                        pin,
                    };
                    check_guarded(&src, &dst, run).unwrap();
                }
            }
        }
    }
}
