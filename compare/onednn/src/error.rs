//! The program's errors: a oneDNN call that did not succeed, an error of relayout, or a bad
//! command line.

use std::ffi::c_int;
use std::fmt;

/// Why the comparison could not go on.
#[derive(Debug)]
pub enum Error {
    /// A oneDNN C API call returned a status other than `dnnl_success`.
    Dnnl {
        /// The function called.
        call: &'static str,
        /// The `dnnl_status_t` it returned.
        status: c_int,
    },
    /// relayout failed to parse, compile or run something.
    Relayout(relayout::Error),
    /// Anything else, said in words (a bad argument, a buffer of the wrong size).
    Other(String),
}

/// Results of this program.
pub type Result<T> = std::result::Result<T, Error>;

impl From<relayout::Error> for Error {
    fn from(e: relayout::Error) -> Error {
        Error::Relayout(e)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Dnnl { call, status } => {
                write!(f, "{call} returned {} ({status})", status_name(*status))
            }
            Error::Relayout(e) => write!(f, "relayout: {e}"),
            Error::Other(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for Error {}

/// The name of a `dnnl_status_t` value, as `dnnl_common_types.h` (v3.2) lists them.
fn status_name(status: c_int) -> &'static str {
    match status {
        0 => "dnnl_success",
        1 => "dnnl_out_of_memory",
        2 => "dnnl_invalid_arguments",
        3 => "dnnl_unimplemented",
        4 => "dnnl_last_impl_reached",
        5 => "dnnl_runtime_error",
        6 => "dnnl_not_required",
        7 => "dnnl_invalid_graph",
        8 => "dnnl_invalid_graph_op",
        9 => "dnnl_invalid_shape",
        10 => "dnnl_invalid_data_type",
        _ => "an unknown status",
    }
}
