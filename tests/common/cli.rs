//! Running the `relayout` binary from integration tests.

use std::process::{Command, Output};

/// Runs the command line with `args` and returns its whole output, whatever the exit status.
pub fn run_cli_raw(args: &[&str]) -> Output {
    // `option_env!` keeps the helpers compiling when the binary is not built (no `cli` feature).
    let Some(binary) = option_env!("CARGO_BIN_EXE_relayout") else {
        panic!("the relayout binary is built only with the cli feature");
    };
    Command::new(binary)
        .args(args)
        .output()
        .expect("the relayout binary runs")
}

/// Runs the command line and returns what it printed, failing the test on a non-zero exit.
pub fn run_cli(args: &[&str]) -> String {
    let out = run_cli_raw(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}
