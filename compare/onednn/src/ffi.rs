//! Hand-written declarations of the functions of oneDNN's C API this program calls, checked
//! against the v3.2 headers (`oneapi/dnnl/dnnl_common.h` and `dnnl_common_types.h` of the
//! `onednn-devel-cpu-gomp` 2023.2.0 wheel).

use std::ffi::{c_char, c_int, c_uint};

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
}
