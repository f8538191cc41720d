//! The general path: coordinates and digit offsets computed with division and modulo, for the
//! dims whose digits do not refine into strided loops.

use cranelift_codegen::ir::{condcodes::IntCC, types, InstBuilder, Value};

use super::Emitter;
use crate::plan::{Indexed, OffsetTerm};

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
        let src = self.digits_offset(&ix.src, &coords, self.src_size);
        let dst = self.digits_offset(&ix.dst, &coords, self.dst_size);
        (src, dst)
    }

    /// `elem_size · Σ stride · (((Σ weight·x + shift) floordiv div) mod modulus)` over `terms`.
    fn digits_offset(&mut self, terms: &[OffsetTerm], coords: &[Value], elem_size: i64) -> Value {
        let mut sum = self.b.ins().iconst(types::I64, 0);
        for term in terms {
            let mut v = match term.inputs.as_slice() {
                &[(k, 1)] => coords[k],
                inputs => {
                    let mut acc = self.b.ins().iconst(types::I64, 0);
                    for &(k, w) in inputs {
                        let t = self.b.ins().imul_imm_s(coords[k], w);
                        acc = self.b.ins().iadd(acc, t);
                    }
                    acc
                }
            };
            if term.shift != 0 {
                v = self.b.ins().iadd_imm_s(v, term.shift);
            }
            if term.div != 1 {
                v = self.floor_div(v, term.div as i64, term.nonnegative);
            }
            if let Some(m) = term.modulus {
                v = self.floor_mod(v, m as i64, term.nonnegative);
            }
            let scaled = self.b.ins().imul_imm_s(v, term.stride * elem_size);
            sum = self.b.ins().iadd(sum, scaled);
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
