//! Relayouts that convert element types on the way: the reference's conversion rules against
//! computations that do not share its code (the `half` crate, Rust's own `as` casts, worked
//! examples), then the JIT against the reference bit for bit, for every pair of numeric types,
//! with and without an affine map (per tensor or per index of one dim), through every kind of
//! kernel, in guard pages.

mod common;

use common::guard::{Guarded, Pin, EDGES, MARKER};
use relayout::plan::Tactics;
use relayout::{
    compile_relayout_with, reference, Conversion, DType, Element, Error, Layout, Options, PerIndex,
};

/// The types conversions take.
const NUMERIC: [DType; 12] = [
    DType::U8,
    DType::I8,
    DType::U16,
    DType::I16,
    DType::U32,
    DType::I32,
    DType::U64,
    DType::I64,
    DType::F16,
    DType::BF16,
    DType::F32,
    DType::F64,
];

fn is_float(t: DType) -> bool {
    matches!(t, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
}

/// (exponent bits, mantissa bits) of a float type.
fn float_format(t: DType) -> (u32, u32) {
    match t {
        DType::F16 => (5, 10),
        DType::BF16 => (8, 7),
        DType::F32 => (8, 23),
        _ => (11, 52),
    }
}

fn mask(bits: u32) -> u64 {
    if bits == 64 {
        u64::MAX
    } else {
        (1 << bits) - 1
    }
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// Bit patterns of `t` that exercise the rules: zeros, bounds, powers of two and their
/// neighbours, subnormals, infinities, quiet and signalling NaNs with payloads, and values just
/// beside the rounding points of narrower types; both signs.
fn special_bits(t: DType) -> Vec<u64> {
    let bits = t.bits();
    let mut v: Vec<u64> = Vec::new();
    if is_float(t) {
        let (e, m) = float_format(t);
        let inf = ((1u64 << e) - 1) << m;
        let bias = (1u64 << (e - 1)) - 1;
        for p in [
            0,
            1,
            2,
            (1 << m) - 1,
            1 << m,
            (1 << m) | 1,
            inf - 1,
            inf,
            inf | 1,
            inf | 5,
            inf | 1 << (m - 1),
            inf | (1 << (m - 1)) | 3,
            bias << m,
            (bias << m) | 1,
            (bias << m) | (1 << (m - 1)),
            (bias + 1) << m | ((1 << m) - 1),
            (bias + 7) << m | (1 << (m - 1)) | 1,
            (bias + 15) << m | ((1 << m) - 1),
            (bias - 15) << m | 0x5,
            (bias + 31) << m | (1 << (m - 1)),
        ] {
            v.push(p);
            v.push(p | 1 << (bits - 1));
        }
        // Values near f16 and bf16 rounding points and ranges, from f64.
        for x in [
            0.5f64,
            1.5,
            2.5,
            -2.5,
            3.5,
            65504.0,
            65519.99,
            65520.0,
            1e-8,
            6e-8,
            3e-8,
            127.5,
            128.5,
            -128.5,
            255.5,
            256.0,
            32767.5,
            2147483647.5,
            4294967296.0,
            1e20,
            -1e20,
            9.3e18,
            1.8e19,
            3.4e38,
            1e-40,
            1e300,
            -1e-310,
        ] {
            v.push(from_f64(t, x));
        }
    } else {
        let signed = matches!(t, DType::I8 | DType::I16 | DType::I32 | DType::I64);
        for k in 0..bits {
            let p = 1u64 << k;
            v.extend([p, p - 1, p + 1, p.wrapping_neg()]);
        }
        v.extend([
            0,
            u64::MAX,
            1 << 53 | 1,
            1 << 60 | 1 << 52 | 1,
            (1 << 24) | (1 << 16) | 1,
        ]);
        if signed {
            v.push(1 << (bits - 1));
        }
    }
    v.into_iter().map(|b| b & mask(bits)).collect()
}

/// The bits of `x` as a float of type `t`, by Rust's own conversions (no rounding question
/// arises for the values used).
fn from_f64(t: DType, x: f64) -> u64 {
    match t {
        DType::F16 => half::f16::from_f32(x as f32).to_bits() as u64,
        DType::BF16 => half::bf16::from_f32(x as f32).to_bits() as u64,
        DType::F32 => (x as f32).to_bits() as u64,
        _ => x.to_bits(),
    }
}

/// `n` source elements: the special values, then random bits.
fn data(t: DType, n: usize, seed: u64) -> Vec<u64> {
    let special = special_bits(t);
    let mut rng = Rng(seed | 1);
    (0..n)
        .map(|i| match special.get(i) {
            Some(&b) => b,
            None => rng.next() & mask(t.bits()),
        })
        .collect()
}

fn convert(from: DType, to: DType) -> Conversion {
    Conversion::new(from, to).unwrap()
}

// ---------------------------------------------------------------------------------------------
// The reference's rules against independent computations.

/// Is `bits` (of float type `t`) a NaN, and what is its payload (the fraction without the quiet
/// bit) and sign?
fn nan_parts(t: DType, bits: u64) -> Option<(bool, u64, bool)> {
    let (e, m) = float_format(t);
    let inf = ((1u64 << e) - 1) << m;
    let is_nan = bits & inf == inf && bits & ((1 << m) - 1) != 0;
    is_nan.then(|| {
        let quiet = bits >> (m - 1) & 1 == 1;
        let payload = bits & ((1 << (m - 1)) - 1);
        (bits >> (e + m) & 1 == 1, payload, quiet)
    })
}

/// The value of float bits of `t`, through Rust and `half` (exact for every type).
fn to_f64(t: DType, bits: u64) -> f64 {
    match t {
        DType::F16 => half::f16::from_bits(bits as u16).to_f64(),
        DType::BF16 => half::bf16::from_bits(bits as u16).to_f64(),
        DType::F32 => f32::from_bits(bits as u32) as f64,
        _ => f64::from_bits(bits),
    }
}

/// The value of integer bits of `t`.
fn to_i128(t: DType, bits: u64) -> i128 {
    let w = t.bits();
    match t {
        DType::I8 | DType::I16 | DType::I32 | DType::I64 => {
            ((bits << (64 - w)) as i64 >> (64 - w)) as i128
        }
        _ => bits as i128,
    }
}

fn int_range(t: DType) -> (i128, i128) {
    let w = t.bits();
    match t {
        DType::I8 | DType::I16 | DType::I32 | DType::I64 => {
            (-(1i128 << (w - 1)), (1i128 << (w - 1)) - 1)
        }
        _ => (0, (1i128 << w) - 1),
    }
}

/// `x` rounded to an f32 to odd (toward zero, the last bit set when inexact), so that rounding
/// it once more, to f16 or bf16, rounds `x` once. (`half`'s own `from_f64` goes through an f32
/// rounded to nearest, and so rounds twice: it makes `1 + 2^-11 + 2^-40` the f16 `1.0`.)
fn odd_f32(x: f64) -> f32 {
    let nearest = x as f32;
    if x.is_nan() || nearest as f64 == x {
        return nearest;
    }
    let toward_zero = if (nearest as f64).abs() > x.abs() {
        f32::from_bits(nearest.to_bits() - 1)
    } else {
        nearest
    };
    f32::from_bits(toward_zero.to_bits() | 1)
}

#[test]
fn floats_convert_as_half_and_rust_round_them() {
    for from in [DType::F16, DType::BF16, DType::F32, DType::F64] {
        for to in [DType::F16, DType::BF16, DType::F32, DType::F64] {
            let c = convert(from, to);
            let mut inputs = data(from, 20_000, 7);
            if from.bits() == 16 {
                inputs = (0..=0xffff).collect(); // every f16 and every bf16
            }
            if from == to {
                // Not a conversion: the bits move as they are, signalling NaNs too.
                assert!(inputs.iter().all(|&x| c.apply(x) == x), "{from}");
                continue;
            }
            for &x in &inputs {
                let got = c.apply(x);
                if let Some((sign, payload, _)) = nan_parts(from, x) {
                    // A NaN stays a NaN, quiet, with its sign and the top of its payload.
                    let (_, m_from) = float_format(from);
                    let (_, m_to) = float_format(to);
                    let (got_sign, got_payload, quiet) =
                        nan_parts(to, got).unwrap_or_else(|| panic!("{from}->{to} {x:#x}"));
                    assert!(quiet && got_sign == sign, "{from}->{to} {x:#x} -> {got:#x}");
                    let expected = if m_to >= m_from {
                        payload << (m_to - m_from)
                    } else {
                        payload >> (m_from - m_to)
                    };
                    assert_eq!(got_payload, expected, "{from}->{to} {x:#x}");
                    continue;
                }
                let value = to_f64(from, x);
                let want = match to {
                    DType::F16 => half::f16::from_f32(odd_f32(value)).to_bits() as u64,
                    DType::BF16 => half::bf16::from_f32(odd_f32(value)).to_bits() as u64,
                    DType::F32 => (value as f32).to_bits() as u64,
                    _ => value.to_bits(),
                };
                assert_eq!(got, want, "{from}->{to} {x:#x} ({value:e})");
            }
        }
    }
}

#[test]
fn integers_saturate_and_round_to_nearest_even() {
    for from in NUMERIC {
        for to in NUMERIC.into_iter().filter(|t| !is_float(*t)) {
            let c = convert(from, to);
            let (lo, hi) = int_range(to);
            for x in data(from, 3000, 11) {
                let want = if is_float(from) {
                    let v = to_f64(from, x);
                    if v.is_nan() {
                        0
                    } else {
                        let r = v.round_ties_even();
                        if r <= lo as f64 {
                            lo
                        } else if r >= hi as f64 {
                            hi
                        } else {
                            r as i128
                        }
                    }
                } else {
                    to_i128(from, x).clamp(lo, hi)
                };
                assert_eq!(
                    c.apply(x),
                    want as u64 & mask(to.bits()),
                    "{from}->{to} {x:#x}"
                );
            }
        }
    }
}

#[test]
fn integers_become_floats_with_one_rounding() {
    for from in NUMERIC.into_iter().filter(|t| !is_float(*t)) {
        for to in [DType::F32, DType::F64] {
            let c = convert(from, to);
            for x in data(from, 3000, 13) {
                let v = to_i128(from, x);
                let want = match to {
                    DType::F32 => (v as f32).to_bits() as u64,
                    _ => (v as f64).to_bits(),
                };
                assert_eq!(c.apply(x), want, "{from}->{to} {v}");
            }
        }
    }
    // Through an f32 (or f64) first would round twice: 2^24 + 2^16 + 1 lies above the midpoint
    // of two bf16 neighbours, but rounds to that midpoint in f32, then to even in bf16.
    let x: i64 = (1 << 24) + (1 << 16) + 1;
    assert_eq!(convert(DType::I32, DType::BF16).apply(x as u64), 0x4b81);
    let y: i64 = (1 << 60) + (1 << 52) + 1;
    assert_eq!(convert(DType::I64, DType::BF16).apply(y as u64), 0x5d81);
    assert_eq!(convert(DType::U64, DType::F16).apply(u64::MAX), 0x7c00);
    assert_eq!(convert(DType::I64, DType::F16).apply(65519), 0x7bff);
    assert_eq!(convert(DType::I64, DType::F16).apply(65520), 0x7c00);
}

#[test]
fn affine_maps_multiply_then_add_in_f32_or_f64() {
    // Quantize f32 to i8 with scale 1/0.05 and zero point 3: each step rounded in f32.
    let q = convert(DType::F32, DType::I8).affine(20.0, 3.0).unwrap();
    for x in [
        0.0f32,
        0.1,
        -0.33,
        6.2,
        -7.0,
        1e30,
        f32::NAN,
        f32::NEG_INFINITY,
    ] {
        let y = x * 20.0f32 + 3.0f32;
        let want = if y.is_nan() {
            0
        } else {
            y.round_ties_even().clamp(-128.0, 127.0) as i8
        };
        assert_eq!(q.apply(x.to_bits() as u64) as u8 as i8, want, "{x}");
    }
    // Dequantize u8 to f64: in f64.
    let d = convert(DType::U8, DType::F64).affine(0.1, -1.5).unwrap();
    for x in [0u8, 1, 200, 255] {
        assert_eq!(d.apply(x as u64), (x as f64 * 0.1 - 1.5).to_bits());
    }
    // i64 → f32 with an f32 map: the integer rounds once to f32 first.
    let s = convert(DType::I64, DType::F32).affine(0.5, 0.0).unwrap();
    let y: i64 = (1 << 40) + 3;
    assert_eq!(s.apply(y as u64), ((y as f32) * 0.5).to_bits() as u64);
}

#[test]
fn impossible_conversions_are_errors() {
    for (from, to) in [
        (DType::C64, DType::F32),
        (DType::F32, DType::Pred),
        (DType::F8E4M3FN, DType::F16),
    ] {
        let e = Conversion::new(from, to).unwrap_err();
        assert!(matches!(e, Error::Conversion(_)), "{e}");
        assert!(e.to_string().contains(&from.to_string()), "{e}");
    }
    let e = Conversion::new(DType::C64, DType::C64)
        .unwrap()
        .affine(2.0, 0.0)
        .unwrap_err();
    assert!(matches!(e, Error::Conversion(_)), "{e}");
    for (scale, shift) in [(f64::NAN, 0.0), (1.0, f64::INFINITY)] {
        let e = convert(DType::F32, DType::I8)
            .affine(scale, shift)
            .unwrap_err();
        assert!(e.to_string().contains("finite"), "{e}");
    }
    // A pad value must be a destination element; buffers must be of each side's size.
    let l = Layout::parse("xla:f32[3,5]{1,0:T(2,2)}").unwrap();
    let r = Layout::row_major(&[3, 5]).unwrap();
    let options = Options::new()
        .convert(convert(DType::F32, DType::BF16))
        .pad_value(0.0f32);
    let e = compile_relayout_with(&r, &l, options).err().unwrap();
    assert!(
        matches!(e, Error::Conversion(_)) && e.to_string().contains("pad"),
        "{e}"
    );
    let k = compile_relayout_with(
        &r,
        &l,
        Options::new().convert(convert(DType::F32, DType::BF16)),
    )
    .unwrap();
    let mut out = vec![0u32; l.cosize()];
    let e = k.run(&[0.0f32; 15], &mut out).unwrap_err();
    assert!(
        matches!(e, Error::ElementType(_)) && e.to_string().contains("destination"),
        "{e}"
    );
}

// ---------------------------------------------------------------------------------------------
// The JIT against the reference.

/// Layout pairs whose plans use every kernel: a long copy, transposes (with element-wise
/// edges), a 4-D permutation, zips and unzips of three channels, odd/even strips, tiles with
/// padding, and an indexed path.
fn pairs() -> Vec<(Layout, Layout)> {
    let p = |a: &str, b: &str| (Layout::parse(a).unwrap(), Layout::parse(b).unwrap());
    vec![
        (
            Layout::row_major(&[1003]).unwrap(),
            Layout::row_major(&[1003]).unwrap(),
        ),
        (
            Layout::row_major(&[37, 53]).unwrap(),
            Layout::col_major(&[37, 53]).unwrap(),
        ),
        (
            Layout::row_major(&[64, 64]).unwrap(),
            Layout::col_major(&[64, 64]).unwrap(),
        ),
        p(
            "cute:(2,3,9,11):(297,99,11,1)",
            "cute:(2,3,9,11):(297,1,33,3)",
        ),
        p(
            "cute:(2,3,9,11):(297,1,33,3)",
            "cute:(2,3,9,11):(297,99,11,1)",
        ),
        p("cute:(5,3,7):(21,7,1)", "cute:(5,3,7):(1,5,15)"),
        p("xla:f32[5,70]{1,0}", "xla:f32[5,70]{1,0:T(2,8)}"),
        p("xla:f32[6,10]{1,0:T(4,2)}", "xla:f32[6,10]{0,1}"),
        p("cute:(32,6):(1,32)", "cute:((2,16),6):((96,1),16)"),
        // Rows 4 KiB apart (of f32) into 16-row blocks: strips of few tiles whose source rows
        // all start in one L1 set, which the transposes walk along.
        p(
            "cute:(32,1024):(1024,1)",
            "cute:((16,2),1024):((1,16384),16)",
        ),
    ]
}

/// Converts `from → to` (with the per-index map `map`, if given) on `src → dst` with the JIT
/// and with the reference, and compares the destinations bit for bit, padding included; with a
/// map, also checks that the plan's loops carry each element's index along the map's dim.
fn check_converted<S: Element, D: Element>(
    src: &Layout,
    dst: &Layout,
    conversion: Conversion,
    map: Option<&PerIndex>,
    (pin, pad): (Option<Pin>, Option<u64>),
) {
    let input: Vec<S> = data(conversion.from_type(), src.cosize(), src.cosize() as u64)
        .into_iter()
        .map(S::from_bits)
        .collect();
    let marker = D::from_bits(MARKER);
    let mut want = vec![marker; dst.cosize()];
    let pad_value = pad.map(D::from_bits);
    match map {
        Some(m) => {
            reference::relayout_per_index(src, &input, dst, &mut want, conversion, m, pad_value)
        }
        None => reference::relayout_converted(src, &input, dst, &mut want, conversion, pad_value),
    }
    .unwrap();
    let mut options = Options::new().convert(conversion);
    if let Some(m) = map {
        options = options.per_index(m.clone());
    }
    if let Some(p) = pad_value {
        options = options.pad_value(p);
    }
    if let Some(pin) = pin {
        options = pin.apply(options);
    }
    let r = compile_relayout_with(src, dst, options)
        .unwrap_or_else(|e| panic!("compile {conversion}: {src} -> {dst}: {e}"));
    common::check_plan_moves_of(r.plan(), src, dst);
    if let Some(m) = map {
        check_plan_indices(r.plan(), dst, m.dim());
    }
    for edge in EDGES {
        let a = Guarded::from_slice(&input, edge);
        let mut b = Guarded::new(dst.cosize(), edge, marker);
        r.run(a.as_slice(), b.as_mut_slice()).unwrap();
        let (got, want) = (b.as_slice(), &want[..]);
        if let Some(i) = (0..want.len()).find(|&i| got[i].to_bits() != want[i].to_bits()) {
            panic!(
                "{conversion}: {src} -> {dst} ({edge:?}): slot {i} want {:#x} got {:#x}\nplan:\n{}",
                want[i].to_bits(),
                got[i].to_bits(),
                r.plan()
            );
        }
    }
}

/// Interprets `plan` (no JIT) and checks that the index it carries for each element is the
/// element's coordinate along `dim`.
fn check_plan_indices(plan: &relayout::plan::Plan, dst: &Layout, dim: usize) {
    let mut want = vec![-1i64; dst.cosize()];
    relayout::layout::for_each_coord(dst.shape(), |x| {
        want[dst.index(x).unwrap()] = x[dim] as i64;
    });
    plan.for_each_indexed_move(|_, d, index| {
        assert_eq!(index, want[d], "slot {d}: index along dim {dim}\n{plan}");
    });
}

/// [`check_converted`] with carriers of the conversion's element sizes.
fn check_sized(src: &Layout, dst: &Layout, c: Conversion, pin: Option<Pin>, pad: Option<u64>) {
    check_sized_map(src, dst, c, None, pin, pad)
}

/// [`check_sized`] with a per-index map, if given.
fn check_sized_map(
    src: &Layout,
    dst: &Layout,
    c: Conversion,
    map: Option<&PerIndex>,
    pin: Option<Pin>,
    pad: Option<u64>,
) {
    macro_rules! sizes {
        ($($s:literal, $d:literal => $S:ty, $D:ty;)*) => {
            match (c.from_type().size(), c.to_type().size()) {
                $(($s, $d) => check_converted::<$S, $D>(src, dst, c, map, (pin, pad)),)*
                other => panic!("sizes {other:?}"),
            }
        };
    }
    sizes! {
        1, 1 => u8, u8; 1, 2 => u8, u16; 1, 4 => u8, u32; 1, 8 => u8, u64;
        2, 1 => u16, u8; 2, 2 => u16, u16; 2, 4 => u16, u32; 2, 8 => u16, u64;
        4, 1 => u32, u8; 4, 2 => u32, u16; 4, 4 => u32, u32; 4, 8 => u32, u64;
        8, 1 => u64, u8; 8, 2 => u64, u16; 8, 4 => u64, u32; 8, 8 => u64, u64;
    }
}

#[test]
fn every_type_pair_converts_in_every_kernel() {
    let pairs = pairs();
    for from in NUMERIC {
        for to in NUMERIC {
            for (src, dst) in &pairs {
                check_sized(src, dst, convert(from, to), None, Some(0x3c));
            }
        }
    }
}

#[test]
fn affine_maps_convert_in_every_kernel() {
    let pairs = pairs();
    for from in NUMERIC {
        for to in NUMERIC {
            for (scale, shift) in [(0.37, -3.5), (-1e10, 7.0)] {
                let c = convert(from, to).affine(scale, shift).unwrap();
                for (src, dst) in &pairs {
                    check_sized(src, dst, c, None, None);
                }
            }
        }
    }
}

/// Shifts of zero: +0 turns a product of -0 into +0 (kept by float destinations, lost by
/// integer ones), -0 changes nothing; the kernels leave out the additions that change nothing
/// the destination keeps, and must still match the reference bit for bit.
#[test]
fn affine_maps_with_zero_shifts_convert_in_every_kernel() {
    let pairs = pairs();
    for from in NUMERIC {
        for to in NUMERIC {
            for (k, (src, dst)) in pairs.iter().enumerate() {
                for shift in [0.0, -0.0] {
                    let c = convert(from, to).affine(-0.37, shift).unwrap();
                    check_sized(src, dst, c, None, None);
                }
                let dim = k % src.rank();
                let scales: Vec<f64> = (0..src.shape()[dim]).map(|i| i as f64 - 2.5).collect();
                let minus_zeros = vec![-0.0; scales.len()];
                for shifts in [&[][..], &minus_zeros] {
                    let map = PerIndex::new(dim, &scales, shifts).unwrap();
                    check_sized_map(src, dst, convert(from, to), Some(&map), None, None);
                }
            }
        }
    }
}

#[test]
fn staged_and_streamed_kernels_convert() {
    let pairs = pairs();
    let conversions = [
        convert(DType::F32, DType::BF16),
        convert(DType::BF16, DType::F32),
        convert(DType::F32, DType::F16),
        convert(DType::U8, DType::F64),
        convert(DType::F64, DType::I8),
        convert(DType::F32, DType::I8).affine(12.5, -1.0).unwrap(),
        convert(DType::I64, DType::BF16),
    ];
    for k in 0..Tactics::CANDIDATES.len() {
        for c in conversions {
            for (src, dst) in &pairs {
                check_sized(src, dst, c, Some(Pin::eager(k)), None);
            }
        }
    }
}

/// Staged blocks copied out (which hold destination elements) and staged blocks streamed out
/// through the runtime's row conversion (which hold source elements) in one function: bf16 rows
/// 4 KiB apart stage whole blocks and copy them, and the staging buffer must hold the larger.
#[test]
fn copied_and_streamed_staged_blocks_fit_the_staging_buffer() {
    let p = |a: &str, b: &str| (Layout::parse(a).unwrap(), Layout::parse(b).unwrap());
    let (src, dst) = p("cute:(2048,16):(16,1)", "cute:(2048,16):(1,2048)");
    for (from, to) in [(DType::BF16, DType::F32), (DType::F32, DType::BF16)] {
        check_sized(&src, &dst, convert(from, to), None, None);
        for k in 0..Tactics::CANDIDATES.len() {
            check_sized(&src, &dst, convert(from, to), Some(Pin::eager(k)), None);
        }
    }
}

/// A per-index map along `dim` of `layout`: a different scale and shift at every index (so
/// that a wrong index shows), some of them large, some negative.
fn map_along(layout: &Layout, dim: usize, seed: u64) -> PerIndex {
    let n = layout.shape()[dim];
    let mut rng = Rng(seed | 1);
    let scales: Vec<f64> = (0..n)
        .map(|i| match i % 5 {
            0 => 0.37 + i as f64,
            1 => -1.25 * (i as f64 + 1.0),
            2 => 1e10,
            3 => (rng.next() % 1000) as f64 / 7.0,
            _ => -0.001,
        })
        .collect();
    let shifts: Vec<f64> = (0..n).map(|i| i as f64 * 0.5 - 3.5).collect();
    PerIndex::new(dim, &scales, &shifts).unwrap()
}

#[test]
fn per_index_maps_convert_in_every_kernel() {
    let pairs = pairs();
    for from in NUMERIC {
        for to in NUMERIC {
            for (k, (src, dst)) in pairs.iter().enumerate() {
                let rank = src.rank();
                for dim in [0, rank - 1, k % rank] {
                    let map = map_along(src, dim, k as u64);
                    check_sized_map(src, dst, convert(from, to), Some(&map), None, Some(0x5a));
                }
            }
        }
    }
}

#[test]
fn staged_and_streamed_kernels_convert_with_per_index_maps() {
    let pairs = pairs();
    let conversions = [
        convert(DType::F32, DType::BF16),
        convert(DType::F32, DType::I8),
        convert(DType::U8, DType::F64),
        convert(DType::F64, DType::F16),
        convert(DType::I32, DType::I32),
    ];
    for k in 0..Tactics::CANDIDATES.len() {
        for c in conversions {
            for (src, dst) in &pairs {
                for dim in 0..src.rank() {
                    let map = map_along(src, dim, dim as u64);
                    check_sized_map(src, dst, c, Some(&map), Some(Pin::eager(k)), None);
                }
            }
        }
    }
}

#[test]
fn per_index_maps_index_swizzled_and_broadcast_layouts() {
    let p = |a: &str, b: &str| (Layout::parse(a).unwrap(), Layout::parse(b).unwrap());
    for (src, dst) in [
        p("cute:(8,64):(64,1)", "cute:Sw<3,3,3> o (8,64):(64,1)"),
        p("cute:Sw<2,2,2> o (16,16):(16,1)", "cute:(16,16):(1,16)"),
        p("cute:(4,6):(0,1)", "cute:(4,6):(6,1)"),
        p("cute:(6,5):(1,6)", "cute:((2,3),5):((1,10),2)"),
    ] {
        for dim in 0..src.rank() {
            let map = map_along(&src, dim, 3);
            for c in [
                convert(DType::F32, DType::I8),
                convert(DType::I16, DType::F64),
            ] {
                check_sized_map(&src, &dst, c, Some(&map), None, Some(1));
            }
        }
    }
}

#[test]
fn per_index_maps_in_chunked_copies_and_on_threads() {
    let long = Layout::row_major(&[3, 30000]).unwrap();
    let transposed = Layout::col_major(&[96, 700]).unwrap();
    let c = convert(DType::F32, DType::I8);
    for dim in [0, 1] {
        // A copy long enough to be cut into chunks, whose chunks carry the index on.
        let map = map_along(&long, dim, 9);
        check_sized_map(&long, &long, c, Some(&map), None, None);
        // Split between threads: each part starts its table pointer at its own outer step.
        let src = Layout::row_major(&[96, 700]).unwrap();
        let map = map_along(&src, dim, 5);
        let input: Vec<f32> = (0..src.cosize()).map(|i| i as f32 / 37.0 - 900.0).collect();
        let mut want = vec![0i8; transposed.cosize()];
        reference::relayout_per_index(&src, &input, &transposed, &mut want, c, &map, None).unwrap();
        let options = Options::new()
            .convert(c)
            .per_index(map)
            .threads(3)
            .min_bytes_per_thread(1);
        let r = compile_relayout_with(&src, &transposed, options).unwrap();
        assert_eq!(r.threads(), 3);
        let mut got = vec![0i8; transposed.cosize()];
        r.run(&input, &mut got).unwrap();
        assert_eq!(got, want, "along {dim}");
    }
}

#[test]
fn the_suites_converting_cases_match_the_reference() {
    let cases = relayout::suite::conversion_cases(relayout::suite::Size::Reduced).unwrap();
    assert!(
        cases.iter().any(|c| c.per_index.is_some()),
        "per-row weights"
    );
    for case in cases {
        let (src, dst) = case.layouts().unwrap();
        let map = case.per_index.as_ref();
        check_sized_map(&src, &dst, case.conversion, map, None, None);
    }
}

#[test]
fn a_conversion_to_the_same_type_is_a_plain_relayout() {
    let (src, dst) = (
        Layout::row_major(&[8, 8]).unwrap(),
        Layout::col_major(&[8, 8]).unwrap(),
    );
    let r = compile_relayout_with(
        &src,
        &dst,
        Options::new().convert(convert(DType::F32, DType::F32)),
    )
    .unwrap();
    assert!(r.plan().conversion().is_none());
    let c = compile_relayout_with(
        &src,
        &dst,
        Options::new().convert(convert(DType::F32, DType::BF16)),
    )
    .unwrap();
    assert!(c.plan().to_string().contains("f32 -> bf16"), "{}", c.plan());
    assert_eq!((c.plan().elem_size(), c.plan().dst_elem_size()), (4, 2));
}

#[test]
fn the_command_line_converts_with_to_scale_and_xla_types() {
    let apply = |extra: &[&str]| {
        let mut args = vec![
            "apply",
            "--src",
            "cute:(2,3):(3,1)",
            "--dst",
            "cute:(2,3):(1,2)",
        ];
        args.extend_from_slice(extra);
        common::run_cli(&args)
    };
    // The source holds 0..6; the destination is column-major, in the destination's type.
    assert_eq!(
        apply(&["--to", "f64", "--scale", "0.5"]).trim(),
        "0 1.5 0.5 2 1 2.5"
    );
    assert_eq!(
        apply(&["--to", "u8", "--scale", "100", "--shift", "-50"]).trim(),
        "0 250 50 255 150 255"
    );
    assert_eq!(
        apply(&["--dtype", "i32", "--to", "bf16", "--shift", "0.5"]).trim(),
        "0.5 3.5 1.5 4.5 2.5 5.5"
    );
    // Per-index lists: a scale and shift per row (dim 0), or per column (dim 1).
    assert_eq!(
        apply(&["--to", "i8", "--scale", "10,100", "--shift", "0,-5", "--along", "0"]).trim(),
        "0 127 10 127 20 127"
    );
    assert_eq!(
        apply(&["--to", "f64", "--scale", "1,2,3", "--along", "1"]).trim(),
        "0 3 2 8 6 15"
    );
    let checked = common::run_cli(&[
        "check",
        "--src",
        "cute:(32,24):(24,1)",
        "--dst",
        "cute:((16,2),24):((1,384),16)",
        "--to",
        "i8",
        "--along",
        "0",
        "--scale",
        &(0..32)
            .map(|i| format!("{}", 1.0 + i as f64 / 3.0))
            .collect::<Vec<_>>()
            .join(","),
    ]);
    assert!(checked.starts_with("ok: 768 elements"), "{checked}");
    // XLA layouts name each side's type.
    let xla = common::run_cli(&[
        "apply",
        "--src",
        "xla:u8[2,2]{1,0}",
        "--dst",
        "xla:f16[2,2]{0,1}",
    ]);
    assert_eq!(xla.trim(), "0 2 1 3");
    let checked = common::run_cli(&[
        "check",
        "--src",
        "xla:f32[40,70]{1,0}",
        "--dst",
        "xla:bf16[40,70]{0,1:T(8,8)}",
        "--scale",
        "3",
        "--pad-value",
        "-2",
    ]);
    assert!(checked.starts_with("ok: 2800 elements"), "{checked}");
    let plan = common::run_cli(&[
        "plan",
        "--src",
        "xla:f32[8,8]{1,0}",
        "--dst",
        "xla:bf16[8,8]{0,1}",
    ]);
    assert!(plan.starts_with("plan: f32 -> bf16 elements"), "{plan}");
}

/// 300 cases unless `PROPTEST_CASES` says otherwise (for a long run).
fn random_config() -> proptest::prelude::ProptestConfig {
    let mut config = proptest::prelude::ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = 300;
    }
    config
}

proptest::proptest! {
    #![proptest_config(random_config())]

    /// Random layout pairs (the generator of `tests/random_pairs.rs` and the fuzz targets) with
    /// random conversions, with or without a scale and shift and a pad value, some pinned to a
    /// candidate that stages and streams on small destinations: the JIT against the reference
    /// in guard pages.
    #[test]
    fn random_pairs_with_random_conversions(
        bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400),
        from in 0..NUMERIC.len(),
        to in 0..NUMERIC.len(),
        affine in proptest::option::of((-1e3f64..1e3, -1e3f64..1e3)),
        pad in proptest::prelude::any::<bool>(),
        candidate in proptest::option::of(0..Tactics::CANDIDATES.len()),
    ) {
        let pair = common::random_layouts::pair_from(&mut bytes.into_iter());
        let mut c = convert(NUMERIC[from], NUMERIC[to]);
        if let Some((scale, shift)) = affine {
            c = c.affine(scale, shift).unwrap();
        }
        let pad = pad.then_some(0x1234_5678_9abc_def0 & mask(NUMERIC[to].bits()));
        check_sized(&pair.src.layout, &pair.dst.layout, c, candidate.map(Pin::eager), pad);
    }

    /// [`random_pairs_with_random_conversions`] with a per-index map along a random dim.
    #[test]
    fn random_pairs_with_random_per_index_maps(
        bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400),
        from in 0..NUMERIC.len(),
        to in 0..NUMERIC.len(),
        dim in 0..8usize,
        seed in proptest::prelude::any::<u64>(),
        pad in proptest::prelude::any::<bool>(),
        candidate in proptest::option::of(0..Tactics::CANDIDATES.len()),
    ) {
        let pair = common::random_layouts::pair_from(&mut bytes.into_iter());
        let (src, dst) = (&pair.src.layout, &pair.dst.layout);
        if src.rank() == 0 {
            return Ok(());
        }
        let map = map_along(src, dim % src.rank(), seed);
        let c = convert(NUMERIC[from], NUMERIC[to]);
        let pad = pad.then_some(0x1234_5678_9abc_def0 & mask(NUMERIC[to].bits()));
        check_sized_map(src, dst, c, Some(&map), candidate.map(Pin::eager), pad);
    }
}
