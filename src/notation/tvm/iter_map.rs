//! TVM's range inference for `map_shape`: a port of the parts of `DetectIterMap` (no-check
//! level, constant extents) that decide the extents, with `EvalSet` interval bounds as the
//! fallback, as in `IndexMapNode::MapRanges`.

use std::collections::{HashMap, HashSet};

use super::{gcd, TvmExpr, TvmOp};

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
            } else if let Some(j) = find_exact(args, &visited, expected, None, n - 1, first_unit) {
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
                let Some(j) = find_exact(args, &visited, scale, Some(mark), r, first_unit) else {
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
        let same =
            |a: &Split| a.mark == split.mark && a.lower == split.lower && a.extent == split.extent;
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
                || (args[i].scale == args[b].scale && args[i].extent == 1 && args[b].extent != 1)
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
fn find_smaller_closest(args: &[Split], visited: &[bool], expected: i128) -> Option<(usize, i128)> {
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
