//! One physical dimension of a layout: a mixed-radix digit of a logical coordinate.

use std::fmt;

/// What a [`Digit`] reads: one logical dimension, or a fused sum `Σ weight·x[dim]` of several.
///
/// Fused sources come from XLA's `*` combine and from TVM maps over sums such as
/// `(i*7 + j) // 4`. A fused source with one term of weight 1 is always stored as [`Source::Dim`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Source {
    /// The coordinate of one logical dimension.
    Dim(usize),
    /// `Σ weight·x[dim]` over the listed `(dim, weight)` terms (dims distinct, sorted, weights ≠ 0).
    Fused(Vec<(usize, i64)>),
}

impl Source {
    /// A fused source from `(dim, weight)` terms; merges repeated dims, drops zero weights and
    /// returns [`Source::Dim`] for a single term of weight 1.
    pub fn fused(terms: impl IntoIterator<Item = (usize, i64)>) -> Source {
        let mut merged: Vec<(usize, i64)> = Vec::new();
        for (dim, weight) in terms {
            match merged.iter_mut().find(|(d, _)| *d == dim) {
                Some(term) => term.1 = term.1.saturating_add(weight),
                None => merged.push((dim, weight)),
            }
        }
        merged.retain(|&(_, w)| w != 0);
        merged.sort_unstable();
        match merged.as_slice() {
            [(dim, 1)] => Source::Dim(*dim),
            _ => Source::Fused(merged),
        }
    }

    /// The `(dim, weight)` terms of the source.
    pub fn terms(&self) -> Vec<(usize, i64)> {
        match self {
            Source::Dim(d) => vec![(*d, 1)],
            Source::Fused(terms) => terms.clone(),
        }
    }

    /// The logical dimensions the source reads.
    pub fn dims(&self) -> Vec<usize> {
        self.terms().into_iter().map(|(d, _)| d).collect()
    }

    /// The source's value at a logical coordinate (the caller guarantees the rank).
    pub fn value(&self, coord: &[usize]) -> i128 {
        match self {
            Source::Dim(d) => coord[*d] as i128,
            Source::Fused(terms) => terms
                .iter()
                .map(|&(d, w)| w as i128 * coord[d] as i128)
                .sum(),
        }
    }

    /// Inclusive range of the source's value over the logical `shape`.
    pub fn range(&self, shape: &[usize]) -> (i128, i128) {
        self.terms().iter().fold((0, 0), |(lo, hi), &(d, w)| {
            let top = w as i128 * (shape[d] as i128 - 1);
            (lo + top.min(0), hi + top.max(0))
        })
    }
}

/// A mixed-radix digit: `stride · (((source + shift) floordiv div) mod ext)`.
///
/// `ext = None` means no modulo (the most significant digit of a dimension, which may over-cover
/// it: padding). A layout's offset is the sum of its digits plus a constant base.
///
/// ```
/// use relayout::{Digit, Source};
///
/// // The within-tile digit of a 4-wide tiling of dim 1, stored with stride 1.
/// let d = Digit::new(Source::Dim(1), 1, Some(4), 1);
/// assert_eq!(d.eval(&[0, 6]), 2);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Digit {
    /// What the digit reads.
    pub source: Source,
    /// Added to the source before dividing (TVM's left padding, `(i + 1) // 4`).
    pub shift: i64,
    /// The divisor (the volume of the digits below this one); at least 1.
    pub div: usize,
    /// The radix; `None` for no modulo.
    pub ext: Option<usize>,
    /// Elements between consecutive values of the digit; negative and zero strides are allowed.
    pub stride: i64,
}

impl Digit {
    /// A digit with no shift.
    pub fn new(source: Source, div: usize, ext: Option<usize>, stride: i64) -> Digit {
        Digit {
            source,
            shift: 0,
            div,
            ext,
            stride,
        }
    }

    /// The dimension a simple digit reads, or `None` for a fused source.
    pub fn dim(&self) -> Option<usize> {
        match self.source {
            Source::Dim(d) => Some(d),
            Source::Fused(_) => None,
        }
    }

    /// The digit's value (before the stride) at a coordinate.
    pub fn value(&self, coord: &[usize]) -> i128 {
        let v = (self.source.value(coord) + self.shift as i128).div_euclid(self.div as i128);
        match self.ext {
            Some(e) => v.rem_euclid(e as i128),
            None => v,
        }
    }

    /// The digit's contribution `stride · value` at a coordinate.
    pub fn eval(&self, coord: &[usize]) -> i128 {
        self.stride as i128 * self.value(coord)
    }

    /// Inclusive range of the digit's value over the logical `shape`.
    pub fn value_range(&self, shape: &[usize]) -> (i128, i128) {
        let (lo, hi) = self.source.range(shape);
        let shift = self.shift as i128;
        let div = self.div as i128;
        let (lo, hi) = ((lo + shift).div_euclid(div), (hi + shift).div_euclid(div));
        match self.ext {
            None => (lo, hi),
            Some(e) => {
                let e = e as i128;
                let (a, b) = (lo.rem_euclid(e), hi.rem_euclid(e));
                if hi - lo + 1 >= e || a > b {
                    (0, e - 1)
                } else {
                    (a, b)
                }
            }
        }
    }

    /// How many values the digit takes over `shape` at most (the size of its value range).
    pub fn count(&self, shape: &[usize]) -> i128 {
        let (lo, hi) = self.value_range(shape);
        hi - lo + 1
    }
}

impl fmt::Display for Digit {
    /// `stride*(x1/4%2)`-style text: the digit as an expression over the coordinates `x0, x1, …`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut src = match &self.source {
            Source::Dim(d) => format!("x{d}"),
            Source::Fused(terms) => {
                let parts: Vec<String> = terms
                    .iter()
                    .map(|&(d, w)| {
                        if w == 1 {
                            format!("x{d}")
                        } else {
                            format!("{w}*x{d}")
                        }
                    })
                    .collect();
                format!("({})", parts.join(" + "))
            }
        };
        if self.shift != 0 {
            src = format!("({src} + {})", self.shift);
        }
        let mut expr = src;
        if self.div != 1 {
            expr = format!("{expr}/{}", self.div);
        }
        if let Some(e) = self.ext {
            expr = format!("{expr}%{e}");
        }
        let bare = self.div == 1 && self.ext.is_none();
        match (self.stride, bare) {
            (1, true) => write!(f, "{expr}"),
            (1, false) => write!(f, "({expr})"),
            (s, true) => write!(f, "{s}*{expr}"),
            (s, false) => write!(f, "{s}*({expr})"),
        }
    }
}
