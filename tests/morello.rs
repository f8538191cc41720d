//! Morello's exact physical shapes: a `Packed(n)` or `OddEven(n)` that meets less than `n` of
//! its logical dim takes what remains, as Morello's `Layout::expand_physical_shape` (morello
//! `src/layout.rs`) resolves it, so Morello layouts never pad. The worked examples of the
//! project's issue 17, through the library, `relayout offsets` and the JIT.

mod common;

use common::run_cli;
use relayout::notation::morello::ShapedLayout;
use relayout::{Error, Layout};

/// A worked example: a `morello:` layout, its physical shape and every offset, in row-major
/// order of the logical shape.
struct Example {
    text: &'static str,
    physical: &'static [usize],
    offsets: Vec<i64>,
}

/// The three examples of issue 17. The third is also one of Morello's own tests of
/// `expand_physical_shape` (`test_expand_physical_shape_9`).
fn examples() -> Vec<Example> {
    vec![
        // The Packed(4) meets the 2 rows and takes them: row-major, 10 elements (the padding
        // rule this replaces asked for a buffer of 20).
        Example {
            text: "morello:[2,5] [0 p(4), 1]",
            physical: &[2, 5],
            offsets: (0..10).collect(),
        },
        // The Packed(4) takes the 2 rows and leaves 1 for the Dynamic: column-major (the padding
        // rule rejected it, dim 0 being covered before its Dynamic).
        Example {
            text: "morello:[2,5] [0, 1, 0 p(4)]",
            physical: &[1, 5, 2],
            offsets: vec![0, 2, 4, 6, 8, 1, 3, 5, 7, 9],
        },
        // Fastest first: 1 p(4) takes 4 of the 8 columns (2 remain), 0 p(2) 2 of the 10 rows (5
        // remain), 1 p(4) meets the 2 columns left and takes them, the Dynamic of dim 0 takes 5
        // and that of dim 1 the 1 left. The offset of (r, c) is
        // 16·(r/2) + 8·(c/4) + 4·(r%2) + c%4.
        Example {
            text: "morello:[10,8] [1, 0, 1 p(4), 0 p(2), 1 p(4)]",
            physical: &[1, 5, 2, 2, 4],
            offsets: vec![
                0, 1, 2, 3, 8, 9, 10, 11, //
                4, 5, 6, 7, 12, 13, 14, 15, //
                16, 17, 18, 19, 24, 25, 26, 27, //
                20, 21, 22, 23, 28, 29, 30, 31, //
                32, 33, 34, 35, 40, 41, 42, 43, //
                36, 37, 38, 39, 44, 45, 46, 47, //
                48, 49, 50, 51, 56, 57, 58, 59, //
                52, 53, 54, 55, 60, 61, 62, 63, //
                64, 65, 66, 67, 72, 73, 74, 75, //
                68, 69, 70, 71, 76, 77, 78, 79, //
            ],
        },
    ]
}

#[test]
fn worked_examples_through_the_library() {
    for example in examples() {
        let text = example.text;
        let shaped = ShapedLayout::parse(text.strip_prefix("morello:").unwrap()).unwrap();
        assert_eq!(shaped.physical_shape().unwrap(), example.physical, "{text}");
        let layout = Layout::parse(text).unwrap();
        assert_eq!(layout.offsets(), example.offsets, "{text}");
        assert_eq!(layout.cosize(), layout.size(), "{text}: no padding");
        assert_eq!(layout, shaped.to_layout().unwrap(), "{text}");
    }
}

#[test]
fn worked_examples_through_relayout_offsets() {
    for example in examples() {
        let want: Vec<String> = example.offsets.iter().map(i64::to_string).collect();
        let printed = run_cli(&["offsets", example.text]);
        assert_eq!(printed.trim_end(), want.join(" "), "{}", example.text);
    }
}

#[test]
fn worked_examples_relayout_to_and_from_row_major() {
    for example in examples() {
        let layout = Layout::parse(example.text).unwrap();
        let row_major = Layout::row_major(layout.shape()).unwrap();
        common::check_pair(&row_major, &layout);
        common::check_pair(&layout, &row_major);
    }
}

#[test]
fn what_morello_rejects_is_rejected() {
    // (layout, part of the message): an OddEven that meets more than 1 but less than its size,
    // a second physical dim of one logical dim that takes less than its size, and (Morello's
    // test of `expand_physical_shape` on [10, 6]) a Packed that neither divides what remains
    // nor is larger.
    for (text, expected) in [
        ("morello:[6] [0 oe(8)]", "only when 1 remains"),
        ("morello:[6] [0 p(4), 0 p(8)]", "once per logical dim"),
        (
            "morello:[10,6] [1, 0, 1 p(4), 0 p(2), 1 p(4)]",
            "does not divide the 6",
        ),
    ] {
        match Layout::parse(text) {
            Err(Error::InvalidLayout(message)) => {
                assert!(message.contains(expected), "{text}: {message}")
            }
            other => panic!("{text}: expected an invalid layout, got {other:?}"),
        }
    }
}
