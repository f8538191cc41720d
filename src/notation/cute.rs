//! CuTe (CUTLASS) and MoYe.jl layouts: `shape:stride` over nested integer tuples.
//!
//! # Text form
//!
//! ```text
//! layout    := int_tuple (':' int_tuple)?
//! int_tuple := int | '(' int_tuple (',' int_tuple)* ','? ')'
//! int       := '_'? '-'? digits            static markers `_8`, `_-1` mean the same as `8`, `-1`
//! ```
//!
//! Whitespace may appear between any two tokens, so CuTe's `(2,(2,2)):(4,(2,1))` and MoYe's
//! `(2, (2, 2)):(4, (2, 1))` both parse; a trailing comma (Julia's one-tuple `(8,)`) is accepted.
//! Shape and stride must be *congruent* (the same nesting) and every shape entry at least 1.
//! Strides may be zero (broadcast) or negative.
//!
//! A bare shape without `:stride` means CuTe's `make_layout(shape)`: `LayoutLeft`, the
//! generalized column-major layout whose strides are the exclusive prefix products of the
//! flattened shape, with size-1 modes given stride 0 (CuTe does that for static size-1 modes;
//! here every integer counts as static, which gives the same function).
//!
//! # Meaning
//!
//! Each top-level mode is one logical dimension (an integer layout such as `8:1` has rank 1).
//! A mode's coordinate is split colexicographically (leftmost fastest) over the mode's flattened
//! sub-shapes, so with `P_j` the product of the sub-shapes before sub-mode `j`,
//!
//! ```text
//! offset(c) = Σ_j d_j · ((c / P_j) mod s_j)      (no modulo on the last sub-mode)
//! ```
//!
//! MoYe.jl uses the same layouts with 1-based coordinates and offsets; the offsets here are
//! CuTe's 0-based ones.
//!
//! # Not supported
//!
//! Swizzled layouts (`Sw<B,M,S> o …`, an XOR of address bits) and `ScaledBasis` strides
//! (`_1@0`, vector-valued) are not affine layouts of one buffer and are reported as
//! [`Error::Unsupported`]. Empty tuples `()` are rejected: they describe no dimension.

use std::fmt;
use std::str::FromStr;

use super::cursor::Cursor;
use super::Parsed;
use crate::error::{Error, Result};
use crate::layout::{Digit, Layout, Source, MAX_OFFSET};

/// The notation name used in parse errors.
const NOTATION: &str = "cute";

/// Parses cute layout text that starts `column_offset` characters into the user's input.
pub(crate) fn parse_layout(text: &str, column_offset: usize) -> Result<Parsed> {
    let layout = parse_cute_layout(text, column_offset)?.to_layout()?;
    Ok(Parsed {
        layout,
        dtype: None,
    })
}

/// A CuTe integer tuple: an integer or a tuple of integer tuples, nested to any depth.
///
/// Shapes and strides of a [`CuteLayout`] are `IntTuple`s. It prints in CuTe's form (`(2,(2,2))`)
/// and, with the alternate flag `{:#}`, in MoYe's (`(2, (2, 2))`, one-tuples as `(8,)`).
///
/// ```
/// use relayout::notation::cute::IntTuple;
/// let t: IntTuple = "(_2, (3, 4))".parse()?;
/// assert_eq!(t.to_string(), "(2,(3,4))");
/// assert_eq!(format!("{t:#}"), "(2, (3, 4))");
/// assert_eq!((t.rank(), t.depth(), t.product()?), (2, 2, 24));
/// # Ok::<(), relayout::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum IntTuple {
    /// One integer.
    Int(i64),
    /// A tuple of integer tuples.
    Tuple(Vec<IntTuple>),
}

/// One step of a pre-order walk over an [`IntTuple`]; the walk is iterative, so trees of any
/// depth are safe to print and compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    /// The start of a tuple with this many entries.
    Open(usize),
    /// An integer.
    Int(i64),
    /// The end of the innermost open tuple.
    Close,
}

/// The pre-order token stream of an [`IntTuple`].
struct Tokens<'a> {
    pending: Option<&'a IntTuple>,
    open: Vec<std::slice::Iter<'a, IntTuple>>,
}

impl<'a> Iterator for Tokens<'a> {
    type Item = Token;

    fn next(&mut self) -> Option<Token> {
        if let Some(node) = self.pending.take() {
            return Some(match node {
                IntTuple::Int(v) => Token::Int(*v),
                IntTuple::Tuple(items) => {
                    self.open.push(items.iter());
                    Token::Open(items.len())
                }
            });
        }
        match self.open.last_mut()?.next() {
            Some(child) => {
                self.pending = Some(child);
                self.next()
            }
            None => {
                self.open.pop();
                Some(Token::Close)
            }
        }
    }
}

impl IntTuple {
    fn tokens(&self) -> Tokens<'_> {
        Tokens {
            pending: Some(self),
            open: Vec::new(),
        }
    }

    /// The number of top-level entries: 1 for an integer, the length for a tuple.
    pub fn rank(&self) -> usize {
        match self {
            IntTuple::Int(_) => 1,
            IntTuple::Tuple(items) => items.len(),
        }
    }

    /// The nesting depth: 0 for an integer, 1 for a flat tuple, and so on.
    pub fn depth(&self) -> usize {
        let mut open = 0usize;
        let mut deepest = 0usize;
        for token in self.tokens() {
            match token {
                Token::Open(_) => {
                    open += 1;
                    deepest = deepest.max(open);
                }
                Token::Close => open -= 1,
                Token::Int(_) => {}
            }
        }
        deepest
    }

    /// The integers, left to right (depth-first).
    pub fn leaves(&self) -> Vec<i64> {
        self.tokens()
            .filter_map(|t| match t {
                Token::Int(v) => Some(v),
                _ => None,
            })
            .collect()
    }

    /// The integers as one flat tuple (an integer stays an integer), CuTe's `flatten`.
    pub fn flatten(&self) -> IntTuple {
        match self {
            IntTuple::Int(v) => IntTuple::Int(*v),
            IntTuple::Tuple(_) => {
                IntTuple::Tuple(self.leaves().into_iter().map(IntTuple::Int).collect())
            }
        }
    }

    /// The product of the integers (CuTe's `size` of a shape); [`Error::Overflow`] if it does
    /// not fit in 64 bits.
    pub fn product(&self) -> Result<i64> {
        self.leaves()
            .into_iter()
            .try_fold(1i64, |acc, v| acc.checked_mul(v))
            .ok_or_else(|| {
                Error::Overflow(format!("the product of {self} does not fit in 64 bits"))
            })
    }

    /// The same nesting with the integers replaced, left to right, by `values` (which must have
    /// one value per integer).
    fn with_leaves(&self, values: &[i64]) -> IntTuple {
        let mut values = values.iter().copied();
        let mut open: Vec<Vec<IntTuple>> = vec![Vec::new()];
        for token in self.tokens() {
            let finished = match token {
                Token::Open(n) => {
                    open.push(Vec::with_capacity(n));
                    continue;
                }
                Token::Int(_) => IntTuple::Int(values.next().unwrap_or(0)),
                Token::Close => IntTuple::Tuple(open.pop().unwrap_or_default()),
            };
            if let Some(items) = open.last_mut() {
                items.push(finished);
            }
        }
        open.pop()
            .and_then(|mut root| root.pop())
            .unwrap_or(IntTuple::Int(0))
    }
}

impl fmt::Display for IntTuple {
    /// CuTe's form `(2,(2,2))`; with `{:#}`, MoYe's `(2, (2, 2))` (one-tuples as `(8,)`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let moye = f.alternate();
        let separator = if moye { ", " } else { "," };
        // Entries written so far in each open tuple.
        let mut written: Vec<usize> = Vec::new();
        for token in self.tokens() {
            if token != Token::Close {
                if let Some(n) = written.last_mut() {
                    if *n > 0 {
                        f.write_str(separator)?;
                    }
                    *n += 1;
                }
            }
            match token {
                Token::Open(_) => {
                    f.write_str("(")?;
                    written.push(0);
                }
                Token::Int(v) => write!(f, "{v}")?,
                Token::Close => {
                    if written.pop() == Some(1) && moye {
                        f.write_str(",")?;
                    }
                    f.write_str(")")?;
                }
            }
        }
        Ok(())
    }
}

impl FromStr for IntTuple {
    type Err = Error;

    /// Parses an integer tuple such as `(2,(_2,2))` or `(4, (2, 3))`.
    fn from_str(text: &str) -> Result<IntTuple> {
        let mut cursor = Cursor::new(NOTATION, text, 0);
        let tuple = int_tuple(&mut cursor, &mut Vec::new())?;
        cursor.expect_end()?;
        Ok(tuple)
    }
}

impl From<i64> for IntTuple {
    /// The integer as an [`IntTuple::Int`].
    fn from(value: i64) -> IntTuple {
        IntTuple::Int(value)
    }
}

/// A CuTe / MoYe.jl layout: a shape and a congruent stride, both [`IntTuple`]s.
///
/// It parses CuTe's and MoYe's text (see the [module docs](self)), prints CuTe's form with
/// `Display` and MoYe's with [`CuteLayout::moye`], evaluates CuTe's 1-D coordinate function with
/// [`CuteLayout::eval`], and lowers to the canonical [`Layout`] with [`CuteLayout::to_layout`].
///
/// ```
/// use relayout::notation::cute::CuteLayout;
///
/// let l: CuteLayout = "(_2, (2, 2)):(4, (_2, 1))".parse()?;
/// assert_eq!(l.to_string(), "(2,(2,2)):(4,(2,1))");
/// assert_eq!(l.moye(), "(2, (2, 2)):(4, (2, 1))");
/// assert_eq!((l.size(), l.rank(), l.depth(), l.cosize()), (8, 2, 2, 8));
/// assert_eq!(l.eval(3)?, 6); // colexicographic: 3 -> (1, (1, 0))
///
/// let layout = l.to_layout()?; // logical shape [2, 4], row-major coordinates
/// assert_eq!(layout.offsets(), [0, 2, 1, 3, 4, 6, 5, 7]);
/// assert_eq!(CuteLayout::from_layout(&layout)?, l);
/// # Ok::<(), relayout::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CuteLayout {
    shape: IntTuple,
    stride: IntTuple,
}

impl CuteLayout {
    /// A layout from a shape and a stride.
    ///
    /// Fails with [`Error::InvalidLayout`] when they are not congruent, a shape entry is below 1
    /// or a tuple is empty, and with [`Error::Overflow`] when the size or an offset inside the
    /// domain would exceed [`MAX_OFFSET`].
    pub fn new(shape: IntTuple, stride: IntTuple) -> Result<CuteLayout> {
        if let Some((_, message)) =
            shape_defect(&shape).or_else(|| congruence_defect(&shape, &stride))
        {
            return Err(Error::InvalidLayout(message));
        }
        let layout = CuteLayout { shape, stride };
        layout.check_bounds()?;
        Ok(layout)
    }

    /// CuTe's `make_layout(shape)`: `LayoutLeft`, the generalized column-major layout (strides
    /// are exclusive prefix products of the flattened shape) with stride 0 on size-1 modes.
    ///
    /// ```
    /// use relayout::notation::cute::CuteLayout;
    /// let l = CuteLayout::from_shape("(1,(2,4))".parse()?)?;
    /// assert_eq!(l.to_string(), "(1,(2,4)):(0,(1,2))");
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn from_shape(shape: IntTuple) -> Result<CuteLayout> {
        if let Some((_, message)) = shape_defect(&shape) {
            return Err(Error::InvalidLayout(message));
        }
        let mut strides = Vec::new();
        let mut volume = 1i64;
        for s in shape.leaves() {
            strides.push(if s == 1 { 0 } else { volume });
            volume = volume.checked_mul(s).ok_or_else(|| {
                Error::Overflow(format!("the size of {shape} does not fit in 64 bits"))
            })?;
        }
        let stride = shape.with_leaves(&strides);
        CuteLayout::new(shape, stride)
    }

    /// Parses CuTe or MoYe text such as `(2,(2,2)):(4,(2,1))`, `_8:_1` or a bare shape `(2,4)`,
    /// with or without the `cute:` or `moye:` prefix that [`Layout::parse`] takes.
    ///
    /// ```
    /// use relayout::notation::cute::CuteLayout;
    /// assert_eq!(CuteLayout::parse("cute:(2,3):(3,1)")?, CuteLayout::parse("(2,3):(3,1)")?);
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn parse(text: &str) -> Result<CuteLayout> {
        match ["cute:", "moye:"].iter().find(|p| text.starts_with(*p)) {
            Some(prefix) => parse_cute_layout(&text[prefix.len()..], prefix.len()),
            None => parse_cute_layout(text, 0),
        }
    }

    /// The shape.
    pub fn shape(&self) -> &IntTuple {
        &self.shape
    }

    /// The stride (congruent with the shape).
    pub fn stride(&self) -> &IntTuple {
        &self.stride
    }

    /// The number of coordinates: the product of the shape.
    pub fn size(&self) -> usize {
        // `check_bounds` keeps the product below MAX_OFFSET.
        self.shape.leaves().iter().map(|&s| s as usize).product()
    }

    /// The number of top-level modes (1 for an integer layout such as `8:1`).
    pub fn rank(&self) -> usize {
        self.shape.rank()
    }

    /// The nesting depth of the shape (0 for an integer layout).
    pub fn depth(&self) -> usize {
        self.shape.depth()
    }

    /// CuTe's `cosize`: the product of the coshape, `Σ (s_j - 1)·|d_j| + 1` over the flattened
    /// modes. For non-negative strides this is `eval(size - 1) + 1`, the buffer length the layout
    /// needs. (MoYe.jl defines it as `eval(size - 1) + 1` for all strides.)
    pub fn cosize(&self) -> usize {
        let span: u128 = self
            .leaf_modes()
            .map(|(s, d)| (s as u128 - 1) * d.unsigned_abs() as u128)
            .sum();
        // `check_bounds` keeps the span below MAX_OFFSET.
        span as usize + 1
    }

    /// The top-level mode `i` as a layout of its own (mode 0 of an integer layout is the layout).
    pub fn mode(&self, i: usize) -> Option<CuteLayout> {
        self.modes().into_iter().nth(i)
    }

    /// CuTe's `make_layout(L_0, L_1, …)`: the layout whose top-level modes are the given layouts,
    /// always a tuple (one layout gives a rank-1 tuple such as `(8):(1)`).
    ///
    /// Fails with [`Error::InvalidLayout`] for no modes and [`Error::Overflow`] when the result
    /// reaches beyond [`MAX_OFFSET`].
    ///
    /// ```
    /// use relayout::notation::cute::CuteLayout;
    /// let a = CuteLayout::parse("4:2")?;
    /// let b = CuteLayout::parse("(2,3):(1,8)")?;
    /// let l = CuteLayout::from_modes(vec![a, b])?;
    /// assert_eq!(l.to_string(), "(4,(2,3)):(2,(1,8))");
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn from_modes(modes: Vec<CuteLayout>) -> Result<CuteLayout> {
        let (shape, stride): (Vec<IntTuple>, Vec<IntTuple>) =
            modes.into_iter().map(|m| (m.shape, m.stride)).unzip();
        CuteLayout::new(IntTuple::Tuple(shape), IntTuple::Tuple(stride))
    }

    /// A layout from parts the caller has already checked: congruent, every shape entry at least
    /// 1, size and offsets within [`MAX_OFFSET`] (for results that keep a checked layout's
    /// function on its domain, such as CuTe's `coalesce`).
    pub(crate) fn from_checked(shape: IntTuple, stride: IntTuple) -> CuteLayout {
        debug_assert!(CuteLayout::new(shape.clone(), stride.clone()).is_ok());
        CuteLayout { shape, stride }
    }

    /// The layout with shape and stride flattened to depth at most 1 (the same 1-D function).
    pub fn flatten(&self) -> CuteLayout {
        CuteLayout {
            shape: self.shape.flatten(),
            stride: self.stride.flatten(),
        }
    }

    /// The offset of the 1-D coordinate `i`: CuTe's `layout(i)` (`crd2idx`).
    ///
    /// `i` is split colexicographically over the flattened modes with C++ truncating division,
    /// and the last mode is not reduced, so coordinates at or beyond [`CuteLayout::size`] (and
    /// negative ones) continue along it, as CuTe's composition relies on.
    /// Fails with [`Error::Overflow`] if the offset does not fit in 64 bits.
    pub fn eval(&self, i: i64) -> Result<i64> {
        let modes: Vec<(i64, i64)> = self.leaf_modes().collect();
        let overflow =
            || Error::Overflow(format!("{self} at coordinate {i} does not fit in 64 bits"));
        let mut below = 1i64;
        let mut offset = 0i64;
        for (j, &(s, d)) in modes.iter().enumerate() {
            let quotient = i / below;
            let digit = if j + 1 < modes.len() {
                quotient % s
            } else {
                quotient
            };
            offset = digit
                .checked_mul(d)
                .and_then(|term| offset.checked_add(term))
                .ok_or_else(overflow)?;
            // The product of the shape fits (check_bounds).
            below *= s;
        }
        Ok(offset)
    }

    /// MoYe.jl's text form: `(4, (2, 3)):(2, (1, 8))` (also `format!("{layout:#}")`).
    pub fn moye(&self) -> String {
        format!("{self:#}")
    }

    /// The canonical layout: each top-level mode is one logical dim of extent `size(mode)`, and
    /// each flattened sub-mode `s_j:d_j` of it a digit `d_j·((x / P_j) mod s_j)` with `P_j` the
    /// product of the sub-shapes before it. The last sub-mode of a mode has no modulo (as in
    /// CuTe; the same inside the domain); size-1 and stride-0 sub-modes are left out.
    pub fn to_layout(&self) -> Result<Layout> {
        crate::layout::check_rank(self.rank())?;
        let modes = self.modes();
        let mut shape = Vec::with_capacity(modes.len());
        let mut digits = Vec::new();
        for (dim, mode) in modes.iter().enumerate() {
            shape.push(mode.size());
            digits.extend(mode.digits(dim));
        }
        Layout::new(&shape, digits)
    }

    /// The CuTe layout of a canonical layout, for the layouts CuTe can express: every dim a
    /// mixed-radix number of its own digits (no fused sources or shifts, digits that divide the
    /// extent), no declared padding and base 0. Dim `d` becomes mode `d`; its digits, least
    /// significant first, become the sub-modes `radix:stride` (stride-0 sub-modes fill gaps
    /// between digits); a dim of one digit becomes an integer mode.
    ///
    /// Fails with [`Error::Unsupported`] for other layouts.
    ///
    /// ```
    /// use relayout::{notation::cute::CuteLayout, Layout};
    /// let l = CuteLayout::from_layout(&Layout::row_major(&[3, 4])?)?;
    /// assert_eq!(l.to_string(), "(3,4):(4,1)");
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn from_layout(layout: &Layout) -> Result<CuteLayout> {
        if layout.rank() == 0 {
            return Err(Error::Unsupported(
                "a CuTe layout needs at least one mode".into(),
            ));
        }
        if layout.base() != 0 {
            return Err(Error::Unsupported(format!(
                "CuTe layouts have no base offset; this layout adds {}",
                layout.base()
            )));
        }
        let span = layout.max_offset() - layout.buffer_start() + 1;
        if layout
            .padded_len()
            .is_some_and(|n| n as i128 > span as i128)
        {
            return Err(Error::Unsupported(format!(
                "CuTe layouts declare no padding; this layout's buffer holds {} elements beyond \
                 the {span} it addresses",
                layout.cosize() as i64 - span
            )));
        }
        let mut shapes = Vec::with_capacity(layout.rank());
        let mut strides = Vec::with_capacity(layout.rank());
        for dim in 0..layout.rank() {
            let sub_modes = dim_sub_modes(layout, dim)?;
            let (s, d): (Vec<i64>, Vec<i64>) = sub_modes.into_iter().unzip();
            shapes.push(mode_tuple(s));
            strides.push(mode_tuple(d));
        }
        let (shape, stride) = match (shapes.len(), &shapes[0]) {
            (1, IntTuple::Int(_)) => (shapes.remove(0), strides.remove(0)),
            _ => (IntTuple::Tuple(shapes), IntTuple::Tuple(strides)),
        };
        CuteLayout::new(shape, stride)
    }

    /// The top-level modes as layouts (an integer layout is its own single mode).
    ///
    /// ```
    /// use relayout::notation::cute::CuteLayout;
    /// let l = CuteLayout::parse("(2,(3,4)):(1,(2,6))")?;
    /// let modes: Vec<String> = l.modes().iter().map(|m| m.to_string()).collect();
    /// assert_eq!(modes, ["2:1", "(3,4):(2,6)"]);
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn modes(&self) -> Vec<CuteLayout> {
        match (&self.shape, &self.stride) {
            (IntTuple::Tuple(s), IntTuple::Tuple(d)) => s
                .iter()
                .zip(d)
                .map(|(s, d)| CuteLayout {
                    shape: s.clone(),
                    stride: d.clone(),
                })
                .collect(),
            _ => vec![self.clone()],
        }
    }

    /// The flattened `(shape, stride)` pairs, left to right.
    fn leaf_modes(&self) -> impl Iterator<Item = (i64, i64)> {
        self.shape.leaves().into_iter().zip(self.stride.leaves())
    }

    /// The digits of this layout used as mode `dim` of a larger one (see [`CuteLayout::to_layout`]).
    fn digits(&self, dim: usize) -> Vec<Digit> {
        let modes: Vec<(i64, i64)> = self.leaf_modes().collect();
        let mut below = 1usize;
        let mut digits = Vec::new();
        for (j, &(s, d)) in modes.iter().enumerate() {
            let s = s as usize;
            if s > 1 && d != 0 {
                let ext = (j + 1 < modes.len()).then_some(s);
                digits.push(Digit::new(Source::Dim(dim), below, ext, d));
            }
            below *= s;
        }
        digits
    }

    /// Checks that the size and every offset inside the domain stay within [`MAX_OFFSET`].
    fn check_bounds(&self) -> Result<()> {
        let mut size: i128 = 1;
        let mut span: i128 = 0;
        for (s, d) in self.leaf_modes() {
            size *= s as i128;
            span += (s as i128 - 1) * (d as i128).abs();
            if size > MAX_OFFSET || span > MAX_OFFSET {
                return Err(Error::Overflow(format!(
                    "the layout {self} reaches beyond {MAX_OFFSET} elements"
                )));
            }
        }
        Ok(())
    }
}

impl fmt::Display for CuteLayout {
    /// CuTe's form `(2,(2,2)):(4,(2,1))`; with `{:#}`, MoYe's `(2, (2, 2)):(4, (2, 1))`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.alternate() {
            write!(f, "{:#}:{:#}", self.shape, self.stride)
        } else {
            write!(f, "{}:{}", self.shape, self.stride)
        }
    }
}

impl FromStr for CuteLayout {
    type Err = Error;

    fn from_str(text: &str) -> Result<CuteLayout> {
        CuteLayout::parse(text)
    }
}

/// The first problem of a shape on its own, as (token index, message): an entry below 1 or an
/// empty tuple.
fn shape_defect(shape: &IntTuple) -> Option<(usize, String)> {
    shape
        .tokens()
        .enumerate()
        .find_map(|(i, token)| match token {
            Token::Int(v) if v < 1 => {
                Some((i, format!("shape entries must be at least 1, found {v}")))
            }
            Token::Open(0) => Some((i, "a tuple needs at least one entry".to_string())),
            _ => None,
        })
}

/// The first place where `stride` is not congruent with `shape`, as (token index in the stride,
/// message). The token streams agree up to the first mismatch, so a tuple of the wrong length
/// shows up at its first extra entry or at its early `)`.
fn congruence_defect(shape: &IntTuple, stride: &IntTuple) -> Option<(usize, String)> {
    let describe = |token: Token| match token {
        Token::Int(_) => "an integer".to_string(),
        Token::Open(n) => format!("a tuple of {n}"),
        Token::Close => "')'".to_string(),
    };
    let same_kind = |a: Token, b: Token| {
        matches!(
            (a, b),
            (Token::Int(_), Token::Int(_))
                | (Token::Open(_), Token::Open(_))
                | (Token::Close, Token::Close)
        )
    };
    shape
        .tokens()
        .zip(stride.tokens())
        .enumerate()
        .find(|&(_, (s, d))| !same_kind(s, d))
        .map(|(i, (s, d))| {
            let message = format!(
                "the stride is not congruent with the shape: expected {}, found {}",
                describe(s),
                describe(d)
            );
            (i, message)
        })
}

/// The sub-modes `(radix, stride)` of dim `dim`, least significant first, with stride-0 modes
/// filling gaps between digits (see [`CuteLayout::from_layout`]).
fn dim_sub_modes(layout: &Layout, dim: usize) -> Result<Vec<(i64, i64)>> {
    let n = layout.shape()[dim];
    let unsupported = |why: &str| Error::Unsupported(format!("dim {dim} of {layout}: {why}"));
    let mut digits: Vec<&Digit> = layout
        .digits()
        .iter()
        .filter(|g| g.source.dims().contains(&dim))
        .collect();
    if digits.iter().any(|g| g.dim() != Some(dim) || g.shift != 0) {
        return Err(unsupported("CuTe has no fused or shifted digits"));
    }
    // Digits that are always 0 inside the extent contribute nothing.
    digits.retain(|g| g.div < n && g.stride != 0 && g.ext != Some(1));
    digits.sort_by_key(|g| g.div);
    let mut sub_modes = Vec::new();
    let mut covered = 1usize;
    for g in digits {
        if covered >= n || !g.div.is_multiple_of(covered) {
            return Err(unsupported("its digits do not form a mixed-radix number"));
        }
        if g.div > covered {
            sub_modes.push((g.div / covered, 0));
            covered = g.div;
        }
        let radix = match g.ext {
            Some(e) if e.checked_mul(covered).is_some_and(|top| top <= n) => e,
            _ if n.is_multiple_of(covered) => n / covered,
            _ => return Err(unsupported("its top digit over-covers it (padding)")),
        };
        sub_modes.push((radix, g.stride));
        covered *= radix;
    }
    if covered < n || sub_modes.is_empty() {
        if !n.is_multiple_of(covered) {
            return Err(unsupported("its digits do not divide its extent"));
        }
        sub_modes.push((n / covered, 0));
    }
    sub_modes
        .into_iter()
        .map(|(s, d)| {
            i64::try_from(s)
                .map(|s| (s, d))
                .map_err(|_| Error::Overflow(format!("extent {s} does not fit in 64 bits")))
        })
        .collect()
}

/// One mode's shape or stride from its sub-mode values: an integer for one, a tuple otherwise.
fn mode_tuple(values: Vec<i64>) -> IntTuple {
    match values.as_slice() {
        [v] => IntTuple::Int(*v),
        _ => IntTuple::Tuple(values.into_iter().map(IntTuple::Int).collect()),
    }
}

/// Parses a whole layout (see the module docs for the grammar).
fn parse_cute_layout(text: &str, column_offset: usize) -> Result<CuteLayout> {
    let mut cursor = Cursor::new(NOTATION, text, column_offset);
    match shape_or_layout(&mut cursor)? {
        Operand::Shape(shape) => {
            if !cursor.at_end() {
                return Err(cursor.unexpected("':' or the end of the input"));
            }
            CuteLayout::from_shape(shape)
        }
        Operand::Layout(layout) => {
            cursor.expect_end()?;
            Ok(layout)
        }
    }
}

/// A bare shape or a `shape:stride` layout, as read by [`shape_or_layout`].
pub(crate) enum Operand {
    /// A shape without a stride (a valid shape: entries at least 1, no empty tuple).
    Shape(IntTuple),
    /// A layout with an explicit stride.
    Layout(CuteLayout),
}

/// Parses `shape` or `shape:stride` at the cursor and stops after it, so that other grammars
/// (the algebra's tilers) can embed CuTe text.
pub(crate) fn shape_or_layout(cursor: &mut Cursor) -> Result<Operand> {
    reject_swizzle(cursor)?;
    let mut shape_at = Vec::new();
    let shape = int_tuple(cursor, &mut shape_at)?;
    if let Some((i, message)) = shape_defect(&shape) {
        return Err(cursor.error_at(shape_at[i], &message));
    }
    if !cursor.eat(':') {
        return Ok(Operand::Shape(shape));
    }
    let mut stride_at = Vec::new();
    let stride = int_tuple(cursor, &mut stride_at)?;
    if let Some((i, message)) = congruence_defect(&shape, &stride) {
        return Err(cursor.error_at(stride_at[i], &message));
    }
    CuteLayout::new(shape, stride).map(Operand::Layout)
}

/// Reports CuTe's swizzled layouts (`Sw<B,M,S> o offset o layout`) as unsupported.
fn reject_swizzle(cursor: &mut Cursor) -> Result<()> {
    if cursor.eat_str("Sw<") {
        return Err(Error::Unsupported(
            "swizzled layouts (`Sw<B,M,S> o …`) XOR address bits and have no affine form".into(),
        ));
    }
    Ok(())
}

/// Parses an integer tuple, recording the position of each of its tokens (see [`Token`]) in
/// `positions`, in token order.
fn int_tuple(cursor: &mut Cursor, positions: &mut Vec<usize>) -> Result<IntTuple> {
    cursor.skip_ws();
    positions.push(cursor.pos());
    if !cursor.eat('(') {
        return integer(cursor).map(IntTuple::Int);
    }
    cursor.enter()?;
    let mut items = Vec::new();
    loop {
        items.push(int_tuple(cursor, positions)?);
        if !cursor.eat(',') {
            break;
        }
        cursor.skip_ws();
        if cursor.peek() == Some(')') {
            break;
        }
    }
    cursor.skip_ws();
    positions.push(cursor.pos());
    if !cursor.eat(')') {
        return Err(cursor.unexpected("',' or ')'"));
    }
    cursor.leave();
    Ok(IntTuple::Tuple(items))
}

/// Parses an integer with an optional static marker: `8`, `-1`, `_8`, `_-1`.
fn integer(cursor: &mut Cursor) -> Result<i64> {
    let is_number_start = |c: Option<char>| c.is_some_and(|c| c.is_ascii_digit() || c == '-');
    if cursor.peek() == Some('_') {
        cursor.bump();
        if !is_number_start(cursor.peek()) {
            return Err(cursor.unexpected("a number right after the static marker '_'"));
        }
    } else if !is_number_start(cursor.peek()) {
        return Err(cursor.unexpected("a number or '('"));
    }
    let value = cursor.int()?;
    if cursor.peek() == Some('@') {
        return Err(Error::Unsupported(
            "ScaledBasis strides (`_1@0`) are vector-valued, not offsets in one buffer".into(),
        ));
    }
    Ok(value)
}

/// Test helpers for CuTe layouts, shared by this module's tests and the algebra's: a parser
/// that panics with the text, and proptest strategies.
#[cfg(test)]
pub(crate) mod testing {
    use super::{CuteLayout, IntTuple};
    use proptest::prelude::*;

    /// Parses CuTe text, panicking with the text on failure.
    pub(crate) fn cute(text: &str) -> CuteLayout {
        CuteLayout::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    /// Shapes nested up to `depth` levels with about `nodes` entries, each entry 1 to 4.
    pub(crate) fn shapes(depth: u32, nodes: u32) -> BoxedStrategy<IntTuple> {
        (1..=4i64)
            .prop_map(IntTuple::Int)
            .prop_recursive(depth, nodes, 3, |inner| {
                prop::collection::vec(inner, 1..=3).prop_map(IntTuple::Tuple)
            })
            .boxed()
    }

    /// Layouts over `shapes` with every stride drawn from `strides` (so broadcast, negative and
    /// overlapping strides all occur).
    pub(crate) fn layouts(
        shapes: BoxedStrategy<IntTuple>,
        strides: std::ops::RangeInclusive<i64>,
    ) -> BoxedStrategy<CuteLayout> {
        shapes
            .prop_flat_map(move |shape| {
                let n = shape.leaves().len();
                prop::collection::vec(strides.clone(), n).prop_map(move |strides| {
                    let stride = shape.with_leaves(&strides);
                    CuteLayout::new(shape.clone(), stride).unwrap()
                })
            })
            .boxed()
    }

    /// Injective layouts over `shapes`: the flattened modes, visited in a random order, get
    /// strides `gap · (shape × stride of the mode visited before)`, with each gap between 1 and
    /// `max_gap`. With `max_gap = 1` the layout is a bijection onto `0..size` (compact).
    pub(crate) fn injective_layouts(
        shapes: BoxedStrategy<IntTuple>,
        max_gap: i64,
    ) -> BoxedStrategy<CuteLayout> {
        shapes
            .prop_flat_map(move |shape| {
                let n = shape.leaves().len();
                let order = Just((0..n).collect::<Vec<usize>>()).prop_shuffle();
                let gaps = prop::collection::vec(1..=max_gap, n);
                (Just(shape), order, gaps)
            })
            .prop_map(|(shape, order, gaps)| {
                let sizes = shape.leaves();
                let mut strides = vec![0; sizes.len()];
                let mut running = 1;
                for (&m, gap) in order.iter().zip(gaps) {
                    strides[m] = running * gap;
                    running = strides[m] * sizes[m];
                }
                let stride = shape.with_leaves(&strides);
                CuteLayout::new(shape, stride).unwrap()
            })
            .boxed()
    }

    /// The shapes and layouts of this module's own tests.
    pub(crate) fn arb_shape() -> BoxedStrategy<IntTuple> {
        shapes(3, 12)
    }

    /// Layouts over [`arb_shape`] with strides from -6 to 6.
    pub(crate) fn arb_layout() -> BoxedStrategy<CuteLayout> {
        layouts(arb_shape(), -6..=6)
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{arb_layout, arb_shape, cute};
    use super::*;
    use proptest::prelude::*;
    use serde_json::Value;

    const GOLDEN: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/public_golden.json"
    ));

    fn numbers(value: &Value) -> Vec<i64> {
        value
            .as_array()
            .expect("an array")
            .iter()
            .map(|v| v.as_i64().expect("an integer"))
            .collect()
    }

    fn column_of(err: Error) -> usize {
        match err {
            Error::Parse { column, .. } => column,
            other => panic!("expected a parse error, got {other}"),
        }
    }

    fn parse_column(text: &str) -> usize {
        column_of(CuteLayout::parse(text).unwrap_err())
    }

    #[test]
    fn golden_cases() {
        let cases: Vec<Value> = serde_json::from_str(GOLDEN).expect("golden JSON");
        let mut checked = 0;
        for case in cases.iter().filter(|c| c.get("op").is_none()) {
            let system = case["system"].as_str().expect("system");
            if system != "cute" && system != "moye" {
                continue;
            }
            let id = case["id"].as_str().expect("id");
            let text = case["layout"].as_str().expect("layout");
            let l = cute(text);
            assert_eq!(
                l.size() as u64,
                case["size"].as_u64().expect("size"),
                "{id}"
            );
            assert_eq!(
                l.cosize() as u64,
                case["cosize"].as_u64().expect("cosize"),
                "{id}"
            );
            let colex: Vec<i64> = (0..l.size() as i64).map(|i| l.eval(i).unwrap()).collect();
            assert_eq!(colex, numbers(&case["offsets_1d_colex"]), "{id}");

            let lowered = Layout::parse(&format!("{system}:{text}")).expect(id);
            let shape: Vec<usize> = numbers(&case["logical_shape"])
                .iter()
                .map(|&n| n as usize)
                .collect();
            assert_eq!(lowered.shape(), shape, "{id}");
            assert_eq!(
                lowered.cosize() as u64,
                case["cosize"].as_u64().unwrap(),
                "{id}"
            );
            let offsets = lowered.offsets();
            assert_eq!(offsets, numbers(&case["offsets"]), "{id}");
            if let Some(one_based) = case.get("offsets_1based") {
                let shifted: Vec<i64> = offsets.iter().map(|o| o + 1).collect();
                assert_eq!(shifted, numbers(one_based), "{id}");
            }
            checked += 1;
        }
        assert_eq!(checked, 19, "every cute and moye layout case");
    }

    #[test]
    fn reads_moye_text_static_markers_and_one_tuples() {
        assert_eq!(cute("(4, (2, 3)):(2, (1, 8))"), cute("(4,(2,3)):(2,(1,8))"));
        assert_eq!(
            cute(" ( _4 ,( 2,_3 ) ) : ( 2 , (_1 , 8) ) "),
            cute("(4,(2,3)):(2,(1,8))")
        );
        let negative = cute("(_4,2):(_-1,-4)");
        assert_eq!(negative.to_string(), "(4,2):(-1,-4)");
        assert_eq!(cute("(8,):(1,)"), cute("(8):(1)"));
        assert_eq!(cute("(8):(1)").rank(), 1);
        assert_eq!(cute("(8):(1)").to_string(), "(8):(1)");
        assert_eq!(cute("(8):(1)").moye(), "(8,):(1,)");
        assert_eq!(cute("((4,2)):((2,1))").moye(), "((4, 2),):((2, 1),)");
        assert_eq!(cute("_8:_1").to_string(), "8:1");
        assert_eq!(cute("8:1").moye(), "8:1");
    }

    #[test]
    fn bare_shape_is_layout_left() {
        assert_eq!(cute("(2,4)").to_string(), "(2,4):(1,2)");
        assert_eq!(cute("(1,(2,4))").to_string(), "(1,(2,4)):(0,(1,2))");
        assert_eq!(cute("((2,1),3)").to_string(), "((2,1),3):((1,0),2)");
        assert_eq!(cute("8").to_string(), "8:1");
        assert_eq!(cute("1").to_string(), "1:0");
    }

    #[test]
    fn negative_and_zero_strides_lower_and_size_the_buffer() {
        let l = cute("(3,2):(-1,4)");
        assert_eq!(l.cosize(), 7);
        let lowered = l.to_layout().unwrap();
        assert_eq!(lowered.offsets(), [0, 4, -1, 3, -2, 2]);
        assert_eq!(lowered.cosize(), 7);
        let broadcast = cute("(4,2):(1,0)").to_layout().unwrap();
        assert_eq!(broadcast.offsets(), [0, 0, 1, 1, 2, 2, 3, 3]);
        assert_eq!(cute("(4,2):(1,0)").cosize(), 4);
    }

    #[test]
    fn lowering_leaves_out_unit_and_broadcast_sub_modes() {
        let l = cute("((2,1,3),(4,2)):((1,7,2),(0,5))").to_layout().unwrap();
        assert_eq!(l.shape(), [6, 8]);
        let digits: Vec<(Option<usize>, usize, Option<usize>, i64)> = l
            .digits()
            .iter()
            .map(|g| (g.dim(), g.div, g.ext, g.stride))
            .collect();
        assert_eq!(
            digits,
            [
                (Some(0), 1, Some(2), 1),
                (Some(0), 2, None, 2),
                (Some(1), 4, None, 5)
            ]
        );
    }

    #[test]
    fn structure_methods() {
        let l = cute("((2,2),(3,(4,5))):((1,2),(4,(12,48)))");
        assert_eq!((l.rank(), l.depth(), l.size()), (2, 3, 240));
        assert_eq!(l.mode(1).unwrap().to_string(), "(3,(4,5)):(4,(12,48))");
        assert_eq!(l.mode(2), None);
        assert_eq!(cute("8:2").mode(0), Some(cute("8:2")));
        assert_eq!(l.flatten().to_string(), "(2,2,3,4,5):(1,2,4,12,48)");
        assert_eq!(cute("8:2").flatten(), cute("8:2"));
        assert_eq!((cute("8:2").rank(), cute("8:2").depth()), (1, 0));
        assert_eq!(l.shape().leaves(), [2, 2, 3, 4, 5]);
        assert_eq!(l.stride().to_string(), "((1,2),(4,(12,48)))");
    }

    #[test]
    fn eval_continues_past_the_last_mode_and_truncates_negatives() {
        let l = cute("(2,3):(1,2)");
        assert_eq!(l.eval(6).unwrap(), 6);
        assert_eq!(l.eval(9).unwrap(), 1 + 2 * 4);
        // C++ truncation: -3 -> (-3 % 2, -3 / 2) = (-1, -1).
        assert_eq!(l.eval(-3).unwrap(), -1 - 2);
        assert_eq!(cute("8:3").eval(100).unwrap(), 300);
    }

    #[test]
    fn from_layout_inverts_the_lowering() {
        for text in [
            "(2,(2,2)):(4,(2,1))",
            "8:1",
            "((4,2)):((2,1))",
            "(4,(2,2)):(1,(0,3))",
            "(4,2):(1,0)",
            "(3,2):(-1,4)",
            "(1,5):(0,1)",
        ] {
            let l = cute(text);
            assert_eq!(
                CuteLayout::from_layout(&l.to_layout().unwrap()).unwrap(),
                l,
                "{text}"
            );
        }
        // Size-1 sub-modes are dropped, the function is kept.
        let back = CuteLayout::from_layout(&cute("((2,1),3):((1,9),2)").to_layout().unwrap());
        assert_eq!(back.unwrap().to_string(), "(2,3):(1,2)");
    }

    #[test]
    fn from_layout_reports_what_cute_cannot_express() {
        let unsupported = |l: &Layout| {
            assert!(
                matches!(CuteLayout::from_layout(l), Err(Error::Unsupported(_))),
                "{l}"
            )
        };
        // Padding: 5 elements in tiles of 2.
        let padded = Layout::new(
            &[5],
            vec![
                Digit::new(Source::Dim(0), 1, Some(2), 1),
                Digit::new(Source::Dim(0), 2, None, 2),
            ],
        )
        .unwrap();
        unsupported(&padded);
        let declared = Layout::from_parts(
            &[4],
            vec![Digit::new(Source::Dim(0), 1, None, 1)],
            0,
            Some(8),
        );
        unsupported(&declared.unwrap());
        let based = Layout::from_parts(&[4], vec![Digit::new(Source::Dim(0), 1, None, 1)], 3, None);
        unsupported(&based.unwrap());
        let fused = Layout::new(
            &[2, 3],
            vec![Digit::new(Source::fused([(0, 3), (1, 1)]), 1, None, 1)],
        );
        unsupported(&fused.unwrap());
        // x % 2 + x / 3: not a mixed-radix number.
        let gap = Layout::new(
            &[6],
            vec![
                Digit::new(Source::Dim(0), 1, Some(2), 1),
                Digit::new(Source::Dim(0), 3, None, 4),
            ],
        );
        unsupported(&gap.unwrap());
        unsupported(&Layout::new(&[], vec![]).unwrap());
    }

    #[test]
    fn parse_errors_name_the_column() {
        assert_eq!(parse_column("(2,4:(1,2)"), 5);
        assert_eq!(parse_column("(2,(2,2)):(4,2,1)"), 14);
        assert_eq!(parse_column("(2,(2,2)):(4,(2,1),3)"), 20);
        assert_eq!(parse_column("(2,(2,2)):(4,(2))"), 16);
        assert_eq!(parse_column("(2,(2,2)):4"), 11);
        assert_eq!(parse_column("(2,0):(1,2)"), 4);
        assert_eq!(parse_column("(2,-3)"), 4);
        assert_eq!(parse_column("()"), 2);
        assert_eq!(parse_column("(2,_ 3)"), 5);
        assert_eq!(parse_column("(2,x)"), 4);
        assert_eq!(parse_column("(2,4):(1,2) 7"), 13);
        assert_eq!(parse_column("(2,4) 7"), 7);
        assert_eq!(parse_column(""), 1);
        assert_eq!(parse_column("99999999999999999999:1"), 1);
        // The column counts the whole input, prefix included.
        assert_eq!(
            column_of(Layout::parse("cute:(2,4):(1,x)").unwrap_err()),
            15
        );
        assert_eq!(column_of(Layout::parse("moye:(2, 0)").unwrap_err()), 10);
        let message = CuteLayout::parse("(2,(2,2)):(4,2,1)")
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("not congruent") && message.contains("a tuple of 2"),
            "{message}"
        );
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let deep = format!("{}1{}", "(".repeat(100_000), ")".repeat(100_000));
        assert!(matches!(CuteLayout::parse(&deep), Err(Error::Parse { .. })));
        let ok = format!(
            "{}1{}:{}1{}",
            "(".repeat(20),
            ")".repeat(20),
            "(".repeat(20),
            ")".repeat(20)
        );
        assert_eq!(cute(&ok).depth(), 20);
    }

    #[test]
    fn invalid_layouts_from_parts() {
        let int = IntTuple::Int;
        let tuple = IntTuple::Tuple;
        let invalid =
            |r: Result<CuteLayout>| assert!(matches!(r, Err(Error::InvalidLayout(_))), "{r:?}");
        invalid(CuteLayout::new(tuple(vec![int(2), int(3)]), int(1)));
        invalid(CuteLayout::new(int(0), int(1)));
        invalid(CuteLayout::new(tuple(vec![]), tuple(vec![])));
        invalid(CuteLayout::new(
            tuple(vec![int(2), int(3)]),
            tuple(vec![int(1)]),
        ));
        invalid(CuteLayout::from_shape(tuple(vec![int(2), int(-1)])));
    }

    #[test]
    fn overflow_is_reported() {
        let overflow =
            |r: Result<CuteLayout>| assert!(matches!(r, Err(Error::Overflow(_))), "{r:?}");
        overflow(CuteLayout::parse(
            "(1000000000000,1000000000000):(1,1000000000000)",
        ));
        overflow(CuteLayout::parse("(2,4611686018427387904):(1,2)"));
        overflow(CuteLayout::parse("(4,4611686018427387904)"));
        assert!(matches!(
            Layout::parse("cute:3:4611686018427387903"),
            Err(Error::Overflow(_))
        ));
        assert!(matches!(
            cute("2:1000").eval(i64::MAX),
            Err(Error::Overflow(_))
        ));
        let huge: IntTuple = "(4611686018427387904,4611686018427387904)".parse().unwrap();
        assert!(matches!(huge.product(), Err(Error::Overflow(_))));
    }

    #[test]
    fn unsupported_cute_features() {
        for text in ["Sw<3,4,3> o _0 o (8,8):(8,1)", "(_4,_8):(_1@0,_1@1)"] {
            assert!(
                matches!(CuteLayout::parse(text), Err(Error::Unsupported(_))),
                "{text}"
            );
        }
    }

    /// CuTe's `crd2idx` for an integer coordinate, written straight from LAYOUTS.md §1.2.
    fn crd2idx(c: i64, shape: &IntTuple, stride: &IntTuple) -> i64 {
        match (shape, stride) {
            (IntTuple::Int(_), IntTuple::Int(d)) => c * d,
            (IntTuple::Tuple(s), IntTuple::Tuple(d)) => {
                let mut c = c;
                let mut offset = 0;
                for m in 0..s.len() - 1 {
                    let size = s[m].product().unwrap();
                    offset += crd2idx(c % size, &s[m], &d[m]);
                    c /= size;
                }
                offset + crd2idx(c, &s[s.len() - 1], &d[d.len() - 1])
            }
            _ => unreachable!("congruent"),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn printing_then_parsing_round_trips(l in arb_layout()) {
            let lowered = l.to_layout().unwrap();
            for text in [l.to_string(), l.moye()] {
                let back = CuteLayout::parse(&text).unwrap();
                prop_assert_eq!(&back, &l);
                prop_assert!(back.to_layout().unwrap().same_function(&lowered));
            }
        }

        #[test]
        fn lowering_agrees_with_crd2idx(l in arb_layout()) {
            let lowered = l.to_layout().unwrap();
            let modes: Vec<(IntTuple, IntTuple)> = match (l.shape(), l.stride()) {
                (IntTuple::Tuple(s), IntTuple::Tuple(d)) => s.iter().cloned().zip(d.iter().cloned()).collect(),
                (s, d) => vec![(s.clone(), d.clone())],
            };
            for coord in crate::layout::Coords::new(lowered.shape()) {
                let expected: i64 = coord
                    .iter()
                    .zip(&modes)
                    .map(|(&c, (s, d))| crd2idx(c as i64, s, d))
                    .sum();
                prop_assert_eq!(lowered.offset(&coord).unwrap(), expected);
            }
            let size = l.size() as i64;
            for i in -size..2 * size {
                prop_assert_eq!(l.eval(i).unwrap(), crd2idx(i, l.shape(), l.stride()));
            }
        }

        #[test]
        fn from_layout_of_the_lowering_is_the_same_function(l in arb_layout()) {
            let lowered = l.to_layout().unwrap();
            let back = CuteLayout::from_layout(&lowered).unwrap();
            prop_assert!(back.to_layout().unwrap().same_function(&lowered));
            prop_assert_eq!(back.cosize(), l.cosize());
        }

        #[test]
        fn layout_left_is_the_identity_in_one_dimension(shape in arb_shape()) {
            let l = CuteLayout::from_shape(shape).unwrap();
            prop_assert_eq!(l.cosize(), l.size());
            for i in 0..l.size() as i64 {
                prop_assert_eq!(l.eval(i).unwrap(), i);
            }
        }

        #[test]
        fn garbage_never_panics(text in "[0-9_(),: @Sw<>-]{0,40}", any_text in any::<String>()) {
            for t in [&text, &any_text] {
                let _ = CuteLayout::parse(t);
                let _ = t.parse::<IntTuple>();
                let _ = Layout::parse(&format!("cute:{t}"));
            }
        }
    }
}
