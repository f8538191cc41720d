//! relayout: JIT-compiled tensor relayouts.
#![warn(missing_docs)]

mod dtype;
mod error;
pub mod layout;
pub mod notation;
pub mod reference;

pub use dtype::DType;
pub use error::{Error, Result};
pub use layout::{Coords, Digit, Layout, Source};
