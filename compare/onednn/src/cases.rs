//! The suite's converting cases as oneDNN reorders: both sides as strided views of one index
//! space, with the per-row scales of the weights case as oneDNN source scales.
//!
//! A view is a list of axes, each a run of indices of one logical dim (e.g. the XLA tiling of
//! rows splits each row index `r` into `r / 8`, `(r % 8) / 2` and `r % 2`). The only
//! hand-written part is that split; each side's strides are read off its relayout layout (the
//! offset one step along an axis), and the view is then checked to be the same function as the
//! layout, so a split that does not fit a layout is reported rather than mis-timed.

use std::ffi::c_int;

use relayout::convert::Arithmetic;
use relayout::suite::ConversionCase;
use relayout::{DType, Digit, Layout, PerIndex, Source};

use crate::dnnl::Strided;
use crate::ffi;

/// One axis of a view: `extent` indices of logical dim `dim`, `step` apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Axis {
    dim: usize,
    extent: usize,
    step: usize,
}

/// A converting case as a oneDNN reorder.
#[derive(Debug, Clone, PartialEq)]
pub struct Reorder {
    /// The source tensor.
    pub src: Strided,
    /// The destination tensor.
    pub dst: Strided,
    /// Source scales: the correspondence mask and one scale per index of the masked dims.
    pub src_scales: Option<(c_int, Vec<f32>)>,
}

/// `case` (with its parsed layouts) as a oneDNN reorder, or why it cannot be one.
pub fn reorder(case: &ConversionCase, src: &Layout, dst: &Layout) -> Result<Reorder, String> {
    let axes = axes(case.name, src.shape())?;
    let conversion = case.conversion;
    let src_scales = match &case.per_index {
        Some(_) if conversion.arithmetic() != Arithmetic::F32 => {
            return Err("relayout scales f64 elements in f64, oneDNN in f32".into());
        }
        Some(map) => Some(src_scales(map, &axes)?),
        None => None,
    };
    if conversion.scale_shift().is_some() {
        return Err("a per-tensor affine map: no oneDNN form is written for one".into());
    }
    Ok(Reorder {
        src: strided(src, &axes, conversion.from_type())?,
        dst: strided(dst, &axes, conversion.to_type())?,
        src_scales,
    })
}

/// The view of the case called `name`, whose logical shape is `shape`.
fn axes(name: &str, shape: &[usize]) -> Result<Vec<Axis>, String> {
    let whole = |dim: usize| Axis {
        dim,
        extent: shape[dim],
        step: 1,
    };
    match (name, shape) {
        // NCHW and NHWC: the four logical dims, each whole.
        ("nchw_f32_to_nhwc_bf16" | "nhwc_bf16_to_nchw_f32", [_, _, _, _]) => {
            Ok((0..4).map(whole).collect())
        }
        // XLA's T(8,128)(2,1): rows split into tiles of 8, and those into pairs; columns into
        // tiles of 128.
        ("f32_to_bf16_xla_tiles", &[rows, cols]) => {
            Ok([split(0, rows, &[8, 2, 1])?, split(1, cols, &[128, 1])?].concat())
        }
        // [out, in] weights with 16 output channels innermost: out split into blocks of 16.
        ("weights_f32_to_i8_o16", &[out, _]) => {
            Ok([split(0, out, &[16, 1])?, vec![whole(1)]].concat())
        }
        _ => Err(format!(
            "no oneDNN view is written for this case (logical shape {shape:?})"
        )),
    }
}

/// Axes of logical dim `dim` of extent `n` with the given steps (decreasing, the last 1).
fn split(dim: usize, n: usize, steps: &[usize]) -> Result<Vec<Axis>, String> {
    let mut above = n;
    let mut axes = Vec::new();
    for &step in steps {
        if !above.is_multiple_of(step) {
            return Err(format!(
                "dim {dim} of extent {n} does not split by {steps:?}"
            ));
        }
        axes.push(Axis {
            dim,
            extent: above / step,
            step,
        });
        above = step;
    }
    Ok(axes)
}

/// `layout` viewed through `axes`, with elements of `dtype`: the strides are the offsets one
/// step along each axis, and the view must be the same function as the layout.
fn strided(layout: &Layout, axes: &[Axis], dtype: DType) -> Result<Strided, String> {
    let origin = vec![0; layout.rank()];
    let at = |coord: &[usize]| layout.offset(coord).map_err(|e| e.to_string());
    let base = at(&origin)?;
    let mut strides = Vec::new();
    for axis in axes {
        let mut coord = origin.clone();
        coord[axis.dim] = axis.step;
        strides.push(at(&coord)? - base);
    }
    let digits = axes
        .iter()
        .zip(&strides)
        .map(|(a, &s)| Digit::new(Source::Dim(a.dim), a.step, Some(a.extent), s))
        .collect();
    let view = Layout::new(layout.shape(), digits).map_err(|e| e.to_string())?;
    if !view.same_function(layout) {
        return Err(format!(
            "{layout} is not the strided view {strides:?} of the axes {axes:?}"
        ));
    }
    Ok(Strided {
        dims: axes.iter().map(|a| a.extent as i64).collect(),
        strides,
        dtype: onednn_type(dtype)?,
    })
}

/// oneDNN's name for `dtype`, among the types of the suite's conversions.
fn onednn_type(dtype: DType) -> Result<ffi::DataType, String> {
    match dtype {
        DType::F32 => Ok(ffi::F32),
        DType::BF16 => Ok(ffi::BF16),
        DType::I8 => Ok(ffi::S8),
        other => Err(format!("{other} (this program maps only f32, bf16 and i8)")),
    }
}

/// The per-index map as oneDNN source scales over `axes`: the mask of the axes of the map's dim
/// and the scales rounded to f32, as relayout's f32 arithmetic rounds them. oneDNN indexes the
/// scales by the row-major index over the masked axes, which must therefore be the map's dim
/// itself, whole and in order.
fn src_scales(map: &PerIndex, axes: &[Axis]) -> Result<(c_int, Vec<f32>), String> {
    let dim = map.dim();
    let mut mask = 0;
    let mut covered = 1;
    for (k, axis) in axes.iter().enumerate().rev().filter(|(_, a)| a.dim == dim) {
        if axis.step != covered {
            return Err(format!("the axes of dim {dim} are not in row-major order"));
        }
        covered *= axis.extent;
        mask |= 1 << k;
    }
    if covered != map.len() {
        return Err(format!(
            "{} scales for dim {dim} of {covered} indices",
            map.len()
        ));
    }
    let (scales, shifts): (Vec<f64>, Vec<f64>) = (0..map.len()).map(|i| map.scale_shift(i)).unzip();
    if shifts.iter().any(|&s| s != 0.0) {
        return Err(
            "per-index shifts: oneDNN's reorder has integer zero points, not an f32 shift".into(),
        );
    }
    Ok((mask, scales.into_iter().map(|s| s as f32).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use relayout::suite::{conversion_cases, Size};

    fn case(name: &str) -> ConversionCase {
        let cases = conversion_cases(Size::Reduced).expect("the suite's cases");
        cases.into_iter().find(|c| c.name == name).expect("a case")
    }

    fn form(name: &str) -> Result<Reorder, String> {
        let case = case(name);
        let (src, dst) = case.layouts().expect("layouts");
        reorder(&case, &src, &dst)
    }

    #[test]
    fn nchw_to_nhwc_is_a_permutation_of_strides() {
        // n, c, h, w = 2, 32, 5, 5.
        let r = form("nchw_f32_to_nhwc_bf16").expect("a view");
        assert_eq!(r.src.dims, [2, 32, 5, 5]);
        assert_eq!(r.src.strides, [800, 25, 5, 1]);
        assert_eq!(r.dst.strides, [800, 1, 160, 32]);
        assert_eq!((r.src.dtype, r.dst.dtype), (ffi::F32, ffi::BF16));
    }

    #[test]
    fn xla_tiles_are_a_five_dim_view() {
        // 24 × 384: tiles of 8 × 128 (1024 elements), row pairs interleaved inside.
        let r = form("f32_to_bf16_xla_tiles").expect("a view");
        assert_eq!(r.src.dims, [3, 4, 2, 3, 128]);
        assert_eq!(r.src.strides, [8 * 384, 2 * 384, 384, 128, 1]);
        assert_eq!(r.dst.strides, [3 * 1024, 256, 1, 1024, 2]);
    }

    #[test]
    fn weights_scale_rows_through_both_row_axes() {
        // 64 × 40, 16 rows innermost.
        let r = form("weights_f32_to_i8_o16").expect("a view");
        assert_eq!(r.src.dims, [4, 16, 40]);
        assert_eq!(r.dst.strides, [640, 1, 16]);
        let (mask, scales) = r.src_scales.expect("scales");
        assert_eq!((mask, scales.len()), (0b011, 64));
        assert_eq!(scales[1], (127.0 / 1.25) as f32);
    }

    #[test]
    fn a_split_that_misses_the_tiles_is_refused() {
        let case = case("f32_to_bf16_xla_tiles");
        let (src, dst) = case.layouts().expect("layouts");
        let rows_whole = split(0, 24, &[1]).expect("a split");
        let axes = [rows_whole, split(1, 384, &[128, 1]).expect("a split")].concat();
        assert!(strided(&src, &axes, DType::F32).is_ok());
        assert!(strided(&dst, &axes, DType::BF16).is_err());
    }
}
