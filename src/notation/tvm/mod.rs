//! TVM index maps (`IndexMap`, `transform_layout`): a logical shape followed by a Python lambda.
//!
//! ```text
//! [16, 64, 64, 128] lambda n, h, w, c: [n, c // 4, h, w, c % 4]
//! [14] T.index_map(lambda i: (i // 4, i % 4))
//! [2, 3, 8] lambda *rest, k: [*rest, k // 4, k % 4]
//! ```
//!
//! The lambda binds one index per logical dimension the way TVM binds them: positional
//! parameters first, `*args` expanding to whatever is left, keyword-only parameters (after
//! `*args` or a bare `*`) taking the last dimensions. Its body is a list, a tuple or a single
//! expression over integer literals, the indices, `+`, `-`, `*`, `//` (floordiv) and `%`
//! (floormod), with Python's precedence; `floordiv(a, b)` and `floormod(a, b)` calls (any
//! `T.`/`tir.` prefix) are accepted too.
//!
//! Meaning, as in TVM:
//!
//! * the **final shape** is what `IndexMap.map_shape` infers: TVM's iterator analysis
//!   (`DetectIterMap`) with its padding rules — ceil-division, left padding for `(x + b) // c`,
//!   extent `c` for `x % c`, fused sums such as `i*7 + j`, one padding shared by every split of
//!   a source — and interval bounds when that analysis fails. Every output range must start at 0;
//! * the **offset** of a logical coordinate is the row-major linearisation of the map's outputs
//!   over the final shape, and the buffer holds the whole final shape (padding included).
//!
//! Axis separators (multi-dimensional physical buffers) are reported as unsupported.
//!
//! This module holds the map's types, its printer and its lowering; the pieces of the lowering
//! live in their own files: `parser` reads the text, `affine` turns index expressions into sums
//! of mixed-radix digits, and `iter_map` infers the final shape the way TVM does.

use std::collections::HashSet;
use std::fmt;
use std::str::FromStr;

use super::Parsed;
use crate::error::{Error, Result};
use crate::layout::Layout;

mod affine;
mod iter_map;
mod parser;
#[cfg(test)]
mod tests;

/// Deepest expression tree (in nested operations) a map may have.
const MAX_EXPR_DEPTH: usize = 200;

/// Parses tvm layout text that starts `column_offset` characters into the user's input.
pub(crate) fn parse_layout(text: &str, column_offset: usize) -> Result<Parsed> {
    let layout = parser::parse_map(text, column_offset)?.to_layout()?;
    Ok(Parsed {
        layout,
        dtype: None,
        packed: None,
    })
}

/// A binary operator of a [`TvmExpr`], with Python's integer semantics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TvmOp {
    /// `a + b`.
    Add,
    /// `a - b`.
    Sub,
    /// `a * b`.
    Mul,
    /// `a // b`: TVM's `floordiv`, rounding towards −∞.
    FloorDiv,
    /// `a % b`: TVM's `floormod`, with the sign of the divisor.
    FloorMod,
}

impl TvmOp {
    fn symbol(self) -> &'static str {
        match self {
            TvmOp::Add => "+",
            TvmOp::Sub => "-",
            TvmOp::Mul => "*",
            TvmOp::FloorDiv => "//",
            TvmOp::FloorMod => "%",
        }
    }

    fn precedence(self) -> u8 {
        match self {
            TvmOp::Add | TvmOp::Sub => 1,
            TvmOp::Mul | TvmOp::FloorDiv | TvmOp::FloorMod => 2,
        }
    }
}

/// One output expression of a [`TvmMap`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TvmExpr {
    /// An integer literal.
    Int(i64),
    /// The lambda parameter bound to logical dimension `d`.
    Index(usize),
    /// Unary minus.
    Neg(Box<TvmExpr>),
    /// `lhs op rhs`.
    Binary(TvmOp, Box<TvmExpr>, Box<TvmExpr>),
}

impl TvmExpr {
    fn children(&self) -> Vec<&TvmExpr> {
        match self {
            TvmExpr::Int(_) | TvmExpr::Index(_) => Vec::new(),
            TvmExpr::Neg(a) => vec![a],
            TvmExpr::Binary(_, a, b) => vec![a, b],
        }
    }
}

/// A TVM index map applied to a logical shape: `[shape] lambda params: [outputs]`.
///
/// Parse one with [`TvmMap::parse`] (or `str::parse`), print it with `Display` (a canonical text
/// that parses back), and lower it to the canonical [`Layout`] with [`TvmMap::to_layout`].
///
/// ```
/// use relayout::notation::tvm::TvmMap;
///
/// // NHWC to NCHWc (the buffer-layout RFC's example).
/// let map: TvmMap = "[16,64,64,128] lambda n,h,w,c: [n, c//4, h, w, c%4]".parse()?;
/// assert_eq!(map.final_shape()?, [16, 32, 64, 64, 4]);
/// assert_eq!(map.to_string(), "[16, 64, 64, 128] lambda n, h, w, c: [n, c // 4, h, w, c % 4]");
///
/// let layout = map.to_layout()?;
/// let expected = 32 * 64 * 64 * 4 * 11 + 64 * 64 * 4 * (101 / 4) + 64 * 4 * 37 + 4 * 23 + 101 % 4;
/// assert_eq!(layout.offset(&[11, 37, 23, 101])?, expected);
///
/// // Padding: 14 elements split by 4 live in a 4x4 buffer.
/// let padded: TvmMap = "[14] lambda i: (i // 4, i % 4)".parse()?;
/// assert_eq!(padded.final_shape()?, [4, 4]);
/// assert_eq!(padded.to_layout()?.cosize(), 16);
/// # Ok::<(), relayout::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TvmMap {
    shape: Vec<usize>,
    params: Vec<String>,
    outputs: Vec<TvmExpr>,
}

impl TvmMap {
    /// A map over `shape` whose parameter `params[d]` is the index of dimension `d`.
    ///
    /// An extent of 0 is an empty tensor (see [`TvmMap::to_layout`]).
    ///
    /// Fails with [`Error::InvalidLayout`] when the ranks differ, a name is not
    /// a Python identifier or repeats, or an output reads a dimension outside the shape, and
    /// with [`Error::Unsupported`] for expressions nested deeper than 200 operations and for
    /// more than [`crate::layout::MAX_RANK`] dimensions or outputs.
    pub fn new(shape: Vec<usize>, params: Vec<String>, outputs: Vec<TvmExpr>) -> Result<TvmMap> {
        crate::layout::check_rank(shape.len())?;
        if outputs.len() > crate::layout::MAX_RANK {
            return Err(Error::Unsupported(format!(
                "an index map with {} outputs; relayout handles at most {}",
                outputs.len(),
                crate::layout::MAX_RANK
            )));
        }
        if params.len() != shape.len() {
            return Err(Error::InvalidLayout(format!(
                "the index map has {} parameters but the shape {shape:?} has {} dimensions",
                params.len(),
                shape.len()
            )));
        }
        check_names(&params)?;
        for output in &outputs {
            check_expr(output, shape.len())?;
        }
        Ok(TvmMap {
            shape,
            params,
            outputs,
        })
    }

    /// Parses `[shape] lambda …` text (see the module documentation for the accepted forms).
    ///
    /// ```
    /// use relayout::notation::tvm::TvmMap;
    /// let map = TvmMap::parse("[2, 3, 8] lambda *rest, k: [*rest, k // 4, k % 4]")?;
    /// assert_eq!(map.params(), ["rest_0", "rest_1", "k"]);
    /// assert_eq!(map.final_shape()?, [2, 3, 2, 4]);
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn parse(text: &str) -> Result<TvmMap> {
        parser::parse_map(text, 0)
    }

    /// The logical shape the map is applied to.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The parameter names, one per logical dimension (`*args` already expanded).
    pub fn params(&self) -> &[String] {
        &self.params
    }

    /// The output expressions, one per dimension of the final shape.
    pub fn outputs(&self) -> &[TvmExpr] {
        &self.outputs
    }

    /// The shape of the transformed buffer, as TVM's `IndexMap.map_shape` infers it.
    ///
    /// Fails with [`Error::InvalidLayout`] when an output's range does not start at 0 (TVM
    /// checks that too) and [`Error::Unsupported`] when no range can be inferred, which includes
    /// maps over an empty shape (an extent of 0: no index, so no range).
    pub fn final_shape(&self) -> Result<Vec<usize>> {
        if self.shape.contains(&0) {
            return Err(Error::Unsupported(format!(
                "the final shape of an index map over the empty shape {:?}",
                self.shape
            )));
        }
        iter_map::output_ranges(&self.shape, &self.outputs)
            .into_iter()
            .enumerate()
            .map(|(k, range)| self.extent_of_output(k, range))
            .collect()
    }

    /// Lowers the map to the canonical layout: offsets are the row-major linearisation of the
    /// outputs over [`TvmMap::final_shape`], and the buffer holds the whole final shape.
    ///
    /// Fails with [`Error::Unsupported`] for maps that are not sums of mixed-radix digits of
    /// the indices (products of indices, divisions by indices, `(i % 6) // 4`, …) and with
    /// [`Error::InvalidLayout`] for maps that are not injective or leave the final shape.
    ///
    /// A map over a shape with an extent of 0 maps no index: it lowers to the empty layout of
    /// that shape (no offsets, a buffer of 0 elements), whatever its outputs.
    pub fn to_layout(&self) -> Result<Layout> {
        if self.shape.contains(&0) {
            return Layout::from_parts(&self.shape, Vec::new(), 0, Some(0));
        }
        let lowering = affine::Lowering::new(&self.shape, &self.params);
        let outputs = self
            .outputs
            .iter()
            .map(|e| lowering.lower(e))
            .collect::<Result<Vec<_>>>()?;
        let final_shape = self.final_shape()?;
        for (k, (output, &extent)) in outputs.iter().zip(&final_shape).enumerate() {
            self.check_output_within(k, &lowering, output, extent)?;
        }
        let strides = row_major_strides(&final_shape)?;
        let total = lowering.linear_combination(outputs.into_iter().zip(strides))?;
        let (digits, base) = lowering.digits(&total)?;
        let padded = final_shape
            .iter()
            .try_fold(1usize, |acc, &n| acc.checked_mul(n))
            .ok_or_else(|| {
                Error::Overflow(format!(
                    "the final shape {final_shape:?} has too many elements"
                ))
            })?;
        let layout = Layout::from_parts(&self.shape, digits, base, Some(padded))?;
        if !layout.is_injective() {
            return Err(Error::InvalidLayout(format!(
                "TVM map is not injective: two logical coordinates of {:?} share an offset in \
                 {self} (or the map is too large to check element by element)",
                self.shape
            )));
        }
        Ok(layout)
    }

    fn shown<'a>(&'a self, expr: &'a TvmExpr) -> Shown<'a> {
        Shown {
            expr,
            names: &self.params,
        }
    }

    fn extent_of_output(&self, k: usize, range: Option<(i128, i128)>) -> Result<usize> {
        let shown = self.shown(&self.outputs[k]);
        let (min, extent) = range.ok_or_else(|| {
            Error::Unsupported(format!(
                "TVM cannot infer the range of output {k} ({shown})"
            ))
        })?;
        if min != 0 {
            return Err(Error::InvalidLayout(format!(
                "output {k} ({shown}) ranges from {min}; TVM's map_shape requires every output \
                 range to start at 0"
            )));
        }
        if extent < 1 {
            return Err(Error::InvalidLayout(format!(
                "output {k} ({shown}) has no valid extent (TVM infers {extent})"
            )));
        }
        usize::try_from(extent).map_err(|_| {
            Error::Overflow(format!(
                "output {k} ({shown}) has an extent of {extent}, which does not fit in memory"
            ))
        })
    }

    /// Every value of output `k` must be an index of the final shape's dimension `k`.
    fn check_output_within(
        &self,
        k: usize,
        lowering: &affine::Lowering,
        output: &affine::Affine,
        extent: usize,
    ) -> Result<()> {
        let (digits, base) = lowering.digits(output)?;
        let values = Layout::from_parts(&self.shape, digits, base, None)?;
        let (min, max) = (values.min_offset(), values.max_offset());
        if min < 0 || max as u128 >= extent as u128 {
            return Err(Error::InvalidLayout(format!(
                "output {k} ({}) takes values from {min} to {max}, outside the extent {extent} \
                 that TVM infers for it",
                self.shown(&self.outputs[k])
            )));
        }
        Ok(())
    }
}

impl FromStr for TvmMap {
    type Err = Error;

    fn from_str(text: &str) -> Result<TvmMap> {
        TvmMap::parse(text)
    }
}

impl fmt::Display for TvmMap {
    /// `[shape] lambda a, b: [outputs]` with `//`, `%` and minimal parentheses.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dims: Vec<String> = self.shape.iter().map(|n| n.to_string()).collect();
        write!(f, "[{}] lambda", dims.join(", "))?;
        if !self.params.is_empty() {
            write!(f, " {}", self.params.join(", "))?;
        }
        let outputs: Vec<String> = self
            .outputs
            .iter()
            .map(|e| self.shown(e).to_string())
            .collect();
        write!(f, ": [{}]", outputs.join(", "))
    }
}

/// An expression printed with the map's parameter names.
struct Shown<'a> {
    expr: &'a TvmExpr,
    names: &'a [String],
}

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_expr(f, self.expr, self.names, 0, false)
    }
}

const UNARY_PRECEDENCE: u8 = 3;
const ATOM_PRECEDENCE: u8 = 4;

fn precedence(expr: &TvmExpr) -> u8 {
    match expr {
        TvmExpr::Int(v) if *v < 0 => UNARY_PRECEDENCE,
        TvmExpr::Int(_) | TvmExpr::Index(_) => ATOM_PRECEDENCE,
        TvmExpr::Neg(_) => UNARY_PRECEDENCE,
        TvmExpr::Binary(op, ..) => op.precedence(),
    }
}

/// Writes `expr` inside an operator of precedence `parent`; `right` marks a right operand, which
/// keeps its parentheses at equal precedence (`a - (b - c)`).
fn write_expr(
    f: &mut fmt::Formatter<'_>,
    expr: &TvmExpr,
    names: &[String],
    parent: u8,
    right: bool,
) -> fmt::Result {
    let own = precedence(expr);
    let parens = own < parent || (right && own == parent && matches!(expr, TvmExpr::Binary(..)));
    if parens {
        f.write_str("(")?;
    }
    match expr {
        TvmExpr::Int(v) => write!(f, "{v}")?,
        TvmExpr::Index(d) => match names.get(*d) {
            Some(name) => f.write_str(name)?,
            None => write!(f, "i{d}")?,
        },
        TvmExpr::Neg(a) => {
            f.write_str("-")?;
            write_expr(f, a, names, UNARY_PRECEDENCE, false)?;
        }
        TvmExpr::Binary(op, a, b) => {
            write_expr(f, a, names, op.precedence(), false)?;
            write!(f, " {} ", op.symbol())?;
            write_expr(f, b, names, op.precedence(), true)?;
        }
    }
    if parens {
        f.write_str(")")?;
    }
    Ok(())
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn check_names(params: &[String]) -> Result<()> {
    let mut seen = HashSet::new();
    for name in params {
        if !is_identifier(name) {
            return Err(Error::InvalidLayout(format!(
                "'{name}' is not a Python identifier"
            )));
        }
        if !seen.insert(name) {
            return Err(Error::InvalidLayout(format!(
                "duplicate parameter '{name}'"
            )));
        }
    }
    Ok(())
}

/// Checks index ranges and depth without recursion (the tree may come from a caller).
fn check_expr(expr: &TvmExpr, rank: usize) -> Result<()> {
    let mut stack = vec![(expr, 0usize)];
    while let Some((e, depth)) = stack.pop() {
        if depth > MAX_EXPR_DEPTH {
            return Err(Error::Unsupported(format!(
                "index expressions nested deeper than {MAX_EXPR_DEPTH} operations"
            )));
        }
        if let TvmExpr::Index(d) = e {
            if *d >= rank {
                return Err(Error::InvalidLayout(format!(
                    "an output reads dimension {d}, but the shape has rank {rank}"
                )));
            }
        }
        stack.extend(e.children().into_iter().map(|c| (c, depth + 1)));
    }
    Ok(())
}

fn row_major_strides(shape: &[usize]) -> Result<Vec<i64>> {
    let mut strides = vec![0i64; shape.len()];
    let mut volume: i64 = 1;
    for (stride, &n) in strides.iter_mut().zip(shape).rev() {
        *stride = volume;
        volume = i64::try_from(n)
            .ok()
            .and_then(|n| volume.checked_mul(n))
            .ok_or_else(|| {
                Error::Overflow(format!("the final shape {shape:?} has too many elements"))
            })?;
    }
    Ok(strides)
}

/// The greatest common divisor of `a` and `b` (`a` when `b` is 0).
fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}
