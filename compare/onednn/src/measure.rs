//! One case: the source data, the reference result, relayout's fused kernel and oneDNN's
//! reorder each checked bit for bit against it, then the two timed beside memcpy.

use std::time::Duration;

use relayout::suite::{ConversionCase, PageAligned};
use relayout::{compile_relayout_with, reference, Conversion, DType, Element, Layout, Options};
use relayout::{Relayout, Result as RelayoutResult};

use crate::cases;
use crate::dnnl::{Context, Reorder};
use crate::error::{Error, Result};
use crate::ffi;
use crate::timing;

/// What became of one system on one case.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Checked, then timed: median seconds per run.
    Secs(f64),
    /// Its result differed from the reference (how); not timed.
    Fail(String),
    /// It cannot do the case (why).
    NotApplicable(String),
}

/// The measurements of one case.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The case's name.
    pub name: &'static str,
    /// Its conversion.
    pub conversion: Conversion,
    /// Bytes of the larger side (elements times the larger element size): what GB/s count.
    pub bytes: usize,
    /// relayout's fused kernel.
    pub relayout: Verdict,
    /// oneDNN's reorder.
    pub onednn: Verdict,
    /// Median seconds of memcpy of `bytes`.
    pub memcpy: f64,
    /// Interleaved rounds timed.
    pub rounds: usize,
    /// The implementation oneDNN chose, when it had one.
    pub implementation: Option<String>,
}

/// Checks and times `case` for about `budget`.
pub fn measure(case: &ConversionCase, ctx: &Context, budget: Duration) -> Result<Outcome> {
    let (from, to) = (case.conversion.from_type(), case.conversion.to_type());
    match (from.size(), to.size()) {
        (4, 2) => measure_as::<u32, u16>(case, ctx, budget),
        (2, 4) => measure_as::<u16, u32>(case, ctx, budget),
        (4, 1) => measure_as::<u32, u8>(case, ctx, budget),
        _ => Err(Error::Other(format!(
            "{}: no storage types written for {from} to {to}",
            case.name
        ))),
    }
}

/// [`measure`] with source elements stored as `S` and destination elements as `D`.
fn measure_as<S: Element, D: Element>(
    case: &ConversionCase,
    ctx: &Context,
    budget: Duration,
) -> Result<Outcome> {
    let (src_layout, dst_layout) = case.layouts()?;
    let value = source_value(case.conversion.from_type())?;
    let src = PageAligned::from_fn(src_layout.cosize(), |i| S::from_bits(value(i)));
    let mut want = PageAligned::filled(dst_layout.cosize(), D::from_bits(0));
    oracle(case, &src_layout, &src, &dst_layout, &mut want)?;
    let mut dst = PageAligned::filled(dst_layout.cosize(), D::from_bits(0));
    let kernel = compile(case, &src_layout, &dst_layout)?;
    while kernel.tactics().is_none() {
        kernel.run(&src, &mut dst)?; // tuning, as `relayout bench` finishes it before timing
    }
    let mut onednn = reorder(case, ctx, &src_layout, &dst_layout)?;

    let relayout_check = checked(&want, &mut dst, |d| Ok(kernel.run(&src, d)?))?;
    let onednn_check = match &mut onednn {
        Ok(r) => checked(&want, &mut dst, |d| r.execute(&src, d))?,
        Err(why) => Err(Verdict::NotApplicable(why.clone())),
    };
    let mut contenders = vec![Contender::Memcpy];
    if relayout_check.is_ok() {
        contenders.push(Contender::Relayout(&kernel));
    }
    if let (Ok(()), Ok(r)) = (&onednn_check, &mut onednn) {
        contenders.push(Contender::Onednn(r));
    }
    let bytes = src_layout.size() * std::mem::size_of::<S>().max(std::mem::size_of::<D>());
    let medians = time(&mut contenders, &src, &mut dst, bytes, budget)?;
    let timed = |check: Checked, is: fn(&Contender) -> bool| match check {
        Err(verdict) => verdict,
        Ok(()) => {
            let i = contenders.iter().position(is);
            Verdict::Secs(medians.secs[i.expect("a system that passed is timed")])
        }
    };
    let relayout = timed(relayout_check, |c| matches!(c, Contender::Relayout(_)));
    let onednn_verdict = timed(onednn_check, |c| matches!(c, Contender::Onednn(_)));
    Ok(Outcome {
        name: case.name,
        conversion: case.conversion,
        bytes,
        relayout,
        onednn: onednn_verdict,
        memcpy: medians.secs[0],
        rounds: medians.rounds,
        implementation: onednn.ok().map(|r| r.implementation().to_string()),
    })
}

/// A system to time, with what it runs.
enum Contender<'a, 'c> {
    /// `copy_from_slice` of the larger side's bytes, between two buffers of its own.
    Memcpy,
    /// relayout's fused kernel.
    Relayout(&'a Relayout),
    /// oneDNN's reorder.
    Onednn(&'a mut Reorder<'c>),
}

/// How a system's check came out: `Ok` to time it, or its verdict already.
type Checked = std::result::Result<(), Verdict>;

/// Medians of `contenders` (memcpy first) from `src` into `dst`, memcpy moving `bytes`.
fn time<S: Element, D: Element>(
    contenders: &mut [Contender],
    src: &[S],
    dst: &mut [D],
    bytes: usize,
    budget: Duration,
) -> Result<timing::Medians> {
    let copy_from = PageAligned::from_fn(bytes, |i| i as u8);
    let mut copy_to = PageAligned::filled(bytes, 0u8);
    timing::interleaved(contenders.len(), budget, |i| match &mut contenders[i] {
        Contender::Memcpy => {
            copy_to.copy_from_slice(&copy_from);
            Ok(())
        }
        Contender::Relayout(kernel) => Ok(kernel.run(src, dst)?),
        Contender::Onednn(reorder) => reorder.execute(src, dst),
    })
}

/// The bits of source element `i` of type `dtype`: a finite, normal value of magnitude between
/// 2⁻⁸ and 4 with either sign, from the bits of splitmix64(i) (for bf16, such an f32 cut to its
/// top 16 bits, still normal).
fn source_value(dtype: DType) -> Result<fn(usize) -> u64> {
    fn f32_bits(i: usize) -> u64 {
        let h = splitmix64(i as u64);
        let sign = h >> 63;
        let exponent = 119 + (h >> 32) % 10; // biased: 2^-8 up to 2^1
        (sign << 31) | (exponent << 23) | (h & 0x7f_ffff)
    }
    match dtype {
        DType::F32 => Ok(f32_bits),
        DType::BF16 => Ok(|i| f32_bits(i) >> 16),
        other => Err(Error::Other(format!(
            "no source values written for {other}"
        ))),
    }
}

/// The splitmix64 hash of `x` (Steele, Lea and Flood's mixing function).
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The reference result of `case` into `want`: relayout's element-by-element loop.
fn oracle<S: Element, D: Element>(
    case: &ConversionCase,
    src_layout: &Layout,
    src: &[S],
    dst_layout: &Layout,
    want: &mut [D],
) -> RelayoutResult<()> {
    let c = case.conversion;
    match &case.per_index {
        Some(map) => reference::relayout_per_index(src_layout, src, dst_layout, want, c, map, None),
        None => reference::relayout_converted(src_layout, src, dst_layout, want, c, None),
    }
}

/// relayout's fused kernel for `case`, as `relayout bench --conversions` compiles it: one thread,
/// tuned, the conversion and any per-index map.
fn compile(case: &ConversionCase, src: &Layout, dst: &Layout) -> RelayoutResult<Relayout> {
    let options = Options::new()
        .threads(1)
        .tune(true)
        .convert(case.conversion);
    let options = match &case.per_index {
        Some(map) => options.per_index(map.clone()),
        None => options,
    };
    compile_relayout_with(src, dst, options)
}

/// oneDNN's reorder for `case`, or why there is none (the case is not a strided view, or oneDNN
/// has no implementation for it).
fn reorder<'c>(
    case: &ConversionCase,
    ctx: &'c Context,
    src: &Layout,
    dst: &Layout,
) -> Result<std::result::Result<Reorder<'c>, String>> {
    let form = match cases::reorder(case, src, dst) {
        Ok(form) => form,
        Err(why) => return Ok(Err(why)),
    };
    match Reorder::new(ctx, &form.src, &form.dst, form.src_scales) {
        Ok(r) => Ok(Ok(r)),
        Err(Error::Dnnl {
            call,
            status: ffi::UNIMPLEMENTED,
        }) => Ok(Err(format!(
            "oneDNN has no implementation ({call}: unimplemented)"
        ))),
        Err(e) => Err(e),
    }
}

/// Runs `run` into `dst`, first set to the complement of `want` (so that an element left
/// unwritten differs), and compares the result with `want` bit for bit.
fn checked<D: Element>(
    want: &[D],
    dst: &mut [D],
    run: impl FnOnce(&mut [D]) -> Result<()>,
) -> Result<Checked> {
    for (d, w) in dst.iter_mut().zip(want) {
        *d = D::from_bits(!w.to_bits());
    }
    run(dst)?;
    let differ = |(_, (g, w)): &(usize, (&D, &D))| g.to_bits() != w.to_bits();
    let mut diffs = dst.iter().zip(want).enumerate().filter(differ);
    Ok(match diffs.next() {
        None => Ok(()),
        Some((i, (g, w))) => Err(Verdict::Fail(format!(
            "{} of {} elements differ from the reference, the first at buffer index {i}: \
             bits {:#x}, want {:#x}",
            1 + diffs.count(),
            want.len(),
            g.to_bits(),
            w.to_bits()
        ))),
    })
}
