//! JIT-compiled tensor relayouts.
//!
//! relayout copies a tensor from one memory layout to another with a function compiled, by
//! [Cranelift](https://cranelift.dev), for that exact pair of layouts. Layouts are written in the
//! notations of the systems that produce them (CuTe and MoYe.jl, XLA tiled layouts, TVM index
//! maps, Morello) and lowered to one canonical [`Layout`]. A planner turns the pair into a loop
//! nest with a vector kernel inside (contiguous copies, register transposes, zip and unzip
//! networks, element moves), and the loop nest is compiled to machine code that you can run on
//! slices, and whose plan, Cranelift IR and assembly you can read.
//!
//! To get started, parse the two layouts with [`Layout::parse`], compile the pair with
//! [`compile_relayout`] (or [`compile_relayout_with`] and [`Options`] for other element types,
//! a pad value, threads or tuning), and call [`Relayout::run`].
//!
//! # Example
//!
//! An 8×10 matrix stored row-major, written in CuTe's `shape:stride` notation, is copied into
//! XLA's column-major layout of the same matrix (`minor_to_major` `{0,1}`: dim 0 varies
//! fastest):
//!
//! ```
//! use relayout::{compile_relayout, Layout};
//!
//! let src = Layout::parse("cute:(8,10):(10,1)")?;
//! let dst = Layout::parse("xla:f32[8,10]{0,1}")?;
//! assert_eq!(src.offset(&[1, 2])?, 12); // row 1 starts at 10
//! assert_eq!(dst.offset(&[1, 2])?, 17); // column 2 starts at 16
//!
//! // A kernel for this pair and 4-byte elements (f32, u32, i32).
//! let kernel = compile_relayout(&src, &dst)?;
//!
//! let a: Vec<f32> = (0..80).map(|i| i as f32).collect();
//! let mut b = vec![0.0f32; dst.cosize()];
//! kernel.run(&a, &mut b)?; // checks the element size and the slice lengths
//! assert_eq!(b[..8], [0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0]); // the first column
//! assert_eq!(b[dst.index(&[7, 9])?], a[src.index(&[7, 9])?]);
//!
//! // The loop nest the planner chose: 4x4 register transposes.
//! let plan = kernel.plan().to_string();
//! assert!(plan.contains("transpose"));
//! println!("{plan}");
//! # Ok::<(), relayout::Error>(())
//! ```
//!
//! The plan printed here reads:
//!
//! ```text
//! plan: 4-byte elements, src 80 elements, dst 80 elements, 1 region(s), work 1
//! transpose blocking: run 1024, block 16384, macro 1x1, write in-place, walk along
//! region 0: src at 0, dst at 0
//!   transpose 4x4 register tiles: a 10 (src += 1, dst += 8) x b 8 (src += 10, dst += 1)
//! ```
//!
//! The second line is the blocking the planner fitted to the transpose's rows and the machine's
//! caches ([`plan::Plan::blocking`]; this small matrix is one block). The kernel walks the source
//! rows (`a`, 10 elements) and the destination columns (`b`, 8 elements) in tiles of 4×4 elements
//! held in vector registers; the 10 columns are two whole tiles and a tail of 2, which this small
//! kernel moves element by element (large ones finish their edges with tiles that overlap the whole
//! ones). A matrix of 4 rows would be zipped instead: four strips interleaved in registers, as NCHW
//! → NHWC with four channels is. [`Relayout::clif`] and [`Relayout::asm`] show the Cranelift IR and
//! the machine code of the same kernel, and [`reference::relayout`] is the element-by-element
//! relayout every kernel is tested against.
//!
//! # Modules
//!
//! - [`layout`]: the canonical layout model every notation lowers to ([`Layout`], [`Digit`],
//!   [`Source`]), with offsets, buffer sizes, coalescing and the injectivity check.
//! - [`notation`]: the parsers and printers of the CuTe/MoYe, XLA, TVM and Morello notations.
//! - [`algebra`]: CuTe's layout algebra (composition, complement, divides, products) on CuTe
//!   layouts.
//! - [`plan`]: layout pair → loop nest. Read [`plan::ir`] first: the typed plan IR
//!   ([`plan::Plan`], [`plan::Region`], [`plan::Kernel`] and each kernel's way of writing), then
//!   the planner's steps, the [`plan::Tactics`] it may be told, the verifier and the
//!   interpreter that checks plans without compiling them.
//! - [`Target`]: the machine a plan is made for (vector width, cache line, L1 sets, streaming
//!   threshold, staging limit), shared by the planner and the code generator.
//! - `engine` (internal): the one owner of the pipeline, with bounded caches of plans (keyed by
//!   layout pair, element size, tactics and target), of kernels (keyed by plan) and of tuning
//!   choices; [`compile_relayout`], [`Options`] and [`Relayout`] are its public face.
//! - `codegen` (internal): plan → Cranelift IR; `jit` (internal): Cranelift IR → machine code
//!   that a [`Relayout`] calls; `runtime` (internal): the routines generated code calls
//!   (streaming stores, prefetches, f32 ↔ bf16 rows); `tune` (internal): choosing among candidate tactics by timing the first runs.
//! - [`reference`](mod@reference): the element-by-element relayout, the oracle of the tests and the naive
//!   baseline of the benchmarks.
//! - `suite` (hidden from these docs): the standard benchmark suite that `relayout bench`, the
//!   criterion benches and the side-by-side harness of the peers measure. It has no
//!   dependencies of its own, so it is always compiled, but it is a tool of the project's
//!   benchmarks, not API.
//!
//! [`DType`] names element types (the command line and XLA's text use it), and every failure
//! is an [`Error`].
//!
//! # Features
//!
//! - `cli` (default): the `relayout` command line. Library users can depend on
//!   `relayout = { version = "…", default-features = false }` and skip clap.

pub mod algebra;
mod codegen;
pub mod convert;
mod dtype;
mod engine;
mod error;
mod jit;
pub mod layout;
#[cfg(feature = "ndarray")]
pub mod ndarray;
pub mod notation;
pub mod packing;
pub mod plan;
pub mod reference;
mod relayout;
mod runtime;
#[doc(hidden)]
pub mod suite;
mod target;
mod tune;
pub mod tuning;

pub use convert::{Conversion, PerIndex};
pub use dtype::DType;
pub use error::{Error, Result};
pub use layout::{Coords, Digit, Layout, Source};
pub use relayout::{
    compile_relayout, compile_relayout_with, BlockingSummary, Element, Options, Relayout,
};
pub use target::{Target, CRANELIFT_VECTOR_BYTES};
