//! The one error type of the crate.

/// Everything that can go wrong in relayout, from parsing a layout to running a kernel.
///
/// Every user-facing failure has its own variant with a message that says what was wrong; no
/// user input makes the crate panic. New variants may be added, so a `match` on an `Error` needs
/// a wildcard arm.
///
/// ```
/// use relayout::{Error, Layout};
///
/// let err = Layout::parse("cute:(2,4:(1,2)").unwrap_err();
/// assert!(matches!(err, Error::Parse { .. }));
/// assert!(err.to_string().contains("column"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Layout text that does not follow its notation. `column` is 1-based and counts characters.
    #[error("{notation} parse error at column {column}: {message}")]
    Parse {
        /// The notation being parsed (`cute`, `xla`, `tvm`, `morello`, or `layout` for the prefix).
        notation: &'static str,
        /// 1-based character column of the problem in the text given to the parser.
        column: usize,
        /// What was expected or what was wrong.
        message: String,
    },
    /// A layout that parses but cannot exist (a Packed that does not divide, a dim never covered…),
    /// or a CuTe algebra operation whose operands break one of its conditions (a composition
    /// that fails CuTe's divisibility conditions, the complement of overlapping modes…).
    #[error("invalid layout: {0}")]
    InvalidLayout(String),
    /// A well-formed request that relayout does not handle (yet), e.g. TVM axis separators.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// A layout whose offsets or buffer size do not fit the integer types used to address memory.
    #[error("overflow: {0}")]
    Overflow(String),
    /// A coordinate outside the logical shape, or of the wrong rank.
    #[error("coordinate {coord:?} is outside the logical shape {shape:?}")]
    Coordinate {
        /// The coordinate given.
        coord: Vec<usize>,
        /// The logical shape of the layout.
        shape: Vec<usize>,
    },
    /// Source and destination describe tensors of different logical shapes.
    #[error("shape mismatch: source shape {src:?}, destination shape {dst:?}")]
    ShapeMismatch {
        /// Logical shape of the source layout.
        src: Vec<usize>,
        /// Logical shape of the destination layout.
        dst: Vec<usize>,
    },
    /// A destination layout that maps two logical coordinates to one slot.
    #[error("destination layout is not injective: {0}")]
    NotInjective(String),
    /// A buffer shorter than the layout it is used with.
    #[error("{which} buffer too short: the layout needs {needed} elements, the slice has {got}")]
    BufferTooShort {
        /// `source` or `destination`.
        which: &'static str,
        /// Elements the layout needs (its cosize).
        needed: usize,
        /// Elements the slice holds.
        got: usize,
    },
    /// A buffer of packed sub-byte elements shorter than the layout it is used with.
    #[error(
        "{which} buffer too short: the layout needs {elements} elements of {bits} bits, \
         {needed} bytes packed, the slice has {got} bytes"
    )]
    PackedBufferTooShort {
        /// `source` or `destination`.
        which: &'static str,
        /// Elements the layout needs (its cosize).
        elements: usize,
        /// Bits of each element.
        bits: u32,
        /// Bytes those elements take, packed.
        needed: usize,
        /// Bytes the slice holds.
        got: usize,
    },
    /// A kernel used with elements of another size than it was compiled for, or a conflicting
    /// element type.
    #[error("element type mismatch: {0}")]
    ElementType(String),
    /// A conversion that cannot be done: a type without numeric values, a scale that is not
    /// finite, a pad value that is not a destination element.
    #[error("conversion: {0}")]
    Conversion(String),
    /// Source and destination buffers overlap. Front ends that are handed two buffers from
    /// outside Rust return it (the Python bindings, for an `out=` array that overlaps the
    /// input); the Rust API cannot meet it, since a `&[T]` and a `&mut [T]` never overlap and
    /// [`Relayout::run_raw`](crate::Relayout::run_raw) requires ranges that do not.
    #[error("source and destination buffers overlap")]
    Overlap,
    /// A file that could not be read or written (a tuning file, say), with the reason.
    #[error("{0}")]
    Io(String),
    /// Cranelift rejected the generated code. This is a bug in relayout; please report it.
    #[error("code generation failed: {0}")]
    Codegen(String),
}

/// `Result` with the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
