//! Tests of the CuTe notation: parsing, printing, lowering and the worked examples.

use super::testing::{arb_layout, arb_shape, cute};
use super::*;
use crate::layout::Swizzle;
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
    let scaled_basis = "(_4,_8):(_1@0,_1@1)";
    assert!(matches!(
        CuteLayout::parse(scaled_basis),
        Err(Error::Unsupported(_))
    ));
    assert!(matches!(
        Layout::parse(&format!("cute:{scaled_basis}")),
        Err(Error::Unsupported(_))
    ));
    // The layout algebra composes affine layouts only: a swizzled layout is a clear error there
    // (as a layout and as a tiler), while Layout::parse and SwizzledLayout take it.
    let swizzled = "Sw<3,4,3> o _0 o (8,8):(8,1)";
    for err in [
        CuteLayout::parse(swizzled).unwrap_err(),
        CuteLayout::parse("Swizzle<3,4,3> o (8,8):(8,1)").unwrap_err(),
        swizzled.parse::<crate::algebra::Tiler>().unwrap_err(),
    ] {
        assert!(
            matches!(&err, Error::Unsupported(m) if m.contains("layout algebra")),
            "{err}"
        );
    }
    assert!(Layout::parse(&format!("cute:{swizzled}")).is_ok());
    assert!(SwizzledLayout::parse(swizzled).is_ok());
}

/// CuTe's swizzle written out again from its definition in NVIDIA/cutlass
/// `include/cute/swizzle.hpp` (`Swizzle<BBits, MBase, SShift>`): `bit_msk = (1 << B) - 1`,
/// `yyy_msk = bit_msk << (M + max(0,S))`, `zzz_msk = bit_msk << (M - min(0,S))`,
/// `apply(o) = o ^ shiftr(o & yyy_msk, S)`, where `shiftr` by a negative amount shifts left.
fn cute_swizzle(b: i64, m: i64, s: i64, o: i64) -> i64 {
    let bit_msk = (1i64 << b) - 1;
    let yyy_msk = bit_msk << (m + s.max(0));
    let zzz_msk = bit_msk << (m - s.min(0));
    let shifted = if s >= 0 {
        (o & yyy_msk) >> s
    } else {
        (o & yyy_msk) << -s
    };
    assert_eq!(shifted & !zzz_msk, 0, "YYY lands on ZZZ");
    o ^ shifted
}

/// The offsets of a 2-D layout in row-major order of its coordinates, by `f(row, col)`.
fn grid(rows: usize, cols: usize, f: impl Fn(i64, i64) -> i64) -> Vec<i64> {
    (0..rows as i64)
        .flat_map(|r| (0..cols as i64).map(move |c| (r, c)))
        .map(|(r, c)| f(r, c))
        .collect()
}

fn lowered(text: &str) -> Layout {
    Layout::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

#[test]
fn swizzled_worked_examples() {
    // The example, by CuTe's definition: row r of 64 starts at 64r; from row 2 on,
    // bits 7..9 of the offset flip bits 4..6 (16-element runs swap places).
    let l = lowered("cute:Sw<3,4,3> o _0 o (8,64):(64,1)");
    assert_eq!(l.shape(), [8, 64]);
    assert_eq!(
        l.offsets(),
        grid(8, 64, |r, c| cute_swizzle(3, 4, 3, 64 * r + c))
    );
    assert_eq!(l.offset(&[2, 0]).unwrap(), 144); // 128 ^ (128 >> 3)
    assert_eq!(l.offset(&[2, 16]).unwrap(), 128);
    assert_eq!(l.offset(&[7, 63]).unwrap(), 463); // 511 ^ ((511 & 0b1110000000) >> 3)
    assert_eq!((l.cosize(), l.min_offset(), l.max_offset()), (512, 0, 511));
    assert!(l.is_injective());

    // CuTe's print of the SM90 GMMA K-major 128-byte swizzle atom for 8-bit elements
    // (`GMMA::Layout_K_SW128_Atom<int8_t>`, cute/atom/mma_traits_sm90_gmma.hpp): 8 rows of 128
    // bytes, the 16-byte chunk index of each row XORed with the row.
    let atom = lowered("cute:Sw<3,4,3> o _0 o (_8,_128):(_128,_1)");
    let chunks = |r: i64, c: i64| 128 * r + 16 * ((c / 16) ^ r) + c % 16;
    assert_eq!(atom.offsets(), grid(8, 128, chunks));
    // The same atom tiled to 128x128 by tile_to_shape, as CuTe prints it: blocks of 8 rows.
    let tiled = lowered("cute:Sw<3,4,3> o _0 o ((_8,_16),(_128,_1)):((_128,_1024),(_1,_0))");
    let blocks = |m: i64, k: i64| 1024 * (m / 8) + chunks(m % 8, k);
    assert_eq!(tiled.offsets(), grid(128, 128, blocks));
    assert_eq!(tiled.cosize(), 128 * 128);
    // The MN-major atom for 16-bit elements: 64 contiguous elements per column k, the 8-element
    // chunk index XORed with k.
    let mn = lowered("cute:Sw<3,3,3> o _0 o (_64,_8):(_1,_64)");
    assert_eq!(
        mn.offsets(),
        grid(64, 8, |m, k| 64 * k + 8 * ((m / 8) ^ k) + m % 8)
    );

    // A negative shift moves the YYY bits left, and an offset comes before the swizzle:
    // offset 5 = 4 + 1 has YYY = bit 0, which flips bit 2: 5 ^ 4 = 1; 6 ^ (2 << 2) = 14.
    let left = lowered("cute:Sw<2,0,-2> o 4 o (4,4):(4,1)");
    assert_eq!(
        left.offsets(),
        grid(4, 4, |r, c| cute_swizzle(2, 0, -2, 4 + 4 * r + c))
    );
    assert_eq!(left.offsets()[..4], [4, 1, 14, 11]);
    assert_eq!(
        (left.min_offset(), left.max_offset(), left.cosize()),
        (1, 31, 32)
    );

    // Without the offset part, and with a bare shape (LayoutLeft) inside.
    assert!(lowered("cute:Sw<3,4,3> o (8,64):(64,1)").same_function(&l));
    let left_major = lowered("cute:Sw<1,1,2> o (4,8)");
    assert_eq!(
        left_major.offsets(),
        grid(4, 8, |r, c| cute_swizzle(1, 1, 2, r + 4 * c))
    );
    // Large compact layouts have their exact span too (from the first and last blocks).
    let large = lowered("cute:Sw<3,4,3> o 552 o (2048,1024):(1024,1)");
    let swizzled = || (552..552 + 2048 * 1024).map(|o| cute_swizzle(3, 4, 3, o));
    let (min, max) = (swizzled().min().unwrap(), swizzled().max().unwrap());
    assert_eq!((large.min_offset(), large.max_offset()), (min, max));
    assert_eq!(large.cosize() as i64, max + 1);
    // An identity swizzle (B = 0) is the layout itself.
    let identity = lowered("cute:Sw<0,4,3> o (8,64):(64,1)");
    assert_eq!(identity, Layout::row_major(&[8, 64]).unwrap());
}

#[test]
fn swizzled_text_prints_and_parses_back() {
    let sw = SwizzledLayout::parse("Sw<3,4,3> o _0 o (8,64):(64,1)").unwrap();
    assert_eq!(sw.to_string(), "Sw<3,4,3> o _0 o (8,64):(64,1)");
    assert_eq!(sw.moye(), "Sw<3,4,3> o _0 o (8, 64):(64, 1)");
    assert_eq!(sw.layout().to_string(), "(8,64):(64,1)");
    assert_eq!(
        (sw.swizzle().to_string(), sw.offset()),
        ("Sw<3,4,3>".into(), 0)
    );
    // CuTe's static markers, MoYe's spacing, `Swizzle<…>`, `∘`, no offset, any whitespace.
    for text in [
        "Sw<3,4,3> o (8,64):(64,1)",
        "Sw<3,4,3> o _0 o (_8,_64):(_64,_1)",
        "Sw<3,4,3> o 0 o (8, 64):(64, 1)",
        "Swizzle<3,4,3> ∘ _0 ∘ (8,64):(64,1)",
        "  Sw< 3 , 4 , 3 >  o  _0  o  ( 8 , 64 ) : ( 64 , 1 )  ",
        "Sw<3,4,3>o _0o(8,64):(64,1)",
        "cute:Sw<3,4,3> o _0 o (8,64):(64,1)",
        "moye:Sw<3,4,3> o _0 o (8, 64):(64, 1)",
    ] {
        assert_eq!(SwizzledLayout::parse(text).unwrap(), sw, "{text}");
        let prefixed = if text.contains(':') && text.trim_start().starts_with(['c', 'm']) {
            text.to_string()
        } else {
            format!("moye:{text}")
        };
        assert_eq!(lowered(&prefixed), sw.to_layout().unwrap(), "{text}");
    }
    let based = SwizzledLayout::parse("Sw<2,0,-2> o _4 o (4,4):(4,1)").unwrap();
    assert_eq!(based.to_string(), "Sw<2,0,-2> o 4 o (4,4):(4,1)");
    // A rank-1 integer layout and a one-tuple keep their forms.
    assert_eq!(
        SwizzledLayout::parse("Sw<1,0,1> o 8:1")
            .unwrap()
            .to_string(),
        "Sw<1,0,1> o _0 o 8:1"
    );
    assert_eq!(
        SwizzledLayout::parse("Sw<1,0,1> o 2 o (8,):(1,)")
            .unwrap()
            .moye(),
        "Sw<1,0,1> o 2 o (8,):(1,)"
    );
    // From the canonical layout back to CuTe's text.
    assert_eq!(
        SwizzledLayout::from_layout(&sw.to_layout().unwrap()).unwrap(),
        sw
    );
    assert_eq!(
        SwizzledLayout::from_layout(&based.to_layout().unwrap()).unwrap(),
        based
    );
    assert!(matches!(
        CuteLayout::from_layout(&sw.to_layout().unwrap()),
        Err(Error::Unsupported(_))
    ));
    assert!(matches!(
        SwizzledLayout::from_layout(&Layout::row_major(&[8, 64]).unwrap()),
        Err(Error::Unsupported(_))
    ));
    // The canonical layout shows the swizzle around its sum.
    assert_eq!(
        sw.to_layout().unwrap().to_string(),
        "[8, 64] -> Sw<3,4,3>(64*x0 + x1)"
    );
    assert_eq!(
        based.to_layout().unwrap().to_string(),
        "[4, 4] -> Sw<2,0,-2>(4*x0 + x1 + 4)"
    );
}

#[test]
fn swizzled_text_errors_are_clear() {
    let invalid = |text: &str| {
        let e = SwizzledLayout::parse(text).unwrap_err();
        assert!(matches!(e, Error::InvalidLayout(_)), "{text}: {e:?}");
        assert_eq!(Layout::parse(&format!("cute:{text}")).unwrap_err(), e);
    };
    invalid("Sw<-1,4,3> o (8,8):(8,1)"); // B < 0
    invalid("Sw<3,-1,3> o (8,8):(8,1)"); // M < 0
    invalid("Sw<3,4,2> o (8,8):(8,1)"); // |S| < B: overlapping masks
    invalid("Sw<3,4,-2> o (8,8):(8,1)");
    for text in [
        "Sw<3,58,3> o 8:1",
        "Sw<62,0,62> o 8:1",
        "Sw<1,1,-9223372036854775808> o 8:1",
    ] {
        assert!(
            matches!(SwizzledLayout::parse(text), Err(Error::Overflow(_))),
            "{text}"
        );
    }
    assert_eq!(
        column_of(SwizzledLayout::parse("Sw<3,4,3> o Sw").unwrap_err()),
        13
    );
    for (text, column) in [
        ("Sw<3,4> o 8:1", 7),
        ("Sw<3,4,3 o 8:1", 10),
        ("Sw<3,4,3> 8:1", 11),
        ("Sw<3,4,3> o", 12),
        ("Sw<3,4,3> o _0 o", 17),
        ("Sw<3,4,3> o _0 o 8:1 o", 22),
        ("Sw<3,x,3> o 8:1", 6),
        ("(8,8):(8,1) o Sw<3,4,3>", 1),
    ] {
        let e = SwizzledLayout::parse(text).unwrap_err();
        assert_eq!(column_of(e), column, "{text}");
    }
    assert!(matches!(
        SwizzledLayout::parse("(8,8):(8,1)"),
        Err(Error::Parse { column: 1, .. })
    ));
    assert!(matches!(
        SwizzledLayout::parse("Sw<3,4,3> o Sw<3,4,3> o (8,8):(8,1)"),
        Err(Error::Unsupported(_))
    ));
}

#[test]
fn swizzled_layouts_are_injective_when_their_layout_is() {
    for (text, injective) in [
        ("Sw<3,4,3> o (8,64):(64,1)", true),
        ("Sw<3,4,3> o (8,64):(1,8)", true),
        ("Sw<2,1,-3> o 7 o (8,64):(128,2)", true),
        ("Sw<3,4,3> o (8,64):(0,1)", false),
        ("Sw<3,4,3> o (8,64):(32,1)", false),
        ("Sw<1,0,1> o (4,4):(-4,-1)", true),
    ] {
        let l = lowered(&format!("cute:{text}"));
        let mut offsets = l.offsets();
        offsets.sort_unstable();
        offsets.dedup();
        assert_eq!(offsets.len() == l.size(), injective, "{text}");
        assert_eq!(l.is_injective(), injective, "{text}");
        assert_eq!(l.injectivity(), Some(injective), "{text}");
    }
}

fn arb_swizzle() -> impl Strategy<Value = Swizzle> {
    (0i64..=3, 0i64..=4, 0i64..=3, any::<bool>()).prop_map(|(b, m, extra, negative)| {
        let s = (b + extra).max(1);
        Swizzle::new(b, m, if negative { -s } else { s }).unwrap()
    })
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
    fn swizzled_text_round_trips_and_agrees_with_cute(
        swizzle in arb_swizzle(),
        offset in prop_oneof![Just(0i64), -20i64..=40],
        l in arb_layout(),
    ) {
        let sw = SwizzledLayout::new(swizzle, offset, l.clone()).unwrap();
        let lowered = sw.to_layout().unwrap();
        for text in [sw.to_string(), sw.moye()] {
            let back = SwizzledLayout::parse(&text).unwrap();
            prop_assert_eq!(&back, &sw);
            prop_assert_eq!(&Layout::parse(&format!("cute:{text}")).unwrap(), &lowered);
        }
        // Offsets by CuTe's definition: swizzle(offset + layout(x)).
        let inner = l.to_layout().unwrap();
        let (b, m, s) = (swizzle.bits() as i64, swizzle.base() as i64, swizzle.shift() as i64);
        let want: Vec<i64> = inner.offsets().iter().map(|&o| cute_swizzle(b, m, s, offset + o)).collect();
        prop_assert_eq!(&lowered.offsets(), &want);
        // The buffer is exactly the span of the offsets.
        prop_assert_eq!(lowered.min_offset(), *want.iter().min().unwrap());
        prop_assert_eq!(lowered.max_offset(), *want.iter().max().unwrap());
        // Injective exactly when no two offsets agree.
        let mut distinct = want.clone();
        distinct.sort_unstable();
        distinct.dedup();
        prop_assert_eq!(lowered.is_injective(), distinct.len() == want.len());
        // Back to CuTe's text from the canonical layout: the same function.
        if !swizzle.is_identity() {
            let back = SwizzledLayout::from_layout(&lowered).unwrap();
            prop_assert!(back.to_layout().unwrap().same_function(&lowered));
            prop_assert!(lowered.coalesce().same_function(&lowered));
        }
    }

    #[test]
    fn compact_swizzled_layouts_have_the_exact_span(
        swizzle in arb_swizzle(),
        offset in -40i64..=40,
        l in super::testing::injective_layouts(arb_shape(), 1),
    ) {
        // A compact layout fills an interval: the span comes from its first and last blocks.
        let lowered = SwizzledLayout::new(swizzle, offset, l).unwrap().to_layout().unwrap();
        let offsets = lowered.offsets();
        prop_assert_eq!(lowered.min_offset(), *offsets.iter().min().unwrap());
        prop_assert_eq!(lowered.max_offset(), *offsets.iter().max().unwrap());
    }

    #[test]
    fn garbage_never_panics(text in "[0-9_(),: @Swo<>-]{0,40}", any_text in any::<String>()) {
        for t in [&text, &any_text] {
            let _ = CuteLayout::parse(t);
            let _ = t.parse::<IntTuple>();
            let _ = Layout::parse(&format!("cute:{t}"));
        }
    }
}
