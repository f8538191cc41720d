//! Tuning choices kept across processes: a small text file of what [`Options::tune`] chose, so
//! that a process does not pay for measuring the same relayout again.
//!
//! Each line of the file is one choice, keyed by the CPU it was measured on, the thread count,
//! the element size, the [`Target`](crate::Target) and the two layouts (in the canonical text
//! of [`Layout`](crate::Layout)'s `Display`), tab-separated, with the chosen
//! [`Tactics`] last. [`load`] reads the lines measured on this CPU; a relayout compiled with
//! [`Options::tune`] afterwards uses what was chosen, without measuring. [`save`] writes every
//! choice this process made or loaded. Tactics change how fast a kernel runs, never what it
//! computes, so a stale or edited file can cost speed but not correctness.
//!
//! ```
//! use relayout::{compile_relayout_with, tuning, Layout, Options};
//!
//! let path = std::env::temp_dir().join(format!("relayout-doc-{}.tsv", std::process::id()));
//! // Nothing tuned yet in this process: an empty file.
//! assert_eq!(tuning::save(&path)?, 0);
//! assert_eq!(tuning::load(&path)?, 0);
//! # std::fs::remove_file(&path).ok();
//! # Ok::<(), relayout::Error>(())
//! ```
//!
//! [`Options::tune`]: crate::Options::tune

use std::fmt::Write as _;
use std::path::Path;

use crate::engine::{Engine, TuneKey};
use crate::error::{Error, Result};
use crate::plan::Tactics;

/// The first line of a tuning file.
const HEADER: &str =
    "# relayout tuning v1: cpu, threads, elements, target, source, destination, tactics";

/// The key of a choice as the file writes it: every field but the tactics, tab-separated.
pub(crate) fn key_text(cpu: &str, key: &TuneKey) -> String {
    let r = &key.request;
    // The elements: their bytes, their bits when packed, or the conversion.
    let elements = match (r.conversion, r.packed) {
        (Some(c), _) => c.to_string(),
        (None, Some(p)) => format!("{}-bit", p.bits()),
        (None, None) => r.elem_size.to_string(),
    };
    format!(
        "{cpu}\t{}\t{elements}\t{}\t{}\t{}",
        key.threads, r.target, r.src, r.dst
    )
}

/// Writes every tuning choice this process has made or loaded to `path` (replacing the file);
/// returns how many.
pub fn save(path: impl AsRef<Path>) -> Result<usize> {
    let path = path.as_ref();
    let choices = Engine::global().tuning_choices(&cpu());
    let mut text = String::from(HEADER);
    text.push('\n');
    for (key, tactics) in &choices {
        // Writing to a String cannot fail.
        let _ = writeln!(text, "{key}\t{tactics}");
    }
    std::fs::write(path, text).map_err(|e| io_error("write", path, &e))?;
    Ok(choices.len())
}

/// Reads the choices in `path` that were measured on this CPU (see the [module docs](self));
/// returns how many. Lines of other CPUs are skipped; a line that does not parse is an error
/// that names it.
pub fn load(path: impl AsRef<Path>) -> Result<usize> {
    let path = path.as_ref();
    let text = std::fs::read_to_string(path).map_err(|e| io_error("read", path, &e))?;
    let cpu = cpu();
    let mut loaded = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let bad = |what: &str| Error::Parse {
            notation: "tuning",
            column: 1,
            message: format!("file {}, line {}: {what}", path.display(), n + 1),
        };
        let Some((key, tactics)) = line.rsplit_once('\t') else {
            return Err(bad("expected tab-separated fields"));
        };
        if key.split('\t').count() != 6 {
            return Err(bad("expected 7 tab-separated fields"));
        }
        let tactics: Tactics = tactics.parse().map_err(|e: Error| bad(&e.to_string()))?;
        if key.split('\t').next() == Some(cpu.as_str()) {
            loaded.push((key.to_string(), tactics));
        }
    }
    let count = loaded.len();
    Engine::global().load_tuning_choices(loaded);
    Ok(count)
}

fn io_error(verb: &str, path: &Path, e: &std::io::Error) -> Error {
    Error::Io(format!("cannot {verb} tuning file {}: {e}", path.display()))
}

/// This CPU, as tuning files name it: the model name the operating system reports (on Linux,
/// `/proc/cpuinfo`'s, with its family and model numbers), else the architecture.
///
/// ```
/// assert!(!relayout::tuning::cpu().contains('\t'));
/// ```
pub fn cpu() -> String {
    static CPU: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    CPU.get_or_init(|| {
        let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let field = |name: &str| {
            info.lines()
                .find(|l| l.split(':').next().map(str::trim) == Some(name))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        };
        match field("model name") {
            Some(model) => format!(
                "{model} (family {}, model {})",
                field("cpu family").unwrap_or_default(),
                field("model").unwrap_or_default()
            ),
            None => std::env::consts::ARCH.to_string(),
        }
        .replace('\t', " ")
    })
    .clone()
}
