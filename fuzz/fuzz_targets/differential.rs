//! A random layout pair from the fuzz input (the generator of the property tests), compiled and
//! run with both buffers flush against inaccessible pages, compared with the reference bit for
//! bit. The first byte picks the element size, the pad value and the thread count; the second
//! whether to pin candidate tactics on a target that streams whatever it can however small the
//! destination,
//! and which; the rest drive the generator.
#![no_main]

use libfuzzer_sys::fuzz_target;
#[path = "../../tests/common/guard.rs"]
mod guard;
#[path = "../../tests/common/random_layouts.rs"]
mod random_layouts;

fuzz_target!(|data: &[u8]| {
    let mut bytes = data.iter().copied();
    let options = bytes.next().unwrap_or(0);
    let forced = bytes.next().unwrap_or(0);
    let pair = random_layouts::pair_from(&mut bytes);
    let run = guard::Run {
        elem_size: [1, 2, 4, 8][usize::from(options & 3)],
        pad: (options & 4 != 0).then_some(0x0F1E_2D3C_4B5A_6978),
        threads: if options & 8 != 0 {
            2 + usize::from(options >> 4) % 3
        } else {
            1
        },
        pin: (forced & 1 == 1).then(|| guard::Pin::eager(usize::from(forced >> 1))),
    };
    if let Err(e) = guard::check_guarded(&pair.src.layout, &pair.dst.layout, run) {
        panic!("{pair}\n{e}");
    }
});
