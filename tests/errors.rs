//! The bad-input catalogue: every kind of wrong input gets its own `Error` variant (parse errors
//! with the column), a one-line message, and no panic — through the library and the command line.

mod common;

use relayout::{
    compile_relayout, compile_relayout_with, reference, Conversion, DType, Digit, Error, Layout,
    Options, PerIndex, Source,
};

/// Parses `text`, expecting a failure; checks that its message is one line.
fn fails(text: &str) -> Error {
    match Layout::parse(text) {
        Ok(l) => panic!("{text} parsed as {l}"),
        Err(e) => {
            assert!(!e.to_string().contains('\n'), "{text}: {e}");
            e
        }
    }
}

/// Expects a parse error of `notation` at `column` (1-based, in characters of the whole text).
fn parse_error(text: &str, notation: &str, column: usize) {
    match fails(text) {
        Error::Parse {
            notation: n,
            column: c,
            message,
        } => {
            assert_eq!((n, c), (notation, column), "{text}: {message}");
            assert!(!message.is_empty());
        }
        e => panic!("{text}: expected a parse error, got {e:?}"),
    }
}

fn invalid(text: &str) {
    let e = fails(text);
    assert!(matches!(e, Error::InvalidLayout(_)), "{text}: {e:?}");
}

fn unsupported(text: &str) {
    let e = fails(text);
    assert!(matches!(e, Error::Unsupported(_)), "{text}: {e:?}");
}

fn overflow(text: &str) {
    let e = fails(text);
    assert!(matches!(e, Error::Overflow(_)), "{text}: {e:?}");
}

fn one_line<T: std::fmt::Debug>(r: relayout::Result<T>) -> Error {
    let e = r.expect_err("an error");
    assert!(!e.to_string().contains('\n'), "{e}");
    e
}

#[test]
fn missing_or_unknown_prefix() {
    for text in ["", "cute", "foo:(2,3)", ":", "CUTE:4:1", "(2,3):(1,2)"] {
        parse_error(text, "layout", 1);
    }
}

#[test]
fn malformed_cute_and_moye() {
    parse_error("cute:", "cute", 6); // empty
    parse_error("cute:(2,4", "cute", 10); // unbalanced
    parse_error("cute:(2,4:(1,2)", "cute", 10);
    parse_error("cute:(2,4))", "cute", 11); // one ')' too many
    parse_error("cute:(2,x):(1,2)", "cute", 9); // stray character
    parse_error("cute:(2,é):(1,2)", "cute", 9); // columns count characters, not bytes
    parse_error("cute:(2,,3):(1,2)", "cute", 9);
    parse_error("cute:4:1 junk", "cute", 10);
    parse_error("cute:1e3:1", "cute", 7);
    parse_error("cute:()", "cute", 7); // empty tuple
    parse_error("cute:_:1", "cute", 7);
    parse_error("cute:(2,3):(1,2,3)", "cute", 17); // not congruent
    parse_error("cute:(2,3):(1,(2,3))", "cute", 15);
    parse_error("cute:(-1,3):(1,0)", "cute", 7); // negative extent
    parse_error("cute:(0,()):(1,0)", "cute", 10); // an empty layout with an empty tuple
    parse_error("cute:(0,3):(1,(0,1))", "cute", 15); // an empty layout, not congruent
    parse_error("cute:(-2,3):(1,2)", "cute", 7);
    parse_error("cute:99999999999999999999:1", "cute", 6); // number overflows 64 bits
    parse_error("cute:4:-99999999999999999999", "cute", 8);
    parse_error("moye:(4, (2, 3)):(2, (1, 8)", "cute", 28);
    parse_error("moye:(4, (2, 3)):(2, (1, 8)) )", "cute", 30);
    // Nesting deeper than 64 levels fails at the 65th '(' instead of overflowing the stack.
    let deep = format!("cute:{}2{}", "(".repeat(100_000), ")".repeat(100_000));
    parse_error(&deep, "cute", 5 + 66);
    unsupported("cute:(8,8):(_1@0,_1@1)");
    // Swizzled layouts: CuTe's static_asserts, masks beyond the offsets, one swizzle only.
    invalid("cute:Sw<3,4,2> o (8,8):(8,1)"); // |S| < B: the masks overlap
    invalid("cute:Sw<-1,4,3> o (8,8):(8,1)");
    invalid("cute:Sw<3,-4,3> o (8,8):(8,1)");
    overflow("cute:Sw<3,60,3> o (8,8):(8,1)");
    overflow("cute:Sw<3,4,3> o 4611686018427387903 o (8,8):(8,1)");
    unsupported("cute:Sw<3,4,3> o Sw<1,4,1> o (8,8):(8,1)");
    parse_error("cute:Sw<3,4> o (8,8):(8,1)", "cute", 12);
    parse_error("cute:Sw<3,4,3 o (8,8):(8,1)", "cute", 15);
    parse_error("cute:Sw<3,4,3> (8,8):(8,1)", "cute", 16); // no 'o'
    parse_error("cute:Sw<3,4,3> o _0 o", "cute", 22); // no layout
    parse_error("cute:Sw<3,4,3> o _0 o (8,8):(8,x)", "cute", 32);
    parse_error("cute:Sw<3,4,99999999999999999999> o 8:1", "cute", 13);
}

#[test]
fn malformed_xla() {
    parse_error("xla:", "xla", 5);
    parse_error("xla:f32[3,5", "xla", 12);
    parse_error("xla:q32[3]", "xla", 5);
    parse_error("xla:f32[3]{0} x", "xla", 15);
    parse_error("xla:f32[3,5]{1,0:T(2,2)", "xla", 24);
    parse_error("xla:f32[3,5]{1,0:T(2,2}", "xla", 23);
    parse_error("xla:f32[3,4]{1,0:T(0,2)}", "xla", 20);
    parse_error("xla:f32[3,4]{1}", "xla", 14);
    parse_error("xla:f32[99999999999999999999]", "xla", 9);
    invalid("xla:f32[3]{0:L(0)}");
    invalid("xla:f32[3,4]{1,1}");
    invalid("xla:f32[3,4]{2,0}");
    invalid("xla:f32[3,4]{1,0:T(2,*)}");
    unsupported("xla:f32[3]{0:E(4)}");
    unsupported("xla:f32[<=3]");
    unsupported("xla:f32[3,5]{1,0:Q(2)}");
    unsupported("xla:f64[16,5,16]{2,0,1:T(8)T(4,3)}"); // a sub-tile that splits a tile unevenly
}

#[test]
fn malformed_tvm() {
    parse_error("tvm:", "tvm", 5);
    parse_error("tvm:[4 lambda i: [i]", "tvm", 8);
    parse_error("tvm:[4] lamda i: [i]", "tvm", 9);
    parse_error("tvm:[4] lambda i, j: [i]", "tvm", 9); // two indices for one dim
    parse_error("tvm:[4] lambda i, i: [i]", "tvm", 19);
    parse_error("tvm:[4] lambda i: [i / 2]", "tvm", 22); // true division
    parse_error("tvm:[4] lambda i: [i + j]", "tvm", 24);
    parse_error("tvm:[4] lambda i: [i // 2", "tvm", 26);
    parse_error("tvm:[4] lambda i: [i] junk", "tvm", 23);
    parse_error("tvm:[4] lambda i: [i * 99999999999999999999]", "tvm", 24);
    let deep = format!(
        "tvm:[4] lambda i: [{}i{}]",
        "(".repeat(10_000),
        ")".repeat(10_000)
    );
    parse_error(&deep, "tvm", 84);
    let negated = format!("tvm:[4] lambda i: [{}i]", "-".repeat(10_000));
    parse_error(&negated, "tvm", 84);
    let long = format!("tvm:[4] lambda i: [{}i]", "i + ".repeat(10_000));
    match fails(&long) {
        Error::Parse { column, .. } => assert!((20..1000).contains(&column), "{column}"),
        e => panic!("{e:?}"),
    }
    invalid("tvm:[4] lambda i: [i // 0]");
    invalid("tvm:[4] lambda i: [i % 0]");
    invalid("tvm:[4] lambda i: [i - 1]"); // range does not start at 0
    invalid("tvm:[4, 4] lambda i, j: [i + j]"); // not injective
    invalid("tvm:[4, 4] lambda i, j: [i]");
    unsupported("tvm:[4] lambda i: [i * i]");
    unsupported("tvm:[4] lambda i: [i // -2]");
    unsupported("tvm:[4, 4] lambda i, j: [i, te.AXIS_SEPARATOR, j]");
    overflow("tvm:[4] lambda i: [i * 4611686018427387904]");
}

#[test]
fn malformed_morello() {
    parse_error("morello:[6] [0 q(2)]", "morello", 16);
    parse_error("morello:[6 [0]", "morello", 12);
    parse_error("morello:[6] [0", "morello", 15);
    invalid("morello:[6] [0 p(4)]"); // a Packed that neither divides what remains nor exceeds it
    invalid("morello:[6] [0 oe(8)]"); // an OddEven that exceeds what remains, which is not 1
    invalid("morello:[6] [0 p(4), 0 p(8)]"); // two physical dims of one dim that exceed what remains
    invalid("morello:[6] [0 oe(3)]"); // odd OddEven
    invalid("morello:[6] [0 oe(0)]");
    invalid("morello:[6] [0 p(0)]");
    invalid("morello:[6,4] [0]"); // dim 1 not covered
    invalid("morello:[6] []");
    invalid("morello:[6] [0, 0]"); // two Dynamics of one dim
    invalid("morello:[8] [0 p(4), 0, 0 p(2)]"); // a physical dim slower than its dim's Dynamic
    invalid("morello:[0] [0]"); // zero extent
    invalid("morello:[6] [1]"); // a dim outside the shape
    invalid("morello:[8,2] [1, 0 oe(4), 0 p(2)]"); // Morello's non-injective case
}

#[test]
fn absurdly_long_input_is_rejected() {
    let n = 50_000;
    for text in [
        format!("cute:({}1):({}1)", "1,".repeat(n), "0,".repeat(n)),
        format!("xla:f32[{}1]", "1,".repeat(n)),
        format!("tvm:[{}1] lambda *a: [*a]", "1,".repeat(n)),
        format!("tvm:[4] lambda i: [{}i]", "i % 1, ".repeat(n)),
        format!("morello:[{}1] [0]", "1,".repeat(n)),
        format!("morello:[64] [{}0]", "0 p(1), ".repeat(n)),
    ] {
        unsupported(&text);
    }
    // Long but reasonable input still parses.
    let tiles = format!("xla:f32[4,4]{{1,0:{}}}", "T(2,1)".repeat(n));
    assert_eq!(Layout::parse(&tiles).unwrap().size(), 16);
    let rank64 = format!("cute:({}2):({}1)", "1,".repeat(63), "0,".repeat(63));
    assert_eq!(Layout::parse(&rank64).unwrap().rank(), 64);
    let rank65 = format!("cute:({}2):({}1)", "1,".repeat(64), "0,".repeat(64));
    unsupported(&rank65);
}

#[test]
fn impossible_layouts_from_the_constructors() {
    let e = one_line(Layout::from_strides(&[3, 4], &[1]));
    assert!(matches!(e, Error::InvalidLayout(_)), "{e:?}");
    let e = one_line(Layout::ordered(&[3, 4], &[0, 0]));
    assert!(matches!(e, Error::InvalidLayout(_)), "{e:?}");
    let e = one_line(Layout::new(
        &[4],
        vec![Digit::new(Source::Dim(1), 1, None, 1)],
    ));
    assert!(matches!(e, Error::InvalidLayout(_)), "{e:?}");
    for (div, ext) in [(0, None), (1, Some(0))] {
        let e = one_line(Layout::new(
            &[4],
            vec![Digit::new(Source::Dim(0), div, ext, 1)],
        ));
        assert!(matches!(e, Error::InvalidLayout(_)), "{e:?}");
    }
    let e = one_line(Layout::from_strides(&[1; 65], &[0; 65]));
    assert!(matches!(e, Error::Unsupported(_)), "{e:?}");
    let many = vec![Digit::new(Source::Dim(0), 1, Some(1), 0); 1025];
    let e = one_line(Layout::new(&[1], many));
    assert!(matches!(e, Error::Unsupported(_)), "{e:?}");
}

#[test]
fn offsets_that_overflow() {
    for r in [
        Layout::from_strides(&[2], &[i64::MAX]),
        Layout::from_strides(&[3, 2], &[1, i64::MIN]),
        Layout::row_major(&[1 << 32, 1 << 32]),
        Layout::from_parts(
            &[2],
            vec![Digit::new(Source::Dim(0), 1, None, 1)],
            i64::MAX,
            None,
        ),
        Layout::from_parts(&[2], vec![], 0, Some(usize::MAX)),
    ] {
        let e = one_line(r);
        assert!(matches!(e, Error::Overflow(_)), "{e:?}");
    }
    overflow("cute:9223372036854775807:1");
    overflow("cute:(4294967296,4294967296):(1,4294967296)");
    overflow("cute:(2,2):(4611686018427387904,1)");
    overflow("xla:f32[4294967296,4294967296]");
    overflow("morello:[4294967296,4294967296] [0, 1]");
}

#[test]
fn coordinates_outside_the_shape() {
    let l = Layout::row_major(&[2, 3]).unwrap();
    for coord in [&[2, 0][..], &[0, 3], &[0], &[0, 0, 0]] {
        match one_line(l.offset(coord)) {
            Error::Coordinate { coord: c, shape } => {
                assert_eq!((c.as_slice(), shape.as_slice()), (coord, &[2, 3][..]));
            }
            e => panic!("{e:?}"),
        }
    }
}

#[test]
fn shapes_that_differ() {
    let a = Layout::row_major(&[2, 3]).unwrap();
    for b in [
        Layout::row_major(&[3, 2]).unwrap(),
        Layout::row_major(&[6]).unwrap(),
    ] {
        let e = one_line(compile_relayout(&a, &b));
        assert_eq!(
            e,
            Error::ShapeMismatch {
                src: vec![2, 3],
                dst: b.shape().to_vec()
            }
        );
        let mut out = vec![0u32; 6];
        let e = one_line(reference::relayout(&a, &[0u32; 6], &b, &mut out, None));
        assert!(matches!(e, Error::ShapeMismatch { .. }), "{e:?}");
    }
}

#[test]
fn aliasing_destinations() {
    let src = Layout::row_major(&[4, 5]).unwrap();
    let wrapping = Layout::new(&[4, 5], vec![Digit::new(Source::Dim(1), 1, Some(3), 1)]);
    for dst in [
        Layout::from_strides(&[4, 5], &[0, 1]).unwrap(), // broadcast
        Layout::parse("cute:(4,5):(1,1)").unwrap(),      // overlapping rows
        Layout::parse("cute:(4,5):(-1,1)").unwrap(),
        wrapping.unwrap(),
    ] {
        let e = one_line(compile_relayout(&src, &dst));
        assert!(matches!(e, Error::NotInjective(_)), "{dst}: {e:?}");
        let mut out = vec![0u8; dst.cosize()];
        let e = one_line(reference::relayout(&src, &[0u8; 20], &dst, &mut out, None));
        assert!(matches!(e, Error::NotInjective(_)), "{dst}: {e:?}");
    }
    // The same layouts are fine as sources.
    let dst = Layout::col_major(&[4, 5]).unwrap();
    assert!(compile_relayout(&Layout::parse("cute:(4,5):(1,1)").unwrap(), &dst).is_ok());
}

#[test]
fn element_sizes_and_types() {
    let src = Layout::row_major(&[3, 5]).unwrap();
    let dst = Layout::col_major(&[3, 5]).unwrap();
    for size in [0, 3, 5, 16] {
        let e = one_line(compile_relayout_with(
            &src,
            &dst,
            Options::new().elem_size(size),
        ));
        assert!(matches!(e, Error::ElementType(_)), "{size}: {e:?}");
    }
    let e = one_line("q7".parse::<DType>());
    assert!(matches!(e, Error::ElementType(_)), "{e:?}");
    // A kernel run with elements of another size than it was compiled for.
    let four = compile_relayout(&src, &dst).unwrap();
    let e = one_line(four.run(&[0u8; 15], &mut [0u8; 15]));
    assert!(matches!(e, Error::ElementType(_)), "{e:?}");
    let e = one_line(four.run(&[0f64; 15], &mut [0f64; 15]));
    assert!(matches!(e, Error::ElementType(_)), "{e:?}");
    let two = compile_relayout_with(&src, &dst, Options::new().pad_value(0u16)).unwrap();
    let e = one_line(two.run(&[0u32; 15], &mut [0u32; 15]));
    assert!(matches!(e, Error::ElementType(_)), "{e:?}");
    assert!(two.run(&[0i16; 15], &mut [0i16; 15]).is_ok());
}

#[test]
fn per_index_maps_that_do_not_fit() {
    let src = Layout::row_major(&[3, 5]).unwrap();
    let dst = Layout::col_major(&[3, 5]).unwrap();
    let q = Conversion::new(DType::F32, DType::I8).unwrap();
    let conversion = |e: Error, want: &str| {
        assert!(matches!(e, Error::Conversion(_)), "{e:?}");
        assert!(e.to_string().contains(want), "{e} (wanted {want:?})");
    };
    // Made wrong: values that are not finite, lists of different lengths.
    for (scales, shifts, want) in [
        (&[1.0, f64::NAN][..], &[][..], "scale NaN at index 1"),
        (
            &[1.0, 2.0],
            &[0.0, f64::NEG_INFINITY],
            "shift -inf at index 1",
        ),
        (&[f64::INFINITY], &[], "finite"),
        (&[1.0, 2.0], &[0.0], "2 scales and 1 shifts"),
    ] {
        conversion(one_line(PerIndex::new(0, scales, shifts)), want);
    }
    // Compiled wrong: a wrong length, a dim out of range, types without numeric values, a
    // per-tensor map beside it, no element types.
    let compile = |options: Options| one_line(compile_relayout_with(&src, &dst, options));
    let along = |dim: usize, n: usize| PerIndex::new(dim, &vec![2.0; n], &[]).unwrap();
    let with = |c: Conversion, map: PerIndex| Options::new().convert(c).per_index(map);
    for (options, want) in [
        (
            with(q, along(0, 5)),
            "5 per-index scales for dim 0 of extent 3",
        ),
        (
            with(q, along(1, 3)),
            "3 per-index scales for dim 1 of extent 5",
        ),
        (with(q, along(0, 0)), "0 per-index scales"),
        (with(q, along(2, 3)), "dim 2 of a rank-2 tensor"),
        (
            with(
                Conversion::new(DType::C64, DType::C64).unwrap(),
                along(0, 3),
            ),
            "no numeric conversion",
        ),
        (
            with(q.affine(2.0, 1.0).unwrap(), along(0, 3)),
            "give one or the other",
        ),
        (
            Options::new().elem_size(4).per_index(along(0, 3)),
            "without element types",
        ),
    ] {
        conversion(compile(options), want);
    }
    // The reference checks the same.
    let e = reference::relayout_per_index(
        &src,
        &[0f32; 15],
        &dst,
        &mut [0i8; 15],
        q,
        &along(1, 4),
        None,
    );
    conversion(one_line(e), "4 per-index scales for dim 1 of extent 5");
    // A map that fits compiles, the same type on both sides included.
    let f32s = Conversion::new(DType::F32, DType::F32).unwrap();
    assert!(compile_relayout_with(&src, &dst, with(f32s, along(1, 5))).is_ok());
}

#[test]
fn slices_too_short() {
    let src = Layout::row_major(&[3, 5]).unwrap();
    let dst = Layout::parse("xla:f32[3,5]{1,0:T(2,2)}").unwrap(); // 24 slots
    let r = compile_relayout(&src, &dst).unwrap();
    let e = one_line(r.run(&[0f32; 14], &mut [0f32; 24]));
    assert_eq!(
        e,
        Error::BufferTooShort {
            which: "source",
            needed: 15,
            got: 14
        }
    );
    let mut short = [7f32; 23];
    let e = one_line(r.run(&[0f32; 15], &mut short));
    assert_eq!(
        e,
        Error::BufferTooShort {
            which: "destination",
            needed: 24,
            got: 23
        }
    );
    assert!(
        short.iter().all(|&v| v == 7.0),
        "a failed run writes nothing"
    );
    let e = one_line(reference::relayout(
        &src,
        &[0u8; 15],
        &dst,
        &mut [0u8; 20],
        None,
    ));
    assert!(
        matches!(
            e,
            Error::BufferTooShort {
                which: "destination",
                ..
            }
        ),
        "{e:?}"
    );
    // Longer slices are fine.
    assert!(r.run(&[0f32; 16], &mut [0f32; 30]).is_ok());
}

/// The command line turns each error into one line on stderr and exit status 1, never a panic.
#[test]
fn command_line_errors_are_one_line() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["offsets", "cute:(2,4"],
            "relayout: cute parse error at column 10: expected ',' or ')', found the end of the input",
        ),
        (&["offsets", "foo:(2,3)"], "layout parse error at column 1"),
        (&["offsets", ""], "layout parse error at column 1"),
        (&["offsets", "morello:[6] [0 p(4)]"], "invalid layout"),
        (&["offsets", "cute:(8,8):(_1@0,_1@1)"], "unsupported"),
        (&["offsets", "cute:Sw<3,4,2> o (8,8):(8,1)"], "|S| >= B"),
        (&["offsets", "cute:(4294967296,4294967296):(1,4294967296)"], "overflow"),
        (
            &["offsets", "cute:(100000,100000):(1,100000)"],
            "at most 67108864",
        ),
        (
            &["apply", "--src", "cute:(2,3):(3,1)", "--dst", "cute:(3,2):(2,1)"],
            "shape mismatch",
        ),
        (
            &["apply", "--src", "cute:(4,5):(5,1)", "--dst", "cute:(4,5):(0,1)"],
            "not injective",
        ),
        (
            &["plan", "--src", "xla:f32[3]", "--dst", "xla:bf16[3]", "--to", "f16"],
            "conflicting element types",
        ),
        (
            &["apply", "--src", "cute:3:1", "--dst", "cute:3:1", "--to", "c64"],
            "no numeric conversion",
        ),
        (
            &["check", "--src", "cute:3:1", "--dst", "cute:3:1", "--dtype", "pred", "--scale", "2"],
            "no numeric conversion",
        ),
        (
            &["apply", "--src", "cute:3:1", "--dst", "cute:3:1", "--to", "i8", "--scale", "inf"],
            "finite",
        ),
        (
            &["apply", "--src", "cute:3:1", "--dst", "cute:3:1", "--to", "i8", "--scale", "1,2"],
            "a list takes --along",
        ),
        (
            &["check", "--src", "cute:(2,3):(3,1)", "--dst", "cute:(2,3):(1,2)", "--to", "i8",
              "--scale", "1,2", "--along", "1"],
            "2 per-index scales for dim 1 of extent 3",
        ),
        (
            &["plan", "--src", "cute:(2,3):(3,1)", "--dst", "cute:(2,3):(1,2)", "--to", "i8",
              "--scale", "1,2", "--along", "2"],
            "dim 2 of a rank-2 tensor",
        ),
        (
            &["apply", "--src", "cute:3:1", "--dst", "cute:3:1", "--to", "i8", "--scale", "1,2,3",
              "--shift", "1", "--along", "0"],
            "3 scales and 1 shifts",
        ),
        (
            &["apply", "--src", "cute:3:1", "--dst", "cute:3:1", "--to", "i8", "--along", "0"],
            "without --scale or --shift",
        ),
        (
            &["apply", "--src", "xla:f32[3]", "--dst", "xla:bf16[3]{0:T(4)}", "--pad-value", "1e40"],
            "inf",
        ),
        (
            &["apply", "--src", "xla:f32[3]", "--dst", "cute:3:1", "--dtype", "u8"],
            "conflicting element types",
        ),
        (
            &["check", "--src", "cute:3:1", "--dst", "cute:3:1", "--dtype", "q7"],
            "unknown element type",
        ),
        (
            &["apply", "--src", "cute:3:1", "--dst", "cute:3:1", "--dtype", "u8", "--pad-value", "300"],
            "does not fit in u8",
        ),
        (
            &["apply", "--src", "cute:3:1", "--dst", "cute:3:1", "--pad-value", "abc"],
            "element type mismatch",
        ),
        (
            &["apply", "--src", "cute:3:1", "--dst", "tvm:[3] lambda i: [i // 0]"],
            "divides by zero",
        ),
        (
            &["apply", "--src", "xla:s4[4]{0:E(4)}", "--dst", "xla:s4[4]{0}"],
            "unsupported: i4 elements packed on one side and a byte each on the other",
        ),
    ];
    for (args, want) in cases {
        let out = common::cli(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("relayout: "), "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
}

/// Usage mistakes are clap's: a usage message and status 2, still no panic.
#[test]
fn command_line_usage_errors() {
    for args in [
        &["apply", "--src", "cute:3:1"][..],
        &["offsets"],
        &["frobnicate"],
        &[
            "plan",
            "--src",
            "cute:3:1",
            "--dst",
            "cute:3:1",
            "--threads",
            "2",
        ],
    ] {
        let out = common::cli(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(stderr.contains("Usage"), "{args:?}: {stderr}");
    }
}

/// A reader that stops reading (`relayout offsets … | head -1`) ends the command quietly: no
/// panic, no message, success. The output (about 2 MB) is far larger than a pipe's buffer, so
/// the command writes into the closed pipe.
#[test]
fn a_closed_output_pipe_is_not_a_panic() {
    use std::process::{Command, Stdio};
    for args in [&["offsets", "cute:(400000):(1)"][..], &["bench", "--list"]] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_relayout"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {stderr}");
        assert!(stderr.is_empty(), "{args:?}: {stderr}");
    }
}

/// Inputs the fuzzer found that used to panic; each now parses (or fails) cleanly.
#[test]
fn fuzz_findings() {
    // `(i % 4) // 4` is a digit of radix 1: always 0. Its normalisation used to merge the term
    // with itself and remove it twice (an index-out-of-bounds panic).
    let l = Layout::parse("tvm:[14] lambda i: [i  // 4, i %4// 4, i %4 ]").unwrap();
    assert_eq!(l.offsets(), (0..14).collect::<Vec<i64>>());
    let l = Layout::parse("tvm:[6] lambda i: [i % 2 // 2 * 5, i]").unwrap();
    assert_eq!(l.offsets(), (0..6).collect::<Vec<i64>>());
    // Many dims of almost a million each, checked one output at a time: the offset range of each
    // output used to be found by visiting every coordinate of every dim, even the dims it does
    // not read (seconds of work before the overflow below was reported).
    overflow(&format!(
        "tvm:[{}3888888888882, 2] lambda *rest, k: [*rest]",
        "888882, ".repeat(12)
    ));
    // Shapes whose element count does not fit: the count used to wrap (6 · 2^64 is 0 modulo
    // 2^64), and a broadcast map over such a shape hung the injectivity check.
    overflow("tvm:[2, 3, 4294967296, 4294967296] lambda *t: [0]");
    overflow("cute:(4294967296,4294967296):(0,0)");
    overflow("morello:[4294967296, 4294967296] [0, 1]");
}

#[test]
fn degenerate_blockings_still_move_every_element() {
    use relayout::plan::{BlockWrite, Blocking, LargeWrites, Tactics, Walk};
    use relayout::{compile_relayout_with, reference, Options, Target};
    // A caller's tactics and machine description are only advice on how to cut and write the
    // loops: zeros and absurd sizes must neither panic nor change what moves where.
    let host = Target::host();
    let zeros = Blocking {
        run_bytes: 0,
        block_bytes: 0,
        macro_strips: 0,
        macro_blocks: 0,
        write: BlockWrite::Streamed,
        walk: Walk::Across,
        prefetch_ahead: 0,
        prefetch_group: 0,
    };
    let huge = Blocking {
        run_bytes: usize::MAX,
        block_bytes: usize::MAX,
        macro_strips: usize::MAX,
        macro_blocks: usize::MAX,
        write: BlockWrite::Staged,
        walk: Walk::Along,
        prefetch_ahead: usize::MAX,
        prefetch_group: usize::MAX,
    };
    let huge_macro = Blocking {
        macro_strips: usize::MAX,
        macro_blocks: usize::MAX,
        ..Blocking::DEFAULT
    };
    let eager = Target {
        stream_min_bytes: 0,
        ..host
    };
    let odd_machine = Target {
        line_bytes: 0,
        l1_sets: 0,
        stream_min_bytes: 0,
        stage_limit_bytes: 0,
        emitted_tiles_max_bytes: 0,
        ..host
    };
    let never = Target {
        stream_min_bytes: usize::MAX,
        stage_limit_bytes: usize::MAX,
        emitted_tiles_max_bytes: usize::MAX,
        ..host
    };
    let pins = [
        (Tactics::fixed(zeros), eager),
        (
            Tactics {
                large_writes: LargeWrites::Stored,
                ..Tactics::fixed(huge)
            },
            never,
        ),
        (Tactics::fixed(huge_macro), host),
        (Tactics::default(), odd_machine),
        (Tactics::fixed(zeros), odd_machine),
    ];
    let pairs = [
        (Layout::row_major(&[37, 70]), Layout::col_major(&[37, 70])),
        (
            Layout::row_major(&[300, 700]),
            Layout::col_major(&[300, 700]),
        ),
        (
            Layout::row_major(&[300, 2, 17]),
            Layout::ordered(&[300, 2, 17], &[0, 2, 1]),
        ),
    ];
    for (src, dst) in pairs {
        let (src, dst) = (src.unwrap(), dst.unwrap());
        let a: Vec<u32> = (0..src.cosize() as u32).collect();
        let mut want = vec![0u32; dst.cosize()];
        reference::relayout(&src, &a, &dst, &mut want, None).unwrap();
        for (tactics, target) in pins {
            let options = Options::new()
                .tactics(tactics)
                .target(target)
                .threads(2)
                .min_bytes_per_thread(1);
            let r = compile_relayout_with(&src, &dst, options).unwrap();
            let mut got = vec![0u32; dst.cosize()];
            r.run(&a, &mut got).unwrap();
            assert!(got == want, "{tactics:?} {target:?}\n{}", r.plan());
        }
    }
}

#[test]
fn targets_the_jit_cannot_serve_are_errors() {
    use relayout::{compile_relayout_with, Error, Options, Target};
    let (src, dst) = (
        Layout::row_major(&[16, 16]).unwrap(),
        Layout::col_major(&[16, 16]).unwrap(),
    );
    for (vector_bytes, elem_size) in [(0, 4), (2, 4), (24, 4), (32, 4), (64, 1)] {
        let target = Target {
            vector_bytes,
            ..Target::host()
        };
        let options = Options::new().elem_size(elem_size).target(target);
        let err = compile_relayout_with(&src, &dst, options).unwrap_err();
        assert!(
            matches!(err, Error::Unsupported(_)),
            "{vector_bytes}: {err}"
        );
        assert!(err.to_string().contains("-byte vectors"), "{err}");
    }
}
