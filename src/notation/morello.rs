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
//! Sizes are resolved back to front: each physical dim sees the volume `R` of its logical dim that
//! faster physical dims already cover. The offset of a coordinate is the row-major (Horner) sum of
//! its physical coordinates over the resulting physical shape, whose product is the buffer length.
//!
//! The text form is Morello's display form, `[1, 0, 1 p(4)]` (`p(n)` for Packed, `oe(n)` for
//! OddEven, nothing for Dynamic); the `morello:` prefix of [`crate::notation::parse`] takes the
//! logical shape first: `morello:[6,8] [1, 0, 1 p(4)]`.
//!
//! Rules this crate enforces (each broken rule is an [`Error::InvalidLayout`]):
//!
//! * a `Packed(n)` or `OddEven(n)` must divide what remains of its logical dim, or be larger than
//!   it: then it pads the dim and covers it completely (so padding happens at most once per dim);
//! * `Packed(0)` is invalid, and an `OddEven(n)` needs an even `n >= 2`;
//! * a logical dim takes at most one `Dynamic`, and no physical dim of a logical dim may follow
//!   (be slower than) the one that completed it, except a `Dynamic` or `Packed(1)` of size 1 after
//!   packings that cover the dim exactly (Morello sizes those 1 as well);
//! * every logical dim of extent above 1 must be covered completely; dims of extent 1 may be left
//!   out;
//! * an `OddEven` may not have faster physical dims of its own logical dim inside its strip:
//!   Morello's own formula then maps two coordinates to one slot (for example `[1, 0 oe(4), 0 p(2)]`
//!   on `[8, 2]`), so the layout is rejected rather than given a different meaning.

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
    /// A fixed number of coordinates of the logical dim (a tile); larger than the remainder pads.
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

    /// The size of every physical dim (slowest first) when the layout is applied to `shape`.
    /// Their product is the buffer length, padding included.
    ///
    /// ```
    /// use relayout::notation::morello::MorelloLayout;
    /// let l = MorelloLayout::parse("[1, 0, 1 p(4)]")?;
    /// assert_eq!(l.physical_shape(&[6, 8])?, [2, 6, 4]);
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn physical_shape(&self, shape: &[usize]) -> Result<Vec<usize>> {
        Ok(self.expand(shape)?.sizes)
    }

    /// The canonical layout of this Morello layout applied to `shape`, with the buffer length
    /// set to the volume of the physical shape.
    pub fn to_layout(&self, shape: &[usize]) -> Result<Layout> {
        let expansion = self.expand(shape)?;
        Layout::from_parts(shape, expansion.digits, 0, Some(expansion.volume))
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
                "dimension {d} has extent 0; every extent must be at least 1"
            )));
        }
        let mut coverage = vec![Coverage::Open { inner: 1 }; shape.len()];
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
    /// Exact packings cover `inner` coordinates; more physical dims of the dim may follow.
    Open { inner: usize },
    /// A Dynamic took the rest of the dim.
    Dynamic,
    /// A Packed or OddEven larger than the remainder padded the dim.
    Padded,
}

/// The share of a logical dim that one physical dim takes.
#[derive(Debug, Clone, Copy)]
struct Slot {
    /// The physical dim's size.
    size: usize,
    /// The volume of the logical dim covered by faster physical dims (`R`).
    inner: usize,
    /// Whether this physical dim completes the dim with no modulo (a Dynamic or a padding one).
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
        let inner = match *coverage {
            Coverage::Open { inner } => inner,
            Coverage::Dynamic if self.phys == PhysDim::Dynamic => {
                return Err(self.invalid("is a second Dynamic of its logical dim"))
            }
            Coverage::Dynamic => return Err(self.after_covered("a faster Dynamic")),
            Coverage::Padded => return Err(self.after_covered("a faster padding physical dim")),
        };
        // Exact packings divide the extent, so this is the remainder ceil(extent / inner).
        let remainder = extent / inner;
        match self.phys {
            PhysDim::Dynamic => {
                *coverage = Coverage::Dynamic;
                Ok(Slot {
                    size: remainder,
                    inner,
                    top: true,
                })
            }
            PhysDim::Packed(n) | PhysDim::OddEven(n) => {
                self.check_size(n)?;
                if remainder == 1 && n > 1 {
                    let by = format!("its extent {extent} (faster physical dims cover {inner})");
                    return Err(self.after_covered(&by));
                }
                if matches!(self.phys, PhysDim::OddEven(_)) && inner > 1 {
                    return Err(self.invalid(&format!(
                        "has faster physical dims of the same logical dim inside its strip \
                         (covering {inner}); Morello's formula maps such a layout \
                         non-injectively, so it is rejected"
                    )));
                }
                self.claim_fixed(n, inner, remainder, coverage)
            }
        }
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

    /// The share of a Packed or OddEven of size `n`: exact when `n` divides the remainder,
    /// padding (and completing the dim) when `n` is larger.
    fn claim_fixed(
        &self,
        n: usize,
        inner: usize,
        remainder: usize,
        coverage: &mut Coverage,
    ) -> Result<Slot> {
        if remainder.is_multiple_of(n) {
            // No overflow: `n` divides `extent / inner`, so `inner * n <= extent`.
            *coverage = Coverage::Open { inner: inner * n };
            return Ok(Slot {
                size: n,
                inner,
                top: false,
            });
        }
        if n < remainder {
            return Err(self.invalid(&format!(
                "has size {n}, which neither divides nor exceeds the {remainder} coordinates of \
                 logical dim {} that remain",
                self.dim
            )));
        }
        *coverage = Coverage::Padded;
        Ok(Slot {
            size: n,
            inner,
            top: true,
        })
    }

    fn after_covered(&self, by: &str) -> Error {
        self.invalid(&format!(
            "comes after logical dim {} is already covered completely by {by}; list a dim's \
             physical dims slowest first and stop once it is covered",
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

/// Sizes, digits and buffer volume of a layout applied to a shape.
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

/// Fails unless every logical dim is covered completely.
fn check_covered(shape: &[usize], coverage: &[Coverage]) -> Result<()> {
    for (d, (&extent, cov)) in shape.iter().zip(coverage).enumerate() {
        if let Coverage::Open { inner } = *cov {
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
mod tests {
    use super::*;
    use crate::layout::Coords;
    use proptest::prelude::*;
    use serde_json::Value;

    const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/public_golden.json");

    fn shaped(shape: &[usize], layout: &str) -> ShapedLayout {
        ShapedLayout {
            shape: shape.to_vec(),
            layout: MorelloLayout::parse(layout).expect("test layout parses"),
        }
    }

    fn lower(shape: &[usize], layout: &str) -> Result<Layout> {
        shaped(shape, layout).to_layout()
    }

    fn usizes(value: &Value) -> Vec<usize> {
        let items = value.as_array().expect("an array of numbers");
        items.iter().map(|v| v.as_u64().unwrap() as usize).collect()
    }

    fn morello_golden_cases() -> Vec<Value> {
        let text = std::fs::read_to_string(GOLDEN).expect("the shared golden cases are readable");
        let all: Value = serde_json::from_str(&text).expect("the golden cases are JSON");
        let cases = all.as_array().expect("a list of cases");
        cases
            .iter()
            .filter(|c| c["system"] == "morello")
            .cloned()
            .collect()
    }

    #[test]
    fn golden_cases_reproduce_exactly() {
        let cases = morello_golden_cases();
        assert!(!cases.is_empty());
        for case in cases {
            let id = &case["id"];
            let text = case["layout"].as_str().unwrap();
            let shape = usizes(&case["logical_shape"]);
            let physical = usizes(&case["physical_shape"]);
            let offsets: Vec<i64> = case["offsets"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_i64().unwrap())
                .collect();
            let morello = shaped(&shape, text);
            assert_eq!(morello.layout.to_string(), text, "{id}: printer");
            assert_eq!(morello.physical_shape().unwrap(), physical, "{id}");
            let layout = morello.to_layout().unwrap();
            assert_eq!(layout.offsets(), offsets, "{id}: offsets");
            assert_eq!(layout.cosize(), physical.iter().product::<usize>(), "{id}");
            let cli = format!("morello:{shape:?} {text}");
            assert_eq!(Layout::parse(&cli).unwrap(), layout, "{id}: {cli}");
        }
    }

    #[test]
    fn builder_matches_the_text_form() {
        let built = MorelloLayout::new(vec![
            (0, PhysDim::Dynamic),
            (1, PhysDim::Dynamic),
            (2, PhysDim::Dynamic),
            (2, PhysDim::OddEven(16)),
        ]);
        assert_eq!(built.to_string(), "[0, 1, 2, 2 oe(16)]");
        assert_eq!(MorelloLayout::parse("[0, 1, 2, 2 oe(16)]").unwrap(), built);
        assert_eq!(
            MorelloLayout::parse(" [ 0,1 ,2,2oe( 16 ) ] ").unwrap(),
            built
        );
        assert_eq!(MorelloLayout::parse("[0]").unwrap().to_string(), "[0]");
    }

    #[test]
    fn row_major_is_the_row_major_layout() {
        let shape = [2, 3, 4];
        let rm = MorelloLayout::row_major(3).to_layout(&shape).unwrap();
        assert!(rm.same_function(&Layout::row_major(&shape).unwrap()));
        assert_eq!(MorelloLayout::row_major(0).to_string(), "[]");
        assert_eq!(lower(&[], "[]").unwrap().offsets(), [0]);
    }

    #[test]
    fn packed_larger_than_the_remainder_pads() {
        let packed = lower(&[6, 3], "[0 p(8), 1]").unwrap();
        assert_eq!(packed.offset(&[5, 2]).unwrap(), 17);
        assert_eq!(packed.cosize(), 24);
        let odd_even = lower(&[6], "[0 oe(8)]").unwrap();
        assert_eq!(odd_even.offsets(), [0, 4, 1, 5, 2, 6]);
        assert_eq!(odd_even.cosize(), 8);
        let tiled = shaped(&[6], "[0 p(4), 0 p(2)]");
        assert_eq!(tiled.physical_shape().unwrap(), [4, 2]);
        assert_eq!(tiled.to_layout().unwrap().cosize(), 8);
    }

    #[test]
    fn size_one_physical_dims_are_accepted() {
        let exact = shaped(&[4], "[0, 0 p(4)]");
        assert_eq!(exact.physical_shape().unwrap(), [1, 4]);
        assert_eq!(exact.to_layout().unwrap().offsets(), [0, 1, 2, 3]);
        assert_eq!(
            lower(&[4], "[0 p(1), 0 p(4)]").unwrap().offsets(),
            [0, 1, 2, 3]
        );
        // A dim of extent 1 may be left out.
        assert_eq!(lower(&[1, 3], "[1]").unwrap().offsets(), [0, 1, 2]);
    }

    #[test]
    fn odd_even_strips_inside_other_dims() {
        let l = lower(&[2, 4], "[0, 1 oe(4)]").unwrap();
        assert_eq!(l.offsets(), [0, 2, 1, 3, 4, 6, 5, 7]);
        let t = lower(&[2, 4], "[1 oe(4), 0]").unwrap();
        assert_eq!(t.offsets(), [0, 4, 2, 6, 1, 5, 3, 7]);
    }

    fn invalid_message(shape: &[usize], layout: &str) -> String {
        match lower(shape, layout) {
            Err(Error::InvalidLayout(message)) => message,
            other => panic!("{layout} on {shape:?}: expected InvalidLayout, got {other:?}"),
        }
    }

    #[test]
    fn impossible_layouts_are_invalid() {
        let cases: [(&[usize], &str, &str); 13] = [
            (&[8], "[0 p(3)]", "neither divides nor exceeds"),
            (&[8], "[0, 0 p(0)]", "size 0"),
            (&[8], "[0, 0 oe(3)]", "even strip size"),
            (&[8], "[0 oe(0)]", "even strip size"),
            (&[4], "[0, 0]", "second Dynamic"),
            (&[8], "[0 p(2)]", "not covered completely"),
            (&[4, 4], "[0]", "logical dim 1 (extent 4) is not covered"),
            (&[4, 4], "[0, 2]", "has rank 2"),
            (&[8], "[0 p(4), 0]", "by a faster Dynamic"),
            (&[6], "[0 p(4), 0 p(8)]", "by a faster padding"),
            (
                &[4],
                "[0 p(2), 0 p(4)]",
                "covered completely by its extent 4",
            ),
            (&[8, 2], "[1, 0 oe(4), 0 p(2)]", "inside its strip"),
            (&[0], "[0]", "extent 0"),
        ];
        for (shape, layout, expected) in cases {
            let message = invalid_message(shape, layout);
            assert!(message.contains(expected), "{layout}: {message}");
        }
    }

    fn parse_error(text: &str) -> (usize, String) {
        match crate::notation::parse(text) {
            Err(Error::Parse {
                notation: "morello",
                column,
                message,
            }) => (column, message),
            other => panic!("{text}: expected a morello parse error, got {other:?}"),
        }
    }

    #[test]
    fn parse_errors_name_the_column() {
        // (text, 1-based column of the problem, part of the message)
        let cases = [
            ("morello:[6,8] [1, 0, 1 q(4)]", 24, "'p(n)', 'oe(n)'"),
            ("morello:6,8 [0]", 9, "'[' to open the logical shape"),
            ("morello:[6,8] 0]", 15, "'[' to open the layout"),
            ("morello:[4] [0 p(4]", 19, "')'"),
            ("morello:[4] [0 p4]", 16, "found 'p4'"),
            ("morello:[4] [0; 1]", 15, "',' or ']' in the layout"),
            ("morello:[4,] [0]", 12, "a number"),
            ("morello:[4] [0] x", 17, "the end of the input"),
            ("morello:[4] [0 oe(-2)]", 19, "non-negative"),
        ];
        for (text, want, expected) in cases {
            let (column, message) = parse_error(text);
            assert_eq!(column, want, "{text}: {message}");
            assert!(message.contains(expected), "{text}: {message}");
        }
        let (_, message) = parse_error("morello:[4] [0 p(99999999999999999999)]");
        assert!(message.contains("64 bits"), "{message}");
        assert!(MorelloLayout::parse("[0").is_err());
        assert!(ShapedLayout::parse("[4]").is_err());
    }

    #[test]
    fn huge_layouts_overflow() {
        let big = 1usize << 40;
        assert!(matches!(
            lower(&[big, big], "[0, 1]"),
            Err(Error::Overflow(_))
        ));
        assert!(matches!(lower(&[1 << 62], "[0]"), Err(Error::Overflow(_))));
        let padded = MorelloLayout::new(vec![
            (0, PhysDim::Packed(1 << 62)),
            (1, PhysDim::Packed(1 << 62)),
        ]);
        assert!(matches!(padded.to_layout(&[2, 2]), Err(Error::Overflow(_))));
        let one = MorelloLayout::new(vec![(0, PhysDim::Packed(usize::MAX))]);
        assert!(matches!(one.to_layout(&[2]), Err(Error::Overflow(_))));
    }

    /// A valid layout of one logical dim, fastest first: an optional odd/even strip, exact
    /// packings, then a remainder `rest` that a Dynamic takes or a larger Packed pads.
    #[derive(Debug, Clone)]
    struct DimPlan {
        odd_even: Option<usize>,
        packs: Vec<usize>,
        rest: usize,
        pad: Option<usize>,
    }

    impl DimPlan {
        fn extent(&self) -> usize {
            self.odd_even.unwrap_or(1) * self.packs.iter().product::<usize>() * self.rest
        }

        /// The dim's physical dims, slowest first.
        fn phys_dims(&self) -> Vec<PhysDim> {
            let top = match self.pad {
                Some(extra) if self.rest >= 2 => PhysDim::Packed(self.rest + extra),
                _ => PhysDim::Dynamic,
            };
            let packs = self.packs.iter().map(|&p| PhysDim::Packed(p));
            let odd_even = self.odd_even.map(PhysDim::OddEven);
            std::iter::once(top).chain(packs).chain(odd_even).collect()
        }
    }

    fn dim_plan() -> impl Strategy<Value = DimPlan> {
        (
            prop::option::of(prop::sample::select(vec![2usize, 4, 6])),
            prop::collection::vec(1usize..=3, 0..=2),
            1usize..=3,
            prop::option::of(1usize..=2),
        )
            .prop_map(|(odd_even, packs, rest, pad)| DimPlan {
                odd_even,
                packs,
                rest,
                pad,
            })
    }

    /// Interleaves the dims' physical dims (each dim's own order kept) by the given choices.
    fn interleave(plans: &[DimPlan], choices: &[usize]) -> MorelloLayout {
        let mut queues: Vec<Vec<PhysDim>> = plans
            .iter()
            .map(|p| p.phys_dims().into_iter().rev().collect())
            .collect();
        let mut dims = Vec::new();
        for choice in choices.iter().cycle() {
            let open: Vec<usize> = (0..queues.len())
                .filter(|&d| !queues[d].is_empty())
                .collect();
            if open.is_empty() {
                break;
            }
            let d = open[choice % open.len()];
            dims.push((d, queues[d].pop().unwrap()));
        }
        MorelloLayout::new(dims)
    }

    fn valid_shaped() -> impl Strategy<Value = ShapedLayout> {
        (
            prop::collection::vec(dim_plan(), 1..=3),
            prop::collection::vec(any::<usize>(), 1..=12),
        )
            .prop_map(|(plans, choices)| ShapedLayout {
                shape: plans.iter().map(DimPlan::extent).collect(),
                layout: interleave(&plans, &choices),
            })
    }

    fn any_phys_dim() -> impl Strategy<Value = PhysDim> {
        prop_oneof![
            Just(PhysDim::Dynamic),
            (0usize..10).prop_map(PhysDim::Packed),
            (0usize..10).prop_map(PhysDim::OddEven),
        ]
    }

    fn any_shaped() -> impl Strategy<Value = ShapedLayout> {
        (
            prop::collection::vec(0usize..8, 0..=3),
            prop::collection::vec((0usize..4, any_phys_dim()), 0..=6),
        )
            .prop_map(|(shape, dims)| ShapedLayout {
                shape,
                layout: MorelloLayout::new(dims),
            })
    }

    /// Morello's formula, straight from its definition: walking physical dims from the fastest,
    /// each takes its size and its coordinate from what faster dims of its logical dim cover
    /// (`inner`); the offset is the row-major (Horner) sum over the physical shape.
    fn morello_offset(
        shape: &[usize],
        dims: &[(usize, PhysDim)],
        coord: &[usize],
    ) -> (usize, usize) {
        let mut inner = vec![1usize; shape.len()];
        let mut physical = Vec::new();
        for &(d, phys) in dims.iter().rev() {
            let within = coord[d] / inner[d];
            let (size, c) = match phys {
                PhysDim::Dynamic => (shape[d].div_ceil(inner[d]), within),
                PhysDim::Packed(p) => (p, within % p),
                PhysDim::OddEven(n) => {
                    let c = within % n;
                    let slot = if c.is_multiple_of(2) {
                        c / 2
                    } else {
                        n / 2 + c / 2
                    };
                    (n, slot)
                }
            };
            inner[d] *= size;
            physical.push((size, c));
        }
        let offset = physical
            .iter()
            .rev()
            .fold(0, |acc, &(size, c)| acc * size + c);
        let volume = physical.iter().map(|&(size, _)| size).product();
        (offset, volume)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn printed_text_parses_to_the_same_function(x in valid_shaped()) {
            let reparsed: ShapedLayout = x.to_string().parse().unwrap();
            prop_assert_eq!(&reparsed, &x);
            let a = x.to_layout().unwrap();
            let b = Layout::parse(&format!("morello:{x}")).unwrap();
            prop_assert!(a.same_function(&b), "{}", x);
        }

        #[test]
        fn printed_text_of_any_layout_parses_back(x in any_shaped()) {
            let reparsed: ShapedLayout = x.to_string().parse().unwrap();
            prop_assert_eq!(&reparsed, &x);
            prop_assert_eq!(reparsed.to_layout(), x.to_layout());
        }

        #[test]
        fn lowering_agrees_with_morellos_formula(x in valid_shaped()) {
            let layout = x.to_layout().unwrap();
            for coord in Coords::new(&x.shape) {
                let (want, volume) = morello_offset(&x.shape, x.layout.dims(), &coord);
                prop_assert_eq!(layout.offset(&coord).unwrap(), want as i64, "{} at {:?}", x, coord);
                prop_assert_eq!(layout.cosize(), volume, "{}", x);
            }
            prop_assert!(layout.is_injective(), "{}", x);
        }

        #[test]
        fn garbage_never_panics(text in "[\\[\\]0-9 ,poe()\\-x]{0,40}", raw in any::<String>()) {
            for s in [&text, &raw] {
                let _ = crate::notation::parse(&format!("morello:{s}"));
                let _ = MorelloLayout::parse(s);
                if let Ok(x) = ShapedLayout::parse(s) {
                    let _ = x.to_layout();
                }
            }
        }
    }
}
