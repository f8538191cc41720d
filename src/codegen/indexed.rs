//! The general path: coordinates and digit offsets computed with division and modulo, for the
//! dims whose digits do not refine into strided loops.

use cranelift_codegen::ir::{condcodes::IntCC, types, InstBuilder, Value};

use super::Emitter;
use crate::layout::Swizzle;
use crate::plan::{Indexed, IndexedSwizzle, OffsetTerm};

impl Emitter<'_> {
    /// Byte offsets `(src, dst)` of the point with flat row-major index `flat` of `ix`.
    pub(super) fn indexed_offsets(&mut self, ix: &Indexed, flat: Value) -> (Value, Value) {
        let mut coords = Vec::with_capacity(ix.extents.len());
        let mut inner: i64 = ix.extents.iter().map(|&n| n as i64).product();
        for &n in &ix.extents {
            inner /= n as i64;
            let q = self.udiv_const(flat, inner);
            coords.push(self.urem_const(q, n as i64));
        }
        let src = self.side_offset(&ix.src, ix.src_swizzle, &coords, self.src_size);
        let dst = self.side_offset(&ix.dst, ix.dst_swizzle, &coords, self.dst_size);
        (src, dst)
    }

    /// Coordinate `k` of the point with flat row-major index `flat` of `ix`.
    pub(super) fn indexed_coord(&mut self, ix: &Indexed, flat: Value, k: usize) -> Value {
        let inner: usize = ix.extents[k + 1..].iter().product();
        let q = self.udiv_const(flat, inner as i64);
        self.urem_const(q, ix.extents[k] as i64)
    }

    /// The byte offset of one side, of elements of `elem_size` bytes: its terms summed
    /// ([`Emitter::digits_offset`]), or, for a swizzled side,
    /// `elem_size · swizzle(base + Σ terms)` with the terms summed in elements.
    fn side_offset(
        &mut self,
        terms: &[OffsetTerm],
        swizzle: Option<IndexedSwizzle>,
        coords: &[Value],
        elem_size: i64,
    ) -> Value {
        let Some(s) = swizzle else {
            return self.digits_offset(terms, coords, elem_size);
        };
        let sum = self.digits_offset(terms, coords, 1);
        let sum = self.b.ins().iadd_imm_s(sum, s.base);
        let swizzled = self.swizzle(sum, s.swizzle);
        self.b.ins().imul_imm_s(swizzled, elem_size)
    }

    /// `o ^ shiftr(o & yyy_mask, S)`: CuTe's swizzle of the element offset `o`.
    pub(super) fn swizzle(&mut self, o: Value, swizzle: Swizzle) -> Value {
        let y = self.b.ins().band_imm_s(o, swizzle.yyy_mask());
        let shift = swizzle.shift();
        let moved = if shift >= 0 {
            self.b.ins().ushr_imm_u(y, shift as i64)
        } else {
            self.b.ins().ishl_imm_u(y, -shift as i64)
        };
        self.b.ins().bxor(o, moved)
    }

    /// `scale · Σ stride · (((Σ weight·x + shift) floordiv div) mod modulus)` over `terms`
    /// (`scale` is the element size for a byte offset, 1 for an element offset).
    fn digits_offset(&mut self, terms: &[OffsetTerm], coords: &[Value], scale: i64) -> Value {
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
            let scaled = self.b.ins().imul_imm_s(v, term.stride * scale);
            sum = self.b.ins().iadd(sum, scaled);
        }
        sum
    }

    /// `floor(v / d)` for `d > 0`.
    fn floor_div(&mut self, v: Value, d: i64, nonnegative: bool) -> Value {
        if nonnegative {
            return self.udiv_const(v, d);
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
            return self.urem_const(v, m);
        }
        let r = self.b.ins().srem_imm_s(v, m);
        let wrapped = self.b.ins().iadd_imm_s(r, m);
        let negative = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, r, 0);
        self.b.ins().select(negative, wrapped, r)
    }

    /// `v / d` for `v >= 0` and a constant `d > 0`: a shift where `d` is a power of two (moving
    /// kernels are compiled without Cranelift's optimiser, `opt_level=none`, which would find
    /// that; a 64-bit division takes tens of cycles).
    fn udiv_const(&mut self, v: Value, d: i64) -> Value {
        match d {
            1 => v,
            _ if d.count_ones() == 1 => self.b.ins().ushr_imm_u(v, d.trailing_zeros() as i64),
            _ => self.b.ins().udiv_imm_u(v, d),
        }
    }

    /// `v mod m` for `v >= 0` and a constant `m > 0`: a mask where `m` is a power of two.
    fn urem_const(&mut self, v: Value, m: i64) -> Value {
        match m {
            _ if m.count_ones() == 1 => self.b.ins().band_imm_s(v, m - 1),
            _ => self.b.ins().urem_imm_u(v, m),
        }
    }
}
