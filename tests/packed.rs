//! Sub-byte elements (4 and 2 bits, packed in XLA's bit order) and 16-byte elements: the JIT
//! against the reference bit for bit, in guard pages, exhaustively on small shapes with short
//! extents, on random layout pairs, and with every tactics candidate; the plan interpreter
//! proves each packed plan moves every element once.

mod common;

use common::guard::{Edge, Guarded, Pin, EDGES};
use common::random_layouts::pair_from;
use common::{check_plan_moves_of, permutations};
use proptest::prelude::*;
use relayout::plan::{Kernel, Packed, Plan, Tactics, TransposeWrite};
use relayout::{compile_relayout_with, reference, DType, Error, Layout, Options, Target};

/// What every destination byte holds before a run, so that slots a relayout must leave alone
/// are checked too.
const MARKER: u8 = 0xa5;

/// Source bytes whose every element differs from its neighbours.
fn source_bytes(elements: usize, bits: u32) -> Vec<u8> {
    (0..packed(bits).bytes_for(elements))
        .map(|i| (i as u32).wrapping_mul(167).wrapping_add(29) as u8)
        .collect()
}

fn dtype_of(bits: u32) -> DType {
    match bits {
        4 => DType::U4,
        _ => DType::U2,
    }
}

/// Compiles `src → dst` for packed elements of `bits` bits and runs it with both buffers in
/// guard pages, at both edges, against the reference.
fn check_packed(
    src: &Layout,
    dst: &Layout,
    bits: u32,
    pad: Option<u8>,
    threads: usize,
    pin: Option<Pin>,
) -> Result<(), String> {
    let what = || format!("{src} -> {dst}, {bits} bits, pad {pad:?}, {threads} threads, {pin:?}");
    let mut options = Options::new()
        .dtype(dtype_of(bits))
        .threads(threads)
        .min_bytes_per_thread(1);
    if let Some(v) = pad {
        options = options.pad_bits(v as u64);
    }
    if let Some(pin) = pin {
        options = pin.apply(options);
    }
    let kernel =
        compile_relayout_with(src, dst, options).map_err(|e| format!("{}: {e}", what()))?;
    let plan = packed_plan(src, dst, bits).map_err(|e| format!("plan {}: {e}", what()))?;
    plan.verify().map_err(|v| format!("{}: {v}", what()))?;
    let a = source_bytes(src.cosize(), bits);
    let dst_bytes = packed(bits).bytes_for(dst.cosize());
    let mut want = vec![MARKER; dst_bytes];
    reference::relayout_packed(src, &a, dst, &mut want, bits, pad)
        .map_err(|e| format!("reference {}: {e}", what()))?;
    for edge in EDGES {
        let input = Guarded::from_slice(&a, edge);
        let mut output = Guarded::new(dst_bytes, edge, MARKER);
        kernel
            .run(input.as_slice(), output.as_mut_slice())
            .map_err(|e| format!("run {}: {e}", what()))?;
        if output.as_slice() != want.as_slice() {
            return Err(format!(
                "{} at {edge:?}\nplan:\n{}\nwant {:02x?}\ngot  {:02x?}",
                what(),
                kernel.plan(),
                want,
                output.as_slice()
            ));
        }
    }
    Ok(())
}

/// The plan interpreter's check (every element moved once, to its slot) on the packed plan.
fn check_packed_plan(src: &Layout, dst: &Layout, bits: u32) {
    check_plan_moves_of(&packed_plan(src, dst, bits).unwrap(), src, dst);
}

/// Elements of `bits` bits, packed.
fn packed(bits: u32) -> Packed {
    Packed::new(bits).unwrap()
}

/// The packed plan of the pair, with the default tactics, for this machine.
fn packed_plan(src: &Layout, dst: &Layout, bits: u32) -> relayout::Result<Plan> {
    Plan::packed(src, dst, packed(bits), Tactics::default(), Target::host())
}

#[test]
fn every_permutation_of_small_shapes_with_short_extents() {
    let extents = [1, 2, 3, 5, 7, 8, 12, 15];
    for bits in [4, 2] {
        for &x in &extents {
            for &y in &extents {
                let shape = [x, y];
                let (r, c) = (
                    Layout::row_major(&shape).unwrap(),
                    Layout::col_major(&shape).unwrap(),
                );
                for (src, dst) in [(&r, &c), (&c, &r), (&r, &r)] {
                    check_packed_plan(src, dst, bits);
                    check_packed(src, dst, bits, None, 1, None).unwrap();
                }
            }
        }
        for shape in [[3, 5, 4], [2, 7, 6], [4, 4, 15], [6, 3, 8]] {
            for order in permutations(3) {
                let src = Layout::row_major(&shape).unwrap();
                let dst = Layout::ordered(&shape, &order).unwrap();
                check_packed_plan(&src, &dst, bits);
                check_packed(&src, &dst, bits, None, 1, None).unwrap();
            }
        }
    }
}

#[test]
fn four_bit_transposes_of_whole_tiles_and_edges_take_the_nibble_kernel() {
    for (rows, cols) in [(32, 16), (64, 96), (70, 130), (33, 47), (128, 64)] {
        let src = Layout::row_major(&[rows, cols]).unwrap();
        let dst = Layout::col_major(&[rows, cols]).unwrap();
        let plan = packed_plan(&src, &dst, 4).unwrap();
        let transposes = plan
            .regions()
            .iter()
            .any(|r| matches!(r.kernel, Kernel::Transpose { .. }));
        assert!(
            transposes || rows % 2 == 1 || cols % 2 == 1,
            "{rows}x{cols}:\n{plan}"
        );
        check_packed_plan(&src, &dst, 4);
        for threads in [1, 2] {
            check_packed(&src, &dst, 4, None, threads, None).unwrap();
        }
    }
}

#[test]
fn four_bit_transposes_stage_their_blocks_as_byte_transposes_do() {
    // Edges on either side (130, 100), rows of whole staged runs (64 x 2048), and a block whose
    // staging rows would end mid-byte (an odd extent along the destination rows: in place).
    for (rows, cols) in [(256, 192), (130, 100), (64, 2048), (96, 33)] {
        let src = Layout::row_major(&[rows, cols]).unwrap();
        let dst = Layout::col_major(&[rows, cols]).unwrap();
        let mut staged = 0;
        for k in 0..Tactics::CANDIDATES.len() {
            let pin = Pin::eager(k);
            let plan = Plan::packed(&src, &dst, packed(4), pin.tactics, pin.target).unwrap();
            plan.verify().unwrap();
            check_plan_moves_of(&plan, &src, &dst);
            staged += plan
                .regions()
                .iter()
                .filter(|r| {
                    matches!(
                        r.kernel,
                        Kernel::Transpose {
                            write: TransposeWrite::Staged(_),
                            ..
                        }
                    )
                })
                .count();
            for threads in [1, 2] {
                check_packed(&src, &dst, 4, None, threads, Some(pin)).unwrap();
            }
        }
        assert_eq!(staged > 0, rows % 2 == 0 && cols % 2 == 0, "{rows}x{cols}");
    }
}

#[test]
fn copies_of_whole_bytes_and_of_odd_runs() {
    for bits in [4, 2] {
        // A copy, a copy of rows with a gap (padding), and a copy whose rows start mid-byte.
        for (src, dst) in [
            ("xla:u4[64,64]{1,0}", "xla:u4[64,64]{1,0}"),
            ("cute:(8,12):(12,1)", "cute:(8,12):(16,1)"),
            ("cute:(8,5):(5,1)", "cute:(8,5):(8,1)"),
            ("cute:(3,5):(5,1)", "cute:(3,5):(7,1)"),
        ] {
            let (src, dst) = (Layout::parse(src).unwrap(), Layout::parse(dst).unwrap());
            check_packed_plan(&src, &dst, bits);
            for pad in [None, Some(0x9)] {
                check_packed(&src, &dst, bits, pad, 2, None).unwrap();
            }
        }
    }
}

#[test]
fn every_tactics_candidate_on_a_target_that_streams() {
    let pairs = [
        ("cute:(64,48):(48,1)", "cute:(64,48):(1,64)"),
        ("cute:(256,8):(8,1)", "cute:(256,8):(8,1)"),
        ("xla:u4[48,40]{1,0}", "xla:u4[48,40]{0,1:T(8,16)}"),
        ("cute:(4,6,32):(192,32,1)", "cute:(4,6,32):(6,1,24)"),
    ];
    for (src, dst) in pairs {
        let (src, dst) = (Layout::parse(src).unwrap(), Layout::parse(dst).unwrap());
        for k in 0..Tactics::CANDIDATES.len() {
            for bits in [4, 2] {
                check_packed(&src, &dst, bits, Some(3), 1, Some(Pin::eager(k))).unwrap();
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn random_pairs(
        bytes in proptest::collection::vec(any::<u8>(), 0..64),
        bits in prop_oneof![Just(4u32), Just(2u32)],
        pad in proptest::option::of(0u8..16),
        threads in 1usize..3,
        candidate in proptest::option::of(0usize..64),
    ) {
        let pair = pair_from(&mut bytes.into_iter());
        check_packed_plan(&pair.src.layout, &pair.dst.layout, bits);
        let pin = candidate.map(Pin::eager);
        let checked = check_packed(&pair.src.layout, &pair.dst.layout, bits, pad, threads, pin);
        prop_assert!(checked.is_ok(), "{pair}\n{}", checked.unwrap_err());
    }
}

#[test]
fn sixteen_byte_elements_move_whole() {
    let pairs = [
        ("cute:(8,12):(12,1)", "cute:(8,12):(1,8)"),
        ("cute:(5,3,7):(21,7,1)", "cute:(5,3,7):(1,35,5)"),
        ("xla:c128[9,10]{1,0}", "xla:c128[9,10]{0,1:T(4,4)}"),
        ("cute:(16,16):(16,1)", "cute:Sw<2,0,2> o (16,16):(16,1)"),
    ];
    for (src, dst) in pairs {
        let (src, dst) = (Layout::parse(src).unwrap(), Layout::parse(dst).unwrap());
        let values: Vec<u128> = (0..src.cosize() as u128)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835))
            .collect();
        let marker = u128::MAX / 3;
        let mut want = vec![marker; dst.cosize()];
        reference::relayout(&src, &values, &dst, &mut want, None).unwrap();
        // The JIT runs on the halves: each element's low 8 bytes, then its high 8 bytes.
        let halves = |v: &[u128]| -> Vec<u64> {
            v.iter()
                .flat_map(|&x| [x as u64, (x >> 64) as u64])
                .collect()
        };
        for threads in [1, 2] {
            let options = Options::new()
                .dtype(DType::C128)
                .threads(threads)
                .min_bytes_per_thread(1);
            let r = compile_relayout_with(&src, &dst, options).unwrap();
            for edge in [Edge::End, Edge::Start] {
                let input = Guarded::from_slice(&halves(&values), edge);
                let mut output = Guarded::new(2 * dst.cosize(), edge, 0u64);
                output
                    .as_mut_slice()
                    .copy_from_slice(&halves(&vec![marker; dst.cosize()]));
                r.run(input.as_slice(), output.as_mut_slice()).unwrap();
                assert_eq!(output.as_slice(), halves(&want), "{src} -> {dst}");
            }
        }
    }
}

#[test]
fn packed_runs_check_their_buffers_and_types() {
    let src = Layout::row_major(&[5, 3]).unwrap();
    let dst = Layout::col_major(&[5, 3]).unwrap();
    let r = compile_relayout_with(&src, &dst, Options::new().dtype(DType::I4)).unwrap();
    let mut out = [0u8; 8];
    let err = r.run(&[0u8; 7], &mut out).unwrap_err();
    assert!(matches!(
        err,
        Error::PackedBufferTooShort {
            which: "source",
            elements: 15,
            bits: 4,
            needed: 8,
            got: 7
        }
    ));
    assert!(err
        .to_string()
        .contains("15 elements of 4 bits, 8 bytes packed"));
    let err = r.run(&[0u16; 8], &mut [0u16; 8]).unwrap_err();
    assert!(matches!(err, Error::ElementType(_)), "{err}");
    assert!(r.run(&[0i8; 8], &mut [0i8; 8]).is_ok());
    // The reference checks the same.
    let short = reference::relayout_packed(&src, &[0; 8], &dst, &mut [0; 7], 4, None);
    assert!(matches!(short, Err(Error::PackedBufferTooShort { .. })));
    let three = reference::relayout_packed(&src, &[0; 8], &dst, &mut [0; 8], 3, None);
    assert!(matches!(three, Err(Error::ElementType(_))));
}

#[test]
fn rows_that_start_mid_byte_move_element_by_element() {
    // Rows of 5 elements start mid-byte: the planner moves them one by one; a copy kernel in
    // their place would write half a byte of the neighbouring row.
    let src = Layout::parse("cute:(8,5):(5,1)").unwrap();
    let dst = Layout::parse("cute:(8,5):(8,1)").unwrap();
    let plan = packed_plan(&src, &dst, 4).unwrap();
    assert!(plan.verify().is_ok());
    assert!(plan.regions().iter().all(|r| r.kernel == Kernel::Element));
    let bytes = Plan::new(&src, &dst, 1).unwrap();
    assert!(bytes
        .regions()
        .iter()
        .any(|r| matches!(r.kernel, Kernel::Copy { .. })));
}
