//! Any text, through every notation prefix and every notation's own parser: an `Ok` or an
//! `Error`, never a panic. What parses is printed, evaluated and checked a little further.
#![no_main]

use libfuzzer_sys::fuzz_target;
use relayout::notation::{self, cute, morello, tvm, xla};
use relayout::Layout;

/// Layouts up to this many elements are evaluated element by element.
const SMALL: usize = 1 << 14;

fn exercise(layout: &Layout) {
    let _ = layout.to_string();
    let _ = layout.cosize();
    if layout.size() <= SMALL {
        let offsets = layout.offsets();
        assert_eq!(offsets.len(), layout.size());
        let lo = layout.buffer_start();
        let cosize = layout.cosize() as i64;
        assert!(
            offsets.iter().all(|&o| o >= lo && o - lo < cosize),
            "an offset outside the buffer: {layout}"
        );
        let _ = layout.is_injective();
        assert!(layout.coalesce().same_function(layout), "{layout}");
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(parsed) = notation::parse(text) {
        exercise(&parsed.layout);
    }
    for prefix in notation::PREFIXES {
        if let Ok(layout) = Layout::parse(&format!("{prefix}:{text}")) {
            exercise(&layout);
        }
    }
    if let Ok(l) = cute::CuteLayout::parse(text) {
        let _ = l.to_string();
        let _ = l.moye();
        if let Ok(layout) = l.to_layout() {
            exercise(&layout);
        }
    }
    if let Ok(x) = xla::XlaShape::parse(text) {
        let _ = x.to_string();
        if let Ok(layout) = x.to_layout() {
            exercise(&layout);
        }
    }
    if let Ok(m) = tvm::TvmMap::parse(text) {
        let _ = m.to_string();
        if let Ok(layout) = m.to_layout() {
            exercise(&layout);
        }
    }
    if let Ok(m) = morello::ShapedLayout::parse(text) {
        let _ = m.to_string();
        if let Ok(layout) = m.to_layout() {
            exercise(&layout);
        }
    }
    let _ = morello::MorelloLayout::parse(text).map(|m| m.to_string());
});
