//! Kernels never touch memory outside their buffers: every run here has its source and
//! destination flush against an inaccessible page (after the last byte, then before the first),
//! so a stray read or write faults and kills the test process. Results are compared with the
//! reference bit for bit as well.

mod common;

use common::guard::{check_guarded, Edge, Guarded, Run, EDGES};
use common::random_layouts::pair_from;
use common::Pin;
use proptest::prelude::*;
use relayout::plan::Tactics;
use relayout::{Digit, Layout, Source};

/// Runs `src → dst` at every element size, with and without padding, on 1 and 3 threads.
fn check_all(src: &Layout, dst: &Layout) {
    for elem_size in [1, 2, 4, 8] {
        for pad in [None, Some(0x7E57_7E57_7E57_7E57)] {
            for threads in [1, 3] {
                let run = Run {
                    elem_size,
                    pad,
                    threads,
                    pin: None,
                };
                if let Err(e) = check_guarded(src, dst, run) {
                    panic!("{e}");
                }
            }
        }
    }
}

fn parse(text: &str) -> Layout {
    Layout::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// The fence works: reading the byte past the end (or before the start) kills a child process
/// with SIGSEGV. The child is this test binary running the ignored test below.
#[test]
fn the_guard_page_faults() {
    use std::os::unix::process::ExitStatusExt;
    for (name, edge) in [("end", Edge::End), ("start", Edge::Start)] {
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "touch_the_guard_page",
                "--ignored",
                "--nocapture",
            ])
            .env("GUARD_EDGE", name)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        assert_eq!(
            status.signal(),
            Some(libc::SIGSEGV),
            "{edge:?}: reading outside the buffer should fault, got {status:?}"
        );
    }
    // And the same reads in the other placement hit accessible padding, not a fault.
    let at_end = Guarded::new(3, Edge::End, 1u8);
    assert_eq!(at_end.read_outside(Edge::Start), 0);
    let at_start = Guarded::new(3, Edge::Start, 1u8);
    assert_eq!(at_start.read_outside(Edge::End), 0);
}

/// Run by `the_guard_page_faults` in a child process: faults on purpose.
#[test]
#[ignore = "faults on purpose; run by the_guard_page_faults in a child process"]
fn touch_the_guard_page() {
    let edge = match std::env::var("GUARD_EDGE").as_deref() {
        Ok("start") => Edge::Start,
        _ => Edge::End,
    };
    let buffer = Guarded::new(10, edge, 7u32);
    println!("{}", buffer.read_outside(edge));
}

#[test]
fn buffers_sit_exactly_at_the_edges() {
    for len in [1usize, 3, 1024, 1025, 4096] {
        for edge in EDGES {
            let mut g = Guarded::new(len, edge, 9u64);
            assert_eq!(g.as_slice().len(), len);
            assert!(g.as_slice().iter().all(|&v| v == 9));
            g.as_mut_slice()[len - 1] = 1;
            let end = g.as_slice().as_ptr_range().end as usize;
            let start = g.as_slice().as_ptr() as usize;
            match edge {
                Edge::End => assert_eq!(end % 4096, 0, "len {len}"),
                Edge::Start => assert_eq!(start % 4096, 0, "len {len}"),
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Random pairs from the shared generator, every element size, random padding and threads,
    /// half of them with a candidate tactics that stream and stages whatever it can however
    /// small the destination.
    #[test]
    fn random_pairs_stay_inside_their_buffers(
        bytes in proptest::collection::vec(any::<u8>(), 0..400),
        pad in any::<bool>(),
        threads in 1usize..5,
        candidate in proptest::option::of(0..Tactics::CANDIDATES.len()),
    ) {
        let pair = pair_from(&mut bytes.into_iter());
        let pin = candidate.map(Pin::eager);
        for elem_size in [1, 2, 4, 8] {
            let pad = pad.then_some(0x1234_5678_9ABC_DEF0);
            let run = Run { elem_size, pad, threads, pin };
            if let Err(e) = check_guarded(&pair.src.layout, &pair.dst.layout, run) {
                return Err(TestCaseError::fail(format!("{pair}\n{e}")));
            }
        }
    }
}

#[test]
fn transposes_with_tails() {
    for (m, n) in [
        (16, 16),
        (17, 33),
        (33, 17),
        (5, 100),
        (100, 5),
        (1, 7),
        (7, 1),
        (31, 2),
    ] {
        let rm = Layout::row_major(&[m, n]).unwrap();
        let cm = Layout::col_major(&[m, n]).unwrap();
        check_all(&rm, &cm);
        check_all(&cm, &rm);
    }
    let nchw = Layout::row_major(&[2, 5, 7, 9]).unwrap();
    let nhwc = Layout::ordered(&[2, 5, 7, 9], &[0, 2, 3, 1]).unwrap();
    check_all(&nchw, &nhwc);
    check_all(&nhwc, &nchw);
}

#[test]
fn copies_of_every_length_up_to_three_vectors() {
    for n in 1..=49 {
        let l = Layout::row_major(&[n]).unwrap();
        check_all(&l, &l);
    }
}

#[test]
fn streamed_runs_and_staged_transposes() {
    // Over 8 MiB of destination: 64-byte runs handed to the streaming routine by the row, zips
    // staged and streamed out, and a transpose into rows 4 KiB apart, staged and copied out; on
    // one and two threads; on a host that streams from 8 MiB, whatever this one's cache.
    let pin = Some(Pin::defaults_on(common::streams_from_8_mib()));
    let pairs = [
        (
            parse("xla:f32[1024,2304]{1,0}"),
            parse("xla:f32[1024,2304]{1,0:T(8,128)(2,1)}"),
        ),
        (
            parse("tvm:[11,56,56,64] lambda n,h,w,c: [n, h, w, c]"),
            parse("tvm:[11,56,56,64] lambda n,h,w,c: [n, c//16, h, w, c%16]"),
        ),
        (
            Layout::row_major(&[1024, 2100]).unwrap(),
            Layout::col_major(&[1024, 2100]).unwrap(),
        ),
    ];
    for (src, dst) in &pairs {
        for threads in [1, 2] {
            let run = Run {
                elem_size: 4,
                pad: None,
                threads,
                pin,
            };
            check_guarded(src, dst, run).unwrap();
        }
    }
    // Two strips zipped into one run of the whole tensor: cut into staged runs, the last with a
    // tail; at the element sizes whose destinations stream.
    let strips = Layout::row_major(&[2, (1 << 21) + 3]).unwrap();
    let zipped = Layout::col_major(&[2, (1 << 21) + 3]).unwrap();
    for elem_size in [2, 4, 8] {
        let run = Run {
            elem_size,
            pad: None,
            threads: 2,
            pin,
        };
        check_guarded(&strips, &zipped, run).unwrap();
    }
}

#[test]
fn long_copies_split_between_threads() {
    let l = Layout::row_major(&[3, 20_011]).unwrap();
    for threads in [1, 2, 3, 4] {
        for elem_size in [1, 8] {
            let run = Run {
                elem_size,
                pad: None,
                threads,
                pin: None,
            };
            check_guarded(&l, &l, run).unwrap();
        }
    }
}

#[test]
fn threads_split_transposes_by_the_elements_they_move() {
    use relayout::plan::Plan;
    // Transposes whose strips of whole blocks and leftover strips are regions of different
    // sizes per outer iteration: each thread's part moves about a thread's share of the
    // elements (within one outer iteration), and the parts run in guarded buffers.
    for (rows, cols, elem_size) in [
        (8000, 8000, 1),
        (1000, 300, 1),
        (300, 1000, 4),
        (77, 513, 8),
    ] {
        let src = Layout::row_major(&[rows, cols]).unwrap();
        let dst = Layout::col_major(&[rows, cols]).unwrap();
        let plan = Plan::new(&src, &dst, elem_size).unwrap();
        // Elements moved by each outer iteration, in work order.
        let per_step: Vec<usize> = plan
            .regions()
            .iter()
            .flat_map(|r| {
                let n = r.outer_extent();
                std::iter::repeat_n(r.elements() / n, n)
            })
            .collect();
        let total: usize = per_step.iter().sum();
        let largest = per_step.iter().copied().max().unwrap_or(0);
        for parts in [2, 3, 4] {
            let bounds = plan.balanced_split(parts);
            assert_eq!(bounds.len(), parts + 1);
            assert_eq!((bounds[0], bounds[parts]), (0, plan.work()), "{bounds:?}");
            for t in 0..parts {
                assert!(bounds[t] <= bounds[t + 1], "{bounds:?}");
                let moved: usize = per_step[bounds[t]..bounds[t + 1]].iter().sum();
                assert!(
                    moved.abs_diff(total / parts) <= largest,
                    "part {t} of {parts} moves {moved} of {total} ({bounds:?})\n{plan}"
                );
            }
            if rows * cols <= 1 << 20 {
                let run = Run {
                    elem_size,
                    pad: None,
                    threads: parts,
                    pin: None,
                };
                check_guarded(&src, &dst, run).unwrap();
            }
        }
    }
}

#[test]
fn padded_destinations() {
    for (src, dst) in [
        ("cute:(3,5):(5,1)", "xla:f32[3,5]{1,0:T(2,2)}"),
        ("cute:(5,3):(1,5)", "xla:f32[5,3]{1,0:T(2,2)}"),
        ("cute:(5,3):(1,5)", "xla:f32[5,3]{0,1:T(4,2)(2,1)L(8)}"),
        ("morello:[24] [0]", "morello:[24] [0, 0 oe(8)]"),
        ("morello:[3,12] [0, 1]", "morello:[3,12] [1, 0, 1 oe(4)]"),
        ("morello:[6,9] [0, 1]", "morello:[6,9] [1, 0, 1 p(3)]"),
        // A strip of 8, evens first, padding 5 elements to 8; rows of 5 padded to 8.
        ("cute:5:1", "tvm:[5] lambda i: [i // 8, i % 2, i % 8 // 2]"),
        (
            "cute:(6,5):(5,1)",
            "tvm:[6, 5] lambda i, j: [i, j // 8, j % 8]",
        ),
        ("cute:14:1", "tvm:[14] lambda i: [i // 4, i % 4]"),
        (
            "cute:15:1",
            "tvm:[15] lambda i: [(i + 1) // 4, (i + 1) % 4]",
        ),
        (
            "cute:(3,31):(1,3)",
            "tvm:[3, 31] lambda i, j: [j // 8, i, j % 8]",
        ),
    ] {
        check_all(&parse(src), &parse(dst));
        check_all(&parse(dst), &parse(src));
    }
}

#[test]
fn indexed_div_mod_paths() {
    // One dim of 6 split by 2 on one side and by 3 on the other.
    let split = |by: usize| {
        Layout::new(
            &[6, 5],
            vec![
                Digit::new(Source::Dim(0), 1, Some(by), 5 * (6 / by) as i64),
                Digit::new(Source::Dim(0), by, None, 5),
                Digit::new(Source::Dim(1), 1, None, 1),
            ],
        )
        .unwrap()
    };
    check_all(&split(2), &split(3));
    check_all(&split(3), &split(2));
    // Fused sources: TVM sums and an XLA combine that does not divide.
    for (src, dst) in [
        (
            "cute:(3,7):(1,3)",
            "tvm:[3, 7] lambda i, j: [(i * 7 + j) // 4, (i * 7 + j) % 4]",
        ),
        (
            "cute:(5,6):(6,1)",
            "tvm:[5, 6] lambda i, j: [(i * 6 + j) % 4, (i * 6 + j) // 4]",
        ),
        ("cute:(2,3,10):(30,10,1)", "xla:f32[2,3,10]{2,1,0:T(*,3)}"),
    ] {
        check_all(&parse(src), &parse(dst));
        check_all(&parse(dst), &parse(src));
    }
}

#[test]
fn sources_with_gaps_negative_strides_and_broadcast() {
    let dst = Layout::col_major(&[4, 5]).unwrap();
    for strides in [[12, 2], [-5, 1], [1, -4], [-7, -1], [0, 1], [1, 0], [0, 0]] {
        let src = Layout::from_strides(&[4, 5], &strides).unwrap();
        check_all(&src, &dst);
    }
    let gappy = Layout::from_strides(&[4, 5], &[1, 9]).unwrap();
    let reversed = Layout::from_strides(&[4, 5], &[-1, -4]).unwrap();
    check_all(&Layout::row_major(&[4, 5]).unwrap(), &gappy);
    check_all(&Layout::row_major(&[4, 5]).unwrap(), &reversed);
    let based = Layout::from_parts(
        &[3, 4],
        vec![
            Digit::new(Source::Dim(0), 1, None, -4),
            Digit::new(Source::Dim(1), 1, None, 1),
        ],
        3,
        None,
    )
    .unwrap();
    check_all(&based, &reversed_rows());
    check_all(&reversed_rows(), &based);
}

fn reversed_rows() -> Layout {
    Layout::from_strides(&[3, 4], &[1, -3]).unwrap()
}

#[test]
fn one_element() {
    let one = Layout::row_major(&[1]).unwrap();
    check_all(&one, &one);
    let ones = Layout::row_major(&[1, 1, 1]).unwrap();
    check_all(&ones, &Layout::col_major(&[1, 1, 1]).unwrap());
}

/// Whether each join that `pick` finds in a region's kernel of `plan` joins its head and its
/// tail.
fn joined_ends(
    plan: &relayout::plan::Plan,
    pick: impl Fn(relayout::plan::Kernel) -> Option<relayout::plan::Join>,
) -> Vec<(bool, bool)> {
    use relayout::plan::{RunHead, RunTail};
    let ends = |join: relayout::plan::Join| {
        let tail = matches!(join.tail, RunTail::Joined { .. });
        (join.head == RunHead::Joined, tail)
    };
    plan.regions()
        .iter()
        .filter_map(|r| pick(r.kernel))
        .map(ends)
        .collect()
}

#[test]
fn joined_runs_of_rows_inside_lines() {
    use relayout::plan::{Kernel, Plan, TransposeWrite};
    // Transposes into destination rows that are not whole lines apart (R elements apart, R
    // not a multiple of a line), with `b` cut into strips and a rest of every kind: shorter
    // than the line a strip would lend it, longer, and one strip past the last lending one.
    // On the default tactics, on 128-byte runs and on 512-byte runs in 32 KiB blocks (the
    // default for rows not whole lines apart whose source rows are longer than 256 bytes), at
    // every element size, on one and two threads, in guard pages.
    use relayout::plan::{Blocking, Tactics};
    let candidate = |blocking| {
        Tactics::CANDIDATES
            .iter()
            .position(|&t| t == Tactics::fixed(blocking))
            .unwrap()
    };
    let pinned = [
        0,
        candidate(Blocking::STREAMED_128),
        candidate(Blocking::STREAMED_512_WIDE),
    ];
    let mut seen = std::collections::HashSet::new();
    for elem_size in [1, 2, 4, 8] {
        for k in pinned {
            let pin = Pin::eager(k);
            for rows in [129, 145, 207, 353, 601, 1041, 1093] {
                let src = Layout::row_major(&[rows, 40]).unwrap();
                let dst = Layout::col_major(&[rows, 40]).unwrap();
                let plan =
                    Plan::with_tactics(&src, &dst, elem_size, pin.tactics, pin.target).unwrap();
                common::check_plan_moves_of(&plan, &src, &dst);
                let ends = joined_ends(&plan, |kernel| match kernel {
                    Kernel::Transpose {
                        write: TransposeWrite::Joined(join),
                        ..
                    } => Some(join),
                    _ => None,
                });
                seen.extend(ends.iter().map(|&(head, tail)| (k, elem_size, head, tail)));
                let joins = ends.iter().any(|&(head, tail)| head || tail);
                // `relayout plan` says so.
                assert_eq!(plan.to_string().contains(", joined: each"), joins, "{plan}");
                for threads in [1, 2] {
                    let run = Run {
                        elem_size,
                        pad: None,
                        threads,
                        pin: Some(pin),
                    };
                    check_guarded(&src, &dst, run).unwrap_or_else(|e| panic!("{e}\n{plan}"));
                }
            }
        }
    }
    // Runs of 128 and 512 bytes of every element size join in every way.
    for k in &pinned[1..] {
        for elem_size in [1, 2, 4, 8] {
            for ends in [(false, true), (true, true), (true, false)] {
                assert!(
                    seen.contains(&(*k, elem_size, ends.0, ends.1)),
                    "candidate {k}, {elem_size}-byte elements, runs joined as {ends:?}: {seen:?}"
                );
            }
        }
    }
}

#[test]
fn joined_unzips_into_strips_inside_lines() {
    use relayout::plan::{Kernel, Plan, UnzipWrite};
    // Unzips of 2 to 7 interleaved strips (8-byte elements of more than 3 are transposed,
    // joined as `joined_runs_of_rows_inside_lines` checks) into planes that are not whole lines
    // apart (P elements apart, P odd), long enough to be cut into chunks, with a rest past the
    // chunks shorter than the line a chunk would lend it and longer; at every element size,
    // streamed from the first byte (the default tactics), on one and two threads, in guard
    // pages.
    let pin = Pin::eager(0);
    let mut seen = std::collections::HashSet::new();
    for elem_size in [1, 2, 4, 8] {
        for channels in [2, 3, 5, 7] {
            for planes in [1601, 2731, 4099, 5501] {
                let src = Layout::from_strides(&[planes, channels], &[channels as i64, 1]).unwrap();
                let dst = Layout::col_major(&[planes, channels]).unwrap();
                let plan =
                    Plan::with_tactics(&src, &dst, elem_size, pin.tactics, pin.target).unwrap();
                common::check_plan_moves_of(&plan, &src, &dst);
                let ends = joined_ends(&plan, |kernel| match kernel {
                    Kernel::Unzip {
                        write: UnzipWrite::JoinedStrips(join),
                        ..
                    } => Some(join),
                    _ => None,
                });
                seen.extend(ends.iter().map(|&(head, tail)| (elem_size, head, tail)));
                let joins = ends.iter().any(|&(head, tail)| head || tail);
                // `relayout plan` says so (8-byte elements of more than 3 strips are joined
                // transposes).
                let says = plan.to_string().contains(", joined: each");
                match elem_size == 8 && channels > 3 {
                    true => assert!(says, "{plan}"),
                    false => assert_eq!(says, joins, "{plan}"),
                }
                for threads in [1, 2] {
                    let run = Run {
                        elem_size,
                        pad: None,
                        threads,
                        pin: Some(pin),
                    };
                    check_guarded(&src, &dst, run).unwrap_or_else(|e| panic!("{e}\n{plan}"));
                }
            }
        }
    }
    // Every element size joins in every way.
    for elem_size in [1, 2, 4, 8] {
        for ends in [(false, true), (true, true), (true, false)] {
            assert!(
                seen.contains(&(elem_size, ends.0, ends.1)),
                "{elem_size}-byte elements, runs joined as {ends:?}: {seen:?}"
            );
        }
    }
}
