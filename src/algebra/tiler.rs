//! Tilers, the right operands of composition, the divides and the products, and the
//! rearrangements of the zipped, tiled and flat forms.

use std::fmt;
use std::str::FromStr;

use super::{CuteLayout, IntTuple};
use crate::error::{Error, Result};
use crate::notation::cursor::Cursor;
use crate::notation::cute::{shape_or_layout, Operand};

/// The right operand of [`CuteLayout::composition`], the divides and the products: a layout, a
/// tuple of tilers (one per mode, applied mode by mode), or `_`.
///
/// A shape is a tuple of tilers too: CuTe reads the shape `(3,8)` as `<3:1, 8:1>`, an integer
/// `n` meaning the layout `n:1` ([`Tiler::from_shape`]).
///
/// # Text form
///
/// ```text
/// tiler := '_'                                keep the mode
///        | layout                             `4:2`, `(2,2):(1,4)`, an integer `n` (= n:1)
///        | shape                              `(3,8)` = <3:1, 8:1>, nested shapes nest
///        | '<' tiler (',' tiler)* '>'         CuTe's documentation: `<3:4, 8:2>`
///        | '[' tiler (';' tiler)* ']'         CuTe's compiler: `[3:4;8:2]`
/// ```
///
/// ```
/// use relayout::algebra::Tiler;
/// let t: Tiler = "[3:4;_;(2,2)]".parse()?;
/// assert_eq!(t.to_string(), "<3:4, _, <2:1, 2:1>>");
/// assert_eq!("<3:4, _, (2,2)>".parse::<Tiler>()?, t);
/// # Ok::<(), relayout::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Tiler {
    /// `_`: the mode stays as it is.
    Keep,
    /// A layout.
    Layout(CuteLayout),
    /// One tiler for each of the first modes of the layout it applies to.
    Tuple(Vec<Tiler>),
}

impl Tiler {
    /// The tiler CuTe reads a shape as: an integer `n` is the layout `n:1` (`1:0` for 1, as
    /// `make_layout` gives), a tuple a tuple of tilers.
    ///
    /// Fails with [`Error::InvalidLayout`] for an entry below 1 or an empty tuple.
    ///
    /// ```
    /// use relayout::algebra::Tiler;
    /// let t = Tiler::from_shape(&"(3,(2,4))".parse()?)?;
    /// assert_eq!(t.to_string(), "<3:1, <2:1, 4:1>>");
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn from_shape(shape: &IntTuple) -> Result<Tiler> {
        match shape {
            IntTuple::Int(_) => CuteLayout::from_shape(shape.clone()).map(Tiler::Layout),
            IntTuple::Tuple(items) if items.is_empty() => Err(Error::InvalidLayout(
                "a tiler needs at least one mode".into(),
            )),
            IntTuple::Tuple(items) => items
                .iter()
                .map(Tiler::from_shape)
                .collect::<Result<_>>()
                .map(Tiler::Tuple),
        }
    }
}

impl From<CuteLayout> for Tiler {
    fn from(layout: CuteLayout) -> Tiler {
        Tiler::Layout(layout)
    }
}

impl From<&CuteLayout> for Tiler {
    fn from(layout: &CuteLayout) -> Tiler {
        Tiler::Layout(layout.clone())
    }
}

impl From<&Tiler> for Tiler {
    fn from(tiler: &Tiler) -> Tiler {
        tiler.clone()
    }
}

impl fmt::Display for Tiler {
    /// `_`, a layout in CuTe's form, or `<t0, t1, …>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tiler::Keep => f.write_str("_"),
            Tiler::Layout(layout) => write!(f, "{layout}"),
            Tiler::Tuple(items) => {
                f.write_str("<")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{item}")?;
                }
                f.write_str(">")
            }
        }
    }
}

impl FromStr for Tiler {
    type Err = Error;

    /// Parses a tiler (see the [type docs](Tiler) for the grammar).
    fn from_str(text: &str) -> Result<Tiler> {
        let mut cursor = Cursor::new("cute", text, 0);
        let tiler = tiler(&mut cursor)?;
        cursor.expect_end()?;
        Ok(tiler)
    }
}

/// Parses one tiler at the cursor.
fn tiler(cursor: &mut Cursor) -> Result<Tiler> {
    cursor.skip_ws();
    for (open, separator, close) in [('<', ',', '>'), ('[', ';', ']')] {
        if cursor.eat(open) {
            cursor.enter()?;
            let mut items = vec![tiler(cursor)?];
            while cursor.eat(separator) {
                items.push(tiler(cursor)?);
            }
            if !cursor.eat(close) {
                return Err(cursor.unexpected(&format!("'{separator}' or '{close}'")));
            }
            cursor.leave();
            return Ok(Tiler::Tuple(items));
        }
    }
    if cursor.peek() == Some('_') {
        cursor.bump();
        // `_8` is a static integer, `_` alone keeps the mode.
        if !cursor
            .peek()
            .is_some_and(|c| c.is_ascii_digit() || c == '-')
        {
            return Ok(Tiler::Keep);
        }
    }
    match shape_or_layout(cursor)? {
        Operand::Shape(shape) => Tiler::from_shape(&shape),
        Operand::Layout(layout) => Ok(Tiler::Layout(layout)),
    }
}

/// CuTe's `tile_unzip`: rearranges the result of a logical divide or product by `tiler` into
/// `((tile modes), (rest modes, then the modes beyond the tiler))`.
pub(super) fn zipped(layout: &CuteLayout, tiler: &Tiler) -> Result<CuteLayout> {
    let (tiles, rests) = zip2_by(layout, tiler)?;
    CuteLayout::from_modes(vec![tiles, rests])
}

/// CuTe's `zip2_by`: for each leaf of the guide, the matching mode of `layout` is a pair
/// `(tile, rest)`; returns the tiles and the rests, the rests followed by the modes beyond the
/// guide.
fn zip2_by(layout: &CuteLayout, guide: &Tiler) -> Result<(CuteLayout, CuteLayout)> {
    let modes = layout.modes();
    match guide {
        Tiler::Tuple(guides) => {
            let mut tiles = Vec::with_capacity(guides.len());
            let mut rests = Vec::with_capacity(modes.len());
            for (mode, guide) in modes.iter().zip(guides) {
                let (tile, rest) = zip2_by(mode, guide)?;
                tiles.push(tile);
                rests.push(rest);
            }
            rests.extend(modes.into_iter().skip(guides.len()));
            Ok((
                CuteLayout::from_modes(tiles)?,
                CuteLayout::from_modes(rests)?,
            ))
        }
        _ => match <[CuteLayout; 2]>::try_from(modes) {
            Ok([tile, rest]) => Ok((tile, rest)),
            Err(modes) => Err(Error::InvalidLayout(format!(
                "{layout} has {} modes where the tiler {guide} needs a (tile, rest) pair",
                modes.len()
            ))),
        },
    }
}

/// The `tiled` form of a zipped result `(tiles, rests)`: `(tiles, rest_0, rest_1, …)`, CuTe's
/// `result(_, repeat<R1>(_))`.
pub(super) fn tiled(zipped: CuteLayout) -> Result<CuteLayout> {
    let mut modes = zipped.modes();
    let rests = modes.pop().map(unpack).unwrap_or_default();
    modes.extend(rests);
    CuteLayout::from_modes(modes)
}

/// The `flat` form of a zipped result: `(tile_0, tile_1, …, rest_0, rest_1, …)`.
pub(super) fn flat(zipped: CuteLayout) -> Result<CuteLayout> {
    CuteLayout::from_modes(zipped.modes().into_iter().flat_map(unpack).collect())
}

/// The modes of a mode that has more than one; a mode of rank 1 stays whole (CuTe slices it with
/// a single `_`).
fn unpack(mode: CuteLayout) -> Vec<CuteLayout> {
    if mode.rank() > 1 {
        mode.modes()
    } else {
        vec![mode]
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::cute;
    use super::*;
    use proptest::prelude::*;

    fn column(text: &str) -> usize {
        match text.parse::<Tiler>() {
            Err(Error::Parse { column, .. }) => column,
            other => panic!("{text}: expected a parse error, got {other:?}"),
        }
    }

    #[test]
    fn parses_every_form() {
        let layout = |t: &str| Tiler::Layout(cute(t));
        assert_eq!("4:2".parse::<Tiler>().unwrap(), layout("4:2"));
        assert_eq!("_8:_1".parse::<Tiler>().unwrap(), layout("8:1"));
        assert_eq!("24".parse::<Tiler>().unwrap(), layout("24:1"));
        assert_eq!("1".parse::<Tiler>().unwrap(), layout("1:0"));
        assert_eq!(" _ ".parse::<Tiler>().unwrap(), Tiler::Keep);
        assert_eq!(
            "(3,8)".parse::<Tiler>().unwrap(),
            Tiler::Tuple(vec![layout("3:1"), layout("8:1")])
        );
        assert_eq!(
            "[(2,2):(1,4); _]".parse::<Tiler>().unwrap(),
            Tiler::Tuple(vec![layout("(2,2):(1,4)"), Tiler::Keep])
        );
        assert_eq!(
            "< <2:1, 3:2> , 4 >".parse::<Tiler>().unwrap(),
            Tiler::Tuple(vec![
                Tiler::Tuple(vec![layout("2:1"), layout("3:2")]),
                layout("4:1")
            ])
        );
    }

    #[test]
    fn parse_errors_name_the_column() {
        assert_eq!(column("<3:1, 4:1"), 10);
        assert_eq!(column("[3:1, 4:1]"), 5);
        assert_eq!(column("<>"), 2);
        assert_eq!(column("_ 8"), 3);
        assert_eq!(column("(2,0)"), 4);
        assert_eq!(column("<2:1, (2,2):(1,2,3)>"), 18);
        assert_eq!(column(""), 1);
        let deep = format!("{}1{}", "<".repeat(1000), ">".repeat(1000));
        assert!(matches!(deep.parse::<Tiler>(), Err(Error::Parse { .. })));
    }

    #[test]
    fn rearrangements() {
        let zipped_text =
            |l: &str, t: &str| zipped(&cute(l), &t.parse().unwrap()).map(|z| z.to_string());
        // ((A,a),((B,b),(C,c)),d) by (X,(X,X)) -> ((A,(B,C)),(a,(b,c),d))
        assert_eq!(
            zipped_text("((2,3),((4,5),(6,7)),8)", "(1,(1,1))").unwrap(),
            "((2,(4,6)),(3,(5,7),8)):((1,(6,120)),(2,(24,720),5040))"
        );
        assert!(zipped_text("(2,3,4)", "5:1").is_err());
        let z = cute("((2,3),(4,5,6))");
        assert_eq!(
            tiled(z.clone()).unwrap().to_string(),
            "((2,3),4,5,6):((1,2),6,24,120)"
        );
        assert_eq!(flat(z).unwrap().to_string(), "(2,3,4,5,6):(1,2,6,24,120)");
        let one = cute("((2,3),(4))");
        assert_eq!(
            tiled(one.clone()).unwrap().to_string(),
            "((2,3),(4)):((1,2),(6))"
        );
        assert_eq!(flat(one).unwrap().to_string(), "(2,3,(4)):(1,2,(6))");
    }

    proptest! {
        #[test]
        fn printing_then_parsing_round_trips(shape in crate::notation::cute::testing::arb_shape()) {
            let t = Tiler::from_shape(&shape).unwrap();
            prop_assert_eq!(t.to_string().parse::<Tiler>().unwrap(), t.clone());
            let bracketed = t.to_string().replace(", ", ";").replace('<', "[").replace('>', "]");
            prop_assert_eq!(bracketed.parse::<Tiler>().unwrap(), t);
        }

        #[test]
        fn garbage_never_panics(text in "[0-9_(),:;<>\\[\\] -]{0,40}") {
            let _ = text.parse::<Tiler>();
        }
    }
}
