//! The text parser: shape, optional `T.index_map(` wrapper, lambda head, body.

use std::collections::{HashMap, HashSet};

use super::{TvmExpr, TvmMap, TvmOp, MAX_EXPR_DEPTH};
use crate::error::{Error, Result};
use crate::notation::cursor::Cursor;

/// The notation name used in parse errors.
const NOTATION: &str = "tvm";

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
    let word =
        dotted_name(cur)?.ok_or_else(|| cur.unexpected("'lambda' or 'T.index_map(lambda ...)'"))?;
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
                &format!("'{name}' is not the lambda's *args parameter, so it cannot be unpacked"),
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
        let node = match expr {
            TvmExpr::Int(v) => Node {
                expr: TvmExpr::Int(
                    v.checked_neg()
                        .ok_or_else(|| self.cur.error_at(at, "number does not fit in 64 bits"))?,
                ),
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
