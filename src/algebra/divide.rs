//! CuTe's divides: each mode of a layout split into a tile and the rest.

use super::composition::compose_layout;
use super::tiler::{flat, tiled, zipped};
use super::{by_mode, CuteLayout, Rest, Tiler};
use crate::error::Result;

impl CuteLayout {
    /// CuTe's `logical_divide(A, T)`: `A ∘ (T, T*)` with `T*` the complement of the tile `T`
    /// within `A`'s (coalesced) shape, so the result is `(tile, rest)`: its first mode walks one
    /// tile, its second the tiles. A tuple tiler divides mode by mode and keeps the modes beyond
    /// it; `_` keeps a mode; an integer `n` is the tile `n:1`.
    ///
    /// A tile that does not divide the layout is allowed, as in CuTe: the result has more
    /// coordinates than `A` and the extra ones continue along `A`'s last mode (the caller masks
    /// them). Fails like [`CuteLayout::complement`] for a tile with overlapping modes and like
    /// [`CuteLayout::composition`] when `A ∘ (T, T*)` breaks CuTe's divisibility conditions.
    ///
    /// ```
    /// use relayout::notation::cute::CuteLayout;
    /// let a = CuteLayout::parse("(4,2,3):(2,1,8)")?;
    /// let d = a.logical_divide(&CuteLayout::parse("4:2")?)?;
    /// assert_eq!(d.to_string(), "((2,2),(2,3)):((4,1),(2,8))");
    ///
    /// // 48 elements in tiles of 32: two tiles, the second one half past the end.
    /// let v = CuteLayout::parse("48:1")?;
    /// assert_eq!(v.logical_divide(&CuteLayout::parse("32:1")?)?.to_string(), "(32,2):(1,32)");
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn logical_divide(&self, tiler: impl Into<Tiler>) -> Result<CuteLayout> {
        logical_divide(self, &tiler.into())
    }

    /// CuTe's `zipped_divide`: [`CuteLayout::logical_divide`] rearranged into
    /// `((tile_0, tile_1, …), (rest_0, rest_1, …, modes beyond the tiler))`.
    ///
    /// Fails, as CuTe does at compile time, when a mode the tiler names does not come out of the
    /// divide as a `(tile, rest)` pair (a `_` on a mode that is not of rank 2).
    ///
    /// ```
    /// use relayout::notation::cute::CuteLayout;
    /// let a = CuteLayout::parse("(6,8):(8,1)")?; // a 6x8 row-major matrix
    /// let z = a.zipped_divide("(3,4)".parse::<relayout::algebra::Tiler>()?)?;
    /// assert_eq!(z.to_string(), "((3,4),(2,2)):((8,1),(24,4))"); // 3x4 tiles, 2x2 of them
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn zipped_divide(&self, tiler: impl Into<Tiler>) -> Result<CuteLayout> {
        let tiler = tiler.into();
        zipped(&logical_divide(self, &tiler)?, &tiler)
    }

    /// CuTe's `tiled_divide`: [`CuteLayout::zipped_divide`] with the rest modes unpacked,
    /// `((tile_0, tile_1, …), rest_0, rest_1, …)`.
    ///
    /// ```
    /// use relayout::notation::cute::CuteLayout;
    /// let a = CuteLayout::parse("(6,8):(8,1)")?;
    /// let t = a.tiled_divide("(3,4)".parse::<relayout::algebra::Tiler>()?)?;
    /// assert_eq!(t.to_string(), "((3,4),2,2):((8,1),24,4)");
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn tiled_divide(&self, tiler: impl Into<Tiler>) -> Result<CuteLayout> {
        tiled(self.zipped_divide(tiler)?)
    }

    /// CuTe's `flat_divide`: [`CuteLayout::zipped_divide`] with both modes unpacked,
    /// `(tile_0, tile_1, …, rest_0, rest_1, …)`.
    ///
    /// ```
    /// use relayout::notation::cute::CuteLayout;
    /// let a = CuteLayout::parse("(6,8):(8,1)")?;
    /// let f = a.flat_divide("(3,4)".parse::<relayout::algebra::Tiler>()?)?;
    /// assert_eq!(f.to_string(), "(3,4,2,2):(8,1,24,4)");
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn flat_divide(&self, tiler: impl Into<Tiler>) -> Result<CuteLayout> {
        flat(self.zipped_divide(tiler)?)
    }
}

fn logical_divide(a: &CuteLayout, tiler: &Tiler) -> Result<CuteLayout> {
    match tiler {
        Tiler::Keep => Ok(a.clone()),
        Tiler::Tuple(tilers) => by_mode(a, tilers, Rest::Keep, "logical_divide", logical_divide),
        Tiler::Layout(tile) => {
            let rest = tile.complement(a.coalesce().shape().clone())?;
            compose_layout(a, &CuteLayout::from_modes(vec![tile.clone(), rest])?)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{cute, injective_layouts, layouts, shapes, sorted_offsets};
    use super::*;
    use crate::error::Error;
    use proptest::prelude::*;

    fn divide(a: &str, tiler: &str) -> String {
        cute(a)
            .logical_divide(tiler.parse::<Tiler>().unwrap())
            .unwrap()
            .to_string()
    }

    #[test]
    fn documented_examples() {
        assert_eq!(
            divide("(4,2,3):(2,1,8)", "4:2"),
            "((2,2),(2,3)):((4,1),(2,8))"
        );
        assert_eq!(divide("48:1", "32"), "(32,2):(1,32)");
        assert_eq!(divide("(32,4,4)", "64"), "(64,8):(1,64)");
        assert_eq!(divide("(6,8):(8,1)", "<_, 4>"), "(6,(4,2)):(8,(1,4))");
        assert_eq!(
            divide("(6,8,5):(8,1,48)", "(3,4)"),
            "((3,2),(4,2),5):((8,24),(1,4),48)"
        );
        let raked = cute("((3,2),(4,2)):((16,1),(4,2))");
        let subtile: Tiler = "<2:3, 2:4>".parse().unwrap();
        assert_eq!(
            raked.logical_divide(&subtile).unwrap().to_string(),
            "((2,3),(2,4)):((1,16),(2,4))"
        );
        assert_eq!(
            raked.zipped_divide(&subtile).unwrap().to_string(),
            "((2,2),(3,4)):((1,2),(16,4))"
        );
        // A `_` in a zipped divide needs a (tile, rest) pair, as in CuTe.
        let err = cute("(6,8):(8,1)").zipped_divide("<_, 4>".parse::<Tiler>().unwrap());
        assert!(matches!(err, Err(Error::InvalidLayout(_))), "{err:?}");
        let err = cute("(6,8):(8,1)").logical_divide("(2,2,2)".parse::<Tiler>().unwrap());
        assert!(matches!(err, Err(Error::InvalidLayout(_))), "{err:?}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Coordinate `(t, r)` of the divide is the element `T(t) + T*(r)` of the layout.
        #[test]
        fn dividing_then_indexing_is_the_original(
            a in layouts(shapes(2, 5), -4..=8),
            tile in injective_layouts(shapes(1, 2), 2),
        ) {
            let rest = tile.complement(a.coalesce().shape().clone()).unwrap();
            let Ok(d) = a.logical_divide(&tile) else { return Ok(()) };
            let (tiles, rests) = (d.mode(0).unwrap(), d.mode(1).unwrap());
            prop_assert_eq!(tiles.size(), tile.size());
            prop_assert_eq!(rests.size(), rest.size());
            for t in 0..tile.size() as i64 {
                for r in 0..rest.size() as i64 {
                    let original = a.eval(tile.eval(t).unwrap() + rest.eval(r).unwrap()).unwrap();
                    prop_assert_eq!(tiles.eval(t).unwrap() + rests.eval(r).unwrap(), original);
                }
            }
        }

        /// A compact layout divided by `n` with `n | size` is the same elements, in tiles; otherwise
        /// the divide overruns.
        #[test]
        fn even_divides_cover_the_layout_once(a in injective_layouts(shapes(2, 5), 1), n in 1i64..=8) {
            let size = a.size() as i64;
            let tile = CuteLayout::parse(&format!("{}:1", n)).unwrap();
            let Ok(d) = a.logical_divide(&tile) else { return Ok(()) };
            if size % n == 0 {
                prop_assert_eq!(sorted_offsets(&d), sorted_offsets(&a));
            } else {
                prop_assert!(d.size() as i64 > size); // overrun
            }
        }

        /// The zipped, tiled and flat forms rearrange the modes of the logical divide.
        #[test]
        fn rearranged_divides_keep_the_elements(a in layouts(shapes(2, 5), 0..=6), sizes in prop::collection::vec(1i64..=4, 1..=2)) {
            let tiler = Tiler::Tuple(sizes.iter().map(|&n| Tiler::Layout(CuteLayout::parse(&format!("{}:1", n)).unwrap())).collect());
            let Ok(logical) = a.logical_divide(&tiler) else { return Ok(()) };
            let zipped = a.zipped_divide(&tiler).unwrap();
            prop_assert_eq!(zipped.rank(), 2);
            prop_assert_eq!(zipped.mode(0).unwrap().rank(), sizes.len());
            prop_assert_eq!(zipped.mode(1).unwrap().rank(), a.rank());
            let tiled = a.tiled_divide(&tiler).unwrap();
            let flat = a.flat_divide(&tiler).unwrap();
            for l in [&zipped, &tiled, &flat] {
                prop_assert_eq!(sorted_offsets(l), sorted_offsets(&logical));
            }
        }
    }
}
