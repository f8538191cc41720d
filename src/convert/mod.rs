//! Converting element types on the way: a [`Conversion`] from one [`DType`] to another, with an
//! optional per-tensor affine map `y = scale · x + shift`, applied by the kernel as it moves each
//! element (one pass over memory, not a relayout followed by a conversion).
//!
//! ```
//! use relayout::{compile_relayout_with, Conversion, DType, Layout, Options};
//!
//! let src = Layout::row_major(&[2, 3])?;
//! let dst = Layout::col_major(&[2, 3])?;
//! // f32 → i8 quantization: y = round(2x + 1), saturated to [-128, 127], NaN to 0.
//! let q = Conversion::new(DType::F32, DType::I8)?.affine(2.0, 1.0)?;
//! let r = compile_relayout_with(&src, &dst, Options::new().convert(q))?;
//! let mut out = [0i8; 6];
//! r.run(&[0.0f32, 0.25, 1.0, -1.0, 100.0, f32::NAN], &mut out)?;
//! assert_eq!(out, [1, -1, 2, 127, 3, 0]);
//! # Ok::<(), relayout::Error>(())
//! ```
//!
//! # The rules
//! - **float → float** (`f16 bf16 f32 f64`): round to nearest, ties to even; subnormals converted
//!   exactly (nothing is flushed to zero); values too large become ±∞; ±0 and ±∞ are kept; a NaN
//!   stays a NaN, made quiet, keeping its sign and the top bits of its payload.
//! - **integer → integer** (`u8 i8 u16 i16 u32 i32 u64 i64`): exact when the value fits the
//!   target, else the nearest bound (saturation), signed to unsigned included.
//! - **float → integer**: round to nearest, ties to even, then saturate; NaN → 0.
//! - **integer → float**: exact where representable, else round to nearest, ties to even (one
//!   rounding, however wide the integer).
//! - **affine map**: computed in `f32`, or in `f64` when either side is `f64`: the element is
//!   converted to that type, multiplied by `scale`, then `shift` is added, each operation
//!   rounded (no fused multiply-add), and the result converted to the target type by the rules
//!   above. `scale` and `shift` are rounded to `f32` when the arithmetic is in `f32`. A NaN
//!   that the arithmetic itself makes (∞ · 0) is the machine's default NaN.
//!
//! Types without a numeric value of this kind (`pred`, the 8-bit floats, the complex and
//! sub-byte types) move only as themselves.
//!
//! # Per-index maps
//! A [`PerIndex`] map gives each index of one logical dim its own scale and shift (per-channel
//! quantization): the element at coordinate `x` takes `scales[x[dim]]` and `shifts[x[dim]]`,
//! computed by the same rules as a per-tensor map. [`Conversion`] stays a small `Copy` value;
//! the lists live in the `PerIndex` (shared, cheap to clone), given beside the conversion with
//! [`Options::per_index`](crate::Options::per_index).
//!
//! ```
//! use relayout::{compile_relayout_with, Conversion, DType, Layout, Options, PerIndex};
//!
//! // A 2×3 weight matrix quantized to i8 with one scale and zero point per row (dim 0).
//! let src = Layout::row_major(&[2, 3])?;
//! let dst = Layout::col_major(&[2, 3])?;
//! let rows = PerIndex::new(0, &[10.0, 100.0], &[0.0, -1.0])?;
//! let q = Conversion::new(DType::F32, DType::I8)?;
//! let r = compile_relayout_with(&src, &dst, Options::new().convert(q).per_index(rows))?;
//! let mut out = [0i8; 6];
//! r.run(&[0.1f32, 0.2, 0.3, 0.01, 0.02, 5.0], &mut out)?;
//! assert_eq!(out, [1, 0, 2, 1, 3, 127]); // column-major: (0,0) (1,0) (0,1) (1,1) ...
//! # Ok::<(), relayout::Error>(())
//! ```

mod rules;

use std::fmt;
use std::sync::Arc;

use crate::dtype::DType;
use crate::error::{Error, Result};

/// A conversion of every element from one type to another, with an optional affine map.
///
/// Give it to [`Options::convert`](crate::Options::convert); the module docs give the rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Conversion {
    from: DType,
    to: DType,
    affine: Option<Affine>,
}

/// `y = scale · x + shift`, kept as the bits of two finite `f64`s (so that conversions can be
/// compared and hashed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Affine {
    scale: u64,
    shift: u64,
}

/// The arithmetic type of an affine map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arithmetic {
    /// Single precision.
    F32,
    /// Double precision (when either side is `f64`).
    F64,
}

/// What an element type is, for converting: an integer of some width, or an IEEE-style binary
/// float with some exponent and mantissa bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A two's complement (or unsigned) integer.
    Int { bits: u32, signed: bool },
    /// A binary float with infinities and NaNs.
    Float { exponent: u32, mantissa: u32 },
}

impl Kind {
    /// The kind of `t`, or `None` for the types that only move as bits.
    pub(crate) fn of(t: DType) -> Option<Kind> {
        let int = |bits, signed| Some(Kind::Int { bits, signed });
        let float = |exponent, mantissa| Some(Kind::Float { exponent, mantissa });
        match t {
            DType::U8 => int(8, false),
            DType::I8 => int(8, true),
            DType::U16 => int(16, false),
            DType::I16 => int(16, true),
            DType::U32 => int(32, false),
            DType::I32 => int(32, true),
            DType::U64 => int(64, false),
            DType::I64 => int(64, true),
            DType::F16 => float(5, 10),
            DType::BF16 => float(8, 7),
            DType::F32 => float(8, 23),
            DType::F64 => float(11, 52),
            _ => None,
        }
    }
}

/// The types a conversion takes, as the errors list them.
const CONVERTIBLE: &str = "u8 i8 u16 i16 u32 i32 u64 i64 f16 bf16 f32 f64";

impl Conversion {
    /// The conversion from `from` to `to`. Both must be numeric types (`u8 i8 u16 i16 u32 i32
    /// u64 i64 f16 bf16 f32 f64`), unless they are the same type (then the elements move as
    /// they are).
    ///
    /// ```
    /// use relayout::{Conversion, DType, Error};
    ///
    /// assert!(Conversion::new(DType::F32, DType::BF16).is_ok());
    /// assert!(Conversion::new(DType::C64, DType::C64).is_ok()); // moved as bits
    /// assert!(matches!(Conversion::new(DType::C64, DType::F32), Err(Error::Conversion(_))));
    /// ```
    pub fn new(from: DType, to: DType) -> Result<Conversion> {
        if from != to {
            for t in [from, to] {
                if Kind::of(t).is_none() {
                    return Err(Error::Conversion(format!(
                        "cannot convert {from} to {to}: {t} has no numeric conversion; \
                         conversions take {CONVERTIBLE}"
                    )));
                }
            }
        }
        Ok(Conversion {
            from,
            to,
            affine: None,
        })
    }

    /// This conversion with the affine map `y = scale · x + shift` on the way (see the module
    /// docs for the arithmetic). Fails for types without numeric values and for a `scale` or
    /// `shift` that is not finite.
    pub fn affine(self, scale: f64, shift: f64) -> Result<Conversion> {
        for t in [self.from, self.to] {
            if Kind::of(t).is_none() {
                return Err(Error::Conversion(format!(
                    "a scale and shift on {t} elements, which have no numeric conversion; \
                     conversions take {CONVERTIBLE}"
                )));
            }
        }
        if !scale.is_finite() || !shift.is_finite() {
            return Err(Error::Conversion(format!(
                "scale {scale} and shift {shift}: both must be finite"
            )));
        }
        Ok(Conversion {
            affine: Some(Affine {
                scale: scale.to_bits(),
                shift: shift.to_bits(),
            }),
            ..self
        })
    }

    /// The source element type.
    pub fn from_type(&self) -> DType {
        self.from
    }

    /// The destination element type.
    pub fn to_type(&self) -> DType {
        self.to
    }

    /// The affine map's `(scale, shift)`, if there is one.
    pub fn scale_shift(&self) -> Option<(f64, f64)> {
        self.affine
            .map(|a| (f64::from_bits(a.scale), f64::from_bits(a.shift)))
    }

    /// The type the affine map computes in: `f64` when either side is `f64`, else `f32`.
    pub fn arithmetic(&self) -> Arithmetic {
        if self.from == DType::F64 || self.to == DType::F64 {
            Arithmetic::F64
        } else {
            Arithmetic::F32
        }
    }

    /// Whether the elements move unchanged (the same type on both sides and no affine map).
    pub fn is_identity(&self) -> bool {
        self.from == self.to && self.affine.is_none()
    }

    /// The destination bits of a source element with bits `bits` (its low bits), by the rules
    /// of the module docs, written out on exact values. The reference relayout uses it.
    ///
    /// ```
    /// use relayout::{Conversion, DType};
    ///
    /// let c = Conversion::new(DType::F32, DType::BF16)?;
    /// assert_eq!(c.apply(1.00390625f32.to_bits() as u64), 0x3f80); // a tie, to even
    /// let s = Conversion::new(DType::I32, DType::U8)?;
    /// assert_eq!(s.apply((-5i32) as u32 as u64), 0); // saturated
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn apply(&self, bits: u64) -> u64 {
        if self.is_identity() {
            return bits;
        }
        self.apply_map(bits, self.scale_shift())
    }

    /// The destination bits of a source element with bits `bits` under the affine map
    /// `scale_shift` (instead of this conversion's own), by the rules of the module docs.
    fn apply_map(&self, bits: u64, scale_shift: Option<(f64, f64)>) -> u64 {
        let (Some(from), Some(to)) = (Kind::of(self.from), Kind::of(self.to)) else {
            return bits; // a type without numeric conversions, moved as itself
        };
        let mut value = rules::decode(from, bits);
        if let Some((scale, shift)) = scale_shift {
            value = match self.arithmetic() {
                Arithmetic::F32 => {
                    let kind = Kind::of(DType::F32).expect("f32 converts");
                    let x = f32::from_bits(rules::encode(kind, value) as u32);
                    let y = x * scale as f32 + shift as f32;
                    rules::decode(kind, y.to_bits() as u64)
                }
                Arithmetic::F64 => {
                    let kind = Kind::of(DType::F64).expect("f64 converts");
                    let x = f64::from_bits(rules::encode(kind, value));
                    rules::decode(kind, (x * scale + shift).to_bits())
                }
            };
        }
        rules::encode(to, value)
    }
}

impl fmt::Display for Conversion {
    /// `f32 -> bf16`, with ` * scale + shift` when there is an affine map.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} -> {}", self.from, self.to)?;
        if let Some((scale, shift)) = self.scale_shift() {
            write!(f, " (* {scale} + {shift})")?;
        }
        Ok(())
    }
}

/// An affine map with a scale and a shift per index of one logical dim: the element at
/// coordinate `x` becomes `scales[x[dim]] · x + shifts[x[dim]]`, by the arithmetic of a
/// per-tensor map (see the module docs). Per-channel scales and zero points of quantized
/// weights are the common case.
///
/// Give it with [`Options::per_index`](crate::Options::per_index), beside the conversion; the
/// lists' length is checked against the dim's extent when compiling. Cloning shares the lists.
///
/// ```
/// use relayout::{Conversion, DType, PerIndex};
///
/// let channels = PerIndex::new(1, &[0.5, 2.0, 4.0], &[])?; // no shifts: all 0
/// assert_eq!((channels.dim(), channels.len()), (1, 3));
/// assert_eq!(channels.scale_shift(2), (4.0, 0.0));
/// let q = Conversion::new(DType::F32, DType::I8)?;
/// assert_eq!(channels.apply(&q, 3.0f32.to_bits() as u64, 1), 6);
/// assert!(PerIndex::new(0, &[1.0, f64::NAN], &[]).is_err());
/// # Ok::<(), relayout::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PerIndex {
    dim: usize,
    /// The bits of the scales, then of the shifts (the f64 table the generated code reads).
    wide: Arc<[u64]>,
    /// The same rounded to f32 (the table of maps computed in f32).
    single: Arc<[u32]>,
}

impl PerIndex {
    /// The map with `scales[i]` and `shifts[i]` for index `i` of logical dim `dim`. `shifts`
    /// is either as long as `scales` or empty (every shift 0). Fails for lists of different
    /// lengths and for values that are not finite.
    pub fn new(dim: usize, scales: &[f64], shifts: &[f64]) -> Result<PerIndex> {
        if !shifts.is_empty() && shifts.len() != scales.len() {
            return Err(Error::Conversion(format!(
                "{} scales and {} shifts for dim {dim}: give one shift per scale, or none",
                scales.len(),
                shifts.len()
            )));
        }
        let zeros = vec![0.0; scales.len()];
        let shifts = if shifts.is_empty() { &zeros } else { shifts };
        for (what, list) in [("scale", scales), ("shift", shifts)] {
            if let Some((i, v)) = list.iter().enumerate().find(|(_, v)| !v.is_finite()) {
                return Err(Error::Conversion(format!(
                    "{what} {v} at index {i} of dim {dim}: scales and shifts must be finite"
                )));
            }
        }
        let values = || scales.iter().chain(shifts);
        Ok(PerIndex {
            dim,
            wide: values().map(|v| v.to_bits()).collect(),
            single: values().map(|&v| (v as f32).to_bits()).collect(),
        })
    }

    /// The logical dim whose index picks the scale and shift.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Indices the map covers (the dim's extent, when it compiles).
    pub fn len(&self) -> usize {
        self.wide.len() / 2
    }

    /// Whether the map covers no index (a dim of extent 0).
    pub fn is_empty(&self) -> bool {
        self.wide.is_empty()
    }

    /// The `(scale, shift)` of index `i`. Panics when `i` is not below [`PerIndex::len`].
    pub fn scale_shift(&self, i: usize) -> (f64, f64) {
        (
            f64::from_bits(self.wide[i]),
            f64::from_bits(self.wide[self.len() + i]),
        )
    }

    /// The destination bits of a source element with bits `bits` at index `i` of the dim,
    /// converted by `conversion` with this map's scale and shift for `i` (the conversion's own
    /// per-tensor map, if any, is not used). Types without numeric values move as themselves.
    pub fn apply(&self, conversion: &Conversion, bits: u64, i: usize) -> u64 {
        conversion.apply_map(bits, Some(self.scale_shift(i)))
    }

    /// The scales then the shifts, as `f32` bits or `f64` bits for the arithmetic `a`: the
    /// table generated code reads (its address stays fixed while any clone lives).
    pub(crate) fn table(&self, a: Arithmetic) -> *const u8 {
        match a {
            Arithmetic::F32 => self.single.as_ptr().cast(),
            Arithmetic::F64 => self.wide.as_ptr().cast(),
        }
    }

    /// Fails unless the map fits `conversion` and a tensor of shape `shape`: a dim in range, one
    /// value per index, types with numeric values, no per-tensor map beside it.
    pub(crate) fn check(&self, conversion: &Conversion, shape: &[usize]) -> Result<()> {
        for t in [conversion.from, conversion.to] {
            if Kind::of(t).is_none() {
                return Err(Error::Conversion(format!(
                    "per-index scales on {t} elements, which have no numeric conversion; \
                     conversions take {CONVERTIBLE}"
                )));
            }
        }
        let dim = self.dim;
        let Some(&extent) = shape.get(dim) else {
            return Err(Error::Conversion(format!(
                "per-index scales along dim {dim} of a rank-{} tensor",
                shape.len()
            )));
        };
        if self.len() != extent {
            return Err(Error::Conversion(format!(
                "{} per-index scales for dim {dim} of extent {extent}: give one per index",
                self.len()
            )));
        }
        if conversion.affine.is_some() {
            return Err(Error::Conversion(format!(
                "per-index scales beside the per-tensor map of {conversion}: give one or the other"
            )));
        }
        Ok(())
    }
}

impl fmt::Display for PerIndex {
    /// `* scale[i] + shift[i] along dim D (N indices)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "(* scale[i] + shift[i], i along dim {} of {})",
            self.dim,
            self.len()
        )
    }
}
