//! Random layout pairs: the JIT against the reference, bit for bit, for 1-, 2-, 4- and 8-byte
//! elements, with and without a pad value, some on several threads, half of them with a
//! candidate tactics that stream and stage whatever it can however small the destination.
//!
//! The pairs come from `common::random_layouts` (the generator the fuzz targets use). The case
//! count is 2000 unless `PROPTEST_CASES` says otherwise, for a long run:
//! `PROPTEST_CASES=200000 cargo test --release --test random_pairs`.

mod common;

use std::collections::HashMap;

use common::random_layouts::{
    generate, pair_from, shape, Choices, Kind, Pair, Role, KINDS, MAX_COSIZE,
};
use common::Pin;
use proptest::prelude::*;
use relayout::plan::Tactics;
use relayout::{compile_relayout_with, reference, Element, Error, Options};

/// 2000 cases unless `PROPTEST_CASES` is set.
fn config() -> ProptestConfig {
    let mut config = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = 2000;
    }
    config
}

/// Runs the pair with the JIT and the reference on the same data and compares the whole
/// destination buffers (pre-filled with a marker, so untouched slots count too).
fn check_as<T: Element + PartialEq + std::fmt::Debug>(
    pair: &Pair,
    pad: Option<u64>,
    threads: usize,
    pin: Option<Pin>,
) -> Result<(), TestCaseError> {
    let (src, dst) = (&pair.src.layout, &pair.dst.layout);
    let a: Vec<T> = common::pattern(src.cosize());
    let marker = T::from_bits(common::guard::MARKER);
    let mut want = vec![marker; dst.cosize()];
    reference::relayout(src, &a, dst, &mut want, pad.map(T::from_bits))
        .map_err(|e| TestCaseError::fail(format!("reference: {e}\n{pair}")))?;
    let mut options = Options::new()
        .elem_size(std::mem::size_of::<T>())
        .threads(threads)
        .min_bytes_per_thread(1);
    if let Some(bits) = pad {
        options = options.pad_bits(bits);
    }
    if let Some(pin) = pin {
        options = pin.apply(options);
    }
    let kernel = compile_relayout_with(src, dst, options)
        .map_err(|e| TestCaseError::fail(format!("compile: {e}\n{pair}")))?;
    kernel
        .plan()
        .verify()
        .map_err(|v| TestCaseError::fail(format!("plan: {v}\n{pair}\n{}", kernel.plan())))?;
    let mut got = vec![marker; dst.cosize()];
    kernel
        .run(&a, &mut got)
        .map_err(|e| TestCaseError::fail(format!("run: {e}\n{pair}")))?;
    if got != want {
        let first = (0..want.len()).find(|&i| got[i] != want[i]).unwrap_or(0);
        return Err(TestCaseError::fail(format!(
            "{}-byte elements, pad {pad:?}, {threads} thread(s), {pin:?}: slot {first} differs\n{pair}\nplan:\n{}",
            std::mem::size_of::<T>(),
            kernel.plan()
        )));
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn jit_matches_reference_on_random_pairs(
        bytes in proptest::collection::vec(any::<u8>(), 0..400),
        pad in any::<bool>(),
        threads in prop_oneof![6 => Just(1usize), 1 => 2usize..5],
        candidate in proptest::option::of(0..Tactics::CANDIDATES.len()),
    ) {
        let pair = pair_from(&mut bytes.into_iter());
        let pad = pad.then_some(0x5A5A_5A5A_5A5A_5A5Au64);
        // A candidate that streams from the first byte: streamed copies, staged and streamed
        // transposes, zips and unzips, on destinations of any size.
        let pin = candidate.map(Pin::eager);
        check_as::<u8>(&pair, pad, threads, pin)?;
        check_as::<u16>(&pair, pad, threads, pin)?;
        check_as::<u32>(&pair, pad, threads, pin)?;
        check_as::<u64>(&pair, pad, threads, pin)?;
    }
}

/// Every kind of generator builds layouts the crate accepts (each is valid by construction, so
/// a rejection is a bug in a parser or a constructor; the one exception is an XLA sub-tile that
/// splits a tile unevenly, which relayout reports as unsupported), destinations are injective,
/// and the generator reaches every kind and the features that matter.
#[test]
fn every_kind_builds_valid_layouts() {
    let mut built: HashMap<Kind, usize> = HashMap::new();
    let mut failures = Vec::new();
    let mut padded = 0;
    let mut negative = 0;
    let mut not_separable = 0;
    let mut uneven_subtiles = 0;
    for seed in 0..400 * KINDS.len() as u64 {
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut bytes = std::iter::from_fn(|| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            Some((state >> 24) as u8)
        });
        let mut c = Choices::new(&mut bytes);
        let shape = shape(&mut c);
        let kind = KINDS[seed as usize % KINDS.len()];
        let role = if seed % 2 == 0 {
            Role::Source
        } else {
            Role::Destination
        };
        match generate(kind, &shape, &mut c, role) {
            Ok(g) => {
                *built.entry(kind).or_default() += 1;
                if role == Role::Destination && !g.layout.is_injective() {
                    failures.push(format!("not injective: {} = {}", g.text, g.layout));
                }
                padded += usize::from(g.layout.cosize() > g.layout.size());
                negative += usize::from(g.layout.digits().iter().any(|d| d.stride < 0));
                not_separable += usize::from(!g.layout.is_separable());
            }
            Err((text, Error::Unsupported(m))) if kind == Kind::Xla && text.contains(")T(") => {
                uneven_subtiles += 1;
                assert!(m.contains("earlier tiles"), "{text}: {m}");
            }
            Err((text, e)) => failures.push(format!("{text}: {e}")),
        }
    }
    eprintln!(
        "built {built:?}; padded {padded}, negative strides {negative}, not separable \
         {not_separable}, uneven XLA sub-tiles rejected {uneven_subtiles}"
    );
    assert!(
        uneven_subtiles < 30,
        "uneven XLA sub-tiles: {uneven_subtiles}"
    );
    assert!(
        failures.is_empty(),
        "{} rejected layouts, for example:\n{}",
        failures.len(),
        failures[..failures.len().min(20)].join("\n")
    );
    for kind in KINDS {
        assert!(
            built.get(&kind).copied().unwrap_or(0) > 300,
            "{kind:?}: {built:?}"
        );
    }
    assert!(padded > 300, "padded layouts: {padded}");
    assert!(negative > 100, "negative strides: {negative}");
    assert!(not_separable > 50, "not separable: {not_separable}");
}

/// The empty stream and short streams still give valid pairs (the fuzz target relies on it).
#[test]
fn any_byte_string_gives_a_pair() {
    let empty = pair_from(&mut std::iter::empty());
    assert_eq!(empty.src.layout.shape(), &[1]);
    for len in 0..64u8 {
        let pair = pair_from(&mut (0..len).map(|b| b.wrapping_mul(37)));
        assert_eq!(pair.src.layout.shape(), pair.dst.layout.shape());
        assert!(pair.dst.layout.is_injective(), "{pair}");
        assert!(pair.src.layout.cosize() <= MAX_COSIZE, "{pair}");
        assert!(pair.dst.layout.cosize() <= MAX_COSIZE, "{pair}");
    }
}

/// A fuzz input whose pair used to need a 600-million-element source (compounding stride gaps).
#[test]
fn gaps_keep_buffers_small() {
    let mut bytes = vec![0x13, 0x01, 0xed, 0xec];
    bytes.extend([0xb3; 83]);
    bytes.extend([0x30, 0x12, 0x35]);
    let pair = pair_from(&mut bytes.into_iter());
    assert!(pair.src.layout.cosize() <= MAX_COSIZE, "{pair}");
    assert!(pair.dst.layout.cosize() <= MAX_COSIZE, "{pair}");
}
