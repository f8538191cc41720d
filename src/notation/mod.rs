//! Text notations of the systems relayout speaks, each lowered to the canonical [`Layout`].
//!
//! | prefix | notation | example |
//! |---|---|---|
//! | `cute:` / `moye:` | CuTe and MoYe.jl `shape:stride` | `cute:(2,(2,2)):(4,(2,1))` |
//! | `xla:` | XLA shape with tiled layout | `xla:f32[3,5]{1,0:T(2,2)}` |
//! | `tvm:` | shape, then a TVM index map | `tvm:[64,128] lambda i, j: [j // 4, i, j % 4]` |
//! | `morello:` | shape, then Morello's layout display | `morello:[6,8] [1, 0, 1 p(4)]` |
//!
//! ```
//! use relayout::Layout;
//! let l: Layout = "morello:[16] [0, 0 oe(8)]".parse()?;
//! assert_eq!(l.offsets(), [0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15]);
//! # Ok::<(), relayout::Error>(())
//! ```

pub(crate) mod cursor;
pub mod cute;
pub mod morello;
pub mod tvm;
pub mod xla;

use std::str::FromStr;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;

/// A layout read from text, with the element type when the notation names one (XLA does).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    /// The layout.
    pub layout: Layout,
    /// The element type the text names, if any.
    pub dtype: Option<DType>,
    /// How the elements of a sub-byte type are stored, if the text says: XLA packs them several
    /// to a byte with `E(n)` of their width and otherwise gives each a byte.
    pub packed: Option<bool>,
}

/// The notation prefixes [`parse`] accepts.
pub const PREFIXES: [&str; 5] = ["cute", "moye", "xla", "tvm", "morello"];

/// Parses notation-prefixed layout text (`cute:…`, `moye:…`, `xla:…`, `tvm:…`, `morello:…`).
///
/// ```
/// let p = relayout::notation::parse("xla:bf16[4,8]{1,0:T(2,4)(2,1)}")?;
/// assert_eq!(p.dtype, Some(relayout::DType::BF16));
/// assert_eq!(p.layout.shape(), &[4, 8]);
/// # Ok::<(), relayout::Error>(())
/// ```
pub fn parse(text: &str) -> Result<Parsed> {
    let Some((prefix, rest)) = text.split_once(':') else {
        return Err(missing_prefix());
    };
    let offset = prefix.chars().count() + 1;
    match prefix.trim() {
        "cute" | "moye" => cute::parse_layout(rest, offset),
        "xla" => xla::parse_layout(rest, offset),
        "tvm" => tvm::parse_layout(rest, offset),
        "morello" => morello::parse_layout(rest, offset),
        _ => Err(missing_prefix()),
    }
}

fn missing_prefix() -> Error {
    Error::Parse {
        notation: "layout",
        column: 1,
        message: format!(
            "expected a notation prefix: one of {}",
            PREFIXES.map(|p| format!("'{p}:'")).join(", ")
        ),
    }
}

impl Layout {
    /// Parses notation-prefixed layout text; see [`parse`] to also get the element type.
    ///
    /// ```
    /// use relayout::Layout;
    /// let l = Layout::parse("cute:(2,(2,2)):(4,(2,1))")?;
    /// assert_eq!(l.offsets(), [0, 2, 1, 3, 4, 6, 5, 7]);
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn parse(text: &str) -> Result<Layout> {
        parse(text).map(|p| p.layout)
    }
}

impl FromStr for Layout {
    type Err = Error;

    fn from_str(text: &str) -> Result<Layout> {
        Layout::parse(text)
    }
}
