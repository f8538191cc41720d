//! `relayout bench`: kernels against memcpy of the same bytes and the naive per-element loop, on
//! the standard suite, named cases of it, or one `--src`/`--dst` pair.

use std::io::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use clap::builder::PossibleValuesParser;
use clap::{Args, ValueEnum};
use relayout::plan::{Plan, Tactics};
use relayout::suite::{self, PageAligned, Size};
use relayout::{
    compile_relayout_with, notation, reference, DType, Element, Error, Layout, Options, Target,
};

use crate::conversion_args::ConversionArgs;
use crate::timing;

mod conversions;

use conversions::ConversionJob;

/// The long help of `relayout bench`.
pub const LONG_ABOUT: &str =
    "Time relayout kernels against memcpy of the same bytes and the naive \
per-element loop.

Runs the standard suite (`relayout bench --list` shows its cases with their layouts), the cases \
named, or one --src/--dst pair. For each case, in one process and on the same buffers, three \
contenders are each warmed up and then run in interleaved rounds, and the medians are shown: the \
compiled kernel (on up to --threads threads: one per MiB of destination), memcpy of the tensor's \
bytes (split between as many threads, the count shown in the table) and the naive per-element \
loop (relayout::reference::relayout, always one thread). The naive loop is slow, so it runs \
--naive-runs times where the others run --runs times; the whole suite takes a minute or two. Short calls are repeated within a run so that each timed run lasts at \
least 10 ms.

GB/s counts the tensor's element bytes moved one way, the same for every contender; ratio is \
relayout's GB/s over memcpy's, speed-up relayout's over the naive loop's; compile µs is the median \
time of nine fresh compiles of the kernel (planning and Cranelift, the kernel cache bypassed) \
after a first one; tuned ms is the time from asking for the kernel until tuning had chosen its \
tactics (compiling every candidate, and the runs that timed them, which also move the data; \
the first compile alone with --no-tune). Figures depend on the machine and on \
what else runs on it.

With --conversions (or a --src/--dst pair that converts, with --to or XLA types), the suite's \
converting relayouts are timed instead: fused (the kernel converts as it moves), two passes (the \
relayout in the source type, then a conversion of the whole destination), the same relayout \
without conversion in the larger of the two types, memcpy of the larger side's bytes and the \
naive loop; GB/s count the larger side's bytes.";

/// Fresh compiles of each kernel whose median is the compile column.
pub(super) const COMPILES: usize = 9;

/// Column names of `--format tsv`, in order.
const TSV_COLUMNS: [&str; 11] = [
    "case",
    "dtype",
    "bytes",
    "threads",
    "relayout_gbps",
    "memcpy_gbps",
    "ratio_memcpy",
    "naive_gbps",
    "speedup_naive",
    "compile_us",
    "tuned_ms",
];

/// Column headings of the table and markdown formats (the same columns as [`TSV_COLUMNS`]).
const HEADINGS: [&str; 11] = [
    "case",
    "dtype",
    "bytes",
    "threads",
    "relayout GB/s",
    "memcpy GB/s",
    "ratio",
    "naive GB/s",
    "speed-up",
    "compile µs",
    "tuned ms",
];

/// Column widths of the table format; the first two columns are left-aligned.
const WIDTHS: [usize; 11] = [17, 5, 10, 7, 13, 11, 8, 10, 9, 10, 8];

/// `Options::DEFAULT_TUNE_BUDGET` in milliseconds, the default of `--tune-budget`.
const DEFAULT_TUNE_BUDGET_MS: u64 = Options::DEFAULT_TUNE_BUDGET.as_millis() as u64;

#[derive(Args)]
pub struct BenchArgs {
    /// Suite cases to run (default: all of them, in order).
    #[arg(value_parser = case_names(), conflicts_with = "src")]
    cases: Vec<String>,
    /// Time this source layout instead of the suite (with --dst).
    #[arg(long, requires = "dst")]
    src: Option<String>,
    /// Destination layout of the --src/--dst pair.
    #[arg(long, requires = "src")]
    dst: Option<String>,
    /// Element type of the --src/--dst pair (default f32, or XLA's type).
    #[arg(long, requires = "src")]
    dtype: Option<String>,
    /// A conversion of the --src/--dst pair on the way, timed as `--conversions` times the
    /// suite's (an XLA destination layout that names another type converts too).
    #[command(flatten)]
    convert: ConversionArgs,
    /// Time the suite's converting relayouts (or those of them named): fused, against the
    /// relayout followed by a conversion pass, the relayout alone, memcpy of the larger side's
    /// bytes and the naive loop.
    #[arg(long, conflicts_with = "src")]
    conversions: bool,
    /// Threads for the kernel and for memcpy (the naive loop always runs on one).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    threads: u16,
    /// Timed runs of the kernel and of memcpy, after the warm-up.
    #[arg(long, default_value_t = 9, value_parser = clap::value_parser!(u16).range(1..))]
    runs: u16,
    /// Timed runs of the naive loop, after the warm-up (it is slow: 1 to 3 is plenty).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    naive_runs: u16,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Also draw each case's ratio to memcpy as a bar chart into this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
    /// Read the tuning choices measured on this CPU from this file first (if it exists), and
    /// write every choice back to it at the end, so that later runs skip measuring them.
    #[arg(long, value_name = "FILE")]
    tuning_file: Option<PathBuf>,
    /// Time the default tactics instead of letting relayout tune them
    /// (`Options::tune`; the tuning runs count as warm-up and are not timed).
    #[arg(long)]
    no_tune: bool,
    /// How long the runs that tune each kernel may take, in milliseconds, about
    /// (`Options::tune_budget`): up to six timed runs of every candidate, or one of each, or
    /// one of as many candidates as fit in rank order, never fewer than two candidates.
    #[arg(long, value_name = "MS", default_value_t = DEFAULT_TUNE_BUDGET_MS, conflicts_with = "no_tune")]
    tune_budget: u64,
    /// Time every distinct candidate tactics of each case as a row of its own, named after the
    /// case and the candidate's index in `Tactics::CANDIDATES` (`t2d_f32_8000#5`), instead of
    /// tuning: what tuning chooses among. With conversions, the fused kernel is pinned to each
    /// candidate in turn (every one, as their plans are not compared) and the others tuned.
    #[arg(long, conflicts_with = "no_tune")]
    candidates: bool,
    /// Start the source and destination buffers this many bytes past a page instead of at one
    /// (relayouts without a conversion): 16 is where a `Vec` of more than 128 KiB from glibc's
    /// allocator starts, and a NumPy array's data. memcpy copies between the same buffers.
    #[arg(long, value_name = "BYTES", default_value_t = 0)]
    page_offset: usize,
    /// List the suite's cases with their layouts and sizes, and exit.
    #[arg(long)]
    list: bool,
    /// Use the suite's reduced sizes (tiny tensors: for testing the command, not for timing).
    #[arg(long, hide = true)]
    reduced: bool,
}

/// How `relayout bench` prints its results.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned columns.
    Table,
    /// Tab-separated values with a header line of column names.
    Tsv,
    /// A markdown table, as in the README.
    Markdown,
}

fn case_names() -> PossibleValuesParser {
    let plain = suite::cases(Size::Full).into_iter().map(|c| c.name);
    let converting = suite::conversion_cases(Size::Full)
        .unwrap_or_default()
        .into_iter()
        .map(|c| c.name);
    PossibleValuesParser::new(plain.chain(converting))
}

/// One relayout to time.
struct Job {
    name: String,
    dtype: DType,
    src: Layout,
    dst: Layout,
    /// The tactics to pin, or `None` for the default (tuned unless `--no-tune`).
    tactics: Option<Tactics>,
}

/// What was measured for one job.
struct Row {
    case: String,
    dtype: DType,
    bytes: usize,
    threads: usize,
    relayout_gbps: f64,
    memcpy_gbps: f64,
    naive_gbps: f64,
    compile_us: f64,
    /// Milliseconds from the request to compile until tuning had chosen (compiling every
    /// candidate and the runs that timed them), in this process.
    tuned_ms: f64,
}

impl Row {
    fn ratio_memcpy(&self) -> f64 {
        self.relayout_gbps / self.memcpy_gbps
    }

    fn speedup_naive(&self) -> f64 {
        self.relayout_gbps / self.naive_gbps
    }

    /// The row's cells; `bytes` exact for tsv, in KiB/MiB otherwise; figures to four
    /// significant digits.
    fn cells(&self, format: Format) -> [String; 11] {
        let bytes = match format {
            Format::Tsv => self.bytes.to_string(),
            Format::Table | Format::Markdown => human_bytes(self.bytes),
        };
        [
            self.case.clone(),
            self.dtype.to_string(),
            bytes,
            self.threads.to_string(),
            significant(self.relayout_gbps),
            significant(self.memcpy_gbps),
            significant(self.ratio_memcpy()),
            significant(self.naive_gbps),
            significant(self.speedup_naive()),
            format!("{:.0}", self.compile_us),
            significant(self.tuned_ms),
        ]
    }
}

/// Runs `relayout bench`.
pub fn run(args: BenchArgs) -> Result<(), Box<dyn std::error::Error>> {
    let size = if args.reduced {
        Size::Reduced
    } else {
        Size::Full
    };
    if args.list {
        list(size)?;
        return Ok(());
    }
    let threads = usize::from(args.threads);
    let runs = [args.runs, args.runs, args.naive_runs].map(usize::from);
    if let Some(path) = args.tuning_file.as_deref().filter(|p| p.exists()) {
        relayout::tuning::load(path)?;
    }
    if let Some(mut jobs) = args.conversion_jobs(size)? {
        if args.candidates {
            jobs = jobs.into_iter().flat_map(|job| job.candidates()).collect();
        }
        let budget = Duration::from_millis(args.tune_budget);
        conversions::run(&jobs, threads, runs, budget, args.format)?;
    } else {
        suite(&args, size, threads, runs)?;
    }
    if let Some(path) = &args.tuning_file {
        relayout::tuning::save(path)?;
    }
    Ok(())
}

/// Times the suite's cases (or the --src/--dst pair) that move bits as they are.
fn suite(
    args: &BenchArgs,
    size: Size,
    threads: usize,
    runs: [usize; 3],
) -> Result<(), Box<dyn std::error::Error>> {
    let mut jobs = args.jobs(size)?;
    if args.candidates {
        jobs = jobs
            .into_iter()
            .map(|job| job.candidates())
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .flatten()
            .collect();
    }
    let mut out = std::io::stdout().lock();
    write_header(&mut out, args.format)?;
    let mut rows = Vec::new();
    for job in &jobs {
        let tuning = (!args.no_tune).then(|| Duration::from_millis(args.tune_budget));
        let row = measure(job, threads, tuning, runs, args.page_offset)?;
        write_row(&mut out, args.format, &row.cells(args.format), &WIDTHS)?;
        out.flush()?;
        rows.push(row);
    }
    if let Some(path) = &args.plot {
        std::fs::write(path, bar_chart(&rows, threads, runs[0]))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}

impl BenchArgs {
    /// The converting jobs, if the arguments ask for them: `--conversions` (the named
    /// converting cases, or all), or a --src/--dst pair whose types differ or that scales.
    fn conversion_jobs(&self, size: Size) -> Result<Option<Vec<ConversionJob>>, Error> {
        if let (Some(src), Some(dst)) = (&self.src, &self.dst) {
            let (src, dst) = (notation::parse(src)?, notation::parse(dst)?);
            let (from, to) = crate::element_types(
                self.dtype.as_deref(),
                self.convert.to.as_deref(),
                src.dtype,
                dst.dtype,
            )?;
            let conversion = self.convert.conversion(from.dtype(), to.dtype())?;
            if conversion.is_identity() && self.convert.along.is_none() {
                return Ok(None);
            }
            return Ok(Some(vec![ConversionJob {
                name: "custom".into(),
                src: src.layout,
                dst: dst.layout,
                conversion,
                per_index: self.convert.per_index()?,
                tactics: None,
            }]));
        }
        if self.convert.any() {
            return Err(Error::Unsupported(
                "--to, --scale and --shift convert a --src/--dst pair; the suite's converting \
                 cases are --conversions"
                    .into(),
            ));
        }
        if !self.conversions {
            return Ok(None);
        }
        let cases = suite::conversion_cases(size)?;
        let wanted = |name: &str| self.cases.is_empty() || self.cases.iter().any(|c| c == name);
        cases
            .into_iter()
            .filter(|c| wanted(c.name))
            .map(|case| {
                let (src, dst) = case.layouts()?;
                Ok(ConversionJob {
                    name: case.name.into(),
                    src,
                    dst,
                    conversion: case.conversion,
                    per_index: case.per_index,
                    tactics: None,
                })
            })
            .collect::<Result<Vec<_>, Error>>()
            .map(Some)
    }

    /// The --src/--dst pair, or the named suite cases, or the whole suite.
    fn jobs(&self, size: Size) -> Result<Vec<Job>, Error> {
        if let (Some(src), Some(dst)) = (&self.src, &self.dst) {
            let (src, dst) = (notation::parse(src)?, notation::parse(dst)?);
            let (values, _) = crate::element_types(
                self.dtype.as_deref(),
                self.convert.to.as_deref(),
                src.dtype,
                dst.dtype,
            )?;
            let dtype = values.dtype();
            return Ok(vec![Job {
                name: "custom".into(),
                dtype,
                src: src.layout,
                dst: dst.layout,
                tactics: None,
            }]);
        }
        let cases = match self.cases.as_slice() {
            [] => suite::cases(size),
            names => names
                .iter()
                .map(|name| {
                    suite::case(name, size).ok_or_else(|| {
                        Error::Unsupported(format!("the suite has no case named '{name}'"))
                    })
                })
                .collect::<Result<_, _>>()?,
        };
        cases
            .into_iter()
            .map(|case| {
                let (src, dst) = case.layouts()?;
                Ok(Job {
                    name: case.name.into(),
                    dtype: case.dtype,
                    src,
                    dst,
                    tactics: None,
                })
            })
            .collect()
    }
}

impl Job {
    /// A job for each candidate tactics whose plan differs from every earlier candidate's.
    fn candidates(self) -> Result<Vec<Job>, Error> {
        let elem_size = self.dtype.size();
        let mut plans: Vec<Plan> = Vec::new();
        let mut jobs = Vec::new();
        for (k, &tactics) in Tactics::CANDIDATES.iter().enumerate() {
            let (src, dst, target) = (&self.src, &self.dst, Target::host());
            let plan = match self.dtype.packed() {
                Some(p) => Plan::packed(src, dst, p, tactics, target)?,
                None => Plan::with_tactics(src, dst, elem_size, tactics, target)?,
            };
            if plans.contains(&plan) {
                continue;
            }
            plans.push(plan);
            jobs.push(Job {
                name: format!("{}#{k}", self.name),
                dtype: self.dtype,
                src: self.src.clone(),
                dst: self.dst.clone(),
                tactics: Some(tactics),
            });
        }
        Ok(jobs)
    }
}

/// Prints every case with its size, and the flags that time its layouts as a pair; then the
/// converting cases (`--conversions`).
fn list(size: Size) -> Result<(), Box<dyn std::error::Error>> {
    for case in suite::cases(size) {
        outln!(
            "{:<17} {:<5} {:>10}  {}\n    --src '{}' --dst '{}' --dtype {}",
            case.name,
            case.dtype,
            human_bytes(case.bytes()),
            case.about,
            case.src,
            case.dst,
            case.dtype
        )?;
    }
    outln!("\nconverting cases (--conversions):")?;
    for case in suite::conversion_cases(size)? {
        let c = case.conversion;
        let scale = match (c.scale_shift(), &case.per_index) {
            (Some((scale, shift)), _) => format!(" --scale {scale} --shift {shift}"),
            // Too many values to print: the lists are the library's suite's.
            (None, Some(map)) => format!(
                " --along {} (and {} per-index scales)",
                map.dim(),
                map.len()
            ),
            (None, None) => String::new(),
        };
        outln!(
            "{:<22} {}  {}\n    --src '{}' --dst '{}' --dtype {} --to {}{scale}",
            case.name,
            c,
            case.about,
            case.src,
            case.dst,
            c.from_type(),
            c.to_type()
        )?;
    }
    Ok(())
}

/// Times one job with the storage type of its element size (packed sub-byte elements as their
/// bytes).
fn measure(
    job: &Job,
    threads: usize,
    tune: Option<Duration>,
    runs: [usize; 3],
    page_offset: usize,
) -> Result<Row, Error> {
    let how = Timing {
        threads,
        tune,
        runs,
        page_offset,
    };
    match (job.dtype.packed(), job.dtype.size()) {
        (Some(p), _) => measure_as::<u8>(job, how, |s, d| {
            reference::relayout_packed(&job.src, s, &job.dst, d, p.bits(), None)
        }),
        (None, 1) => measure_as::<u8>(job, how, naive_loop(job)),
        (None, 2) => measure_as::<u16>(job, how, naive_loop(job)),
        (None, 4) => measure_as::<u32>(job, how, naive_loop(job)),
        (None, _) => measure_as::<u64>(job, how, naive_loop(job)),
    }
}

/// How a job is timed: on how many threads, tuned within which budget (if at all), how many
/// runs of relayout, memcpy and the naive loop, and how many bytes past a page the buffers
/// start.
#[derive(Clone, Copy)]
struct Timing {
    threads: usize,
    tune: Option<Duration>,
    runs: [usize; 3],
    page_offset: usize,
}

/// The reference relayout of the job's layouts: the naive loop.
fn naive_loop<T: Copy>(job: &Job) -> impl Fn(&[T], &mut [T]) -> Result<(), Error> + '_ {
    move |s, d| reference::relayout(&job.src, s, &job.dst, d, None)
}

/// Compiles the job's kernel (tuned within the budget `tune`, if one is given) and times it,
/// memcpy and the naive loop (`naive`) on the same buffers.
fn measure_as<T: Element>(
    job: &Job,
    how: Timing,
    naive: impl Fn(&[T], &mut [T]) -> Result<(), Error>,
) -> Result<Row, Error> {
    let Timing {
        threads,
        tune,
        runs,
        page_offset,
    } = how;
    let mut options = Options::new().dtype(job.dtype).threads(threads);
    if let Some(budget) = tune {
        options = options.tune(true).tune_budget(budget);
    }
    if let Some(tactics) = job.tactics {
        options = options.tactics(tactics);
    }
    // Buffer slots of `n` elements: elements, or the bytes of packed ones.
    let slots = |n: usize| job.dtype.packed().map_or(n, |p| p.bytes_for(n));
    let elements = slots(job.src.size());
    // Every page is written before timing, so no contender pays for first touches; a source of
    // distinct values keeps reads off the shared zero page. Every buffer starts a page (or
    // `page_offset` bytes past one), so no contender gains or loses by where the allocator put
    // it.
    let fill = |len: usize| PageAligned::from_fn_past(len, page_offset, |i| T::from_bits(i as u64));
    let src = fill(slots(job.src.cosize()));
    let mut dst =
        PageAligned::filled_past(slots(job.dst.cosize()), page_offset, T::from_bits(u64::MAX));
    // memcpy copies the tensor's bytes; a broadcast source has fewer slots, so it reads its own.
    let spare;
    let copy_from = if src.len() >= elements {
        &src[..elements]
    } else {
        spare = fill(elements);
        &spare[..]
    };
    // The buffers are ready before the clock starts: tuned ms is compiling and tuning alone.
    let requested = std::time::Instant::now();
    let kernel = compile_relayout_with(&job.src, &job.dst, options.clone())?;
    while kernel.tactics().is_none() {
        kernel.run(&src, &mut dst)?;
    }
    let tuned_ms = requested.elapsed().as_secs_f64() * 1e3;
    // The first compile above was the warm-up (and, when tuning, chose the blocking that these
    // fresh compiles of the same pair now use).
    let compiles = (0..COMPILES)
        .map(|_| {
            let fresh = options.clone().cache(false);
            Ok(compile_relayout_with(&job.src, &job.dst, fresh)?.compile_micros())
        })
        .collect::<Result<Vec<f64>, Error>>()?;
    // memcpy gets as many threads as the kernel uses (small tensors run on fewer than asked).
    let threads = kernel.threads();
    let [relayout, memcpy, naive] = timing::interleaved_medians(runs, |i| match i {
        0 => kernel.run(&src, &mut dst),
        1 => {
            parallel_copy(copy_from, &mut dst[..elements], threads);
            Ok(())
        }
        _ => naive(&src, &mut dst),
    })?;
    let bytes = elements * std::mem::size_of::<T>();
    let gbps = |secs: f64| bytes as f64 / secs / 1e9;
    Ok(Row {
        case: job.name.clone(),
        dtype: job.dtype,
        bytes,
        threads,
        relayout_gbps: gbps(relayout),
        memcpy_gbps: gbps(memcpy),
        naive_gbps: gbps(naive),
        compile_us: timing::median(compiles),
        tuned_ms,
    })
}

/// `dst.copy_from_slice(src)` with the slices split evenly into `threads` parts, run the way
/// relayout runs its kernels on several threads: on rayon's pool, part 0 on this thread.
pub(super) fn parallel_copy<T: Copy + Send + Sync>(src: &[T], dst: &mut [T], threads: usize) {
    if threads <= 1 {
        // As a one-thread kernel run: no scope at all.
        dst.copy_from_slice(src);
        return;
    }
    let chunk = src.len().div_ceil(threads).max(1);
    let mut parts = dst.chunks_mut(chunk).zip(src.chunks(chunk));
    let first = parts.next();
    rayon::in_place_scope(|scope| {
        for (to, from) in parts {
            scope.spawn(move |_| to.copy_from_slice(from));
        }
        if let Some((to, from)) = first {
            to.copy_from_slice(from);
        }
    });
}

fn write_header(out: &mut impl std::io::Write, format: Format) -> std::io::Result<()> {
    match format {
        Format::Tsv => writeln!(out, "{}", TSV_COLUMNS.join("\t")),
        Format::Table => write_row(out, format, &HEADINGS.map(String::from), &WIDTHS),
        Format::Markdown => {
            write_row(out, format, &HEADINGS.map(String::from), &WIDTHS)?;
            let rule = ["---"; 11].map(String::from);
            write_row(out, format, &rule, &WIDTHS)
        }
    }
}

/// One line of `cells`: tab-separated, a markdown row, or columns of `widths` (the first two
/// left-aligned).
pub(super) fn write_row(
    out: &mut impl std::io::Write,
    format: Format,
    cells: &[String],
    widths: &[usize],
) -> std::io::Result<()> {
    match format {
        Format::Tsv => writeln!(out, "{}", cells.join("\t")),
        Format::Markdown => writeln!(out, "| {} |", cells.join(" | ")),
        Format::Table => {
            let padded: Vec<String> = cells
                .iter()
                .zip(widths)
                .enumerate()
                .map(|(i, (cell, &width))| match i {
                    0 | 1 => format!("{cell:<width$}"),
                    _ => format!("{cell:>width$}"),
                })
                .collect();
            writeln!(out, "{}", padded.join(" ").trim_end())
        }
    }
}

/// `x` with four significant digits (at least none after the point): `14.59`, `0.02531`, `2664`.
pub(super) fn significant(x: f64) -> String {
    let magnitude = if x == 0.0 || !x.is_finite() {
        0
    } else {
        x.abs().log10().floor() as i32
    };
    let decimals = (3 - magnitude).clamp(0, 12) as usize;
    format!("{x:.decimals$}")
}

/// `16 KiB`, `61.0 MiB`: bytes in binary units.
pub(super) fn human_bytes(bytes: usize) -> String {
    match bytes {
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / (1 << 10) as f64),
        b => format!("{b} B"),
    }
}

/// A horizontal bar chart of each row's ratio to memcpy, as SVG text.
fn bar_chart(rows: &[Row], threads: usize, runs: usize) -> String {
    const LEFT: f64 = 140.0;
    const PLOT: f64 = 520.0;
    const TOP: f64 = 70.0;
    const BAR: f64 = 16.0;
    const STEP: f64 = 22.0;
    let ratios: Vec<f64> = rows.iter().map(Row::ratio_memcpy).collect();
    // The axis runs to 1 (memcpy) or past the largest ratio, in quarters.
    let max = (ratios.iter().fold(1.0f64, |m, &r| m.max(r)) * 4.0).ceil() / 4.0;
    let x = |ratio: f64| LEFT + PLOT * ratio / max;
    let bottom = TOP + STEP * rows.len() as f64;
    let (width, height) = (LEFT + PLOT + 60.0, bottom + 40.0);
    let threads_text = if threads == 1 {
        "1 thread".to_string()
    } else {
        format!("{threads} threads")
    };
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         viewBox=\"0 0 {width} {height}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{LEFT}\" y=\"22\" font-size=\"15\" font-weight=\"bold\">relayout throughput \
         as a fraction of memcpy of the same bytes</text>\n\
         <text x=\"{LEFT}\" y=\"40\" fill=\"#555\">{threads_text}, median of {runs} runs; higher \
         is better; figures depend on the machine</text>\n"
    );
    for quarter in 0..=(max * 4.0) as usize {
        let tick = quarter as f64 / 4.0;
        let tx = x(tick);
        svg += &format!(
            "<line x1=\"{tx:.1}\" y1=\"{TOP}\" x2=\"{tx:.1}\" y2=\"{bottom}\" stroke=\"#ddd\"/>\n\
             <text x=\"{tx:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#555\">{tick:.2}</text>\n",
            bottom + 16.0
        );
    }
    for (i, (row, ratio)) in rows.iter().zip(&ratios).enumerate() {
        let y = TOP + STEP * i as f64 + (STEP - BAR) / 2.0;
        let text_y = y + BAR - 4.0;
        svg += &format!(
            "<text x=\"{:.1}\" y=\"{text_y:.1}\" text-anchor=\"end\">{}</text>\n\
             <rect x=\"{LEFT}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{BAR}\" fill=\"#4878a8\"/>\n\
             <text x=\"{:.1}\" y=\"{text_y:.1}\" fill=\"#333\">{ratio:.2}</text>\n",
            LEFT - 6.0,
            row.case,
            x(*ratio) - LEFT,
            x(*ratio) + 4.0,
        );
    }
    let one = x(1.0);
    svg += &format!(
        "<line x1=\"{one:.1}\" y1=\"{:.1}\" x2=\"{one:.1}\" y2=\"{bottom}\" stroke=\"#c03030\" \
         stroke-dasharray=\"5,3\"/>\n\
         <text x=\"{one:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#c03030\">memcpy</text>\n\
         <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#555\">relayout GB/s ÷ \
         memcpy GB/s</text>\n</svg>\n",
        TOP - 6.0,
        TOP - 8.0,
        LEFT + PLOT / 2.0,
        bottom + 32.0
    );
    svg
}
