//! Links oneDNN's `libdnnl.so` from `$ONEDNN_DIR/lib`, with that directory as the binary's run
//! path so that the program runs without `LD_LIBRARY_PATH`. `run.sh` sets `ONEDNN_DIR`.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    println!("cargo:rerun-if-env-changed=ONEDNN_DIR");
    match lib_dir() {
        Ok(lib) => {
            println!("cargo:rerun-if-changed={}", lib.display());
            println!("cargo:rustc-link-search=native={}", lib.display());
            println!("cargo:rustc-link-lib=dylib=dnnl");
            println!("cargo:rustc-link-arg-bins=-Wl,-rpath,{}", lib.display());
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The absolute path of `$ONEDNN_DIR/lib`, or why it is not usable.
fn lib_dir() -> Result<PathBuf, String> {
    let dir = std::env::var_os("ONEDNN_DIR").ok_or(
        "ONEDNN_DIR is not set: it must name an unpacked oneDNN v3.2 (with lib/libdnnl.so); \
         compare/onednn/run.sh downloads one and sets it",
    )?;
    let lib = PathBuf::from(&dir).join("lib");
    let lib = lib.canonicalize().map_err(|e| {
        format!(
            "ONEDNN_DIR={}: cannot open {}: {e}",
            dir.to_string_lossy(),
            lib.display()
        )
    })?;
    if !lib.join("libdnnl.so").exists() {
        return Err(format!("ONEDNN_DIR: no libdnnl.so in {}", lib.display()));
    }
    Ok(lib)
}
