//! The flags that convert elements on the way (`--to`, `--scale`, `--shift`, `--along`), shared
//! by the commands that take a pair of layouts.

use clap::Args;
use relayout::{Conversion, DType, Error, Options, PerIndex};

#[derive(Args)]
pub struct ConversionArgs {
    /// Convert to this element type on the way (u8 i8 u16 i16 u32 i32 u64 i64 f16 bf16 f32
    /// f64); an XLA destination layout names it too. Default: the source's type.
    #[arg(long)]
    pub to: Option<String>,
    /// Multiply every element by this on the way: y = scale * x + shift, in f32 (f64 when a
    /// side is f64), then converted to the destination type. With --along, one scale per index
    /// of that dim, comma-separated (per-channel scales).
    #[arg(
        long,
        allow_hyphen_values = true,
        value_delimiter = ',',
        value_name = "A[,A...]"
    )]
    pub scale: Vec<f64>,
    /// Add this to every element on the way (see --scale). With --along, one shift per index
    /// of that dim, comma-separated (zero points); without it the shifts are 0.
    #[arg(
        long,
        allow_hyphen_values = true,
        value_delimiter = ',',
        value_name = "B[,B...]"
    )]
    pub shift: Vec<f64>,
    /// Take the --scale and --shift lists per index of logical dim D (0 is the outermost dim
    /// of the layouts' shape): the element at coordinate x gets scale[x[D]] and shift[x[D]].
    /// Each list must have one value per index of D (or --shift none).
    #[arg(long, value_name = "D")]
    pub along: Option<usize>,
}

impl ConversionArgs {
    /// Whether any of the flags is given.
    pub fn any(&self) -> bool {
        self.to.is_some()
            || !self.scale.is_empty()
            || !self.shift.is_empty()
            || self.along.is_some()
    }

    /// The conversion from `from` to `to`, with the flags' per-tensor scale and shift if either
    /// is given without --along.
    pub fn conversion(&self, from: DType, to: DType) -> Result<Conversion, Error> {
        let conversion = Conversion::new(from, to)?;
        if self.along.is_some() {
            return Ok(conversion);
        }
        let single = |what: &str, list: &[f64], default: f64| match list {
            [] => Ok(default),
            [x] => Ok(*x),
            _ => Err(Error::Conversion(format!(
                "{} values for --{what}: a list takes --along D, the dim it runs along",
                list.len()
            ))),
        };
        match (self.scale.is_empty(), self.shift.is_empty()) {
            (true, true) => Ok(conversion),
            _ => conversion.affine(
                single("scale", &self.scale, 1.0)?,
                single("shift", &self.shift, 0.0)?,
            ),
        }
    }

    /// The per-index map of --along, if given (its scales default to 1 when only --shift is
    /// given).
    pub fn per_index(&self) -> Result<Option<PerIndex>, Error> {
        let Some(dim) = self.along else {
            return Ok(None);
        };
        let ones;
        let scales = match (self.scale.as_slice(), self.shift.len()) {
            ([], 0) => {
                return Err(Error::Conversion(format!(
                    "--along {dim} without --scale or --shift lists"
                )))
            }
            ([], n) => {
                ones = vec![1.0; n];
                &ones[..]
            }
            (scales, _) => scales,
        };
        PerIndex::new(dim, scales, &self.shift).map(Some)
    }

    /// Options converting by `conversion`, with the per-index map `map` if there is one.
    pub fn options(&self, conversion: Conversion, map: Option<PerIndex>) -> Options {
        let options = Options::new().convert(conversion);
        match map {
            Some(map) => options.per_index(map),
            None => options,
        }
    }
}
