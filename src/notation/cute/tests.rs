//! Tests of the CuTe notation: parsing, printing, lowering and the worked examples.

use super::testing::{arb_layout, arb_shape, cute};
use super::*;
use proptest::prelude::*;
use serde_json::Value;

const GOLDEN: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/public_golden.json"
));

fn numbers(value: &Value) -> Vec<i64> {
    value
        .as_array()
        .expect("an array")
        .iter()
        .map(|v| v.as_i64().expect("an integer"))
        .collect()
}

fn column_of(err: Error) -> usize {
    match err {
        Error::Parse { column, .. } => column,
        other => panic!("expected a parse error, got {other}"),
    }
}

fn parse_column(text: &str) -> usize {
    column_of(CuteLayout::parse(text).unwrap_err())
}

#[test]
fn golden_cases() {
    let cases: Vec<Value> = serde_json::from_str(GOLDEN).expect("golden JSON");
    let mut checked = 0;
    for case in cases.iter().filter(|c| c.get("op").is_none()) {
        let system = case["system"].as_str().expect("system");
        if system != "cute" && system != "moye" {
            continue;
        }
        let id = case["id"].as_str().expect("id");
        let text = case["layout"].as_str().expect("layout");
        let l = cute(text);
        assert_eq!(
            l.size() as u64,
            case["size"].as_u64().expect("size"),
            "{id}"
        );
        assert_eq!(
            l.cosize() as u64,
            case["cosize"].as_u64().expect("cosize"),
            "{id}"
        );
        let colex: Vec<i64> = (0..l.size() as i64).map(|i| l.eval(i).unwrap()).collect();
        assert_eq!(colex, numbers(&case["offsets_1d_colex"]), "{id}");

        let lowered = Layout::parse(&format!("{system}:{text}")).expect(id);
        let shape: Vec<usize> = numbers(&case["logical_shape"])
            .iter()
            .map(|&n| n as usize)
            .collect();
        assert_eq!(lowered.shape(), shape, "{id}");
        assert_eq!(
            lowered.cosize() as u64,
            case["cosize"].as_u64().unwrap(),
            "{id}"
        );
        let offsets = lowered.offsets();
        assert_eq!(offsets, numbers(&case["offsets"]), "{id}");
        if let Some(one_based) = case.get("offsets_1based") {
            let shifted: Vec<i64> = offsets.iter().map(|o| o + 1).collect();
            assert_eq!(shifted, numbers(one_based), "{id}");
        }
        checked += 1;
    }
    assert_eq!(checked, 19, "every cute and moye layout case");
}

#[test]
fn reads_moye_text_static_markers_and_one_tuples() {
    assert_eq!(cute("(4, (2, 3)):(2, (1, 8))"), cute("(4,(2,3)):(2,(1,8))"));
    assert_eq!(
        cute(" ( _4 ,( 2,_3 ) ) : ( 2 , (_1 , 8) ) "),
        cute("(4,(2,3)):(2,(1,8))")
    );
    let negative = cute("(_4,2):(_-1,-4)");
    assert_eq!(negative.to_string(), "(4,2):(-1,-4)");
    assert_eq!(cute("(8,):(1,)"), cute("(8):(1)"));
    assert_eq!(cute("(8):(1)").rank(), 1);
    assert_eq!(cute("(8):(1)").to_string(), "(8):(1)");
    assert_eq!(cute("(8):(1)").moye(), "(8,):(1,)");
    assert_eq!(cute("((4,2)):((2,1))").moye(), "((4, 2),):((2, 1),)");
    assert_eq!(cute("_8:_1").to_string(), "8:1");
    assert_eq!(cute("8:1").moye(), "8:1");
}

#[test]
fn bare_shape_is_layout_left() {
    assert_eq!(cute("(2,4)").to_string(), "(2,4):(1,2)");
    assert_eq!(cute("(1,(2,4))").to_string(), "(1,(2,4)):(0,(1,2))");
    assert_eq!(cute("((2,1),3)").to_string(), "((2,1),3):((1,0),2)");
    assert_eq!(cute("8").to_string(), "8:1");
    assert_eq!(cute("1").to_string(), "1:0");
}

#[test]
fn negative_and_zero_strides_lower_and_size_the_buffer() {
    let l = cute("(3,2):(-1,4)");
    assert_eq!(l.cosize(), 7);
    let lowered = l.to_layout().unwrap();
    assert_eq!(lowered.offsets(), [0, 4, -1, 3, -2, 2]);
    assert_eq!(lowered.cosize(), 7);
    let broadcast = cute("(4,2):(1,0)").to_layout().unwrap();
    assert_eq!(broadcast.offsets(), [0, 0, 1, 1, 2, 2, 3, 3]);
    assert_eq!(cute("(4,2):(1,0)").cosize(), 4);
}

#[test]
fn lowering_leaves_out_unit_and_broadcast_sub_modes() {
    let l = cute("((2,1,3),(4,2)):((1,7,2),(0,5))").to_layout().unwrap();
    assert_eq!(l.shape(), [6, 8]);
    let digits: Vec<(Option<usize>, usize, Option<usize>, i64)> = l
        .digits()
        .iter()
        .map(|g| (g.dim(), g.div, g.ext, g.stride))
        .collect();
    assert_eq!(
        digits,
        [
            (Some(0), 1, Some(2), 1),
            (Some(0), 2, None, 2),
            (Some(1), 4, None, 5)
        ]
    );
}

#[test]
fn structure_methods() {
    let l = cute("((2,2),(3,(4,5))):((1,2),(4,(12,48)))");
    assert_eq!((l.rank(), l.depth(), l.size()), (2, 3, 240));
    assert_eq!(l.mode(1).unwrap().to_string(), "(3,(4,5)):(4,(12,48))");
    assert_eq!(l.mode(2), None);
    assert_eq!(cute("8:2").mode(0), Some(cute("8:2")));
    assert_eq!(l.flatten().to_string(), "(2,2,3,4,5):(1,2,4,12,48)");
    assert_eq!(cute("8:2").flatten(), cute("8:2"));
    assert_eq!((cute("8:2").rank(), cute("8:2").depth()), (1, 0));
    assert_eq!(l.shape().leaves(), [2, 2, 3, 4, 5]);
    assert_eq!(l.stride().to_string(), "((1,2),(4,(12,48)))");
}

#[test]
fn eval_continues_past_the_last_mode_and_truncates_negatives() {
    let l = cute("(2,3):(1,2)");
    assert_eq!(l.eval(6).unwrap(), 6);
    assert_eq!(l.eval(9).unwrap(), 1 + 2 * 4);
    // C++ truncation: -3 -> (-3 % 2, -3 / 2) = (-1, -1).
    assert_eq!(l.eval(-3).unwrap(), -1 - 2);
    assert_eq!(cute("8:3").eval(100).unwrap(), 300);
}

#[test]
fn from_layout_inverts_the_lowering() {
    for text in [
        "(2,(2,2)):(4,(2,1))",
        "8:1",
        "((4,2)):((2,1))",
        "(4,(2,2)):(1,(0,3))",
        "(4,2):(1,0)",
        "(3,2):(-1,4)",
        "(1,5):(0,1)",
    ] {
        let l = cute(text);
        assert_eq!(
            CuteLayout::from_layout(&l.to_layout().unwrap()).unwrap(),
            l,
            "{text}"
        );
    }
    // Size-1 sub-modes are dropped, the function is kept.
    let back = CuteLayout::from_layout(&cute("((2,1),3):((1,9),2)").to_layout().unwrap());
    assert_eq!(back.unwrap().to_string(), "(2,3):(1,2)");
}

#[test]
fn from_layout_reports_what_cute_cannot_express() {
    let unsupported = |l: &Layout| {
        assert!(
            matches!(CuteLayout::from_layout(l), Err(Error::Unsupported(_))),
            "{l}"
        )
    };
    // Padding: 5 elements in tiles of 2.
    let padded = Layout::new(
        &[5],
        vec![
            Digit::new(Source::Dim(0), 1, Some(2), 1),
            Digit::new(Source::Dim(0), 2, None, 2),
        ],
    )
    .unwrap();
    unsupported(&padded);
    let declared = Layout::from_parts(
        &[4],
        vec![Digit::new(Source::Dim(0), 1, None, 1)],
        0,
        Some(8),
    );
    unsupported(&declared.unwrap());
    let based = Layout::from_parts(&[4], vec![Digit::new(Source::Dim(0), 1, None, 1)], 3, None);
    unsupported(&based.unwrap());
    let fused = Layout::new(
        &[2, 3],
        vec![Digit::new(Source::fused([(0, 3), (1, 1)]), 1, None, 1)],
    );
    unsupported(&fused.unwrap());
    // x % 2 + x / 3: not a mixed-radix number.
    let gap = Layout::new(
        &[6],
        vec![
            Digit::new(Source::Dim(0), 1, Some(2), 1),
            Digit::new(Source::Dim(0), 3, None, 4),
        ],
    );
    unsupported(&gap.unwrap());
    unsupported(&Layout::new(&[], vec![]).unwrap());
}

#[test]
fn parse_errors_name_the_column() {
    assert_eq!(parse_column("(2,4:(1,2)"), 5);
    assert_eq!(parse_column("(2,(2,2)):(4,2,1)"), 14);
    assert_eq!(parse_column("(2,(2,2)):(4,(2,1),3)"), 20);
    assert_eq!(parse_column("(2,(2,2)):(4,(2))"), 16);
    assert_eq!(parse_column("(2,(2,2)):4"), 11);
    assert_eq!(parse_column("(2,0):(1,2)"), 4);
    assert_eq!(parse_column("(2,-3)"), 4);
    assert_eq!(parse_column("()"), 2);
    assert_eq!(parse_column("(2,_ 3)"), 5);
    assert_eq!(parse_column("(2,x)"), 4);
    assert_eq!(parse_column("(2,4):(1,2) 7"), 13);
    assert_eq!(parse_column("(2,4) 7"), 7);
    assert_eq!(parse_column(""), 1);
    assert_eq!(parse_column("99999999999999999999:1"), 1);
    // The column counts the whole input, prefix included.
    assert_eq!(
        column_of(Layout::parse("cute:(2,4):(1,x)").unwrap_err()),
        15
    );
    assert_eq!(column_of(Layout::parse("moye:(2, -1)").unwrap_err()), 10);
    // An empty layout is a Layout, but malformed empty text still names its column.
    assert!(Layout::parse("moye:(2, 0)").unwrap().is_empty());
    assert_eq!(
        column_of(Layout::parse("moye:(0, 2):(1, 2) x").unwrap_err()),
        20
    );
    let message = CuteLayout::parse("(2,(2,2)):(4,2,1)")
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("not congruent") && message.contains("a tuple of 2"),
        "{message}"
    );
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let deep = format!("{}1{}", "(".repeat(100_000), ")".repeat(100_000));
    assert!(matches!(CuteLayout::parse(&deep), Err(Error::Parse { .. })));
    let ok = format!(
        "{}1{}:{}1{}",
        "(".repeat(20),
        ")".repeat(20),
        "(".repeat(20),
        ")".repeat(20)
    );
    assert_eq!(cute(&ok).depth(), 20);
}

#[test]
fn invalid_layouts_from_parts() {
    let int = IntTuple::Int;
    let tuple = IntTuple::Tuple;
    let invalid =
        |r: Result<CuteLayout>| assert!(matches!(r, Err(Error::InvalidLayout(_))), "{r:?}");
    invalid(CuteLayout::new(tuple(vec![int(2), int(3)]), int(1)));
    invalid(CuteLayout::new(int(0), int(1)));
    invalid(CuteLayout::new(tuple(vec![]), tuple(vec![])));
    invalid(CuteLayout::new(
        tuple(vec![int(2), int(3)]),
        tuple(vec![int(1)]),
    ));
    invalid(CuteLayout::from_shape(tuple(vec![int(2), int(-1)])));
}

#[test]
fn overflow_is_reported() {
    let overflow = |r: Result<CuteLayout>| assert!(matches!(r, Err(Error::Overflow(_))), "{r:?}");
    overflow(CuteLayout::parse(
        "(1000000000000,1000000000000):(1,1000000000000)",
    ));
    overflow(CuteLayout::parse("(2,4611686018427387904):(1,2)"));
    overflow(CuteLayout::parse("(4,4611686018427387904)"));
    assert!(matches!(
        Layout::parse("cute:3:4611686018427387903"),
        Err(Error::Overflow(_))
    ));
    assert!(matches!(
        cute("2:1000").eval(i64::MAX),
        Err(Error::Overflow(_))
    ));
    let huge: IntTuple = "(4611686018427387904,4611686018427387904)".parse().unwrap();
    assert!(matches!(huge.product(), Err(Error::Overflow(_))));
}

#[test]
fn unsupported_cute_features() {
    for text in ["Sw<3,4,3> o _0 o (8,8):(8,1)", "(_4,_8):(_1@0,_1@1)"] {
        assert!(
            matches!(CuteLayout::parse(text), Err(Error::Unsupported(_))),
            "{text}"
        );
    }
}

/// CuTe's `crd2idx` for an integer coordinate, written straight from LAYOUTS.md §1.2.
fn crd2idx(c: i64, shape: &IntTuple, stride: &IntTuple) -> i64 {
    match (shape, stride) {
        (IntTuple::Int(_), IntTuple::Int(d)) => c * d,
        (IntTuple::Tuple(s), IntTuple::Tuple(d)) => {
            let mut c = c;
            let mut offset = 0;
            for m in 0..s.len() - 1 {
                let size = s[m].product().unwrap();
                offset += crd2idx(c % size, &s[m], &d[m]);
                c /= size;
            }
            offset + crd2idx(c, &s[s.len() - 1], &d[d.len() - 1])
        }
        _ => unreachable!("congruent"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn printing_then_parsing_round_trips(l in arb_layout()) {
        let lowered = l.to_layout().unwrap();
        for text in [l.to_string(), l.moye()] {
            let back = CuteLayout::parse(&text).unwrap();
            prop_assert_eq!(&back, &l);
            prop_assert!(back.to_layout().unwrap().same_function(&lowered));
        }
    }

    #[test]
    fn lowering_agrees_with_crd2idx(l in arb_layout()) {
        let lowered = l.to_layout().unwrap();
        let modes: Vec<(IntTuple, IntTuple)> = match (l.shape(), l.stride()) {
            (IntTuple::Tuple(s), IntTuple::Tuple(d)) => s.iter().cloned().zip(d.iter().cloned()).collect(),
            (s, d) => vec![(s.clone(), d.clone())],
        };
        for coord in crate::layout::Coords::new(lowered.shape()) {
            let expected: i64 = coord
                .iter()
                .zip(&modes)
                .map(|(&c, (s, d))| crd2idx(c as i64, s, d))
                .sum();
            prop_assert_eq!(lowered.offset(&coord).unwrap(), expected);
        }
        let size = l.size() as i64;
        for i in -size..2 * size {
            prop_assert_eq!(l.eval(i).unwrap(), crd2idx(i, l.shape(), l.stride()));
        }
    }

    #[test]
    fn from_layout_of_the_lowering_is_the_same_function(l in arb_layout()) {
        let lowered = l.to_layout().unwrap();
        let back = CuteLayout::from_layout(&lowered).unwrap();
        prop_assert!(back.to_layout().unwrap().same_function(&lowered));
        prop_assert_eq!(back.cosize(), l.cosize());
    }

    #[test]
    fn layout_left_is_the_identity_in_one_dimension(shape in arb_shape()) {
        let l = CuteLayout::from_shape(shape).unwrap();
        prop_assert_eq!(l.cosize(), l.size());
        for i in 0..l.size() as i64 {
            prop_assert_eq!(l.eval(i).unwrap(), i);
        }
    }

    #[test]
    fn garbage_never_panics(text in "[0-9_(),: @Sw<>-]{0,40}", any_text in any::<String>()) {
        for t in [&text, &any_text] {
            let _ = CuteLayout::parse(t);
            let _ = t.parse::<IntTuple>();
            let _ = Layout::parse(&format!("cute:{t}"));
        }
    }
}
