//! TVM index maps (`IndexMap`, `transform_layout`): a logical shape followed by a Python lambda.
//!
//! ```text
//! [16, 64, 64, 128] lambda n, h, w, c: [n, c // 4, h, w, c % 4]
//! [14] T.index_map(lambda i: (i // 4, i % 4))
//! [2, 3, 8] lambda *rest, k: [*rest, k // 4, k % 4]
//! ```
//!
//! The lambda binds one index per logical dimension the way TVM binds them: positional
//! parameters first, `*args` expanding to whatever is left, keyword-only parameters (after
//! `*args` or a bare `*`) taking the last dimensions. Its body is a list, a tuple or a single
//! expression over integer literals, the indices, `+`, `-`, `*`, `//` (floordiv) and `%`
//! (floormod), with Python's precedence; `floordiv(a, b)` and `floormod(a, b)` calls (any
//! `T.`/`tir.` prefix) are accepted too.
//!
//! Meaning, as in TVM:
//!
//! * the **final shape** is what `IndexMap.map_shape` infers: TVM's iterator analysis
//!   (`DetectIterMap`) with its padding rules — ceil-division, left padding for `(x + b) // c`,
//!   extent `c` for `x % c`, fused sums such as `i*7 + j`, one padding shared by every split of
//!   a source — and interval bounds when that analysis fails. Every output range must start at 0;
//! * the **offset** of a logical coordinate is the row-major linearisation of the map's outputs
//!   over the final shape, and the buffer holds the whole final shape (padding included).
//!
//! Axis separators (multi-dimensional physical buffers) are reported as unsupported.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::str::FromStr;

use super::cursor::Cursor;
use super::Parsed;
use crate::error::{Error, Result};
use crate::layout::{Digit, Layout, Source};

/// The notation name used in parse errors.
const NOTATION: &str = "tvm";

/// Deepest expression tree (in nested operations) a map may have.
const MAX_EXPR_DEPTH: usize = 200;

/// Parses tvm layout text that starts `column_offset` characters into the user's input.
pub(crate) fn parse_layout(text: &str, column_offset: usize) -> Result<Parsed> {
    let layout = parser::parse_map(text, column_offset)?.to_layout()?;
    Ok(Parsed {
        layout,
        dtype: None,
    })
}

/// A binary operator of a [`TvmExpr`], with Python's integer semantics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TvmOp {
    /// `a + b`.
    Add,
    /// `a - b`.
    Sub,
    /// `a * b`.
    Mul,
    /// `a // b`: TVM's `floordiv`, rounding towards −∞.
    FloorDiv,
    /// `a % b`: TVM's `floormod`, with the sign of the divisor.
    FloorMod,
}

impl TvmOp {
    fn symbol(self) -> &'static str {
        match self {
            TvmOp::Add => "+",
            TvmOp::Sub => "-",
            TvmOp::Mul => "*",
            TvmOp::FloorDiv => "//",
            TvmOp::FloorMod => "%",
        }
    }

    fn precedence(self) -> u8 {
        match self {
            TvmOp::Add | TvmOp::Sub => 1,
            TvmOp::Mul | TvmOp::FloorDiv | TvmOp::FloorMod => 2,
        }
    }
}

/// One output expression of a [`TvmMap`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TvmExpr {
    /// An integer literal.
    Int(i64),
    /// The lambda parameter bound to logical dimension `d`.
    Index(usize),
    /// Unary minus.
    Neg(Box<TvmExpr>),
    /// `lhs op rhs`.
    Binary(TvmOp, Box<TvmExpr>, Box<TvmExpr>),
}

impl TvmExpr {
    fn children(&self) -> Vec<&TvmExpr> {
        match self {
            TvmExpr::Int(_) | TvmExpr::Index(_) => Vec::new(),
            TvmExpr::Neg(a) => vec![a],
            TvmExpr::Binary(_, a, b) => vec![a, b],
        }
    }
}

/// A TVM index map applied to a logical shape: `[shape] lambda params: [outputs]`.
///
/// Parse one with [`TvmMap::parse`] (or `str::parse`), print it with `Display` (a canonical text
/// that parses back), and lower it to the canonical [`Layout`] with [`TvmMap::to_layout`].
///
/// ```
/// use relayout::notation::tvm::TvmMap;
///
/// // NHWC to NCHWc (the buffer-layout RFC's example).
/// let map: TvmMap = "[16,64,64,128] lambda n,h,w,c: [n, c//4, h, w, c%4]".parse()?;
/// assert_eq!(map.final_shape()?, [16, 32, 64, 64, 4]);
/// assert_eq!(map.to_string(), "[16, 64, 64, 128] lambda n, h, w, c: [n, c // 4, h, w, c % 4]");
///
/// let layout = map.to_layout()?;
/// let expected = 32 * 64 * 64 * 4 * 11 + 64 * 64 * 4 * (101 / 4) + 64 * 4 * 37 + 4 * 23 + 101 % 4;
/// assert_eq!(layout.offset(&[11, 37, 23, 101])?, expected);
///
/// // Padding: 14 elements split by 4 live in a 4x4 buffer.
/// let padded: TvmMap = "[14] lambda i: (i // 4, i % 4)".parse()?;
/// assert_eq!(padded.final_shape()?, [4, 4]);
/// assert_eq!(padded.to_layout()?.cosize(), 16);
/// # Ok::<(), relayout::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TvmMap {
    shape: Vec<usize>,
    params: Vec<String>,
    outputs: Vec<TvmExpr>,
}

impl TvmMap {
    /// A map over `shape` whose parameter `params[d]` is the index of dimension `d`.
    ///
    /// Fails with [`Error::InvalidLayout`] when the ranks differ, an extent is 0, a name is not
    /// a Python identifier or repeats, or an output reads a dimension outside the shape, and
    /// with [`Error::Unsupported`] for expressions nested deeper than 200 operations and for
    /// more than [`crate::layout::MAX_RANK`] dimensions or outputs.
    pub fn new(shape: Vec<usize>, params: Vec<String>, outputs: Vec<TvmExpr>) -> Result<TvmMap> {
        crate::layout::check_rank(shape.len())?;
        if outputs.len() > crate::layout::MAX_RANK {
            return Err(Error::Unsupported(format!(
                "an index map with {} outputs; relayout handles at most {}",
                outputs.len(),
                crate::layout::MAX_RANK
            )));
        }
        if params.len() != shape.len() {
            return Err(Error::InvalidLayout(format!(
                "the index map has {} parameters but the shape {shape:?} has {} dimensions",
                params.len(),
                shape.len()
            )));
        }
        if let Some(d) = shape.iter().position(|&n| n == 0) {
            return Err(Error::InvalidLayout(format!(
                "dimension {d} of {shape:?} has extent 0; every extent must be at least 1"
            )));
        }
        check_names(&params)?;
        for output in &outputs {
            check_expr(output, shape.len())?;
        }
        Ok(TvmMap {
            shape,
            params,
            outputs,
        })
    }

    /// Parses `[shape] lambda …` text (see the module documentation for the accepted forms).
    ///
    /// ```
    /// use relayout::notation::tvm::TvmMap;
    /// let map = TvmMap::parse("[2, 3, 8] lambda *rest, k: [*rest, k // 4, k % 4]")?;
    /// assert_eq!(map.params(), ["rest_0", "rest_1", "k"]);
    /// assert_eq!(map.final_shape()?, [2, 3, 2, 4]);
    /// # Ok::<(), relayout::Error>(())
    /// ```
    pub fn parse(text: &str) -> Result<TvmMap> {
        parser::parse_map(text, 0)
    }

    /// The logical shape the map is applied to.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The parameter names, one per logical dimension (`*args` already expanded).
    pub fn params(&self) -> &[String] {
        &self.params
    }

    /// The output expressions, one per dimension of the final shape.
    pub fn outputs(&self) -> &[TvmExpr] {
        &self.outputs
    }

    /// The shape of the transformed buffer, as TVM's `IndexMap.map_shape` infers it.
    ///
    /// Fails with [`Error::InvalidLayout`] when an output's range does not start at 0 (TVM
    /// checks that too) and [`Error::Unsupported`] when no range can be inferred.
    pub fn final_shape(&self) -> Result<Vec<usize>> {
        iter_map::output_ranges(&self.shape, &self.outputs)
            .into_iter()
            .enumerate()
            .map(|(k, range)| self.extent_of_output(k, range))
            .collect()
    }

    /// Lowers the map to the canonical layout: offsets are the row-major linearisation of the
    /// outputs over [`TvmMap::final_shape`], and the buffer holds the whole final shape.
    ///
    /// Fails with [`Error::Unsupported`] for maps that are not sums of mixed-radix digits of
    /// the indices (products of indices, divisions by indices, `(i % 6) // 4`, …) and with
    /// [`Error::InvalidLayout`] for maps that are not injective or leave the final shape.
    pub fn to_layout(&self) -> Result<Layout> {
        let lowering = affine::Lowering::new(&self.shape, &self.params);
        let outputs = self
            .outputs
            .iter()
            .map(|e| lowering.lower(e))
            .collect::<Result<Vec<_>>>()?;
        let final_shape = self.final_shape()?;
        for (k, (output, &extent)) in outputs.iter().zip(&final_shape).enumerate() {
            self.check_output_within(k, &lowering, output, extent)?;
        }
        let strides = row_major_strides(&final_shape)?;
        let total = lowering.linear_combination(outputs.into_iter().zip(strides))?;
        let (digits, base) = lowering.digits(&total)?;
        let padded = final_shape
            .iter()
            .try_fold(1usize, |acc, &n| acc.checked_mul(n))
            .ok_or_else(|| {
                Error::Overflow(format!(
                    "the final shape {final_shape:?} has too many elements"
                ))
            })?;
        let layout = Layout::from_parts(&self.shape, digits, base, Some(padded))?;
        if !layout.is_injective() {
            return Err(Error::InvalidLayout(format!(
                "TVM map is not injective: two logical coordinates of {:?} share an offset in \
                 {self} (or the map is too large to check element by element)",
                self.shape
            )));
        }
        Ok(layout)
    }

    fn shown<'a>(&'a self, expr: &'a TvmExpr) -> Shown<'a> {
        Shown {
            expr,
            names: &self.params,
        }
    }

    fn extent_of_output(&self, k: usize, range: Option<(i128, i128)>) -> Result<usize> {
        let shown = self.shown(&self.outputs[k]);
        let (min, extent) = range.ok_or_else(|| {
            Error::Unsupported(format!(
                "TVM cannot infer the range of output {k} ({shown})"
            ))
        })?;
        if min != 0 {
            return Err(Error::InvalidLayout(format!(
                "output {k} ({shown}) ranges from {min}; TVM's map_shape requires every output \
                 range to start at 0"
            )));
        }
        if extent < 1 {
            return Err(Error::InvalidLayout(format!(
                "output {k} ({shown}) has no valid extent (TVM infers {extent})"
            )));
        }
        usize::try_from(extent).map_err(|_| {
            Error::Overflow(format!(
                "output {k} ({shown}) has an extent of {extent}, which does not fit in memory"
            ))
        })
    }

    /// Every value of output `k` must be an index of the final shape's dimension `k`.
    fn check_output_within(
        &self,
        k: usize,
        lowering: &affine::Lowering,
        output: &affine::Affine,
        extent: usize,
    ) -> Result<()> {
        let (digits, base) = lowering.digits(output)?;
        let values = Layout::from_parts(&self.shape, digits, base, None)?;
        let (min, max) = (values.min_offset(), values.max_offset());
        if min < 0 || max as u128 >= extent as u128 {
            return Err(Error::InvalidLayout(format!(
                "output {k} ({}) takes values from {min} to {max}, outside the extent {extent} \
                 that TVM infers for it",
                self.shown(&self.outputs[k])
            )));
        }
        Ok(())
    }
}

impl FromStr for TvmMap {
    type Err = Error;

    fn from_str(text: &str) -> Result<TvmMap> {
        TvmMap::parse(text)
    }
}

impl fmt::Display for TvmMap {
    /// `[shape] lambda a, b: [outputs]` with `//`, `%` and minimal parentheses.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dims: Vec<String> = self.shape.iter().map(|n| n.to_string()).collect();
        write!(f, "[{}] lambda", dims.join(", "))?;
        if !self.params.is_empty() {
            write!(f, " {}", self.params.join(", "))?;
        }
        let outputs: Vec<String> = self
            .outputs
            .iter()
            .map(|e| self.shown(e).to_string())
            .collect();
        write!(f, ": [{}]", outputs.join(", "))
    }
}

/// An expression printed with the map's parameter names.
struct Shown<'a> {
    expr: &'a TvmExpr,
    names: &'a [String],
}

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_expr(f, self.expr, self.names, 0, false)
    }
}

const UNARY_PRECEDENCE: u8 = 3;
const ATOM_PRECEDENCE: u8 = 4;

fn precedence(expr: &TvmExpr) -> u8 {
    match expr {
        TvmExpr::Int(v) if *v < 0 => UNARY_PRECEDENCE,
        TvmExpr::Int(_) | TvmExpr::Index(_) => ATOM_PRECEDENCE,
        TvmExpr::Neg(_) => UNARY_PRECEDENCE,
        TvmExpr::Binary(op, ..) => op.precedence(),
    }
}

/// Writes `expr` inside an operator of precedence `parent`; `right` marks a right operand, which
/// keeps its parentheses at equal precedence (`a - (b - c)`).
fn write_expr(
    f: &mut fmt::Formatter<'_>,
    expr: &TvmExpr,
    names: &[String],
    parent: u8,
    right: bool,
) -> fmt::Result {
    let own = precedence(expr);
    let parens = own < parent || (right && own == parent && matches!(expr, TvmExpr::Binary(..)));
    if parens {
        f.write_str("(")?;
    }
    match expr {
        TvmExpr::Int(v) => write!(f, "{v}")?,
        TvmExpr::Index(d) => match names.get(*d) {
            Some(name) => f.write_str(name)?,
            None => write!(f, "i{d}")?,
        },
        TvmExpr::Neg(a) => {
            f.write_str("-")?;
            write_expr(f, a, names, UNARY_PRECEDENCE, false)?;
        }
        TvmExpr::Binary(op, a, b) => {
            write_expr(f, a, names, op.precedence(), false)?;
            write!(f, " {} ", op.symbol())?;
            write_expr(f, b, names, op.precedence(), true)?;
        }
    }
    if parens {
        f.write_str(")")?;
    }
    Ok(())
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn check_names(params: &[String]) -> Result<()> {
    let mut seen = HashSet::new();
    for name in params {
        if !is_identifier(name) {
            return Err(Error::InvalidLayout(format!(
                "'{name}' is not a Python identifier"
            )));
        }
        if !seen.insert(name) {
            return Err(Error::InvalidLayout(format!(
                "duplicate parameter '{name}'"
            )));
        }
    }
    Ok(())
}

/// Checks index ranges and depth without recursion (the tree may come from a caller).
fn check_expr(expr: &TvmExpr, rank: usize) -> Result<()> {
    let mut stack = vec![(expr, 0usize)];
    while let Some((e, depth)) = stack.pop() {
        if depth > MAX_EXPR_DEPTH {
            return Err(Error::Unsupported(format!(
                "index expressions nested deeper than {MAX_EXPR_DEPTH} operations"
            )));
        }
        if let TvmExpr::Index(d) = e {
            if *d >= rank {
                return Err(Error::InvalidLayout(format!(
                    "an output reads dimension {d}, but the shape has rank {rank}"
                )));
            }
        }
        stack.extend(e.children().into_iter().map(|c| (c, depth + 1)));
    }
    Ok(())
}

fn row_major_strides(shape: &[usize]) -> Result<Vec<i64>> {
    let mut strides = vec![0i64; shape.len()];
    let mut volume: i64 = 1;
    for (stride, &n) in strides.iter_mut().zip(shape).rev() {
        *stride = volume;
        volume = i64::try_from(n)
            .ok()
            .and_then(|n| volume.checked_mul(n))
            .ok_or_else(|| {
                Error::Overflow(format!("the final shape {shape:?} has too many elements"))
            })?;
    }
    Ok(strides)
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The text parser: shape, optional `T.index_map(` wrapper, lambda head, body.
mod parser {
    use super::*;

    /// What a name in the lambda body stands for.
    enum Binding {
        Dim(usize),
        Star(Vec<usize>),
    }

    type Scope = HashMap<String, Binding>;

    /// Calls whose last dotted component wraps the lambda: `T.index_map(…)`, `IndexMap.from_func(…)`.
    const WRAPPERS: [&str; 3] = ["index_map", "from_func", "from_func_with_separators"];

    const TRUE_DIVISION: &str = "'/' is true division, which TVM rejects for integer indices \
        (\"division is ambiguous\"); use '//' (floordiv) or '%' (floormod)";

    pub(super) fn parse_map(text: &str, column_offset: usize) -> Result<TvmMap> {
        let mut cur = Cursor::new(NOTATION, text, column_offset);
        let shape = parse_shape(&mut cur)?;
        let (wrapped, lambda_at) = parse_opening(&mut cur)?;
        let (params, scope) = parse_params(&mut cur, &shape, lambda_at)?;
        let outputs = Body {
            cur: &mut cur,
            scope: &scope,
        }
        .parse_outputs()?;
        if wrapped {
            cur.expect(')')?;
        }
        cur.expect_end()?;
        TvmMap::new(shape, params, outputs)
    }

    fn parse_shape(cur: &mut Cursor) -> Result<Vec<usize>> {
        let close = if cur.eat('[') {
            ']'
        } else if cur.eat('(') {
            ')'
        } else {
            return Err(cur.unexpected("the logical shape, e.g. '[16, 64]'"));
        };
        let mut shape = Vec::new();
        while !cur.eat(close) {
            shape.push(cur.uint()?);
            if cur.eat(close) {
                break;
            }
            if !cur.eat(',') {
                return Err(cur.unexpected(&format!("',' or '{close}'")));
            }
        }
        Ok(shape)
    }

    /// Reads `name(.name)*`, or nothing if no identifier is next.
    fn dotted_name(cur: &mut Cursor) -> Result<Option<String>> {
        let Some(mut name) = cur.ident() else {
            return Ok(None);
        };
        while cur.eat('.') {
            let part = cur
                .ident()
                .ok_or_else(|| cur.unexpected("a name after '.'"))?;
            name = format!("{name}.{part}");
        }
        Ok(Some(name))
    }

    fn last_part(name: &str) -> &str {
        name.rsplit('.').next().unwrap_or(name)
    }

    /// Consumes `lambda` or `wrapper(lambda`; returns whether a wrapper is open and where the
    /// `lambda` keyword starts.
    fn parse_opening(cur: &mut Cursor) -> Result<(bool, usize)> {
        cur.skip_ws();
        let at = cur.pos();
        let word = dotted_name(cur)?
            .ok_or_else(|| cur.unexpected("'lambda' or 'T.index_map(lambda ...)'"))?;
        if word == "lambda" {
            return Ok((false, at));
        }
        if !WRAPPERS.contains(&last_part(&word)) {
            return Err(cur.error_at(
                at,
                &format!("expected 'lambda' or 'T.index_map(lambda ...)', found '{word}'"),
            ));
        }
        cur.expect('(')?;
        cur.skip_ws();
        let at = cur.pos();
        match cur.ident().as_deref() {
            Some("lambda") => Ok((true, at)),
            Some(other) => Err(cur.error_at(at, &format!("expected 'lambda', found '{other}'"))),
            None => Err(cur.unexpected("'lambda'")),
        }
    }

    /// The parameter list as written: positional names, the `*` parameter (named or bare) and
    /// keyword-only names.
    #[derive(Default)]
    struct Params {
        positional: Vec<String>,
        star: Option<Option<String>>,
        keyword: Vec<String>,
    }

    fn parse_params(
        cur: &mut Cursor,
        shape: &[usize],
        lambda_at: usize,
    ) -> Result<(Vec<String>, Scope)> {
        let params = read_params(cur)?;
        if params.star == Some(None) && params.keyword.is_empty() {
            return Err(cur.error_at(
                lambda_at,
                "a bare '*' must be followed by keyword-only parameters",
            ));
        }
        let fixed = params.positional.len() + params.keyword.len();
        let rank = shape.len();
        let star_count = match &params.star {
            Some(Some(_)) => rank.checked_sub(fixed),
            _ => (fixed == rank).then_some(0),
        }
        .ok_or_else(|| {
            let at_least = if matches!(params.star, Some(Some(_))) {
                "at least "
            } else {
                ""
            };
            cur.error_at(
                lambda_at,
                &format!(
                    "the lambda takes {at_least}{fixed} indices but the shape {shape:?} has \
                     {rank} dimensions"
                ),
            )
        })?;
        Ok(bind(params, star_count))
    }

    fn read_params(cur: &mut Cursor) -> Result<Params> {
        let mut params = Params::default();
        let mut seen = HashSet::new();
        if cur.eat(':') {
            return Ok(params);
        }
        loop {
            cur.skip_ws();
            let at = cur.pos();
            let starred = cur.eat('*');
            let name = cur.ident();
            if let Some(n) = &name {
                if !seen.insert(n.clone()) {
                    return Err(cur.error_at(at, &format!("duplicate parameter '{n}'")));
                }
            }
            if starred {
                if params.star.is_some() {
                    return Err(cur.error_at(at, "only one '*' parameter is allowed"));
                }
                params.star = Some(name);
            } else {
                let name = name.ok_or_else(|| cur.unexpected("a parameter name"))?;
                match params.star {
                    Some(_) => params.keyword.push(name),
                    None => params.positional.push(name),
                }
            }
            if cur.eat(':') {
                return Ok(params);
            }
            if !cur.eat(',') {
                return Err(cur.unexpected("',' or ':'"));
            }
            if cur.eat(':') {
                return Ok(params);
            }
        }
    }

    /// Names every dimension and builds the body's scope: positional parameters take the first
    /// dimensions, `*name` the next `star_count` (named `name_0`, `name_1`, …), keyword-only
    /// parameters the last.
    fn bind(params: Params, star_count: usize) -> (Vec<String>, Scope) {
        let mut names = params.positional;
        let mut scope: Scope = names
            .iter()
            .enumerate()
            .map(|(d, n)| (n.clone(), Binding::Dim(d)))
            .collect();
        let mut taken: HashSet<String> = names.iter().chain(&params.keyword).cloned().collect();
        if let Some(Some(star)) = params.star {
            let first = names.len();
            for i in 0..star_count {
                let mut name = format!("{star}_{i}");
                while taken.contains(&name) {
                    name.push('_');
                }
                taken.insert(name.clone());
                names.push(name);
            }
            scope.insert(star, Binding::Star((first..first + star_count).collect()));
        }
        for name in params.keyword {
            scope.insert(name.clone(), Binding::Dim(names.len()));
            names.push(name);
        }
        (names, scope)
    }

    /// An expression with the number of operations nested in it.
    struct Node {
        expr: TvmExpr,
        depth: usize,
    }

    fn leaf(expr: TvmExpr) -> Operand {
        Operand::Expr(Node { expr, depth: 0 })
    }

    /// A parsed operand: an expression, or a parenthesised tuple (valid only as the body).
    enum Operand {
        Expr(Node),
        Tuple(Vec<TvmExpr>),
    }

    impl Operand {
        fn into_node(self, cur: &Cursor, at: usize) -> Result<Node> {
            match self {
                Operand::Expr(node) => Ok(node),
                Operand::Tuple(_) => {
                    Err(cur.error_at(at, "a tuple cannot be used inside an index expression"))
                }
            }
        }
    }

    struct Body<'c> {
        cur: &'c mut Cursor,
        scope: &'c Scope,
    }

    impl Body<'_> {
        fn parse_outputs(&mut self) -> Result<Vec<TvmExpr>> {
            if self.cur.eat('[') {
                let (items, _) = self.parse_items(']')?;
                return Ok(items.into_iter().map(|n| n.expr).collect());
            }
            Ok(match self.parse_sum()? {
                Operand::Tuple(items) => items,
                Operand::Expr(node) => vec![node.expr],
            })
        }

        /// Comma-separated items up to `close` (already past the opening bracket); the flag
        /// tells a tuple (a comma, `*args`, or nothing) from a parenthesised expression.
        fn parse_items(&mut self, close: char) -> Result<(Vec<Node>, bool)> {
            let mut items = Vec::new();
            let mut tuple = false;
            loop {
                if self.cur.eat(close) {
                    tuple |= items.is_empty();
                    break;
                }
                if self.cur.eat('*') {
                    items.extend(self.parse_starred()?);
                    tuple = true;
                } else {
                    self.cur.skip_ws();
                    let at = self.cur.pos();
                    items.push(self.parse_sum()?.into_node(self.cur, at)?);
                }
                if self.cur.eat(close) {
                    break;
                }
                if !self.cur.eat(',') {
                    return Err(self.cur.unexpected(&format!("',' or '{close}'")));
                }
                tuple = true;
            }
            Ok((items, tuple))
        }

        fn parse_starred(&mut self) -> Result<Vec<Node>> {
            self.cur.skip_ws();
            let at = self.cur.pos();
            let name = self
                .cur
                .ident()
                .ok_or_else(|| self.cur.unexpected("the name of the lambda's *args"))?;
            match self.scope.get(&name) {
                Some(Binding::Star(dims)) => Ok(dims
                    .iter()
                    .map(|&d| Node {
                        expr: TvmExpr::Index(d),
                        depth: 0,
                    })
                    .collect()),
                _ => Err(self.cur.error_at(
                    at,
                    &format!(
                        "'{name}' is not the lambda's *args parameter, so it cannot be unpacked"
                    ),
                )),
            }
        }

        fn parse_sum(&mut self) -> Result<Operand> {
            let mut left = self.parse_product()?;
            loop {
                self.cur.skip_ws();
                let at = self.cur.pos();
                let op = if self.cur.eat('+') {
                    TvmOp::Add
                } else if self.cur.eat('-') {
                    TvmOp::Sub
                } else {
                    return Ok(left);
                };
                let right = self.parse_product()?;
                left = Operand::Expr(self.binary(op, left, right, at)?);
            }
        }

        fn parse_product(&mut self) -> Result<Operand> {
            let mut left = self.parse_unary()?;
            loop {
                self.cur.skip_ws();
                let at = self.cur.pos();
                let Some(op) = self.product_operator(at)? else {
                    return Ok(left);
                };
                let right = self.parse_unary()?;
                left = Operand::Expr(self.binary(op, left, right, at)?);
            }
        }

        fn product_operator(&mut self, at: usize) -> Result<Option<TvmOp>> {
            if self.cur.eat_str("//") {
                return Ok(Some(TvmOp::FloorDiv));
            }
            if self.cur.eat_str("**") {
                return Err(self
                    .cur
                    .error_at(at, "'**' (power) is not an affine index operation"));
            }
            if self.cur.peek() == Some('/') {
                return Err(self.cur.error_at(at, TRUE_DIVISION));
            }
            Ok(if self.cur.eat('*') {
                Some(TvmOp::Mul)
            } else if self.cur.eat('%') {
                Some(TvmOp::FloorMod)
            } else {
                None
            })
        }

        fn binary(&mut self, op: TvmOp, left: Operand, right: Operand, at: usize) -> Result<Node> {
            let left = left.into_node(self.cur, at)?;
            let right = right.into_node(self.cur, at)?;
            let depth = self.deeper(left.depth.max(right.depth), at)?;
            Ok(Node {
                expr: TvmExpr::Binary(op, Box::new(left.expr), Box::new(right.expr)),
                depth,
            })
        }

        fn deeper(&self, depth: usize, at: usize) -> Result<usize> {
            if depth >= MAX_EXPR_DEPTH {
                return Err(self.cur.error_at(
                    at,
                    &format!("index expression nested deeper than {MAX_EXPR_DEPTH} operations"),
                ));
            }
            Ok(depth + 1)
        }

        fn parse_unary(&mut self) -> Result<Operand> {
            self.cur.enter()?;
            let operand = self.parse_signed();
            self.cur.leave();
            operand
        }

        fn parse_signed(&mut self) -> Result<Operand> {
            self.cur.skip_ws();
            let at = self.cur.pos();
            if self.cur.eat('+') {
                return self.parse_unary();
            }
            if !self.cur.eat('-') {
                return self.parse_atom();
            }
            let Node { expr, depth } = self.parse_unary()?.into_node(self.cur, at)?;
            let node =
                match expr {
                    TvmExpr::Int(v) => Node {
                        expr: TvmExpr::Int(v.checked_neg().ok_or_else(|| {
                            self.cur.error_at(at, "number does not fit in 64 bits")
                        })?),
                        depth,
                    },
                    expr => Node {
                        expr: TvmExpr::Neg(Box::new(expr)),
                        depth: self.deeper(depth, at)?,
                    },
                };
            Ok(Operand::Expr(node))
        }

        fn parse_atom(&mut self) -> Result<Operand> {
            self.cur.skip_ws();
            let at = self.cur.pos();
            match self.cur.peek() {
                Some(c) if c.is_ascii_digit() => Ok(leaf(TvmExpr::Int(self.cur.int()?))),
                Some('(') => {
                    self.cur.bump();
                    self.parse_group()
                }
                Some(quote @ ('"' | '\'')) => Err(self.string_literal(quote, at)),
                Some(c) if c.is_ascii_alphabetic() || c == '_' => self.parse_name(at),
                _ => Err(self.cur.unexpected("an index expression")),
            }
        }

        fn parse_group(&mut self) -> Result<Operand> {
            let (mut items, tuple) = self.parse_items(')')?;
            match items.pop() {
                Some(node) if !tuple => Ok(Operand::Expr(node)),
                last => {
                    items.extend(last);
                    Ok(Operand::Tuple(items.into_iter().map(|n| n.expr).collect()))
                }
            }
        }

        /// A string is only meaningful as TVM's `"axis_separator"` marker.
        fn string_literal(&mut self, quote: char, at: usize) -> Error {
            self.cur.bump();
            let mut text = String::new();
            loop {
                match self.cur.bump() {
                    Some(c) if c == quote => break,
                    Some(c) => text.push(c),
                    None => return self.cur.unexpected(&format!("the closing {quote}")),
                }
            }
            if text.eq_ignore_ascii_case("axis_separator") {
                return axis_separator_error();
            }
            self.cur
                .error_at(at, "a string literal is not an index expression")
        }

        fn parse_name(&mut self, at: usize) -> Result<Operand> {
            let name = dotted_name(self.cur)?.unwrap_or_default();
            match self.scope.get(&name) {
                Some(Binding::Dim(d)) => return Ok(leaf(TvmExpr::Index(*d))),
                Some(Binding::Star(dims)) => return self.parse_subscript(&name, dims, at),
                None => {}
            }
            match last_part(&name) {
                "floordiv" => return self.parse_call(TvmOp::FloorDiv, &name, at),
                "floormod" => return self.parse_call(TvmOp::FloorMod, &name, at),
                part if part.eq_ignore_ascii_case("axis_separator") => {
                    return Err(axis_separator_error())
                }
                _ => {}
            }
            let mut known: Vec<&String> = self.scope.keys().collect();
            known.sort();
            let known: Vec<&str> = known.into_iter().map(String::as_str).collect();
            Err(self.cur.error_at(
                at,
                &format!(
                    "unknown name '{name}'; the lambda's parameters are: {}",
                    known.join(", ")
                ),
            ))
        }

        /// `args[k]` for the `*args` parameter (negative `k` counts from the end).
        fn parse_subscript(&mut self, name: &str, dims: &[usize], at: usize) -> Result<Operand> {
            if !self.cur.eat('[') {
                return Err(self.cur.error_at(
                    at,
                    &format!(
                        "'{name}' is the tuple of *{name} indices: unpack it with *{name} in the \
                         output list or pick one with {name}[k]"
                    ),
                ));
            }
            self.cur.skip_ws();
            let k_at = self.cur.pos();
            let k = self.cur.int()?;
            let len = dims.len() as i64;
            let index = if k < 0 { k.saturating_add(len) } else { k };
            let dim = usize::try_from(index)
                .ok()
                .and_then(|i| dims.get(i))
                .ok_or_else(|| {
                    self.cur.error_at(
                        k_at,
                        &format!("index {k} is out of range for the {len} indices of *{name}"),
                    )
                })?;
            self.cur.expect(']')?;
            Ok(leaf(TvmExpr::Index(*dim)))
        }

        /// `floordiv(a, b)` / `floormod(a, b)` with any module prefix.
        fn parse_call(&mut self, op: TvmOp, name: &str, at: usize) -> Result<Operand> {
            self.cur.expect('(')?;
            let (mut args, _) = self.parse_items(')')?;
            match (args.pop(), args.pop(), args.is_empty()) {
                (Some(b), Some(a), true) => Ok(Operand::Expr(self.binary(
                    op,
                    Operand::Expr(a),
                    Operand::Expr(b),
                    at,
                )?)),
                _ => Err(self
                    .cur
                    .error_at(at, &format!("{name} takes exactly two arguments"))),
            }
        }
    }

    fn axis_separator_error() -> Error {
        Error::Unsupported(
            "axis separators (IndexMap.AXIS_SEPARATOR) describe a multi-dimensional physical \
             buffer; relayout supports flat (one-dimensional) buffers only"
                .into(),
        )
    }
}

/// Lowering of index expressions to sums of mixed-radix digits.
///
/// Every expression becomes `Σ scale · (((Σ w·x + shift) floordiv div) mod ext) + constant`,
/// kept in a canonical form so that `c·(v // c) + v % c` folds back into `v`.
mod affine {
    use super::*;

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
            let (Some(div), Some(scale)) =
                (lower.key.div.checked_mul(e), lower.scale.checked_mul(e))
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
}

/// TVM's range inference for `map_shape`: a port of the parts of `DetectIterMap` (no-check
/// level, constant extents) that decide the extents, with `EvalSet` interval bounds as the
/// fallback, as in `IndexMapNode::MapRanges`.
mod iter_map {
    use super::*;

    type MarkId = usize;

    /// `((mark // lower) % extent) * scale`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    struct Split {
        mark: MarkId,
        lower: i128,
        extent: i128,
        scale: i128,
    }

    /// What an iterator mark counts: an input index, a fused sum (with a base: TVM's left
    /// padding), or a split wrapped as a new iterator.
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    enum MarkSource {
        Index(usize),
        Sum(Vec<Split>, i128),
        Nested(Split),
    }

    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    struct Mark {
        source: MarkSource,
        extent: i128,
    }

    /// `Σ args + base`.
    #[derive(Debug, Clone)]
    struct Sum {
        args: Vec<Split>,
        base: i128,
    }

    impl Sum {
        fn constant(base: i128) -> Sum {
            Sum {
                args: Vec::new(),
                base,
            }
        }

        fn of(split: Split, base: i128) -> Sum {
            Sum {
                args: vec![split],
                base,
            }
        }

        fn as_constant(&self) -> Option<i128> {
            self.args.is_empty().then_some(self.base)
        }

        /// TVM's output range: `[base, base + max(extent · scale))`.
        fn range(&self) -> Option<(i128, i128)> {
            let mut extent: Option<i128> = None;
            for arg in &self.args {
                let e = arg.extent.checked_mul(arg.scale)?;
                extent = Some(extent.map_or(e, |x| x.max(e)));
            }
            Some((self.base, extent.unwrap_or(1)))
        }
    }

    /// Padding collected for a mark in the first pass and applied in the second.
    #[derive(Debug, Clone)]
    struct Padding {
        factor: i128,
        left: i128,
        padded: Option<MarkId>,
    }

    /// The `(min, extent)` of every output, or `None` where TVM cannot bound one.
    pub(super) fn output_ranges(shape: &[usize], outputs: &[TvmExpr]) -> Vec<Option<(i128, i128)>> {
        if let Some(ranges) = detect(shape, outputs) {
            return ranges.into_iter().map(Some).collect();
        }
        outputs
            .iter()
            .map(|e| interval(e, shape).map(|(lo, hi)| (lo, hi - lo + 1)))
            .collect()
    }

    fn detect(shape: &[usize], outputs: &[TvmExpr]) -> Option<Vec<(i128, i128)>> {
        let mut rewriter = Rewriter::new(shape);
        rewriter.update_padding = true;
        let mut sums = rewriter.rewrite_outputs(outputs)?;
        if rewriter.requires_padding {
            rewriter.update_padding = false;
            sums = rewriter.rewrite_outputs(outputs)?;
        }
        if !rewriter.check_mapping(&sums) {
            return None;
        }
        sums.iter().map(Sum::range).collect()
    }

    fn floor_div(a: i128, b: i128) -> Option<i128> {
        let q = a.checked_div(b)?;
        if a.checked_rem(b)? != 0 && ((a < 0) != (b < 0)) {
            q.checked_sub(1)
        } else {
            Some(q)
        }
    }

    fn floor_mod(a: i128, b: i128) -> Option<i128> {
        a.checked_sub(floor_div(a, b)?.checked_mul(b)?)
    }

    fn ceil_div(a: i128, b: i128) -> Option<i128> {
        floor_div(a.checked_add(b)?.checked_sub(1)?, b)
    }

    /// TVM's `CanProveDivisible(n, d)` on constants.
    fn divides(d: i128, n: i128) -> bool {
        d != 0 && n.checked_rem(d) == Some(0)
    }

    fn lcm(a: i128, b: i128) -> Option<i128> {
        let g = gcd(a.unsigned_abs(), b.unsigned_abs()) as i128;
        if g == 0 {
            return None;
        }
        (a / g).checked_mul(b).map(i128::abs)
    }

    struct Rewriter {
        marks: Vec<Mark>,
        ids: HashMap<Mark, MarkId>,
        index_marks: Vec<MarkId>,
        padding: HashMap<MarkId, Padding>,
        padded: HashSet<MarkId>,
        fused: HashMap<Vec<Split>, MarkId>,
        update_padding: bool,
        requires_padding: bool,
    }

    impl Rewriter {
        fn new(shape: &[usize]) -> Rewriter {
            let mut rewriter = Rewriter {
                marks: Vec::new(),
                ids: HashMap::new(),
                index_marks: Vec::new(),
                padding: HashMap::new(),
                padded: HashSet::new(),
                fused: HashMap::new(),
                update_padding: false,
                requires_padding: false,
            };
            for (d, &n) in shape.iter().enumerate() {
                let mark = rewriter.intern(Mark {
                    source: MarkSource::Index(d),
                    extent: n as i128,
                });
                rewriter.index_marks.push(mark);
            }
            rewriter
        }

        fn intern(&mut self, mark: Mark) -> MarkId {
            if let Some(&id) = self.ids.get(&mark) {
                return id;
            }
            self.marks.push(mark.clone());
            self.ids.insert(mark, self.marks.len() - 1);
            self.marks.len() - 1
        }

        fn full_split(&self, mark: MarkId, scale: i128) -> Split {
            Split {
                mark,
                lower: 1,
                extent: self.marks[mark].extent,
                scale,
            }
        }

        fn rewrite_outputs(&mut self, outputs: &[TvmExpr]) -> Option<Vec<Sum>> {
            outputs.iter().map(|e| self.rewrite_output(e)).collect()
        }

        /// An output, normalised to one iterator plus a base.
        fn rewrite_output(&mut self, expr: &TvmExpr) -> Option<Sum> {
            let sum = self.rewrite(expr)?;
            if sum.args.is_empty() {
                return Some(sum);
            }
            self.fuse(sum, true)
        }

        fn rewrite(&mut self, expr: &TvmExpr) -> Option<Sum> {
            match expr {
                TvmExpr::Int(v) => Some(Sum::constant(*v as i128)),
                TvmExpr::Index(d) => Some(Sum::of(self.full_split(self.index_marks[*d], 1), 0)),
                TvmExpr::Neg(a) => scaled(self.rewrite(a)?, -1),
                TvmExpr::Binary(op, a, b) => {
                    let (x, y) = (self.rewrite(a)?, self.rewrite(b)?);
                    match op {
                        TvmOp::Add => added(x, y, 1),
                        TvmOp::Sub => added(x, y, -1),
                        TvmOp::Mul => match (x.as_constant(), y.as_constant()) {
                            (_, Some(k)) => scaled(x, k),
                            (Some(k), None) => scaled(y, k),
                            (None, None) => None,
                        },
                        TvmOp::FloorDiv => {
                            let c = y.as_constant()?;
                            match x.as_constant() {
                                Some(v) => Some(Sum::constant(floor_div(v, c)?)),
                                None => self.floordiv(x, c),
                            }
                        }
                        TvmOp::FloorMod => {
                            let c = y.as_constant()?;
                            match x.as_constant() {
                                Some(v) => Some(Sum::constant(floor_mod(v, c)?)),
                                None => self.floormod(x, c),
                            }
                        }
                    }
                }
            }
        }

        /// A dividend with several iterators must fuse into one.
        fn dividend(&mut self, x: Sum) -> Option<(Split, i128)> {
            let x = if x.args.len() == 1 {
                x
            } else {
                self.fuse(x, true)?
            };
            match x.args.as_slice() {
                [split] => Some((*split, x.base)),
                _ => None,
            }
        }

        fn floordiv(&mut self, x: Sum, c: i128) -> Option<Sum> {
            let (split, base) = self.dividend(x)?;
            self.split_floordiv(split, base, c)
        }

        fn floormod(&mut self, x: Sum, c: i128) -> Option<Sum> {
            let (split, base) = self.dividend(x)?;
            self.split_floormod(split, base, c)
        }

        /// `(split + base) // c`.
        fn split_floordiv(&mut self, mut split: Split, mut base: i128, mut c: i128) -> Option<Sum> {
            if c == 1 {
                return Some(Sum::of(split, base));
            }
            let s = split.scale;
            if s != 1 {
                if divides(c, s) && divides(c, base) {
                    split.scale = s / c;
                    return Some(Sum::of(split, base / c));
                } else if divides(s, c) && divides(s, base) {
                    base /= s;
                    c /= s;
                    split.scale = 1;
                } else {
                    return None;
                }
            }
            if c <= 0 {
                return None;
            }
            let (padded, left_pad) = self.pad(split, base, c)?;
            let extent = padded.extent;
            let split = if divides(c, extent) {
                Split {
                    lower: padded.lower.checked_mul(c)?,
                    extent: extent / c,
                    ..padded
                }
            } else if padded.lower == 1 && extent == self.marks[padded.mark].extent {
                Split {
                    lower: c,
                    extent: ceil_div(extent, c)?,
                    ..padded
                }
            } else {
                let mark = self.intern(Mark {
                    source: MarkSource::Nested(padded),
                    extent,
                });
                Split {
                    mark,
                    lower: c,
                    extent: ceil_div(extent, c)?,
                    scale: 1,
                }
            };
            Some(Sum::of(split, floor_div(base.checked_sub(left_pad)?, c)?))
        }

        /// `(split + base) % c`.
        fn split_floormod(&mut self, split: Split, mut base: i128, mut c: i128) -> Option<Sum> {
            if c == 1 {
                return Some(Sum::constant(0));
            }
            let s = split.scale;
            if s != 1 {
                if divides(c, s) && divides(c, base) {
                    return Some(Sum::constant(0));
                } else if divides(s, c) && divides(s, base) {
                    c /= s;
                    base /= s;
                } else {
                    return None;
                }
            }
            if c <= 0 {
                return None;
            }
            let (padded, _) = self.pad(split, base, c)?;
            Some(Sum::of(
                Split {
                    extent: c,
                    ..padded
                },
                0,
            ))
        }

        /// TVM's `PadDividendToDivisor`: the first pass records the padding every mark needs
        /// (the LCM of its divisors, the largest left padding); the second pass moves splits
        /// onto the padded mark. Returns the split and its left padding.
        fn pad(&mut self, split: Split, base: i128, divisor: i128) -> Option<(Split, i128)> {
            let left_pad = floor_mod(base, divisor)?;
            let right_edge = left_pad.checked_add(split.extent)?;
            let right_pad = floor_mod(-right_edge, divisor)?;
            if self.update_padding {
                let info = self.padding.entry(split.mark).or_insert(Padding {
                    factor: 1,
                    left: 0,
                    padded: None,
                });
                info.factor = lcm(info.factor, divisor.checked_mul(split.lower)?)?;
                if left_pad == 0 && right_pad == 0 {
                    return Some((split, 0));
                }
                self.requires_padding = true;
                info.left = info.left.max(left_pad.checked_mul(split.lower)?);
                let extent = right_edge.checked_add(right_pad)?;
                return Some((Split { extent, ..split }, left_pad));
            }
            let Some(info) = self.padding.get(&split.mark).cloned() else {
                return Some((split, left_pad));
            };
            if info.left == 0 && divides(info.factor, self.marks[split.mark].extent) {
                return Some((split, left_pad));
            }
            if !divides(split.lower, info.factor) || !divides(divisor, info.factor) {
                return None;
            }
            let (padded, left_pad) = match info.padded {
                Some(padded) => (padded, left_pad),
                None if divides(split.lower, info.left) => {
                    (self.pad_mark(split.mark, &info)?, info.left / split.lower)
                }
                None => return None,
            };
            let extent = floor_div(self.marks[padded].extent, split.lower)?;
            Some((
                Split {
                    mark: padded,
                    extent,
                    ..split
                },
                left_pad,
            ))
        }

        /// The padded form of `mark`: `mark + left` over a multiple of the padding factor.
        fn pad_mark(&mut self, mark: MarkId, info: &Padding) -> Option<MarkId> {
            let right_edge = self.marks[mark].extent.checked_add(info.left)?;
            let extent = right_edge.checked_add(floor_mod(-right_edge, info.factor)?)?;
            let source = MarkSource::Sum(vec![self.full_split(mark, 1)], info.left);
            let padded = self.intern(Mark { source, extent });
            self.padded.insert(padded);
            if let Some(entry) = self.padding.get_mut(&mark) {
                entry.padded = Some(padded);
            }
            Some(padded)
        }

        /// TVM's `TryFuseIters`: a sum of iterators whose scales chain (each the previous
        /// scale times the previous extent) becomes one iterator over a fused mark.
        fn fuse(&mut self, sum: Sum, early_skip: bool) -> Option<Sum> {
            let mut sum = sum;
            if let Some(combined) = self.combine_same_source(&sum) {
                sum = combined;
                if early_skip && sum.args.len() <= 1 {
                    return Some(sum);
                }
            }
            let args = &sum.args;
            let n = args.len();
            let mut visited = vec![false; n];
            let base_index = find_base(args, &visited, None, n.checked_sub(1)?)?;
            let base_scale = args[base_index].scale;
            if base_scale == 0 {
                return None;
            }
            let first_unit = first_unit_extent(args);
            let mut expected = base_scale;
            let mut tail = 0i128;
            let mut flattened = Vec::with_capacity(n);
            for i in 0..n {
                let (pos, matched, exact) = if i == 0 {
                    (base_index, expected, true)
                } else if let Some(j) =
                    find_exact(args, &visited, expected, None, n - 1, first_unit)
                {
                    (j, expected, true)
                } else if base_scale == 1 {
                    let (j, s) = find_smaller_closest(args, &visited, expected)?;
                    (j, s, false)
                } else {
                    return None;
                };
                visited[pos] = true;
                let arg = args[pos];
                flattened.push(Split {
                    scale: floor_div(arg.scale, base_scale)?,
                    ..arg
                });
                if !exact {
                    tail = tail.checked_add(expected.checked_sub(matched)?)?;
                }
                expected = arg.extent.checked_mul(matched)?;
            }
            flattened.reverse();
            let mark = match self.fused.get(&flattened) {
                Some(&mark) => mark,
                None => {
                    let extent = expected.checked_div(base_scale)?.checked_add(tail)?;
                    let source = MarkSource::Sum(flattened.clone(), 0);
                    let mark = self.intern(Mark { source, extent });
                    self.fused.insert(flattened, mark);
                    mark
                }
            };
            Some(Sum::of(self.full_split(mark, base_scale), sum.base))
        }

        /// TVM's `TryCombineSplitFromSameSource`: `(x // (c·e) % m)·(s·e) + (x // c % e)·s`
        /// becomes `(x // c % (m·e))·s`. `None` when no source repeats.
        fn combine_same_source(&self, sum: &Sum) -> Option<Sum> {
            let args = &sum.args;
            let count = |mark: MarkId| args.iter().filter(|a| a.mark == mark).count();
            if args.len() <= 1 || args.iter().all(|a| count(a.mark) == 1) {
                return None;
            }
            let first_unit = first_unit_extent(args);
            let mut visited = vec![false; args.len()];
            let mut reversed = Vec::new();
            let mut rend = args.len();
            while rend > 0 {
                let r = rend - 1;
                if visited[r] {
                    rend -= 1;
                    continue;
                }
                let mark = args[r].mark;
                if count(mark) == 1 {
                    reversed.push(args[r]);
                    visited[r] = true;
                    rend -= 1;
                    continue;
                }
                let base = find_base(args, &visited, Some(mark), r)?;
                visited[base] = true;
                let mut rhs = args[base];
                loop {
                    let scale = rhs.extent.checked_mul(rhs.scale)?;
                    let Some(j) = find_exact(args, &visited, scale, Some(mark), r, first_unit)
                    else {
                        break;
                    };
                    if args[j].lower != rhs.lower.checked_mul(rhs.extent)? {
                        break;
                    }
                    visited[j] = true;
                    rhs.extent = args[j].extent.checked_mul(rhs.extent)?;
                }
                reversed.push(rhs);
            }
            reversed.reverse();
            Some(Sum {
                args: reversed,
                base: sum.base,
            })
        }

        /// TVM's `CheckMapping` at the no-check level: the splits of every mark must chain by
        /// lower factor, and cover a divisor of the mark's extent unless the mark is padded.
        fn check_mapping(&self, sums: &[Sum]) -> bool {
            let mut order = Vec::new();
            let mut splits: HashMap<MarkId, Vec<Split>> = HashMap::new();
            for split in sums.iter().flat_map(|s| &s.args) {
                self.collect(split.mark, &mut order, &mut splits);
                splits.entry(split.mark).or_default().push(*split);
            }
            order.iter().all(|mark| {
                let of_mark = splits.get(mark).map_or(&[][..], Vec::as_slice);
                self.splits_chain(*mark, of_mark)
            })
        }

        fn collect(
            &self,
            mark: MarkId,
            order: &mut Vec<MarkId>,
            splits: &mut HashMap<MarkId, Vec<Split>>,
        ) {
            if order.contains(&mark) {
                return;
            }
            order.push(mark);
            if let MarkSource::Sum(args, _) = &self.marks[mark].source {
                for split in args {
                    self.collect(split.mark, order, splits);
                    splits.entry(split.mark).or_default().push(*split);
                }
            }
        }

        fn splits_chain(&self, mark: MarkId, splits: &[Split]) -> bool {
            let mut used = vec![false; splits.len()];
            let mut expected = 1i128;
            for _ in 0..splits.len() {
                let next = (0..splits.len())
                    .find(|&j| !used[j] && splits[j].lower == expected)
                    .or_else(|| skip_lower_factor(splits, &used, expected));
                let Some(j) = next else { return false };
                used[j] = true;
                match splits[j].lower.checked_mul(splits[j].extent) {
                    Some(e) => expected = e,
                    None => return false,
                }
            }
            self.padded.contains(&mark) || divides(expected, self.marks[mark].extent)
        }
    }

    /// `x + sign·y`, adding scales of equal splits in place.
    fn added(mut x: Sum, y: Sum, sign: i128) -> Option<Sum> {
        for split in y.args {
            let scale = split.scale.checked_mul(sign)?;
            let same = |a: &Split| {
                a.mark == split.mark && a.lower == split.lower && a.extent == split.extent
            };
            match x.args.iter_mut().find(|a| same(a)) {
                Some(a) => a.scale = a.scale.checked_add(scale)?,
                None => x.args.push(Split { scale, ..split }),
            }
        }
        x.base = x.base.checked_add(y.base.checked_mul(sign)?)?;
        Some(x)
    }

    fn scaled(mut x: Sum, k: i128) -> Option<Sum> {
        for a in &mut x.args {
            a.scale = a.scale.checked_mul(k)?;
        }
        x.base = x.base.checked_mul(k)?;
        Some(x)
    }

    fn first_unit_extent(args: &[Split]) -> usize {
        args.iter()
            .position(|a| a.extent == 1)
            .unwrap_or(args.len())
    }

    /// The unvisited split (of `only`'s mark, if given) with the smallest scale, searching
    /// from `rbegin` down; ties go to extent-1 splits.
    fn find_base(
        args: &[Split],
        visited: &[bool],
        only: Option<MarkId>,
        rbegin: usize,
    ) -> Option<usize> {
        let mut best: Option<usize> = None;
        for i in (0..=rbegin).rev() {
            if visited[i] || only.is_some_and(|m| args[i].mark != m) {
                continue;
            }
            let better = best.is_none_or(|b| {
                args[i].scale < args[b].scale
                    || (args[i].scale == args[b].scale
                        && args[i].extent == 1
                        && args[b].extent != 1)
            });
            if better {
                best = Some(i);
            }
        }
        best
    }

    /// An unvisited split with exactly `scale`, preferring extent-1 splits.
    fn find_exact(
        args: &[Split],
        visited: &[bool],
        scale: i128,
        only: Option<MarkId>,
        rbegin: usize,
        first_unit: usize,
    ) -> Option<usize> {
        let mut matched = None;
        for j in (0..=rbegin).rev() {
            if visited[j] || only.is_some_and(|m| args[j].mark != m) || args[j].scale != scale {
                continue;
            }
            if args[j].extent == 1 {
                return Some(j);
            }
            matched = matched.or(Some(j));
            if j <= first_unit {
                return matched;
            }
        }
        matched
    }

    /// The unvisited split with the largest non-negative scale not above `expected`.
    fn find_smaller_closest(
        args: &[Split],
        visited: &[bool],
        expected: i128,
    ) -> Option<(usize, i128)> {
        let mut best: Option<(usize, i128)> = None;
        for j in (0..args.len()).rev() {
            let s = args[j].scale;
            if visited[j] || s < 0 || s > expected {
                continue;
            }
            if best.is_none_or(|(_, b)| b < s) {
                best = Some((j, s));
            }
        }
        best
    }

    /// TVM's `SearchSkipLowerFactor`: when no split starts at `expected`, the unused split with
    /// the smallest lower factor, provided every unused one is a multiple of `expected`.
    fn skip_lower_factor(splits: &[Split], used: &[bool], expected: i128) -> Option<usize> {
        let mut found: Option<usize> = None;
        for (i, split) in splits.iter().enumerate() {
            if used[i] {
                continue;
            }
            if !divides(expected, split.lower) {
                return None;
            }
            if found.is_none_or(|r| divides(split.lower, splits[r].lower)) {
                found = Some(i);
            }
        }
        found
    }

    /// TVM's `EvalSet` interval bounds of an expression over the shape.
    fn interval(expr: &TvmExpr, shape: &[usize]) -> Option<(i128, i128)> {
        match expr {
            TvmExpr::Int(v) => Some((*v as i128, *v as i128)),
            TvmExpr::Index(d) => Some((0, *shape.get(*d)? as i128 - 1)),
            TvmExpr::Neg(a) => {
                let (lo, hi) = interval(a, shape)?;
                Some((hi.checked_neg()?, lo.checked_neg()?))
            }
            TvmExpr::Binary(op, a, b) => {
                let (x, y) = (interval(a, shape)?, interval(b, shape)?);
                match op {
                    TvmOp::Add => Some((x.0.checked_add(y.0)?, x.1.checked_add(y.1)?)),
                    TvmOp::Sub => Some((x.0.checked_sub(y.1)?, x.1.checked_sub(y.0)?)),
                    TvmOp::Mul => {
                        let corners = [
                            x.0.checked_mul(y.0)?,
                            x.0.checked_mul(y.1)?,
                            x.1.checked_mul(y.0)?,
                            x.1.checked_mul(y.1)?,
                        ];
                        Some((*corners.iter().min()?, *corners.iter().max()?))
                    }
                    TvmOp::FloorDiv => {
                        let c = (y.0 == y.1).then_some(y.0)?;
                        let (p, q) = (floor_div(x.0, c)?, floor_div(x.1, c)?);
                        Some((p.min(q), p.max(q)))
                    }
                    TvmOp::FloorMod => {
                        let c = (y.0 == y.1 && y.0 > 0).then_some(y.0)?;
                        let q = floor_div(x.0, c)?;
                        if q == floor_div(x.1, c)? {
                            let shift = q.checked_mul(c)?;
                            Some((x.0 - shift, x.1 - shift))
                        } else {
                            Some((0, c - 1))
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::Coords;
    use proptest::prelude::*;

    fn map(text: &str) -> TvmMap {
        TvmMap::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn final_shape(text: &str) -> Vec<usize> {
        map(text)
            .final_shape()
            .unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn layout(text: &str) -> Layout {
        map(text)
            .to_layout()
            .unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn error(text: &str) -> Error {
        match TvmMap::parse(text).and_then(|m| m.to_layout()) {
            Ok(l) => panic!("{text} should fail, gave {l}"),
            Err(e) => e,
        }
    }

    /// Python's `a // b`.
    fn python_floordiv(a: i128, b: i128) -> i128 {
        let q = a / b;
        if a % b != 0 && ((a < 0) != (b < 0)) {
            q - 1
        } else {
            q
        }
    }

    /// The map's own formula, evaluated on one coordinate (Python semantics).
    fn eval(expr: &TvmExpr, coord: &[usize]) -> i128 {
        match expr {
            TvmExpr::Int(v) => *v as i128,
            TvmExpr::Index(d) => coord[*d] as i128,
            TvmExpr::Neg(a) => -eval(a, coord),
            TvmExpr::Binary(op, a, b) => {
                let (x, y) = (eval(a, coord), eval(b, coord));
                match op {
                    TvmOp::Add => x + y,
                    TvmOp::Sub => x - y,
                    TvmOp::Mul => x * y,
                    TvmOp::FloorDiv => python_floordiv(x, y),
                    TvmOp::FloorMod => x - y * python_floordiv(x, y),
                }
            }
        }
    }

    /// Row-major linearisation of the map's outputs over `final_shape`.
    fn direct_offset(map: &TvmMap, final_shape: &[usize], coord: &[usize]) -> i128 {
        map.outputs()
            .iter()
            .zip(final_shape)
            .fold(0, |acc, (e, &n)| acc * n as i128 + eval(e, coord))
    }

    fn assert_matches_formula(map: &TvmMap, layout: &Layout) {
        let shape = map.final_shape().unwrap();
        for c in Coords::new(map.shape()) {
            let expected = direct_offset(map, &shape, &c);
            assert_eq!(
                layout.offset(&c).unwrap() as i128,
                expected,
                "{map} at {c:?}"
            );
        }
    }

    #[test]
    fn golden_cases_reproduce() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/public_golden.json"
        ))
        .expect("tests/data/public_golden.json");
        let cases: serde_json::Value = serde_json::from_str(&text).unwrap();
        let mut checked = 0;
        for case in cases.as_array().unwrap() {
            if case["system"] != "tvm" {
                continue;
            }
            let shape: Vec<String> = case["logical_shape"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n.to_string())
                .collect();
            let text = format!(
                "[{}] {}",
                shape.join(", "),
                case["layout"].as_str().unwrap()
            );
            let numbers = |key: &str| -> Vec<usize> {
                case[key]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|n| n.as_u64().unwrap() as usize)
                    .collect()
            };
            if !numbers("axis_separators").is_empty() {
                assert!(matches!(error(&text), Error::Unsupported(_)), "{text}");
                continue;
            }
            let m = map(&text);
            let l = layout(&text);
            assert_eq!(m.final_shape().unwrap(), numbers("final_shape"), "{text}");
            let padded = case["padded_size_elements"].as_u64().unwrap() as usize;
            assert_eq!(l.padded_len(), Some(padded), "{text}");
            assert_eq!(l.cosize(), padded, "{text}");
            let padding = case["num_padding_elements"].as_u64().unwrap() as usize;
            assert_eq!(padded - l.size(), padding, "{text}");
            assert_eq!(numbers("physical_shape"), [padded], "{text}");
            match case["offsets"].as_array() {
                Some(offsets) => {
                    let expected: Vec<i64> = offsets.iter().map(|o| o.as_i64().unwrap()).collect();
                    assert_eq!(l.offsets(), expected, "{text}");
                }
                None => {
                    for check in case["spot_checks"].as_array().unwrap() {
                        let index: Vec<usize> = check["index"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|n| n.as_u64().unwrap() as usize)
                            .collect();
                        let offset = check["offset"].as_i64().unwrap();
                        assert_eq!(l.offset(&index).unwrap(), offset, "{text} at {index:?}");
                    }
                }
            }
            assert_matches_formula(&m, &l);
            checked += 1;
        }
        assert!(checked > 0, "no tvm golden cases found");
    }

    #[test]
    fn final_shapes_quoted_in_layouts_md() {
        let cases: [(&str, &[usize]); 17] = [
            ("[4] lambda i: [i // 4, i % 4]", &[1, 4]),
            ("[16] lambda i: [i // 4, i % 4]", &[4, 4]),
            ("[14] lambda i: [i // 4, i % 4]", &[4, 4]),
            ("[3] lambda i: [i // 4, i % 4]", &[1, 4]),
            ("[15] lambda i: [(i + 1) // 4, (i + 1) % 4]", &[4, 4]),
            ("[14] lambda i: [(i + 1) // 4, (i + 1) % 4]", &[4, 4]),
            (
                "[14, 31] lambda i, j: [(i + 1) // 4, (j + 5) // 8, (i + 1) % 4, (j + 5) % 8]",
                &[4, 5, 4, 8],
            ),
            ("[116] lambda i: [i // 32, (i // 4) % 8, i % 4]", &[4, 8, 4]),
            ("[116] lambda i: [(i // 4) % 8, i // 32, i % 4]", &[8, 4, 4]),
            (
                "[123] lambda i: [(i + 5) // 32, ((i + 5) // 4) % 8, (i + 5) % 4]",
                &[4, 8, 4],
            ),
            (
                "[123] lambda i: [((i + 5) // 4) % 8, (i + 5) // 32, (i + 5) % 4]",
                &[8, 4, 4],
            ),
            (
                "[128, 128] lambda m, n: (m // 16, n // 16, m % 16, n % 16)",
                &[8, 8, 16, 16],
            ),
            ("[32, 64] lambda n, c: (n, c // 4, c % 4)", &[32, 16, 4]),
            ("[32, 128] lambda n, c: (n, c // 4, c % 4)", &[32, 32, 4]),
            (
                "[3, 3, 64, 64] lambda i0, i1, i2, i3: \
                 (i3 // 32, i0, i2 // 8, (i3 % 32) // 16, i1, i2 % 8, i3 % 16)",
                &[2, 3, 8, 2, 3, 8, 16],
            ),
            (
                "[1, 32, 1, 5] lambda x, y, z, w: [x*32*5 + y*5 + z*5 + w]",
                &[160],
            ),
            (
                "[16, 64, 64, 128] lambda n, h, w, c: [n, c // 4, h, w, c % 4]",
                &[16, 32, 64, 64, 4],
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(final_shape(text), expected, "{text}");
            assert_matches_formula(&map(text), &layout(text));
        }
    }

    #[test]
    fn split_by_n_gives_ceil_division() {
        for n in 1..=20usize {
            let text = format!("[16] lambda i: [i // {n}, i % {n}]");
            assert_eq!(final_shape(&text), [16usize.div_ceil(n), n], "{text}");
        }
    }

    #[test]
    fn padding_is_part_of_the_buffer() {
        let l = layout("[14] lambda i: [i // 4, i % 4]");
        assert_eq!(l.offsets(), (0..14).collect::<Vec<i64>>());
        assert_eq!((l.padded_len(), l.cosize()), (Some(16), 16));
        let left = layout("[14] lambda i: [(i + 1) // 4, (i + 1) % 4]");
        assert_eq!(left.offsets(), (1..15).collect::<Vec<i64>>());
        assert_eq!(left.cosize(), 16);
        let kernel = "[3, 3, 64, 64] lambda i0, i1, i2, i3: \
                      (i3 // 32, i0, i2 // 8, (i3 % 32) // 16, i1, i2 % 8, i3 % 16)";
        assert_eq!(layout(kernel).cosize(), 3 * 3 * 64 * 64);
    }

    #[test]
    fn interval_bounds_when_iterator_analysis_fails() {
        // Two splits of `i` that overlap: TVM falls back to interval bounds.
        assert_eq!(final_shape("[6] lambda i: [i, i % 4]"), [6, 4]);
        assert_eq!(
            layout("[6] lambda i: [i, i % 4]").offsets(),
            [0, 5, 10, 15, 16, 21]
        );
        // A gap between the scales: interval bounds, not 64 * 3.
        assert_eq!(final_shape("[3, 10] lambda i, j: [i * 64 + j]"), [138]);
    }

    #[test]
    fn divided_fused_sum_simplifies_back_to_the_sum() {
        let text = "[3, 7] lambda i, j: [4 * ((7 * i + j) // 4) + (7 * i + j) % 4]";
        assert_eq!(final_shape(text), [24]);
        let l = layout(text);
        assert!(l.same_function(&Layout::from_strides(&[3, 7], &[7, 1]).unwrap()));
        assert!(l.is_separable());
        assert_eq!(l.digits().len(), 2);
        assert_eq!(l.cosize(), 24);

        let split = "[3, 7] lambda i, j: [(i * 7 + j) // 4, (i * 7 + j) % 4]";
        assert_eq!(final_shape(split), [6, 4]);
        let l = layout(split);
        assert_eq!(l.offsets(), (0..21).collect::<Vec<i64>>());
        assert!(l.is_separable());
        assert_eq!((l.padded_len(), l.size()), (Some(24), 21));

        let single = layout("[16] lambda i: [4 * (i // 4) + i % 4]");
        assert_eq!(single.digits(), [Digit::new(Source::Dim(0), 1, None, 1)]);
    }

    #[test]
    fn reordered_fused_split_keeps_a_fused_source() {
        let text = "[3, 7] lambda i, j: [(i * 7 + j) % 4, (i * 7 + j) // 4]";
        assert_eq!(final_shape(text), [4, 6]);
        let l = layout(text);
        let fused = Source::fused([(0, 7), (1, 1)]);
        assert!(l.digits().iter().any(|d| d.source == fused));
        assert!(!l.is_separable());
        assert_matches_formula(&map(text), &l);
    }

    #[test]
    fn accepted_text_forms() {
        let canonical = "[14] lambda i: [i // 4, i % 4]";
        for text in [
            "[14] lambda i: [i // 4, i % 4]",
            "[14] lambda i: (i // 4, i % 4)",
            "[14] lambda i: (i // 4, i % 4,)",
            "[14]lambda i:[i//4,i%4]",
            "  [ 14 , ] lambda  i , : [ i // 4 , i % 4 , ]  ",
            "[14] T.index_map(lambda i: (i // 4, i % 4))",
            "[14] tvm.tir.IndexMap.from_func(lambda i: [i // 4, i % 4])",
            "(14) lambda i: [T.floordiv(i, 4), floormod(i, 4)]",
        ] {
            assert_eq!(map(text).to_string(), canonical, "{text}");
        }
        assert_eq!(map("[8] lambda i: i").to_string(), "[8] lambda i: [i]");
        assert_eq!(map("[8] lambda i: (i + 1) // 2").outputs().len(), 1);
        assert_eq!(map("[] lambda: []").to_string(), "[] lambda: []");
    }

    #[test]
    fn parameters_bind_as_in_tvm() {
        let m = map("[2, 3, 8] lambda *rest, k: [*rest, k // 4, k % 4]");
        assert_eq!(m.params(), ["rest_0", "rest_1", "k"]);
        assert_eq!(
            m.to_string(),
            "[2, 3, 8] lambda rest_0, rest_1, k: [rest_0, rest_1, k // 4, k % 4]"
        );
        assert_eq!(m.final_shape().unwrap(), [2, 3, 2, 4]);

        let bare = map("[2, 3, 4] lambda *, a, b, c: [c, b, a]");
        let plain = map("[2, 3, 4] lambda a, b, c: [c, b, a]");
        assert_eq!(bare, plain);

        let picked = map("[2, 3, 4] lambda i, *args: [args[-1], args[0], i]");
        assert_eq!(
            picked.to_string(),
            "[2, 3, 4] lambda i, args_0, args_1: [args_1, args_0, i]"
        );

        let clash = map("[2, 3, 4] lambda args_0, *args: [args_0, *args]");
        assert_eq!(clash.params(), ["args_0", "args_0_", "args_1"]);
        assert_eq!(
            layout(&clash.to_string()).offsets(),
            Layout::row_major(&[2, 3, 4]).unwrap().offsets()
        );

        let empty_star = map("[4] lambda i, *rest: [*rest, i]");
        assert_eq!(empty_star.params(), ["i"]);
    }

    #[test]
    fn display_is_canonical_and_parses_back() {
        let text =
            "[8] lambda i: [i - (i - 1), -(i + 1) // 2 + 4, -3 * i + 24, i // (2 * 2), --i + 7]";
        let m = map(text);
        assert_eq!(m.to_string(), text);
        assert_eq!(map(&m.to_string()), m);
        assert_eq!(
            map("[8] lambda i: [(((i)))*(2)]").to_string(),
            "[8] lambda i: [i * 2]"
        );
        assert_eq!(map("[8] lambda i: [- 3 + i]").outputs()[0], {
            TvmExpr::Binary(
                TvmOp::Add,
                Box::new(TvmExpr::Int(-3)),
                Box::new(TvmExpr::Index(0)),
            )
        });
    }

    #[test]
    fn notation_prefix_reaches_the_parser() {
        let l = Layout::parse("tvm:[4, 6] lambda i, j: [j, i]").unwrap();
        assert_eq!(l, layout("[4, 6] lambda i, j: [j, i]"));
        assert!(l.same_function(&Layout::col_major(&[4, 6]).unwrap()));
        assert_eq!(
            crate::notation::parse("tvm:[4] lambda i: i").unwrap().dtype,
            None
        );
    }

    fn parse_error_column(text: &str) -> (usize, String) {
        match crate::notation::parse(text) {
            Err(Error::Parse {
                notation: "tvm",
                column,
                message,
            }) => (column, message),
            other => panic!("{text}: expected a tvm parse error, got {other:?}"),
        }
    }

    #[test]
    fn parse_errors_name_the_column() {
        // (text, the text starting at the expected column, part of the message)
        let cases: [(&str, &str, &str); 12] = [
            ("tvm:[4] lambda i: [i / 2]", "/ 2", "ambiguous"),
            ("tvm:[4] lambda i: [i ** 2]", "** 2", "power"),
            ("tvm:[4] lambda i: [k]", "k]", "unknown name 'k'"),
            ("tvm:[4, 4] lambda i: [i]", "lambda", "has 2 dimensions"),
            ("tvm:[4] lambda *a, b, c: [b, c]", "lambda", "at least 2"),
            ("tvm:[4, 4] lambda i, i: [i]", "i: [", "duplicate"),
            ("tvm:[4] lambda *: [0]", "lambda", "bare '*'"),
            ("tvm:[4] lambda *a: [a]", "a]", "*a"),
            ("tvm:[4] lambda i: [(i, i) // 2]", "// 2", "tuple"),
            ("tvm:[4] lambda i: [i] junk", "junk", "end of the input"),
            ("tvm:lambda i: [i]", "lambda", "logical shape"),
            ("tvm:[4] lambda i: ['x']", "'x'", "string"),
        ];
        for (text, anchor, message) in cases {
            let (column, got) = parse_error_column(text);
            assert!(got.contains(message), "{text}: {got}");
            assert_eq!(column, text.find(anchor).unwrap() + 1, "{text}: {got}");
        }
        for text in [
            "tvm:[4] lambda i: [99999999999999999999]",
            "tvm:[4] lambda i: [i +]",
            "tvm:[4] lambda i: [i, i",
            "tvm:[4] lambda i: ['axis_separator",
            "tvm:[4] foo(lambda i: [i])",
            "tvm:[4] T.index_map(lambda i: [i]",
            "tvm:[4] lambda i: [args[0]]",
            "tvm:[4, 2] lambda i, *a: [a[2], i]",
            "tvm:[4] lambda i: [floordiv(i)]",
            "tvm:[-4] lambda i: [i]",
        ] {
            parse_error_column(text);
        }
    }

    #[test]
    fn deep_input_is_an_error_not_a_stack_overflow() {
        let nested = format!("[4] lambda i: [{}i{}]", "(".repeat(500), ")".repeat(500));
        assert!(matches!(TvmMap::parse(&nested), Err(Error::Parse { .. })));
        let negated = format!("[4] lambda i: [{}i]", "-".repeat(5000));
        assert!(matches!(TvmMap::parse(&negated), Err(Error::Parse { .. })));
        let chain = format!("[4] lambda i: [i{}]", " + i".repeat(5000));
        assert!(matches!(TvmMap::parse(&chain), Err(Error::Parse { .. })));
        let fine = format!("[4] lambda i: [i{} - 100 * i]", " + i".repeat(100));
        assert_eq!(layout(&fine).offsets(), [0, 1, 2, 3]);
    }

    #[test]
    fn axis_separators_are_unsupported() {
        for sep in [
            "IndexMap.AXIS_SEPARATOR",
            "tvm.tir.IndexMap.AXIS_SEPARATOR",
            "te.AXIS_SEPARATOR",
            "T.axis_separator",
            "\"axis_separator\"",
            "'axis_separator'",
        ] {
            let text = format!("[16, 8] lambda i, j: [i // 4, j, {sep}, i % 4]");
            match error(&text) {
                Error::Unsupported(m) => assert!(m.contains("flat"), "{m}"),
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn unsupported_maps() {
        for (text, message) in [
            (
                "[4, 4] lambda i, j: [i * j]",
                "multiplies two index expressions",
            ),
            (
                "[4, 4] lambda i, j: [i // j, j]",
                "divides by an index expression",
            ),
            (
                "[4, 4] lambda i, j: [i % (j + 1), j]",
                "divides by an index expression",
            ),
            ("[8] lambda i: [i // -2, i % 2]", "negative"),
            ("[12] lambda i: [(i % 6) // 4, i]", "mixed-radix"),
            (
                "[4, 4] lambda i, j: [(i // 2 + j) // 2, i, j]",
                "mixed-radix",
            ),
            ("[8] lambda i: [(3 * (i // 2)) // 2, i]", "mixed-radix"),
            ("[8] lambda i: [(i % 3 + 1) // 2, i]", "mixed-radix"),
        ] {
            match error(text) {
                Error::Unsupported(m) => assert!(m.contains(message), "{text}: {m}"),
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn invalid_maps() {
        for (text, message) in [
            ("[4, 4] lambda i, j: [i + j]", "not injective"),
            ("[4] lambda i: [i // 2]", "not injective"),
            ("[4] lambda i: [i + 1]", "start at 0"),
            ("[8] lambda i: [7 - i]", "start at 0"),
            ("[4] lambda i: [i // 0]", "divides by zero"),
            ("[4] lambda i: [i % 0]", "divides by zero"),
            ("[0] lambda i: [i]", "extent 0"),
        ] {
            match error(text) {
                Error::InvalidLayout(m) => assert!(m.contains(message), "{text}: {m}"),
                other => panic!("{text}: {other:?}"),
            }
        }
        let shape = vec![4];
        for (params, outputs) in [
            (
                vec!["i".to_string(), "j".to_string()],
                vec![TvmExpr::Index(0)],
            ),
            (vec!["1i".to_string()], vec![TvmExpr::Index(0)]),
            (vec!["i".to_string()], vec![TvmExpr::Index(1)]),
        ] {
            let err = TvmMap::new(shape.clone(), params, outputs).unwrap_err();
            assert!(matches!(err, Error::InvalidLayout(_)), "{err}");
        }
        let deep = (0..300).fold(TvmExpr::Index(0), |e, _| TvmExpr::Neg(Box::new(e)));
        let err = TvmMap::new(vec![4], vec!["i".into()], vec![deep]).unwrap_err();
        assert!(matches!(err, Error::Unsupported(_)), "{err}");
    }

    #[test]
    fn overflow_is_reported() {
        for text in [
            "[4] lambda i: [i * 9223372036854775807 * 2]",
            "[4] lambda i: [i + 9223372036854775807 + 1 - 9223372036854775807]",
            "[4611686018427387904, 4] lambda i, j: [i, j]",
            "[4] lambda i: [(i + 9223372036854775807) // 2 * 4]",
        ] {
            assert!(
                matches!(error(text), Error::Overflow(_)),
                "{text}: {:?}",
                error(text)
            );
        }
    }

    fn index_pieces(extents: &[usize], splits: &[(i64, i64)], fuse: bool) -> Vec<TvmExpr> {
        let index = |d| Box::new(TvmExpr::Index(d));
        let int = |v| Box::new(TvmExpr::Int(v));
        let bin = |op, a, b| Box::new(TvmExpr::Binary(op, a, b));
        let mut sources: Vec<Box<TvmExpr>> = (0..extents.len()).map(index).collect();
        if fuse && extents.len() >= 2 {
            let first = bin(TvmOp::Mul, sources.remove(0), int(extents[1] as i64));
            sources[0] = bin(TvmOp::Add, first, index(1));
        }
        let mut pieces = Vec::new();
        for (source, &(factor, pad)) in sources.into_iter().zip(splits) {
            if factor == 1 {
                pieces.push(*source);
                continue;
            }
            let padded = if pad % factor == 0 {
                source
            } else {
                bin(TvmOp::Add, source, int(pad % factor))
            };
            pieces.push(TvmExpr::Binary(
                TvmOp::FloorDiv,
                padded.clone(),
                int(factor),
            ));
            pieces.push(TvmExpr::Binary(TvmOp::FloorMod, padded, int(factor)));
        }
        pieces
    }

    /// Injective maps built the way layouts are: split (and left-pad) every index, maybe fuse
    /// the first two, and reorder the pieces.
    fn structured_map() -> impl Strategy<Value = TvmMap> {
        (1..=3usize)
            .prop_flat_map(|rank| {
                (
                    prop::collection::vec(1..=9usize, rank),
                    prop::collection::vec((1..=5i64, 0..5i64), rank),
                    any::<bool>(),
                )
            })
            .prop_flat_map(|(extents, splits, fuse)| {
                let pieces = index_pieces(&extents, &splits, fuse);
                (Just(extents), Just(pieces).prop_shuffle())
            })
            .prop_map(|(extents, pieces)| {
                let names = (0..extents.len()).map(|d| format!("x{d}")).collect();
                TvmMap::new(extents, names, pieces).unwrap()
            })
    }

    fn random_expr(rank: usize) -> impl Strategy<Value = TvmExpr> {
        let leaf = prop_oneof![
            (0..rank).prop_map(TvmExpr::Index),
            (0..10i64).prop_map(TvmExpr::Int),
        ];
        leaf.prop_recursive(4, 24, 2, |inner| {
            let op = prop_oneof![
                Just(TvmOp::Add),
                Just(TvmOp::Sub),
                Just(TvmOp::Mul),
                Just(TvmOp::FloorDiv),
                Just(TvmOp::FloorMod),
            ];
            prop_oneof![
                inner.clone().prop_map(|e| TvmExpr::Neg(Box::new(e))),
                (op, inner.clone(), inner).prop_map(|(op, a, b)| TvmExpr::Binary(
                    op,
                    Box::new(a),
                    Box::new(b)
                )),
            ]
        })
    }

    /// Arbitrary maps over rank-2 shapes, most of which do not lower.
    fn random_map() -> impl Strategy<Value = TvmMap> {
        (
            prop::collection::vec(1..=6usize, 2),
            prop::collection::vec(random_expr(2), 1..=3),
        )
            .prop_map(|(shape, outputs)| {
                TvmMap::new(shape, vec!["a".into(), "b".into()], outputs).unwrap()
            })
    }

    fn same_lowering(x: &TvmMap, y: &TvmMap) -> bool {
        match (x.to_layout(), y.to_layout()) {
            (Ok(a), Ok(b)) => a.same_function(&b) && a.cosize() == b.cosize(),
            (Err(a), Err(b)) => std::mem::discriminant(&a) == std::mem::discriminant(&b),
            _ => false,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn printed_maps_parse_back_to_the_same_function(
            m in prop_oneof![structured_map(), random_map()]
        ) {
            let printed = m.to_string();
            let reparsed = TvmMap::parse(&printed).unwrap();
            prop_assert!(same_lowering(&m, &reparsed), "{printed}");
            prop_assert_eq!(reparsed.to_string(), map(&reparsed.to_string()).to_string());
        }

        #[test]
        fn structured_maps_lower_to_their_formula(m in structured_map()) {
            let l = m.to_layout().unwrap_or_else(|e| panic!("{m}: {e}"));
            assert_matches_formula(&m, &l);
            prop_assert_eq!(l.padded_len(), Some(m.final_shape().unwrap().iter().product()));
        }

        #[test]
        fn lowered_random_maps_agree_with_their_formula(m in random_map()) {
            if let Ok(l) = m.to_layout() {
                assert_matches_formula(&m, &l);
            }
        }

        #[test]
        fn garbage_never_panics(text in "\\PC{0,80}") {
            let _ = parse_layout(&text, 4);
        }

        #[test]
        fn near_miss_text_never_panics(body in "[\\[\\]()0-9ijk,:*/%+\\- .'\"_]{0,60}") {
            let _ = parse_layout(&format!("[3, 5] lambda i, j: {body}"), 4);
            let _ = parse_layout(&format!("[3, 5] {body}"), 4);
        }
    }
}
