//! Plans and kernels for buffers that start part-way into a cache line: every element moved
//! once at every offset, the JIT against the reference on buffers at each offset, and guarded.

mod common;

use common::check_plan_moves_of;
use common::guard::{check_guarded, pattern, Run, MARKER};
use relayout::plan::{CopyWrite, Kernel, LineOffsets, Plan, Tactics};
use relayout::{compile_relayout_with, reference, Element, Layout, Options, Target};

/// Pairs whose transposes have long rows on both sides, or on one: 2-D transposes of each
/// element size, NHWC -> NCHW (long destination rows), NCHW -> NHWC (long source rows), a
/// (0,2,1) permutation and a reversal of three dims; and unzips of pixels into 3 and 4 planes.
fn pairs() -> Vec<(Layout, Layout, usize)> {
    let transpose = |rows: usize, cols: usize, elem_size: usize| {
        (
            Layout::row_major(&[rows, cols]).unwrap(),
            Layout::col_major(&[rows, cols]).unwrap(),
            elem_size,
        )
    };
    let ordered = |shape: &[usize], order: &[usize], elem_size: usize| {
        (
            Layout::row_major(shape).unwrap(),
            Layout::ordered(shape, order).unwrap(),
            elem_size,
        )
    };
    vec![
        transpose(640, 640, 4),
        transpose(601, 603, 4),
        transpose(800, 704, 2),
        transpose(1216, 1024, 1),
        transpose(400, 416, 8),
        ordered(&[2, 784, 64], &[0, 2, 1], 4),
        ordered(&[2, 64, 784], &[0, 2, 1], 4),
        ordered(&[4, 256, 320], &[0, 2, 1], 4),
        ordered(&[20, 130, 140], &[2, 1, 0], 4),
        ordered(&[2, 50176, 3], &[0, 2, 1], 4),
        ordered(&[2, 40000, 4], &[0, 2, 1], 2),
    ]
}

/// Offsets in a 64-byte line for elements of `elem_size` bytes: every multiple of the element
/// size for 8-byte elements, a spread of them for smaller ones.
fn offsets(elem_size: usize) -> Vec<usize> {
    let mut out: Vec<usize> = [0, 4, 8, 12, 16, 24, 32, 40, 48, 56]
        .into_iter()
        .map(|o| o / elem_size * elem_size)
        .collect();
    out.extend([elem_size, 64 - elem_size]);
    out.sort_unstable();
    out.dedup();
    out
}

#[test]
fn plans_for_every_line_offset_move_each_element_once() {
    let host = Target::host();
    for (src, dst, elem_size) in pairs() {
        for s in offsets(elem_size) {
            for d in offsets(elem_size) {
                let at = LineOffsets { src: s, dst: d };
                let plan =
                    Plan::with_tactics_at(&src, &dst, elem_size, Tactics::default(), host, at)
                        .unwrap();
                plan.verify()
                    .unwrap_or_else(|v| panic!("{src} -> {dst} at {at:?}: {v}\n{plan}"));
                check_plan_moves_of(&plan, &src, &dst);
            }
        }
    }
}

#[test]
fn long_destination_rows_and_planes_are_peeled_to_whole_lines() {
    // 640² f32 (rows of 40 lines) into a buffer 16 bytes past a line: the first 12 elements
    // of each destination row go on their own, and every other transpose region's rows start
    // a line.
    let (src, dst) = (
        Layout::row_major(&[640, 640]).unwrap(),
        Layout::col_major(&[640, 640]).unwrap(),
    );
    let host = Target::host();
    let aligned = Plan::new(&src, &dst, 4).unwrap();
    let at = LineOffsets { src: 0, dst: 16 };
    let plan = Plan::with_tactics_at(&src, &dst, 4, Tactics::default(), host, at).unwrap();
    assert!(plan.regions().len() > aligned.regions().len(), "{plan}");
    let mut heads = 0;
    for region in plan.regions() {
        let Kernel::Transpose { tile, .. } = region.kernel else {
            panic!("not a transpose:\n{plan}");
        };
        if tile.b.extent == 12 && region.dst_base == 0 {
            heads += 1;
        } else {
            assert_eq!((16 + region.dst_base * 4) % 64, 0, "{plan}");
        }
    }
    assert_eq!(heads, 1, "{plan}");
    // Pixels of 3 f32 channels into planes: the first 12 pixels of each plane go on their own.
    let (src, dst) = (
        Layout::row_major(&[2, 50176, 3]).unwrap(),
        Layout::ordered(&[2, 50176, 3], &[0, 2, 1]).unwrap(),
    );
    let plan = Plan::with_tactics_at(&src, &dst, 4, Tactics::default(), host, at).unwrap();
    let aligned = Plan::new(&src, &dst, 4).unwrap();
    assert!(plan.regions().len() > aligned.regions().len(), "{plan}");
    assert!(
        plan.regions().iter().any(|r| matches!(
            r.kernel,
            Kernel::Unzip { tile, .. } if tile.long.extent == 12
        )),
        "{plan}"
    );
    // NCHW -> NHWC with 64 channels: destination rows of 256 bytes, left alone.
    let (src, dst) = (
        Layout::row_major(&[2, 64, 784]).unwrap(),
        Layout::ordered(&[2, 64, 784], &[0, 2, 1]).unwrap(),
    );
    let plan = Plan::with_tactics_at(&src, &dst, 4, Tactics::default(), host, at).unwrap();
    assert_eq!(plan, Plan::new(&src, &dst, 4).unwrap());
}

/// Runs `src → dst` with the JIT on buffers whose first elements lie `at` bytes past a 64-byte
/// line, and compares the destination (pre-filled with a marker) with the reference.
fn check_at<T: Element + PartialEq + std::fmt::Debug>(
    src: &Layout,
    dst: &Layout,
    at: LineOffsets,
    threads: usize,
) {
    check_at_on::<T>(src, dst, at, threads, Target::host());
}

/// [`check_at`] with kernels planned for `target`.
fn check_at_on<T: Element + PartialEq + std::fmt::Debug>(
    src: &Layout,
    dst: &Layout,
    at: LineOffsets,
    threads: usize,
    target: Target,
) {
    let size = std::mem::size_of::<T>();
    let values: Vec<T> = pattern(src.cosize());
    let marker = T::from_bits(MARKER);
    let mut want = vec![marker; dst.cosize()];
    reference::relayout(src, &values, dst, &mut want, None).expect("reference");
    // Buffers with a line to spare, and the slice of each that starts `at` past a line.
    let spare = 64 / size;
    let start = |ptr: *const T, offset: usize| {
        let past = ptr as usize % 64;
        ((64 + offset - past) % 64) / size
    };
    let mut src_buf = vec![marker; values.len() + spare];
    let s = start(src_buf.as_ptr(), at.src);
    src_buf[s..s + values.len()].copy_from_slice(&values);
    let mut dst_buf = vec![marker; want.len() + spare];
    let d = start(dst_buf.as_ptr(), at.dst);
    let options = Options::new()
        .elem_size(size)
        .threads(threads)
        .target(target);
    let r = compile_relayout_with(src, dst, options).expect("compile");
    let (input, output) = (
        &src_buf[s..s + values.len()],
        &mut dst_buf[d..d + want.len()],
    );
    assert_eq!(output.as_ptr() as usize % 64, at.dst);
    r.run(input, output).expect("run");
    assert!(
        output == want.as_slice(),
        "{size}-byte elements at {at:?}: {src} -> {dst}"
    );
}

#[test]
fn kernels_run_on_buffers_at_every_line_offset() {
    for (src, dst, elem_size) in pairs() {
        for s in offsets(elem_size).into_iter().step_by(2) {
            for d in offsets(elem_size) {
                let at = LineOffsets { src: s, dst: d };
                match elem_size {
                    1 => check_at::<u8>(&src, &dst, at, 1),
                    2 => check_at::<u16>(&src, &dst, at, 1),
                    4 => check_at::<u32>(&src, &dst, at, 1),
                    _ => check_at::<u64>(&src, &dst, at, 1),
                }
            }
        }
    }
}

#[test]
fn threads_and_tuning_run_on_buffers_at_line_offsets() {
    // 4 MiB of f32, on two threads, tuned: each candidate is planned for the buffers' offsets.
    let (src, dst) = (
        Layout::row_major(&[1024, 1100]).unwrap(),
        Layout::col_major(&[1024, 1100]).unwrap(),
    );
    for at in [
        LineOffsets { src: 16, dst: 16 },
        LineOffsets { src: 0, dst: 48 },
    ] {
        check_at::<u32>(&src, &dst, at, 2);
    }
    let values: Vec<u32> = pattern(src.cosize());
    let mut want = vec![0u32; dst.cosize()];
    reference::relayout(&src, &values, &dst, &mut want, None).unwrap();
    let r = compile_relayout_with(&src, &dst, Options::new().tune(true)).unwrap();
    let mut out = vec![0u32; dst.cosize() + 16];
    for run in 0..40 {
        let shift = run % 16;
        let output = &mut out[shift..shift + want.len()];
        output.fill(u32::MAX);
        r.run(&values, output).unwrap();
        assert!(output == want.as_slice(), "run {run}, shifted by {shift}");
    }
}

/// The rows of the copy of `plan`'s first region that the runtime's routine takes per call.
fn copy_rows(plan: &Plan) -> relayout::plan::Loop {
    match plan.regions()[0].kernel {
        Kernel::Copy {
            write: CopyWrite::Streamed { rows, .. },
            ..
        } => rows,
        _ => panic!("not a streamed copy:\n{plan}"),
    }
}

#[test]
fn copies_into_a_destination_past_a_line_take_rows_end_to_end() {
    // Row-major 64 × 8192 into XLA-style tiles of 8 × 128 (tiles of 4 KiB of f32, 2 KiB of
    // u16; 1 MiB or more, so that runs plan for their buffers' offsets), on a target that
    // streams from the first byte: into a destination past a line, each call copies the 8
    // rows of a tile, end to end; into one at a line, the rows of the innermost loop, as
    // without offsets.
    let shape = [8, 8, 64, 128];
    let (src, dst) = (
        Layout::row_major(&shape).unwrap(),
        Layout::ordered(&shape, &[0, 2, 1, 3]).unwrap(),
    );
    let target = Target {
        stream_min_bytes: 0,
        ..Target::host()
    };
    let plan_at = |elem_size: usize, at: LineOffsets| {
        Plan::with_tactics_at(&src, &dst, elem_size, Tactics::default(), target, at).unwrap()
    };
    for elem_size in [2, 4] {
        let aligned = plan_at(elem_size, LineOffsets::default());
        let rows = copy_rows(&aligned);
        assert_ne!(rows.dst_stride, 128, "{aligned}");
        for d in offsets(elem_size).into_iter().filter(|&d| d > 0) {
            let at = LineOffsets { src: 0, dst: d };
            let plan = plan_at(elem_size, at);
            let rows = copy_rows(&plan);
            assert_eq!((rows.extent, rows.dst_stride), (8, 128), "{plan}");
            check_plan_moves_of(&plan, &src, &dst);
            if [elem_size, 16, 48].contains(&d) {
                match elem_size {
                    2 => check_at_on::<u16>(&src, &dst, at, 1, target),
                    _ => check_at_on::<u32>(&src, &dst, at, 1, target),
                }
            }
        }
    }
    // Tiles of 32 rows of 512 bytes: a call takes 8 of them (4 KiB), the tile's loop cut in
    // four; tiles of 31 rows, which no count but one from 2 to 8 divides, keep the innermost
    // loop.
    for (rows, taken) in [(32, 8), (31, 0)] {
        let shape = [5, rows, 16, 128];
        let (src, dst) = (
            Layout::row_major(&shape).unwrap(),
            Layout::ordered(&shape, &[0, 2, 1, 3]).unwrap(),
        );
        let at = LineOffsets { src: 0, dst: 16 };
        let plan = Plan::with_tactics_at(&src, &dst, 4, Tactics::default(), target, at).unwrap();
        let rows = copy_rows(&plan);
        match taken {
            0 => assert_ne!(rows.dst_stride, 128, "{plan}"),
            _ => assert_eq!((rows.extent, rows.dst_stride), (taken, 128), "{plan}"),
        }
        check_plan_moves_of(&plan, &src, &dst);
        check_at_on::<u32>(&src, &dst, at, 1, target);
    }
    // Rows of a line (NHWC -> NCHW16c) stay as they are: taken end to end, they read their
    // source in passes.
    let shape = [2, 100, 4, 16];
    let (src, dst) = (
        Layout::row_major(&shape).unwrap(),
        Layout::ordered(&shape, &[0, 2, 1, 3]).unwrap(),
    );
    let at = LineOffsets { src: 16, dst: 16 };
    let plan = Plan::with_tactics_at(&src, &dst, 4, Tactics::default(), target, at).unwrap();
    let aligned = Plan::with_tactics_at(
        &src,
        &dst,
        4,
        Tactics::default(),
        target,
        LineOffsets::default(),
    )
    .unwrap();
    assert_eq!(plan, aligned);
    assert_ne!(copy_rows(&plan).dst_stride, 16, "{plan}");
    check_at_on::<u32>(&src, &dst, at, 1, target);
}

#[test]
fn guarded_buffers_off_their_lines() {
    // Buffers flush against the page after them start part-way into a line where their bytes
    // are not a whole number of lines: 601 × 600 f32 starts 32 bytes past one, 801 × 700 u16 8.
    for (shape, elem_size) in [([601, 600], 4), ([801, 700], 2)] {
        let src = Layout::row_major(&shape).unwrap();
        let dst = Layout::col_major(&shape).unwrap();
        for threads in [1, 2] {
            let run = Run {
                elem_size,
                pad: None,
                threads,
                pin: None,
            };
            check_guarded(&src, &dst, run).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

#[test]
fn line_tiles_stream_into_destinations_at_any_line_offset() {
    // NCHW -> NCHW16c in f32 and NCHW -> NCHW8c in f64 (destination rows of one line each,
    // one after another; 2 and 4 MiB, so that buffers off a line get kernels planned for
    // their offsets), on a target that streams from the first byte: the tiles stream whole
    // lines, put together where the destination starts 16, 32 or 48 bytes into a line, and
    // store ordinarily at other offsets.
    let target = Target {
        stream_min_bytes: 0,
        ..Target::host()
    };
    let blocked = |channels: usize| {
        let shape = [4, 16 / channels, channels, 8192];
        let (src, dst) = (
            Layout::row_major(&shape).unwrap(),
            Layout::ordered(&shape, &[0, 1, 3, 2]).unwrap(),
        );
        let at = LineOffsets::default();
        let plan = Plan::with_tactics_at(&src, &dst, 64 / channels, Tactics::default(), target, at)
            .unwrap();
        assert!(plan.to_string().contains("streaming whole lines"), "{plan}");
        (src, dst)
    };
    let (src, dst) = blocked(16);
    for d in offsets(4) {
        check_at_on::<u32>(&src, &dst, LineOffsets { src: 0, dst: d }, 1, target);
    }
    let (src, dst) = blocked(8);
    for d in offsets(8) {
        check_at_on::<u64>(&src, &dst, LineOffsets { src: 8, dst: d }, 1, target);
    }
}
