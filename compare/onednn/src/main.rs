//! relayout's fused relayout-and-convert against oneDNN's reorder (being built): for now, prints
//! the version of the oneDNN it links, which `run.sh` fetches.

mod ffi;

fn main() {
    // SAFETY: `dnnl_version` takes no arguments and returns a pointer to a static structure.
    let v = unsafe { &*ffi::dnnl_version() };
    println!("oneDNN {}.{}.{}", v.major, v.minor, v.patch);
}
