//! The general path: coordinates and digit offsets computed with division and modulo, for the
//! dims whose digits do not refine into strided loops.

use cranelift_codegen::ir::{condcodes::IntCC, types, InstBuilder, Value};

use super::Emitter;
use crate::layout::{Digit, Source};
use crate::plan::Indexed;

impl Emitter<'_> {
    /// Byte offsets `(src, dst)` of the point with flat row-major index `flat` of `ix`.
    pub(super) fn indexed_offsets(&mut self, ix: &Indexed, flat: Value) -> (Value, Value) {
        let mut coords = Vec::with_capacity(ix.extents.len());
        let mut inner: i64 = ix.extents.iter().map(|&n| n as i64).product();
        for &n in &ix.extents {
            inner /= n as i64;
            let q = self.b.ins().udiv_imm_u(flat, inner);
            coords.push(self.b.ins().urem_imm_u(q, n as i64));
        }
        let src = self.digits_offset(&ix.src, &ix.extents, &coords);
        let dst = self.digits_offset(&ix.dst, &ix.extents, &coords);
        (src, dst)
    }

    /// `elem_size · Σ stride · (((source + shift) floordiv div) mod ext)` over `digits`.
    fn digits_offset(&mut self, digits: &[Digit], extents: &[usize], coords: &[Value]) -> Value {
        let mut sum = self.b.ins().iconst(types::I64, 0);
        for digit in digits {
            let (lo, _) = digit.value_range(extents);
            let nonnegative = lo >= 0 && source_min(digit, extents) + digit.shift as i128 >= 0;
            let mut v = match &digit.source {
                Source::Dim(k) => coords[*k],
                Source::Fused(terms) => {
                    let mut acc = self.b.ins().iconst(types::I64, 0);
                    for &(k, w) in terms {
                        let t = self.b.ins().imul_imm_s(coords[k], w);
                        acc = self.b.ins().iadd(acc, t);
                    }
                    acc
                }
            };
            if digit.shift != 0 {
                v = self.b.ins().iadd_imm_s(v, digit.shift);
            }
            if digit.div != 1 {
                v = self.floor_div(v, digit.div as i64, nonnegative);
            }
            if let Some(e) = digit.ext {
                v = self.floor_mod(v, e as i64, nonnegative);
            }
            let term = self.b.ins().imul_imm_s(v, digit.stride * self.elem_size);
            sum = self.b.ins().iadd(sum, term);
        }
        sum
    }

    /// `floor(v / d)` for `d > 0`.
    fn floor_div(&mut self, v: Value, d: i64, nonnegative: bool) -> Value {
        if nonnegative {
            return self.b.ins().udiv_imm_u(v, d);
        }
        let q = self.b.ins().sdiv_imm_s(v, d);
        let r = self.b.ins().srem_imm_s(v, d);
        let negative = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, r, 0);
        let one = self.b.ins().uextend(types::I64, negative);
        self.b.ins().isub(q, one)
    }

    /// `v mod m` in `[0, m)` for `m > 0`.
    fn floor_mod(&mut self, v: Value, m: i64, nonnegative: bool) -> Value {
        if nonnegative {
            return self.b.ins().urem_imm_u(v, m);
        }
        let r = self.b.ins().srem_imm_s(v, m);
        let wrapped = self.b.ins().iadd_imm_s(r, m);
        let negative = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, r, 0);
        self.b.ins().select(negative, wrapped, r)
    }
}

/// The smallest value of a digit's source over the local extents.
fn source_min(digit: &Digit, extents: &[usize]) -> i128 {
    digit.source.range(extents).0
}
