//! XLA's element types (issue 17): every type of XLA's `PrimitiveType` that holds numbers
//! parses, prints, has offsets (which do not depend on the type) and relayouts end to end: the
//! sub-byte types a byte each, or packed with `E(n)`, and `c128` as two 8-byte halves.

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

/// Types of whole bytes that fit the command line's plain check (every type but `c128`).
fn relayouts(dtype: DType) -> bool {
    dtype.packed().is_none() && dtype != DType::C128
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
fn sub_byte_types_and_c128_relayout_end_to_end() {
    for dtype in DType::ALL.into_iter().filter(|&t| !relayouts(t)) {
        // A byte each (XLA's default), packed with `E(n)` of the type's width, and with a
        // pad value.
        let bits = dtype.bits();
        let packed = |m2m: &str, tile: &str| match dtype.packed() {
            Some(_) => format!("xla:{}[3,5]{{{m2m}:{tile}E({bits})}}", dtype_name(dtype)),
            None => format!("xla:{}[3,5]{{{m2m}:{tile}}}", dtype_name(dtype)),
        };
        for (src, dst) in [
            (xla(dtype, [1, 0], None), xla(dtype, [0, 1], Some([2, 2]))),
            (packed("1,0", ""), packed("0,1", "T(2,2)")),
        ] {
            let checked = run_cli(&["check", "--src", &src, "--dst", &dst, "--pad-value", "1"]);
            assert_eq!(
                checked.trim_end(),
                "ok: 15 elements, 24 destination slots match the reference bit for bit",
                "{src} -> {dst}"
            );
        }
        let by_flag = [
            "check",
            "--src",
            "cute:(6,5):(5,1)",
            "--dst",
            "cute:(6,5):(1,6)",
            "--dtype",
            dtype.name(),
        ];
        assert!(run_cli(&by_flag).starts_with("ok: 30 elements"), "{dtype}");
    }
}

/// XLA's name of a type (`s4`, `u2`, `f4e2m1fn`, `c128`).
fn dtype_name(dtype: DType) -> String {
    let shape = XlaShape::new(dtype, vec![1], vec![0], vec![], None).unwrap();
    shape.to_string().split('[').next().unwrap().to_string()
}

#[test]
fn apply_prints_sub_byte_integers_and_c128_as_values() {
    let apply = |src: &str, dst: &str, pad: &str| {
        run_cli(&["apply", "--src", src, "--dst", dst, "--pad-value", pad])
    };
    // Element i holds i, wrapped to 4 bits: 8..11 are -8..-5 in s4.
    let s4 = apply("xla:s4[3,4]{1,0:E(4)}", "xla:s4[3,4]{0,1:T(1,4)E(4)}", "-1");
    assert_eq!(s4.trim_end(), "0 4 -8 -1 1 5 -7 -1 2 6 -6 -1 3 7 -5 -1");
    let c128 = apply("xla:c128[2,2]{1,0}", "xla:c128[2,2]{0,1}", "0");
    assert_eq!(c128.trim_end(), "0+0i 2+0i 1+0i 3+0i");
    let out = cli(&[
        "apply",
        "--src",
        "xla:s4[2,2]{1,0:E(4)}",
        "--dst",
        "xla:s4[2,2]{0,1}",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("packed on one side"));
    let _ = Error::Unsupported(String::new()); // the error the command line reports there
}
