//! CuTe's integer tuples: the nested shapes and strides of a [`CuteLayout`](super::CuteLayout),
//! with their walk, printing and parsing.

use std::fmt;
use std::str::FromStr;

use super::{int_tuple, NOTATION};
use crate::error::{Error, Result};
use crate::notation::cursor::Cursor;

/// A CuTe integer tuple: an integer or a tuple of integer tuples, nested to any depth.
///
/// Shapes and strides of a [`CuteLayout`](super::CuteLayout) are `IntTuple`s. It prints in CuTe's form (`(2,(2,2))`)
/// and, with the alternate flag `{:#}`, in MoYe's (`(2, (2, 2))`, one-tuples as `(8,)`).
///
/// ```
/// use relayout::notation::cute::IntTuple;
/// let t: IntTuple = "(_2, (3, 4))".parse()?;
/// assert_eq!(t.to_string(), "(2,(3,4))");
/// assert_eq!(format!("{t:#}"), "(2, (3, 4))");
/// assert_eq!((t.rank(), t.depth(), t.product()?), (2, 2, 24));
/// # Ok::<(), relayout::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum IntTuple {
    /// One integer.
    Int(i64),
    /// A tuple of integer tuples.
    Tuple(Vec<IntTuple>),
}

/// One step of a pre-order walk over an [`IntTuple`]; the walk is iterative, so trees of any
/// depth are safe to print and compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Token {
    /// The start of a tuple with this many entries.
    Open(usize),
    /// An integer.
    Int(i64),
    /// The end of the innermost open tuple.
    Close,
}

/// The pre-order token stream of an [`IntTuple`].
pub(super) struct Tokens<'a> {
    pending: Option<&'a IntTuple>,
    open: Vec<std::slice::Iter<'a, IntTuple>>,
}

impl<'a> Iterator for Tokens<'a> {
    type Item = Token;

    fn next(&mut self) -> Option<Token> {
        if let Some(node) = self.pending.take() {
            return Some(match node {
                IntTuple::Int(v) => Token::Int(*v),
                IntTuple::Tuple(items) => {
                    self.open.push(items.iter());
                    Token::Open(items.len())
                }
            });
        }
        match self.open.last_mut()?.next() {
            Some(child) => {
                self.pending = Some(child);
                self.next()
            }
            None => {
                self.open.pop();
                Some(Token::Close)
            }
        }
    }
}

impl IntTuple {
    pub(super) fn tokens(&self) -> Tokens<'_> {
        Tokens {
            pending: Some(self),
            open: Vec::new(),
        }
    }

    /// The number of top-level entries: 1 for an integer, the length for a tuple.
    pub fn rank(&self) -> usize {
        match self {
            IntTuple::Int(_) => 1,
            IntTuple::Tuple(items) => items.len(),
        }
    }

    /// The nesting depth: 0 for an integer, 1 for a flat tuple, and so on.
    pub fn depth(&self) -> usize {
        let mut open = 0usize;
        let mut deepest = 0usize;
        for token in self.tokens() {
            match token {
                Token::Open(_) => {
                    open += 1;
                    deepest = deepest.max(open);
                }
                Token::Close => open -= 1,
                Token::Int(_) => {}
            }
        }
        deepest
    }

    /// The integers, left to right (depth-first).
    pub fn leaves(&self) -> Vec<i64> {
        self.tokens()
            .filter_map(|t| match t {
                Token::Int(v) => Some(v),
                _ => None,
            })
            .collect()
    }

    /// The integers as one flat tuple (an integer stays an integer), CuTe's `flatten`.
    pub fn flatten(&self) -> IntTuple {
        match self {
            IntTuple::Int(v) => IntTuple::Int(*v),
            IntTuple::Tuple(_) => {
                IntTuple::Tuple(self.leaves().into_iter().map(IntTuple::Int).collect())
            }
        }
    }

    /// The product of the integers (CuTe's `size` of a shape); [`Error::Overflow`] if it does
    /// not fit in 64 bits.
    pub fn product(&self) -> Result<i64> {
        self.leaves()
            .into_iter()
            .try_fold(1i64, |acc, v| acc.checked_mul(v))
            .ok_or_else(|| {
                Error::Overflow(format!("the product of {self} does not fit in 64 bits"))
            })
    }

    /// The same nesting with the integers replaced, left to right, by `values` (which must have
    /// one value per integer).
    pub(super) fn with_leaves(&self, values: &[i64]) -> IntTuple {
        let mut values = values.iter().copied();
        let mut open: Vec<Vec<IntTuple>> = vec![Vec::new()];
        for token in self.tokens() {
            let finished = match token {
                Token::Open(n) => {
                    open.push(Vec::with_capacity(n));
                    continue;
                }
                Token::Int(_) => IntTuple::Int(values.next().unwrap_or(0)),
                Token::Close => IntTuple::Tuple(open.pop().unwrap_or_default()),
            };
            if let Some(items) = open.last_mut() {
                items.push(finished);
            }
        }
        open.pop()
            .and_then(|mut root| root.pop())
            .unwrap_or(IntTuple::Int(0))
    }
}

impl fmt::Display for IntTuple {
    /// CuTe's form `(2,(2,2))`; with `{:#}`, MoYe's `(2, (2, 2))` (one-tuples as `(8,)`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let moye = f.alternate();
        let separator = if moye { ", " } else { "," };
        // Entries written so far in each open tuple.
        let mut written: Vec<usize> = Vec::new();
        for token in self.tokens() {
            if token != Token::Close {
                if let Some(n) = written.last_mut() {
                    if *n > 0 {
                        f.write_str(separator)?;
                    }
                    *n += 1;
                }
            }
            match token {
                Token::Open(_) => {
                    f.write_str("(")?;
                    written.push(0);
                }
                Token::Int(v) => write!(f, "{v}")?,
                Token::Close => {
                    if written.pop() == Some(1) && moye {
                        f.write_str(",")?;
                    }
                    f.write_str(")")?;
                }
            }
        }
        Ok(())
    }
}

impl FromStr for IntTuple {
    type Err = Error;

    /// Parses an integer tuple such as `(2,(_2,2))` or `(4, (2, 3))`.
    fn from_str(text: &str) -> Result<IntTuple> {
        let mut cursor = Cursor::new(NOTATION, text, 0);
        let tuple = int_tuple(&mut cursor, &mut Vec::new())?;
        cursor.expect_end()?;
        Ok(tuple)
    }
}

impl From<i64> for IntTuple {
    /// The integer as an [`IntTuple::Int`].
    fn from(value: i64) -> IntTuple {
        IntTuple::Int(value)
    }
}
