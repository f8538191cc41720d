//! Converting elements in registers, by the rules of [`crate::convert`]: a vector of source
//! elements is widened into float or integer lanes, converted there (with the affine map, if
//! any) and narrowed into the destination's bytes, which are stored. Kernels call
//! [`Emitter::store_converted`] where they would store a vector, so every kernel converts on
//! the way; the element-wise paths convert a vector holding one element.
//!
//! Each step is vector code where x86-64 has the instruction (integer widening and saturating
//! narrowing, `f32x4` ↔ `i32x4`, `f32x4` ↔ `f64x2`); `f16` and `bf16` are integer arithmetic on
//! their bits; the conversions between 64-bit integers and floats go lane by lane (two lanes
//! per vector) in scalar registers. Integers wider than a float's significand convert through
//! round-to-odd intermediates, so each conversion rounds once.
//!
//! A per-index affine map reads each lane's scale and shift from the map's table (scales, then
//! shifts, in the compute type) at the emitter's table pointer, which the loops advance with
//! the index along the map's dim: one vector load when the lanes step through the index one by
//! one, one splat when they share it, lane by lane otherwise ([`LaneIndex`]).

use std::collections::HashMap;

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{types, InstBuilder, MemFlagsData, Type, Value};

use super::{Emitter, VECTOR_BYTES};
use crate::convert::{Arithmetic, Conversion, Kind, PerIndex};
use crate::dtype::DType;

/// Float lanes a conversion computes in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Float {
    F32,
    F64,
}

/// Register `j` of a converted run of `n` elements, whose lanes take their scales and shifts
/// at `index`.
#[derive(Debug, Clone, Copy)]
struct Run {
    j: usize,
    n: usize,
    index: LaneIndex,
}

/// The half of a per-index map's table: its scales, then its shifts.
#[derive(Debug, Clone, Copy)]
enum TableColumn {
    Scales,
    Shifts,
}

/// How a read of a per-index map's table fills a vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum TableRead {
    /// Consecutive entries, one per lane.
    Vector,
    /// One entry in every lane.
    Splat,
}

/// How a 64-bit integer rounds into f64 lanes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Rounding {
    /// To nearest, ties to even: the f64 is the value the conversion computes with.
    Nearest,
    /// To odd: the f64 is rounded once more, to a narrower float, which then rounds once.
    Odd,
}

/// An integer type: width and signedness.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Int {
    bits: u32,
    signed: bool,
}

impl Int {
    fn min(self) -> i128 {
        if self.signed {
            -(1i128 << (self.bits - 1))
        } else {
            0
        }
    }

    fn max(self) -> i128 {
        (1i128 << (self.bits - self.signed as u32)) - 1
    }
}

/// How the generated code computes a conversion, decided once from the two types.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Route {
    /// Integer to integer: clamp in the source type, then widen or narrow.
    Integer { from: Int, to: Int },
    /// Through float lanes: decode the source into `decode` lanes, move to `compute` lanes,
    /// apply the affine map there, encode the destination from them.
    Float {
        from: DType,
        to: DType,
        decode: Float,
        /// How 64-bit integers round into f64 lanes.
        wide: Rounding,
        compute: Float,
        affine: Option<Affine>,
    },
}

/// The affine map of a float route.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Affine {
    /// One scale and shift for every element.
    Tensor { scale: f64, shift: f64, adds: Shift },
    /// A scale and shift per index, read from the map's table.
    PerIndex(Shift),
}

/// Whether a map's shifts are added, or left out because adding them changes nothing the
/// destination keeps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Shift {
    /// Added.
    Add,
    /// Every shift is -0 (adding it gives back every value, -0 and NaN included), or ±0 while
    /// the destination is an integer type (where only the sign of a zero could change).
    Skip,
}

impl Shift {
    /// How shifts `shifts` (the one of a per-tensor map, or every one of a per-index map) are
    /// applied on the way to `to`.
    fn of(mut shifts: impl Iterator<Item = f64>, to: DType) -> Shift {
        let integer = matches!(Kind::of(to), Some(Kind::Int { .. }));
        let void = |b: f64| b.to_bits() == (-0.0f64).to_bits() || (b == 0.0 && integer);
        match shifts.all(void) {
            true => Shift::Skip,
            false => Shift::Add,
        }
    }
}

/// Where the lanes of a converted run find their scales and shifts in a per-index map's
/// table: lane `m` at index `first + m · step`, counted from the emitter's table pointer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct LaneIndex {
    /// The index of the first lane.
    pub first: i64,
    /// Indices from one lane to the next.
    pub step: i64,
}

impl LaneIndex {
    /// Lanes that all take the index at the table pointer.
    pub(super) const HERE: LaneIndex = LaneIndex { first: 0, step: 0 };
}

impl Route {
    /// The route of `c`, a conversion between two numeric types, with the per-index map `map`
    /// if there is one.
    pub(super) fn of(c: Conversion, map: Option<&PerIndex>) -> Route {
        let (from, to) = (c.from_type(), c.to_type());
        let int = |t| match Kind::of(t) {
            Some(Kind::Int { bits, signed }) => Some(Int { bits, signed }),
            _ => None,
        };
        let affine = match map {
            Some(m) => {
                let shifts = (0..m.len()).map(|i| m.scale_shift(i).1);
                Some(Affine::PerIndex(Shift::of(shifts, to)))
            }
            None => c.scale_shift().map(|(scale, shift)| Affine::Tensor {
                scale,
                shift,
                adds: Shift::of(std::iter::once(shift), to),
            }),
        };
        if let (Some(f), Some(t), None) = (int(from), int(to), affine) {
            return Route::Integer { from: f, to: t };
        }
        // Types whose every value an f32 holds exactly decode into f32 lanes; 32-bit integers
        // too when one rounding to f32 is the answer (an f32 result, or f32 arithmetic).
        let exact_in_f32 = matches!(
            from,
            DType::U8 | DType::I8 | DType::U16 | DType::I16 | DType::F16 | DType::BF16 | DType::F32
        );
        let arithmetic = affine.map(|_| match c.arithmetic() {
            Arithmetic::F32 => Float::F32,
            Arithmetic::F64 => Float::F64,
        });
        let rounds_once_to_f32 = matches!(from, DType::I32 | DType::U32)
            && (arithmetic == Some(Float::F32) || (affine.is_none() && to == DType::F32));
        let decode = if exact_in_f32 || rounds_once_to_f32 {
            Float::F32
        } else {
            Float::F64
        };
        let compute = arithmetic.unwrap_or(decode);
        let narrower = matches!(to, DType::F32 | DType::F16 | DType::BF16);
        let wide = if compute == Float::F32 || (affine.is_none() && narrower) {
            Rounding::Odd
        } else {
            Rounding::Nearest
        };
        Route::Float {
            from,
            to,
            decode,
            wide,
            compute,
            affine,
        }
    }
}

/// Vectors of one type holding consecutive elements, lane after lane.
struct Lanes {
    ty: Type,
    regs: Vec<Value>,
}

fn int_vector(bits: u32) -> Type {
    match bits {
        8 => types::I8X16,
        16 => types::I16X8,
        32 => types::I32X4,
        _ => types::I64X2,
    }
}

fn int_scalar(bits: u32) -> Type {
    match bits {
        8 => types::I8,
        16 => types::I16,
        32 => types::I32,
        _ => types::I64,
    }
}

/// Vectors of `lane_bits`-bit lanes that `n` elements fill.
fn vectors_for(n: usize, lane_bits: u32) -> usize {
    (n * lane_bits as usize).div_ceil(VECTOR_BYTES * 8)
}

impl Emitter<'_> {
    /// Converts the first `n` source elements of `vs` (16-byte vectors of consecutive
    /// elements) and stores them, as `n` destination elements, at byte offset `at` from `d`;
    /// a per-index map takes their scales and shifts from `index`.
    pub(super) fn store_converted(
        &mut self,
        route: Route,
        vs: &[Value],
        n: usize,
        d: Value,
        at: i64,
        index: LaneIndex,
    ) {
        let out = self.convert(route, vs, n, index);
        let mut bytes = n as i64 * self.dst_size;
        let mut at = at;
        for reg in out {
            if bytes >= VECTOR_BYTES as i64 {
                let (base, offset) = self.address(d, at);
                let reg = self.bitcast(types::I8X16, reg);
                self.b.ins().store(self.flags, reg, base, offset);
                at += VECTOR_BYTES as i64;
                bytes -= VECTOR_BYTES as i64;
                continue;
            }
            // The last, partly filled vector: its low bytes, in pieces of 8, 4, 2 and 1.
            let mut within = 0;
            for width in [8, 4, 2, 1] {
                while bytes >= width {
                    let lanes = self.bitcast(int_vector(width as u32 * 8), reg);
                    let x = self.b.ins().extractlane(lanes, (within / width) as u8);
                    let (base, offset) = self.address(d, at + within);
                    self.b.ins().store(self.flags, x, base, offset);
                    within += width;
                    bytes -= width;
                }
            }
            break;
        }
    }

    /// Converts and stores the one element at `s` to `d`.
    pub(super) fn convert_element(&mut self, route: Route, s: Value, d: Value) {
        // Into the low lane of a vector of 32- or 64-bit lanes (x86 moves no narrower scalar
        // into a vector register), zero-extended.
        let v = match self.src_size {
            1 | 2 => {
                let x = match self.src_size {
                    1 => self.b.ins().uload8(types::I32, self.flags, s, 0),
                    _ => self.b.ins().uload16(types::I32, self.flags, s, 0),
                };
                self.b.ins().scalar_to_vector(types::I32X4, x)
            }
            size => {
                let bits = size as u32 * 8;
                let x = self.b.ins().load(int_scalar(bits), self.flags, s, 0);
                self.b.ins().scalar_to_vector(int_vector(bits), x)
            }
        };
        self.store_converted(route, &[v], 1, d, 0, LaneIndex::HERE);
    }

    /// The destination bytes of the first `n` source elements of `v`, in 16-byte vectors (the
    /// last one partly filled when the bytes do not fill it).
    fn convert(&mut self, route: Route, vs: &[Value], n: usize, index: LaneIndex) -> Vec<Value> {
        match route {
            Route::Integer { from, to } => {
                let x = self.casts(int_vector(from.bits), vs);
                self.integer(x, n, from, to)
            }
            Route::Float {
                from,
                to,
                decode,
                wide,
                compute,
                affine,
            } => {
                let mut lanes = self.decode(vs, n, from, decode, wide);
                lanes = self.change_float(lanes, n, compute);
                match affine {
                    Some(Affine::Tensor { scale, shift, adds }) => {
                        lanes = self.affine(lanes, scale, shift, adds);
                    }
                    Some(Affine::PerIndex(shift)) => {
                        lanes = self.affine_per_index(lanes, n, index, shift);
                    }
                    None => {}
                }
                self.encode(lanes, n, to)
            }
        }
    }

    /// Integer lanes `regs` of `from` converted to `to`: clamped to the values both hold, then
    /// widened or truncated lane by lane.
    fn integer(&mut self, regs: Vec<Value>, n: usize, from: Int, to: Int) -> Vec<Value> {
        let ty = int_vector(from.bits);
        let (lo, hi) = (from.min().max(to.min()), from.max().min(to.max()));
        let mut regs: Vec<Value> = regs
            .into_iter()
            .map(|mut x| {
                if lo > from.min() {
                    let bound = self.int_splat(ty, lo);
                    x = if from.signed {
                        self.b.ins().smax(x, bound)
                    } else {
                        self.b.ins().umax(x, bound)
                    };
                }
                if hi < from.max() {
                    let bound = self.int_splat(ty, hi);
                    x = if from.signed {
                        self.b.ins().smin(x, bound)
                    } else {
                        self.b.ins().umin(x, bound)
                    };
                }
                x
            })
            .collect();
        let mut bits = from.bits;
        while bits < to.bits {
            regs = self.widen(regs, n, bits, from.signed);
            bits *= 2;
        }
        while bits > to.bits {
            regs = self.pairs(regs, |e, a, b| e.truncate(a, b, bits));
            bits /= 2;
        }
        regs
    }

    /// `value` (wrapped to the lane width) in every lane of `ty`.
    /// Each of `vs` reinterpreted as `ty`.
    fn casts(&mut self, ty: Type, vs: &[Value]) -> Vec<Value> {
        vs.iter().map(|&v| self.bitcast(ty, v)).collect()
    }

    fn int_splat(&mut self, ty: Type, value: i128) -> Value {
        let bits = ty.lane_bits();
        let value = if bits < 64 {
            value as i64 & ((1i64 << bits) - 1)
        } else {
            value as i64
        };
        let x = self.b.ins().iconst(ty.lane_type(), value);
        self.b.ins().splat(ty, x)
    }

    fn f32_splat(&mut self, x: f32) -> Value {
        let c = self.b.ins().f32const(x);
        self.b.ins().splat(types::F32X4, c)
    }

    fn f64_splat(&mut self, x: f64) -> Value {
        let c = self.b.ins().f64const(x);
        self.b.ins().splat(types::F64X2, c)
    }

    /// Integer lanes of `bits` bits widened to twice that (as many vectors as `n` elements need).
    fn widen(&mut self, regs: Vec<Value>, n: usize, bits: u32, signed: bool) -> Vec<Value> {
        let wanted = vectors_for(n, bits * 2);
        let mut out = Vec::with_capacity(wanted);
        for x in regs {
            for high in [false, true] {
                if out.len() == wanted {
                    break;
                }
                out.push(match (signed, high) {
                    (true, false) => self.b.ins().swiden_low(x),
                    (true, true) => self.b.ins().swiden_high(x),
                    (false, false) => self.b.ins().uwiden_low(x),
                    (false, true) => self.b.ins().uwiden_high(x),
                });
            }
        }
        out
    }

    /// `regs` two at a time through `join` (the last with itself when they are odd).
    fn pairs(
        &mut self,
        regs: Vec<Value>,
        mut join: impl FnMut(&mut Self, Value, Value) -> Value,
    ) -> Vec<Value> {
        regs.chunks(2)
            .map(|p| join(self, p[0], *p.get(1).unwrap_or(&p[0])))
            .collect()
    }

    /// The low halves of the `bits`-bit lanes of `a`, then of `b`, as lanes of `bits / 2`.
    fn truncate(&mut self, a: Value, b: Value, bits: u32) -> Value {
        let (lane, half) = (bits as usize / 8, bits as usize / 16);
        let mut mask = [0u8; VECTOR_BYTES];
        for (i, m) in mask.iter_mut().enumerate() {
            let (from_b, k) = (i >= VECTOR_BYTES / 2, i % (VECTOR_BYTES / 2));
            *m = ((k / half) * lane + k % half + if from_b { VECTOR_BYTES } else { 0 }) as u8;
        }
        let (a, b) = (self.bitcast(types::I8X16, a), self.bitcast(types::I8X16, b));
        let mask = self.shuffle_mask(&mask);
        let joined = self.b.ins().shuffle(a, b, mask);
        self.bitcast(int_vector(bits / 2), joined)
    }

    /// The first `n` elements of `v`, of type `from`, as float lanes of `lanes`.
    fn decode(
        &mut self,
        vs: &[Value],
        n: usize,
        from: DType,
        lanes: Float,
        wide: Rounding,
    ) -> Lanes {
        if lanes == Float::F64 {
            return match from {
                DType::F64 => Lanes {
                    ty: types::F64X2,
                    regs: self.casts(types::F64X2, vs),
                },
                DType::I32 | DType::U32 => {
                    let x = self.casts(types::I32X4, vs);
                    let wide = self.widen(x, n, 32, from == DType::I32);
                    let regs = wide
                        .into_iter()
                        .map(|w| {
                            self.lane_by_lane(w, 2, types::F64X2, |e, x| {
                                e.b.ins().fcvt_from_sint(types::F64, x)
                            })
                        })
                        .collect();
                    Lanes {
                        ty: types::F64X2,
                        regs,
                    }
                }
                DType::I64 | DType::U64 => {
                    let signed = from == DType::I64;
                    let regs = self
                        .casts(types::I64X2, vs)
                        .into_iter()
                        .map(|x| {
                            self.lane_by_lane(x, 2, types::F64X2, |e, x| match (wide, signed) {
                                (Rounding::Odd, _) => e.int64_to_f64_odd(x, signed),
                                (Rounding::Nearest, true) => {
                                    e.b.ins().fcvt_from_sint(types::F64, x)
                                }
                                (Rounding::Nearest, false) => {
                                    e.b.ins().fcvt_from_uint(types::F64, x)
                                }
                            })
                        })
                        .collect();
                    Lanes {
                        ty: types::F64X2,
                        regs,
                    }
                }
                _ => {
                    let single = self.decode(vs, n, from, Float::F32, wide);
                    self.change_float(single, n, Float::F64)
                }
            };
        }
        let regs = match from {
            DType::F32 => self.casts(types::F32X4, vs),
            DType::I32 | DType::U32 => {
                let ints = self.casts(types::I32X4, vs);
                ints.into_iter()
                    .map(|x| match from {
                        DType::I32 => self.b.ins().fcvt_from_sint(types::F32X4, x),
                        _ => self.b.ins().fcvt_from_uint(types::F32X4, x),
                    })
                    .collect()
            }
            DType::F16 => {
                let x = self.casts(types::I16X8, vs);
                let wide = self.widen(x, n, 16, false);
                wide.into_iter().map(|h| self.half_to_single(h)).collect()
            }
            DType::BF16 => {
                let wanted = vectors_for(n, 32);
                let mut regs = Vec::with_capacity(wanted);
                for x in self.casts(types::I16X8, vs) {
                    let x = self.quiet_brain_nans(x);
                    for high in [false, true] {
                        if regs.len() < wanted {
                            regs.push(self.brain_half_to_single(x, high));
                        }
                    }
                }
                regs
            }
            _ => {
                // The 8- and 16-bit integers: widened to i32, whose conversion is exact.
                let Some(Kind::Int { bits, signed }) = Kind::of(from) else {
                    unreachable!("decode into f32 lanes of {from}")
                };
                let mut regs = self.casts(int_vector(bits), vs);
                let mut b = bits;
                while b < 32 {
                    regs = self.widen(regs, n, b, signed);
                    b *= 2;
                }
                regs.into_iter()
                    .map(|x| self.b.ins().fcvt_from_sint(types::F32X4, x))
                    .collect()
            }
        };
        Lanes {
            ty: types::F32X4,
            regs,
        }
    }

    /// Float lanes moved to `to`: promoted exactly, or demoted rounding to nearest even.
    fn change_float(&mut self, lanes: Lanes, n: usize, to: Float) -> Lanes {
        match (lanes.ty == types::F32X4, to) {
            (true, Float::F64) => {
                let wanted = vectors_for(n, 64);
                let mut regs = Vec::with_capacity(wanted);
                for x in lanes.regs {
                    regs.push(self.b.ins().fvpromote_low(x));
                    if regs.len() < wanted {
                        let high = self.high_half(x);
                        regs.push(self.b.ins().fvpromote_low(high));
                    }
                }
                regs.truncate(wanted);
                Lanes {
                    ty: types::F64X2,
                    regs,
                }
            }
            (false, Float::F32) => {
                let regs = self.pairs(lanes.regs, |e, a, b| {
                    let (a, b) = (e.b.ins().fvdemote(a), e.b.ins().fvdemote(b));
                    e.low_halves(a, b)
                });
                Lanes {
                    ty: types::F32X4,
                    regs,
                }
            }
            _ => lanes,
        }
    }

    /// `x` with its high 8 bytes moved to the low 8.
    fn high_half(&mut self, x: Value) -> Value {
        let ty = self.b.func.dfg.value_type(x);
        let mut mask = [0u8; VECTOR_BYTES];
        for (i, m) in mask.iter_mut().enumerate() {
            *m = (8 + i % 8) as u8;
        }
        let bytes = self.bitcast(types::I8X16, x);
        let mask = self.shuffle_mask(&mask);
        let moved = self.b.ins().shuffle(bytes, bytes, mask);
        self.bitcast(ty, moved)
    }

    /// The low 8 bytes of `a`, then the low 8 bytes of `b`.
    fn low_halves(&mut self, a: Value, b: Value) -> Value {
        let ty = self.b.func.dfg.value_type(a);
        let mut mask = [0u8; VECTOR_BYTES];
        for (i, m) in mask.iter_mut().enumerate() {
            *m = if i < 8 { i as u8 } else { (i + 8) as u8 };
        }
        let (a, b) = (self.bitcast(types::I8X16, a), self.bitcast(types::I8X16, b));
        let mask = self.shuffle_mask(&mask);
        let joined = self.b.ins().shuffle(a, b, mask);
        self.bitcast(ty, joined)
    }

    /// `scale · x + shift` on every lane, each operation rounded.
    fn affine(&mut self, lanes: Lanes, scale: f64, shift: f64, adds: Shift) -> Lanes {
        let splat = |e: &mut Self, v: f64| match lanes.ty == types::F32X4 {
            true => e.f32_splat(v as f32),
            false => e.f64_splat(v),
        };
        let a = splat(self, scale);
        let b = match adds {
            Shift::Add => Some(splat(self, shift)),
            Shift::Skip => None,
        };
        let regs = lanes
            .regs
            .into_iter()
            .map(|x| {
                let y = self.b.ins().fmul(x, a);
                match b {
                    Some(b) => self.b.ins().fadd(y, b),
                    None => y,
                }
            })
            .collect();
        Lanes { regs, ..lanes }
    }

    /// `scale[i] · x + shift[i]` on the first `n` lanes, each operation rounded, with lane `m`'s
    /// scale and shift from index `index.first + m · index.step` of the map's table.
    fn affine_per_index(
        &mut self,
        lanes: Lanes,
        n: usize,
        index: LaneIndex,
        shift: Shift,
    ) -> Lanes {
        let ty = lanes.ty;
        let regs = self.sharing_table_loads(|e| {
            lanes
                .regs
                .into_iter()
                .enumerate()
                .map(|(j, x)| {
                    let run = Run { j, n, index };
                    let a = e.table_lanes(ty, run, TableColumn::Scales);
                    let y = e.b.ins().fmul(x, a);
                    match shift {
                        Shift::Add => {
                            let b = e.table_lanes(ty, run, TableColumn::Shifts);
                            e.b.ins().fadd(y, b)
                        }
                        Shift::Skip => y,
                    }
                })
                .collect()
        });
        Lanes { regs, ty }
    }

    /// The scales or shifts of the lanes of register `run.j` (float lanes of `ty`) of a run of
    /// `run.n` elements.
    fn table_lanes(&mut self, ty: Type, run: Run, column: TableColumn) -> Value {
        let Run { j, n, index } = run;
        let table = self
            .table
            .expect("a per-index map's kernel has its table pointer");
        let per_reg = ty.lane_count() as usize;
        let first = (j * per_reg) as i64;
        let count = per_reg.min(n.saturating_sub(j * per_reg));
        let bytes = self.index_bytes;
        let table_at = match column {
            TableColumn::Scales => 0,
            TableColumn::Shifts => self.index_len * bytes,
        };
        let at = |m: i64| table_at + (index.first + m * index.step) * bytes;
        // Lanes that share one index share its splat.
        if index.step == 0 {
            return self.table_read(table, at(0), ty, TableRead::Splat);
        }
        if index.step == 1 && count == per_reg {
            return self.table_read(table, at(first), ty, TableRead::Vector);
        }
        // Lane by lane; lanes past the `n` elements stay 0 (nothing is read for them).
        let mut v = match per_reg {
            4 => self.f32_splat(0.0),
            _ => self.f64_splat(0.0),
        };
        for m in 0..count {
            let (base, offset) = self.address(table, at(first + m as i64));
            let x = self.b.ins().load(ty.lane_type(), self.flags, base, offset);
            v = self.b.ins().insertlane(v, x, m as u8);
        }
        v
    }

    /// The table entries at byte `at` from `table` as a vector of `ty`: `ty`'s lanes of
    /// consecutive entries, or one entry in every lane. Within
    /// [`sharing_table_loads`](Self::sharing_table_loads), a read already emitted is reused.
    fn table_read(&mut self, table: Value, at: i64, ty: Type, read: TableRead) -> Value {
        let key = (table, at, ty, read);
        if let Some(&v) = self.table_reads.as_ref().and_then(|r| r.get(&key)) {
            return v;
        }
        let (base, offset) = self.address(table, at);
        let v = match read {
            TableRead::Vector => self.b.ins().load(ty, self.flags, base, offset),
            TableRead::Splat => {
                let x = self.b.ins().load(ty.lane_type(), self.flags, base, offset);
                self.b.ins().splat(ty, x)
            }
        };
        if let Some(reads) = &mut self.table_reads {
            reads.insert(key, v);
        }
        v
    }

    /// Runs `f`, which emits straight-line code (no blocks; checked in debug builds), reading
    /// each table entry it needs once: tiles whose rows take the same scales load them once,
    /// not once per row.
    pub(super) fn sharing_table_loads<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        if self.table_reads.is_some() {
            return f(self);
        }
        let block = self.b.current_block();
        self.table_reads = Some(HashMap::new());
        let r = f(self);
        self.table_reads = None;
        debug_assert_eq!(
            self.b.current_block(),
            block,
            "table reads shared across blocks"
        );
        r
    }

    /// Float lanes encoded as the first `n` elements of type `to`, in 16-byte vectors.
    fn encode(&mut self, lanes: Lanes, n: usize, to: DType) -> Vec<Value> {
        let single = lanes.ty == types::F32X4;
        match to {
            DType::F32 if single => lanes.regs,
            DType::F64 => self.change_float(lanes, n, Float::F64).regs,
            DType::F32 => self.change_float(lanes, n, Float::F32).regs,
            DType::F16 | DType::BF16 => {
                let singles = if single {
                    lanes.regs
                } else {
                    self.pairs(lanes.regs, |e, a, b| {
                        let (a, b) = (e.demote_to_odd(a), e.demote_to_odd(b));
                        e.low_halves(a, b)
                    })
                };
                let bits: Vec<Value> = singles
                    .into_iter()
                    .map(|x| {
                        let x = self.bitcast(types::I32X4, x);
                        match to {
                            DType::F16 => self.single_to_half(x),
                            _ => self.single_to_brain(x),
                        }
                    })
                    .collect();
                self.pairs(bits, |e, a, b| e.b.ins().unarrow(a, b))
            }
            _ => {
                let Some(Kind::Int { bits, signed }) = Kind::of(to) else {
                    unreachable!("encode {to}")
                };
                let target = Int { bits, signed };
                let regs: Vec<Value> = lanes
                    .regs
                    .into_iter()
                    .map(|x| self.b.ins().nearest(x))
                    .collect();
                if single && bits <= 32 {
                    return self.single_to_small_int(regs, target);
                }
                // Lane by lane into 64-bit integers (saturating, NaN to 0), then narrowed.
                let from = Int {
                    bits: 64,
                    signed: to != DType::U64,
                };
                let per_reg = if single { 4 } else { 2 };
                let mut wide = Vec::new();
                for x in regs {
                    for half in 0..per_reg / 2 {
                        wide.push(self.lanes_to_i64(x, half * 2, from.signed));
                    }
                }
                wide.truncate(vectors_for(n, 64));
                self.integer(wide, n, from, target)
            }
        }
    }

    /// Lanes `first` and `first + 1` of float vector `x` as saturated 64-bit integers.
    fn lanes_to_i64(&mut self, x: Value, first: u8, signed: bool) -> Value {
        let zero = self.int_splat(types::I64X2, 0);
        let mut out = zero;
        for i in 0..2 {
            let lane = self.b.ins().extractlane(x, first + i);
            let int = if signed {
                self.b.ins().fcvt_to_sint_sat(types::I64, lane)
            } else {
                self.b.ins().fcvt_to_uint_sat(types::I64, lane)
            };
            out = self.b.ins().insertlane(out, int, i);
        }
        out
    }

    /// Rounded f32 lanes (`regs`) as integers of `to` (at most 32 bits): converted (NaN to 0)
    /// and narrowed with saturating packs.
    fn single_to_small_int(&mut self, regs: Vec<Value>, to: Int) -> Vec<Value> {
        let ints: Vec<Value> = regs
            .into_iter()
            .map(|x| match to {
                Int {
                    bits: 32,
                    signed: false,
                } => self.b.ins().fcvt_to_uint_sat(types::I32X4, x),
                Int { bits: 32, .. } => self.b.ins().fcvt_to_sint_sat(types::I32X4, x),
                _ => self.narrow_lanes_to_i32(x, to),
            })
            .collect();
        match to.bits {
            32 => ints,
            16 => self.pairs(ints, |e, a, b| match to.signed {
                true => e.b.ins().snarrow(a, b),
                false => e.b.ins().unarrow(a, b),
            }),
            _ => {
                let halves = self.pairs(ints, |e, a, b| e.b.ins().snarrow(a, b));
                self.pairs(halves, |e, a, b| match to.signed {
                    true => e.b.ins().snarrow(a, b),
                    false => e.b.ins().unarrow(a, b),
                })
            }
        }
    }

    /// Rounded f32 lanes as i32 lanes for an integer type `to` of at most 16 bits, which the
    /// saturating packs then narrow: every lane that `to` holds exactly, larger ones at or
    /// above `to`'s maximum, smaller ones at or below its minimum, NaN to 0 (or, for unsigned
    /// `to`, to a negative value the packs make 0).
    fn narrow_lanes_to_i32(&mut self, x: Value, to: Int) -> Value {
        if !cfg!(target_arch = "x86_64") {
            return self.b.ins().fcvt_to_sint_sat(types::I32X4, x);
        }
        // On x86-64, `cvttps2dq` alone: lanes above `to`'s maximum are lowered to it first
        // (that conversion gives i32::MIN for NaN and lanes out of i32's range, which the
        // packs saturate to the minimum), and NaN lanes of a signed `to` are zeroed. Cranelift's
        // saturating conversion costs seven instructions; this costs two (unsigned) or four.
        let max = self.f32_splat(to.max() as f32);
        let above = self.b.ins().fcmp(FloatCC::LessThan, max, x);
        let above = self.bitcast(types::F32X4, above);
        // `max` where it is below the lane; NaN lanes stay NaN (x86 `minps max, x`).
        let mut x = self.b.ins().bitselect(above, max, x);
        if to.signed {
            let ordered = self.b.ins().fcmp(FloatCC::Equal, x, x);
            let ordered = self.bitcast(types::F32X4, ordered);
            x = self.b.ins().band(x, ordered);
        }
        self.b.ins().x86_cvtt2dq(types::I32X4, x)
    }

    /// A vector of `ty` whose lane `i` (of `count`) is `f(lane i of x)`.
    fn lane_by_lane(
        &mut self,
        x: Value,
        count: u8,
        ty: Type,
        f: impl Fn(&mut Self, Value) -> Value,
    ) -> Value {
        let mut out = if ty.lane_type().is_float() {
            self.f64_splat(0.0)
        } else {
            self.int_splat(ty, 0)
        };
        for i in 0..count {
            let lane = self.b.ins().extractlane(x, i);
            let y = f(self, lane);
            out = self.b.ins().insertlane(out, y, i);
        }
        out
    }

    /// A 64-bit integer as an f64 rounded to odd: the integer's top 53 bits, the lowest of them
    /// set if any bit below was (so that a later rounding to a narrower float rounds once).
    fn int64_to_f64_odd(&mut self, x: Value, signed: bool) -> Value {
        let negative = if signed {
            Some(self.b.ins().icmp_imm_s(IntCC::SignedLessThan, x, 0))
        } else {
            None
        };
        let magnitude = match negative {
            Some(neg) => {
                let minus = self.b.ins().ineg(x);
                self.b.ins().select(neg, minus, x)
            }
            None => x,
        };
        let zeros = self.b.ins().clz(magnitude);
        let sixty_four = self.b.ins().iconst(types::I64, 64);
        let width = self.b.ins().isub(sixty_four, zeros);
        let excess = self.b.ins().iadd_imm_s(width, -53);
        let zero = self.b.ins().iconst(types::I64, 0);
        let shift = self.b.ins().smax(excess, zero);
        let one = self.b.ins().iconst(types::I64, 1);
        let below = self.b.ins().ishl(one, shift);
        let below = self.b.ins().iadd_imm_s(below, -1);
        let dropped = self.b.ins().band(magnitude, below);
        let sticky = self.b.ins().icmp_imm_s(IntCC::NotEqual, dropped, 0);
        let sticky = self.b.ins().uextend(types::I64, sticky);
        let kept = self.b.ins().ushr(magnitude, shift);
        let kept = self.b.ins().bor(kept, sticky);
        let value = self.b.ins().fcvt_from_sint(types::F64, kept);
        let exponent = self.b.ins().iadd_imm_s(shift, 1023);
        let exponent = self.b.ins().ishl_imm_u(exponent, 52);
        let scale = self
            .b
            .ins()
            .bitcast(types::F64, MemFlagsData::new(), exponent);
        let value = self.b.ins().fmul(value, scale);
        match negative {
            Some(neg) => {
                let minus = self.b.ins().fneg(value);
                self.b.ins().select(neg, minus, value)
            }
            None => value,
        }
    }

    /// f64 lanes demoted to f32 rounding to odd (truncated, the last bit set when inexact), in
    /// lanes 0 and 1: a later rounding to f16 or bf16 then rounds once.
    fn demote_to_odd(&mut self, x: Value) -> Value {
        let nearest = self.b.ins().fvdemote(x);
        let back = self.b.ins().fvpromote_low(nearest);
        let inexact = self.b.ins().fcmp(FloatCC::NotEqual, back, x);
        let ordered = self.b.ins().fcmp(FloatCC::Ordered, x, x);
        let fix = self.b.ins().band(inexact, ordered);
        let (back_abs, x_abs) = (self.b.ins().fabs(back), self.b.ins().fabs(x));
        let below = self.b.ins().fcmp(FloatCC::LessThan, back_abs, x_abs);
        let (fix, below) = (self.even_lanes(fix), self.even_lanes(below));
        let bits = self.bitcast(types::I32X4, nearest);
        let one = self.int_splat(types::I32X4, 1);
        let low = self.b.ins().band(bits, one);
        let zero = self.int_splat(types::I32X4, 0);
        let even = self.b.ins().icmp(IntCC::Equal, low, zero);
        let minus_one = self.int_splat(types::I32X4, -1);
        let step = self.b.ins().bitselect(below, one, minus_one);
        let fix = self.b.ins().band(fix, even);
        let step = self.b.ins().band(step, fix);
        let odd = self.b.ins().iadd(bits, step);
        self.bitcast(types::F32X4, odd)
    }

    /// The low 32 bits of each 64-bit lane of mask `m`, in lanes 0 and 1 of an i32x4.
    fn even_lanes(&mut self, m: Value) -> Value {
        let mut mask = [0u8; VECTOR_BYTES];
        for (i, b) in mask.iter_mut().enumerate() {
            *b = ((i / 4 % 2) * 8 + i % 4) as u8;
        }
        let bytes = self.bitcast(types::I8X16, m);
        let mask = self.shuffle_mask(&mask);
        let lanes = self.b.ins().shuffle(bytes, bytes, mask);
        self.bitcast(types::I32X4, lanes)
    }

    /// f16 bits (zero-extended in i32 lanes) as f32 lanes.
    fn half_to_single(&mut self, h: Value) -> Value {
        let magnitude_mask = self.int_splat(types::I32X4, 0x7fff);
        let em = self.b.ins().band(h, magnitude_mask);
        let sign = self.b.ins().bxor(h, em);
        let sign = self.b.ins().ishl_imm_u(sign, 16);
        let shifted = self.b.ins().ishl_imm_u(em, 13);
        // Finite values, subnormals included: the bits as a smaller f32, scaled by 2^112.
        let small = self.bitcast(types::F32X4, shifted);
        let scale = self.f32_splat(f32::from_bits(0x7780_0000));
        let finite = self.b.ins().fmul(small, scale);
        let finite = self.bitcast(types::I32X4, finite);
        // ±∞ and NaN: all-ones exponent, the fraction kept, NaNs made quiet.
        let exponent = self.int_splat(types::I32X4, 0x7f80_0000);
        let special = self.b.ins().bor(shifted, exponent);
        let inf = self.int_splat(types::I32X4, 0x7c00);
        let is_nan = self.b.ins().icmp(IntCC::SignedGreaterThan, em, inf);
        let quiet = self.int_splat(types::I32X4, 0x0040_0000);
        let quiet = self.b.ins().band(is_nan, quiet);
        let special = self.b.ins().bor(special, quiet);
        let largest = self.int_splat(types::I32X4, 0x7bff);
        let is_special = self.b.ins().icmp(IntCC::SignedGreaterThan, em, largest);
        let bits = self.b.ins().bitselect(is_special, special, finite);
        let bits = self.b.ins().bor(bits, sign);
        self.bitcast(types::F32X4, bits)
    }

    /// bf16 bits with every NaN's quiet bit set (done on the 16-bit lanes, before widening,
    /// where a vector holds twice as many).
    fn quiet_brain_nans(&mut self, x: Value) -> Value {
        let abs = self.int_splat(types::I16X8, 0x7fff);
        let magnitude = self.b.ins().band(x, abs);
        let inf = self.int_splat(types::I16X8, 0x7f80);
        let is_nan = self.b.ins().icmp(IntCC::SignedGreaterThan, magnitude, inf);
        let quiet = self.int_splat(types::I16X8, 0x0040);
        let quiet = self.b.ins().band(is_nan, quiet);
        self.b.ins().bor(x, quiet)
    }

    /// The low (or high) four bf16 lanes of `x` as f32 lanes: each the high half of a 32-bit
    /// lane whose low half is zero (one unpack instruction).
    fn brain_half_to_single(&mut self, x: Value, high: bool) -> Value {
        let mut mask = [0u8; VECTOR_BYTES];
        let first = if high { 8 } else { 0 };
        for (i, m) in mask.iter_mut().enumerate() {
            let (word, byte) = (i / 4, i % 4);
            // Bytes 0 and 1 of each lane from the zero vector, 2 and 3 from `x`: the pattern
            // of `punpcklwd`/`punpckhwd` (zero, x).
            *m = match byte {
                0 | 1 => (first + 2 * word + byte) as u8,
                _ => (VECTOR_BYTES + first + 2 * word + byte - 2) as u8,
            };
        }
        let zero = self.int_splat(types::I8X16, 0);
        let x = self.bitcast(types::I8X16, x);
        let mask = self.shuffle_mask(&mask);
        let bits = self.b.ins().shuffle(zero, x, mask);
        self.bitcast(types::F32X4, bits)
    }

    /// f32 bits as bf16 bits (in i32 lanes), rounded to nearest even; NaNs quiet.
    fn single_to_brain(&mut self, x: Value) -> Value {
        let high = self.b.ins().ushr_imm_u(x, 16);
        let one = self.int_splat(types::I32X4, 1);
        let odd = self.b.ins().band(high, one);
        let half = self.int_splat(types::I32X4, 0x7fff);
        let rounded = self.b.ins().iadd(x, half);
        let rounded = self.b.ins().iadd(rounded, odd);
        let rounded = self.b.ins().ushr_imm_u(rounded, 16);
        let quiet = self.int_splat(types::I32X4, 0x40);
        let nan = self.b.ins().bor(high, quiet);
        let float = self.bitcast(types::F32X4, x);
        let is_nan = self.b.ins().fcmp(FloatCC::Unordered, float, float);
        self.b.ins().bitselect(is_nan, nan, rounded)
    }

    /// f32 bits as f16 bits (in i32 lanes), rounded to nearest even, subnormals included;
    /// values too large become ±∞, NaNs stay NaNs (quiet, the top of the payload kept).
    fn single_to_half(&mut self, x: Value) -> Value {
        let abs = self.int_splat(types::I32X4, 0x7fff_ffff);
        let a = self.b.ins().band(x, abs);
        let sign = self.b.ins().bxor(x, a);
        // At or above 2^16 (rounds to ∞), ∞ and NaN.
        let inf = self.int_splat(types::I32X4, 0x7f80_0000);
        let is_nan = self.b.ins().icmp(IntCC::SignedGreaterThan, a, inf);
        let payload = self.b.ins().ushr_imm_u(a, 13);
        let fraction = self.int_splat(types::I32X4, 0x3ff);
        let payload = self.b.ins().band(payload, fraction);
        let quiet_nan = self.int_splat(types::I32X4, 0x7e00);
        let nan = self.b.ins().bor(payload, quiet_nan);
        let infinity = self.int_splat(types::I32X4, 0x7c00);
        let big = self.b.ins().bitselect(is_nan, nan, infinity);
        let below_big = self.int_splat(types::I32X4, 0x477f_ffff);
        let is_big = self.b.ins().icmp(IntCC::SignedGreaterThan, a, below_big);
        // Below 2^-14 (subnormal or zero): adding 0.5 rounds at the subnormal step, 2^-24.
        let half = self.f32_splat(0.5);
        let as_float = self.bitcast(types::F32X4, a);
        let sum = self.b.ins().fadd(as_float, half);
        let sum = self.bitcast(types::I32X4, sum);
        let half_bits = self.int_splat(types::I32X4, 0x3f00_0000);
        let small = self.b.ins().isub(sum, half_bits);
        let min_normal = self.int_splat(types::I32X4, 0x3880_0000);
        let is_small = self.b.ins().icmp(IntCC::SignedLessThan, a, min_normal);
        // Normal: rebias the exponent and round the 13 dropped bits to nearest even.
        let kept = self.b.ins().ushr_imm_u(a, 13);
        let one = self.int_splat(types::I32X4, 1);
        let odd = self.b.ins().band(kept, one);
        let rebias = self.int_splat(types::I32X4, 0xc800_0fffu32 as i32 as i128);
        let normal = self.b.ins().iadd(a, rebias);
        let normal = self.b.ins().iadd(normal, odd);
        let normal = self.b.ins().ushr_imm_u(normal, 13);
        let bits = self.b.ins().bitselect(is_small, small, normal);
        let bits = self.b.ins().bitselect(is_big, big, bits);
        let sign = self.b.ins().ushr_imm_u(sign, 16);
        self.b.ins().bor(bits, sign)
    }
}
