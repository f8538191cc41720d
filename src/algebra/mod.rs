//! CuTe's layout algebra on [`CuteLayout`]: coalesce, composition, complement, right inverse,
//! the divides and the products, and CuTe's `print_layout` table.
//!
//! | CuTe | here |
//! |---|---|
//! | `coalesce(L)`, `coalesce(L, profile)` | [`CuteLayout::coalesce`], [`CuteLayout::coalesce_by`] |
//! | `composition(A, B)` | [`CuteLayout::composition`] (B a layout, a tuple of tilers, a shape or `_`) |
//! | `complement(A, cotarget)`, `complement(A)` | [`CuteLayout::complement`], [`CuteLayout::complement_in_cosize`] |
//! | `right_inverse(L)` | [`CuteLayout::right_inverse`] |
//! | `logical_divide`, `zipped_divide`, `tiled_divide`, `flat_divide` | [`CuteLayout::logical_divide`], … |
//! | `logical_product`, `zipped_product`, `tiled_product`, `flat_product` | [`CuteLayout::logical_product`], … |
//! | `blocked_product`, `raked_product` | [`CuteLayout::blocked_product`], [`CuteLayout::raked_product`] |
//! | `make_layout(L0, L1, …)` | [`CuteLayout::from_modes`] |
//! | `print_layout(L)` | [`CuteLayout::table`] |
//!
//! Every integer here is static in CuTe's sense, so the results are the ones CuTe computes for
//! static layouts (size-1 modes dropped, modes merged where they continue each other). The
//! conditions CuTe checks only at compile time (a stride and a shape of a composition that do not
//! divide each other, a complement of a layout whose modes overlap) are always checked, and a
//! failure is an [`Error::InvalidLayout`] rather than a layout that
//! computes something else. Divides by tiles that do not divide the layout are allowed, as in CuTe:
//! the result overruns, and the caller masks the extra coordinates.
//!
//! A result converts to the canonical [`Layout`](crate::Layout) with [`CuteLayout::to_layout`], so
//! it can be the source or the destination of a relayout. Here a row-major 6×8 matrix is copied
//! into 2×2 blocks laid out by a `blocked_product`:
//!
//! ```
//! use relayout::notation::cute::CuteLayout;
//! use relayout::{compile_relayout, reference, Layout};
//!
//! let block = CuteLayout::parse("(2,2):(1,2)")?;    // a 2x2 column-major block
//! let grid = CuteLayout::parse("(3,4):(4,1)")?;     // 3x4 blocks, row-major
//! let tiled = block.blocked_product(&grid)?;
//! assert_eq!(tiled.to_string(), "((2,3),(2,4)):((1,16),(2,4))");
//!
//! let src = Layout::row_major(&[6, 8])?;
//! let dst = tiled.to_layout()?;                     // logical shape [6, 8]
//! let kernel = compile_relayout(&src, &dst)?;
//! let a: Vec<f32> = (0..48).map(|i| i as f32).collect();
//! let (mut got, mut want) = (vec![0.0f32; dst.cosize()], vec![0.0f32; dst.cosize()]);
//! kernel.run(&a, &mut got)?;
//! reference::relayout(&src, &a, &dst, &mut want, None)?;
//! assert_eq!(got, want);
//! assert_eq!(got[..4], [0.0, 8.0, 1.0, 9.0]);       // the first 2x2 block
//! # Ok::<(), relayout::Error>(())
//! ```

mod coalesce;
mod complement;
mod composition;
mod divide;
mod inverse;
mod product;
mod table;
mod tiler;

pub use crate::notation::cute::{CuteLayout, IntTuple};
pub use table::Table;
pub use tiler::Tiler;

use crate::error::{Error, Result};

/// The flattened `(shape, stride)` pairs of a layout, left to right.
fn flat_modes(layout: &CuteLayout) -> Vec<(i64, i64)> {
    layout
        .shape()
        .leaves()
        .into_iter()
        .zip(layout.stride().leaves())
        .collect()
}

/// The shape and stride of a flat layout: an integer mode for one pair, a flat tuple for more.
fn flat_parts(modes: &[(i64, i64)]) -> (IntTuple, IntTuple) {
    match modes {
        [(s, d)] => (IntTuple::Int(*s), IntTuple::Int(*d)),
        _ => (
            IntTuple::Tuple(modes.iter().map(|&(s, _)| IntTuple::Int(s)).collect()),
            IntTuple::Tuple(modes.iter().map(|&(_, d)| IntTuple::Int(d)).collect()),
        ),
    }
}

/// A flat layout from pairs computed in 128-bit arithmetic; [`Error::Overflow`] when a value or
/// the layout does not fit.
fn flat_layout(modes: &[(i128, i128)]) -> Result<CuteLayout> {
    let narrow = |v: i128| {
        i64::try_from(v).map_err(|_| Error::Overflow(format!("{v} does not fit in 64 bits")))
    };
    let modes = modes
        .iter()
        .map(|&(s, d)| Ok((narrow(s)?, narrow(d)?)))
        .collect::<Result<Vec<_>>>()?;
    let (shape, stride) = flat_parts(&modes);
    CuteLayout::new(shape, stride)
}

/// `⌈a / b⌉` for positive `a` and `b`.
fn ceil_div(a: i128, b: i128) -> i128 {
    (a + b - 1) / b
}

/// What happens to the modes of a layout beyond those a tuple tiler (or profile) names.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rest {
    /// Kept unchanged (divides, products, by-mode coalesce).
    Keep,
    /// Dropped (composition).
    Drop,
}

/// CuTe's `transform_layout`: applies `op` to mode `i` of `layout` and `items[i]`, and joins the
/// results into a tuple layout, followed by the modes beyond `items` if `rest` keeps them.
///
/// `name` is the operation, for the error when `items` is empty or longer than the rank.
fn by_mode<T>(
    layout: &CuteLayout,
    items: &[T],
    rest: Rest,
    name: &str,
    op: impl Fn(&CuteLayout, &T) -> Result<CuteLayout>,
) -> Result<CuteLayout> {
    let modes = layout.modes();
    if items.is_empty() || items.len() > modes.len() {
        return Err(Error::InvalidLayout(format!(
            "{name}: a tuple of {} modes does not fit {layout}, which has {} top-level modes",
            items.len(),
            modes.len()
        )));
    }
    let mut results = modes
        .iter()
        .zip(items)
        .map(|(mode, item)| op(mode, item))
        .collect::<Result<Vec<_>>>()?;
    if rest == Rest::Keep {
        results.extend(modes.into_iter().skip(items.len()));
    }
    CuteLayout::from_modes(results)
}

/// Helpers shared by the algebra's tests.
#[cfg(test)]
mod testing {
    use super::CuteLayout;
    pub(crate) use crate::notation::cute::testing::{cute, injective_layouts, layouts, shapes};

    /// `L(i)` for every 1-D coordinate `i` of the domain.
    pub(crate) fn offsets(layout: &CuteLayout) -> Vec<i64> {
        (0..layout.size() as i64)
            .map(|i| layout.eval(i).unwrap())
            .collect()
    }

    /// The offsets of the domain in increasing order (the image, with repeats).
    pub(crate) fn sorted_offsets(layout: &CuteLayout) -> Vec<i64> {
        let mut v = offsets(layout);
        v.sort_unstable();
        v
    }
}
