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

mod rules;

use std::fmt;

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
        let (Some(from), Some(to)) = (Kind::of(self.from), Kind::of(self.to)) else {
            return bits; // a type without numeric conversions, moved as itself
        };
        if self.is_identity() {
            return bits;
        }
        let mut value = rules::decode(from, bits);
        if let Some((scale, shift)) = self.scale_shift() {
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
