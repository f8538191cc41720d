//! CuTe's swizzled layouts: `Sw<B,M,S> o OFFSET o LAYOUT`, a [`ComposedLayout`] of a swizzle, an
//! offset and a layout.
//!
//! [`ComposedLayout`]: https://github.com/NVIDIA/cutlass/blob/main/include/cute/layout_composed.hpp

use std::fmt;
use std::str::FromStr;

use super::{integer, shape_or_layout, CuteLayout, Operand, NOTATION};
use crate::error::{Error, Result};
use crate::layout::{Layout, Swizzle, MAX_OFFSET};
use crate::notation::cursor::Cursor;

/// CuTe's swizzled layout `Sw<B,M,S> o OFFSET o LAYOUT` (`ComposedLayout<Swizzle<B,M,S>, Offset,
/// Layout>`): the coordinate `x` goes to `swizzle(OFFSET + LAYOUT(x))`, with the [`Swizzle`] of
/// CuTe's `include/cute/swizzle.hpp`. It is what CuTe prints for its shared-memory layouts, such
/// as `Sw<3,3,3> o _0 o (8,64):(64,1)`.
///
/// The text is CuTe's print form, with or without the offset (`Sw<3,4,3> o (8,64):(64,1)` means
/// offset 0), `Swizzle<…>` for `Sw<…>`, `∘` for `o`, any spacing, and MoYe's spacing in the
/// layout. `Display` prints CuTe's form, the offset `_0` when it is 0 (as CuTe prints its static
/// zero) and plain otherwise; `{:#}` prints the layout in MoYe's spacing. [`Layout::parse`]
/// takes the same text after `cute:` or `moye:`, and an empty layout (a shape entry of 0) too.
///
/// ```
/// use relayout::notation::cute::SwizzledLayout;
/// use relayout::Layout;
///
/// let sw: SwizzledLayout = "Sw<3,4,3> o _0 o (8,64):(64,1)".parse()?;
/// assert_eq!(sw.to_string(), "Sw<3,4,3> o _0 o (8,64):(64,1)");
/// assert_eq!(format!("{sw:#}"), "Sw<3,4,3> o _0 o (8, 64):(64, 1)");
///
/// let l = sw.to_layout()?; // the same as Layout::parse("cute:Sw<3,4,3> o _0 o (8,64):(64,1)")
/// // Row 2 starts at 128: bit 7 is set, so bit 4 of the column flips (runs of 16 swap).
/// assert_eq!(l.offset(&[2, 0])?, 144);
/// assert_eq!(l.offset(&[2, 16])?, 128);
/// assert!(l.is_injective());
/// assert_eq!(SwizzledLayout::from_layout(&l)?, sw);
/// # Ok::<(), relayout::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SwizzledLayout {
    swizzle: Swizzle,
    offset: i64,
    layout: CuteLayout,
}

impl SwizzledLayout {
    /// `swizzle o offset o layout`. Fails with [`Error::Overflow`] for an offset beyond
    /// [`MAX_OFFSET`] (the lowering checks the offsets it reaches).
    pub fn new(swizzle: Swizzle, offset: i64, layout: CuteLayout) -> Result<SwizzledLayout> {
        if (offset as i128).abs() > MAX_OFFSET {
            return Err(Error::Overflow(format!(
                "the offset {offset} of a swizzled layout is beyond {MAX_OFFSET}"
            )));
        }
        Ok(SwizzledLayout {
            swizzle,
            offset,
            layout,
        })
    }

    /// Parses CuTe's text (see the [type docs](SwizzledLayout)), with or without the `cute:` or
    /// `moye:` prefix.
    ///
    /// ```
    /// use relayout::notation::cute::SwizzledLayout;
    /// let a = SwizzledLayout::parse("cute:Sw<2,0,-2> o 4 o (4,4):(4,1)")?;
    /// let b = SwizzledLayout::parse("Swizzle< 2, 0, -2 > ∘ _4 ∘ (4, 4):(4, 1)")?;
    /// assert_eq!(a, b);
    /// assert_eq!((a.swizzle().shift(), a.offset()), (-2, 4));
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn parse(text: &str) -> Result<SwizzledLayout> {
        let (text, column_offset) = match ["cute:", "moye:"].iter().find(|p| text.starts_with(*p)) {
            Some(prefix) => (&text[prefix.len()..], prefix.len()),
            None => (text, 0),
        };
        let mut cursor = Cursor::new(NOTATION, text, column_offset);
        let Some((swizzle, offset)) = swizzle_prefix(&mut cursor)? else {
            return Err(cursor.unexpected("a swizzle 'Sw<B,M,S>'"));
        };
        let layout = match shape_or_layout(&mut cursor)? {
            Operand::Shape(shape) => CuteLayout::from_shape(shape)?,
            Operand::Layout(layout) => layout,
        };
        cursor.expect_end()?;
        SwizzledLayout::new(swizzle, offset, layout)
    }

    /// The swizzle.
    pub fn swizzle(&self) -> Swizzle {
        self.swizzle
    }

    /// The offset added to the layout's offsets before the swizzle.
    pub fn offset(&self) -> i64 {
        self.offset
    }

    /// The layout inside the swizzle.
    pub fn layout(&self) -> &CuteLayout {
        &self.layout
    }

    /// The canonical layout: [`CuteLayout::to_layout`] with the offset as its base, swizzled
    /// (see [`Layout::with_swizzle`]).
    pub fn to_layout(&self) -> Result<Layout> {
        swizzle_layout(self.layout.to_layout()?, self.swizzle, self.offset)
    }

    /// The swizzled layout of a canonical layout that has a swizzle and whose unswizzled part
    /// CuTe can express (see [`CuteLayout::from_layout`]); its base becomes the offset.
    ///
    /// Fails with [`Error::Unsupported`] for a layout without a swizzle (print it with
    /// [`CuteLayout::from_layout`]) and for the layouts CuTe cannot express.
    pub fn from_layout(layout: &Layout) -> Result<SwizzledLayout> {
        let Some(swizzle) = layout.swizzle() else {
            return Err(Error::Unsupported(format!(
                "{layout} has no swizzle; CuteLayout::from_layout writes it in CuTe's notation"
            )));
        };
        let affine = Layout::from_parts(
            layout.shape(),
            layout.digits().to_vec(),
            0,
            layout.padded_len(),
        )?;
        SwizzledLayout::new(swizzle, layout.base(), CuteLayout::from_layout(&affine)?)
    }

    /// MoYe.jl's spacing of the layout: `Sw<3,4,3> o _0 o (8, 64):(64, 1)` (also
    /// `format!("{layout:#}")`).
    pub fn moye(&self) -> String {
        format!("{self:#}")
    }
}

impl fmt::Display for SwizzledLayout {
    /// CuTe's form `Sw<3,4,3> o _0 o (8,64):(64,1)`; with `{:#}`, the layout in MoYe's form.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} o ", self.swizzle)?;
        match self.offset {
            0 => write!(f, "_0 o ")?,
            offset => write!(f, "{offset} o ")?,
        }
        if f.alternate() {
            write!(f, "{:#}", self.layout)
        } else {
            write!(f, "{}", self.layout)
        }
    }
}

impl FromStr for SwizzledLayout {
    type Err = Error;

    fn from_str(text: &str) -> Result<SwizzledLayout> {
        SwizzledLayout::parse(text)
    }
}

/// `layout` (of base 0, as CuTe text lowers) with `offset` as its base, swizzled.
pub(super) fn swizzle_layout(layout: Layout, swizzle: Swizzle, offset: i64) -> Result<Layout> {
    let based = Layout::from_parts(layout.shape(), layout.digits().to_vec(), offset, None)?;
    based.with_swizzle(swizzle)
}

/// Reads `Sw<B,M,S> o` and an optional `OFFSET o` at the cursor, if a swizzle comes next
/// (`Swizzle<…>` for `Sw<…>`, `∘` for `o`); the cursor is left at the layout. `None`, with the
/// cursor where it was, when the text does not start with a swizzle.
pub(super) fn swizzle_prefix(cursor: &mut Cursor) -> Result<Option<(Swizzle, i64)>> {
    cursor.skip_ws();
    if !(cursor.eat_str("Swizzle<") || cursor.eat_str("Sw<")) {
        return Ok(None);
    }
    let mut args = [0i64; 3];
    for (i, arg) in args.iter_mut().enumerate() {
        if i > 0 {
            cursor.expect(',')?;
        }
        cursor.skip_ws();
        *arg = integer(cursor)?;
    }
    cursor.expect('>')?;
    let swizzle = Swizzle::new(args[0], args[1], args[2])?;
    if !compose(cursor) {
        return Err(cursor.unexpected("'o' (composition) after the swizzle"));
    }
    cursor.skip_ws();
    let at = cursor.pos();
    let offset = match integer(cursor) {
        Ok(offset) if compose(cursor) => offset,
        _ => {
            cursor.rewind(at);
            0
        }
    };
    if cursor.eat_str("Sw<") || cursor.eat_str("Swizzle<") {
        return Err(Error::Unsupported(
            "a swizzle of a swizzled layout; relayout takes one swizzle per layout".into(),
        ));
    }
    Ok(Some((swizzle, offset)))
}

/// Consumes the composition operator `o` (or `∘`) if it is next.
fn compose(cursor: &mut Cursor) -> bool {
    cursor.eat('o') || cursor.eat('∘')
}
