//! The flags that convert elements on the way (`--to`, `--scale`, `--shift`), shared by the
//! commands that take a pair of layouts.

use clap::Args;
use relayout::{Conversion, DType, Error};

#[derive(Args)]
pub struct ConversionArgs {
    /// Convert to this element type on the way (u8 i8 u16 i16 u32 i32 u64 i64 f16 bf16 f32
    /// f64); an XLA destination layout names it too. Default: the source's type.
    #[arg(long)]
    pub to: Option<String>,
    /// Multiply every element by this on the way: y = scale * x + shift, in f32 (f64 when a
    /// side is f64), then converted to the destination type.
    #[arg(long, allow_hyphen_values = true)]
    pub scale: Option<f64>,
    /// Add this to every element on the way (see --scale).
    #[arg(long, allow_hyphen_values = true)]
    pub shift: Option<f64>,
}

impl ConversionArgs {
    /// Whether any of the flags is given.
    pub fn any(&self) -> bool {
        self.to.is_some() || self.scale.is_some() || self.shift.is_some()
    }

    /// The conversion from `from` to `to`, with the flags' scale and shift if either is given.
    pub fn conversion(&self, from: DType, to: DType) -> Result<Conversion, Error> {
        let conversion = Conversion::new(from, to)?;
        match (self.scale, self.shift) {
            (None, None) => Ok(conversion),
            (scale, shift) => conversion.affine(scale.unwrap_or(1.0), shift.unwrap_or(0.0)),
        }
    }
}
