//! Lowering of index expressions to sums of mixed-radix digits.
//!
//! Every expression becomes `Σ scale · (((Σ w·x + shift) floordiv div) mod ext) + constant`,
//! kept in a canonical form so that `c·(v // c) + v % c` folds back into `v`.

use super::{gcd, Shown, TvmExpr, TvmOp};
use crate::error::{Error, Result};
use crate::layout::{Digit, Source};

/// What a term reads: `((Σ w·x + shift) floordiv div) mod ext`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    lin: Vec<(usize, i64)>,
    shift: i64,
    div: i64,
    ext: Option<i64>,
}

#[derive(Debug, Clone)]
struct Term {
    key: Key,
    scale: i64,
}

impl Term {
    /// `scale · x[d]`.
    fn index(d: usize, scale: i64) -> Term {
        Term {
            key: Key {
                lin: vec![(d, 1)],
                shift: 0,
                div: 1,
                ext: None,
            },
            scale,
        }
    }

    /// A canonical term without division or modulo is `scale · x[d]`.
    fn is_plain(&self) -> bool {
        self.key.div == 1 && self.key.ext.is_none()
    }
}

/// `Σ terms + constant`, in canonical form.
#[derive(Debug, Clone, Default)]
pub(super) struct Affine {
    terms: Vec<Term>,
    constant: i64,
}

impl Affine {
    fn constant(constant: i64) -> Affine {
        Affine {
            terms: Vec::new(),
            constant,
        }
    }

    fn as_constant(&self) -> Option<i64> {
        self.terms.is_empty().then_some(self.constant)
    }
}

fn overflow() -> Error {
    Error::Overflow("index arithmetic in the TVM map does not fit in 64 bits".into())
}

fn add(a: i64, b: i64) -> Result<i64> {
    a.checked_add(b).ok_or_else(overflow)
}

fn mul(a: i64, b: i64) -> Result<i64> {
    a.checked_mul(b).ok_or_else(overflow)
}

fn narrow(v: i128) -> Result<i64> {
    i64::try_from(v).map_err(|_| overflow())
}

/// Lowers expressions of one map (its shape bounds the indices).
pub(super) struct Lowering<'a> {
    shape: &'a [usize],
    names: &'a [String],
}

impl<'a> Lowering<'a> {
    pub(super) fn new(shape: &'a [usize], names: &'a [String]) -> Lowering<'a> {
        Lowering { shape, names }
    }

    fn shown<'e>(&'e self, expr: &'e TvmExpr) -> Shown<'e> {
        Shown {
            expr,
            names: self.names,
        }
    }

    pub(super) fn lower(&self, expr: &TvmExpr) -> Result<Affine> {
        match expr {
            TvmExpr::Int(v) => Ok(Affine::constant(*v)),
            TvmExpr::Index(d) => self.normalize(vec![Term::index(*d, 1)], 0),
            TvmExpr::Neg(a) => self.scaled(self.lower(a)?, -1),
            TvmExpr::Binary(op, a, b) => {
                let (x, y) = (self.lower(a)?, self.lower(b)?);
                match op {
                    TvmOp::Add => self.sum(x, y),
                    TvmOp::Sub => self.sum(x, self.scaled(y, -1)?),
                    TvmOp::Mul => self.product(x, y, expr),
                    TvmOp::FloorDiv => self.floordiv(x, self.divisor(&y, expr)?, expr),
                    TvmOp::FloorMod => self.floormod(x, self.divisor(&y, expr)?, expr),
                }
            }
        }
    }

    /// `Σ weight · part`, for the row-major linearisation of the outputs.
    pub(super) fn linear_combination(
        &self,
        parts: impl IntoIterator<Item = (Affine, i64)>,
    ) -> Result<Affine> {
        let mut terms = Vec::new();
        let mut constant = 0i64;
        for (part, weight) in parts {
            for term in part.terms {
                terms.push(Term {
                    scale: mul(term.scale, weight)?,
                    ..term
                });
            }
            constant = add(constant, mul(part.constant, weight)?)?;
        }
        self.normalize(terms, constant)
    }

    /// The digits and base of an affine sum.
    pub(super) fn digits(&self, affine: &Affine) -> Result<(Vec<Digit>, i64)> {
        let digits = affine
            .terms
            .iter()
            .map(|t| {
                let size = |v: i64| usize::try_from(v).map_err(|_| overflow());
                Ok(Digit {
                    source: Source::fused(t.key.lin.iter().copied()),
                    shift: t.key.shift,
                    div: size(t.key.div)?,
                    ext: t.key.ext.map(size).transpose()?,
                    stride: t.scale,
                })
            })
            .collect::<Result<_>>()?;
        Ok((digits, affine.constant))
    }

    fn sum(&self, x: Affine, y: Affine) -> Result<Affine> {
        let mut terms = x.terms;
        terms.extend(y.terms);
        self.normalize(terms, add(x.constant, y.constant)?)
    }

    fn scaled(&self, x: Affine, k: i64) -> Result<Affine> {
        let terms = x
            .terms
            .into_iter()
            .map(|t| {
                Ok(Term {
                    scale: mul(t.scale, k)?,
                    ..t
                })
            })
            .collect::<Result<_>>()?;
        self.normalize(terms, mul(x.constant, k)?)
    }

    fn product(&self, x: Affine, y: Affine, expr: &TvmExpr) -> Result<Affine> {
        match (x.as_constant(), y.as_constant()) {
            (Some(k), _) => self.scaled(y, k),
            (_, Some(k)) => self.scaled(x, k),
            _ => Err(Error::Unsupported(format!(
                "{} multiplies two index expressions; a TVM layout map must be affine in its \
                 indices",
                self.shown(expr)
            ))),
        }
    }

    fn divisor(&self, y: &Affine, expr: &TvmExpr) -> Result<i64> {
        let shown = self.shown(expr);
        match y.as_constant() {
            None => Err(Error::Unsupported(format!(
                "{shown} divides by an index expression; TVM layout maps divide by constants"
            ))),
            Some(0) => Err(Error::InvalidLayout(format!("{shown} divides by zero"))),
            Some(c) if c < 0 => Err(Error::Unsupported(format!(
                "{shown} divides by a negative constant, which TVM's iterator analysis does \
                 not handle"
            ))),
            Some(c) => Ok(c),
        }
    }

    fn not_a_digit(&self, expr: &TvmExpr) -> Error {
        Error::Unsupported(format!(
            "{} is not a sum of mixed-radix digits of the indices (of the form \
             scale * ((x + shift) // div % ext)), so it has no flat-buffer layout",
            self.shown(expr)
        ))
    }

    /// `x // c` for `c > 0`: terms whose scale `c` divides leave the division; what is left
    /// must be linear in the indices (a fused source) or one digit.
    fn floordiv(&self, x: Affine, c: i64, expr: &TvmExpr) -> Result<Affine> {
        let (quotient, remainder) = (x.constant.div_euclid(c), x.constant.rem_euclid(c));
        let (whole, rest): (Vec<Term>, Vec<Term>) =
            x.terms.into_iter().partition(|t| t.scale % c == 0);
        let mut terms: Vec<Term> = whole
            .into_iter()
            .map(|t| Term {
                scale: t.scale / c,
                ..t
            })
            .collect();
        let divided = self.divide_rest(rest, remainder, c, expr)?;
        terms.extend(divided.terms);
        self.normalize(terms, add(quotient, divided.constant)?)
    }

    /// `(Σ rest + r) // c` with `0 <= r < c`.
    fn divide_rest(&self, rest: Vec<Term>, r: i64, c: i64, expr: &TvmExpr) -> Result<Affine> {
        if rest.iter().all(Term::is_plain) {
            let key = Key {
                lin: plain_weights(&rest),
                shift: r,
                div: c,
                ext: None,
            };
            return self.normalize(vec![Term { key, scale: 1 }], 0);
        }
        let [term] = rest.as_slice() else {
            return Err(self.not_a_digit(expr));
        };
        let s = term.scale;
        if s <= 0 || c % s != 0 {
            return Err(self.not_a_digit(expr));
        }
        // (s·T + r) // (s·c') = (T + r // s) // c'
        let (c, b) = (c / s, r / s);
        let Key {
            lin,
            shift,
            div,
            ext,
        } = term.key.clone();
        let key = match ext {
            None => Key {
                lin,
                shift: add(shift, mul(b, div)?)?,
                div: mul(div, c)?,
                ext: None,
            },
            Some(m) if b == 0 && m % c == 0 => Key {
                lin,
                shift,
                div: mul(div, c)?,
                ext: Some(m / c),
            },
            Some(_) => return Err(self.not_a_digit(expr)),
        };
        self.normalize(vec![Term { key, scale: 1 }], 0)
    }

    /// `x % c` for `c > 0`: terms whose scale `c` divides vanish; what is left must be
    /// linear in the indices (a fused source) or one digit.
    fn floormod(&self, x: Affine, c: i64, expr: &TvmExpr) -> Result<Affine> {
        let r = x.constant.rem_euclid(c);
        let rest: Vec<Term> = x.terms.into_iter().filter(|t| t.scale % c != 0).collect();
        if rest.iter().all(Term::is_plain) {
            // (g·y + r) % (g·c') = g·((y + r // g) % c') + r % g
            let lin = plain_weights(&rest);
            let g = lin
                .iter()
                .fold(c as u128, |g, &(_, w)| gcd(g, w.unsigned_abs() as u128))
                as i64;
            let key = Key {
                lin: lin.into_iter().map(|(d, w)| (d, w / g)).collect(),
                shift: r / g,
                div: 1,
                ext: Some(c / g),
            };
            return self.normalize(vec![Term { key, scale: g }], r % g);
        }
        let [term] = rest.as_slice() else {
            return Err(self.not_a_digit(expr));
        };
        let s = term.scale;
        if s <= 0 || c % s != 0 {
            return Err(self.not_a_digit(expr));
        }
        // (s·T + r) % (s·c') = s·((T + r // s) % c') + r % s
        let (c, q) = (c / s, r / s);
        let Key {
            lin,
            shift,
            div,
            ext,
        } = term.key.clone();
        if ext.is_some_and(|m| m % c != 0) {
            return Err(self.not_a_digit(expr));
        }
        let key = Key {
            lin,
            shift: add(shift, mul(q, div)?)?,
            div,
            ext: Some(c),
        };
        self.normalize(vec![Term { key, scale: s }], r % s)
    }

    /// Canonical terms, like terms combined, and digit pairs that continue each other
    /// (`(v // d) % e` below `(v // (d·e)) % m` with `e` times the scale) merged.
    fn normalize(&self, terms: Vec<Term>, constant: i64) -> Result<Affine> {
        let mut acc = Affine::constant(constant);
        for term in terms {
            self.absorb(&mut acc, term)?;
        }
        acc.terms = combine(acc.terms)?;
        while let Some((lower, upper)) = find_merge(&acc.terms) {
            let merged = merged_term(&acc.terms[lower], &acc.terms[upper])?;
            acc.terms.remove(lower.max(upper));
            acc.terms.remove(lower.min(upper));
            self.absorb(&mut acc, merged)?;
            acc.terms = combine(std::mem::take(&mut acc.terms))?;
        }
        Ok(acc)
    }

    fn absorb(&self, acc: &mut Affine, term: Term) -> Result<()> {
        let piece = self.canonical(term)?;
        acc.terms.extend(piece.terms);
        acc.constant = add(acc.constant, piece.constant)?;
        Ok(())
    }

    /// The inclusive range of `Σ w·x` over the shape.
    fn lin_range(&self, lin: &[(usize, i64)]) -> (i128, i128) {
        lin.iter().fold((0, 0), |(lo, hi), &(d, w)| {
            let top = w as i128 * (self.shape[d] as i128 - 1);
            (lo + top.min(0), hi + top.max(0))
        })
    }

    /// One term in canonical form: common factors of the weights and divisor cancelled,
    /// constant digits folded, moduli that never wrap dropped, plain terms split per
    /// index, and the shift reduced below the divisor (times the radix).
    fn canonical(&self, term: Term) -> Result<Affine> {
        let Term { key, scale } = term;
        let Key {
            mut lin,
            mut shift,
            mut div,
            ext,
        } = key;
        if scale == 0 || ext == Some(1) {
            // `… % 1` is 0 whatever it reads.
            return Ok(Affine::default());
        }
        let g = lin
            .iter()
            .fold(div as u128, |g, &(_, w)| gcd(g, w.unsigned_abs() as u128))
            as i64;
        if g > 1 {
            lin.iter_mut().for_each(|(_, w)| *w /= g);
            shift = shift.div_euclid(g);
            div /= g;
        }
        let (lo, hi) = self.lin_range(&lin);
        let quotient = |v: i128| (v + shift as i128).div_euclid(div as i128);
        let (qlo, qhi) = (quotient(lo), quotient(hi));
        if qlo == qhi {
            let value = ext.map_or(qlo, |m| qlo.rem_euclid(m as i128));
            return Ok(Affine::constant(narrow(value * scale as i128)?));
        }
        let ext = ext.filter(|&m| qlo < 0 || qhi >= m as i128);
        match ext {
            None if div == 1 => self.expand_plain(lin, shift, scale),
            None => {
                let whole = shift.div_euclid(div);
                let key = Key {
                    lin,
                    shift: shift.rem_euclid(div),
                    div,
                    ext: None,
                };
                Ok(Affine {
                    terms: vec![Term { key, scale }],
                    constant: mul(whole, scale)?,
                })
            }
            Some(m) => {
                let key = Key {
                    lin,
                    shift: shift.rem_euclid(mul(div, m)?),
                    div,
                    ext: Some(m),
                };
                Ok(Affine {
                    terms: vec![Term { key, scale }],
                    constant: 0,
                })
            }
        }
    }

    /// `scale · (Σ w·x + shift)` as one plain term per index that varies.
    fn expand_plain(&self, lin: Vec<(usize, i64)>, shift: i64, scale: i64) -> Result<Affine> {
        let terms = lin
            .into_iter()
            .filter(|&(d, _)| self.shape[d] > 1)
            .map(|(d, w)| Ok(Term::index(d, mul(w, scale)?)))
            .collect::<Result<_>>()?;
        Ok(Affine {
            terms,
            constant: mul(shift, scale)?,
        })
    }
}

/// The weights of a sum of plain terms, as a linear source.
fn plain_weights(plain: &[Term]) -> Vec<(usize, i64)> {
    plain.iter().map(|t| (t.key.lin[0].0, t.scale)).collect()
}

/// Adds the scales of terms with the same key; drops zero scales.
fn combine(mut terms: Vec<Term>) -> Result<Vec<Term>> {
    terms.sort_by(|a, b| a.key.cmp(&b.key));
    let mut out: Vec<Term> = Vec::with_capacity(terms.len());
    for term in terms {
        match out.last_mut() {
            Some(last) if last.key == term.key => last.scale = add(last.scale, term.scale)?,
            _ => out.push(term),
        }
    }
    out.retain(|t| t.scale != 0);
    Ok(out)
}

/// Two terms `(lower, upper)` of one source where `upper` is the next digit of `lower`.
fn find_merge(terms: &[Term]) -> Option<(usize, usize)> {
    for (a, lower) in terms.iter().enumerate() {
        let Some(e) = lower.key.ext else { continue };
        let (Some(div), Some(scale)) = (lower.key.div.checked_mul(e), lower.scale.checked_mul(e))
        else {
            continue;
        };
        let continues = |upper: &Term| {
            upper.key.lin == lower.key.lin
                && upper.key.div == div
                && upper.scale == scale
                && upper
                    .key
                    .shift
                    .checked_sub(lower.key.shift)
                    .is_some_and(|d| d.rem_euclid(div) == 0)
        };
        // A term never continues itself (that would need a radix of 1).
        let other = |(b, upper): &(usize, &Term)| *b != a && continues(upper);
        if let Some((b, _)) = terms.iter().enumerate().find(other) {
            return Some((a, b));
        }
    }
    None
}

fn merged_term(lower: &Term, upper: &Term) -> Result<Term> {
    let e = lower.key.ext.unwrap_or(1);
    Ok(Term {
        key: Key {
            lin: lower.key.lin.clone(),
            shift: upper.key.shift,
            div: lower.key.div,
            ext: upper.key.ext.map(|m| mul(m, e)).transpose()?,
        },
        scale: lower.scale,
    })
}
