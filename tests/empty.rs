//! Empty tensors (issue 17): a shape with an extent of 0 is a layout of no elements in CuTe,
//! MoYe, XLA, TVM and NumPy-style strides; it has no offsets, needs no buffer, and a relayout
//! between two of them plans to nothing, compiles, and runs as a no-op.

mod common;

use common::{check_pair, check_pair_as, cli, run_cli};
use relayout::layout::for_each_coord;
use relayout::notation::cute::CuteLayout;
use relayout::notation::tvm::TvmMap;
use relayout::notation::xla::XlaShape;
use relayout::plan::Plan;
use relayout::{compile_relayout, compile_relayout_with, reference, Error, Layout, Options};

fn parse(text: &str) -> Layout {
    Layout::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// What every empty layout is: no elements, no offsets, no buffer, injective, and equal as a
/// function to every other empty layout of its shape.
fn assert_empty(l: &Layout, text: &str) {
    assert!(l.is_empty(), "{text}");
    assert_eq!((l.size(), l.cosize()), (0, 0), "{text}");
    assert!(l.offsets().is_empty(), "{text}");
    assert_eq!(l.injectivity(), Some(true), "{text}");
    assert!(l.is_injective(), "{text}");
    assert!(l.coalesce().same_function(l), "{text}");
    assert!(
        l.same_function(&Layout::row_major(l.shape()).unwrap()),
        "{text}"
    );
    assert!(
        l.index(&vec![0; l.rank()]).is_err(),
        "{text}: no coordinate"
    );
}

#[test]
fn the_issues_examples_are_empty_layouts() {
    let cute = parse("cute:(0,4):(4,1)");
    assert_eq!(cute.shape(), [0, 4]);
    assert_empty(&cute, "cute");
    let xla = parse("xla:f32[0,4]{1,0}");
    assert_eq!(xla.shape(), [0, 4]);
    assert_empty(&xla, "xla");
    let numpy = Layout::from_strides(&[0, 3], &[3, 1]).unwrap();
    assert_empty(&numpy, "numpy");
    for l in [Layout::row_major(&[0, 3]), Layout::col_major(&[3, 0, 2])] {
        assert_empty(&l.unwrap(), "compact");
    }
}

#[test]
fn every_notation_but_morello_has_empty_layouts() {
    let cases: [(&str, &[usize]); 14] = [
        ("cute:0:1", &[0]),
        ("cute:(0,4):(4,1)", &[0, 4]),
        ("cute:(4,0):(1,4)", &[4, 0]),
        ("cute:(0,4)", &[0, 4]),
        ("cute:((2,0),3):((1,2),0)", &[0, 3]),
        ("cute:(3,(2,0)):(-1,(5,7))", &[3, 0]),
        ("moye:(0, (2, 4)):(8, (1, 2))", &[0, 8]),
        ("xla:f32[0]", &[0]),
        ("xla:f32[3,0]{0,1}", &[3, 0]),
        ("xla:bf16[0,5]{1,0:T(2,2)}", &[0, 5]),
        ("xla:f32[3,0,5]{0,1,2:T(2,*,2)L(4)}", &[3, 0, 5]),
        ("tvm:[0, 4] lambda i, j: [j, i]", &[0, 4]),
        ("tvm:[3, 0] lambda i, j: [i // 2, j, i % 2]", &[3, 0]),
        (
            "tvm:[2, 0, 6] lambda n, c, w: [n, w // 4, c, w % 4]",
            &[2, 0, 6],
        ),
    ];
    for (text, shape) in cases {
        let l = parse(text);
        assert_eq!(l.shape(), shape, "{text}");
        assert_empty(&l, text);
        assert_eq!(run_cli(&["offsets", text]), "\n", "{text}");
    }
    // The notations' own types agree: a tiled dim of 0 elements has 0 tiles.
    let x = XlaShape::parse("f32[3,0]{1,0:T(2,2)}").unwrap();
    assert_eq!(x.physical_shape().unwrap().iter().product::<usize>(), 0);
    assert_eq!(x.to_layout().unwrap().padded_len(), Some(0));
    let map = TvmMap::parse("[0, 4] lambda i, j: [j, i]").unwrap();
    assert!(matches!(map.final_shape(), Err(Error::Unsupported(_))));
    assert_eq!(map.to_layout().unwrap().cosize(), 0);
}

#[test]
fn morello_and_the_cute_algebra_reject_zero_extents_clearly() {
    for text in ["morello:[0] [0]", "morello:[4,0] [0, 1]"] {
        match Layout::parse(text) {
            Err(Error::InvalidLayout(m)) => assert!(m.contains("no empty tensors"), "{m}"),
            other => panic!("{text}: {other:?}"),
        }
    }
    // The layout algebra divides by shape entries; its type keeps them at least 1.
    match CuteLayout::parse("(0,4):(4,1)") {
        Err(Error::Parse {
            column, message, ..
        }) => {
            assert_eq!(column, 2);
            assert!(message.contains("empty layout"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    let out = cli(&["cute", "coalesce", "cute:(0,4):(4,1)"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("at least 1"));
}

#[test]
fn a_malformed_empty_layout_is_still_an_error() {
    for text in [
        "cute:(0,()):(1,0)",
        "cute:(0,3):(1,(0,1))",
        "cute:(0,3):(1,0) x",
    ] {
        assert!(
            matches!(Layout::parse(text), Err(Error::Parse { .. })),
            "{text}"
        );
    }
    assert!(matches!(
        Layout::parse("xla:f32[0,4]{1,1}"),
        Err(Error::InvalidLayout(_))
    ));
    assert!(matches!(
        Layout::parse("tvm:[0, 4] lambda i: [i]"),
        Err(Error::Parse { .. })
    ));
    assert!(matches!(
        Layout::parse("tvm:[0, 4] lambda i, i: [i, i]"),
        Err(Error::Parse { .. })
    ));
}

#[test]
fn an_empty_and_a_non_empty_layout_do_not_match() {
    let empty = parse("cute:(0,4):(4,1)");
    for other in ["cute:(1,4):(4,1)", "cute:(4,0):(1,4)", "cute:0:1"] {
        let other = parse(other);
        let want = Error::ShapeMismatch {
            src: empty.shape().to_vec(),
            dst: other.shape().to_vec(),
        };
        match compile_relayout(&empty, &other) {
            Err(e) => assert_eq!(e.to_string(), want.to_string()),
            Ok(_) => panic!("{empty} -> {other} compiled"),
        }
        assert!(matches!(
            compile_relayout(&other, &empty),
            Err(Error::ShapeMismatch { .. })
        ));
        assert!(matches!(
            Plan::new(&empty, &other, 4),
            Err(Error::ShapeMismatch { .. })
        ));
        let mut out: Vec<u32> = vec![0; other.cosize()];
        assert!(matches!(
            reference::relayout(&empty, &[], &other, &mut out, None),
            Err(Error::ShapeMismatch { .. })
        ));
    }
    let out = cli(&[
        "apply",
        "--src",
        "cute:(0,4):(4,1)",
        "--dst",
        "xla:f32[1,4]{0,1}",
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("shape mismatch"));
}

#[test]
fn an_empty_relayout_plans_to_nothing_and_runs_as_a_no_op() {
    let src = parse("cute:(0,4):(4,1)");
    let dst = parse("xla:f32[0,4]{0,1:T(2,2)}");
    let plan = Plan::new(&src, &dst, 4).unwrap();
    assert!(plan.regions().is_empty());
    assert_eq!((plan.work(), plan.elements()), (0, 0));
    assert_eq!((plan.src_len(), plan.dst_len()), (0, 0));
    plan.verify().unwrap();
    plan.for_each_move(|s, d| panic!("the empty plan moved {s} -> {d}"));
    for options in [
        Options::new(),
        Options::new().threads(4).min_bytes_per_thread(1),
        Options::new().pad_value(7.0f32),
        Options::new().tune(true),
    ] {
        let r = compile_relayout_with(&src, &dst, options).unwrap();
        assert_eq!(r.threads(), 1);
        for _ in 0..4 {
            r.run::<f32, f32>(&[], &mut []).unwrap();
        }
        // Longer buffers than the layouts need are left untouched.
        let a = [1.0f32, 2.0];
        let mut b = [9.0f32; 3];
        r.run(&a, &mut b).unwrap();
        assert_eq!(b, [9.0; 3]);
        // SAFETY: both layouts need 0 bytes; dangling, aligned, non-null pointers cover that.
        unsafe {
            r.run_raw(
                std::ptr::NonNull::<f32>::dangling().as_ptr() as *const u8,
                std::ptr::NonNull::<f32>::dangling().as_ptr() as *mut u8,
            )
        };
        assert!(r.clif().unwrap().contains("return"));
    }
    // Every element size, through the reference, with and without padding values.
    check_pair(&src, &dst);
    check_pair_as::<u16>(&src, &dst, Some(3));
    check_pair_as::<u64>(&dst, &src, Some(u64::MAX));
}

#[test]
fn the_command_line_on_empty_tensors() {
    let (src, dst) = ("cute:(0,4):(4,1)", "xla:f32[0,4]{0,1:T(2,2)}");
    assert_eq!(run_cli(&["offsets", src]), "\n");
    assert_eq!(run_cli(&["offsets", "moye:(0, 4):(4, 1)"]), "\n");
    assert_eq!(run_cli(&["apply", "--src", src, "--dst", dst]), "\n");
    assert_eq!(
        run_cli(&["apply", "--src", src, "--dst", dst, "--pad-value", "7"]),
        "\n"
    );
    let check = run_cli(&["check", "--src", src, "--dst", dst]);
    assert!(check.starts_with("ok: 0 elements"), "{check}");
    let plan = run_cli(&["plan", "--src", src, "--dst", dst]);
    assert!(plan.contains("0 region(s), work 0"), "{plan}");
}

/// Shapes of rank 1 to 4 with extents from {0, 1, 3}, at least one of them 0.
fn empty_shapes() -> Vec<Vec<usize>> {
    let mut shapes = Vec::new();
    for rank in 1..=4u32 {
        for code in 0..3usize.pow(rank) {
            let shape: Vec<usize> = (0..rank)
                .map(|k| [0, 1, 3][code / 3usize.pow(k) % 3])
                .collect();
            if shape.contains(&0) {
                shapes.push(shape);
            }
        }
    }
    shapes
}

#[test]
fn every_shape_with_a_zero_at_every_rank_relayouts_as_a_no_op() {
    let shapes = empty_shapes();
    assert_eq!(shapes.len(), (3 - 2) + (9 - 4) + (27 - 8) + (81 - 16));
    for shape in shapes {
        let rank = shape.len();
        let dims = |s: &[usize]| s.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        // The same empty tensor in each notation: CuTe column-major, XLA row-major with a
        // tile, TVM reversed, and strides with a broadcast and a negative stride.
        let cute = format!("cute:({})", dims(&shape).join(","));
        let minor_to_major: Vec<String> = (0..rank).rev().map(|d| d.to_string()).collect();
        let xla = format!(
            "xla:f32[{}]{{{}:T(2)}}",
            dims(&shape).join(","),
            minor_to_major.join(",")
        );
        let params: Vec<String> = (0..rank).map(|d| format!("i{d}")).collect();
        let reversed: Vec<String> = params.iter().rev().cloned().collect();
        let tvm = format!(
            "tvm:[{}] lambda {}: [{}]",
            dims(&shape).join(", "),
            params.join(", "),
            reversed.join(", ")
        );
        let strides: Vec<i64> = (0..rank as i64)
            .map(|d| [0, -3, 5, 1][d as usize])
            .collect();
        let mut layouts = vec![parse(&cute), parse(&xla), parse(&tvm)];
        layouts.push(Layout::from_strides(&shape, &strides).unwrap());
        layouts.push(Layout::row_major(&shape).unwrap());
        for l in &layouts {
            assert_eq!(l.shape(), shape, "{l}");
            assert_empty(l, &l.to_string());
            let mut visited = 0;
            for_each_coord(l.shape(), |_| visited += 1);
            assert_eq!(visited, 0);
        }
        for src in &layouts {
            for dst in &layouts {
                let plan = Plan::new(src, dst, 8).unwrap();
                assert_eq!(plan.work(), 0, "{src} -> {dst}");
                plan.verify().unwrap();
                check_pair_as::<u32>(src, dst, Some(5));
            }
        }
        // A non-empty layout of a shape one element larger is still a mismatch.
        let full: Vec<usize> = shape.iter().map(|&n| n.max(1)).collect();
        let full = Layout::row_major(&full).unwrap();
        assert!(matches!(
            compile_relayout(&layouts[0], &full),
            Err(Error::ShapeMismatch { .. })
        ));
    }
}
