//! From a [`Plan`] to Cranelift IR.
//!
//! The generated function is `fn(src: *const u8, dst: *mut u8, begin: i64, end: i64)`. It runs
//! the outer iterations `[begin, end)` of the plan's work (the outer loops of all regions, one
//! after another; see [`Plan::work`]), so callers can split a relayout between threads. Loops are
//! blocks with block parameters that carry the counter and both pointers; pointers advance by
//! constant strides, so the fast paths never divide. A plan with a per-index affine map has a
//! third pointer, into the map's table (whose address the code holds as a constant: the plan
//! owns the table, and the compiled kernel the plan), advanced by the loops' index strides.
//!
//! The emitter holds no mode: each kernel of the plan says how it writes, and `kernels.rs`
//! dispatches on that. What a function needs once (the staging buffer, sized for the plan's
//! largest block, and the imports of the runtime's routines) is made the first time a kernel
//! asks for it. The code generator compiles plans for 16-byte vectors only
//! ([`CRANELIFT_VECTOR_BYTES`]); the JIT refuses others before it gets here.

mod convert;
mod indexed;
mod kernels;
mod loops;
mod network;
mod packed;

use cranelift_codegen::ir::{
    types, AbiParam, ExtFuncData, ExternalName, FuncRef, Function, InstBuilder, MemFlagsData,
    Signature, StackSlot, StackSlotData, StackSlotKind, Type, UserExternalName, Value,
};
use cranelift_codegen::isa::{CallConv, TargetFrontendConfig};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};

use std::collections::HashMap;

use convert::TableRead;
use kernels::Prefetch;

use crate::convert::Arithmetic;
use crate::plan::{CopyWrite, Flush, LongReads, Packed, Plan, Region};
use crate::runtime::{
    BlockTranspose, CoreRoutine, JoinedEnds, Routine, RowConversion, StreamAsking,
};
use crate::target::{Target, CRANELIFT_VECTOR_BYTES};

/// The signature of every generated relayout function.
pub(crate) fn signature(call_conv: CallConv) -> Signature {
    i64_signature(call_conv, 4)
}

/// The signature of the runtime's routine `r`: [`Routine::params`] 64-bit parameters.
pub(crate) fn routine_signature(call_conv: CallConv, r: Routine) -> Signature {
    i64_signature(call_conv, r.params())
}

/// How the elements of a block staged and streamed out are converted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StagedConversion {
    /// In registers, as the tiles store them into the staging buffer (or nothing to convert).
    InRegisters,
    /// By the runtime's row routine on the way out: the buffer holds source elements. For
    /// the conversions the runtime has ([`RowConversion::of`]) without an affine map, where
    /// the host has the routine and the block of source elements fits the target's staging
    /// limit.
    ByRoutine(RowConversion),
}

fn i64_signature(call_conv: CallConv, params: usize) -> Signature {
    let mut sig = Signature::new(call_conv);
    sig.params
        .extend(std::iter::repeat_n(AbiParam::new(types::I64), params));
    sig
}

/// Bytes of every vector the generated code loads, shuffles and stores.
const VECTOR_BYTES: usize = CRANELIFT_VECTOR_BYTES;

/// Fills `func` (created with [`signature`]) with the code of `plan`, a plan for
/// [`CRANELIFT_VECTOR_BYTES`]-byte vectors. Returns the runtime's routines the code calls: it
/// names the `i`-th of them `UserExternalName { namespace: 0, index: i }`, which the module
/// must declare as its function `i`.
pub(crate) fn build(
    plan: &Plan,
    func: &mut Function,
    fctx: &mut FunctionBuilderContext,
    frontend: TargetFrontendConfig,
) -> Vec<Routine> {
    let mut b = FunctionBuilder::new(func, fctx);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let [mut src, mut dst, begin, end] = [0, 1, 2, 3].map(|i| b.block_params(entry)[i]);
    if let Some(packed) = plan.packing() {
        // A packed plan's pointers count elements: the byte address times the elements per
        // byte (addresses are far below 2^60), so that offsets in elements add to them.
        let shift = packed.per_byte().trailing_zeros() as i64;
        src = b.ins().ishl_imm_u(src, shift);
        dst = b.ins().ishl_imm_u(dst, shift);
    }
    let map = plan.per_index();
    let arithmetic = plan.conversion().map(|c| c.arithmetic());
    let table = map.zip(arithmetic).map(|(m, a)| {
        let address = m.table(a) as i64;
        (b.ins().iconst(types::I64, address), a)
    });
    let stage_bytes = plan.stage_bytes().unwrap_or(0);
    let source_stage_bytes = stage_bytes / plan.dst_elem_size() * plan.elem_size();
    let by_routine = plan
        .conversion()
        .filter(|c| c.scale_shift().is_none() && map.is_none())
        .and_then(|c| RowConversion::of(c.from_type(), c.to_type()))
        .filter(|c| c.routine().is_some() && source_stage_bytes <= plan.target().stage_limit_bytes);
    // Streamed blocks converted by the routine stage source elements, blocks copied out stage
    // destination elements (converted in registers): the buffer holds the larger of the two.
    let (staged_conversion, stage_bytes) = match by_routine {
        Some(c) => (
            StagedConversion::ByRoutine(c),
            stage_bytes.max(source_stage_bytes),
        ),
        None => (StagedConversion::InRegisters, stage_bytes),
    };
    let mut e = Emitter {
        b,
        src_size: plan.elem_size() as i64,
        dst_size: plan.dst_elem_size() as i64,
        route: plan.conversion().map(|c| convert::Route::of(c, map)),
        packed: plan.packing(),
        table: table.map(|(t, _)| t),
        index_bytes: match table {
            Some((_, Arithmetic::F64)) => 8,
            _ => 4,
        },
        index_len: map.map_or(0, |m| m.len() as i64),
        table_reads: None,
        target: plan.target(),
        flags: MemFlagsData::new().with_notrap(),
        stage_bytes,
        stage: None,
        staged_conversion,
        routines: Vec::new(),
        tiles: Tiles::of(plan),
    };
    let mut first = 0i64;
    for region in plan.regions() {
        let extent = region.outer_extent() as i64;
        let lo = e.clamp_range(begin, first, extent);
        let hi = e.clamp_range(end, first, extent);
        e.indexed_by(region.index_base, |e| e.region(region, src, dst, lo, hi));
        first += extent;
    }
    e.b.ins().return_(&[]);
    e.b.seal_all_blocks();
    e.b.finalize(frontend);
    e.routines.into_iter().map(|(r, _)| r).collect()
}

/// The state of one function being emitted: the builder, and what the function holds once.
pub(crate) struct Emitter<'a> {
    b: FunctionBuilder<'a>,
    /// Bytes of an element behind the source pointers (while a staged block is flushed, the
    /// staging buffer, which holds destination elements).
    src_size: i64,
    /// Bytes of an element behind the destination pointers.
    dst_size: i64,
    /// How elements convert on the way (none while a staged block is flushed).
    route: Option<convert::Route>,
    /// How sub-byte elements pack into bytes; then the pointers count elements, not bytes.
    packed: Option<Packed>,
    /// With a per-index map, the address of the table entry of the index at the current
    /// pointers (see [`Emitter::indexed_by`]).
    table: Option<Value>,
    /// Bytes of a table entry (the map's compute type).
    index_bytes: i64,
    /// Indices of the map: the shifts follow the scales after this many entries.
    index_len: i64,
    /// Within [`Emitter::sharing_table_loads`], the table reads emitted so far, by table
    /// pointer, byte offset and what was read.
    table_reads: Option<HashMap<(Value, i64, Type, TableRead), Value>>,
    /// The machine the plan was made for.
    target: Target,
    flags: MemFlagsData,
    /// Bytes of the staging buffer: the plan's largest staged block, of destination elements,
    /// or of source elements where the runtime converts it (`StagedConversion::ByRoutine`).
    stage_bytes: usize,
    /// The staging buffer, once a kernel has asked for it.
    stage: Option<StackSlot>,
    /// How staged and streamed blocks convert their elements.
    staged_conversion: StagedConversion,
    /// The runtime's routines imported so far, in the order of the indices of their names.
    routines: Vec<(Routine, FuncRef)>,
    /// Where transposes of plain elements get their register tiles.
    tiles: Tiles,
}

/// Where a transpose whose elements move as they are gets its register tiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tiles {
    /// From the runtime's block transpose, where it has one for the element size
    /// ([`BlockTranspose::of`]).
    Runtime,
    /// Emitted here, for 4- and 8-byte elements, where source and destination together hold no
    /// more than the target's
    /// [`emitted_tiles_max_bytes`](crate::Target::emitted_tiles_max_bytes).
    Emitted,
}

impl Tiles {
    /// Where `plan`'s transposes get their tiles.
    fn of(plan: &Plan) -> Tiles {
        let bytes = plan.src_len() * plan.elem_size() + plan.dst_len() * plan.dst_elem_size();
        match plan.elem_size() >= 4 && bytes <= plan.target().emitted_tiles_max_bytes {
            true => Tiles::Emitted,
            false => Tiles::Runtime,
        }
    }
}

impl Emitter<'_> {
    /// The function's staging buffer (a stack slot of the plan's largest staged block).
    fn stage_slot(&mut self) -> StackSlot {
        if let Some(slot) = self.stage {
            return slot;
        }
        let data = StackSlotData::new(StackSlotKind::ExplicitSlot, self.stage_bytes as u32, 6);
        let slot = self.b.create_sized_stack_slot(data);
        self.stage = Some(slot);
        slot
    }

    /// The staging buffer's address.
    fn stage_address(&mut self) -> Value {
        let slot = self.stage_slot();
        self.b.ins().stack_addr(types::I64, slot, 0)
    }

    /// The runtime's streaming routine, imported on first use.
    fn stream_routine(&mut self) -> FuncRef {
        self.routine(Routine::Core(CoreRoutine::StreamRows))
    }

    /// The runtime's streaming routine of joined runs `j`, imported on first use.
    fn joined_ends_routine(&mut self, j: JoinedEnds) -> FuncRef {
        self.routine(Routine::Joined(j))
    }

    /// The runtime's streaming routine that asks for a later block's source rows as it goes,
    /// joining `ends` of its rows if any, imported on first use.
    fn asking_routine(&mut self, ends: Option<JoinedEnds>) -> FuncRef {
        self.routine(Routine::Asking(StreamAsking { ends }))
    }

    /// The runtime's routine that copies the rows of a staged block out as `flush` says,
    /// imported on first use.
    fn flush_routine(&mut self, flush: Flush) -> FuncRef {
        match flush {
            Flush::Streamed => self.stream_routine(),
            Flush::Copied => self.routine(Routine::Core(CoreRoutine::StoreRows)),
        }
    }

    /// The runtime's routine that copies the rows of a copy written as `write` (streamed or
    /// with lines asked for ahead), imported on first use. A copy with ordinary stores calls
    /// none; asked for one, it gets the streaming routine.
    fn copy_routine(&mut self, write: CopyWrite) -> FuncRef {
        match write {
            CopyWrite::Prefetched { .. } => {
                self.routine(Routine::Core(CoreRoutine::StoreRowsAhead))
            }
            CopyWrite::Streamed {
                reads: LongReads::PagesSideBySide,
                ..
            } => self.routine(Routine::Core(CoreRoutine::StreamRowsSideBySide)),
            CopyWrite::Streamed {
                reads: LongReads::InOrder,
                ..
            }
            | CopyWrite::Stored => self.stream_routine(),
        }
    }

    /// The runtime's prefetching routine, imported on first use.
    fn prefetch_routine(&mut self) -> FuncRef {
        self.routine(Routine::Core(CoreRoutine::PrefetchRows))
    }

    /// The runtime's block transpose `t`, imported on first use.
    fn block_transpose_routine(&mut self, t: BlockTranspose) -> FuncRef {
        self.routine(Routine::Transpose(t))
    }

    /// The runtime's routine for the row conversion `c`, imported on first use.
    fn convert_rows_routine(&mut self, c: RowConversion) -> FuncRef {
        self.routine(Routine::Conversion(c))
    }

    /// The runtime's routine `r`, imported the first time it is asked for under the next
    /// index of a name ([`build`] lists them in that order).
    fn routine(&mut self, r: Routine) -> FuncRef {
        if let Some(&(_, routine)) = self.routines.iter().find(|(x, _)| *x == r) {
            return routine;
        }
        let signature = self
            .b
            .import_signature(routine_signature(self.b.func.signature.call_conv, r));
        let name = self
            .b
            .func
            .declare_imported_user_function(UserExternalName {
                namespace: 0,
                index: self.routines.len() as u32,
            });
        let routine = self.b.import_function(ExtFuncData {
            name: ExternalName::user(name),
            signature,
            colocated: false,
            patchable: false,
        });
        self.routines.push((r, routine));
        routine
    }

    /// Runs `f` with the elements stored as they are loaded, no conversion: what a block
    /// writes into the staging buffer when the runtime converts it on the way out.
    fn unconverted(&mut self, f: impl FnOnce(&mut Self)) {
        let (dst_size, route) = (self.dst_size, self.route.take());
        self.dst_size = self.src_size;
        f(self);
        (self.dst_size, self.route) = (dst_size, route);
    }

    /// `clamp(x - first, 0, extent)`: where a global work index lands in one region's range.
    fn clamp_range(&mut self, x: Value, first: i64, extent: i64) -> Value {
        let local = self.b.ins().iadd_imm_s(x, -first);
        let zero = self.b.ins().iconst(types::I64, 0);
        let top = self.b.ins().iconst(types::I64, extent);
        let low = self.b.ins().smax(local, zero);
        self.b.ins().smin(low, top)
    }

    /// The source and destination pointers `s` and `d` moved on by `elements.0` source and
    /// `elements.1` destination elements.
    fn advance(&mut self, s: Value, d: Value, elements: (i64, i64)) -> (Value, Value) {
        let s = self.offset(s, elements.0 * self.src_size);
        let d = self.offset(d, elements.1 * self.dst_size);
        (s, d)
    }

    /// `base + bytes` as an address.
    fn offset(&mut self, base: Value, bytes: i64) -> Value {
        if bytes == 0 {
            base
        } else {
            self.b.ins().iadd_imm_s(base, bytes)
        }
    }

    /// Runs `f` with the table pointer moved on by `steps` indices (a no-op without a map).
    fn indexed_by(&mut self, steps: i64, f: impl FnOnce(&mut Self)) {
        let saved = self.table;
        self.table = saved.map(|t| self.offset(t, steps * self.index_bytes));
        f(self);
        self.table = saved;
    }

    /// Runs `f` with both pointers reading and writing destination elements as they are: how a
    /// staged block leaves the staging buffer.
    fn flushing(&mut self, f: impl FnOnce(&mut Self)) {
        let (src_size, route, table) = (self.src_size, self.route.take(), self.table.take());
        self.src_size = self.dst_size;
        f(self);
        (self.src_size, self.route, self.table) = (src_size, route, table);
    }

    /// One region: its outermost loop over `[lo, hi)`, the rest of its nest inside.
    /// The table pointer, if any, is at the region's first index.
    fn region(&mut self, region: &Region, src: Value, dst: Value, lo: Value, hi: Value) {
        let (s, d) = self.advance(src, dst, (region.src_base, region.dst_base));
        let prefetch = region.prefetch_step().map(|step| Prefetch {
            step,
            group: region.prefetch_group(),
        });
        match (&region.indexed, region.loops.split_first()) {
            (Some(ix), _) => self.counted_loop(lo, hi, s, d, (0, 0, 0), |e, i, s, d| {
                let (so, doff) = e.indexed_offsets(ix, i);
                let (s, d) = (e.b.ins().iadd(s, so), e.b.ins().iadd(d, doff));
                let saved = e.table;
                if let (Some(t), Some(k)) = (saved, ix.index) {
                    let index = e.indexed_coord(ix, i, k);
                    let bytes = e.b.ins().imul_imm_s(index, e.index_bytes);
                    e.table = Some(e.b.ins().iadd(t, bytes));
                }
                e.region_nest(&region.loops, region.kernel, prefetch, s, d);
                e.table = saved;
            }),
            (None, Some((outer, inner))) => {
                let s = self.scaled_start(s, lo, outer.src_stride * self.src_size);
                let d = self.scaled_start(d, lo, outer.dst_stride * self.dst_size);
                let saved = self.table;
                self.table =
                    saved.map(|t| self.scaled_start(t, lo, outer.index_stride * self.index_bytes));
                let strides = (outer.src_stride, outer.dst_stride, outer.index_stride);
                self.counted_loop(lo, hi, s, d, strides, |e, _, s, d| {
                    e.region_nest(inner, region.kernel, prefetch, s, d)
                });
                self.table = saved;
            }
            (None, None) => self.counted_loop(lo, hi, s, d, (0, 0, 0), |e, _, s, d| {
                e.region_nest(&[], region.kernel, prefetch, s, d)
            }),
        }
    }

    /// `base + lo · stride_bytes`.
    fn scaled_start(&mut self, base: Value, lo: Value, stride_bytes: i64) -> Value {
        let step = self.b.ins().imul_imm_s(lo, stride_bytes);
        self.b.ins().iadd(base, step)
    }
}
