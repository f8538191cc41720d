//! The canonical layout model that every notation lowers to.
//!
//! A [`Layout`] maps a logical coordinate `x` of a tensor of shape `[n_0, …, n_{r-1}]` to an
//! element offset in a buffer:
//!
//! ```text
//! offset(x) = base + Σ_k stride_k · (((source_k(x) + shift_k) floordiv div_k) mod ext_k)
//! ```
//!
//! Each term is a [`Digit`]. Usually a digit reads one logical coordinate (`source = x[d]`) and
//! the digits of one dimension tile it as a mixed-radix number; the top digit may over-cover the
//! dimension (padding). The buffer a layout needs starts at its lowest offset (or 0) and holds
//! [`Layout::cosize`] elements, which includes any padding the notation declares.
//!
//! A layout may also carry a [`Swizzle`] (CuTe's `Sw<B,M,S> o offset o layout`), an XOR of
//! offset bits applied to that sum: `offset(x) = swizzle(base + Σ_k …)`.
//!
//! ```
//! use relayout::Layout;
//!
//! let l = Layout::row_major(&[2, 3])?;
//! assert_eq!(l.offset(&[1, 2])?, 5);
//! let t = Layout::col_major(&[2, 3])?;
//! assert_eq!(t.offset(&[1, 2])?, 5);
//! assert_eq!(t.offset(&[1, 0])?, 1);
//! # Ok::<(), relayout::Error>(())
//! ```

mod analysis;
mod canonical;
mod coords;
mod digit;
mod slice;
mod swizzle;

use std::fmt;

pub use coords::{for_each_coord, Coords};
pub use digit::{Digit, Source};
pub use swizzle::{Swizzle, MAX_SWIZZLE_BIT};

use crate::error::{Error, Result};

/// Largest absolute offset (and buffer length) a layout may reach. Keeping a factor of 8 below
/// `i64::MAX` leaves room for byte offsets of 8-byte elements without overflow.
pub const MAX_OFFSET: i128 = (i64::MAX / 8) as i128;

/// Most logical dimensions a layout may have (NumPy's limit). Real tensors have far fewer; the
/// limit keeps the analyses, which are polynomial in the rank, fast on absurd input.
pub const MAX_RANK: usize = 64;

/// Most digits a layout may have (a digit per split of a dim; size-1 splits are usually dropped).
pub const MAX_DIGITS: usize = 1024;

/// Fails with [`Error::Unsupported`] for a rank above [`MAX_RANK`]. The notations call it before
/// they lower a layout, so that absurdly long input fails fast.
pub(crate) fn check_rank(rank: usize) -> Result<()> {
    if rank > MAX_RANK {
        return Err(Error::Unsupported(format!(
            "a layout of rank {rank}; relayout handles at most {MAX_RANK} dimensions"
        )));
    }
    Ok(())
}

/// A tensor layout: logical shape, mixed-radix digits with signed strides, and the buffer size.
///
/// Build one with [`Layout::row_major`], [`Layout::col_major`], [`Layout::from_strides`],
/// [`Layout::new`], or by parsing one of the notations with [`Layout::parse`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Layout {
    shape: Vec<usize>,
    digits: Vec<Digit>,
    base: i64,
    padded_len: Option<usize>,
    swizzle: Option<Swizzle>,
    min_offset: i64,
    max_offset: i64,
}

impl Layout {
    /// A layout from its logical shape and digits, with base 0 and no declared padding.
    ///
    /// An extent of 0 gives an empty layout (see [`Layout::is_empty`]). Fails when a digit names a dim outside the shape, a divisor or radix is
    /// 0, or the offsets could overflow; and with [`Error::Unsupported`] above [`MAX_RANK`]
    /// dimensions or [`MAX_DIGITS`] digits.
    ///
    /// ```
    /// use relayout::{Digit, Layout, Source};
    ///
    /// // Morello's `[0, 0 oe(8)]` on [16]: strips of 8, evens first, then odds.
    /// let l = Layout::new(
    ///     &[16],
    ///     vec![
    ///         Digit::new(Source::Dim(0), 8, None, 8),
    ///         Digit::new(Source::Dim(0), 1, Some(2), 4),
    ///         Digit::new(Source::Dim(0), 2, Some(4), 1),
    ///     ],
    /// )?;
    /// assert_eq!(l.offsets(), [0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15]);
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn new(shape: &[usize], digits: Vec<Digit>) -> Result<Layout> {
        Layout::from_parts(shape, digits, 0, None)
    }

    /// A layout with a constant `base` offset and, optionally, the buffer length its notation
    /// declares (`padded_len`, for padded XLA/TVM/Morello buffers).
    pub fn from_parts(
        shape: &[usize],
        digits: Vec<Digit>,
        base: i64,
        padded_len: Option<usize>,
    ) -> Result<Layout> {
        check_rank(shape.len())?;
        if digits.len() > MAX_DIGITS {
            return Err(Error::Unsupported(format!(
                "a layout of {} digits; relayout handles at most {MAX_DIGITS}",
                digits.len()
            )));
        }
        let elements = shape
            .iter()
            .try_fold(1i128, |acc, &n| acc.checked_mul(n as i128))
            .filter(|&n| n <= MAX_OFFSET);
        if elements.is_none() {
            return Err(Error::Overflow(format!(
                "a shape of {shape:?} has more than {MAX_OFFSET} elements"
            )));
        }
        for digit in &digits {
            if let Some(d) = digit.source.dims().into_iter().find(|&d| d >= shape.len()) {
                return Err(Error::InvalidLayout(format!(
                    "a digit reads dimension {d}, but the shape {shape:?} has rank {}",
                    shape.len()
                )));
            }
            if digit.div == 0 || digit.ext == Some(0) {
                return Err(Error::InvalidLayout(format!(
                    "digit {digit} has a zero divisor or radix"
                )));
            }
        }
        let empty = shape.contains(&0);
        let mut bound = (base as i128).abs();
        // An empty layout has no offsets to bound (and its digits' value ranges are empty).
        for digit in digits.iter().filter(|_| !empty) {
            let (lo, hi) = digit.value_range(shape);
            bound += (digit.stride as i128).abs() * lo.abs().max(hi.abs());
            if bound > MAX_OFFSET {
                return Err(Error::Overflow(format!(
                    "the offsets of a layout of shape {shape:?} reach beyond {MAX_OFFSET}"
                )));
            }
        }
        if padded_len.is_some_and(|n| n as i128 > MAX_OFFSET) {
            return Err(Error::Overflow(format!(
                "a buffer of {} elements is larger than {MAX_OFFSET}",
                padded_len.unwrap_or(0)
            )));
        }
        let mut layout = Layout {
            shape: shape.to_vec(),
            digits,
            base,
            padded_len,
            swizzle: None,
            min_offset: 0,
            max_offset: 0,
        };
        if !empty {
            let (lo, hi) = analysis::offset_span(&layout);
            // Both fit: every partial sum is bounded by `bound` above.
            layout.min_offset = lo as i64;
            layout.max_offset = hi as i64;
        }
        Ok(layout)
    }

    /// This layout with its offsets swizzled: `offset(x) = swizzle(base + Σ digits)`, CuTe's
    /// `Sw<B,M,S> o base o layout`. An identity swizzle (`B = 0`) leaves the layout as it is.
    ///
    /// The buffer ([`Layout::cosize`]) covers the swizzled offsets: exactly for compact layouts
    /// and for layouts of up to 2^20 elements, and otherwise rounded out to whole blocks of
    /// `2^top_bit` (see [`Swizzle::top_bit`]). Fails with [`Error::Unsupported`] for a layout that is
    /// already swizzled, and with [`Error::Overflow`] when the swizzled offsets reach beyond
    /// [`MAX_OFFSET`].
    ///
    /// ```
    /// use relayout::{layout::Swizzle, Layout};
    ///
    /// // CuTe's Sw<1,0,1> o (2,2):(2,1): bit 1 (the row) flips bit 0 (the column).
    /// let l = Layout::row_major(&[2, 2])?.with_swizzle(Swizzle::new(1, 0, 1)?)?;
    /// assert_eq!(l.offsets(), [0, 1, 3, 2]);
    /// assert!(l.is_injective());
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn with_swizzle(self, swizzle: Swizzle) -> Result<Layout> {
        if swizzle.is_identity() {
            return Ok(self);
        }
        if let Some(old) = self.swizzle {
            return Err(Error::Unsupported(format!(
                "{swizzle} of a layout already swizzled by {old}: relayout applies one swizzle"
            )));
        }
        let mut layout = Layout {
            swizzle: Some(swizzle),
            ..self
        };
        if !layout.is_empty() {
            let (lo, hi) = analysis::swizzled_span(&layout);
            if lo < -MAX_OFFSET || hi > MAX_OFFSET {
                return Err(Error::Overflow(format!(
                    "the swizzled offsets of {layout} reach beyond {MAX_OFFSET}"
                )));
            }
            layout.min_offset = lo as i64;
            layout.max_offset = hi as i64;
        }
        Ok(layout)
    }

    /// The layout of each element's `parts` equal parts (a power of two): a new innermost
    /// logical dim of `parts` contiguous parts, and every offset of the layout times `parts`.
    /// A relayout of 16-byte elements (`c128`) is the relayout of their two 8-byte halves.
    ///
    /// ```
    /// use relayout::Layout;
    ///
    /// let l = Layout::col_major(&[2, 3])?.split_elements(2)?;
    /// assert_eq!(l.shape(), [2, 3, 2]);
    /// assert_eq!(l.offsets(), [0, 1, 4, 5, 8, 9, 2, 3, 6, 7, 10, 11]);
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn split_elements(&self, parts: usize) -> Result<Layout> {
        if !parts.is_power_of_two() {
            return Err(Error::InvalidLayout(format!(
                "elements split into {parts} parts; the parts of an element are a power of two"
            )));
        }
        let scale = parts as i64;
        let mut shape = self.shape.clone();
        shape.push(parts);
        let mut digits: Vec<Digit> = self
            .digits
            .iter()
            .map(|g| Digit {
                stride: g.stride.saturating_mul(scale),
                ..g.clone()
            })
            .collect();
        digits.push(Digit::new(Source::Dim(self.rank()), 1, None, 1));
        let padded = self.padded_len.map(|n| n.saturating_mul(parts));
        let split = Layout::from_parts(&shape, digits, self.base.saturating_mul(scale), padded)?;
        match self.swizzle {
            None => Ok(split),
            // The swizzle's bits move up with the offsets; the part bits below stay as they are.
            Some(sw) => split.with_swizzle(Swizzle::new(
                sw.bits() as i64,
                sw.base() as i64 + parts.trailing_zeros() as i64,
                sw.shift() as i64,
            )?),
        }
    }

    /// The swizzle applied to the offsets, if any (see [`Layout::with_swizzle`]).
    pub fn swizzle(&self) -> Option<Swizzle> {
        self.swizzle
    }

    /// The layout without its swizzle: the affine part, `base + Σ digits` (the layout itself
    /// when it has no swizzle).
    pub fn unswizzled(&self) -> Layout {
        let mut layout = Layout {
            swizzle: None,
            ..self.clone()
        };
        if self.swizzle.is_some() && !self.is_empty() {
            let (lo, hi) = analysis::offset_span(&layout);
            // The constructor bounded the affine offsets by MAX_OFFSET.
            layout.min_offset = lo as i64;
            layout.max_offset = hi as i64;
        }
        layout
    }

    /// The row-major (C order, last dim fastest) layout of `shape`.
    pub fn row_major(shape: &[usize]) -> Result<Layout> {
        let order: Vec<usize> = (0..shape.len()).collect();
        Layout::ordered(shape, &order)
    }

    /// The column-major (Fortran order, first dim fastest) layout of `shape`.
    pub fn col_major(shape: &[usize]) -> Result<Layout> {
        let order: Vec<usize> = (0..shape.len()).rev().collect();
        Layout::ordered(shape, &order)
    }

    /// The compact layout that stores the dims in `order`, slowest first: `[0, 1]` is row-major
    /// for a matrix, `[1, 0]` column-major, `[0, 2, 3, 1]` NHWC for an NCHW tensor.
    ///
    /// ```
    /// use relayout::Layout;
    /// let nhwc = Layout::ordered(&[2, 3, 4, 5], &[0, 2, 3, 1])?;
    /// assert_eq!(nhwc.offset(&[0, 1, 0, 0])?, 1);
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn ordered(shape: &[usize], order: &[usize]) -> Result<Layout> {
        let mut sorted = order.to_vec();
        sorted.sort_unstable();
        if sorted != (0..shape.len()).collect::<Vec<_>>() {
            return Err(Error::InvalidLayout(format!(
                "{order:?} is not a permutation of the dims of a rank-{} shape",
                shape.len()
            )));
        }
        let mut strides = vec![0i64; shape.len()];
        let mut volume: i128 = 1;
        for &d in order.iter().rev() {
            strides[d] = i64::try_from(volume).map_err(|_| overflow(shape))?;
            volume *= shape[d] as i128;
            if volume > MAX_OFFSET {
                return Err(overflow(shape));
            }
        }
        Layout::from_strides(shape, &strides)
    }

    /// The strided layout `offset(x) = Σ strides[d]·x[d]` (NumPy/ndarray strides in elements).
    ///
    /// ```
    /// use relayout::Layout;
    /// let l = Layout::from_strides(&[3, 4], &[1, 3])?;
    /// assert_eq!(l.offset(&[2, 1])?, 5);
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn from_strides(shape: &[usize], strides: &[i64]) -> Result<Layout> {
        if shape.len() != strides.len() {
            return Err(Error::InvalidLayout(format!(
                "shape {shape:?} and strides {strides:?} have different ranks"
            )));
        }
        let digits = strides
            .iter()
            .enumerate()
            .map(|(d, &s)| Digit::new(Source::Dim(d), 1, None, s))
            .collect();
        Layout::new(shape, digits)
    }

    /// The logical shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The number of logical dimensions.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// The number of logical elements (the product of the shape).
    pub fn size(&self) -> usize {
        self.shape.iter().product()
    }

    /// Whether the layout has no elements (an extent is 0): an empty tensor, as CuTe, XLA and
    /// NumPy allow. It has no offsets, needs no buffer ([`Layout::cosize`] is 0), is injective,
    /// and a relayout between two empty layouts moves nothing.
    ///
    /// ```
    /// use relayout::Layout;
    /// let l = Layout::parse("cute:(0,4):(4,1)")?;
    /// assert!(l.is_empty());
    /// assert_eq!((l.size(), l.cosize()), (0, 0));
    /// assert!(l.offsets().is_empty() && l.is_injective());
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.shape.contains(&0)
    }

    /// The digits, in the order they were given (or canonical order after [`Layout::coalesce`]).
    pub fn digits(&self) -> &[Digit] {
        &self.digits
    }

    /// The constant offset added to every element.
    pub fn base(&self) -> i64 {
        self.base
    }

    /// The buffer length the notation declared (padding included), if it declared one.
    pub fn padded_len(&self) -> Option<usize> {
        self.padded_len
    }

    /// The smallest offset of any element (0 for an empty layout).
    pub fn min_offset(&self) -> i64 {
        self.min_offset
    }

    /// The largest offset of any element (0 for an empty layout).
    pub fn max_offset(&self) -> i64 {
        self.max_offset
    }

    /// The offset of buffer index 0: `min(min_offset, 0)`. A buffer handed to relayout starts at
    /// the lowest address the layout touches, so offset `o` lives at index `o - buffer_start`.
    pub fn buffer_start(&self) -> i64 {
        self.min_offset.min(0)
    }

    /// The number of elements a buffer for this layout must hold: from [`Layout::buffer_start`]
    /// to the largest offset, or the declared padded length if that is larger; 0 for an empty
    /// layout, whatever its notation declared.
    ///
    /// ```
    /// use relayout::Layout;
    /// let l = Layout::parse("cute:(2,(2,2)):(4,(2,1))")?;
    /// assert_eq!(l.cosize(), 8);
    /// let x = Layout::parse("xla:f32[3,5]{1,0:T(2,2)}")?;
    /// assert_eq!(x.cosize(), 24); // 15 elements in a padded buffer of 24
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn cosize(&self) -> usize {
        if self.is_empty() {
            return 0;
        }
        let natural = (self.max_offset - self.buffer_start() + 1) as usize;
        natural.max(self.padded_len.unwrap_or(0))
    }

    /// The offset of a logical coordinate.
    pub fn offset(&self, coord: &[usize]) -> Result<i64> {
        self.check_coord(coord)?;
        Ok(self.offset_unchecked(coord))
    }

    /// The buffer index (offset minus [`Layout::buffer_start`]) of a logical coordinate.
    pub fn index(&self, coord: &[usize]) -> Result<usize> {
        Ok((self.offset(coord)? - self.buffer_start()) as usize)
    }

    /// The offset of every logical coordinate, in row-major order of the logical shape.
    pub fn offsets(&self) -> Vec<i64> {
        Coords::new(&self.shape)
            .map(|c| self.offset_unchecked(&c))
            .collect()
    }

    /// The offset of a coordinate already known to be inside the shape.
    pub(crate) fn offset_unchecked(&self, coord: &[usize]) -> i64 {
        // The constructor bounded every partial sum by MAX_OFFSET.
        let sum = self.affine_offset(coord) as i64;
        match self.swizzle {
            Some(swizzle) => swizzle.apply(sum),
            None => sum,
        }
    }

    /// `base + Σ digits` at a coordinate inside the shape: the offset before the swizzle.
    pub(crate) fn affine_offset(&self, coord: &[usize]) -> i128 {
        self.base as i128 + self.digits.iter().map(|d| d.eval(coord)).sum::<i128>()
    }

    fn check_coord(&self, coord: &[usize]) -> Result<()> {
        if coord.len() != self.shape.len() || coord.iter().zip(&self.shape).any(|(c, n)| c >= n) {
            return Err(Error::Coordinate {
                coord: coord.to_vec(),
                shape: self.shape.clone(),
            });
        }
        Ok(())
    }

    /// Whether no two logical coordinates share an offset (a valid destination).
    ///
    /// Proven from the digits when every dimension is a plain mixed-radix number; otherwise
    /// checked element by element for layouts of up to 2^26 elements. Larger layouts that the
    /// structural proof cannot handle are reported as not injective.
    ///
    /// ```
    /// use relayout::Layout;
    /// assert!(Layout::parse("cute:(4,2):(2,1)")?.is_injective());
    /// assert!(!Layout::parse("cute:(4,2):(1,0)")?.is_injective()); // broadcast
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn is_injective(&self) -> bool {
        self.injectivity() == Some(true)
    }

    /// Like [`Layout::is_injective`], but `None` when the layout is too large and irregular to
    /// decide (instead of `false`).
    pub fn injectivity(&self) -> Option<bool> {
        analysis::injectivity(self)
    }

    /// Whether every dim's digits are disjoint mixed-radix digits of that dim alone (no fused
    /// sources, no shifts, no overlaps; gaps are broadcast) and the offsets are not swizzled. The
    /// planner's fast paths need this.
    pub fn is_separable(&self) -> bool {
        (0..self.rank()).all(|d| self.dim_chain(d).is_some())
    }

    /// The digits of dim `d` ordered from least to most significant, if they are disjoint
    /// mixed-radix digits of the dim and the layout is not swizzled (see
    /// [`Layout::is_separable`]).
    pub fn dim_chain(&self, d: usize) -> Option<Vec<&Digit>> {
        if self.swizzle.is_some() {
            return None;
        }
        analysis::dim_chain(self, d).map(|ix| ix.into_iter().map(|i| &self.digits[i]).collect())
    }

    /// The same function with extent-1 digits dropped, inactive moduli removed and continuing
    /// digits merged (CuTe's coalesce rules, per dimension). See [`Layout::same_function`].
    ///
    /// ```
    /// use relayout::Layout;
    /// let l = Layout::parse("cute:((2,2,3)):((1,2,4))")?;
    /// let c = l.coalesce();
    /// assert_eq!(c.digits().len(), 1);
    /// assert!(c.same_function(&l));
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn coalesce(&self) -> Layout {
        canonical::coalesce(self)
    }

    /// Whether the two layouts have the same shape and the same offset for every coordinate.
    ///
    /// Compares canonical forms first and falls back to comparing every element.
    pub fn same_function(&self, other: &Layout) -> bool {
        canonical::same_function(self, other)
    }
}

fn overflow(shape: &[usize]) -> Error {
    Error::Overflow(format!(
        "a compact layout of shape {shape:?} has more than {MAX_OFFSET} elements"
    ))
}

impl fmt::Display for Layout {
    /// `[2, 4] -> 4*x0 + 2*(x1%2) + (x1/2)`, with `; buffer N` when the buffer is padded; a
    /// swizzled layout wraps the sum: `[8, 64] -> Sw<3,4,3>(64*x0 + x1)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dims: Vec<String> = self.shape.iter().map(|n| n.to_string()).collect();
        write!(f, "[{}] -> ", dims.join(", "))?;
        let mut terms: Vec<String> = self.digits.iter().map(|d| d.to_string()).collect();
        if self.base != 0 || terms.is_empty() {
            terms.push(self.base.to_string());
        }
        match self.swizzle {
            Some(swizzle) => write!(f, "{swizzle}({})", terms.join(" + "))?,
            None => write!(f, "{}", terms.join(" + "))?,
        }
        if let Some(n) = self.padded_len {
            write!(f, "; buffer {n}")?;
        }
        Ok(())
    }
}

/// Fails unless `src` and `dst` have one logical shape and `dst` is injective: the conditions
/// for a relayout from `src` to `dst` to be well defined.
pub fn check_pair(src: &Layout, dst: &Layout) -> Result<()> {
    if src.shape() != dst.shape() {
        return Err(Error::ShapeMismatch {
            src: src.shape().to_vec(),
            dst: dst.shape().to_vec(),
        });
    }
    match dst.injectivity() {
        Some(true) => {}
        Some(false) => {
            return Err(Error::NotInjective(format!(
                "{dst} sends two logical coordinates to one slot"
            )))
        }
        None => {
            return Err(Error::NotInjective(format!(
                "{dst} is too large and irregular for relayout to prove it injective"
            )))
        }
    }
    Ok(())
}
