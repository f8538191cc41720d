//! CuTe's and MoYe.jl's `print_layout`: a rank-2 layout as a grid of offsets.

use std::fmt;

use super::{flat_modes, CuteLayout};
use crate::error::{Error, Result};

/// A rank-2 layout drawn as a grid of offsets, in the format of CuTe's `print_layout` (0-based,
/// CuTe's text in the header) or, with [`Table::one_based`], of MoYe.jl's (1-based row and
/// column numbers and offsets, MoYe's text). Each cell is as wide as the number of digits of
/// the cosize (or of the widest offset, for negative strides).
///
/// ```
/// use relayout::notation::cute::CuteLayout;
/// let l = CuteLayout::parse("(2,3):(1,8)")?;
/// let table = l.table()?.to_string();
/// let lines: Vec<&str> = table.lines().map(str::trim_end).collect();
/// assert_eq!(
///     lines,
///     [
///         "(2,3):(1,8)",
///         "       0    1    2",
///         "    +----+----+----+",
///         " 0  |  0 |  8 | 16 |",
///         "    +----+----+----+",
///         " 1  |  1 |  9 | 17 |",
///         "    +----+----+----+",
///     ]
/// );
/// let moye = l.table()?.one_based().to_string();
/// assert!(moye.starts_with("(2, 3):(1, 8)\n"));
/// assert!(moye.contains("\n 2  |  2 | 10 | 18 |\n"));
/// # Ok::<(), relayout::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    layout: CuteLayout,
    rows: CuteLayout,
    columns: CuteLayout,
    one_based: bool,
}

impl CuteLayout {
    /// The layout as a table of offsets, like CuTe's `print_layout`: row `m`, column `n` holds
    /// `L(m, n)`. Print it with `Display`.
    ///
    /// Fails with [`Error::InvalidLayout`] unless the layout has rank 2.
    pub fn table(&self) -> Result<Table> {
        match <[CuteLayout; 2]>::try_from(self.modes()) {
            Ok([rows, columns]) => Ok(Table {
                layout: self.clone(),
                rows,
                columns,
                one_based: false,
            }),
            _ => Err(Error::InvalidLayout(format!(
                "a table needs a layout of rank 2; {self} has rank {}",
                self.rank()
            ))),
        }
    }
}

impl Table {
    /// The same table as MoYe.jl prints it: 1-based row and column numbers and offsets, and
    /// the layout in MoYe's text form.
    pub fn one_based(self) -> Table {
        Table {
            one_based: true,
            ..self
        }
    }

    /// The width of a cell: the digits of the cosize, or more for offsets that need them.
    fn width(&self) -> usize {
        let shift = i64::from(self.one_based);
        // The lowest and highest offsets: each flattened mode at its first or last coordinate.
        let (low, high) = flat_modes(&self.layout)
            .into_iter()
            .map(|(s, d)| (s - 1) * d)
            .fold((0i64, 0i64), |(lo, hi), x| (lo + x.min(0), hi + x.max(0)));
        [self.layout.cosize() as i64, low + shift, high + shift]
            .iter()
            .map(|v| v.to_string().len())
            .max()
            .unwrap_or(1)
    }
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shift = i64::from(self.one_based);
        let width = self.width();
        let (rows, columns) = (self.rows.size() as i64, self.columns.size() as i64);
        let rule = format!("+{}", "-".repeat(width + 2)).repeat(columns as usize) + "+";
        if self.one_based {
            writeln!(f, "{}", self.layout.moye())?;
        } else {
            writeln!(f, "{}", self.layout)?;
        }
        f.write_str("    ")?;
        for n in 0..columns {
            write!(f, "  {:>width$} ", n + shift)?;
        }
        writeln!(f)?;
        for m in 0..rows {
            writeln!(f, "    {rule}")?;
            write!(f, "{:>2}  ", m + shift)?;
            // Inside the domain the offsets fit (the layout's bounds were checked).
            let row = self.rows.eval(m).map_err(|_| fmt::Error)?;
            for n in 0..columns {
                let offset = row + self.columns.eval(n).map_err(|_| fmt::Error)?;
                write!(f, "| {:>width$} ", offset + shift)?;
            }
            writeln!(f, "|")?;
        }
        writeln!(f, "    {rule}")
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::cute;
    use super::*;

    #[test]
    fn widths_follow_the_cosize_and_negative_offsets() {
        assert!(cute("(2,5):(5,1)")
            .table()
            .unwrap()
            .to_string()
            .contains("+----+"));
        assert!(cute("(2,2):(1,2)")
            .table()
            .unwrap()
            .to_string()
            .contains("+---+"));
        let negative = cute("(2,2):(-50,1)").table().unwrap().to_string();
        assert!(negative.contains("\n 1  | -50 | -49 |\n"), "{negative}");
    }

    #[test]
    fn only_rank_two() {
        for text in ["8:1", "(2,2,2):(1,2,4)", "((2,2)):((1,2))"] {
            assert!(
                matches!(cute(text).table(), Err(Error::InvalidLayout(_))),
                "{text}"
            );
        }
    }
}
