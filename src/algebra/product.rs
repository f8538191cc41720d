//! CuTe's products: a layout repeated by a tiler.

use super::composition::compose_layout;
use super::tiler::{flat, tiled, zipped};
use super::{by_mode, CuteLayout, IntTuple, Rest, Tiler};
use crate::error::{Error, Result};

impl CuteLayout {
    /// CuTe's `logical_product(A, B)`: `(A, A* ∘ B)` with `A*` the complement of `A` within
    /// `size(A)·cosize(B)`, so the result's first mode is `A` and its second repeats `A` in the
    /// pattern of `B`. A tuple tiler multiplies mode by mode and keeps the modes beyond it; `_`
    /// keeps a mode; an integer `n` is the layout `n:1`.
    ///
    /// Fails like [`CuteLayout::complement`] for a layout with overlapping modes and like
    /// [`CuteLayout::composition`] when `A* ∘ B` breaks CuTe's divisibility conditions.
    ///
    /// ```
    /// use relayout::notation::cute::CuteLayout;
    /// let a = CuteLayout::parse("(2,2):(4,1)")?;
    /// let p = a.logical_product(&CuteLayout::parse("6:1")?)?;
    /// assert_eq!(p.to_string(), "((2,2),(2,3)):((4,1),(2,8))");
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn logical_product(&self, tiler: impl Into<Tiler>) -> Result<CuteLayout> {
        logical_product(self, &tiler.into())
    }

    /// CuTe's `zipped_product`: [`CuteLayout::logical_product`] rearranged into
    /// `((block modes), (repeat modes, modes beyond the tiler))`, like
    /// [`CuteLayout::zipped_divide`].
    ///
    /// ```
    /// use relayout::notation::cute::CuteLayout;
    /// let a = CuteLayout::parse("(2,2):(1,2)")?;
    /// let z = a.zipped_product(&CuteLayout::parse("(3,4):(1,3)")?)?;
    /// assert_eq!(z.to_string(), "((2,2),(3,4)):((1,2),(4,12))");
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn zipped_product(&self, tiler: impl Into<Tiler>) -> Result<CuteLayout> {
        let tiler = tiler.into();
        zipped(&logical_product(self, &tiler)?, &tiler)
    }

    /// CuTe's `tiled_product`: [`CuteLayout::zipped_product`] with the repeat modes unpacked.
    ///
    /// ```
    /// use relayout::notation::cute::CuteLayout;
    /// let a = CuteLayout::parse("(2,2):(1,2)")?;
    /// let t = a.tiled_product(&CuteLayout::parse("(3,4):(1,3)")?)?;
    /// assert_eq!(t.to_string(), "((2,2),3,4):((1,2),4,12)");
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn tiled_product(&self, tiler: impl Into<Tiler>) -> Result<CuteLayout> {
        tiled(self.zipped_product(tiler)?)
    }

    /// CuTe's `flat_product`: [`CuteLayout::zipped_product`] with both modes unpacked.
    ///
    /// ```
    /// use relayout::notation::cute::CuteLayout;
    /// let a = CuteLayout::parse("(2,2):(1,2)")?;
    /// let f = a.flat_product(&CuteLayout::parse("(3,4):(1,3)")?)?;
    /// assert_eq!(f.to_string(), "(2,2,3,4):(1,2,4,12)");
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn flat_product(&self, tiler: impl Into<Tiler>) -> Result<CuteLayout> {
        flat(self.zipped_product(tiler)?)
    }

    /// CuTe's `blocked_product(A, B)`: `A` as a block repeated over `B`, mode by mode. Both are
    /// padded with `1:0` modes to the larger rank `R`; mode `k` of the result is
    /// `(A_k, B'_k)`, the block's mode followed by the repeats along it, so the result has rank
    /// `R` and mode `k` has size `size(A_k)·size(B_k)`.
    ///
    /// Recent CUTLASS releases also coalesce each mode of this result; that is the same function,
    /// and `coalesce_by` with the profile `(1,…,1)` gives that form.
    ///
    /// ```
    /// use relayout::notation::cute::CuteLayout;
    /// let block = CuteLayout::parse("(2,2):(1,2)")?;
    /// let grid = CuteLayout::parse("(3,4):(4,1)")?;
    /// let p = block.blocked_product(&grid)?; // a 6x8 matrix of 2x2 blocks
    /// assert_eq!(p.to_string(), "((2,3),(2,4)):((1,16),(2,4))");
    /// assert_eq!(p.coalesce_by(&"(1,1)".parse()?)?.to_string(), "((2,3),8):((1,16),2)");
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn blocked_product(&self, tiler: &CuteLayout) -> Result<CuteLayout> {
        let (block, repeats) = padded_product(self, tiler)?;
        zip(&block, &repeats)
    }

    /// CuTe's `raked_product(A, B)`: like [`CuteLayout::blocked_product`] with each mode
    /// `(B'_k, A_k)`, so the blocks are interleaved: the elements of one block are spread
    /// cyclically over the result.
    ///
    /// ```
    /// use relayout::notation::cute::CuteLayout;
    /// let block = CuteLayout::parse("(2,2):(1,2)")?;
    /// let grid = CuteLayout::parse("(3,4):(4,1)")?;
    /// let p = block.raked_product(&grid)?;
    /// assert_eq!(p.to_string(), "((3,2),(4,2)):((16,1),(4,2))");
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn raked_product(&self, tiler: &CuteLayout) -> Result<CuteLayout> {
        let (block, repeats) = padded_product(self, tiler)?;
        zip(&repeats, &block)
    }
}

fn logical_product(a: &CuteLayout, tiler: &Tiler) -> Result<CuteLayout> {
    match tiler {
        Tiler::Keep => Ok(a.clone()),
        Tiler::Tuple(tilers) => by_mode(a, tilers, Rest::Keep, "logical_product", logical_product),
        Tiler::Layout(b) => CuteLayout::from_modes(vec![a.clone(), repeats(a, b)?]),
    }
}

/// The second mode of `logical_product(a, b)`: `complement(a, size(a)·cosize(b)) ∘ b`.
fn repeats(a: &CuteLayout, b: &CuteLayout) -> Result<CuteLayout> {
    let cotarget = (a.size() as i128) * (b.cosize() as i128);
    let cotarget = i64::try_from(cotarget).map_err(|_| {
        Error::Overflow(format!(
            "the product of {a} and {b} has more than 2^63 elements"
        ))
    })?;
    compose_layout(&a.complement(cotarget)?, b)
}

/// The block and the repeats of the product of `a` and `b` padded to the same rank, the
/// operands of the blocked and raked products.
fn padded_product(a: &CuteLayout, b: &CuteLayout) -> Result<(CuteLayout, CuteLayout)> {
    let rank = a.rank().max(b.rank());
    let (a, b) = (padded(a, rank)?, padded(b, rank)?);
    let repeats = repeats(&a, &b)?;
    Ok((a, repeats))
}

/// CuTe's `append<rank>(layout)`: the layout with `1:0` modes added up to `rank`.
fn padded(layout: &CuteLayout, rank: usize) -> Result<CuteLayout> {
    if layout.rank() >= rank {
        return Ok(layout.clone());
    }
    let unit = CuteLayout::new(IntTuple::Int(1), IntTuple::Int(0))?;
    let mut modes = layout.modes();
    modes.resize(rank, unit);
    CuteLayout::from_modes(modes)
}

/// CuTe's `zip(x, y)` of two layouts of one rank: `((x_0, y_0), (x_1, y_1), …)`; when `x` is an
/// integer layout, the one pair `((x, y))`.
fn zip(x: &CuteLayout, y: &CuteLayout) -> Result<CuteLayout> {
    let pair = |a: CuteLayout, b: CuteLayout| CuteLayout::from_modes(vec![a, b]);
    let pairs = match x.shape() {
        IntTuple::Int(_) => vec![pair(x.clone(), y.clone())?],
        IntTuple::Tuple(_) => x
            .modes()
            .into_iter()
            .zip(y.modes())
            .map(|(a, b)| pair(a, b))
            .collect::<Result<_>>()?,
    };
    CuteLayout::from_modes(pairs)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{cute, injective_layouts, layouts, shapes, sorted_offsets};
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn documented_examples() {
        let tile = cute("(2,2):(1,2)");
        let grid = cute("(3,4):(4,1)");
        assert_eq!(
            tile.logical_product(&grid).unwrap().to_string(),
            "((2,2),(3,4)):((1,2),(16,4))"
        );
        assert_eq!(
            cute("(3,4):(4,1)")
                .blocked_product(&cute("(2,5):(1,2)"))
                .unwrap()
                .to_string(),
            "((3,2),(4,5)):((4,12),(1,24))"
        );
        assert_eq!(
            cute("(3,4):(4,1)")
                .raked_product(&cute("(2,5):(1,2)"))
                .unwrap()
                .to_string(),
            "((2,3),(5,4)):((12,4),(24,1))"
        );
        // Rank 1: one pair; ranks 1 and 2: the block is padded with 1:0.
        assert_eq!(
            cute("4:1")
                .blocked_product(&cute("6:1"))
                .unwrap()
                .to_string(),
            "((4,6)):((1,4))"
        );
        assert_eq!(
            cute("4:1").blocked_product(&grid).unwrap().to_string(),
            "((4,3),(1,4)):((1,16),(0,4))"
        );
        assert_eq!(
            cute("(2,5):(5,1)")
                .logical_product("<_, 3>".parse::<Tiler>().unwrap())
                .unwrap()
                .to_string(),
            "(2,(5,3)):(5,(1,5))"
        );
        assert!(cute("(2,2):(1,1)").logical_product(&grid).is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// With a compact block, the product is the block followed by `B` scaled by its size.
        #[test]
        fn product_of_a_compact_block(
            a in injective_layouts(shapes(2, 4), 1),
            b in layouts(shapes(2, 4), -3..=5),
        ) {
            let p = a.logical_product(&b).unwrap();
            prop_assert_eq!(p.size(), a.size() * b.size());
            prop_assert_eq!(p.cosize(), a.size() * b.cosize());
            prop_assert_eq!(p.mode(0).unwrap(), a.clone());
            let repeat = p.mode(1).unwrap();
            let scale = a.size() as i64;
            for j in 0..b.size() as i64 {
                prop_assert_eq!(repeat.eval(j).unwrap(), scale * b.eval(j).unwrap());
            }
        }

        /// Any block: the product is the block followed by the complement's walk along `B`.
        #[test]
        fn product_places_blocks_in_the_complement(
            a in injective_layouts(shapes(2, 4), 3),
            b in layouts(shapes(2, 4), 0..=5),
        ) {
            let Ok(p) = a.logical_product(&b) else { return Ok(()) };
            let c = a.complement((a.size() * b.cosize()) as i64).unwrap();
            prop_assert_eq!(p.size(), a.size() * b.size());
            prop_assert_eq!(p.mode(0).unwrap(), a.clone());
            let repeat = p.mode(1).unwrap();
            for j in 0..b.size() as i64 {
                prop_assert_eq!(repeat.eval(j).unwrap(), c.eval(b.eval(j).unwrap()).unwrap());
            }
        }

        /// Blocked and raked products of compact layouts tile `0..size` exactly, with rank
        /// `max(rank A, rank B)` and mode `k` of size `size(A_k)·size(B_k)`.
        #[test]
        fn blocked_and_raked_products_tile_the_space(
            a in injective_layouts(shapes(2, 4), 1),
            b in injective_layouts(shapes(2, 4), 1),
        ) {
            let rank = a.rank().max(b.rank());
            let mode_size = |l: &CuteLayout, k: usize| l.mode(k).map_or(1, |m| m.size());
            let everything: Vec<i64> = (0..(a.size() * b.size()) as i64).collect();
            for p in [a.blocked_product(&b).unwrap(), a.raked_product(&b).unwrap()] {
                prop_assert_eq!(p.rank(), rank);
                prop_assert_eq!(p.cosize(), p.size());
                for k in 0..rank {
                    prop_assert_eq!(mode_size(&p, k), mode_size(&a, k) * mode_size(&b, k));
                }
                prop_assert_eq!(sorted_offsets(&p), everything.clone());
            }
            let blocked = a.blocked_product(&b).unwrap();
            for k in 0..a.rank() {
                prop_assert_eq!(blocked.mode(k).unwrap().mode(0), a.mode(k));
            }
        }

        /// The zipped, tiled and flat forms rearrange the modes of the logical product.
        #[test]
        fn rearranged_products_keep_the_elements(
            a in injective_layouts(shapes(2, 4), 2),
            sizes in prop::collection::vec(1i64..=3, 1..=2),
        ) {
            let tiler = Tiler::Tuple(
                sizes.iter().map(|&n| Tiler::Layout(CuteLayout::parse(&format!("{n}:1")).unwrap())).collect(),
            );
            let Ok(logical) = a.logical_product(&tiler) else { return Ok(()) };
            for l in [
                a.zipped_product(&tiler).unwrap(),
                a.tiled_product(&tiler).unwrap(),
                a.flat_product(&tiler).unwrap(),
            ] {
                prop_assert_eq!(l.size(), logical.size());
                prop_assert_eq!(sorted_offsets(&l), sorted_offsets(&logical));
            }
        }
    }
}
