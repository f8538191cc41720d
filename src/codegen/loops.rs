//! Loops as blocks whose parameters carry the counter and the two pointers (and the table
//! pointer of a per-index map, when the plan has one).

use cranelift_codegen::ir::{condcodes::IntCC, types, BlockArg, InstBuilder, Value};

use super::kernels::Prefetch;
use super::Emitter;
use crate::plan::{Kernel, Loop};

impl Emitter<'_> {
    /// `for i in lo..hi { body(i, s, d); s += strides.0; d += strides.1 }` (strides in elements;
    /// the table pointer, if any, advances by `strides.2` indices); `body` sees the counter and
    /// the pointers of the current iteration.
    pub(super) fn counted_loop(
        &mut self,
        lo: Value,
        hi: Value,
        s: Value,
        d: Value,
        strides: (i64, i64, i64),
        body: impl FnOnce(&mut Self, Value, Value, Value),
    ) {
        let start = self.b.ins().icmp(IntCC::SignedLessThan, lo, hi);
        self.looping(Some(start), (lo, hi), s, d, strides, body);
    }

    /// The loop of [`Emitter::counted_loop`] over `lo..hi`; with `start: None` the loop is known
    /// to run at least once and has no entry check.
    fn looping(
        &mut self,
        start: Option<Value>,
        (lo, hi): (Value, Value),
        s: Value,
        d: Value,
        strides: (i64, i64, i64),
        body: impl FnOnce(&mut Self, Value, Value, Value),
    ) {
        let head = self.b.create_block();
        let exit = self.b.create_block();
        let outer = self.table;
        let carried: Vec<Value> = [lo, s, d].into_iter().chain(outer).collect();
        for _ in &carried {
            self.b.append_block_param(head, types::I64);
        }
        let args: Vec<BlockArg> = carried.into_iter().map(BlockArg::Value).collect();
        match start {
            Some(start) => self.b.ins().brif(start, head, &args, exit, &[]),
            None => self.b.ins().jump(head, &args),
        };
        self.b.switch_to_block(head);
        let params = self.b.block_params(head).to_vec();
        let (i, s, d) = (params[0], params[1], params[2]);
        let table = params.get(3).copied();
        self.table = table;
        body(self, i, s, d);
        let i = self.b.ins().iadd_imm_s(i, 1);
        let (s, d) = self.advance(s, d, (strides.0, strides.1));
        let table = table.map(|t| self.offset(t, strides.2 * self.index_bytes));
        let more = self.b.ins().icmp(IntCC::SignedLessThan, i, hi);
        let args: Vec<BlockArg> = [i, s, d]
            .into_iter()
            .chain(table)
            .map(BlockArg::Value)
            .collect();
        self.b.ins().brif(more, head, &args, exit, &[]);
        self.b.switch_to_block(exit);
        self.table = outer;
    }

    /// A loop of a compile-time extent.
    pub(super) fn fixed_loop(
        &mut self,
        l: Loop,
        s: Value,
        d: Value,
        body: impl FnOnce(&mut Self, Value, Value),
    ) {
        if l.extent == 0 {
            return;
        }
        let lo = self.b.ins().iconst(types::I64, 0);
        let hi = self.b.ins().iconst(types::I64, l.extent as i64);
        let strides = (l.src_stride, l.dst_stride, l.index_stride);
        self.looping(None, (lo, hi), s, d, strides, |e, _, s, d| body(e, s, d));
    }

    /// The loops `loops` (outermost first) around `kernel`, starting at `s` and `d`.
    pub(super) fn nest(&mut self, loops: &[Loop], kernel: Kernel, s: Value, d: Value) {
        self.region_nest(loops, kernel, None, s, d)
    }

    /// [`Emitter::nest`] for a region's kernel, which prefetches a later block's source as
    /// `prefetch` says, if the plan says so ([`Region::prefetch_step`]).
    ///
    /// [`Region::prefetch_step`]: crate::plan::Region::prefetch_step
    pub(super) fn region_nest(
        &mut self,
        loops: &[Loop],
        kernel: Kernel,
        prefetch: Option<Prefetch>,
        s: Value,
        d: Value,
    ) {
        match loops.split_first() {
            None => self.kernel(kernel, prefetch, s, d),
            Some((outer, inner)) => self.fixed_loop(*outer, s, d, |e, s, d| {
                e.region_nest(inner, kernel, prefetch, s, d)
            }),
        }
    }
}
