//! XLA shapes with (tiled) layouts: `f32[3,5]{1,0:T(2,2)}`.
//!
//! `minor_to_major` orders the dims; each tile `T(t…)` splits the most-minor dims of the current
//! physical shape into tile-index dims (`ceil(d/t)`, padding) and within-tile dims, repeated tiles
//! split again, and `*` (or `-1`) first combines a dim with the next one. The offset is
//! row-major over the final physical shape; the buffer holds its volume, rounded up to `L(n)`.
//!
//! ```
//! use relayout::notation::xla::XlaShape;
//!
//! let x: XlaShape = "F32[3,5]{1,0:T(2,2)}".parse()?;
//! assert_eq!(x.to_string(), "f32[3,5]{1,0:T(2,2)}");
//! let l = x.to_layout()?;
//! assert_eq!(l.offset(&[2, 3])?, 17);
//! assert_eq!(l.cosize(), 24);
//! # Ok::<(), relayout::Error>(())
//! ```

use std::fmt;
use std::str::FromStr;

use super::cursor::Cursor;
use super::Parsed;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::{Digit, Layout, Source, MAX_OFFSET};

/// One dimension of a tile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TileDim {
    /// A tile size of at least 1.
    Size(usize),
    /// `*` (or `-1`): combine this dim with the next one before tiling.
    Combine,
}

/// An XLA array shape with its layout.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct XlaShape {
    dtype: DType,
    dims: Vec<usize>,
    minor_to_major: Vec<usize>,
    tiles: Vec<Vec<TileDim>>,
    tail_padding: Option<usize>,
    /// XLA's `E(n)`: the bits each element takes in memory, if the layout says.
    element_bits: Option<u32>,
}

impl XlaShape {
    /// A shape from its parts; checks that `minor_to_major` is a permutation of the dims, that
    /// tile sizes and `L(n)` are at least 1 (extents may be 0: an empty tensor), that `*` is never a tile's last dim, and
    /// that the rank is at most [`crate::layout::MAX_RANK`].
    pub fn new(
        dtype: DType,
        dims: Vec<usize>,
        minor_to_major: Vec<usize>,
        tiles: Vec<Vec<TileDim>>,
        tail_padding: Option<usize>,
    ) -> Result<XlaShape> {
        crate::layout::check_rank(dims.len())?;
        let mut sorted = minor_to_major.clone();
        sorted.sort_unstable();
        if sorted != (0..dims.len()).collect::<Vec<_>>() {
            return Err(Error::InvalidLayout(format!(
                "minor_to_major {minor_to_major:?} is not a permutation of the {} dims",
                dims.len()
            )));
        }
        if tail_padding == Some(0) {
            return Err(Error::InvalidLayout("XLA's L(n) must be at least 1".into()));
        }
        for tile in &tiles {
            if tile.is_empty() || tile.last() == Some(&TileDim::Combine) {
                return Err(Error::InvalidLayout(
                    "a tile must have dims, and '*' combines a dim with the next one, so it cannot come last".into(),
                ));
            }
            if tile.contains(&TileDim::Size(0)) {
                return Err(Error::InvalidLayout("tile sizes must be at least 1".into()));
            }
        }
        Ok(XlaShape {
            dtype,
            dims,
            minor_to_major,
            tiles,
            tail_padding,
            element_bits: None,
        })
    }

    /// This shape with XLA's `E(n)`: elements of `bits` bits in memory. For a sub-byte type
    /// (`s4 u4 f4e2m1fn`, `s2 u2`), `E` of its own width packs its elements several to a byte
    /// (see [`crate::packing`]); without `E`, or with `E(8)`, each takes a byte, as in XLA. For
    /// the other types `E` is their own width. Other widths fail with [`Error::Unsupported`].
    ///
    /// ```
    /// use relayout::notation::xla::XlaShape;
    /// use relayout::plan::Packed;
    ///
    /// let packed = XlaShape::parse("s4[8,8]{0,1:E(4)}")?;
    /// assert_eq!(packed.packed(), Some(Packed::FOUR_BITS));
    /// assert_eq!(packed.to_string(), "s4[8,8]{0,1:E(4)}");
    /// assert_eq!(XlaShape::parse("s4[8,8]{0,1}")?.packed(), None); // a byte each
    /// assert!(XlaShape::parse("s4[8,8]{0,1:E(2)}").is_err());
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn with_element_bits(self, bits: u32) -> Result<XlaShape> {
        let own = self.dtype.bits();
        let fits = bits == own || (own < 8 && bits == 8);
        if !fits {
            return Err(Error::Unsupported(format!(
                "E({bits}) on {}: elements take their own width ({own} bits){}",
                xla_name(self.dtype),
                if own < 8 { " or a byte" } else { "" }
            )));
        }
        Ok(XlaShape {
            element_bits: Some(bits),
            ..self
        })
    }

    /// XLA's `E(n)`, if the layout gives it.
    pub fn element_bits(&self) -> Option<u32> {
        self.element_bits
    }

    /// How the elements pack into bytes: for a sub-byte type with `E` of its own width.
    pub fn packed(&self) -> Option<crate::plan::Packed> {
        self.dtype
            .packed()
            .filter(|p| self.element_bits == Some(p.bits()))
    }

    /// Parses XLA text such as `bf16[8,8]{1,0:T(2,4)(2,1,1,1)}`.
    pub fn parse(text: &str) -> Result<XlaShape> {
        parse_shape(&mut Cursor::new("xla", text, 0))
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The logical dims.
    pub fn dims(&self) -> &[usize] {
        &self.dims
    }

    /// The physical shape after all tiles (major to minor).
    pub fn physical_shape(&self) -> Result<Vec<usize>> {
        Ok(self.physical_dims()?.iter().map(PhysDim::extent).collect())
    }

    /// The canonical layout: row-major over the tiled physical shape, buffer padded to `L(n)`.
    ///
    /// A shape with an extent of 0 is an empty tensor: its physical volume is 0 whatever the
    /// tiles (a tiled dim of 0 elements has 0 tiles), so it lowers to the empty layout of its
    /// dims with a buffer of 0 elements.
    pub fn to_layout(&self) -> Result<Layout> {
        if self.dims.contains(&0) {
            return Layout::from_parts(&self.dims, Vec::new(), 0, Some(0));
        }
        let phys = self.physical_dims()?;
        let mut digits = Vec::new();
        let mut stride: i128 = 1;
        for dim in phys.iter().rev() {
            let mut inner: i128 = stride;
            for c in &dim.parts {
                digits.push(Digit::new(
                    c.source.clone(),
                    c.div,
                    (!c.top).then_some(c.radix),
                    inner as i64,
                ));
                inner *= c.radix as i128;
            }
            stride *= dim.extent() as i128;
            if stride > MAX_OFFSET {
                return Err(Error::Overflow(format!(
                    "the tiled buffer of {self} is too large"
                )));
            }
        }
        let volume = stride as usize;
        let padded = match self.tail_padding {
            Some(l) => volume.div_ceil(l) * l,
            None => volume,
        };
        Layout::from_parts(&self.dims, digits, 0, Some(padded))
    }

    /// The physical dims after tiling, each a mixed-radix list of parts.
    fn physical_dims(&self) -> Result<Vec<PhysDim>> {
        let mut dims: Vec<PhysDim> = self
            .minor_to_major
            .iter()
            .rev()
            .map(|&d| PhysDim {
                parts: vec![Part {
                    source: Source::Dim(d),
                    div: 1,
                    radix: self.dims[d],
                    top: true,
                }],
                extent: self.dims[d],
            })
            .collect();
        for tile in &self.tiles {
            let mut tile = tile.clone();
            while tile.len() > dims.len() {
                dims.insert(
                    0,
                    PhysDim {
                        parts: Vec::new(),
                        extent: 1,
                    },
                );
            }
            let off = dims.len() - tile.len();
            let mut j = 0;
            while j < tile.len() {
                if tile[j] == TileDim::Combine {
                    let major = dims.remove(off + j);
                    let minor = dims.remove(off + j);
                    dims.insert(off + j, major.combine(minor)?);
                    tile.remove(j);
                } else {
                    j += 1;
                }
            }
            let off = dims.len() - tile.len();
            let mut outer = Vec::new();
            let mut inner = Vec::new();
            for (dim, t) in dims[off..].iter().zip(&tile) {
                let TileDim::Size(t) = *t else { continue };
                let (low, high) = dim.split(t)?;
                outer.push(PhysDim {
                    parts: high,
                    extent: dim.extent.div_ceil(t),
                });
                inner.push(PhysDim {
                    parts: low,
                    extent: t,
                });
            }
            dims.truncate(off);
            dims.extend(outer);
            dims.extend(inner);
        }
        Ok(dims)
    }
}

/// A mixed-radix digit of a physical dim: `((source floordiv div) mod radix)`, the modulo
/// omitted when `top` (the value never reaches the radix).
#[derive(Debug, Clone)]
struct Part {
    source: Source,
    div: usize,
    radix: usize,
    top: bool,
}

/// A physical dim of `extent` slots whose value is the mixed-radix number of `parts` (least
/// significant first); slots beyond the parts' product are padding.
#[derive(Debug, Clone)]
struct PhysDim {
    parts: Vec<Part>,
    extent: usize,
}

impl PhysDim {
    fn extent(&self) -> usize {
        self.extent
    }

    /// The product of the parts' radices.
    fn covered(&self) -> usize {
        self.parts.iter().map(|p| p.radix).product()
    }

    /// `self` as the major and `minor` as the minor half of one combined dim.
    fn combine(self, minor: PhysDim) -> Result<PhysDim> {
        if minor.covered() != minor.extent && !self.parts.is_empty() {
            return Err(Error::Unsupported(
                "an XLA '*' that combines a dim with a padded minor dim is not supported".into(),
            ));
        }
        let extent = (self.extent as i128) * (minor.extent as i128);
        if extent > MAX_OFFSET {
            return Err(Error::Overflow("a combined XLA dim is too large".into()));
        }
        let mut parts = minor.parts;
        parts.extend(self.parts);
        Ok(PhysDim {
            parts,
            extent: extent as usize,
        })
    }

    /// Splits the dim's value `v` into `(v mod t, v div t)` as two part lists, fusing the dim's
    /// logical sources into one sum when the split falls inside a part that does not divide.
    fn split(&self, t: usize) -> Result<(Vec<Part>, Vec<Part>)> {
        if let Some(split) = split_parts(&self.parts, t) {
            return Ok(split);
        }
        let fused = fuse(&self.parts).ok_or_else(|| {
            Error::Unsupported(format!(
                "an XLA tile of {t} splits a dim that earlier tiles already split in a way \
                 relayout's layout model cannot express"
            ))
        })?;
        split_parts(&[fused], t).ok_or_else(|| Error::Unsupported("XLA tile split".into()))
    }
}

/// `(v mod t, v div t)` at radix boundaries: whole parts below `t`, then the part `t` falls in
/// split in two (its radix must be a multiple of the low piece unless it is the top part).
fn split_parts(parts: &[Part], t: usize) -> Option<(Vec<Part>, Vec<Part>)> {
    let mut low = Vec::new();
    let mut p = 1usize;
    for (i, part) in parts.iter().enumerate() {
        if p == t {
            return Some((low, parts[i..].to_vec()));
        }
        let last = i + 1 == parts.len();
        let next = p.checked_mul(part.radix)?;
        if next <= t {
            if !t.is_multiple_of(next) && !last {
                return None;
            }
            low.push(part.clone());
            p = next;
            continue;
        }
        // `t` falls inside this part; a ceil (padded) split is only exact on the most
        // significant part, and only where no modulo applies to it.
        if !t.is_multiple_of(p) {
            return None;
        }
        let r = t / p;
        if !(part.radix.is_multiple_of(r) || last && part.top) {
            return None;
        }
        low.push(Part {
            radix: r,
            top: false,
            ..part.clone()
        });
        let mut high = vec![Part {
            div: part.div.checked_mul(r)?,
            radix: part.radix.div_ceil(r),
            ..part.clone()
        }];
        high.extend_from_slice(&parts[i + 1..]);
        return Some((low, high));
    }
    Some((low, Vec::new()))
}

/// One part reading `Σ x_k·P_k` when every part covers a whole logical dim (or sum).
fn fuse(parts: &[Part]) -> Option<Part> {
    let mut terms = Vec::new();
    let mut weight: i64 = 1;
    for part in parts {
        if part.div != 1 || !part.top {
            return None;
        }
        for (d, w) in part.source.terms() {
            terms.push((d, w.checked_mul(weight)?));
        }
        weight = weight.checked_mul(part.radix as i64)?;
    }
    Some(Part {
        source: Source::fused(terms),
        div: 1,
        radix: weight as usize,
        top: true,
    })
}

fn parse_shape(c: &mut Cursor) -> Result<XlaShape> {
    let start = c.pos();
    let name = c
        .ident()
        .ok_or_else(|| c.unexpected("an element type such as f32"))?;
    let dtype = element_type(&name)
        .ok_or_else(|| c.error_at(start, &format!("unknown element type '{name}'")))?;
    c.expect('[')?;
    let dims = list(c, ']', |c| {
        if c.eat_str("<=") {
            return Err(Error::Unsupported(
                "dynamic XLA dims (<=N) are not supported".into(),
            ));
        }
        c.uint()
    })?;
    let mut minor_to_major: Vec<usize> = (0..dims.len()).rev().collect();
    let mut tiles = Vec::new();
    let mut tail_padding = None;
    let mut element_bits = None;
    if c.eat('{') {
        let pos = c.pos();
        minor_to_major = if c.eat('}') {
            Vec::new()
        } else {
            let m = until(c, &[':', '}'], |c| c.uint())?;
            if m.len() != dims.len() {
                return Err(c.error_at(pos, "minor_to_major must list every dim once"));
            }
            m
        };
        if c.eat(':') {
            attributes(c, &mut tiles, &mut tail_padding, &mut element_bits)?;
            c.expect('}')?;
        } else if !minor_to_major.is_empty() || !dims.is_empty() {
            c.expect('}')?;
        }
    }
    c.expect_end()?;
    let shape = XlaShape::new(dtype, dims, minor_to_major, tiles, tail_padding)?;
    match element_bits {
        Some(bits) => shape.with_element_bits(u32::try_from(bits).unwrap_or(u32::MAX)),
        None => Ok(shape),
    }
}

/// `T(…)(…)`, `L(n)`, `E(n)`; `S(n)` is accepted and ignored; the rest are unsupported.
fn attributes(
    c: &mut Cursor,
    tiles: &mut Vec<Vec<TileDim>>,
    tail_padding: &mut Option<usize>,
    element_bits: &mut Option<usize>,
) -> Result<()> {
    loop {
        c.skip_ws();
        match c.peek() {
            Some('T') => {
                c.bump();
                while c.eat('(') {
                    tiles.push(list(c, ')', tile_dim)?);
                }
            }
            Some('L') => {
                c.bump();
                *tail_padding = Some(parenthesised(c)?);
            }
            Some('S') => {
                c.bump();
                parenthesised(c)?;
            }
            Some('E') => {
                c.bump();
                *element_bits = Some(parenthesised(c)?);
            }
            Some('}') => return Ok(()),
            Some(other) => {
                return Err(Error::Unsupported(format!(
                    "XLA layout attribute '{other}' (column {}) is not supported",
                    c.pos() + 1
                )))
            }
            None => return Err(c.unexpected("'}'")),
        }
    }
}

fn tile_dim(c: &mut Cursor) -> Result<TileDim> {
    if c.eat('*') {
        return Ok(TileDim::Combine);
    }
    let pos = c.pos();
    match c.int()? {
        -1 => Ok(TileDim::Combine),
        n if n >= 1 => Ok(TileDim::Size(n as usize)),
        _ => Err(c.error_at(pos, "a tile size must be at least 1 (or * / -1 to combine)")),
    }
}

fn parenthesised(c: &mut Cursor) -> Result<usize> {
    c.expect('(')?;
    let n = c.uint()?;
    c.expect(')')?;
    Ok(n)
}

/// Comma-separated items up to `close` (consumed); empty lists allowed.
fn list<T>(c: &mut Cursor, close: char, item: impl Fn(&mut Cursor) -> Result<T>) -> Result<Vec<T>> {
    if c.eat(close) {
        return Ok(Vec::new());
    }
    let items = until(c, &[close], item)?;
    c.expect(close)?;
    Ok(items)
}

/// Comma-separated items up to (not consuming) one of `ends`.
fn until<T>(
    c: &mut Cursor,
    ends: &[char],
    item: impl Fn(&mut Cursor) -> Result<T>,
) -> Result<Vec<T>> {
    let mut items = vec![item(c)?];
    while c.eat(',') {
        items.push(item(c)?);
    }
    c.skip_ws();
    if !c.peek().is_some_and(|ch| ends.contains(&ch)) {
        let want: Vec<String> = ends.iter().map(|e| format!("'{e}'")).collect();
        return Err(c.unexpected(&format!("',' or {}", want.join(" or "))));
    }
    Ok(items)
}

/// The element type of an XLA name (case-insensitive): XLA's own names, and the command
/// line's `i8`-style ones.
fn element_type(name: &str) -> Option<DType> {
    let lower = name.to_ascii_lowercase();
    DType::ALL
        .into_iter()
        .find(|&t| xla_name(t) == lower || t.name() == lower)
}

/// XLA's own name of an element type (its `PrimitiveType`, lower case): `s8` where the command
/// line says `i8`.
fn xla_name(dtype: DType) -> &'static str {
    match dtype {
        DType::I2 => "s2",
        DType::I4 => "s4",
        DType::I8 => "s8",
        DType::I16 => "s16",
        DType::I32 => "s32",
        DType::I64 => "s64",
        other => other.name(),
    }
}

impl fmt::Display for XlaShape {
    /// XLA's form with a lower-case element type: `bf16[4,8]{1,0:T(2,4)(2,1)}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let join = |v: &[usize]| {
            v.iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        write!(
            f,
            "{}[{}]{{{}",
            xla_name(self.dtype),
            join(&self.dims),
            join(&self.minor_to_major)
        )?;
        if !self.tiles.is_empty() || self.tail_padding.is_some() || self.element_bits.is_some() {
            f.write_str(":")?;
        }
        if !self.tiles.is_empty() {
            f.write_str("T")?;
            for tile in &self.tiles {
                let parts: Vec<String> = tile
                    .iter()
                    .map(|t| match t {
                        TileDim::Size(n) => n.to_string(),
                        TileDim::Combine => "*".into(),
                    })
                    .collect();
                write!(f, "({})", parts.join(","))?;
            }
        }
        if let Some(l) = self.tail_padding {
            write!(f, "L({l})")?;
        }
        if let Some(bits) = self.element_bits {
            write!(f, "E({bits})")?;
        }
        f.write_str("}")
    }
}

impl FromStr for XlaShape {
    type Err = Error;

    fn from_str(text: &str) -> Result<XlaShape> {
        XlaShape::parse(text)
    }
}

/// Parses XLA text that starts `column_offset` characters into the user's input.
pub(crate) fn parse_layout(text: &str, column_offset: usize) -> Result<Parsed> {
    let shape = parse_shape(&mut Cursor::new("xla", text, column_offset))?;
    Ok(Parsed {
        layout: shape.to_layout()?,
        dtype: Some(shape.dtype),
        packed: Some(shape.packed().is_some()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// LAYOUTS.md §3.2's `xla_offset`, evaluated directly on the tile list.
    fn doc_offset(x: &XlaShape, coord: &[usize]) -> (i128, i128) {
        let n = x.dims.len();
        let mut d: Vec<i128> = (0..n)
            .map(|j| x.dims[x.minor_to_major[n - 1 - j]] as i128)
            .collect();
        let mut e: Vec<i128> = (0..n)
            .map(|j| coord[x.minor_to_major[n - 1 - j]] as i128)
            .collect();
        for tile in &x.tiles {
            let mut t: Vec<Option<i128>> = tile
                .iter()
                .map(|t| match t {
                    TileDim::Size(s) => Some(*s as i128),
                    TileDim::Combine => None,
                })
                .collect();
            while t.len() > d.len() {
                d.insert(0, 1);
                e.insert(0, 0);
            }
            let off = d.len() - t.len();
            let mut j = 0;
            while j < t.len() {
                if t[j].is_none() {
                    let a = off + j;
                    e[a + 1] += e[a] * d[a + 1];
                    d[a + 1] *= d[a];
                    d.remove(a);
                    e.remove(a);
                    t.remove(j);
                } else {
                    j += 1;
                }
            }
            let k = t.len();
            let off = d.len() - k;
            let ts: Vec<i128> = t.into_iter().flatten().collect();
            let mut nd = d[..off].to_vec();
            let mut ne = e[..off].to_vec();
            for i in 0..k {
                nd.push((d[off + i] + ts[i] - 1) / ts[i]);
                ne.push(e[off + i] / ts[i]);
            }
            for i in 0..k {
                nd.push(ts[i]);
                ne.push(e[off + i] % ts[i]);
            }
            d = nd;
            e = ne;
        }
        let mut offset = 0;
        for (ej, dj) in e.iter().zip(&d) {
            offset = offset * dj + ej;
        }
        (offset, d.iter().product())
    }

    #[test]
    fn worked_examples_padded_sizes_and_physical_shapes() {
        for (text, size, phys) in [
            ("F32[3,5]{1,0:T(2,2)}", 24, vec![2, 3, 2, 2]),
            (
                "BF16[8,8]{1,0:T(2,4)(2,1,1,1)}",
                64,
                vec![2, 2, 2, 4, 2, 1, 1, 1],
            ),
            (
                "BF16[32,256]{1,0:T(8,128)(2,1,1,1)}",
                8192,
                vec![2, 2, 8, 128, 2, 1, 1, 1],
            ),
            (
                "F32[2,7,8,11,10]{4,3,2,1,0:T(*,*,2,*,3)}",
                12432,
                vec![56, 37, 2, 3],
            ),
        ] {
            let x = XlaShape::parse(text).unwrap();
            assert_eq!(x.physical_shape().unwrap(), phys, "{text}");
            assert_eq!(x.to_layout().unwrap().cosize(), size, "{text}");
        }
        let l = Layout::parse("xla:BF16[8,8]{1,0:T(2,4)(2,1,1,1)}").unwrap();
        assert_eq!(l.offset(&[6, 5]).unwrap(), 51);
        let col = Layout::parse("xla:F32[10,20]{0,1}").unwrap();
        assert_eq!(col.offset(&[3, 5]).unwrap(), 53);
    }

    #[test]
    fn tail_padding_and_rank_zero() {
        let x = Layout::parse("xla:f32[5]{0:T(8,128)}").unwrap();
        assert_eq!(x.cosize(), 1024);
        let l = Layout::parse("xla:f32[3]{0:L(8)}").unwrap();
        assert_eq!(l.cosize(), 8);
        let s = Layout::parse("xla:f32[]").unwrap();
        assert_eq!(s.offsets(), [0]);
    }

    #[test]
    fn bad_text_and_unsupported_features_are_errors() {
        let parse = |t: &str| Layout::parse(&format!("xla:{t}")).unwrap_err();
        assert!(matches!(parse("f32[3,5"), Error::Parse { column: 12, .. }));
        assert!(matches!(parse("q32[3]"), Error::Parse { column: 5, .. }));
        assert!(matches!(parse("f32[3]{0:E(4)}"), Error::Unsupported(_)));
        assert!(matches!(parse("s4[3]{0:E(16)}"), Error::Unsupported(_)));
        assert!(matches!(parse("f7[3]"), Error::Parse { column: 5, .. }));
        assert!(matches!(parse("f32[<=3]"), Error::Unsupported(_)));
        assert!(matches!(parse("f32[3,4]{1,1}"), Error::InvalidLayout(_)));
        assert!(matches!(
            parse("f32[3,4]{1,0:T(2,*)}"),
            Error::InvalidLayout(_)
        ));
        assert!(matches!(parse("f32[3,4]{1,0:T(0,2)}"), Error::Parse { .. }));
        assert!(matches!(
            parse("f32[99999999999999999999]"),
            Error::Parse { .. }
        ));
        assert!(matches!(
            parse("f32[4294967296,4294967296]"),
            Error::Overflow(_)
        ));
        assert!(matches!(parse("f32[3]{0} x"), Error::Parse { .. }));
    }

    #[test]
    fn every_element_type_parses_and_prints() {
        // Offsets do not depend on the element type: row-major 4x4 for every one of them.
        for t in DType::ALL {
            let text = format!("{}[4,4]{{1,0}}", xla_name(t));
            let x = XlaShape::parse(&text).unwrap();
            assert_eq!((x.dtype(), x.to_string()), (t, text.clone()));
            let parsed = crate::notation::parse(&format!("xla:{}", text.to_uppercase())).unwrap();
            assert_eq!(parsed.dtype, Some(t), "{text}");
            assert_eq!(
                parsed.layout.offsets(),
                (0..16).collect::<Vec<i64>>(),
                "{text}"
            );
        }
        // XLA spells the signed integers `s…`; the command line's `i…` names are accepted.
        assert_eq!(XlaShape::parse("i4[2]").unwrap().to_string(), "s4[2]{0}");
        assert_eq!(XlaShape::parse("pred[2]").unwrap().dtype(), DType::Pred);
    }

    fn arb_shape() -> impl Strategy<Value = XlaShape> {
        (1usize..=3)
            .prop_flat_map(|rank| {
                (
                    prop::sample::select(DType::ALL.to_vec()),
                    proptest::collection::vec(1usize..=9, rank),
                    Just((0..rank).collect::<Vec<_>>()).prop_shuffle(),
                    proptest::collection::vec(
                        proptest::collection::vec(
                            prop_oneof![4 => (1usize..=5).prop_map(TileDim::Size), 1 => Just(TileDim::Combine)],
                            1..=3,
                        ),
                        0..=2,
                    ),
                    proptest::option::of(1usize..=8),
                    proptest::option::of(any::<bool>()),
                )
            })
            .prop_filter_map("valid", |(dtype, dims, m2m, tiles, l, e)| {
                let shape = XlaShape::new(dtype, dims, m2m, tiles, l).ok()?;
                // `E` of the type's own width, or a byte for a sub-byte type.
                match e {
                    None => Some(shape),
                    Some(own) => {
                        let bits = if own { dtype.bits() } else { 8 };
                        shape.with_element_bits(bits).ok()
                    }
                }
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn lowering_agrees_with_the_doc_formula(x in arb_shape()) {
            let Ok(layout) = x.to_layout() else { return Ok(()) };
            let mut volume = 0;
            for c in crate::layout::Coords::new(&x.dims) {
                let (want, v) = doc_offset(&x, &c);
                volume = v;
                prop_assert_eq!(layout.offset(&c).unwrap() as i128, want, "{} at {:?}", x, c);
            }
            let padded = x.tail_padding.map_or(volume, |l| (volume + l as i128 - 1) / l as i128 * l as i128);
            prop_assert_eq!(layout.cosize() as i128, padded);
        }

        /// Over every element type (the shapes draw theirs from [`DType::ALL`]).
        #[test]
        fn printing_then_parsing_gives_the_same_shape(x in arb_shape()) {
            prop_assert_eq!(XlaShape::parse(&x.to_string()).unwrap(), x);
        }

        #[test]
        fn garbage_never_panics(s in "[fbsu0-9\\[\\]{}(),:*TLSE<= -]{0,30}") {
            let _ = Layout::parse(&format!("xla:{s}"));
        }
    }
}
