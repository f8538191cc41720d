//! The xla notation (placeholder until its parser lands).

use super::Parsed;
use crate::error::{Error, Result};

/// Parses xla layout text that starts `column_offset` characters into the user's input.
pub(crate) fn parse_layout(_text: &str, _column_offset: usize) -> Result<Parsed> {
    Err(Error::Unsupported(
        "the xla notation is not implemented yet".into(),
    ))
}
