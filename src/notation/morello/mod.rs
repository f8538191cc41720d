//! Morello layouts: logical dims mapped onto a list of physical dims, slowest first.
//!
//! A Morello layout lists physical dimensions from the slowest- to the fastest-varying, each
//! naming the logical dimension it covers and how much of it:
//!
//! * [`PhysDim::Dynamic`] takes whatever remains of its logical dim (at most one per dim);
//! * [`PhysDim::Packed`]`(n)` takes exactly `n` coordinates (tiling, as in NCHWc);
//! * [`PhysDim::OddEven`]`(n)` takes a strip of `n` coordinates (`n` even) and stores the strip's
//!   even coordinates first, then its odd ones: coordinate `c` of the strip goes to slot `c/2` if
//!   `c` is even and `n/2 + c/2` if it is odd.
//!
//! Sizes are resolved as Morello's `Layout::expand_physical_shape` resolves them: walking the
//! physical dims from the fastest to the slowest, each logical dim keeps what remains of it (its
//! extent divided by the sizes of its faster physical dims), and
//!
//! * a `Dynamic` takes whatever remains, possibly 1;
//! * a `Packed(n)` or `OddEven(n)` takes `n` when `n` divides what remains; when what remains is
//!   smaller than `n`, the physical dim takes it as its size and leaves 1 behind, which Morello
//!   allows once per logical dim, and for an `OddEven` only when what remains is 1.
//!
//! So Morello layouts never pad: the offset of a coordinate is the row-major (Horner) sum of its
//! physical coordinates over the physical shape, and the buffer holds exactly the tensor's
//! elements. `[0 p(4), 1]` on `[2, 5]` is the physical shape `[2, 5]` (row-major), and
//! `[0, 1, 0 p(4)]` on `[2, 5]` is `[1, 5, 2]` (column-major).
//!
//! The text form is Morello's display form, `[1, 0, 1 p(4)]` (`p(n)` for Packed, `oe(n)` for
//! OddEven, nothing for Dynamic); the `morello:` prefix of [`crate::notation::parse`] takes the
//! logical shape first: `morello:[6,8] [1, 0, 1 p(4)]`.
//!
//! The rules, Morello's own (each broken rule is an [`Error::InvalidLayout`]):
//!
//! * a `Packed(n)` or `OddEven(n)` that does not divide what remains of its logical dim must be
//!   larger than it, as above: at most once per logical dim, and for an `OddEven` only when 1
//!   remains;
//! * `Packed(0)` is invalid, and an `OddEven(n)` needs an even `n >= 2`;
//! * a logical dim takes at most one `Dynamic`, and nothing of that dim may be slower than it;
//! * every logical dim of extent above 1 must be covered completely; dims of extent 1 may be left
//!   out;
//! * an `OddEven` of size `n` may not have faster physical dims of its own logical dim inside its
//!   strip: Morello's own formula then maps two coordinates to one slot (for example
//!   `[1, 0 oe(4), 0 p(2)]` on `[8, 2]`), so the layout is rejected rather than given another
//!   meaning. An `OddEven` that takes the remainder 1 has one slot, and is accepted where
//!   Morello's formula keeps every coordinate in it (`[0 oe(4), 0 p(4)]` on `[4]`).

use std::fmt;
use std::str::FromStr;

use super::cursor::Cursor;
use super::Parsed;
use crate::error::{Error, Result};
use crate::layout::{Digit, Layout, Source};

const NOTATION: &str = "morello";

/// One physical dimension of a Morello layout: how much of its logical dimension it covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PhysDim {
    /// Whatever remains of the logical dim once the faster physical dims have taken their share.
    Dynamic,
    /// A fixed number of coordinates of the logical dim (a tile); when less than that remains
    /// of the logical dim, whatever remains.
    Packed(usize),
    /// A strip of this many coordinates (even), stored evens first, then odds.
    OddEven(usize),
}

/// A Morello layout: `(logical dim, physical dim)` pairs listed from slowest to fastest.
///
/// ```
/// use relayout::notation::morello::{MorelloLayout, PhysDim};
///
/// // Column-major with dim 1 packed by 4, on a 6x8 matrix.
/// let packed = MorelloLayout::new(vec![
///     (1, PhysDim::Dynamic),
///     (0, PhysDim::Dynamic),
///     (1, PhysDim::Packed(4)),
/// ]);
/// assert_eq!(packed.to_string(), "[1, 0, 1 p(4)]");
/// assert_eq!(packed.physical_shape(&[6, 8])?, [2, 6, 4]);
/// let layout = packed.to_layout(&[6, 8])?;
/// assert_eq!(layout.offset(&[1, 5])?, 24 + 4 + 1);
///
/// // Strips of 8, evens first.
/// let oe: MorelloLayout = "[0, 0 oe(8)]".parse()?;
/// assert_eq!(oe.to_layout(&[16])?.offsets()[..8], [0, 4, 1, 5, 2, 6, 3, 7]);
/// # Ok::<(), relayout::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MorelloLayout {
    dims: Vec<(usize, PhysDim)>,
}

/// A logical shape with a Morello layout: the `morello:` text form `[6,8] [1, 0, 1 p(4)]`.
///
/// ```
/// use relayout::notation::morello::ShapedLayout;
///
/// let s: ShapedLayout = "[6, 8] [1, 0, 1 p(4)]".parse()?;
/// assert_eq!(s.to_string(), "[6,8] [1, 0, 1 p(4)]");
/// assert_eq!(s.to_layout()?.cosize(), 48);
/// # Ok::<(), relayout::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ShapedLayout {
    /// The logical shape.
    pub shape: Vec<usize>,
    /// The Morello layout over it.
    pub layout: MorelloLayout,
}

/// Parses `morello:` text (a shape, then a layout) that starts `column_offset` characters into the
/// user's input.
pub(crate) fn parse_layout(text: &str, column_offset: usize) -> Result<Parsed> {
    let shaped = read_all(text, column_offset, read_shaped)?;
    Ok(Parsed {
        layout: shaped.to_layout()?,
        dtype: None,
        packed: None,
    })
}

impl MorelloLayout {
    /// A layout from `(logical dim, physical dim)` pairs, slowest first. It is checked against a
    /// shape when it is used ([`MorelloLayout::to_layout`], [`MorelloLayout::physical_shape`]).
    pub fn new(dims: Vec<(usize, PhysDim)>) -> MorelloLayout {
        MorelloLayout { dims }
    }

    /// Morello's row-major layout of a rank-`rank` tensor: `[0, 1, …, rank-1]`, all Dynamic.
    ///
    /// ```
    /// use relayout::notation::morello::MorelloLayout;
    /// assert_eq!(MorelloLayout::row_major(3).to_string(), "[0, 1, 2]");
    /// ```
    pub fn row_major(rank: usize) -> MorelloLayout {
        MorelloLayout::new((0..rank).map(|d| (d, PhysDim::Dynamic)).collect())
    }

    /// Parses Morello's display form, such as `[1, 0, 1 p(4)]` or `[0 oe(8)]`.
    pub fn parse(text: &str) -> Result<MorelloLayout> {
        read_all(text, 0, read_layout)
    }

    /// The `(logical dim, physical dim)` pairs, slowest first.
    pub fn dims(&self) -> &[(usize, PhysDim)] {
        &self.dims
    }

    /// The size of every physical dim (slowest first) when the layout is applied to `shape`:
    /// Morello's `expand_physical_shape`. Their product is the number of elements.
    ///
    /// ```
    /// use relayout::notation::morello::MorelloLayout;
    /// let l = MorelloLayout::parse("[1, 0, 1 p(4)]")?;
    /// assert_eq!(l.physical_shape(&[6, 8])?, [2, 6, 4]);
    /// // A Packed larger than what remains of its dim takes what remains.
    /// let l = MorelloLayout::parse("[0, 1, 0 p(4)]")?;
    /// assert_eq!(l.physical_shape(&[2, 5])?, [1, 5, 2]);
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn physical_shape(&self, shape: &[usize]) -> Result<Vec<usize>> {
        Ok(self.expand(shape)?.sizes)
    }

    /// The canonical layout of this Morello layout applied to `shape`. Morello layouts never
    /// pad: the buffer holds exactly the tensor's elements.
    pub fn to_layout(&self, shape: &[usize]) -> Result<Layout> {
        Layout::new(shape, self.expand(shape)?.digits)
    }

    /// Resolves every physical dim against `shape`, fastest first, into sizes and digits.
    fn expand(&self, shape: &[usize]) -> Result<Expansion> {
        crate::layout::check_rank(shape.len())?;
        if self.dims.len() > crate::layout::MAX_RANK {
            return Err(Error::Unsupported(format!(
                "{} physical dims; relayout handles at most {}",
                self.dims.len(),
                crate::layout::MAX_RANK
            )));
        }
        if let Some(d) = shape.iter().position(|&n| n == 0) {
            return Err(invalid(format!(
                "dimension {d} has extent 0; Morello has no empty tensors, so every extent must be at least 1"
            )));
        }
        let open = Coverage::Open {
            inner: 1,
            took_remainder: false,
        };
        let mut coverage = vec![open; shape.len()];
        let mut expansion = Expansion {
            sizes: Vec::with_capacity(self.dims.len()),
            digits: Vec::new(),
            volume: 1,
        };
        for (index, &(dim, phys)) in self.dims.iter().enumerate().rev() {
            let entry = Entry { index, dim, phys };
            let extent = *shape.get(dim).ok_or_else(|| entry.outside(shape))?;
            let slot = entry.claim(extent, &mut coverage[dim])?;
            expansion.push(dim, phys, slot)?;
        }
        check_covered(shape, &coverage)?;
        expansion.sizes.reverse();
        expansion.digits.reverse();
        Ok(expansion)
    }
}

impl ShapedLayout {
    /// Parses the `morello:` form without its prefix: the logical shape, then the layout.
    pub fn parse(text: &str) -> Result<ShapedLayout> {
        read_all(text, 0, read_shaped)
    }

    /// The size of every physical dim, slowest first (see [`MorelloLayout::physical_shape`]).
    pub fn physical_shape(&self) -> Result<Vec<usize>> {
        self.layout.physical_shape(&self.shape)
    }

    /// The canonical layout (see [`MorelloLayout::to_layout`]).
    pub fn to_layout(&self) -> Result<Layout> {
        self.layout.to_layout(&self.shape)
    }
}

/// How far the physical dims seen so far (the faster ones) cover one logical dim.
#[derive(Debug, Clone, Copy)]
enum Coverage {
    /// Faster physical dims cover `inner` coordinates, a divisor of the extent; `took_remainder`
    /// once one of them was a Packed or OddEven that took a remainder smaller than its size.
    Open { inner: usize, took_remainder: bool },
    /// A Dynamic took the rest of the dim.
    Dynamic,
}

/// The share of a logical dim that one physical dim takes.
#[derive(Debug, Clone, Copy)]
struct Slot {
    /// The physical dim's size.
    size: usize,
    /// The volume of the logical dim covered by faster physical dims (`R`).
    inner: usize,
    /// Whether this physical dim takes the rest of the dim, so its digit needs no modulo.
    top: bool,
}

/// One `(logical dim, physical dim)` pair and its place in the list, for checks and messages.
#[derive(Debug, Clone, Copy)]
struct Entry {
    index: usize,
    dim: usize,
    phys: PhysDim,
}

impl Entry {
    /// Takes this physical dim's share of a logical dim of `extent`, updating its coverage.
    fn claim(&self, extent: usize, coverage: &mut Coverage) -> Result<Slot> {
        let (inner, took_remainder) = match *coverage {
            Coverage::Open {
                inner,
                took_remainder,
            } => (inner, took_remainder),
            Coverage::Dynamic if self.phys == PhysDim::Dynamic => {
                return Err(self.invalid("is a second Dynamic of its logical dim"))
            }
            Coverage::Dynamic => return Err(self.after_dynamic()),
        };
        // `inner` divides the extent, so this is exact.
        let remainder = extent / inner;
        let n = match self.phys {
            PhysDim::Dynamic => {
                *coverage = Coverage::Dynamic;
                return Ok(Slot {
                    size: remainder,
                    inner,
                    top: true,
                });
            }
            PhysDim::Packed(n) | PhysDim::OddEven(n) => n,
        };
        self.check_size(n)?;
        let slot = if remainder < n {
            self.check_takes_remainder(remainder, took_remainder)?;
            Slot {
                size: remainder,
                inner,
                top: true,
            }
        } else if remainder.is_multiple_of(n) {
            Slot {
                size: n,
                inner,
                top: false,
            }
        } else {
            return Err(self.invalid(&format!(
                "has size {n}, which does not divide the {remainder} coordinates of logical \
                 dim {} that remain",
                self.dim
            )));
        };
        if let PhysDim::OddEven(n) = self.phys {
            self.check_strip(n, slot)?;
        }
        *coverage = Coverage::Open {
            // No overflow: `slot.size` divides `extent / inner`.
            inner: inner * slot.size,
            took_remainder: took_remainder || slot.top,
        };
        Ok(slot)
    }

    /// Fails for `Packed(0)` and for an `OddEven` strip that is not a positive even number.
    fn check_size(&self, n: usize) -> Result<()> {
        match self.phys {
            PhysDim::Packed(0) => Err(self.invalid("has size 0; a Packed size is at least 1")),
            PhysDim::OddEven(_) if n == 0 || !n.is_multiple_of(2) => {
                Err(self.invalid("needs an even strip size of at least 2"))
            }
            _ => Ok(()),
        }
    }

    /// Fails unless this Packed or OddEven may take a `remainder` smaller than its size: once
    /// per logical dim, and for an OddEven only a remainder of 1.
    fn check_takes_remainder(&self, remainder: usize, took_remainder: bool) -> Result<()> {
        if took_remainder {
            return Err(self.invalid(&format!(
                "is larger than what remains of logical dim {} ({remainder}), and a faster \
                 physical dim of that dim already took a remainder smaller than its size; \
                 Morello allows that once per logical dim",
                self.dim
            )));
        }
        if matches!(self.phys, PhysDim::OddEven(_)) && remainder != 1 {
            return Err(self.invalid(&format!(
                "is larger than the {remainder} coordinates of logical dim {} that remain; an \
                 OddEven may take a smaller remainder only when 1 remains",
                self.dim
            )));
        }
        Ok(())
    }

    /// Fails where Morello's own formula for an OddEven strip of `n` with faster physical dims
    /// of its logical dim inside it (`slot.inner > 1`) is not a one-to-one map: always for a
    /// strip of size `n`, and for a strip that took the remainder 1 (one slot) when one of the
    /// `slot.inner` coordinates inside it would go to a slot of `inner` or more.
    fn check_strip(&self, n: usize, slot: Slot) -> Result<()> {
        let inner = slot.inner;
        let one_slot = slot.size == 1 && highest_slot(n, inner.min(n)) < inner;
        if inner > 1 && !one_slot {
            return Err(self.invalid(&format!(
                "has faster physical dims of the same logical dim inside its strip (covering \
                 {inner}); Morello's own formula does not map such a layout one to one, so it \
                 is rejected"
            )));
        }
        Ok(())
    }

    fn after_dynamic(&self) -> Error {
        self.invalid(&format!(
            "comes after the Dynamic of logical dim {}, which already took the rest of it; list \
             a dim's physical dims slowest first, its Dynamic (if any) first of them",
            self.dim
        ))
    }

    fn outside(&self, shape: &[usize]) -> Error {
        self.invalid(&format!(
            "names logical dim {}, but the shape {shape:?} has rank {}",
            self.dim,
            shape.len()
        ))
    }

    fn invalid(&self, what: &str) -> Error {
        invalid(format!(
            "physical dim {} (`{}`) {what}",
            self.index,
            EntryText(self.dim, self.phys)
        ))
    }
}

/// Sizes and digits of a layout applied to a shape, with the volume of the sizes so far.
struct Expansion {
    /// Physical dim sizes (fastest first while building, slowest first when done).
    sizes: Vec<usize>,
    /// The canonical digits.
    digits: Vec<Digit>,
    /// The product of the sizes so far: the stride of the next (slower) physical dim.
    volume: usize,
}

impl Expansion {
    /// Appends the next slower physical dim: its size, and its digits with stride `volume`.
    fn push(&mut self, dim: usize, phys: PhysDim, slot: Slot) -> Result<()> {
        let stride = i64::try_from(self.volume).map_err(|_| too_large())?;
        if slot.size > 1 {
            match phys {
                PhysDim::OddEven(n) => self.push_odd_even(dim, n / 2, slot, stride)?,
                PhysDim::Dynamic | PhysDim::Packed(_) => {
                    let ext = (!slot.top).then_some(slot.size);
                    self.digits
                        .push(Digit::new(Source::Dim(dim), slot.inner, ext, stride));
                }
            }
        }
        self.sizes.push(slot.size);
        self.volume = self.volume.checked_mul(slot.size).ok_or_else(too_large)?;
        Ok(())
    }

    /// The two digits of an odd/even strip of `2·half`: the parity picks the half
    /// (`(x/R) mod 2`, stride `half·S`), the rest the slot within it (`(x/2R) mod half`).
    fn push_odd_even(&mut self, dim: usize, half: usize, slot: Slot, stride: i64) -> Result<()> {
        let parity_stride = i64::try_from(half)
            .ok()
            .and_then(|h| h.checked_mul(stride))
            .ok_or_else(too_large)?;
        let pair_div = slot.inner.checked_mul(2).ok_or_else(too_large)?;
        let pair_ext = (!slot.top).then_some(half);
        self.digits.push(Digit::new(
            Source::Dim(dim),
            slot.inner,
            Some(2),
            parity_stride,
        ));
        self.digits
            .push(Digit::new(Source::Dim(dim), pair_div, pair_ext, stride));
        Ok(())
    }
}

/// The highest slot of an OddEven strip of `n` that the strip's first `count` coordinates go to
/// (`count <= n`): an even coordinate `c` goes to `c/2`, an odd one to `n/2 + c/2`.
fn highest_slot(n: usize, count: usize) -> usize {
    match count {
        0 | 1 => 0,
        _ => {
            let last_odd = if count.is_multiple_of(2) {
                count - 1
            } else {
                count - 2
            };
            n / 2 + last_odd / 2
        }
    }
}

/// Fails unless every logical dim is covered completely.
fn check_covered(shape: &[usize], coverage: &[Coverage]) -> Result<()> {
    for (d, (&extent, cov)) in shape.iter().zip(coverage).enumerate() {
        if let Coverage::Open { inner, .. } = *cov {
            if inner < extent {
                return Err(invalid(format!(
                    "logical dim {d} (extent {extent}) is not covered completely: its physical \
                     dims cover {inner}; add a Dynamic for it"
                )));
            }
        }
    }
    Ok(())
}

fn invalid(message: String) -> Error {
    Error::InvalidLayout(message)
}

fn too_large() -> Error {
    Error::Overflow("the physical shape of the Morello layout has too many elements".into())
}

/// `d`, `d p(n)` or `d oe(n)`: one entry of Morello's display form.
struct EntryText(usize, PhysDim);

impl fmt::Display for EntryText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.1 {
            PhysDim::Dynamic => write!(f, "{}", self.0),
            PhysDim::Packed(n) => write!(f, "{} p({n})", self.0),
            PhysDim::OddEven(n) => write!(f, "{} oe({n})", self.0),
        }
    }
}

impl fmt::Display for MorelloLayout {
    /// Morello's display form: `[1, 0, 1 p(4)]`, `[0, 0 oe(8)]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let entries: Vec<String> = self
            .dims
            .iter()
            .map(|&(d, p)| EntryText(d, p).to_string())
            .collect();
        write!(f, "[{}]", entries.join(", "))
    }
}

impl fmt::Display for ShapedLayout {
    /// The `morello:` form without its prefix: `[6,8] [1, 0, 1 p(4)]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let extents: Vec<String> = self.shape.iter().map(usize::to_string).collect();
        write!(f, "[{}] {}", extents.join(","), self.layout)
    }
}

impl FromStr for MorelloLayout {
    type Err = Error;

    fn from_str(text: &str) -> Result<MorelloLayout> {
        MorelloLayout::parse(text)
    }
}

impl FromStr for ShapedLayout {
    type Err = Error;

    fn from_str(text: &str) -> Result<ShapedLayout> {
        ShapedLayout::parse(text)
    }
}

/// Reads all of `text` (which starts `column_offset` characters into the user's input) with `read`.
fn read_all<T>(
    text: &str,
    column_offset: usize,
    read: impl FnOnce(&mut Cursor) -> Result<T>,
) -> Result<T> {
    let mut cursor = Cursor::new(NOTATION, text, column_offset);
    let value = read(&mut cursor)?;
    cursor.expect_end()?;
    Ok(value)
}

/// `[6,8] [1, 0, 1 p(4)]`: a shape, then a layout.
fn read_shaped(cursor: &mut Cursor) -> Result<ShapedLayout> {
    let shape = read_list(cursor, "the logical shape", Cursor::uint)?;
    let layout = read_layout(cursor)?;
    Ok(ShapedLayout { shape, layout })
}

/// `[1, 0, 1 p(4)]`.
fn read_layout(cursor: &mut Cursor) -> Result<MorelloLayout> {
    read_list(cursor, "the layout", read_entry).map(MorelloLayout::new)
}

/// `[item, item, …]`, possibly empty.
fn read_list<T>(
    cursor: &mut Cursor,
    what: &str,
    mut item: impl FnMut(&mut Cursor) -> Result<T>,
) -> Result<Vec<T>> {
    if !cursor.eat('[') {
        return Err(cursor.unexpected(&format!("'[' to open {what}")));
    }
    let mut items = Vec::new();
    if cursor.eat(']') {
        return Ok(items);
    }
    loop {
        items.push(item(cursor)?);
        if cursor.eat(']') {
            return Ok(items);
        }
        if !cursor.eat(',') {
            return Err(cursor.unexpected(&format!("',' or ']' in {what}")));
        }
    }
}

/// `1`, `1 p(4)` or `1 oe(8)`.
fn read_entry(cursor: &mut Cursor) -> Result<(usize, PhysDim)> {
    let dim = cursor.uint()?;
    cursor.skip_ws();
    let start = cursor.pos();
    let phys = match cursor.ident().as_deref() {
        None => PhysDim::Dynamic,
        Some("p") => PhysDim::Packed(read_size(cursor)?),
        Some("oe") => PhysDim::OddEven(read_size(cursor)?),
        Some(other) => {
            return Err(cursor.error_at(
                start,
                &format!("expected 'p(n)', 'oe(n)', ',' or ']' after dim {dim}, found '{other}'"),
            ))
        }
    };
    Ok((dim, phys))
}

/// `(n)` after `p` or `oe`.
fn read_size(cursor: &mut Cursor) -> Result<usize> {
    cursor.expect('(')?;
    let n = cursor.uint()?;
    cursor.expect(')')?;
    Ok(n)
}

#[cfg(test)]
mod tests;
