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
//! A shape entry of 0 is an empty tensor, as in CuTe: [`Layout::parse`] takes `cute:(0,4):(4,1)`
//! (or a bare `cute:(0,4)`) as the layout of 0 elements of shape `[0, 4]`, with no offsets and a
//! buffer of 0 elements. [`CuteLayout`], the type of the layout algebra, keeps every entry at
//! least 1 (its operations divide by them) and rejects such text.
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
//! # Swizzled layouts
//!
//! CuTe's swizzled layouts `Sw<B,M,S> o OFFSET o LAYOUT` (what CuTe prints for a
//! `ComposedLayout` of a `Swizzle`, an offset and a layout, e.g. `Sw<3,3,3> o _0 o
//! (8,64):(64,1)`) send `x` to `swizzle(OFFSET + LAYOUT(x))`, an XOR of offset bits (see
//! [`Swizzle`](crate::layout::Swizzle)). [`Layout::parse`] takes them, with or without the
//! `OFFSET o` part, and lowers them to a swizzled [`Layout`] ([`Layout::with_swizzle`]);
//! [`SwizzledLayout`] parses and prints them. The layout algebra ([`CuteLayout`]) composes affine
//! layouts only and reports them as [`Error::Unsupported`].
//!
//! ```
//! use relayout::Layout;
//! let l = Layout::parse("cute:Sw<1,0,1> o (2,2):(2,1)")?;
//! assert_eq!(l.offsets(), [0, 1, 3, 2]); // row 1: bit 1 flips bit 0
//! # Ok::<(), relayout::Error>(())
//! ```
//!
//! # Not supported
//!
//! `ScaledBasis` strides (`_1@0`, vector-valued) are not offsets of one buffer and are reported
//! as [`Error::Unsupported`]. Empty tuples `()` are rejected: they describe no dimension.

use std::fmt;
use std::str::FromStr;

mod int_tuple;
mod swizzled;
#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;

pub use int_tuple::IntTuple;
use int_tuple::Token;
pub use swizzled::SwizzledLayout;

use super::cursor::Cursor;
use super::Parsed;
use crate::error::{Error, Result};
use crate::layout::{Digit, Layout, Source, MAX_OFFSET};

/// The notation name used in parse errors.
const NOTATION: &str = "cute";

/// Parses cute layout text that starts `column_offset` characters into the user's input: a
/// layout, an empty layout, or either of them swizzled (`Sw<B,M,S> o …`).
pub(crate) fn parse_layout(text: &str, column_offset: usize) -> Result<Parsed> {
    let mut cursor = Cursor::new(NOTATION, text, column_offset);
    let swizzle = swizzled::swizzle_prefix(&mut cursor)?;
    let at = cursor.pos();
    let (text, column_offset) = match at {
        0 => (text.to_string(), column_offset),
        _ => (text.chars().skip(at).collect(), column_offset + at),
    };
    let layout = match parse_empty(&text, column_offset)? {
        Some(layout) => layout,
        None => parse_cute_layout(&text, column_offset)?.to_layout()?,
    };
    let layout = match swizzle {
        Some((swizzle, offset)) => swizzled::swizzle_layout(layout, swizzle, offset)?,
        None => layout,
    };
    Ok(Parsed {
        layout,
        dtype: None,
        packed: None,
    })
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
        if let Some(swizzle) = layout.swizzle() {
            return Err(Error::Unsupported(format!(
                "{layout} is swizzled by {swizzle}; SwizzledLayout::from_layout writes it in \
                 CuTe's notation"
            )));
        }
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
    shape_defect_from(shape, 1)
}

/// [`shape_defect`] with `least` the smallest entry allowed (0 for an empty layout's shape).
fn shape_defect_from(shape: &IntTuple, least: i64) -> Option<(usize, String)> {
    shape
        .tokens()
        .enumerate()
        .find_map(|(i, token)| match token {
            Token::Int(0) if least > 0 => Some((
                i,
                "shape entries of the layout algebra must be at least 1, found 0 (an empty \
                 layout is a Layout, not a CuteLayout)"
                    .to_string(),
            )),
            Token::Int(v) if v < least => {
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

/// An empty tensor's layout: text whose shape has an entry of 0, lowered straight to the empty
/// canonical layout whose dims are the top-level modes (each of extent the product of its
/// entries, so 0 where an entry is 0). `None` for any other text, which the ordinary parser
/// takes (and reports the errors of); an error for an empty layout that is malformed.
fn parse_empty(text: &str, column_offset: usize) -> Result<Option<Layout>> {
    let mut cursor = Cursor::new(NOTATION, text, column_offset);
    let mut shape_at = Vec::new();
    let Ok(shape) = int_tuple(&mut cursor, &mut shape_at) else {
        return Ok(None);
    };
    let leaves = shape.leaves();
    if !leaves.contains(&0) || leaves.iter().any(|&v| v < 0) {
        return Ok(None);
    }
    if let Some((i, message)) = shape_defect_from(&shape, 0) {
        return Err(cursor.error_at(shape_at[i], &message));
    }
    if cursor.eat(':') {
        let mut stride_at = Vec::new();
        let stride = int_tuple(&mut cursor, &mut stride_at)?;
        if let Some((i, message)) = congruence_defect(&shape, &stride) {
            return Err(cursor.error_at(stride_at[i], &message));
        }
    }
    cursor.expect_end()?;
    let modes = match &shape {
        IntTuple::Int(n) => vec![*n],
        IntTuple::Tuple(items) => items
            .iter()
            .map(|mode| {
                let entries = mode.leaves();
                match entries.contains(&0) {
                    true => Some(0),
                    false => entries.iter().try_fold(1i64, |a, &n| a.checked_mul(n)),
                }
            })
            .collect::<Option<Vec<i64>>>()
            .ok_or_else(|| Error::Overflow(format!("the size of a mode of {shape} overflows")))?,
    };
    crate::layout::check_rank(modes.len())?;
    let dims: Vec<usize> = modes
        .iter()
        .map(|&n| usize::try_from(n).unwrap_or(usize::MAX))
        .collect();
    Layout::new(&dims, Vec::new()).map(Some)
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

/// Reports CuTe's swizzled layouts (`Sw<B,M,S> o offset o layout`) as unsupported where an
/// affine layout is needed (the layout algebra and its tilers; [`Layout::parse`] reads the
/// swizzle before it gets here).
fn reject_swizzle(cursor: &mut Cursor) -> Result<()> {
    if cursor.eat_str("Sw<") || cursor.eat_str("Swizzle<") {
        return Err(Error::Unsupported(
            "a swizzled layout (`Sw<B,M,S> o …`) in the layout algebra, which composes affine \
             layouts only; Layout::parse and SwizzledLayout read swizzled layouts"
                .into(),
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
