//! The relayout command line. `relayout --help` lists the commands; with no command it runs
//! the demo: compile a relayout, show its plan and IR, check it and time it.

/// `println!` that returns a failed write (`std::io::Result`) instead of panicking, so that a
/// closed pipe (`relayout bench --list | head -3`) ends the command quietly (see `main`).
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*)
    }};
}

/// `print!` as [`outln!`] is `println!`.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        write!(std::io::stdout().lock(), $($arg)*)
    }};
}

mod bench;
mod conversion_args;
mod convert;
mod cute_cmd;
mod demo;
mod timing;
mod values;

use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use conversion_args::ConversionArgs;
use relayout::plan::Packed;
use relayout::{
    compile_relayout_with, notation, packing, reference, Conversion, DType, Element, Error, Layout,
    Options, PerIndex, Relayout,
};
use values::{Storage, ValueType};

#[derive(Parser)]
#[command(name = "relayout", version, about = "JIT-compiled tensor relayouts", long_about = LONG_ABOUT)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

const LONG_ABOUT: &str = "JIT-compiled tensor relayouts.

Layouts are notation-prefixed strings:
  cute:(2,(2,2)):(4,(1,2))          CuTe or MoYe text
  xla:f32[3,5]{1,0:T(2,2)}          XLA shape with layout (sets the element type)
  tvm:[16,64,64,128] lambda n,h,w,c: [n, c//4, h, w, c%4]
  morello:[6,8] [1, 0, 1 p(4)]

With no command, runs the demo: compiles a relayout, prints its plan and IR, checks it
against the reference and times it against the naive loop and memcpy.";

#[derive(Subcommand)]
enum Command {
    /// Print the buffer offset of every logical coordinate, in row-major order, on one line.
    Offsets {
        /// The layout.
        layout: String,
    },
    /// Run the kernel on a source whose element i holds i; print the whole destination buffer.
    Apply(PairArgs),
    /// Print the loop nest the planner chose.
    Plan(PairArgs),
    /// Print the Cranelift IR of the kernel.
    Clif(PairArgs),
    /// Print the kernel's machine code as assembly.
    Asm(PairArgs),
    /// Run the kernel and the reference on random data and compare them bit for bit.
    Check(PairArgs),
    /// CuTe's layout algebra: print the result of OP on a CuTe layout, in CuTe notation.
    Cute {
        #[command(subcommand)]
        op: cute_cmd::CuteOp,
    },
    /// Print a rank-2 CuTe layout as a grid of offsets, like CuTe's and MoYe's print_layout.
    Table(cute_cmd::TableArgs),
    /// Time the benchmark suite, or a pair, against memcpy and the naive loop.
    #[command(long_about = bench::LONG_ABOUT)]
    Bench(bench::BenchArgs),
    /// Relayout a buffer from a file (.npy or raw) into a file.
    #[command(long_about = convert::LONG_ABOUT)]
    Convert(convert::ConvertArgs),
    /// Run the demo (the same as no command).
    Demo,
}

#[derive(Args)]
struct PairArgs {
    /// Source layout.
    #[arg(long)]
    src: String,
    /// Destination layout.
    #[arg(long)]
    dst: String,
    /// Element type: u8 i8 u16 i16 f16 bf16 u32 i32 f32 u64 i64 f64 pred c64 c128, an 8-bit
    /// float (f8e5m2 f8e4m3 f8e4m3fn f8e4m3b11fnuz f8e5m2fnuz f8e4m3fnuz f8e3m4 f8e8m0fnu), or a
    /// sub-byte type (i4 u4 f4e2m1fn i2 u2: packed two or four to a byte, except in XLA
    /// layouts without E(n), which hold one to a byte); default f32,
    /// or the type the XLA layouts name. With --to, the source's type.
    #[arg(long)]
    dtype: Option<String>,
    #[command(flatten)]
    convert: ConversionArgs,
    /// Value written to the destination's padding slots (which are otherwise left alone), a
    /// value of the destination type.
    #[arg(long, allow_hyphen_values = true)]
    pad_value: Option<String>,
}

/// A parsed pair with its element types and compiled kernel.
struct Pair {
    src: Layout,
    dst: Layout,
    /// The source's element type.
    values: ValueType,
    /// The destination's element type (the source's unless the pair converts).
    dst_values: ValueType,
    conversion: Conversion,
    /// The per-index map of `--along`, if given.
    per_index: Option<PerIndex>,
    pad_bits: Option<u128>,
    kernel: Relayout,
}

impl PairArgs {
    fn compile(&self) -> Result<Pair, Error> {
        let src = notation::parse(&self.src)?;
        let dst = notation::parse(&self.dst)?;
        let (values, dst_values) = element_types(
            self.dtype.as_deref(),
            self.convert.to.as_deref(),
            src.dtype,
            dst.dtype,
        )?;
        // XLA gives sub-byte elements a byte each unless `E(n)` packs them; both sides alike.
        let (values, dst_values) = match (src.packed, dst.packed) {
            (Some(false), _) | (_, Some(false)) => (values.unpacked(), dst_values.unpacked()),
            _ => (values, dst_values),
        };
        if let (Some(a), Some(b)) = (src.packed, dst.packed) {
            if a != b && values.dtype().packed().is_some() {
                return Err(Error::Unsupported(format!(
                    "{} elements packed on one side and a byte each on the other",
                    values.dtype()
                )));
            }
        }
        let conversion = self
            .convert
            .conversion(values.dtype(), dst_values.dtype())?;
        let pad_bits = self
            .pad_value
            .as_deref()
            .map(|v| dst_values.parse(v))
            .transpose()?;
        let per_index = self.convert.per_index()?;
        let mut options = match values.storage() {
            // Sub-byte elements a byte each move as bytes (a per-index map goes the converting
            // way, which refuses their types).
            Storage::Whole(1) if values.dtype().packed().is_some() && per_index.is_none() => {
                Options::new().elem_size(1)
            }
            _ => self.convert.options(conversion, per_index.clone()),
        };
        if let Some(bits) = pad_bits {
            options = options.pad_bits_wide(bits);
        }
        let kernel = compile_relayout_with(&src.layout, &dst.layout, options)?;
        Ok(Pair {
            src: src.layout,
            dst: dst.layout,
            values,
            dst_values,
            conversion,
            per_index,
            pad_bits,
            kernel,
        })
    }
}

/// Most elements a command holds in memory (`offsets`, `apply`, `check`): they keep whole
/// buffers as 64-bit values, and a larger layout would exhaust memory rather than fail cleanly.
const MAX_ELEMENTS: usize = 1 << 26;

fn within_memory_limit(elements: usize) -> Result<(), Error> {
    if elements > MAX_ELEMENTS {
        return Err(Error::Unsupported(format!(
            "a buffer of {elements} elements; the command line handles at most {MAX_ELEMENTS}"
        )));
    }
    Ok(())
}

impl Pair {
    fn within_memory_limit(&self) -> Result<(), Error> {
        within_memory_limit(self.src.cosize())?;
        within_memory_limit(self.dst.cosize())
    }
}

/// The source and destination element types from `--dtype`, `--to` and the types the layouts
/// name: `--dtype` and the source layout's type must agree, as must `--to` and the
/// destination's. The source's type defaults to f32 (or, without `--to`, the destination
/// layout's type); the destination's to the source's.
pub(crate) fn element_types(
    dtype: Option<&str>,
    to: Option<&str>,
    src: Option<DType>,
    dst: Option<DType>,
) -> Result<(ValueType, ValueType), Error> {
    let agree = |flag: Option<&str>, named: Option<DType>| -> Result<Option<DType>, Error> {
        let flag = flag.map(str::parse::<DType>).transpose()?;
        match (flag, named) {
            (Some(a), Some(b)) if a != b => Err(Error::ElementType(format!(
                "conflicting element types {a} and {b} (from the flags and the layouts)"
            ))),
            (a, b) => Ok(a.or(b)),
        }
    };
    let source = agree(dtype, src)?;
    let destination = agree(to, dst)?;
    let from = match (source, to) {
        (Some(t), _) => t,
        (None, None) => dst.unwrap_or(DType::F32),
        (None, Some(_)) => DType::F32,
    };
    Ok((
        ValueType::new(from),
        ValueType::new(destination.unwrap_or(from)),
    ))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.command.unwrap_or(Command::Demo)) {
        Ok(()) => ExitCode::SUCCESS,
        // Whoever reads the output stopped reading (`| head`): nothing is wrong.
        Err(e) if is_broken_pipe(&*e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("relayout: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Whether `e` is a write to a pipe whose reader has gone.
fn is_broken_pipe(e: &(dyn std::error::Error + 'static)) -> bool {
    e.downcast_ref::<std::io::Error>()
        .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
}

fn run(command: Command) -> Result<(), Box<dyn std::error::Error>> {
    match command {
        Command::Offsets { layout } => {
            let layout = Layout::parse(&layout)?;
            within_memory_limit(layout.size())?;
            outln!("{}", join(layout.offsets()))?;
        }
        Command::Apply(args) => {
            let pair = args.compile()?;
            pair.within_memory_limit()?;
            let values = pair.values;
            let src: Vec<u128> = (0..pair.src.cosize() as u64)
                .map(|i| values.encode_index(i))
                .collect();
            let dst_values = pair.dst_values;
            let mut dst = vec![dst_values.mask(); pair.dst.cosize()];
            with_element_types(values, dst_values, |run| {
                run.kernel(&pair.kernel, &src, &mut dst)
            })?;
            outln!("{}", join(dst.iter().map(|&b| dst_values.format(b))))?;
        }
        Command::Plan(args) => out!("{}", args.compile()?.kernel.plan())?,
        Command::Clif(args) => out!("{}", args.compile()?.kernel.clif()?)?,
        Command::Asm(args) => out!("{}", args.compile()?.kernel.asm()?)?,
        Command::Check(args) => {
            let pair = args.compile()?;
            pair.within_memory_limit()?;
            let mismatches = check(&pair)?;
            if mismatches > 0 {
                return Err(Error::Codegen(format!(
                    "{mismatches} of {} destination slots differ from the reference",
                    pair.dst.cosize()
                ))
                .into());
            }
            outln!(
                "ok: {} elements, {} destination slots match the reference bit for bit",
                pair.src.size(),
                pair.dst.cosize()
            )?;
        }
        Command::Cute { op } => cute_cmd::cute(&op)?,
        Command::Table(args) => cute_cmd::table(&args)?,
        Command::Demo => demo::run()?,
        Command::Bench(args) => bench::run(args)?,
        Command::Convert(args) => convert::run(args)?,
    }
    Ok(())
}

/// Runs the kernel and the reference on the same random source; returns how many slots differ.
fn check(pair: &Pair) -> Result<usize, Error> {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state as u128
    };
    let src: Vec<u128> = (0..pair.src.cosize())
        .map(|_| (next() | next() << 64) & pair.values.mask())
        .collect();
    let fill = !next() & pair.dst_values.mask();
    let mut got = vec![fill; pair.dst.cosize()];
    let mut want = got.clone();
    with_element_types(pair.values, pair.dst_values, |run| {
        run.kernel(&pair.kernel, &src, &mut got)?;
        run.reference(
            &pair.src,
            &src,
            &pair.dst,
            &mut want,
            (pair.conversion, pair.per_index.as_ref()),
            pair.pad_bits,
        )
    })?;
    Ok(got.iter().zip(&want).filter(|(g, w)| g != w).count())
}

/// Calls `f` with a runner for the storage of the source's and the destination's elements.
fn with_element_types<R>(src: ValueType, dst: ValueType, f: impl FnOnce(&dyn Runner) -> R) -> R {
    fn to<S: Element, R>(dst: ValueType, f: impl FnOnce(&dyn Runner) -> R) -> R {
        match dst.storage() {
            Storage::Whole(1) => f(&Typed::<S, u8>::default()),
            Storage::Whole(2) => f(&Typed::<S, u16>::default()),
            Storage::Whole(4) => f(&Typed::<S, u32>::default()),
            _ => f(&Typed::<S, u64>::default()),
        }
    }
    match src.storage() {
        // Packed and 16-byte elements never convert: the destination stores them alike.
        Storage::Packed(p) => f(&PackedBits(p)),
        Storage::Halves => f(&Halves),
        Storage::Whole(1) => to::<u8, R>(dst, f),
        Storage::Whole(2) => to::<u16, R>(dst, f),
        Storage::Whole(4) => to::<u32, R>(dst, f),
        Storage::Whole(_) => to::<u64, R>(dst, f),
    }
}

/// Runs kernels and the reference on element bits held as `u128`.
trait Runner {
    fn kernel(&self, kernel: &Relayout, src: &[u128], dst: &mut [u128]) -> Result<(), Error>;
    fn reference(
        &self,
        src_layout: &Layout,
        src: &[u128],
        dst_layout: &Layout,
        dst: &mut [u128],
        conversion: (Conversion, Option<&PerIndex>),
        pad: Option<u128>,
    ) -> Result<(), Error>;
}

/// A [`Runner`] with source elements stored as `S` and destination elements as `D`.
struct Typed<S, D>(std::marker::PhantomData<(S, D)>);

impl<S, D> Default for Typed<S, D> {
    fn default() -> Self {
        Typed(std::marker::PhantomData)
    }
}

fn narrow<T: Element>(bits: &[u128]) -> Vec<T> {
    bits.iter().map(|&b| T::from_bits(b as u64)).collect()
}

fn widen<T: Element>(from: &[T], to: &mut [u128]) {
    for (t, v) in to.iter_mut().zip(from) {
        *t = v.to_bits() as u128;
    }
}

impl<S: Element, D: Element> Runner for Typed<S, D> {
    fn kernel(&self, kernel: &Relayout, src: &[u128], dst: &mut [u128]) -> Result<(), Error> {
        let mut out: Vec<D> = narrow(dst);
        kernel.run(&narrow::<S>(src), &mut out)?;
        widen(&out, dst);
        Ok(())
    }

    fn reference(
        &self,
        src_layout: &Layout,
        src: &[u128],
        dst_layout: &Layout,
        dst: &mut [u128],
        (conversion, map): (Conversion, Option<&PerIndex>),
        pad: Option<u128>,
    ) -> Result<(), Error> {
        let mut out: Vec<D> = narrow(dst);
        let pad = pad.map(|p| D::from_bits(p as u64));
        let input = narrow::<S>(src);
        let (from, to) = (src_layout, dst_layout);
        match map {
            Some(m) => {
                reference::relayout_per_index(from, &input, to, &mut out, conversion, m, pad)
            }
            None => reference::relayout_converted(from, &input, to, &mut out, conversion, pad),
        }?;
        widen(&out, dst);
        Ok(())
    }
}

/// A [`Runner`] for sub-byte elements packed into bytes.
struct PackedBits(Packed);

impl PackedBits {
    fn pack(&self, values: &[u128]) -> Result<Vec<u8>, Error> {
        let mut bytes = vec![0; self.0.bytes_for(values.len())];
        for (i, &v) in values.iter().enumerate() {
            packing::set(&mut bytes, i, self.0, v as u8)?;
        }
        Ok(bytes)
    }

    fn unpack(&self, bytes: &[u8], values: &mut [u128]) -> Result<(), Error> {
        for (i, v) in values.iter_mut().enumerate() {
            *v = packing::get(bytes, i, self.0)? as u128;
        }
        Ok(())
    }
}

impl Runner for PackedBits {
    fn kernel(&self, kernel: &Relayout, src: &[u128], dst: &mut [u128]) -> Result<(), Error> {
        let mut out = self.pack(dst)?;
        kernel.run(&self.pack(src)?, &mut out)?;
        self.unpack(&out, dst)
    }

    fn reference(
        &self,
        src_layout: &Layout,
        src: &[u128],
        dst_layout: &Layout,
        dst: &mut [u128],
        _: (Conversion, Option<&PerIndex>),
        pad: Option<u128>,
    ) -> Result<(), Error> {
        let mut out = self.pack(dst)?;
        let (input, bits) = (self.pack(src)?, self.0.bits());
        let pad = pad.map(|p| p as u8);
        reference::relayout_packed(src_layout, &input, dst_layout, &mut out, bits, pad)?;
        self.unpack(&out, dst)
    }
}

/// A [`Runner`] for 16-byte elements: the kernel moves their 8-byte halves, the reference
/// whole elements.
struct Halves;

fn halves(values: &[u128]) -> Vec<u64> {
    values
        .iter()
        .flat_map(|&v| [v as u64, (v >> 64) as u64])
        .collect()
}

impl Runner for Halves {
    fn kernel(&self, kernel: &Relayout, src: &[u128], dst: &mut [u128]) -> Result<(), Error> {
        let mut out = halves(dst);
        kernel.run(&halves(src), &mut out)?;
        for (v, pair) in dst.iter_mut().zip(out.chunks_exact(2)) {
            *v = pair[0] as u128 | (pair[1] as u128) << 64;
        }
        Ok(())
    }

    fn reference(
        &self,
        src_layout: &Layout,
        src: &[u128],
        dst_layout: &Layout,
        dst: &mut [u128],
        _: (Conversion, Option<&PerIndex>),
        pad: Option<u128>,
    ) -> Result<(), Error> {
        reference::relayout(src_layout, src, dst_layout, dst, pad)
    }
}

fn join<T: ToString>(items: impl IntoIterator<Item = T>) -> String {
    items
        .into_iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(" ")
}
