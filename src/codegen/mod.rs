//! From a [`Plan`] to Cranelift IR.
//!
//! The generated function is `fn(src: *const u8, dst: *mut u8, begin: i64, end: i64)`. It runs
//! the outer iterations `[begin, end)` of the plan's work (the outer loops of all regions, one
//! after another; see [`Plan::work`]), so callers can split a relayout between threads. Loops are
//! blocks with block parameters that carry the counter and both pointers; pointers advance by
//! constant strides, so the fast paths never divide.

mod indexed;
mod kernels;
mod loops;
mod network;

use cranelift_codegen::ir::{
    types, AbiParam, ExtFuncData, ExternalName, FuncRef, Function, InstBuilder, MemFlagsData,
    Signature, StackSlot, StackSlotData, StackSlotKind, UserExternalName, Value,
};
use cranelift_codegen::isa::{CallConv, TargetFrontendConfig};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};

use crate::plan::{Plan, Region, MAX_STAGE_BYTES};

/// The signature of every generated relayout function.
pub(crate) fn signature(call_conv: CallConv) -> Signature {
    i64_signature(call_conv, 4)
}

/// The signature of the runtime's streaming routine (`runtime::stream_rows`).
pub(crate) fn stream_rows_signature(call_conv: CallConv) -> Signature {
    i64_signature(call_conv, 6)
}

/// The name by which generated code calls the streaming routine: the JIT module declares that
/// import before anything else, so it is function 0 of the module's namespace 0.
pub(crate) const STREAM_ROWS_NAME: UserExternalName = UserExternalName {
    namespace: 0,
    index: 0,
};

fn i64_signature(call_conv: CallConv, params: usize) -> Signature {
    let mut sig = Signature::new(call_conv);
    sig.params
        .extend(std::iter::repeat_n(AbiParam::new(types::I64), params));
    sig
}

/// Fills `func` (created with [`signature`]) with the code of `plan`.
pub(crate) fn build(
    plan: &Plan,
    func: &mut Function,
    fctx: &mut FunctionBuilderContext,
    frontend: TargetFrontendConfig,
) {
    let mut b = FunctionBuilder::new(func, fctx);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let [src, dst, begin, end] = [0, 1, 2, 3].map(|i| b.block_params(entry)[i]);
    let elem_size = plan.elem_size();
    let stage_bytes = plan
        .regions()
        .iter()
        .filter_map(|r| r.stage_bytes(elem_size))
        .max();
    let stage = stage_bytes.map(|bytes| {
        debug_assert!(
            bytes <= MAX_STAGE_BYTES,
            "the planner stages only small blocks"
        );
        let data = StackSlotData::new(StackSlotKind::ExplicitSlot, bytes as u32, 6);
        b.create_sized_stack_slot(data)
    });
    let stream_rows = plan.regions().iter().any(|r| r.streamed).then(|| {
        let signature = b.import_signature(stream_rows_signature(b.func.signature.call_conv));
        let name = b.func.declare_imported_user_function(STREAM_ROWS_NAME);
        b.import_function(ExtFuncData {
            name: ExternalName::user(name),
            signature,
            colocated: false,
            patchable: false,
        })
    });
    let mut e = Emitter {
        b,
        elem_size: elem_size as i64,
        flags: MemFlagsData::new().with_notrap(),
        staging: None,
        streaming: None,
        across: false,
        staged_loop: false,
        stream_rows,
        stage,
    };
    let mut first = 0i64;
    for region in plan.regions() {
        let extent = region.outer_extent() as i64;
        let lo = e.clamp_range(begin, first, extent);
        let hi = e.clamp_range(end, first, extent);
        e.region(region, src, dst, lo, hi);
        first += extent;
    }
    e.b.ins().return_(&[]);
    e.b.seal_all_blocks();
    e.b.finalize(frontend);
}

/// State shared by the emitters of one function.
pub(crate) struct Emitter<'a> {
    b: FunctionBuilder<'a>,
    elem_size: i64,
    flags: MemFlagsData,
    /// The staging buffer while emitting a region that stages its blocks ([`Region::staged`]).
    staging: Option<StackSlot>,
    /// The streaming routine while emitting a region that streams ([`Region::streamed`]).
    streaming: Option<FuncRef>,
    /// Whether the region's transpose tiles go across the source rows ([`Region::across`]).
    across: bool,
    /// Whether the region's innermost loop runs into the staging buffer
    /// ([`Region::staged_loop`]).
    staged_loop: bool,
    /// The staging buffer of the staged transposes and zips, sized for the largest block (at
    /// most [`MAX_STAGE_BYTES`] bytes).
    stage: Option<StackSlot>,
    /// The runtime's streaming routine, when some region streams.
    stream_rows: Option<FuncRef>,
}

impl Emitter<'_> {
    /// `clamp(x - first, 0, extent)`: where a global work index lands in one region's range.
    fn clamp_range(&mut self, x: Value, first: i64, extent: i64) -> Value {
        let local = self.b.ins().iadd_imm_s(x, -first);
        let zero = self.b.ins().iconst(types::I64, 0);
        let top = self.b.ins().iconst(types::I64, extent);
        let low = self.b.ins().smax(local, zero);
        self.b.ins().smin(low, top)
    }

    /// `base + elements · elem_size` as an address.
    fn advance(&mut self, base: Value, elements: i64) -> Value {
        if elements == 0 {
            base
        } else {
            self.b.ins().iadd_imm_s(base, elements * self.elem_size)
        }
    }

    /// One region: its outermost loop over `[lo, hi)`, the rest of its nest inside.
    fn region(&mut self, region: &Region, src: Value, dst: Value, lo: Value, hi: Value) {
        self.staging = self.stage.filter(|_| region.staged);
        self.streaming = self.stream_rows.filter(|_| region.streamed);
        self.across = region.across;
        self.staged_loop = region.staged_loop;
        let s = self.advance(src, region.src_base);
        let d = self.advance(dst, region.dst_base);
        match (&region.indexed, region.loops.split_first()) {
            (Some(ix), _) => self.counted_loop(lo, hi, s, d, (0, 0), |e, i, s, d| {
                let (so, doff) = e.indexed_offsets(ix, i);
                let (s, d) = (e.b.ins().iadd(s, so), e.b.ins().iadd(d, doff));
                e.nest(&region.loops, region.kernel, s, d);
            }),
            (None, Some((outer, inner))) => {
                let s = self.scaled_start(s, lo, outer.src_stride);
                let d = self.scaled_start(d, lo, outer.dst_stride);
                let strides = (outer.src_stride, outer.dst_stride);
                self.counted_loop(lo, hi, s, d, strides, |e, _, s, d| {
                    e.nest(inner, region.kernel, s, d)
                });
            }
            (None, None) => self.counted_loop(lo, hi, s, d, (0, 0), |e, _, s, d| {
                e.nest(&[], region.kernel, s, d)
            }),
        }
    }

    /// `base + lo · stride · elem_size`.
    fn scaled_start(&mut self, base: Value, lo: Value, stride: i64) -> Value {
        let step = self.b.ins().imul_imm_s(lo, stride * self.elem_size);
        self.b.ins().iadd(base, step)
    }
}
