//! Every layout of the public worked examples: offsets through the command line, and the JIT
//! against the reference between each layout and the row-major layout of its shape.

mod common;

use common::{golden_cases, run_cli};
use relayout::Layout;
use serde_json::Value;

/// The notation-prefixed text of a layout case.
fn layout_text(case: &Value) -> String {
    let layout = case["layout"].as_str().unwrap();
    let shape = case["logical_shape"].to_string();
    match case["system"].as_str().unwrap() {
        "tvm" | "morello" => format!("{}:{shape} {layout}", case["system"].as_str().unwrap()),
        system => format!("{system}:{layout}"),
    }
}

fn layout_cases() -> Vec<Value> {
    golden_cases()
        .into_iter()
        .filter(|c| c.get("op").is_none())
        .collect()
}

fn offsets_from_cli(text: &str) -> Vec<i64> {
    let line = run_cli(&["offsets", text]);
    assert_eq!(line.lines().count(), 1, "{text}: one line of offsets");
    line.split(' ').map(|x| x.trim().parse().unwrap()).collect()
}

#[test]
fn cli_offsets_reproduce_every_worked_example() {
    let cases = layout_cases();
    assert!(
        cases.len() >= 30,
        "expected the public layout cases, found {}",
        cases.len()
    );
    for case in &cases {
        let text = layout_text(case);
        let got = offsets_from_cli(&text);
        let shape: Vec<usize> = serde_json::from_value(case["logical_shape"].clone()).unwrap();
        assert_eq!(got.len(), shape.iter().product::<usize>(), "{text}");
        match case["offsets"].as_array() {
            Some(want) => {
                let want: Vec<i64> = want.iter().map(|v| v.as_i64().unwrap()).collect();
                assert_eq!(got, want, "{}: {text}", case["id"]);
            }
            None => {
                let checks = case["spot_checks"].as_array().expect("spot checks");
                for check in checks {
                    let index: Vec<usize> = serde_json::from_value(check["index"].clone()).unwrap();
                    let flat = index.iter().zip(&shape).fold(0, |acc, (i, n)| acc * n + i);
                    assert_eq!(
                        got[flat],
                        check["offset"].as_i64().unwrap(),
                        "{}: {index:?}",
                        case["id"]
                    );
                }
            }
        }
    }
}

#[test]
fn jit_matches_reference_on_every_worked_example() {
    let layouts: Vec<Layout> = layout_cases()
        .iter()
        .map(|c| Layout::parse(&layout_text(c)).unwrap())
        .collect();
    for l in &layouts {
        let rm = Layout::row_major(l.shape()).unwrap();
        common::check_pair(l, &rm);
        if l.is_injective() {
            common::check_pair(&rm, l);
        }
        for other in layouts
            .iter()
            .filter(|o| o.shape() == l.shape() && o.is_injective())
        {
            common::check_pair(l, other);
        }
    }
}

#[test]
fn cli_apply_prints_what_the_reference_gives() {
    for case in layout_cases().iter().filter(|c| c["system"] != "xla") {
        let text = layout_text(case);
        let l = Layout::parse(&text).unwrap();
        if !l.is_injective() || l.size() > 4096 {
            continue;
        }
        let shape = l
            .shape()
            .iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(",");
        let src = format!(
            "morello:[{shape}] [{}]",
            (0..l.rank())
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        let printed = run_cli(&["apply", "--src", &src, "--dst", &text, "--dtype", "u32"]);
        let rm = Layout::row_major(l.shape()).unwrap();
        let a: Vec<u32> = (0..rm.cosize() as u32).collect();
        let mut want = vec![u32::MAX; l.cosize()];
        relayout::reference::relayout(&rm, &a, &l, &mut want, None).unwrap();
        let want = want
            .iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(printed.trim_end(), want, "{text}");
    }
}

#[test]
fn cli_check_passes_on_every_worked_example() {
    for case in layout_cases() {
        let text = layout_text(&case);
        let l = Layout::parse(&text).unwrap();
        if !l.is_injective() || l.size() > 1 << 16 {
            continue;
        }
        let rm = format!(
            "cute:{}",
            relayout::notation::cute::CuteLayout::from_layout(
                &Layout::row_major(l.shape()).unwrap()
            )
            .unwrap()
        );
        for dtype in ["u8", "bf16", "f32", "f64"] {
            let dtype_args = if case["system"] == "xla" {
                vec![]
            } else {
                vec!["--dtype", dtype]
            };
            for (src, dst) in [(&rm, &text), (&text, &rm)] {
                let mut args = vec!["check", "--src", src, "--dst", dst];
                args.extend(&dtype_args);
                let out = run_cli(&args);
                assert!(out.starts_with("ok: "), "{args:?}: {out}");
            }
        }
    }
}

#[test]
fn cli_apply_fills_padding_with_the_pad_value() {
    // Rows of 3 in tiles of 2x2: the last column of tiles is half padding.
    let printed = run_cli(&[
        "apply",
        "--src",
        "morello:[3,3] [0, 1]",
        "--dst",
        "xla:u32[3,3]{1,0:T(2,2)}",
        "--pad-value",
        "99",
    ]);
    let src = Layout::row_major(&[3, 3]).unwrap();
    let dst = Layout::parse("xla:u32[3,3]{1,0:T(2,2)}").unwrap();
    let a: Vec<u32> = (0..9).collect();
    let mut want = vec![u32::MAX; dst.cosize()];
    relayout::reference::relayout(&src, &a, &dst, &mut want, Some(99)).unwrap();
    let want: Vec<String> = want.iter().map(|v| v.to_string()).collect();
    assert_eq!(printed.trim_end(), want.join(" "));
    assert!(want.iter().any(|v| v == "99"));
}
