//! Element types.

use std::fmt;
use std::str::FromStr;

use crate::error::Error;

/// The element type of a tensor. relayout moves bits, so only the size matters to a kernel; the
/// type decides how the command line prints values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    /// Unsigned 8-bit integer.
    U8,
    /// Signed 8-bit integer.
    I8,
    /// Unsigned 16-bit integer.
    U16,
    /// Signed 16-bit integer.
    I16,
    /// IEEE half precision.
    F16,
    /// bfloat16.
    BF16,
    /// Unsigned 32-bit integer.
    U32,
    /// Signed 32-bit integer.
    I32,
    /// IEEE single precision.
    F32,
    /// Unsigned 64-bit integer.
    U64,
    /// Signed 64-bit integer.
    I64,
    /// IEEE double precision.
    F64,
}

impl DType {
    /// Every element type, in the order of the command line's help.
    pub const ALL: [DType; 12] = [
        DType::U8,
        DType::I8,
        DType::U16,
        DType::I16,
        DType::F16,
        DType::BF16,
        DType::U32,
        DType::I32,
        DType::F32,
        DType::U64,
        DType::I64,
        DType::F64,
    ];

    /// Size of one element in bytes: 1, 2, 4 or 8.
    pub fn size(self) -> usize {
        match self {
            DType::U8 | DType::I8 => 1,
            DType::U16 | DType::I16 | DType::F16 | DType::BF16 => 2,
            DType::U32 | DType::I32 | DType::F32 => 4,
            DType::U64 | DType::I64 | DType::F64 => 8,
        }
    }

    /// The name used on the command line (`f32`, `bf16`, …).
    pub fn name(self) -> &'static str {
        match self {
            DType::U8 => "u8",
            DType::I8 => "i8",
            DType::U16 => "u16",
            DType::I16 => "i16",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::U32 => "u32",
            DType::I32 => "i32",
            DType::F32 => "f32",
            DType::U64 => "u64",
            DType::I64 => "i64",
            DType::F64 => "f64",
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for DType {
    type Err = Error;

    /// Parses the command-line names (`u8 i8 u16 i16 f16 bf16 u32 i32 f32 u64 i64 f64`).
    fn from_str(s: &str) -> Result<DType, Error> {
        DType::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| {
                Error::ElementType(format!(
                    "unknown element type '{s}'; expected one of u8 i8 u16 i16 f16 bf16 u32 i32 f32 u64 i64 f64"
                ))
            })
    }
}
