//! `relayout bench --conversions` (or a pair with `--to`): relayouts that convert element types,
//! timed fused (one kernel converts as it moves) against the same work in two passes (the
//! relayout, then a conversion of the whole destination), the same relayout without converting
//! (of elements of the larger of the two types, so that it moves as many bytes as the larger
//! side), memcpy of the larger side's bytes and the naive per-element loop.

use std::time::Duration;

use relayout::plan::Tactics;
use relayout::suite::PageAligned;
use relayout::{
    compile_relayout_with, reference, Conversion, DType, Element, Error, Layout, Options, PerIndex,
};

use super::{human_bytes, parallel_copy, significant, write_row, Format};
use crate::timing;

/// One converting relayout to time.
#[derive(Clone)]
pub struct ConversionJob {
    pub name: String,
    pub src: Layout,
    pub dst: Layout,
    pub conversion: Conversion,
    /// The per-index affine map on the way, if any.
    pub per_index: Option<PerIndex>,
    /// Tactics the fused kernel is pinned to (`--candidates`), instead of tuning.
    pub tactics: Option<Tactics>,
}

impl ConversionJob {
    /// The job once for each of [`Tactics::CANDIDATES`], named after its index
    /// (`weights_f32_to_i8_o16#5`): the fused kernel pinned to it; the other contenders tuned.
    pub fn candidates(self) -> Vec<ConversionJob> {
        Tactics::CANDIDATES
            .iter()
            .enumerate()
            .map(|(k, &tactics)| ConversionJob {
                name: format!("{}#{k}", self.name),
                tactics: Some(tactics),
                ..self.clone()
            })
            .collect()
    }
}

/// Column names of `--format tsv`, in order.
const TSV_COLUMNS: [&str; 13] = [
    "case",
    "conversion",
    "bytes",
    "threads",
    "fused_gbps",
    "two_pass_gbps",
    "unconverted_gbps",
    "memcpy_gbps",
    "naive_gbps",
    "fused_over_two_pass",
    "fused_over_unconverted",
    "fused_over_memcpy",
    "compile_us",
];

/// Column headings of the table and markdown formats.
const HEADINGS: [&str; 13] = [
    "case",
    "conversion",
    "bytes",
    "threads",
    "fused GB/s",
    "2-pass GB/s",
    "plain GB/s",
    "memcpy GB/s",
    "naive GB/s",
    "÷ 2-pass",
    "÷ plain",
    "÷ memcpy",
    "compile µs",
];

const WIDTHS: [usize; 13] = [22, 14, 10, 7, 10, 11, 10, 11, 10, 8, 7, 8, 10];

/// What was measured for one job; GB/s count the larger side's bytes.
struct Row {
    case: String,
    conversion: Conversion,
    bytes: usize,
    threads: usize,
    /// GB/s of: fused, two passes, the relayout without conversion, memcpy, the naive loop.
    gbps: [f64; 5],
    /// Median microseconds of fresh compiles of the fused kernel.
    compile_us: f64,
}

impl Row {
    fn cells(&self, format: Format) -> Vec<String> {
        let bytes = match format {
            Format::Tsv => self.bytes.to_string(),
            Format::Table | Format::Markdown => human_bytes(self.bytes),
        };
        let [fused, two_pass, plain, memcpy, naive] = self.gbps;
        let mut cells = vec![
            self.case.clone(),
            format!(
                "{}>{}",
                self.conversion.from_type(),
                self.conversion.to_type()
            ),
            bytes,
            self.threads.to_string(),
        ];
        cells.extend([fused, two_pass, plain, memcpy, naive].map(significant));
        cells.extend([fused / two_pass, fused / plain, fused / memcpy].map(significant));
        cells.push(format!("{:.0}", self.compile_us));
        cells
    }
}

/// Times every job and prints a row for each.
pub fn run(
    jobs: &[ConversionJob],
    threads: usize,
    runs: [usize; 3],
    budget: Duration,
    format: Format,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut out = std::io::stdout().lock();
    let headings: Vec<String> = match format {
        Format::Tsv => TSV_COLUMNS.map(String::from).to_vec(),
        _ => HEADINGS.map(String::from).to_vec(),
    };
    write_row(&mut out, format, &headings, &WIDTHS)?;
    if format == Format::Markdown {
        write_row(&mut out, format, &vec!["---".to_string(); 13], &WIDTHS)?;
    }
    for job in jobs {
        let row = measure(job, threads, runs, budget)?;
        write_row(&mut out, format, &row.cells(format), &WIDTHS)?;
        std::io::Write::flush(&mut out)?;
    }
    Ok(())
}

/// Times one job with storage types of its two element sizes.
fn measure(
    job: &ConversionJob,
    threads: usize,
    runs: [usize; 3],
    budget: Duration,
) -> Result<Row, Error> {
    macro_rules! sizes {
        ($($s:literal, $d:literal => $S:ty, $D:ty;)*) => {
            match (job.conversion.from_type().size(), job.conversion.to_type().size()) {
                $(($s, $d) => measure_as::<$S, $D>(job, threads, runs, budget),)*
                (s, d) => Err(Error::Unsupported(format!("elements of {s} and {d} bytes"))),
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

fn measure_as<S: Element, D: Element>(
    job: &ConversionJob,
    threads: usize,
    runs: [usize; 3],
    budget: Duration,
) -> Result<Row, Error> {
    let c = job.conversion;
    // Tuned, as the other rows of `relayout bench` are (the runs before timing finish it).
    let options = Options::new()
        .threads(threads)
        .tune(true)
        .tune_budget(budget);
    let converting = |o: Options| match &job.per_index {
        Some(map) => o.convert(c).per_index(map.clone()),
        None => o.convert(c),
    };
    let pinned = match job.tactics {
        Some(tactics) => options.clone().tactics(tactics),
        None => options.clone(),
    };
    let fused = compile_relayout_with(&job.src, &job.dst, converting(pinned))?;
    let relayout = compile_relayout_with(&job.src, &job.dst, options.clone().dtype(c.from_type()))?;
    let widens = c.to_type().size() > c.from_type().size();
    let wider = if widens { c.to_type() } else { c.from_type() };
    let plain = compile_relayout_with(&job.src, &job.dst, options.clone().dtype(wider))?;
    // The second pass converts the whole destination buffer, in place of nothing: a converting
    // copy of its slots (the fastest pass relayout has for it), or, with a per-index map, of
    // its elements in their layout (where each one's index is known).
    let flat = Layout::row_major(&[job.dst.cosize().max(1)])?;
    let second = match job.per_index {
        Some(_) => compile_relayout_with(&job.dst, &job.dst, converting(options.clone()))?,
        None => compile_relayout_with(&flat, &flat, options.clone().convert(c))?,
    };
    let from = c.from_type();
    let src = PageAligned::from_fn(job.src.cosize(), |i| S::from_bits(sample(from, i)));
    let mut middle = PageAligned::filled(job.dst.cosize().max(1), S::from_bits(0));
    let mut dst = PageAligned::filled(job.dst.cosize().max(1), D::from_bits(u64::MAX));
    // The unconverted relayout of the wider type reads a source of that type (the destination
    // type's, when the conversion widens) into `dst`, or else `src` into `middle`.
    let wide_src = PageAligned::from_fn(if widens { job.src.cosize() } else { 0 }, |i| {
        D::from_bits(sample(c.to_type(), i))
    });
    let elements = job.src.size();
    let bytes = elements * c.from_type().size().max(c.to_type().size());
    let copy_from = PageAligned::from_fn(bytes, |i| i as u8);
    let mut copy_to = PageAligned::filled(bytes, 0u8);
    while fused.tactics().is_none() {
        fused.run(&src, &mut dst)?;
    }
    while relayout.tactics().is_none() {
        relayout.run(&src, &mut middle)?;
    }
    while second.tactics().is_none() {
        second.run(&middle, &mut dst)?;
    }
    while plain.tactics().is_none() {
        match widens {
            true => plain.run(&wide_src, &mut dst)?,
            false => plain.run(&src, &mut middle)?,
        }
    }
    let compiles = (0..super::COMPILES)
        .map(|_| {
            let fresh = converting(options.clone()).cache(false);
            Ok(compile_relayout_with(&job.src, &job.dst, fresh)?.compile_micros())
        })
        .collect::<Result<Vec<f64>, Error>>()?;
    let threads = fused.threads();
    let five = [runs[0], runs[0], runs[0], runs[1], runs[2]];
    let secs = timing::interleaved_medians(five, |i| match i {
        0 => fused.run(&src, &mut dst),
        1 => {
            relayout.run(&src, &mut middle)?;
            second.run(&middle, &mut dst)
        }
        2 if widens => plain.run(&wide_src, &mut dst),
        2 => plain.run(&src, &mut middle),
        3 => {
            parallel_copy(&copy_from, &mut copy_to, threads);
            Ok(())
        }
        _ => match &job.per_index {
            Some(map) => {
                reference::relayout_per_index(&job.src, &src, &job.dst, &mut dst, c, map, None)
            }
            None => reference::relayout_converted(&job.src, &src, &job.dst, &mut dst, c, None),
        },
    })?;
    Ok(Row {
        case: job.name.clone(),
        conversion: c,
        bytes,
        threads,
        gbps: secs.map(|s| bytes as f64 / s / 1e9),
        compile_us: timing::median(compiles),
    })
}

/// The bits of source element `i` of type `t`: for floats a finite, normal value of either sign
/// between 2^-8 and 4, as data is (the index's own bits would be subnormal floats, whose
/// arithmetic can be slower), for integers pseudo-random bits (cut to the type's width by
/// `from_bits`).
fn sample(t: DType, i: usize) -> u64 {
    let h = splitmix64(i as u64);
    let float = |exponent: u32, mantissa: u32| {
        let bias = (1u64 << (exponent - 1)) - 1;
        let e = bias - 8 + (h >> 40) % 10;
        let sign = h >> 63;
        (sign << (exponent + mantissa)) | (e << mantissa) | (h & ((1u64 << mantissa) - 1))
    };
    match t {
        DType::F16 => float(5, 10),
        DType::BF16 => float(8, 7),
        DType::F32 => float(8, 23),
        DType::F64 => float(11, 52),
        _ => h,
    }
}

/// A 64-bit mix of `x` (splitmix64's finalizer on `x` times its increment).
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
