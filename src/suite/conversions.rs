//! The suite's relayouts that convert element types on the way: the jobs that pack weights
//! and activations for compute (f32 → bf16, or i8 with per-row scales, into a blocked layout)
//! and back.

use super::{case, Size};
use crate::convert::{Conversion, PerIndex};
use crate::dtype::DType;
use crate::error::Result;
use crate::layout::Layout;

/// One converting relayout of the suite: a plain case of the suite (the layouts and the source
/// type) and the conversion on the way.
#[derive(Debug, Clone, PartialEq)]
pub struct ConversionCase {
    /// The case's name, e.g. `nchw_f32_to_nhwc_bf16`.
    pub name: &'static str,
    /// What it does, in a few words.
    pub about: &'static str,
    /// The source layout as notation-prefixed text.
    pub src: String,
    /// The destination layout as notation-prefixed text.
    pub dst: String,
    /// The conversion (its source type is the source buffer's).
    pub conversion: Conversion,
    /// The per-index affine map on the way, if the case has one (per-row scales of weights).
    pub per_index: Option<PerIndex>,
}

impl ConversionCase {
    /// The parsed source and destination layouts.
    pub fn layouts(&self) -> Result<(Layout, Layout)> {
        Ok((Layout::parse(&self.src)?, Layout::parse(&self.dst)?))
    }
}

/// The converting cases at `size`, in the order `relayout bench --conversions` runs them.
///
/// ```
/// use relayout::suite::{conversion_cases, Size};
/// use relayout::DType;
///
/// let cases = conversion_cases(Size::Full)?;
/// let first = &cases[0];
/// assert_eq!(first.name, "nchw_f32_to_nhwc_bf16");
/// assert_eq!(first.conversion.to_type(), DType::BF16);
/// let weights = cases.iter().find(|c| c.name == "weights_f32_to_i8_o16").unwrap();
/// assert_eq!(weights.per_index.as_ref().map(|m| m.dim()), Some(0)); // per-row scales
/// # Ok::<(), relayout::Error>(())
/// ```
pub fn conversion_cases(size: Size) -> Result<Vec<ConversionCase>> {
    let plain = |name: &str| case(name, size).expect("a case of the suite");
    let s = |full, reduced| size.pick(full, reduced);
    let to = |from, to| Conversion::new(from, to);
    let nchw = plain("nchw_to_nhwc");
    let nhwc = plain("nhwc_to_nchw");
    let (rows, cols) = (s(4096, 24), s(4096, 384));
    let (out, inner) = (s(4096, 64), s(4096, 40));
    // A weight matrix [out, in], row-major, packed 16 output channels innermost (OIo16-style,
    // as NCHW16c packs channels): element (o, i) at (o / 16)·16·in + i·16 + o % 16.
    let weights = format!("cute:({out},{inner}):({inner},1)");
    let blocked = format!("cute:((16,{}),{inner}):((1,{}),16)", out / 16, 16 * inner);
    // Symmetric per-row quantization: one scale per output channel (127 over a made-up row
    // maximum between 1 and 4), no zero points.
    let row_scales: Vec<f64> = (0..out)
        .map(|o| 127.0 / (1.0 + (o % 13) as f64 / 4.0))
        .collect();
    Ok(vec![
        ConversionCase {
            name: "nchw_f32_to_nhwc_bf16",
            about: "NCHW f32 to NHWC bf16",
            src: nchw.src,
            dst: nchw.dst,
            conversion: to(DType::F32, DType::BF16)?,
            per_index: None,
        },
        ConversionCase {
            name: "nhwc_bf16_to_nchw_f32",
            about: "NHWC bf16 back to NCHW f32",
            src: nhwc.src,
            dst: nhwc.dst,
            conversion: to(DType::BF16, DType::F32)?,
            per_index: None,
        },
        ConversionCase {
            name: "f32_to_bf16_xla_tiles",
            about: "f32 to bf16 in XLA (8,128)(2,1) tiles",
            src: format!("xla:f32[{rows},{cols}]{{1,0}}"),
            dst: format!("xla:bf16[{rows},{cols}]{{1,0:T(8,128)(2,1)}}"),
            conversion: to(DType::F32, DType::BF16)?,
            per_index: None,
        },
        ConversionCase {
            name: "weights_f32_to_i8_o16",
            about: "quantize f32 weights to i8 with per-row scales, 16 output channels innermost",
            src: weights,
            dst: blocked,
            conversion: to(DType::F32, DType::I8)?,
            per_index: Some(PerIndex::new(0, &row_scales, &[])?),
        },
    ])
}
