//! Hand-written declarations of the few functions of oneDNN's C API this program calls, checked
//! against the v3.2 headers (`oneapi/dnnl/dnnl.h`, `dnnl_common.h`, `dnnl_types.h` and
//! `dnnl_common_types.h` of the `onednn-devel-cpu-gomp` 2023.2.0 wheel).
//!
//! C enums are passed as `c_int`: on x86-64 a C enum whose values fit an `int` is a 32-bit
//! integer argument however the compiler types it. `dnnl_dims_t` is `int64_t[DNNL_MAX_NDIMS]`;
//! as a parameter it decays to a pointer, and the arrays given here always have
//! [`MAX_NDIMS`] entries.

use std::ffi::{c_char, c_int, c_uint, c_void};

/// `dnnl_status_t` (`dnnl_common_types.h`).
pub type Status = c_int;
/// `dnnl_success`.
pub const SUCCESS: Status = 0;
/// `dnnl_unimplemented`: no implementation for the request (e.g. of a reorder).
pub const UNIMPLEMENTED: Status = 3;

/// `dnnl_data_type_t` (`dnnl_common_types.h`).
pub type DataType = c_int;
/// `dnnl_bf16`.
pub const BF16: DataType = 2;
/// `dnnl_f32`.
pub const F32: DataType = 3;
/// `dnnl_s8`.
pub const S8: DataType = 5;

/// `DNNL_MAX_NDIMS` (`dnnl_common_types.h`): the length of a `dnnl_dims_t`.
pub const MAX_NDIMS: usize = 12;
/// `dnnl_dims_t`.
pub type Dims = [i64; MAX_NDIMS];

/// `dnnl_engine_kind_t`: `dnnl_cpu` (`dnnl_common_types.h`).
pub const ENGINE_CPU: c_int = 1;
/// `dnnl_stream_flags_t`: `dnnl_stream_default_flags`, in-order execution.
pub const STREAM_DEFAULT_FLAGS: c_uint = 1;

/// `DNNL_ARG_SRC` (`dnnl_types.h`; the reorder's `DNNL_ARG_FROM` is the same value).
pub const ARG_SRC: c_int = 1;
/// `DNNL_ARG_DST` (`DNNL_ARG_TO`).
pub const ARG_DST: c_int = 17;
/// `DNNL_ARG_ATTR_SCALES`: or-ed with an argument, the scales of that argument.
pub const ARG_ATTR_SCALES: c_int = 4096;

/// `dnnl_query_t`: `dnnl_query_impl_info_str`, the implementation's name (`dnnl_types.h`).
pub const QUERY_IMPL_INFO_STR: c_int = 8;

/// Declares opaque C structs, only ever used behind pointers.
macro_rules! opaque {
    ($($name:ident),*) => {$(
        #[doc = concat!("The opaque `struct ", stringify!($name), "` of the C API.")]
        #[repr(C)]
        pub struct $name {
            _private: [u8; 0],
        }
    )*};
}
opaque!(
    dnnl_engine,
    dnnl_stream,
    dnnl_memory_desc,
    dnnl_memory,
    dnnl_primitive_attr,
    dnnl_primitive_desc,
    dnnl_primitive
);

/// `dnnl_engine_t`.
pub type Engine = *mut dnnl_engine;
/// `dnnl_stream_t`.
pub type Stream = *mut dnnl_stream;
/// `dnnl_memory_desc_t` (`const_dnnl_memory_desc_t` as `*const`).
pub type MemoryDesc = *mut dnnl_memory_desc;
/// `dnnl_memory_t`.
pub type Memory = *mut dnnl_memory;
/// `dnnl_primitive_attr_t`.
pub type PrimitiveAttr = *mut dnnl_primitive_attr;
/// `dnnl_primitive_desc_t`.
pub type PrimitiveDesc = *mut dnnl_primitive_desc;
/// `dnnl_primitive_t`.
pub type Primitive = *mut dnnl_primitive;

/// `dnnl_exec_arg_t` (`dnnl_types.h`): an argument index and the memory passed for it.
#[repr(C)]
pub struct ExecArg {
    /// The argument index, e.g. [`ARG_SRC`].
    pub arg: c_int,
    /// The memory object.
    pub memory: Memory,
}

/// `dnnl_version_t` (`dnnl_common_types.h`).
#[repr(C)]
pub struct Version {
    /// Major version.
    pub major: c_int,
    /// Minor version.
    pub minor: c_int,
    /// Patch release.
    pub patch: c_int,
    /// Git hash of the sources (may be null).
    pub hash: *const c_char,
    /// CPU runtime.
    pub cpu_runtime: c_uint,
    /// GPU runtime.
    pub gpu_runtime: c_uint,
}

// Linked by build.rs (`-l dnnl` from `$ONEDNN_DIR/lib`).
extern "C" {
    /// `dnnl_common.h`.
    pub fn dnnl_version() -> *const Version;
    /// `dnnl_common.h`.
    pub fn dnnl_engine_create(engine: *mut Engine, kind: c_int, index: usize) -> Status;
    /// `dnnl_common.h`.
    pub fn dnnl_engine_destroy(engine: Engine) -> Status;
    /// `dnnl_common.h`.
    pub fn dnnl_stream_create(stream: *mut Stream, engine: Engine, flags: c_uint) -> Status;
    /// `dnnl_common.h`.
    pub fn dnnl_stream_wait(stream: Stream) -> Status;
    /// `dnnl_common.h`.
    pub fn dnnl_stream_destroy(stream: Stream) -> Status;
    /// `dnnl.h`.
    pub fn dnnl_memory_desc_create_with_strides(
        memory_desc: *mut MemoryDesc,
        ndims: c_int,
        dims: *const i64,
        data_type: DataType,
        strides: *const i64,
    ) -> Status;
    /// `dnnl.h`.
    pub fn dnnl_memory_desc_destroy(memory_desc: MemoryDesc) -> Status;
    /// `dnnl.h`.
    pub fn dnnl_primitive_attr_create(attr: *mut PrimitiveAttr) -> Status;
    /// `dnnl.h`.
    pub fn dnnl_primitive_attr_destroy(attr: PrimitiveAttr) -> Status;
    /// `dnnl.h`.
    pub fn dnnl_primitive_attr_set_scales_mask(
        attr: PrimitiveAttr,
        arg: c_int,
        mask: c_int,
    ) -> Status;
    /// `dnnl.h`.
    pub fn dnnl_reorder_primitive_desc_create(
        reorder_primitive_desc: *mut PrimitiveDesc,
        src_desc: *const dnnl_memory_desc,
        src_engine: Engine,
        dst_desc: *const dnnl_memory_desc,
        dst_engine: Engine,
        attr: *const dnnl_primitive_attr,
    ) -> Status;
    /// `dnnl.h`.
    pub fn dnnl_primitive_desc_query(
        primitive_desc: *const dnnl_primitive_desc,
        what: c_int,
        index: c_int,
        result: *mut c_void,
    ) -> Status;
    /// `dnnl.h`.
    pub fn dnnl_primitive_desc_destroy(primitive_desc: PrimitiveDesc) -> Status;
    /// `dnnl.h`.
    pub fn dnnl_primitive_create(
        primitive: *mut Primitive,
        primitive_desc: *const dnnl_primitive_desc,
    ) -> Status;
    /// `dnnl.h`.
    pub fn dnnl_primitive_destroy(primitive: Primitive) -> Status;
    /// `dnnl.h`.
    pub fn dnnl_memory_create(
        memory: *mut Memory,
        memory_desc: *const dnnl_memory_desc,
        engine: Engine,
        handle: *mut c_void,
    ) -> Status;
    /// `dnnl.h`.
    pub fn dnnl_memory_destroy(memory: Memory) -> Status;
    /// `dnnl.h`.
    pub fn dnnl_primitive_execute(
        primitive: *const dnnl_primitive,
        stream: Stream,
        nargs: c_int,
        args: *const ExecArg,
    ) -> Status;
}
