//! Tests of the Morello notation: the golden cases, the rules of `expand_physical_shape`, parse
//! errors, and properties against Morello's own definitions. The worked examples of the
//! physical-shape rule are in `tests/morello.rs`, through the library and the command line.

use super::*;
use crate::layout::Coords;
use proptest::prelude::*;
use serde_json::Value;

const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/public_golden.json");

fn shaped(shape: &[usize], layout: &str) -> ShapedLayout {
    ShapedLayout {
        shape: shape.to_vec(),
        layout: MorelloLayout::parse(layout).expect("test layout parses"),
    }
}

fn lower(shape: &[usize], layout: &str) -> Result<Layout> {
    shaped(shape, layout).to_layout()
}

fn usizes(value: &Value) -> Vec<usize> {
    let items = value.as_array().expect("an array of numbers");
    items.iter().map(|v| v.as_u64().unwrap() as usize).collect()
}

fn morello_golden_cases() -> Vec<Value> {
    let text = std::fs::read_to_string(GOLDEN).expect("the shared golden cases are readable");
    let all: Value = serde_json::from_str(&text).expect("the golden cases are JSON");
    let cases = all.as_array().expect("a list of cases");
    cases
        .iter()
        .filter(|c| c["system"] == "morello")
        .cloned()
        .collect()
}

#[test]
fn golden_cases_reproduce_exactly() {
    let cases = morello_golden_cases();
    assert!(!cases.is_empty());
    for case in cases {
        let id = &case["id"];
        let text = case["layout"].as_str().unwrap();
        let shape = usizes(&case["logical_shape"]);
        let physical = usizes(&case["physical_shape"]);
        let offsets: Vec<i64> = case["offsets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_i64().unwrap())
            .collect();
        let morello = shaped(&shape, text);
        assert_eq!(morello.layout.to_string(), text, "{id}: printer");
        assert_eq!(morello.physical_shape().unwrap(), physical, "{id}");
        let layout = morello.to_layout().unwrap();
        assert_eq!(layout.offsets(), offsets, "{id}: offsets");
        assert_eq!(layout.cosize(), physical.iter().product::<usize>(), "{id}");
        let cli = format!("morello:{shape:?} {text}");
        assert_eq!(Layout::parse(&cli).unwrap(), layout, "{id}: {cli}");
    }
}

#[test]
fn builder_matches_the_text_form() {
    let built = MorelloLayout::new(vec![
        (0, PhysDim::Dynamic),
        (1, PhysDim::Dynamic),
        (2, PhysDim::Dynamic),
        (2, PhysDim::OddEven(16)),
    ]);
    assert_eq!(built.to_string(), "[0, 1, 2, 2 oe(16)]");
    assert_eq!(MorelloLayout::parse("[0, 1, 2, 2 oe(16)]").unwrap(), built);
    assert_eq!(
        MorelloLayout::parse(" [ 0,1 ,2,2oe( 16 ) ] ").unwrap(),
        built
    );
    assert_eq!(MorelloLayout::parse("[0]").unwrap().to_string(), "[0]");
}

#[test]
fn row_major_is_the_row_major_layout() {
    let shape = [2, 3, 4];
    let rm = MorelloLayout::row_major(3).to_layout(&shape).unwrap();
    assert!(rm.same_function(&Layout::row_major(&shape).unwrap()));
    assert_eq!(MorelloLayout::row_major(0).to_string(), "[]");
    assert_eq!(lower(&[], "[]").unwrap().offsets(), [0]);
}

#[test]
fn a_packed_larger_than_what_remains_takes_it() {
    // 6 rows in tiles of 8: the tile takes the 6 rows, and the buffer holds 18 elements.
    let rows = shaped(&[6, 3], "[0 p(8), 1]");
    assert_eq!(rows.physical_shape().unwrap(), [6, 3]);
    let rows = rows.to_layout().unwrap();
    assert!(rows.same_function(&Layout::row_major(&[6, 3]).unwrap()));
    assert_eq!(rows.cosize(), 18);
    // 6 = 2 · 3: the Packed(4) takes the 3 that the Packed(2) leaves.
    let tiles = shaped(&[6], "[0 p(4), 0 p(2)]");
    assert_eq!(tiles.physical_shape().unwrap(), [3, 2]);
    assert_eq!(tiles.to_layout().unwrap().offsets(), [0, 1, 2, 3, 4, 5]);
    // What remains may be 1; a Dynamic after the one that took the remainder takes that 1.
    assert_eq!(
        shaped(&[4], "[0 p(2), 0 p(4)]").physical_shape(),
        Ok(vec![1, 4])
    );
    assert_eq!(shaped(&[6], "[0, 0 p(8)]").physical_shape(), Ok(vec![1, 6]));
    assert_eq!(
        lower(&[6], "[0, 0 p(8)]").unwrap().offsets(),
        [0, 1, 2, 3, 4, 5]
    );
}

#[test]
fn an_odd_even_takes_a_smaller_remainder_only_when_it_is_one() {
    // On [1] the strip of 4 has one slot.
    assert_eq!(shaped(&[1], "[0 oe(4)]").physical_shape(), Ok(vec![1]));
    let message = invalid_message(&[2], "[0 oe(4)]");
    assert!(message.contains("only when 1 remains"), "{message}");
    // Over a Packed(3) of the same dim, every coordinate of the one-slot strip stays in slot 0
    // of Morello's formula (0, 2 and 1 are all below 3), so the layout is the Packed alone.
    let inside = shaped(&[3], "[0 oe(4), 0 p(3)]");
    assert_eq!(inside.physical_shape(), Ok(vec![1, 3]));
    assert_eq!(inside.to_layout().unwrap().offsets(), [0, 1, 2]);
    // Over a Packed(2), coordinate 1 would go to slot 2 of a one-slot strip: rejected.
    let message = invalid_message(&[2], "[0 oe(8), 0 p(2)]");
    assert!(message.contains("inside its strip"), "{message}");
}

#[test]
fn size_one_physical_dims_are_accepted() {
    let exact = shaped(&[4], "[0, 0 p(4)]");
    assert_eq!(exact.physical_shape().unwrap(), [1, 4]);
    assert_eq!(exact.to_layout().unwrap().offsets(), [0, 1, 2, 3]);
    assert_eq!(
        lower(&[4], "[0 p(1), 0 p(4)]").unwrap().offsets(),
        [0, 1, 2, 3]
    );
    // A dim of extent 1 may be left out.
    assert_eq!(lower(&[1, 3], "[1]").unwrap().offsets(), [0, 1, 2]);
}

#[test]
fn odd_even_strips_inside_other_dims() {
    let l = lower(&[2, 4], "[0, 1 oe(4)]").unwrap();
    assert_eq!(l.offsets(), [0, 2, 1, 3, 4, 6, 5, 7]);
    let t = lower(&[2, 4], "[1 oe(4), 0]").unwrap();
    assert_eq!(t.offsets(), [0, 4, 2, 6, 1, 5, 3, 7]);
}

#[test]
fn highest_slot_is_the_largest_slot_of_the_first_coordinates() {
    for n in (2..=16).step_by(2) {
        for count in 0..=n {
            let slot = |c: usize| {
                if c.is_multiple_of(2) {
                    c / 2
                } else {
                    n / 2 + c / 2
                }
            };
            let want = (0..count).map(slot).max().unwrap_or(0);
            assert_eq!(
                highest_slot(n, count),
                want,
                "strip of {n}, {count} coordinates"
            );
        }
    }
}

fn invalid_message(shape: &[usize], layout: &str) -> String {
    match lower(shape, layout) {
        Err(Error::InvalidLayout(message)) => message,
        other => panic!("{layout} on {shape:?}: expected InvalidLayout, got {other:?}"),
    }
}

#[test]
fn impossible_layouts_are_invalid() {
    let cases: [(&[usize], &str, &str); 14] = [
        (&[8], "[0 p(3)]", "does not divide the 8 coordinates"),
        // One of Morello's tests of expand_physical_shape: the fastest p(4) meets 6 columns.
        (
            &[10, 6],
            "[1, 0, 1 p(4), 0 p(2), 1 p(4)]",
            "does not divide the 6",
        ),
        (&[8], "[0, 0 p(0)]", "size 0"),
        (&[8], "[0, 0 oe(3)]", "even strip size"),
        (&[8], "[0 oe(0)]", "even strip size"),
        (&[6], "[0 oe(8)]", "only when 1 remains"),
        (&[4], "[0, 0]", "second Dynamic"),
        (&[8], "[0 p(2)]", "not covered completely"),
        (&[4, 4], "[0]", "logical dim 1 (extent 4) is not covered"),
        (&[4, 4], "[0, 2]", "has rank 2"),
        (&[8], "[0 p(4), 0]", "after the Dynamic of logical dim 0"),
        (&[6], "[0 p(4), 0 p(8)]", "once per logical dim"),
        (&[8, 2], "[1, 0 oe(4), 0 p(2)]", "inside its strip"),
        (&[0], "[0]", "extent 0"),
    ];
    for (shape, layout, expected) in cases {
        let message = invalid_message(shape, layout);
        assert!(message.contains(expected), "{layout}: {message}");
    }
}

fn parse_error(text: &str) -> (usize, String) {
    match crate::notation::parse(text) {
        Err(Error::Parse {
            notation: "morello",
            column,
            message,
        }) => (column, message),
        other => panic!("{text}: expected a morello parse error, got {other:?}"),
    }
}

#[test]
fn parse_errors_name_the_column() {
    // (text, 1-based column of the problem, part of the message)
    let cases = [
        ("morello:[6,8] [1, 0, 1 q(4)]", 24, "'p(n)', 'oe(n)'"),
        ("morello:6,8 [0]", 9, "'[' to open the logical shape"),
        ("morello:[6,8] 0]", 15, "'[' to open the layout"),
        ("morello:[4] [0 p(4]", 19, "')'"),
        ("morello:[4] [0 p4]", 16, "found 'p4'"),
        ("morello:[4] [0; 1]", 15, "',' or ']' in the layout"),
        ("morello:[4,] [0]", 12, "a number"),
        ("morello:[4] [0] x", 17, "the end of the input"),
        ("morello:[4] [0 oe(-2)]", 19, "non-negative"),
    ];
    for (text, want, expected) in cases {
        let (column, message) = parse_error(text);
        assert_eq!(column, want, "{text}: {message}");
        assert!(message.contains(expected), "{text}: {message}");
    }
    let (_, message) = parse_error("morello:[4] [0 p(99999999999999999999)]");
    assert!(message.contains("64 bits"), "{message}");
    assert!(MorelloLayout::parse("[0").is_err());
    assert!(ShapedLayout::parse("[4]").is_err());
}

#[test]
fn huge_layouts_overflow() {
    let big = 1usize << 40;
    assert!(matches!(
        lower(&[big, big], "[0, 1]"),
        Err(Error::Overflow(_))
    ));
    assert!(matches!(lower(&[1 << 62], "[0]"), Err(Error::Overflow(_))));
}

#[test]
fn huge_packings_of_small_dims_take_what_remains() {
    let huge = MorelloLayout::new(vec![
        (0, PhysDim::Packed(1 << 62)),
        (1, PhysDim::Packed(1 << 62)),
    ]);
    assert_eq!(huge.physical_shape(&[2, 3]), Ok(vec![2, 3]));
    assert_eq!(huge.to_layout(&[2, 3]).unwrap().cosize(), 6);
    let widest = MorelloLayout::new(vec![(0, PhysDim::Packed(usize::MAX))]);
    assert_eq!(widest.to_layout(&[2]).unwrap().offsets(), [0, 1]);
}

/// Morello's `expand_physical_shape`, straight from the rule: walking the physical dims from the
/// fastest, each logical dim keeps what remains of it; a Dynamic takes what remains (and nothing
/// of its dim may follow), a Packed or OddEven of `n` takes `n` when `n` divides what remains,
/// or what remains when that is smaller (once per dim, and for an OddEven only 1); at the end
/// at most 1 may remain of every dim. `None` where Morello fails (or cannot build the layout:
/// zero sizes, odd strips, dims outside the shape).
fn expand_physical_shape(shape: &[usize], dims: &[(usize, PhysDim)]) -> Option<Vec<usize>> {
    if shape.contains(&0) {
        return None;
    }
    // What remains of each dim; `None` once its Dynamic took it.
    let mut remaining: Vec<Option<usize>> = shape.iter().map(|&n| Some(n)).collect();
    let mut took_remainder = vec![false; shape.len()];
    let mut sizes = Vec::new();
    for &(d, phys) in dims.iter().rev() {
        let left = (*remaining.get(d)?)?;
        let size = match phys {
            PhysDim::Dynamic => {
                remaining[d] = None;
                left
            }
            PhysDim::Packed(0) => return None,
            PhysDim::OddEven(n) if n == 0 || !n.is_multiple_of(2) => return None,
            PhysDim::Packed(n) | PhysDim::OddEven(n) if left < n => {
                let odd_even = matches!(phys, PhysDim::OddEven(_));
                if took_remainder[d] || (odd_even && left != 1) {
                    return None;
                }
                took_remainder[d] = true;
                remaining[d] = Some(1);
                left
            }
            PhysDim::Packed(n) | PhysDim::OddEven(n) if left.is_multiple_of(n) => {
                remaining[d] = Some(left / n);
                n
            }
            PhysDim::Packed(_) | PhysDim::OddEven(_) => return None,
        };
        sizes.push(size);
    }
    if remaining.iter().flatten().any(|&left| left > 1) {
        return None;
    }
    sizes.reverse();
    Some(sizes)
}

/// Morello's own offset of `coord` (its `buffer_indexing_expr`) over the physical shape
/// `physical`: from the slowest physical dim, each reads its logical coordinate modulo what
/// remains of the dim (once something of it was taken), an OddEven puts the strip's evens first
/// and then its odds, and the result is divided by what the faster physical dims of the dim
/// cover; the offset is the row-major (Horner) sum of these physical coordinates.
fn morello_offset(
    shape: &[usize],
    dims: &[(usize, PhysDim)],
    physical: &[usize],
    coord: &[usize],
) -> usize {
    let mut remaining = shape.to_vec();
    let mut offset = 0;
    for (&(d, phys), &size) in dims.iter().zip(physical) {
        let before = remaining[d];
        remaining[d] /= size;
        let inner = remaining[d];
        let mut term = coord[d];
        if before != shape[d] {
            term %= before;
        }
        match phys {
            PhysDim::OddEven(n) => {
                let c = term % n;
                term = (c / 2 + (c % 2) * (n / 2)) / inner;
            }
            PhysDim::Dynamic | PhysDim::Packed(_) if shape[d] != size => term /= inner,
            PhysDim::Dynamic | PhysDim::Packed(_) => {}
        }
        offset = offset * size + term;
    }
    offset
}

/// A valid layout of one logical dim, fastest first: an optional odd/even strip, exact
/// packings, then a remainder `rest` that a Dynamic takes, or a Packed larger than it (which
/// takes it and may be followed by a Dynamic of size 1).
#[derive(Debug, Clone)]
struct DimPlan {
    odd_even: Option<usize>,
    packs: Vec<usize>,
    rest: usize,
    larger_by: Option<usize>,
    then_dynamic: bool,
}

impl DimPlan {
    fn extent(&self) -> usize {
        self.odd_even.unwrap_or(1) * self.packs.iter().product::<usize>() * self.rest
    }

    /// The dim's physical dims, slowest first.
    fn phys_dims(&self) -> Vec<PhysDim> {
        let larger = self.larger_by.map(|by| PhysDim::Packed(self.rest + by));
        let dynamic = self.then_dynamic || (larger.is_none() && self.rest > 1);
        let packs = self.packs.iter().map(|&p| PhysDim::Packed(p));
        let odd_even = self.odd_even.map(PhysDim::OddEven);
        dynamic
            .then_some(PhysDim::Dynamic)
            .into_iter()
            .chain(larger)
            .chain(packs)
            .chain(odd_even)
            .collect()
    }
}

fn dim_plan() -> impl Strategy<Value = DimPlan> {
    (
        prop::option::of(prop::sample::select(vec![2usize, 4, 6])),
        prop::collection::vec(1usize..=3, 0..=2),
        1usize..=3,
        prop::option::of(1usize..=6),
        any::<bool>(),
    )
        .prop_map(|(odd_even, packs, rest, larger_by, then_dynamic)| DimPlan {
            odd_even,
            packs,
            rest,
            larger_by,
            then_dynamic,
        })
}

/// Interleaves each logical dim's physical dims (slowest first; each dim's own order kept) by
/// the given choices.
fn interleave(per_dim: Vec<Vec<PhysDim>>, choices: &[usize]) -> MorelloLayout {
    let mut queues: Vec<Vec<PhysDim>> = per_dim
        .into_iter()
        .map(|dims| dims.into_iter().rev().collect())
        .collect();
    let mut dims = Vec::new();
    for choice in choices.iter().cycle() {
        let open: Vec<usize> = (0..queues.len())
            .filter(|&d| !queues[d].is_empty())
            .collect();
        if open.is_empty() {
            break;
        }
        let d = open[choice % open.len()];
        dims.push((d, queues[d].pop().unwrap()));
    }
    MorelloLayout::new(dims)
}

fn valid_shaped() -> impl Strategy<Value = ShapedLayout> {
    (
        prop::collection::vec(dim_plan(), 1..=3),
        prop::collection::vec(any::<usize>(), 1..=12),
    )
        .prop_map(|(plans, choices)| ShapedLayout {
            shape: plans.iter().map(DimPlan::extent).collect(),
            layout: interleave(plans.iter().map(DimPlan::phys_dims).collect(), &choices),
        })
}

fn any_phys_dim() -> impl Strategy<Value = PhysDim> {
    prop_oneof![
        Just(PhysDim::Dynamic),
        (0usize..10).prop_map(PhysDim::Packed),
        (0usize..10).prop_map(PhysDim::OddEven),
    ]
}

fn any_shaped() -> impl Strategy<Value = ShapedLayout> {
    (
        prop::collection::vec(0usize..8, 0..=3),
        prop::collection::vec((0usize..4, any_phys_dim()), 0..=6),
    )
        .prop_map(|(shape, dims)| ShapedLayout {
            shape,
            layout: MorelloLayout::new(dims),
        })
}

/// Small layouts of every kind, valid or not: up to three physical dims of any kind per logical
/// dim, over extents with many divisors.
fn small_shaped() -> impl Strategy<Value = ShapedLayout> {
    let extent = prop::sample::select(vec![1usize, 2, 3, 4, 6, 8, 12]);
    let phys = prop_oneof![
        Just(PhysDim::Dynamic),
        (1usize..=8).prop_map(PhysDim::Packed),
        prop::sample::select(vec![2usize, 4, 6, 8]).prop_map(PhysDim::OddEven),
    ];
    let dim = (extent, prop::collection::vec(phys, 0..=3));
    (
        prop::collection::vec(dim, 1..=3),
        prop::collection::vec(any::<usize>(), 1..=9),
    )
        .prop_map(|(dims, choices)| {
            let (shape, per_dim) = dims.into_iter().unzip();
            ShapedLayout {
                shape,
                layout: interleave(per_dim, &choices),
            }
        })
}

/// Checks a layout that Morello expands to `physical` against Morello's own offsets.
fn check_against_morello(x: &ShapedLayout, physical: &[usize]) -> Result<(), TestCaseError> {
    let layout = x
        .to_layout()
        .map_err(|e| TestCaseError::fail(format!("{x}: {e}")))?;
    prop_assert_eq!(x.physical_shape().unwrap(), physical, "{}", x);
    for coord in Coords::new(&x.shape) {
        let want = morello_offset(&x.shape, x.layout.dims(), physical, &coord);
        prop_assert_eq!(
            layout.offset(&coord).unwrap(),
            want as i64,
            "{} at {:?}",
            x,
            coord
        );
    }
    prop_assert_eq!(layout.cosize(), physical.iter().product::<usize>(), "{}", x);
    prop_assert_eq!(layout.cosize(), layout.size(), "{}: Morello never pads", x);
    prop_assert!(layout.is_injective(), "{}", x);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn printed_text_parses_to_the_same_function(x in valid_shaped()) {
        let reparsed: ShapedLayout = x.to_string().parse().unwrap();
        prop_assert_eq!(&reparsed, &x);
        let a = x.to_layout().unwrap();
        let b = Layout::parse(&format!("morello:{x}")).unwrap();
        prop_assert!(a.same_function(&b), "{}", x);
    }

    #[test]
    fn printed_text_of_any_layout_parses_back(x in any_shaped()) {
        let reparsed: ShapedLayout = x.to_string().parse().unwrap();
        prop_assert_eq!(&reparsed, &x);
        prop_assert_eq!(reparsed.to_layout(), x.to_layout());
    }

    #[test]
    fn lowering_agrees_with_morellos_formula(x in valid_shaped()) {
        let physical = expand_physical_shape(&x.shape, x.layout.dims());
        prop_assert!(physical.is_some(), "{} is a valid Morello layout", x);
        check_against_morello(&x, &physical.unwrap_or_default())?;
    }

    #[test]
    fn garbage_never_panics(text in "[\\[\\]0-9 ,poe()\\-x]{0,40}", raw in any::<String>()) {
        for s in [&text, &raw] {
            let _ = crate::notation::parse(&format!("morello:{s}"));
            let _ = MorelloLayout::parse(s);
            if let Ok(x) = ShapedLayout::parse(s) {
                let _ = x.to_layout();
            }
        }
    }
}

proptest! {
    // Most small layouts are not valid Morello layouts, so this one runs more cases.
    #![proptest_config(ProptestConfig::with_cases(2048))]

    /// Everything Morello expands is accepted with Morello's offsets, except an OddEven with
    /// faster dims of its own inside its strip, which is rejected exactly where Morello's
    /// formula does not map the tensor one to one onto its buffer; what Morello rejects is
    /// rejected too.
    #[test]
    fn accepted_exactly_where_morello_is_one_to_one(x in small_shaped()) {
        let Some(physical) = expand_physical_shape(&x.shape, x.layout.dims()) else {
            prop_assert!(x.to_layout().is_err(), "{} is not a valid Morello layout", x);
            return Ok(());
        };
        match x.to_layout() {
            Ok(_) => check_against_morello(&x, &physical)?,
            Err(Error::InvalidLayout(message)) if message.contains("inside its strip") => {
                let volume: usize = physical.iter().product();
                let mut hit = vec![false; volume];
                let one_to_one = Coords::new(&x.shape).all(|coord| {
                    let offset = morello_offset(&x.shape, x.layout.dims(), &physical, &coord);
                    offset < volume && !std::mem::replace(&mut hit[offset], true)
                });
                prop_assert!(!one_to_one, "{} was rejected, but Morello maps it one to one", x);
            }
            Err(e) => prop_assert!(false, "{}: Morello expands it to {:?}, got {}", x, physical, e),
        }
    }
}
