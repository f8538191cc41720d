//! The standard benchmark suite: named relayouts that `relayout bench` and the criterion benches
//! measure, each written as notation text you can paste into `--src` and `--dst`.
//!
//! ```
//! use relayout::suite::{self, Size};
//! use relayout::{compile_relayout_with, reference, DType, Options};
//!
//! // The full-size case, as the benchmarks run it.
//! let case = suite::case("nchw_to_nhwc", Size::Full).unwrap();
//! assert_eq!(case.src, "tvm:[32,64,56,56] lambda n,c,h,w: [n, c, h, w]");
//! assert_eq!(case.dst, "tvm:[32,64,56,56] lambda n,c,h,w: [n, h, w, c]");
//! assert_eq!(case.bytes(), 32 * 64 * 56 * 56 * 4);
//!
//! // The same layout kinds with small extents, checked against the reference loop.
//! let small = suite::case("nchw_to_nhwc", Size::Reduced).unwrap();
//! assert_eq!(small.dtype, DType::F32);
//! let (src, dst) = small.layouts()?;
//! let kernel = compile_relayout_with(&src, &dst, Options::new().dtype(small.dtype))?;
//! let a: Vec<f32> = (0..src.cosize()).map(|i| i as f32).collect();
//! let (mut got, mut want) = (vec![0f32; dst.cosize()], vec![0f32; dst.cosize()]);
//! kernel.run(&a, &mut got)?;
//! reference::relayout(&src, &a, &dst, &mut want, None)?;
//! assert_eq!(got, want);
//! # Ok::<(), relayout::Error>(())
//! ```
//!
//! Every case also says which axis permutation it is ([`Case::permutation`]), which is how the
//! benches run other libraries (`ndarray`, the `transpose` crate) on the same data, and both
//! benchmarks hold their data in [`PageAligned`] buffers.

mod buffer;
mod conversions;

pub use buffer::PageAligned;
pub use conversions::{conversion_cases, ConversionCase};

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::notation;

/// Which extents to build the cases with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Size {
    /// The benchmark sizes: tens to hundreds of MiB, except the two in-cache transposes.
    Full,
    /// The same layout kinds with small extents (at most 16384 elements), for tests.
    Reduced,
}

impl Size {
    fn pick(self, full: usize, reduced: usize) -> usize {
        match self {
            Size::Full => full,
            Size::Reduced => reduced,
        }
    }
}

/// One named relayout of the suite.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    /// The case's name, e.g. `t2d_f32_8000` (the same at every [`Size`]).
    pub name: &'static str,
    /// What it moves, in a few words.
    pub about: &'static str,
    /// The element type.
    pub dtype: DType,
    /// The source layout as notation-prefixed text (see [`notation::parse`]).
    pub src: String,
    /// The destination layout as notation-prefixed text.
    pub dst: String,
    /// The same relayout as an axis permutation of a row-major array.
    pub permutation: Permutation,
}

/// A relayout written as an axis permutation: view the source buffer as a row-major array of
/// `shape`, permute its axes by `axes` (NumPy's `transpose(axes)`: output axis `i` is input axis
/// `axes[i]`), and store the result row-major. Every case of the suite is one, with adjacent
/// axes that stay together merged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Permutation {
    /// The source buffer's shape, row-major.
    pub shape: Vec<usize>,
    /// Output axis `i` is input axis `axes[i]`.
    pub axes: Vec<usize>,
}

impl Permutation {
    fn new(shape: &[usize], axes: &[usize]) -> Permutation {
        Permutation {
            shape: shape.to_vec(),
            axes: axes.to_vec(),
        }
    }

    /// The shape of the destination: `shape` permuted by `axes`.
    pub fn permuted_shape(&self) -> Vec<usize> {
        self.axes.iter().map(|&a| self.shape[a]).collect()
    }

    /// When the permutation transposes each of the consecutive row-major `rows × cols`
    /// matrices the source holds (one 2-D transpose, or a batch of them), `(rows, cols)`.
    pub fn batched_transpose(&self) -> Option<(usize, usize)> {
        match (self.shape.as_slice(), self.axes.as_slice()) {
            (&[rows, cols], [1, 0]) | (&[_, rows, cols], [0, 2, 1]) => Some((rows, cols)),
            _ => None,
        }
    }
}

impl Case {
    fn new(
        name: &'static str,
        about: &'static str,
        dtype: DType,
        src: String,
        dst: String,
        permutation: Permutation,
    ) -> Case {
        Case {
            name,
            about,
            dtype,
            src,
            dst,
            permutation,
        }
    }

    /// Parses the source and destination text.
    ///
    /// Fails if either does not parse, or if an element type the text names (XLA's) is not
    /// [`Case::dtype`].
    pub fn layouts(&self) -> Result<(Layout, Layout)> {
        let parse = |text: &str| {
            let parsed = notation::parse(text)?;
            match parsed.dtype {
                Some(named) if named != self.dtype => Err(Error::ElementType(format!(
                    "{}: the layout names {named}, the case {}",
                    self.name, self.dtype
                ))),
                _ => Ok(parsed.layout),
            }
        };
        Ok((parse(&self.src)?, parse(&self.dst)?))
    }

    /// Number of elements the relayout moves.
    pub fn elements(&self) -> usize {
        self.permutation.shape.iter().product()
    }

    /// Bytes the relayout moves one way (elements times element size): what GB/s figures count.
    pub fn bytes(&self) -> usize {
        self.elements() * self.dtype.size()
    }
}

/// Every case of the suite at the given size, in the order the benchmarks run them.
pub fn cases(size: Size) -> Vec<Case> {
    let s = |full, reduced| size.pick(full, reduced);
    let (n, c, hw) = (s(32, 2), s(64, 32), s(56, 5));
    let (tile_rows, tile_cols) = (s(4096, 24), s(4096, 384));
    vec![
        copy(s(4096, 40), s(4096, 48)),
        transpose_2d("t2d_f32_8192", DType::F32, s(8192, 128)),
        transpose_2d("t2d_f32_8000", DType::F32, s(8000, 100)),
        transpose_2d("t2d_u8_8000", DType::U8, s(8000, 100)),
        transpose_2d("t2d_u16_8000", DType::U16, s(8000, 100)),
        transpose_2d("t2d_f64_8000", DType::F64, s(8000, 100)),
        transpose_2d("t2d_f32_64", DType::F32, s(64, 24)),
        transpose_2d("t2d_f32_512", DType::F32, s(512, 72)),
        nchw_to_nhwc([n, c, hw, hw]),
        nhwc_to_nchw([n, c, hw, hw]),
        nhwc_to_nchw16c([n, c, hw, hw]),
        nchw_to_nchw16c([n, c, hw, hw]),
        xla_tiles(DType::F32, tile_rows, tile_cols),
        xla_tiles(DType::BF16, tile_rows, tile_cols),
        odd_even(DType::F32, s(1 << 24, 16 * 37), 16, false),
        odd_even(DType::F32, s(1 << 24, 16 * 37), 16, true),
        odd_even(DType::BF16, s(1 << 25, 32 * 19), 32, false),
        odd_even(DType::BF16, s(1 << 25, 32 * 19), 32, true),
        permute_3d("perm3d_021", [s(64, 3), s(512, 40), s(512, 24)], [0, 2, 1]),
        permute_3d("perm3d_210", [s(256, 12), s(256, 10), s(256, 8)], [2, 1, 0]),
    ]
}

/// The case called `name` at the given size, if the suite has one.
pub fn case(name: &str, size: Size) -> Option<Case> {
    cases(size).into_iter().find(|c| c.name == name)
}

/// Row-major to row-major.
fn copy(rows: usize, cols: usize) -> Case {
    let text = format!("cute:({rows},{cols}):({cols},1)");
    Case::new(
        "copy_f32",
        "identity copy (row-major to row-major)",
        DType::F32,
        text.clone(),
        text,
        Permutation::new(&[rows * cols], &[0]),
    )
}

/// Square row-major to column-major.
fn transpose_2d(name: &'static str, dtype: DType, n: usize) -> Case {
    Case::new(
        name,
        "2-D transpose",
        dtype,
        format!("cute:({n},{n}):({n},1)"),
        format!("cute:({n},{n}):(1,{n})"),
        Permutation::new(&[n, n], &[1, 0]),
    )
}

/// TVM index map over the logical dims `vars` of `shape`.
fn tvm(shape: [usize; 4], vars: &str, map: &str) -> String {
    let dims = shape.map(|d| d.to_string()).join(",");
    format!("tvm:[{dims}] lambda {vars}: [{map}]")
}

fn nchw_to_nhwc([n, c, h, w]: [usize; 4]) -> Case {
    let vars = "n,c,h,w";
    Case::new(
        "nchw_to_nhwc",
        "NCHW to NHWC",
        DType::F32,
        tvm([n, c, h, w], vars, "n, c, h, w"),
        tvm([n, c, h, w], vars, "n, h, w, c"),
        Permutation::new(&[n, c, h * w], &[0, 2, 1]),
    )
}

fn nhwc_to_nchw([n, c, h, w]: [usize; 4]) -> Case {
    let vars = "n,c,h,w";
    Case::new(
        "nhwc_to_nchw",
        "NHWC to NCHW",
        DType::F32,
        tvm([n, c, h, w], vars, "n, h, w, c"),
        tvm([n, c, h, w], vars, "n, c, h, w"),
        Permutation::new(&[n, h * w, c], &[0, 2, 1]),
    )
}

/// TVM's blocked layout `[n, c//16, h, w, c%16]` over the logical dims `vars`.
const NCHW16C: &str = "n, c//16, h, w, c%16";

fn nhwc_to_nchw16c([n, c, h, w]: [usize; 4]) -> Case {
    let vars = "n,h,w,c";
    Case::new(
        "nhwc_to_nchw16c",
        "NHWC to blocked NCHW16c",
        DType::F32,
        tvm([n, h, w, c], vars, "n, h, w, c"),
        tvm([n, h, w, c], vars, NCHW16C),
        Permutation::new(&[n, h * w, c / 16, 16], &[0, 2, 1, 3]),
    )
}

fn nchw_to_nchw16c([n, c, h, w]: [usize; 4]) -> Case {
    let vars = "n,c,h,w";
    Case::new(
        "nchw_to_nchw16c",
        "NCHW to blocked NCHW16c",
        DType::F32,
        tvm([n, c, h, w], vars, "n, c, h, w"),
        tvm([n, c, h, w], vars, NCHW16C),
        Permutation::new(&[n, c / 16, 16, h * w], &[0, 1, 3, 2]),
    )
}

/// Row-major to XLA's TPU tiling: `T(8,128)`, and for 16-bit types `T(8,128)(2,1)` (row pairs
/// interleaved inside each tile).
fn xla_tiles(dtype: DType, rows: usize, cols: usize) -> Case {
    let (name, about, tiles, permutation) = if dtype.size() == 2 {
        (
            "xla_tile_bf16",
            "XLA (8,128)(2,1) tiles",
            "T(8,128)(2,1)",
            Permutation::new(&[rows / 8, 4, 2, cols / 128, 128], &[0, 3, 1, 4, 2]),
        )
    } else {
        (
            "xla_tile_f32",
            "XLA (8,128) tiles",
            "T(8,128)",
            Permutation::new(&[rows / 8, 8, cols / 128, 128], &[0, 2, 1, 3]),
        )
    };
    Case::new(
        name,
        about,
        dtype,
        format!("xla:{dtype}[{rows},{cols}]{{1,0}}"),
        format!("xla:{dtype}[{rows},{cols}]{{1,0:{tiles}}}"),
        permutation,
    )
}

/// Row-major to Morello's odd/even strips of `strip` elements (evens, then odds), or back.
fn odd_even(dtype: DType, len: usize, strip: usize, back: bool) -> Case {
    let plain = format!("morello:[{len}] [0]");
    let strips = format!("morello:[{len}] [0, 0 oe({strip})]");
    let (batch, half) = (len / strip, strip / 2);
    let name = match (dtype.size() == 2, back) {
        (false, false) => "oddeven_f32",
        (false, true) => "oddeven_f32_rev",
        (true, false) => "oddeven_bf16",
        (true, true) => "oddeven_bf16_rev",
    };
    if back {
        let about = "interleave odd/even strips back";
        let permutation = Permutation::new(&[batch, 2, half], &[0, 2, 1]);
        Case::new(name, about, dtype, strips, plain, permutation)
    } else {
        let about = "de-interleave pairs into odd/even strips";
        let permutation = Permutation::new(&[batch, half, 2], &[0, 2, 1]);
        Case::new(name, about, dtype, plain, strips, permutation)
    }
}

/// Row-major to the dims permuted by `order` (Morello lists physical dims slowest first).
fn permute_3d(name: &'static str, shape: [usize; 3], order: [usize; 3]) -> Case {
    let dims = shape.map(|d| d.to_string()).join(",");
    let order_text = order.map(|d| d.to_string()).join(", ");
    Case::new(
        name,
        "3-D axis permutation",
        DType::F32,
        format!("morello:[{dims}] [0, 1, 2]"),
        format!("morello:[{dims}] [{order_text}]"),
        Permutation::new(&shape, &order),
    )
}
