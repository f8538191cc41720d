//! Tests of the TVM notation: parsing, printing, range inference and lowering.

use super::*;
use crate::layout::{Coords, Digit, Source};
use proptest::prelude::*;

fn map(text: &str) -> TvmMap {
    TvmMap::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn final_shape(text: &str) -> Vec<usize> {
    map(text)
        .final_shape()
        .unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn layout(text: &str) -> Layout {
    map(text)
        .to_layout()
        .unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn error(text: &str) -> Error {
    match TvmMap::parse(text).and_then(|m| m.to_layout()) {
        Ok(l) => panic!("{text} should fail, gave {l}"),
        Err(e) => e,
    }
}

/// Python's `a // b`.
fn python_floordiv(a: i128, b: i128) -> i128 {
    let q = a / b;
    if a % b != 0 && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

/// The map's own formula, evaluated on one coordinate (Python semantics).
fn eval(expr: &TvmExpr, coord: &[usize]) -> i128 {
    match expr {
        TvmExpr::Int(v) => *v as i128,
        TvmExpr::Index(d) => coord[*d] as i128,
        TvmExpr::Neg(a) => -eval(a, coord),
        TvmExpr::Binary(op, a, b) => {
            let (x, y) = (eval(a, coord), eval(b, coord));
            match op {
                TvmOp::Add => x + y,
                TvmOp::Sub => x - y,
                TvmOp::Mul => x * y,
                TvmOp::FloorDiv => python_floordiv(x, y),
                TvmOp::FloorMod => x - y * python_floordiv(x, y),
            }
        }
    }
}

/// Row-major linearisation of the map's outputs over `final_shape`.
fn direct_offset(map: &TvmMap, final_shape: &[usize], coord: &[usize]) -> i128 {
    map.outputs()
        .iter()
        .zip(final_shape)
        .fold(0, |acc, (e, &n)| acc * n as i128 + eval(e, coord))
}

fn assert_matches_formula(map: &TvmMap, layout: &Layout) {
    let shape = map.final_shape().unwrap();
    for c in Coords::new(map.shape()) {
        let expected = direct_offset(map, &shape, &c);
        assert_eq!(
            layout.offset(&c).unwrap() as i128,
            expected,
            "{map} at {c:?}"
        );
    }
}

#[test]
fn golden_cases_reproduce() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/public_golden.json"
    ))
    .expect("tests/data/public_golden.json");
    let cases: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut checked = 0;
    for case in cases.as_array().unwrap() {
        if case["system"] != "tvm" {
            continue;
        }
        let shape: Vec<String> = case["logical_shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.to_string())
            .collect();
        let text = format!(
            "[{}] {}",
            shape.join(", "),
            case["layout"].as_str().unwrap()
        );
        let numbers = |key: &str| -> Vec<usize> {
            case[key]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n.as_u64().unwrap() as usize)
                .collect()
        };
        if !numbers("axis_separators").is_empty() {
            assert!(matches!(error(&text), Error::Unsupported(_)), "{text}");
            continue;
        }
        let m = map(&text);
        let l = layout(&text);
        assert_eq!(m.final_shape().unwrap(), numbers("final_shape"), "{text}");
        let padded = case["padded_size_elements"].as_u64().unwrap() as usize;
        assert_eq!(l.padded_len(), Some(padded), "{text}");
        assert_eq!(l.cosize(), padded, "{text}");
        let padding = case["num_padding_elements"].as_u64().unwrap() as usize;
        assert_eq!(padded - l.size(), padding, "{text}");
        assert_eq!(numbers("physical_shape"), [padded], "{text}");
        match case["offsets"].as_array() {
            Some(offsets) => {
                let expected: Vec<i64> = offsets.iter().map(|o| o.as_i64().unwrap()).collect();
                assert_eq!(l.offsets(), expected, "{text}");
            }
            None => {
                for check in case["spot_checks"].as_array().unwrap() {
                    let index: Vec<usize> = check["index"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|n| n.as_u64().unwrap() as usize)
                        .collect();
                    let offset = check["offset"].as_i64().unwrap();
                    assert_eq!(l.offset(&index).unwrap(), offset, "{text} at {index:?}");
                }
            }
        }
        assert_matches_formula(&m, &l);
        checked += 1;
    }
    assert!(checked > 0, "no tvm golden cases found");
}

#[test]
fn final_shapes_quoted_in_layouts_md() {
    let cases: [(&str, &[usize]); 17] = [
        ("[4] lambda i: [i // 4, i % 4]", &[1, 4]),
        ("[16] lambda i: [i // 4, i % 4]", &[4, 4]),
        ("[14] lambda i: [i // 4, i % 4]", &[4, 4]),
        ("[3] lambda i: [i // 4, i % 4]", &[1, 4]),
        ("[15] lambda i: [(i + 1) // 4, (i + 1) % 4]", &[4, 4]),
        ("[14] lambda i: [(i + 1) // 4, (i + 1) % 4]", &[4, 4]),
        (
            "[14, 31] lambda i, j: [(i + 1) // 4, (j + 5) // 8, (i + 1) % 4, (j + 5) % 8]",
            &[4, 5, 4, 8],
        ),
        ("[116] lambda i: [i // 32, (i // 4) % 8, i % 4]", &[4, 8, 4]),
        ("[116] lambda i: [(i // 4) % 8, i // 32, i % 4]", &[8, 4, 4]),
        (
            "[123] lambda i: [(i + 5) // 32, ((i + 5) // 4) % 8, (i + 5) % 4]",
            &[4, 8, 4],
        ),
        (
            "[123] lambda i: [((i + 5) // 4) % 8, (i + 5) // 32, (i + 5) % 4]",
            &[8, 4, 4],
        ),
        (
            "[128, 128] lambda m, n: (m // 16, n // 16, m % 16, n % 16)",
            &[8, 8, 16, 16],
        ),
        ("[32, 64] lambda n, c: (n, c // 4, c % 4)", &[32, 16, 4]),
        ("[32, 128] lambda n, c: (n, c // 4, c % 4)", &[32, 32, 4]),
        (
            "[3, 3, 64, 64] lambda i0, i1, i2, i3: \
             (i3 // 32, i0, i2 // 8, (i3 % 32) // 16, i1, i2 % 8, i3 % 16)",
            &[2, 3, 8, 2, 3, 8, 16],
        ),
        (
            "[1, 32, 1, 5] lambda x, y, z, w: [x*32*5 + y*5 + z*5 + w]",
            &[160],
        ),
        (
            "[16, 64, 64, 128] lambda n, h, w, c: [n, c // 4, h, w, c % 4]",
            &[16, 32, 64, 64, 4],
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(final_shape(text), expected, "{text}");
        assert_matches_formula(&map(text), &layout(text));
    }
}

#[test]
fn split_by_n_gives_ceil_division() {
    for n in 1..=20usize {
        let text = format!("[16] lambda i: [i // {n}, i % {n}]");
        assert_eq!(final_shape(&text), [16usize.div_ceil(n), n], "{text}");
    }
}

#[test]
fn padding_is_part_of_the_buffer() {
    let l = layout("[14] lambda i: [i // 4, i % 4]");
    assert_eq!(l.offsets(), (0..14).collect::<Vec<i64>>());
    assert_eq!((l.padded_len(), l.cosize()), (Some(16), 16));
    let left = layout("[14] lambda i: [(i + 1) // 4, (i + 1) % 4]");
    assert_eq!(left.offsets(), (1..15).collect::<Vec<i64>>());
    assert_eq!(left.cosize(), 16);
    let kernel = "[3, 3, 64, 64] lambda i0, i1, i2, i3: \
                  (i3 // 32, i0, i2 // 8, (i3 % 32) // 16, i1, i2 % 8, i3 % 16)";
    assert_eq!(layout(kernel).cosize(), 3 * 3 * 64 * 64);
}

#[test]
fn interval_bounds_when_iterator_analysis_fails() {
    // Two splits of `i` that overlap: TVM falls back to interval bounds.
    assert_eq!(final_shape("[6] lambda i: [i, i % 4]"), [6, 4]);
    assert_eq!(
        layout("[6] lambda i: [i, i % 4]").offsets(),
        [0, 5, 10, 15, 16, 21]
    );
    // A gap between the scales: interval bounds, not 64 * 3.
    assert_eq!(final_shape("[3, 10] lambda i, j: [i * 64 + j]"), [138]);
}

#[test]
fn divided_fused_sum_simplifies_back_to_the_sum() {
    let text = "[3, 7] lambda i, j: [4 * ((7 * i + j) // 4) + (7 * i + j) % 4]";
    assert_eq!(final_shape(text), [24]);
    let l = layout(text);
    assert!(l.same_function(&Layout::from_strides(&[3, 7], &[7, 1]).unwrap()));
    assert!(l.is_separable());
    assert_eq!(l.digits().len(), 2);
    assert_eq!(l.cosize(), 24);

    let split = "[3, 7] lambda i, j: [(i * 7 + j) // 4, (i * 7 + j) % 4]";
    assert_eq!(final_shape(split), [6, 4]);
    let l = layout(split);
    assert_eq!(l.offsets(), (0..21).collect::<Vec<i64>>());
    assert!(l.is_separable());
    assert_eq!((l.padded_len(), l.size()), (Some(24), 21));

    let single = layout("[16] lambda i: [4 * (i // 4) + i % 4]");
    assert_eq!(single.digits(), [Digit::new(Source::Dim(0), 1, None, 1)]);
}

#[test]
fn reordered_fused_split_keeps_a_fused_source() {
    let text = "[3, 7] lambda i, j: [(i * 7 + j) % 4, (i * 7 + j) // 4]";
    assert_eq!(final_shape(text), [4, 6]);
    let l = layout(text);
    let fused = Source::fused([(0, 7), (1, 1)]);
    assert!(l.digits().iter().any(|d| d.source == fused));
    assert!(!l.is_separable());
    assert_matches_formula(&map(text), &l);
}

#[test]
fn accepted_text_forms() {
    let canonical = "[14] lambda i: [i // 4, i % 4]";
    for text in [
        "[14] lambda i: [i // 4, i % 4]",
        "[14] lambda i: (i // 4, i % 4)",
        "[14] lambda i: (i // 4, i % 4,)",
        "[14]lambda i:[i//4,i%4]",
        "  [ 14 , ] lambda  i , : [ i // 4 , i % 4 , ]  ",
        "[14] T.index_map(lambda i: (i // 4, i % 4))",
        "[14] tvm.tir.IndexMap.from_func(lambda i: [i // 4, i % 4])",
        "(14) lambda i: [T.floordiv(i, 4), floormod(i, 4)]",
    ] {
        assert_eq!(map(text).to_string(), canonical, "{text}");
    }
    assert_eq!(map("[8] lambda i: i").to_string(), "[8] lambda i: [i]");
    assert_eq!(map("[8] lambda i: (i + 1) // 2").outputs().len(), 1);
    assert_eq!(map("[] lambda: []").to_string(), "[] lambda: []");
}

#[test]
fn parameters_bind_as_in_tvm() {
    let m = map("[2, 3, 8] lambda *rest, k: [*rest, k // 4, k % 4]");
    assert_eq!(m.params(), ["rest_0", "rest_1", "k"]);
    assert_eq!(
        m.to_string(),
        "[2, 3, 8] lambda rest_0, rest_1, k: [rest_0, rest_1, k // 4, k % 4]"
    );
    assert_eq!(m.final_shape().unwrap(), [2, 3, 2, 4]);

    let bare = map("[2, 3, 4] lambda *, a, b, c: [c, b, a]");
    let plain = map("[2, 3, 4] lambda a, b, c: [c, b, a]");
    assert_eq!(bare, plain);

    let picked = map("[2, 3, 4] lambda i, *args: [args[-1], args[0], i]");
    assert_eq!(
        picked.to_string(),
        "[2, 3, 4] lambda i, args_0, args_1: [args_1, args_0, i]"
    );

    let clash = map("[2, 3, 4] lambda args_0, *args: [args_0, *args]");
    assert_eq!(clash.params(), ["args_0", "args_0_", "args_1"]);
    assert_eq!(
        layout(&clash.to_string()).offsets(),
        Layout::row_major(&[2, 3, 4]).unwrap().offsets()
    );

    let empty_star = map("[4] lambda i, *rest: [*rest, i]");
    assert_eq!(empty_star.params(), ["i"]);
}

#[test]
fn display_is_canonical_and_parses_back() {
    let text = "[8] lambda i: [i - (i - 1), -(i + 1) // 2 + 4, -3 * i + 24, i // (2 * 2), --i + 7]";
    let m = map(text);
    assert_eq!(m.to_string(), text);
    assert_eq!(map(&m.to_string()), m);
    assert_eq!(
        map("[8] lambda i: [(((i)))*(2)]").to_string(),
        "[8] lambda i: [i * 2]"
    );
    assert_eq!(map("[8] lambda i: [- 3 + i]").outputs()[0], {
        TvmExpr::Binary(
            TvmOp::Add,
            Box::new(TvmExpr::Int(-3)),
            Box::new(TvmExpr::Index(0)),
        )
    });
}

#[test]
fn notation_prefix_reaches_the_parser() {
    let l = Layout::parse("tvm:[4, 6] lambda i, j: [j, i]").unwrap();
    assert_eq!(l, layout("[4, 6] lambda i, j: [j, i]"));
    assert!(l.same_function(&Layout::col_major(&[4, 6]).unwrap()));
    assert_eq!(
        crate::notation::parse("tvm:[4] lambda i: i").unwrap().dtype,
        None
    );
}

fn parse_error_column(text: &str) -> (usize, String) {
    match crate::notation::parse(text) {
        Err(Error::Parse {
            notation: "tvm",
            column,
            message,
        }) => (column, message),
        other => panic!("{text}: expected a tvm parse error, got {other:?}"),
    }
}

#[test]
fn parse_errors_name_the_column() {
    // (text, the text starting at the expected column, part of the message)
    let cases: [(&str, &str, &str); 12] = [
        ("tvm:[4] lambda i: [i / 2]", "/ 2", "ambiguous"),
        ("tvm:[4] lambda i: [i ** 2]", "** 2", "power"),
        ("tvm:[4] lambda i: [k]", "k]", "unknown name 'k'"),
        ("tvm:[4, 4] lambda i: [i]", "lambda", "has 2 dimensions"),
        ("tvm:[4] lambda *a, b, c: [b, c]", "lambda", "at least 2"),
        ("tvm:[4, 4] lambda i, i: [i]", "i: [", "duplicate"),
        ("tvm:[4] lambda *: [0]", "lambda", "bare '*'"),
        ("tvm:[4] lambda *a: [a]", "a]", "*a"),
        ("tvm:[4] lambda i: [(i, i) // 2]", "// 2", "tuple"),
        ("tvm:[4] lambda i: [i] junk", "junk", "end of the input"),
        ("tvm:lambda i: [i]", "lambda", "logical shape"),
        ("tvm:[4] lambda i: ['x']", "'x'", "string"),
    ];
    for (text, anchor, message) in cases {
        let (column, got) = parse_error_column(text);
        assert!(got.contains(message), "{text}: {got}");
        assert_eq!(column, text.find(anchor).unwrap() + 1, "{text}: {got}");
    }
    for text in [
        "tvm:[4] lambda i: [99999999999999999999]",
        "tvm:[4] lambda i: [i +]",
        "tvm:[4] lambda i: [i, i",
        "tvm:[4] lambda i: ['axis_separator",
        "tvm:[4] foo(lambda i: [i])",
        "tvm:[4] T.index_map(lambda i: [i]",
        "tvm:[4] lambda i: [args[0]]",
        "tvm:[4, 2] lambda i, *a: [a[2], i]",
        "tvm:[4] lambda i: [floordiv(i)]",
        "tvm:[-4] lambda i: [i]",
    ] {
        parse_error_column(text);
    }
}

#[test]
fn deep_input_is_an_error_not_a_stack_overflow() {
    let nested = format!("[4] lambda i: [{}i{}]", "(".repeat(500), ")".repeat(500));
    assert!(matches!(TvmMap::parse(&nested), Err(Error::Parse { .. })));
    let negated = format!("[4] lambda i: [{}i]", "-".repeat(5000));
    assert!(matches!(TvmMap::parse(&negated), Err(Error::Parse { .. })));
    let chain = format!("[4] lambda i: [i{}]", " + i".repeat(5000));
    assert!(matches!(TvmMap::parse(&chain), Err(Error::Parse { .. })));
    let fine = format!("[4] lambda i: [i{} - 100 * i]", " + i".repeat(100));
    assert_eq!(layout(&fine).offsets(), [0, 1, 2, 3]);
}

#[test]
fn axis_separators_are_unsupported() {
    for sep in [
        "IndexMap.AXIS_SEPARATOR",
        "tvm.tir.IndexMap.AXIS_SEPARATOR",
        "te.AXIS_SEPARATOR",
        "T.axis_separator",
        "\"axis_separator\"",
        "'axis_separator'",
    ] {
        let text = format!("[16, 8] lambda i, j: [i // 4, j, {sep}, i % 4]");
        match error(&text) {
            Error::Unsupported(m) => assert!(m.contains("flat"), "{m}"),
            other => panic!("{text}: {other:?}"),
        }
    }
}

#[test]
fn unsupported_maps() {
    for (text, message) in [
        (
            "[4, 4] lambda i, j: [i * j]",
            "multiplies two index expressions",
        ),
        (
            "[4, 4] lambda i, j: [i // j, j]",
            "divides by an index expression",
        ),
        (
            "[4, 4] lambda i, j: [i % (j + 1), j]",
            "divides by an index expression",
        ),
        ("[8] lambda i: [i // -2, i % 2]", "negative"),
        ("[12] lambda i: [(i % 6) // 4, i]", "mixed-radix"),
        (
            "[4, 4] lambda i, j: [(i // 2 + j) // 2, i, j]",
            "mixed-radix",
        ),
        ("[8] lambda i: [(3 * (i // 2)) // 2, i]", "mixed-radix"),
        ("[8] lambda i: [(i % 3 + 1) // 2, i]", "mixed-radix"),
    ] {
        match error(text) {
            Error::Unsupported(m) => assert!(m.contains(message), "{text}: {m}"),
            other => panic!("{text}: {other:?}"),
        }
    }
}

#[test]
fn invalid_maps() {
    for (text, message) in [
        ("[4, 4] lambda i, j: [i + j]", "not injective"),
        ("[4] lambda i: [i // 2]", "not injective"),
        ("[4] lambda i: [i + 1]", "start at 0"),
        ("[8] lambda i: [7 - i]", "start at 0"),
        ("[4] lambda i: [i // 0]", "divides by zero"),
        ("[4] lambda i: [i % 0]", "divides by zero"),
    ] {
        match error(text) {
            Error::InvalidLayout(m) => assert!(m.contains(message), "{text}: {m}"),
            other => panic!("{text}: {other:?}"),
        }
    }
    let shape = vec![4];
    for (params, outputs) in [
        (
            vec!["i".to_string(), "j".to_string()],
            vec![TvmExpr::Index(0)],
        ),
        (vec!["1i".to_string()], vec![TvmExpr::Index(0)]),
        (vec!["i".to_string()], vec![TvmExpr::Index(1)]),
    ] {
        let err = TvmMap::new(shape.clone(), params, outputs).unwrap_err();
        assert!(matches!(err, Error::InvalidLayout(_)), "{err}");
    }
    let deep = (0..300).fold(TvmExpr::Index(0), |e, _| TvmExpr::Neg(Box::new(e)));
    let err = TvmMap::new(vec![4], vec!["i".into()], vec![deep]).unwrap_err();
    assert!(matches!(err, Error::Unsupported(_)), "{err}");
}

#[test]
fn overflow_is_reported() {
    for text in [
        "[4] lambda i: [i * 9223372036854775807 * 2]",
        "[4] lambda i: [i + 9223372036854775807 + 1 - 9223372036854775807]",
        "[4611686018427387904, 4] lambda i, j: [i, j]",
        "[4] lambda i: [(i + 9223372036854775807) // 2 * 4]",
    ] {
        assert!(
            matches!(error(text), Error::Overflow(_)),
            "{text}: {:?}",
            error(text)
        );
    }
}

fn index_pieces(extents: &[usize], splits: &[(i64, i64)], fuse: bool) -> Vec<TvmExpr> {
    let index = |d| Box::new(TvmExpr::Index(d));
    let int = |v| Box::new(TvmExpr::Int(v));
    let bin = |op, a, b| Box::new(TvmExpr::Binary(op, a, b));
    let mut sources: Vec<Box<TvmExpr>> = (0..extents.len()).map(index).collect();
    if fuse && extents.len() >= 2 {
        let first = bin(TvmOp::Mul, sources.remove(0), int(extents[1] as i64));
        sources[0] = bin(TvmOp::Add, first, index(1));
    }
    let mut pieces = Vec::new();
    for (source, &(factor, pad)) in sources.into_iter().zip(splits) {
        if factor == 1 {
            pieces.push(*source);
            continue;
        }
        let padded = if pad % factor == 0 {
            source
        } else {
            bin(TvmOp::Add, source, int(pad % factor))
        };
        pieces.push(TvmExpr::Binary(
            TvmOp::FloorDiv,
            padded.clone(),
            int(factor),
        ));
        pieces.push(TvmExpr::Binary(TvmOp::FloorMod, padded, int(factor)));
    }
    pieces
}

/// Injective maps built the way layouts are: split (and left-pad) every index, maybe fuse
/// the first two, and reorder the pieces.
fn structured_map() -> impl Strategy<Value = TvmMap> {
    (1..=3usize)
        .prop_flat_map(|rank| {
            (
                prop::collection::vec(1..=9usize, rank),
                prop::collection::vec((1..=5i64, 0..5i64), rank),
                any::<bool>(),
            )
        })
        .prop_flat_map(|(extents, splits, fuse)| {
            let pieces = index_pieces(&extents, &splits, fuse);
            (Just(extents), Just(pieces).prop_shuffle())
        })
        .prop_map(|(extents, pieces)| {
            let names = (0..extents.len()).map(|d| format!("x{d}")).collect();
            TvmMap::new(extents, names, pieces).unwrap()
        })
}

fn random_expr(rank: usize) -> impl Strategy<Value = TvmExpr> {
    let leaf = prop_oneof![
        (0..rank).prop_map(TvmExpr::Index),
        (0..10i64).prop_map(TvmExpr::Int),
    ];
    leaf.prop_recursive(4, 24, 2, |inner| {
        let op = prop_oneof![
            Just(TvmOp::Add),
            Just(TvmOp::Sub),
            Just(TvmOp::Mul),
            Just(TvmOp::FloorDiv),
            Just(TvmOp::FloorMod),
        ];
        prop_oneof![
            inner.clone().prop_map(|e| TvmExpr::Neg(Box::new(e))),
            (op, inner.clone(), inner).prop_map(|(op, a, b)| TvmExpr::Binary(
                op,
                Box::new(a),
                Box::new(b)
            )),
        ]
    })
}

/// Arbitrary maps over rank-2 shapes, most of which do not lower.
fn random_map() -> impl Strategy<Value = TvmMap> {
    (
        prop::collection::vec(1..=6usize, 2),
        prop::collection::vec(random_expr(2), 1..=3),
    )
        .prop_map(|(shape, outputs)| {
            TvmMap::new(shape, vec!["a".into(), "b".into()], outputs).unwrap()
        })
}

fn same_lowering(x: &TvmMap, y: &TvmMap) -> bool {
    match (x.to_layout(), y.to_layout()) {
        (Ok(a), Ok(b)) => a.same_function(&b) && a.cosize() == b.cosize(),
        (Err(a), Err(b)) => std::mem::discriminant(&a) == std::mem::discriminant(&b),
        _ => false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn printed_maps_parse_back_to_the_same_function(
        m in prop_oneof![structured_map(), random_map()]
    ) {
        let printed = m.to_string();
        let reparsed = TvmMap::parse(&printed).unwrap();
        prop_assert!(same_lowering(&m, &reparsed), "{printed}");
        prop_assert_eq!(reparsed.to_string(), map(&reparsed.to_string()).to_string());
    }

    #[test]
    fn structured_maps_lower_to_their_formula(m in structured_map()) {
        let l = m.to_layout().unwrap_or_else(|e| panic!("{m}: {e}"));
        assert_matches_formula(&m, &l);
        prop_assert_eq!(l.padded_len(), Some(m.final_shape().unwrap().iter().product()));
    }

    #[test]
    fn lowered_random_maps_agree_with_their_formula(m in random_map()) {
        if let Ok(l) = m.to_layout() {
            assert_matches_formula(&m, &l);
        }
    }

    #[test]
    fn garbage_never_panics(text in "\\PC{0,80}") {
        let _ = parse_layout(&text, 4);
    }

    #[test]
    fn near_miss_text_never_panics(body in "[\\[\\]()0-9ijk,:*/%+\\- .'\"_]{0,60}") {
        let _ = parse_layout(&format!("[3, 5] lambda i, j: {body}"), 4);
        let _ = parse_layout(&format!("[3, 5] {body}"), 4);
    }
}
