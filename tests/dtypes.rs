//! XLA's element types (issue 17): every type of XLA's `PrimitiveType` that holds numbers
//! parses, prints and has offsets, which do not depend on the type; the types of 1, 2, 4 and 8
//! bytes relayout end to end; the sub-byte types and `c128` fail with a clear error until
//! kernels for them exist.

mod common;

use common::{cli, run_cli};
use relayout::notation::xla::XlaShape;
use relayout::{DType, Error};

/// `xla:` text of a 3×5 tensor of `dtype` in the given `minor_to_major` order, with one tile.
fn xla(dtype: DType, minor_to_major: [usize; 2], tile: Option<[usize; 2]>) -> String {
    let tiles = tile.map(|t| t.map(relayout::notation::xla::TileDim::Size).to_vec());
    let shape = XlaShape::new(
        dtype,
        vec![3, 5],
        minor_to_major.to_vec(),
        tiles.into_iter().collect(),
        None,
    );
    format!("xla:{}", shape.unwrap())
}

fn relayouts(dtype: DType) -> bool {
    dtype.elem_size().is_ok()
}

#[test]
fn the_issues_examples_have_offsets() {
    let row_major: Vec<String> = (0..16).map(|i| i.to_string()).collect();
    for text in ["xla:f8e4m3fn[4,4]{1,0}", "xla:c64[4,4]{1,0}"] {
        assert_eq!(
            run_cli(&["offsets", text]).trim_end(),
            row_major.join(" "),
            "{text}"
        );
    }
}

#[test]
fn every_type_has_the_same_offsets() {
    let want = run_cli(&["offsets", &xla(DType::F32, [0, 1], Some([2, 2]))]);
    for dtype in DType::ALL {
        let text = xla(dtype, [0, 1], Some([2, 2]));
        assert_eq!(run_cli(&["offsets", &text]), want, "{text}");
    }
}

#[test]
fn byte_sized_types_relayout_end_to_end() {
    for dtype in DType::ALL.into_iter().filter(|&t| relayouts(t)) {
        let (src, dst) = (xla(dtype, [1, 0], None), xla(dtype, [0, 1], Some([2, 2])));
        let checked = run_cli(&["check", "--src", &src, "--dst", &dst]);
        assert_eq!(
            checked.trim_end(),
            "ok: 15 elements, 24 destination slots match the reference bit for bit",
            "{src} -> {dst}"
        );
        let plan = run_cli(&["plan", "--src", &src, "--dst", &dst]);
        let bytes = format!("plan: {}-byte elements", dtype.size());
        assert!(plan.starts_with(&bytes), "{dtype}: {plan}");
        // The command line's name of the type, with layouts that name none.
        let args = [
            "check",
            "--src",
            "cute:(3,5):(5,1)",
            "--dst",
            "cute:(3,5):(1,3)",
        ];
        let checked = run_cli(&[&args[..], &["--dtype", dtype.name()]].concat());
        assert!(checked.starts_with("ok: 15 elements"), "{dtype}: {checked}");
    }
}

#[test]
fn apply_prints_eight_bit_floats_as_bits_and_complex_numbers_as_values() {
    // A 2x3 row-major source, whose element i holds i, into column-major with columns of 4.
    let apply = |dtype: &str, pad: &str| {
        let src = format!("xla:{dtype}[2,3]{{1,0}}");
        let dst = format!("xla:{dtype}[2,3]{{0,1:T(1,4)}}"); // columns padded to 4
        run_cli(&["apply", "--src", &src, "--dst", &dst, "--pad-value", pad])
    };
    let f8 = "0 3 9 9 1 4 9 9 2 5 9 9";
    assert_eq!(apply("f8e4m3fn", "9").trim_end(), f8);
    assert_eq!(apply("f8e5m2", "9").trim_end(), f8);
    let c64 = "0+0i 3+0i 1.5-2i 1.5-2i 1+0i 4+0i 1.5-2i 1.5-2i 2+0i 5+0i 1.5-2i 1.5-2i";
    assert_eq!(apply("c64", "1.5-2i").trim_end(), c64);
}

#[test]
fn sub_byte_types_and_c128_do_not_relayout_yet() {
    let unsupported: Vec<DType> = DType::ALL.into_iter().filter(|&t| !relayouts(t)).collect();
    assert_eq!(
        unsupported,
        [
            DType::F4E2M1FN,
            DType::I2,
            DType::I4,
            DType::U2,
            DType::U4,
            DType::C128
        ]
    );
    for dtype in unsupported {
        let message = match dtype.elem_size() {
            Err(Error::Unsupported(message)) => message,
            other => panic!("{dtype}: {other:?}"),
        };
        assert!(
            message.contains(&format!("relayouts of {dtype} elements")),
            "{message}"
        );
        let (src, dst) = (xla(dtype, [1, 0], None), xla(dtype, [0, 1], None));
        let by_layout = ["plan", "--src", &src, "--dst", &dst];
        let by_flag = [
            "apply",
            "--src",
            "cute:4:1",
            "--dst",
            "cute:4:1",
            "--dtype",
            dtype.name(),
        ];
        for args in [&by_layout[..], &by_flag[..]] {
            let out = cli(args);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
            assert_eq!(
                stderr.trim_end(),
                format!("relayout: unsupported: {message}")
            );
        }
    }
}
