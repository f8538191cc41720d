//! Random pairs of layouts of one logical shape, drawn from a stream of choice bytes.
//!
//! One generator serves the property tests (`tests/random_pairs.rs`, `tests/guard.rs`: bytes from
//! proptest) and the fuzz targets (`fuzz/`: bytes from libFuzzer, which include this file with
//! `#[path]`). Every decision reads one byte (two for ranges above 256); once the stream runs out
//! every choice is 0, so any byte string gives a pair and shorter strings give simpler pairs
//! (the empty string gives a rank-1 copy of one element).
//!
//! Layouts come in through every front door: notation text given to `Layout::parse` (CuTe, MoYe,
//! XLA, TVM, Morello) and the constructors (`Layout::ordered`, `Layout::from_strides`,
//! `Layout::from_parts` with hand-built digits). Between them they cover permutations, NCHWc-style
//! packing, Morello odd/even strips, XLA tiles that do not divide (padding), repeated tiles and
//! `*` combines, TVM splits with left padding and fused sums, strides with gaps, negative strides,
//! a base offset, broadcast (stride-0) and wrapping sources, splits of one dim that differ
//! between the two sides, and CuTe swizzles (`Sw<B,M,S> o offset o …`) of any of the CuTe
//! layouts. Every generator builds a valid layout by construction, so a parse or
//! construction error is a finding (see `every_kind_builds_valid_layouts` in `random_pairs.rs`);
//! the pair generator itself never fails: it falls back to another kind, then to row-major.
#![allow(dead_code)]

use std::fmt;

use relayout::{Digit, Layout, Source};

/// Largest number of logical elements of a generated shape.
pub const MAX_ELEMENTS: usize = 2048;

/// Largest buffer (cosize) of a layout from [`layout`]; gaps and padding stay moderate, so that
/// pairs stay cheap to run and the fuzz target stays within its memory limit.
pub const MAX_COSIZE: usize = 1 << 16;

/// Extents a dim is drawn from: small ones, primes, powers of two and their neighbours.
const EXTENTS: [usize; 16] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 15, 16, 17, 24, 32, 33];

/// A stream of decisions. Reads one byte per decision (two for ranges above 256); an exhausted
/// stream answers 0 to everything.
pub struct Choices<'a, I: Iterator<Item = u8>> {
    bytes: &'a mut I,
}

impl<'a, I: Iterator<Item = u8>> Choices<'a, I> {
    /// Decisions read from `bytes`.
    pub fn new(bytes: &'a mut I) -> Self {
        Choices { bytes }
    }

    /// A number in `0..n` (0 when `n <= 1`, without reading a byte).
    pub fn below(&mut self, n: usize) -> usize {
        match n {
            0 | 1 => 0,
            2..=256 => self.byte() as usize % n,
            _ => (self.byte() as usize | (self.byte() as usize) << 8) % n,
        }
    }

    /// True with probability about `1/n`.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == n.saturating_sub(1) && n > 0
    }

    /// One of `items` (which must not be empty).
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    /// A permutation of `0..n`.
    pub fn permutation(&mut self, n: usize) -> Vec<usize> {
        let mut items: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            let j = self.below(i + 1);
            items.swap(i, j);
        }
        items
    }

    fn byte(&mut self) -> u8 {
        self.bytes.next().unwrap_or(0)
    }
}

/// How a layout was built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `Layout::ordered`: a compact permutation of the dims.
    Ordered,
    /// `Layout::from_strides`, or the same strides as CuTe text: gaps, negative and zero strides.
    Strided,
    /// CuTe text with nested modes (every dim split into sub-modes, strides in any order).
    Cute,
    /// The same in MoYe's printing (spaces, `_N` static markers, one-tuples).
    Moye,
    /// XLA text: `minor_to_major`, tiles that need not divide, repeated tiles, `*`, `L(n)`.
    Xla,
    /// A TVM index map: splits, left padding, three-way splits, fused sums, `*rest`.
    Tvm,
    /// A Morello layout: Dynamic, Packed (dividing or padding) and OddEven strips, interleaved.
    Morello,
    /// `Layout::from_parts` with hand-built digits: uneven splits, shifts, fused sources, a base,
    /// wrapping top digits, declared padding.
    Digits,
    /// A CuTe or MoYe layout swizzled: `Sw<B,M,S> o offset o …` with shifts of either sign.
    Swizzled,
}

/// Every kind, in the order [`layout`] picks them by index.
pub const KINDS: [Kind; 9] = [
    Kind::Ordered,
    Kind::Strided,
    Kind::Cute,
    Kind::Moye,
    Kind::Xla,
    Kind::Tvm,
    Kind::Morello,
    Kind::Digits,
    Kind::Swizzled,
];

/// What a layout is for: a source may alias (broadcast, wrap); a destination must be injective.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Read from: any layout.
    Source,
    /// Written to: no two coordinates may share a slot.
    Destination,
}

/// A generated layout and the text that rebuilds it: notation text for `Layout::parse`, or the
/// constructor call for the others.
#[derive(Debug, Clone)]
pub struct Generated {
    /// How it was built.
    pub kind: Kind,
    /// Notation text (`cute:…`) or a description of the constructor call.
    pub text: String,
    /// The layout.
    pub layout: Layout,
}

/// A source and a destination layout of one logical shape; the destination is injective.
#[derive(Debug, Clone)]
pub struct Pair {
    /// The source layout.
    pub src: Generated,
    /// The destination layout.
    pub dst: Generated,
}

impl fmt::Display for Pair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "src ({:?}): {}", self.src.kind, self.src.text)?;
        writeln!(f, "    = {}", self.src.layout)?;
        writeln!(f, "dst ({:?}): {}", self.dst.kind, self.dst.text)?;
        write!(f, "    = {}", self.dst.layout)
    }
}

/// A random pair of layouts of one random shape, from the choice bytes.
pub fn pair_from(bytes: &mut impl Iterator<Item = u8>) -> Pair {
    let mut c = Choices::new(bytes);
    let shape = shape(&mut c);
    let src = layout(&mut c, &shape, Role::Source);
    let dst = layout(&mut c, &shape, Role::Destination);
    Pair { src, dst }
}

/// A random shape of rank 1 to 4 with at most [`MAX_ELEMENTS`] elements.
pub fn shape<I: Iterator<Item = u8>>(c: &mut Choices<'_, I>) -> Vec<usize> {
    let rank = 1 + c.below(4);
    let mut shape: Vec<usize> = (0..rank).map(|_| c.pick(&EXTENTS)).collect();
    while shape.iter().product::<usize>() > MAX_ELEMENTS {
        let largest = (0..rank).max_by_key(|&d| shape[d]).unwrap_or(0);
        shape[largest] = shape[largest].div_ceil(2);
    }
    shape
}

/// A random layout of `shape` for `role`: a few tries at random kinds, then row-major. A
/// destination is always injective.
pub fn layout<I: Iterator<Item = u8>>(
    c: &mut Choices<'_, I>,
    shape: &[usize],
    role: Role,
) -> Generated {
    for _ in 0..4 {
        let kind = c.pick(&KINDS);
        if let Ok(g) = generate(kind, shape, c, role) {
            if g.layout.cosize() > MAX_COSIZE {
                continue;
            }
            if role == Role::Source || g.layout.is_injective() {
                return g;
            }
        }
    }
    Generated {
        kind: Kind::Ordered,
        text: format!("Layout::row_major(&{shape:?})"),
        layout: Layout::row_major(shape).expect("a small row-major layout"),
    }
}

/// A layout of one kind. Errors carry the text that the crate rejected.
pub fn generate<I: Iterator<Item = u8>>(
    kind: Kind,
    shape: &[usize],
    c: &mut Choices<'_, I>,
    role: Role,
) -> Result<Generated, (String, relayout::Error)> {
    let (text, built) = match kind {
        Kind::Ordered => {
            let order = c.permutation(shape.len());
            let text = format!("Layout::ordered(&{shape:?}, &{order:?})");
            (text, Layout::ordered(shape, &order))
        }
        Kind::Strided => strided(shape, c, role),
        Kind::Cute => parsed(cute(shape, c, role, false)),
        Kind::Moye => parsed(cute(shape, c, role, true)),
        Kind::Xla => parsed(xla(shape, c)),
        Kind::Tvm => parsed(tvm(shape, c)),
        Kind::Morello => parsed(morello(shape, c)),
        Kind::Digits => digits(shape, c, role),
        Kind::Swizzled => parsed(swizzled(shape, c, role)),
    };
    match built {
        Ok(layout) => Ok(Generated { kind, text, layout }),
        Err(e) => Err((text, e)),
    }
}

fn parsed(text: String) -> (String, relayout::Result<Layout>) {
    let layout = Layout::parse(&text);
    (text, layout)
}

/// Strides for digits of these extents, in a random order, that make a compact layout with
/// random gaps, then negate some and (for a source) zero one.
fn assign_strides<I: Iterator<Item = u8>>(
    extents: &[usize],
    c: &mut Choices<'_, I>,
    role: Role,
) -> Vec<i64> {
    let order = c.permutation(extents.len());
    let mut strides = vec![0i64; extents.len()];
    let mut running = 1i64;
    // Gaps stop once the span is 16 times the volume, so buffers stay small.
    let volume: i64 = extents.iter().map(|&n| n as i64).product();
    for &k in &order {
        let gapped = running < 16 * volume.max(1);
        let gap = if gapped {
            c.pick(&[1i64, 1, 1, 1, 2, 3])
        } else {
            1
        };
        strides[k] = running * gap;
        let extra = if gapped {
            c.pick(&[0i64, 0, 0, 1, 5])
        } else {
            0
        };
        running = strides[k] * extents[k] as i64 + extra;
    }
    for s in strides.iter_mut() {
        if c.one_in(5) {
            *s = -*s;
        }
    }
    if role == Role::Source && c.one_in(4) {
        let k = c.below(extents.len());
        strides[k] = 0;
    }
    strides
}

fn strided<I: Iterator<Item = u8>>(
    shape: &[usize],
    c: &mut Choices<'_, I>,
    role: Role,
) -> (String, relayout::Result<Layout>) {
    let strides = assign_strides(shape, c, role);
    if c.one_in(2) {
        let join = |v: &[String]| v.join(",");
        let s: Vec<String> = shape.iter().map(|n| n.to_string()).collect();
        let d: Vec<String> = strides.iter().map(|n| n.to_string()).collect();
        let text = if shape.len() == 1 {
            format!("cute:{}:{}", s[0], d[0])
        } else {
            format!("cute:({}):({})", join(&s), join(&d))
        };
        return parsed(text);
    }
    let text = format!("Layout::from_strides(&{shape:?}, &{strides:?})");
    (text, Layout::from_strides(shape, &strides))
}

/// `n` as a product of 1 to 3 factors (1s allowed), smallest-significance first.
fn factors<I: Iterator<Item = u8>>(n: usize, c: &mut Choices<'_, I>) -> Vec<usize> {
    let count = 1 + c.below(3);
    let mut rest = n;
    let mut out = Vec::new();
    for _ in 1..count {
        let divisors: Vec<usize> = (1..=rest).filter(|f| rest.is_multiple_of(*f)).collect();
        let f = c.pick(&divisors);
        out.push(f);
        rest /= f;
    }
    out.push(rest);
    out
}

/// CuTe (or MoYe) text: each dim a mode of 1 to 3 sub-modes, strides assigned over all leaves.
fn cute<I: Iterator<Item = u8>>(
    shape: &[usize],
    c: &mut Choices<'_, I>,
    role: Role,
    moye: bool,
) -> String {
    cute_with(shape, c, moye, |leaves, c| assign_strides(leaves, c, role))
}

/// [`cute`] with the strides of the leaves from `strides`.
fn cute_with<I: Iterator<Item = u8>>(
    shape: &[usize],
    c: &mut Choices<'_, I>,
    moye: bool,
    strides: impl FnOnce(&[usize], &mut Choices<'_, I>) -> Vec<i64>,
) -> String {
    let modes: Vec<Vec<usize>> = shape.iter().map(|&n| factors(n, c)).collect();
    let leaves: Vec<usize> = modes.iter().flatten().copied().collect();
    let strides = strides(&leaves, c);
    let static_marker = moye && c.one_in(2);
    let int = |v: i64| {
        if static_marker {
            format!("_{v}")
        } else {
            v.to_string()
        }
    };
    let sep = if moye { ", " } else { "," };
    let tuple = |items: Vec<String>| {
        if moye && items.len() == 1 {
            format!("({},)", items[0])
        } else {
            format!("({})", items.join(sep))
        }
    };
    let mut k = 0;
    let mut shape_modes = Vec::new();
    let mut stride_modes = Vec::new();
    for mode in &modes {
        let s: Vec<String> = mode.iter().map(|&v| int(v as i64)).collect();
        let d: Vec<String> = strides[k..k + mode.len()].iter().map(|&v| int(v)).collect();
        k += mode.len();
        if mode.len() == 1 {
            shape_modes.push(s[0].clone());
            stride_modes.push(d[0].clone());
        } else {
            shape_modes.push(tuple(s));
            stride_modes.push(tuple(d));
        }
    }
    let prefix = if moye { "moye" } else { "cute" };
    if shape.len() == 1 && modes[0].len() == 1 && c.one_in(2) {
        return format!("{prefix}:{}:{}", shape_modes[0], stride_modes[0]);
    }
    if shape.len() == 1 && modes[0].len() == 1 {
        // A rank-1 layout written as a one-tuple.
        return format!("{prefix}:{}:{}", tuple(shape_modes), tuple(stride_modes));
    }
    // `(m0,m1,…)`; a single nested mode is wrapped once more, `((2,3))`, to stay one dim.
    format!(
        "{prefix}:({}):({})",
        shape_modes.join(sep),
        stride_modes.join(sep)
    )
}

/// A CuTe (or MoYe) layout, half of them compact, swizzled by `Sw<B,M,S>` (B up to 3, M up to 4,
/// |S| from B to B + 2, either sign), with no offset part, `_0`, a small multiple of `2^M` or any
/// small offset.
fn swizzled<I: Iterator<Item = u8>>(shape: &[usize], c: &mut Choices<'_, I>, role: Role) -> String {
    let moye = c.one_in(3);
    // Half of them compact (the leaves in a random order, no gaps), as CuTe's shared-memory
    // tiles are: those keep the swizzle's runs whole when the extents allow.
    let inner = if c.one_in(2) {
        cute_with(shape, c, moye, |leaves, c| {
            let mut strides = vec![0i64; leaves.len()];
            let mut running = 1i64;
            for k in c.permutation(leaves.len()) {
                strides[k] = running;
                running *= leaves[k] as i64;
            }
            strides
        })
    } else {
        cute(shape, c, role, moye)
    };
    let (prefix, layout) = inner.split_once(':').expect("a notation prefix");
    let b = c.below(4) as i64;
    let m = c.below(5) as i64;
    let s = (b + c.below(3) as i64).max(1) * if c.one_in(3) { -1 } else { 1 };
    // Offsets that are multiples of 2^M keep the swizzle's runs whole; others cut them.
    let offset = match c.below(4) {
        0 => String::new(),
        1 => " _0 o".to_string(),
        2 => format!(" {} o", (1 + c.below(4)) << m),
        _ => format!(" {} o", c.below(40)),
    };
    format!("{prefix}:Sw<{b},{m},{s}> o{offset} {layout}")
}

/// XLA text: a random element type and minor-to-major order, up to two tiles (sizes that need
/// not divide, a tile one rank longer than the shape, `*` or `-1` in the first tile) and `L(n)`.
///
/// The one text that may be rejected: a second tile that splits the first tile's dims unevenly
/// is [`relayout::Error::Unsupported`] (not a mixed-radix layout).
fn xla<I: Iterator<Item = u8>>(shape: &[usize], c: &mut Choices<'_, I>) -> String {
    let dtype = c.pick(&[
        "f32", "bf16", "s8", "u16", "s32", "f64", "pred", "u8", "f16", "s64", "u64", "F32",
        "f8e4m3fn", "c64", "s4", "c128",
    ]);
    let dims: Vec<String> = shape.iter().map(|n| n.to_string()).collect();
    let mut text = format!("xla:{dtype}[{}]", dims.join(","));
    if c.one_in(8) {
        return text;
    }
    let m2m: Vec<String> = c
        .permutation(shape.len())
        .iter()
        .map(|d| d.to_string())
        .collect();
    let mut attrs = String::new();
    let mut first: Vec<usize> = Vec::new();
    for t in 0..c.below(3) {
        let rank = 1 + c.below((shape.len() + 1).min(3));
        let mut sizes: Vec<usize> = (0..rank).map(|_| c.pick(&[1, 2, 3, 4, 8])).collect();
        if t == 1 && !first.is_empty() && !c.one_in(4) {
            // Sub-tiles that divide the first tile's minor dims (XLA's `T(8,128)(2,1)`); other
            // repeated tiles may split a tile unevenly, which relayout reports as unsupported.
            let rank = rank.min(first.len());
            let minor = &first[first.len() - rank..];
            sizes = minor
                .iter()
                .map(|&f| {
                    let divisors: Vec<usize> = (1..=f).filter(|d| f.is_multiple_of(*d)).collect();
                    c.pick(&divisors)
                })
                .collect();
        }
        let mut text: Vec<String> = sizes.iter().map(|n| n.to_string()).collect();
        if t == 0 && rank >= 2 && c.one_in(5) {
            let at = c.below(rank - 1);
            text[at] = c.pick(&["*", "-1"]).to_string();
        } else if t == 0 {
            first = sizes;
        }
        attrs.push_str(&format!("T({})", text.join(",")));
    }
    if c.one_in(6) {
        attrs.push_str(&format!("L({})", c.pick(&[2usize, 3, 8, 16])));
    }
    text.push_str(&format!("{{{}", m2m.join(",")));
    if !attrs.is_empty() {
        text.push(':');
        text.push_str(&attrs);
    }
    text.push('}');
    text
}

/// A TVM index map: per dim `x`, `//` and `%` splits (padding when they do not divide), left
/// padding `(x + b)`, a three-way split, or a fused sum with the next dim; outputs in any order.
fn tvm<I: Iterator<Item = u8>>(shape: &[usize], c: &mut Choices<'_, I>) -> String {
    let names: Vec<String> = match c.below(3) {
        0 => ["i", "j", "k", "l"].map(String::from).to_vec(),
        1 => ["n", "c", "h", "w"].map(String::from).to_vec(),
        _ => (0..4).map(|d| format!("ax{d}")).collect(),
    };
    let names = &names[..shape.len()];
    let shape_text: Vec<String> = shape.iter().map(|n| n.to_string()).collect();
    let head = format!("tvm:[{}]", shape_text.join(", "));
    let rank = shape.len();
    if rank >= 2 && c.one_in(8) {
        // `*rest` binds every dim but the last, which is split.
        let x = &names[rank - 1];
        let k = c.pick(&[2usize, 3, 4, 8]);
        return format!("{head} lambda *rest, {x}: [*rest, {x} // {k}, {x} % {k}]");
    }
    let mut outputs: Vec<String> = Vec::new();
    let mut d = 0;
    while d < rank {
        let x = &names[d];
        match c.below(6) {
            0 | 1 => outputs.push(x.clone()),
            2 => {
                let k = c.pick(&[2usize, 3, 4, 8]);
                outputs.push(format!("{x} // {k}"));
                outputs.push(format!("{x} % {k}"));
            }
            3 => {
                let k = c.pick(&[2usize, 3, 4, 8]);
                let b = 1 + c.below(k - 1);
                outputs.push(format!("({x} + {b}) // {k}"));
                outputs.push(format!("({x} + {b}) % {k}"));
            }
            4 => {
                let (a, b) = (c.pick(&[2usize, 3, 4]), c.pick(&[2usize, 3, 4]));
                outputs.push(format!("{x} // {}", a * b));
                outputs.push(format!("{x} // {b} % {a}"));
                outputs.push(format!("{x} % {b}"));
            }
            _ if d + 1 < rank => {
                let y = &names[d + 1];
                let sum = format!("({x} * {} + {y})", shape[d + 1]);
                let k = c.pick(&[2usize, 3, 4, 8]);
                outputs.push(format!("{sum} // {k}"));
                outputs.push(format!("{sum} % {k}"));
                d += 1;
            }
            _ => outputs.push(x.clone()),
        }
        d += 1;
    }
    let order = c.permutation(outputs.len());
    let outputs: Vec<String> = order.iter().map(|&k| outputs[k].clone()).collect();
    let params = names.join(", ");
    if c.one_in(3) {
        format!(
            "{head} T.index_map(lambda {params}: ({},))",
            outputs.join(", ")
        )
    } else {
        format!("{head} lambda {params}: [{}]", outputs.join(", "))
    }
}

/// Morello text: per dim (fastest first) an optional OddEven strip that divides the extent, up
/// to two Packed dims that divide what remains or (once) take a remainder smaller than their
/// size, and a Dynamic for what remains (sometimes also when only 1 remains); the dims' lists
/// interleaved.
fn morello<I: Iterator<Item = u8>>(shape: &[usize], c: &mut Choices<'_, I>) -> String {
    // Per dim, physical dims slowest first.
    let mut per_dim: Vec<Vec<String>> = Vec::new();
    for (d, &n) in shape.iter().enumerate() {
        let mut fastest_first: Vec<String> = Vec::new();
        let mut rest = n;
        if n > 1 && c.one_in(4) {
            let strip = c.pick(&[2usize, 4, 6, 8]);
            if rest.is_multiple_of(strip) {
                rest /= strip;
                fastest_first.push(format!("{d} oe({strip})"));
            }
        }
        for _ in 0..c.below(3) {
            if rest == 1 {
                break;
            }
            let size = c.pick(&[2usize, 3, 4, 8, 16]);
            if rest.is_multiple_of(size) || size > rest {
                // A Packed larger than what remains takes it and leaves 1.
                rest /= size.min(rest);
                fastest_first.push(format!("{d} p({size})"));
            }
        }
        if rest > 1 || c.one_in(3) || (n == 1 && fastest_first.is_empty() && !c.one_in(3)) {
            fastest_first.push(d.to_string());
        }
        fastest_first.reverse();
        per_dim.push(fastest_first);
    }
    let mut order = Vec::new();
    let mut next = vec![0usize; shape.len()];
    loop {
        let open: Vec<usize> = (0..shape.len())
            .filter(|&d| next[d] < per_dim[d].len())
            .collect();
        if open.is_empty() {
            break;
        }
        let d = c.pick(&open);
        order.push(per_dim[d][next[d]].clone());
        next[d] += 1;
    }
    let dims: Vec<String> = shape.iter().map(|n| n.to_string()).collect();
    format!("morello:[{}] [{}]", dims.join(","), order.join(", "))
}

/// Hand-built digits: each dim (or a fused pair of dims) split into a chain of 1 to 3 digits
/// that need not divide the extent, with an optional shift; strides in any order with gaps;
/// negative and (for a source) zero strides; a top digit with a modulo that is inactive or (for
/// a source) wraps; a base offset; an optional declared buffer length.
fn digits<I: Iterator<Item = u8>>(
    shape: &[usize],
    c: &mut Choices<'_, I>,
    role: Role,
) -> (String, relayout::Result<Layout>) {
    let mut digits: Vec<Digit> = Vec::new();
    let mut counts: Vec<usize> = Vec::new();
    let mut d = 0;
    while d < shape.len() {
        let (source, extent) = if d + 1 < shape.len() && c.one_in(5) {
            let s = Source::fused([(d, shape[d + 1] as i64), (d + 1, 1)]);
            let e = shape[d] * shape[d + 1];
            d += 2;
            (s, e)
        } else {
            d += 1;
            (Source::Dim(d - 1), shape[d - 1])
        };
        let shift = if c.one_in(6) { 1 + c.below(3) } else { 0 };
        let mut div = 1;
        for _ in 0..c.below(3) {
            let f = c.pick(&[2usize, 3, 4, 5]);
            digits.push(Digit {
                source: source.clone(),
                shift: shift as i64,
                div,
                ext: Some(f),
                stride: 0,
            });
            counts.push(f);
            div *= f;
        }
        let count = (extent - 1 + shift) / div + 1;
        let ext = match c.below(8) {
            0 => Some(count),
            1 if role == Role::Source && count > 1 => Some(count - 1),
            _ => None,
        };
        digits.push(Digit {
            source,
            shift: shift as i64,
            div,
            ext,
            stride: 0,
        });
        counts.push(count);
    }
    let strides = assign_strides(&counts, c, role);
    for (digit, s) in digits.iter_mut().zip(strides) {
        digit.stride = s;
    }
    let base = c.pick(&[0i64, 0, 0, 3, -2]);
    let padded = if c.one_in(3) {
        Some(counts.iter().product::<usize>() + c.below(3))
    } else {
        None
    };
    let text = format!("Layout::from_parts(&{shape:?}, vec!{digits:?}, {base}, {padded:?})");
    (text, Layout::from_parts(shape, digits, base, padded))
}
