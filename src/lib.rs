//! relayout: JIT-compiled tensor relayouts.
#![warn(missing_docs)]

pub mod algebra;
mod codegen;
mod dtype;
mod error;
mod jit;
pub mod layout;
#[cfg(feature = "ndarray")]
pub mod ndarray;
pub mod notation;
pub mod plan;
pub mod reference;
mod relayout;
mod runtime;
pub mod suite;
mod tune;

pub use dtype::DType;
pub use error::{Error, Result};
pub use layout::{Coords, Digit, Layout, Source};
pub use relayout::{compile_relayout, compile_relayout_with, Element, Options, Relayout};
