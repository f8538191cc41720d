//! Compiling a plan with Cranelift for the host, owning the machine code, and calling it. The
//! JIT sees a [`Plan`] and nothing else: no layouts, no caches (the engine keeps those).

use std::cell::RefCell;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use cranelift_codegen::control::ControlPlane;
use cranelift_codegen::ir::{Function, UserFuncName};
use cranelift_codegen::isa::{OwnedTargetIsa, TargetIsa};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_codegen::Context;
use cranelift_frontend::FunctionBuilderContext;
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, Linkage, Module};

use crate::codegen;
use crate::error::{Error, Result};
use crate::plan::Plan;
use crate::runtime::{self, Routine};
use crate::target::CRANELIFT_VECTOR_BYTES;

/// The generated function: `(src, dst, begin, end)`.
type KernelFn = unsafe extern "C" fn(*const u8, *mut u8, i64, i64);

/// Machine code of one kernel and the module that owns its memory. The IR and assembly texts are
/// made on first request (by generating the function again), so compiling stays fast.
pub(crate) struct Compiled {
    module: Option<JITModule>,
    entry: KernelFn,
    plan: Arc<Plan>,
    /// How Cranelift compiled it.
    optimise: Optimise,
    /// Whether the kernel writes with streaming stores, which a call fences afterwards.
    streams: bool,
    /// Microseconds from the start of planning to finalized machine code.
    pub(crate) compile_micros: f64,
    clif: OnceLock<String>,
    asm: OnceLock<std::result::Result<String, String>>,
}

// SAFETY: after `finalize_definitions` the module's code is immutable and `entry` is a plain
// function pointer into it that any thread may call; the module itself is touched only by `drop`,
// which runs once, when no reference (and so no caller) is left.
unsafe impl Send for Compiled {}
// SAFETY: see `Send`: shared access only reads the immutable code and the strings.
unsafe impl Sync for Compiled {}

impl Drop for Compiled {
    fn drop(&mut self) {
        if let Some(module) = self.module.take() {
            // SAFETY: `self` is being dropped, so no `Relayout` refers to this code any more and no
            // call into it can be running (calls borrow the `Relayout`).
            unsafe { module.free_memory() };
        }
    }
}

impl Compiled {
    /// Calls the kernel on outer iterations `[begin, end)`.
    ///
    /// # Safety
    /// `src` must be readable and `dst` writable for the lengths the kernel's plan was made for
    /// (`plan.src_len()` and `plan.dst_len()` elements), the two must not overlap, and no other
    /// thread may write the part of `dst` that `[begin, end)` covers while the call runs.
    pub(crate) unsafe fn call(&self, src: *const u8, dst: *mut u8, begin: usize, end: usize) {
        // SAFETY: the caller upholds the buffer contract above; the generated code touches only
        // the elements the plan maps, all inside those lengths (checked by the plan tests).
        unsafe { (self.entry)(src, dst, begin as i64, end as i64) };
        if self.streams {
            runtime::fence();
        }
    }
}

/// How Cranelift compiles a kernel: how much its mid-end optimises and which register allocator
/// it runs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Optimise {
    /// `opt_level=none`, the backtracking register allocator: for kernels that move data in
    /// their own loops. The generated IR already advances pointers by constants, so Cranelift's
    /// mid-end (e-graph) optimiser found little to improve in moving kernels (a few repeated
    /// constants outside the loops) while taking about a third of the compile time; no kernel
    /// of the suite ran measurably slower without it.
    Moves,
    /// `opt_level=none`, the single-pass register allocator: for kernels whose code loads and
    /// stores nothing itself, every move being a call of the runtime's routines (staged
    /// transposes, streamed copies), so that how well registers are allocated around the calls
    /// does not show in the time of a run, while the backtracking allocator took about half of
    /// the compile time. On a 2-core Intel Xeon VM (family 6, model 85), compiling the
    /// 8000 × 8000 f32 transpose went from 330 to 178 µs (median) and NHWC → NCHW from 464 to
    /// 238, every such kernel of the suite running as fast as before; the single-pass allocator
    /// keeps values that live across blocks on the stack, so kernels with moving loops of their
    /// own ran slower with it (a 64 × 64 f32 transpose at 0.45 of its speed, the bf16 XLA tiles
    /// at 0.74).
    Calls,
    /// `opt_level=speed`, the backtracking register allocator, for kernels that convert elements
    /// in their own loops: their vector constants (masks, biases, bounds) are hoisted out of the
    /// loops and shared, which the mid-end does.
    Conversions,
}

impl Optimise {
    /// How to compile `func`, the function of `plan`.
    fn of(plan: &Plan, func: &Function) -> Optimise {
        let moves_data = func.layout.blocks().any(|block| {
            func.layout.block_insts(block).any(|inst| {
                let opcode = func.dfg.insts[inst].opcode();
                opcode.can_load() || opcode.can_store()
            })
        });
        match (moves_data, plan.conversion()) {
            (false, _) => Optimise::Calls,
            (true, None) => Optimise::Moves,
            (true, Some(_)) => Optimise::Conversions,
        }
    }

    /// Cranelift's settings for this level: `(opt_level, regalloc_algorithm)`.
    fn settings(self) -> (&'static str, &'static str) {
        match self {
            Optimise::Moves => ("none", "backtracking"),
            Optimise::Calls => ("none", "single_pass"),
            Optimise::Conversions => ("speed", "backtracking"),
        }
    }
}

/// The host ISA for `level`, detected once: CPU features from `cranelift-native`, the IR
/// verifier on in debug builds only.
fn host_isa(level: Optimise) -> Result<OwnedTargetIsa> {
    static ISA: [OnceLock<std::result::Result<OwnedTargetIsa, String>>; 3] =
        [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let (opt_level, regalloc) = level.settings();
    ISA[level as usize]
        .get_or_init(|| {
            let mut flags = settings::builder();
            let verify = if cfg!(debug_assertions) {
                "true"
            } else {
                "false"
            };
            for (name, value) in [
                ("opt_level", opt_level),
                ("regalloc_algorithm", regalloc),
                ("is_pic", "false"),
                ("enable_verifier", verify),
            ] {
                flags.set(name, value).map_err(|e| e.to_string())?;
            }
            let isa = cranelift_native::builder().map_err(|e| e.to_string())?;
            isa.finish(settings::Flags::new(flags))
                .map_err(|e| e.to_string())
        })
        .clone()
        .map_err(|e| Error::Codegen(format!("no Cranelift backend for this host: {e}")))
}

/// Compiles `plan` into a new JIT module of its own; `start` is when planning began, so that
/// [`Compiled::compile_micros`] covers planning, code generation and Cranelift. Plans for other
/// vectors than Cranelift's 16-byte ones are refused.
pub(crate) fn compile(plan: Arc<Plan>, start: Instant) -> Result<Compiled> {
    let vector_bytes = plan.target().vector_bytes;
    if vector_bytes != CRANELIFT_VECTOR_BYTES {
        return Err(Error::Unsupported(format!(
            "a plan for {vector_bytes}-byte vectors: the JIT emits {CRANELIFT_VECTOR_BYTES}-byte vectors only"
        )));
    }
    // The host's calling convention and the frontend's view of it are the same at every level.
    let host = host_isa(Optimise::Moves)?;
    let (mut module, id, optimise) = Contexts::with(|contexts| {
        let ctx = &mut contexts.function;
        ctx.clear();
        let routines;
        (ctx.func, routines) = build_function(&plan, &*host, &mut contexts.builder);
        let optimise = Optimise::of(&plan, &ctx.func);
        let mut module = kernel_module(host_isa(optimise)?, &routines)?;
        let id = module
            .declare_function("relayout", Linkage::Local, &ctx.func.signature)
            .map_err(|e| codegen_err(&e))?;
        module
            .define_function(id, ctx)
            .map_err(|e| codegen_err(&format!("{e:?}")))?;
        Ok::<_, Error>((module, id, optimise))
    })?;
    module.finalize_definitions().map_err(|e| codegen_err(&e))?;
    let code = module.get_finalized_function(id);
    // SAFETY: `code` is the finalized entry of a function declared with `codegen::signature`,
    // which is four i64 parameters and no result in the host's default calling convention: the
    // same ABI as `KernelFn` on the 64-bit hosts Cranelift supports.
    let entry = unsafe { std::mem::transmute::<*const u8, KernelFn>(code) };
    Ok(Compiled {
        module: Some(module),
        entry,
        streams: plan.streams(),
        plan,
        optimise,
        compile_micros: start.elapsed().as_secs_f64() * 1e6,
        clif: OnceLock::new(),
        asm: OnceLock::new(),
    })
}

/// An error of Cranelift's, as the crate's.
fn codegen_err(e: &dyn std::fmt::Display) -> Error {
    Error::Codegen(e.to_string())
}

/// A new JIT module for one kernel, compiling for `isa`, with the runtime's routines its code
/// calls declared in the order the code names them ([`codegen::build`]).
fn kernel_module(isa: OwnedTargetIsa, routines: &[Routine]) -> Result<JITModule> {
    let mut builder = JITBuilder::with_isa(isa, default_libcall_names());
    for &r in routines {
        let address = r.address().ok_or_else(|| {
            codegen_err(&format!(
                "the code calls the runtime's {r:?}, which this host lacks"
            ))
        })?;
        builder.symbol(r.symbol(), address);
    }
    let mut module = JITModule::new(builder);
    let call_conv = module.isa().default_call_conv();
    for (i, &r) in routines.iter().enumerate() {
        let signature = codegen::routine_signature(call_conv, r);
        let id = module
            .declare_function(r.symbol(), Linkage::Import, &signature)
            .map_err(|e| codegen_err(&e))?;
        if id.as_u32() as usize != i {
            return Err(codegen_err(&format!(
                "the runtime's {r:?} declared as function {}, where the code calls {i}",
                id.as_u32()
            )));
        }
    }
    Ok(module)
}

/// Cranelift's working memory for building and compiling a function, kept by each thread
/// between compiles, as Cranelift asks (its register allocator's context is large). It saves
/// little: on a 2-core Intel Xeon VM, three alternating runs of 300 uncached compiles gave
/// medians of 744–769 µs before and 748–757 after for a 16 × 16-byte tile kernel, and
/// 213–221 against 206–211 for a 4 × 4-lane one.
struct Contexts {
    function: Context,
    builder: FunctionBuilderContext,
}

impl Contexts {
    /// Runs `f` with this thread's contexts (compiling does not nest, so they are free).
    fn with<R>(f: impl FnOnce(&mut Contexts) -> R) -> R {
        thread_local! {
            static CONTEXTS: RefCell<Contexts> = RefCell::new(Contexts {
                function: Context::new(),
                builder: FunctionBuilderContext::new(),
            });
        }
        CONTEXTS.with_borrow_mut(f)
    }
}

/// The Cranelift function of `plan` for `isa`.
fn function(plan: &Plan, isa: &dyn TargetIsa) -> Function {
    Contexts::with(|contexts| build_function(plan, isa, &mut contexts.builder).0)
}

/// The Cranelift function of `plan` for `isa`, built with `builder`, and the runtime's routines
/// it calls, in the order it names them.
fn build_function(
    plan: &Plan,
    isa: &dyn TargetIsa,
    builder: &mut FunctionBuilderContext,
) -> (Function, Vec<Routine>) {
    let mut func = Function::with_name_signature(
        UserFuncName::default(),
        codegen::signature(isa.default_call_conv()),
    );
    let routines = codegen::build(plan, &mut func, builder, isa.frontend_config());
    (func, routines)
}

impl Compiled {
    /// The Cranelift IR of the kernel, as text.
    pub(crate) fn clif(&self) -> Result<&str> {
        let isa = host_isa(self.optimise)?;
        Ok(self
            .clif
            .get_or_init(|| function(&self.plan, &*isa).display().to_string()))
    }

    /// The kernel's machine code as assembly text: the function is compiled again, with
    /// Cranelift's disassembly on, the first time it is asked for.
    pub(crate) fn asm(&self) -> Result<&str> {
        let isa = host_isa(self.optimise)?;
        self.asm
            .get_or_init(|| {
                let mut ctx = Context::new();
                ctx.func = function(&self.plan, &*isa);
                ctx.set_disasm(true);
                let code = ctx
                    .compile(&*isa, &mut ControlPlane::default())
                    .map_err(|e| format!("{:?}", e.inner))?;
                code.vcode
                    .clone()
                    .ok_or_else(|| "Cranelift gave no disassembly".to_string())
            })
            .as_deref()
            .map_err(|e| Error::Codegen(e.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Tactics;
    use crate::{Conversion, DType, Layout, Target};

    /// How the kernel of `plan` compiles.
    fn optimise(plan: &Plan) -> Optimise {
        let isa = host_isa(Optimise::Moves).unwrap();
        Optimise::of(plan, &function(plan, &*isa))
    }

    fn transpose(rows: usize, cols: usize) -> (Layout, Layout) {
        (
            Layout::row_major(&[rows, cols]).unwrap(),
            Layout::col_major(&[rows, cols]).unwrap(),
        )
    }

    #[test]
    fn kernels_that_move_only_by_calls_take_the_single_pass_allocator() {
        // Large transposes stage their blocks through the runtime's routines; small ones move
        // register tiles in their own loops.
        let (src, dst) = transpose(2048, 2048);
        assert_eq!(
            optimise(&Plan::new(&src, &dst, 4).unwrap()),
            Optimise::Calls
        );
        let (src, dst) = transpose(64, 64);
        assert_eq!(
            optimise(&Plan::new(&src, &dst, 4).unwrap()),
            Optimise::Moves
        );
        let to_bf16 = Conversion::new(DType::F32, DType::BF16).unwrap();
        let plan =
            Plan::converting(&src, &dst, to_bf16, Tactics::default(), Target::host()).unwrap();
        assert_eq!(optimise(&plan), Optimise::Conversions);
    }

    #[test]
    fn modules_declare_only_the_routines_their_code_calls() {
        let isa = host_isa(Optimise::Moves).unwrap();
        let routines_of = |plan: &Plan| {
            Contexts::with(|contexts| build_function(plan, &*isa, &mut contexts.builder))
        };
        // A small copy moves its own vectors.
        let copy = Layout::row_major(&[64, 64]).unwrap();
        let (_, routines) = routines_of(&Plan::new(&copy, &copy, 4).unwrap());
        assert!(routines.is_empty());
        // A large transpose stages its blocks through the runtime's routines, each named once,
        // by its place in the list.
        let (src, dst) = transpose(2048, 2048);
        let plan = Arc::new(Plan::new(&src, &dst, 4).unwrap());
        let (func, routines) = routines_of(&plan);
        assert!(!routines.is_empty());
        for (i, r) in routines.iter().enumerate() {
            assert!(!routines[i + 1..].contains(r), "{r:?} listed twice");
        }
        let names: Vec<u32> = func
            .params
            .user_named_funcs()
            .values()
            .map(|n| n.index)
            .collect();
        assert_eq!(names, (0..routines.len() as u32).collect::<Vec<_>>());
        let module = kernel_module(isa.clone(), &routines).unwrap();
        assert_eq!(
            module.declarations().get_functions().count(),
            routines.len()
        );
        assert!(compile(plan, Instant::now()).is_ok());
    }

    #[test]
    fn kernels_compiled_by_either_allocator_show_their_assembly() {
        for (rows, cols) in [(2048, 2048), (64, 64)] {
            let (src, dst) = transpose(rows, cols);
            let plan = Arc::new(Plan::new(&src, &dst, 4).unwrap());
            let compiled = compile(plan, Instant::now()).unwrap();
            assert!(compiled.asm().unwrap().contains("ret"));
        }
    }
}
