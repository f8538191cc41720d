//! `relayout convert`: reads a source buffer from a file, relayouts it, and writes the
//! destination buffer to a file (`.npy` or raw little-endian data, by the file names).

mod chunks;
mod files;
mod npy;

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use relayout::{compile_relayout_with, notation, Error, Layout, Options, PerIndex};

use crate::conversion_args::ConversionArgs;

use files::{is_npy, Input, Output};

/// The long help of `relayout convert`.
pub const LONG_ABOUT: &str = "Relayout a buffer from a file into a file.

Reads the source buffer (cosize(src) elements of T, from the lowest offset of the source layout) \
from IN and writes the destination buffer (cosize(dst) elements) to OUT. A file whose name ends \
in .npy is a NumPy array: the input's element type must be T (types NumPy lacks, such as bf16, \
are stored as unsigned integers of their size), it may have any C-ordered shape holding \
cosize(src) elements, and the output is a 1-D array of cosize(dst) elements. Any other file is \
raw little-endian data of exactly that many elements. T is --dtype, or the element type the \
layouts name (XLA's), or the input .npy's, or f32. With --to (or an XLA destination that names \
another type), every element is converted on the way, and --scale and --shift apply \
y = scale * x + shift (with --along D, comma-separated lists of one scale and shift per index \
of dim D: per-channel quantization); the output then holds the destination's type.

The input is memory-mapped and read once. OUT is written to a temporary file in its directory and \
renamed into place when complete, so a failure leaves OUT as it was. Destination padding slots \
hold zeros unless --pad-value says otherwise. Inputs over 256 MiB show a progress bar when stderr \
is a terminal.";

/// Inputs at least this large show a progress bar (when stderr is a terminal).
const PROGRESS_MIN_BYTES: u64 = 256 << 20;

/// The source bytes each step of a conversion moves, about: the progress bar's resolution.
const SLAB_BYTES: usize = 64 << 20;

#[derive(Args)]
pub struct ConvertArgs {
    /// Source layout.
    #[arg(long)]
    src: String,
    /// Destination layout.
    #[arg(long)]
    dst: String,
    /// Element type: u8 i8 u16 i16 f16 bf16 u32 i32 f32 u64 i64 f64 (default: the layouts' or
    /// the input .npy's type, else f32).
    #[arg(long)]
    dtype: Option<String>,
    /// Threads for the kernel.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    threads: u16,
    /// A conversion on the way; the output then holds the destination's type.
    #[command(flatten)]
    convert: ConversionArgs,
    /// Value written to the destination's padding slots (which otherwise hold zeros), a value
    /// of the destination's type.
    #[arg(long, allow_hyphen_values = true)]
    pad_value: Option<String>,
    /// The source buffer: a .npy file, or raw little-endian data.
    #[arg(value_name = "IN")]
    input: PathBuf,
    /// Where to write the destination buffer: a .npy file, or raw little-endian data.
    #[arg(value_name = "OUT")]
    output: PathBuf,
    /// Source bytes per step of the conversion (for testing the split into steps).
    #[arg(long, hide = true, default_value_t = SLAB_BYTES)]
    slab_bytes: usize,
}

/// Runs `relayout convert`.
pub fn run(args: ConvertArgs) -> Result<(), Box<dyn std::error::Error>> {
    if cfg!(target_endian = "big") {
        return Err(Error::Unsupported("convert on a big-endian machine".into()).into());
    }
    let src = notation::parse(&args.src)?;
    let dst = notation::parse(&args.dst)?;
    let input = Input::open(&args.input)?;
    // Without a type from the flags or the layouts, the input .npy's type is the source's.
    let named = match (&args.dtype, src.dtype) {
        (None, None) => input.named_dtype()?.map(|t| t.name()),
        _ => None,
    };
    let dtype_flag = args.dtype.as_deref().or(named);
    let (values, dst_values) =
        crate::element_types(dtype_flag, args.convert.to.as_deref(), src.dtype, dst.dtype)?;
    let dtype = values.dtype();
    let (src, dst) = (src.layout, dst.layout);
    input.check(dtype, src.cosize())?;
    let pad = args
        .pad_value
        .as_deref()
        .map(|v| dst_values.parse(v))
        .transpose()?;
    let conversion = args.convert.conversion(dtype, dst_values.dtype())?;
    let map = args.convert.per_index()?;
    let options = args
        .convert
        .options(conversion, map.clone())
        .threads(usize::from(args.threads));
    // Compiling first reports a shape mismatch or a destination that is not injective before
    // any file is created.
    compile_relayout_with(&src, &dst, options.clone())?;

    let (size, dst_size) = (dtype.size(), dst_values.dtype().size());
    let data_bytes = dst
        .cosize()
        .checked_mul(dst_size)
        .ok_or_else(|| Error::Overflow(format!("a destination of {} elements", dst.cosize())))?;
    let header = if is_npy(&args.output) {
        npy::header_1d(dst_values.dtype(), dst.cosize())
    } else {
        Vec::new()
    };
    let source = input.map()?;
    let mut output = Output::create(&args.output, &header, data_bytes)?;
    if let Some(bits) = pad {
        let bytes = bits.to_le_bytes();
        for slot in output.data().chunks_exact_mut(dst_size) {
            slot.copy_from_slice(&bytes[..dst_size]);
        }
    }
    let total = (src.size() * size) as u64;
    let progress = (std::io::stderr().is_terminal() && total >= PROGRESS_MIN_BYTES)
        .then(|| progress_bar(total));
    let from = source.as_ptr().wrapping_add(input.data_offset());
    let to = output.data().as_mut_ptr();
    let step = (args.slab_bytes / size).max(1);
    match chunks::plan(&src, &dst, step) {
        None => {
            // SAFETY: `check` made sure the mapped data holds cosize(src) elements and the
            // output holds cosize(dst); the two are distinct mappings.
            unsafe { run_part(&src, &dst, &options, from, to, 0, 0)? };
        }
        Some(slabs) => {
            let per_index: usize = src.shape()[slabs.dim + 1..].iter().product();
            for (start, len) in slabs.ranges() {
                let (part_src, at_src) = chunks::slab(&src, slabs.dim, start, len)?;
                let (part_dst, at_dst) = chunks::slab(&dst, slabs.dim, start, len)?;
                // A per-index map along the slabs' dim covers the slab's indices only.
                let options = match &map {
                    Some(map) if map.dim() == slabs.dim => {
                        let part = |i: usize| map.scale_shift(start + i);
                        let (scales, shifts): (Vec<f64>, Vec<f64>) = (0..len).map(part).unzip();
                        let slab_map = PerIndex::new(map.dim(), &scales, &shifts)?;
                        options.clone().per_index(slab_map)
                    }
                    _ => options.clone(),
                };
                // SAFETY: as above; each slab's elements are elements of the whole, at the
                // whole's indices less the slab's start (`chunks::slab`).
                unsafe { run_part(&part_src, &part_dst, &options, from, to, at_src, at_dst)? };
                if let Some(bar) = &progress {
                    bar.inc((len * per_index * size) as u64);
                }
            }
        }
    }
    if let Some(bar) = progress {
        bar.finish_and_clear();
    }
    drop(source);
    output.commit()?;
    Ok(())
}

/// Runs the relayout of `src` to `dst` on the buffers that start `at_src` and `at_dst` elements
/// from `from` and `to`.
///
/// # Safety
/// Every element of `src` (of `dst`) must lie inside the buffer `from` (`to`) points into, at
/// its index from `at_src` (`at_dst`); the two buffers must not overlap.
unsafe fn run_part(
    src: &Layout,
    dst: &Layout,
    options: &Options,
    from: *const u8,
    to: *mut u8,
    at_src: i64,
    at_dst: i64,
) -> Result<(), Error> {
    let kernel = compile_relayout_with(src, dst, options.clone())?;
    let plan = kernel.plan();
    let from = from.wrapping_offset(at_src as isize * plan.elem_size() as isize);
    let to = to.wrapping_offset(at_dst as isize * plan.dst_elem_size() as isize);
    // SAFETY: forwarded from the caller: the kernel reads and writes only the layouts'
    // elements, which lie inside the buffers.
    unsafe { kernel.run_raw(from, to) };
    Ok(())
}

fn progress_bar(total: u64) -> ProgressBar {
    let bar = ProgressBar::new(total);
    if let Ok(style) = ProgressStyle::with_template(
        "{bar:40} {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}",
    ) {
        bar.set_style(style);
    }
    bar
}
