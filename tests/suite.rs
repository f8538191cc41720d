//! The benchmark suite: every case at reduced size through the JIT against the reference, the
//! full-size cases parse and compile, each case's permutation describes the same relayout, and
//! `relayout bench` prints what it promises (no timings are asserted).

mod common;

use std::process::Command;

use common::check_pair_as;
use relayout::suite::{self, Case, Size};
use relayout::{compile_relayout_with, reference, Layout, Options};

#[test]
fn every_reduced_case_matches_the_reference_bit_for_bit() {
    for case in suite::cases(Size::Reduced) {
        let (src, dst) = case.layouts().unwrap();
        match case.dtype.size() {
            1 => check_pair_as::<u8>(&src, &dst, None),
            2 => check_pair_as::<u16>(&src, &dst, None),
            4 => check_pair_as::<u32>(&src, &dst, None),
            _ => check_pair_as::<u64>(&src, &dst, None),
        }
    }
}

#[test]
fn both_sizes_have_the_same_cases_and_reduced_ones_are_small() {
    let full = suite::cases(Size::Full);
    let reduced = suite::cases(Size::Reduced);
    let names: Vec<&str> = full.iter().map(|c| c.name).collect();
    assert_eq!(names, reduced.iter().map(|c| c.name).collect::<Vec<_>>());
    assert_eq!(names.len(), 20);
    let mut unique = names.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "case names are unique");
    for (f, r) in full.iter().zip(&reduced) {
        assert_eq!((f.dtype, f.about), (r.dtype, r.about), "{}", f.name);
        assert!(
            r.elements() <= 20_000,
            "{}: {} elements",
            r.name,
            r.elements()
        );
        assert_eq!(suite::case(f.name, Size::Full).as_ref(), Some(f));
    }
    assert_eq!(suite::case("no_such_case", Size::Full), None);
}

#[test]
fn full_size_cases_parse_with_their_sizes_and_compile() {
    let mib = 1 << 20;
    let expected_bytes = [
        ("copy_f32", 64 * mib),
        ("t2d_f32_8192", 256 * mib),
        ("t2d_f32_8000", 8000 * 8000 * 4),
        ("t2d_u8_8000", 8000 * 8000),
        ("t2d_u16_8000", 8000 * 8000 * 2),
        ("t2d_f64_8000", 8000 * 8000 * 8),
        ("t2d_f32_64", 16 << 10),
        ("t2d_f32_512", mib),
        ("nchw_to_nhwc", 32 * 64 * 56 * 56 * 4),
        ("nchw_to_nchw16c", 32 * 64 * 56 * 56 * 4),
        ("xla_tile_f32", 64 * mib),
        ("xla_tile_bf16", 32 * mib),
        ("oddeven_f32", 64 * mib),
        ("oddeven_bf16_rev", 64 * mib),
        ("perm3d_021", 64 * mib),
        ("perm3d_210", 64 * mib),
    ];
    for (name, bytes) in expected_bytes {
        assert_eq!(
            suite::case(name, Size::Full).unwrap().bytes(),
            bytes,
            "{name}"
        );
    }
    for case in suite::cases(Size::Full) {
        let (src, dst) = case.layouts().unwrap();
        assert_eq!(src.shape(), dst.shape(), "{}", case.name);
        assert_eq!(src.size(), case.elements(), "{}", case.name);
        assert_eq!(
            (src.cosize(), dst.cosize()),
            (src.size(), dst.size()),
            "{}: dense buffers",
            case.name
        );
        // Compiling plans and JIT-compiles the full-size kernel without running it.
        compile_relayout_with(&src, &dst, Options::new().dtype(case.dtype))
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
    }
}

#[test]
fn full_size_layouts_are_the_advertised_ones() {
    let case = |name| suite::case(name, Size::Full).unwrap();
    let same = |text: &str, layout: Layout| {
        assert!(
            Layout::parse(text).unwrap().same_function(&layout),
            "{text}"
        );
    };
    let t = case("t2d_u8_8000");
    same(&t.src, Layout::row_major(&[8000, 8000]).unwrap());
    same(&t.dst, Layout::col_major(&[8000, 8000]).unwrap());
    let c = case("copy_f32");
    assert_eq!(c.src, c.dst);
    let p = case("perm3d_021");
    same(
        &p.dst,
        Layout::ordered(&[64, 512, 512], &[0, 2, 1]).unwrap(),
    );
    let nhwc = case("nhwc_to_nchw16c");
    assert_eq!(
        nhwc.dst,
        "tvm:[32,56,56,64] lambda n,h,w,c: [n, c//16, h, w, c%16]"
    );
    assert_eq!(
        case("xla_tile_bf16").dst,
        "xla:bf16[4096,4096]{1,0:T(8,128)(2,1)}"
    );
    assert_eq!(
        case("oddeven_bf16_rev").src,
        "morello:[33554432] [0, 0 oe(32)]"
    );
}

/// Applies a case's permutation by index arithmetic: the destination in row-major order of the
/// permuted shape, each element read from the source viewed as a row-major array.
fn permute(case: &Case, src: &[u32]) -> Vec<u32> {
    let p = &case.permutation;
    let mut strides = vec![1usize; p.shape.len()];
    for d in (0..p.shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * p.shape[d + 1];
    }
    let out_shape = p.permuted_shape();
    let mut out = Vec::with_capacity(src.len());
    relayout::layout::for_each_coord(&out_shape, |x| {
        let from: usize = x.iter().zip(&p.axes).map(|(i, &a)| i * strides[a]).sum();
        out.push(src[from]);
    });
    out
}

#[test]
fn each_case_is_its_permutation_of_axes() {
    for case in suite::cases(Size::Reduced) {
        let (src, dst) = case.layouts().unwrap();
        let a: Vec<u32> = (0..src.cosize() as u32).collect();
        let mut want = vec![u32::MAX; dst.cosize()];
        reference::relayout(&src, &a, &dst, &mut want, None).unwrap();
        assert_eq!(permute(&case, &a), want, "{}", case.name);
    }
}

#[test]
fn batched_transposes_are_recognised() {
    let rows_cols = |name| {
        suite::case(name, Size::Full)
            .unwrap()
            .permutation
            .batched_transpose()
    };
    assert_eq!(rows_cols("t2d_f32_8000"), Some((8000, 8000)));
    assert_eq!(rows_cols("nchw_to_nhwc"), Some((64, 56 * 56)));
    assert_eq!(rows_cols("perm3d_021"), Some((512, 512)));
    assert_eq!(rows_cols("oddeven_f32"), Some((8, 2)));
    assert_eq!(rows_cols("perm3d_210"), None);
    assert_eq!(rows_cols("xla_tile_f32"), None);
    assert_eq!(rows_cols("copy_f32"), None);
}

const TSV_HEADER: &str = "case\tdtype\tbytes\tthreads\trelayout_gbps\tmemcpy_gbps\tratio_memcpy\tnaive_gbps\tspeedup_naive\tcompile_us\ttuned_ms";

fn bench(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_relayout"))
        .arg("bench")
        .args(args)
        .output()
        .unwrap()
}

/// Runs `relayout bench` with `args`, checks its tsv output and returns the rows' cells.
fn bench_tsv(args: &[&str]) -> Vec<Vec<String>> {
    let out = bench(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(TSV_HEADER), "the exact header line");
    lines
        .map(|line| {
            let cells: Vec<String> = line.split('\t').map(String::from).collect();
            assert_eq!(cells.len(), 11, "every column in {line:?}");
            let bytes: usize = cells[2].parse().unwrap();
            let threads: usize = cells[3].parse().unwrap();
            assert!(bytes > 0 && threads > 0, "{line}");
            for cell in &cells[4..] {
                let x: f64 = cell
                    .parse()
                    .unwrap_or_else(|_| panic!("{cell:?} in {line}"));
                assert!(x.is_finite() && x > 0.0, "{cell:?} in {line}");
            }
            cells
        })
        .collect()
}

#[test]
fn bench_tsv_covers_the_whole_reduced_suite() {
    let rows = bench_tsv(&[
        "--reduced",
        "--runs",
        "1",
        "--naive-runs",
        "1",
        "--format",
        "tsv",
    ]);
    let cases = suite::cases(Size::Reduced);
    assert_eq!(rows.len(), cases.len());
    for (row, case) in rows.iter().zip(&cases) {
        assert_eq!(row[0], case.name);
        assert_eq!(row[1], case.dtype.to_string());
        assert_eq!(row[2], case.bytes().to_string());
        assert_eq!(row[3], "1");
    }
}

#[test]
fn bench_starts_buffers_past_a_page() {
    // A 1.6 MiB transpose, whose kernels for buffers off a cache line run there; offsets past a
    // page and between elements are taken modulo the page and rounded down to an element.
    for offset in ["16", "4099"] {
        let rows = bench_tsv(&[
            "--src",
            "cute:(640,640):(640,1)",
            "--dst",
            "cute:(640,640):(1,640)",
            "--page-offset",
            offset,
            "--no-tune",
            "--runs",
            "1",
            "--format",
            "tsv",
        ]);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0][2], (640 * 640 * 4).to_string());
    }
    let out = bench(&["--page-offset", "-1", "--list"]);
    assert!(!out.status.success());
}

#[test]
fn bench_a_pair_on_two_threads_with_a_plot() {
    let plot = std::env::temp_dir().join(format!("relayout-bench-{}.svg", std::process::id()));
    let rows = bench_tsv(&[
        "--src",
        "cute:(1024,1024):(1024,1)",
        "--dst",
        "cute:(1024,1024):(1,1024)",
        "--dtype",
        "u16",
        "--threads",
        "2",
        "--runs",
        "1",
        "--format",
        "tsv",
        "--plot",
        plot.to_str().unwrap(),
    ]);
    assert_eq!(rows.len(), 1);
    // Two MiB of destination: enough for two threads at one MiB each.
    assert_eq!(rows[0][..4], ["custom", "u16", "2097152", "2"]);
    let svg = std::fs::read_to_string(&plot).unwrap();
    std::fs::remove_file(&plot).unwrap();
    assert!(svg.starts_with("<svg ") && svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains(">custom</text>"));
    assert_eq!(svg.matches("<rect ").count(), 2, "background and one bar");
}

#[test]
fn bench_named_cases_in_the_other_formats() {
    for (format, lines) in [("table", 3), ("markdown", 4)] {
        let out = bench(&[
            "--reduced",
            "--runs",
            "1",
            "--format",
            format,
            "t2d_f32_64",
            "xla_tile_bf16",
        ]);
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).unwrap();
        assert_eq!(text.lines().count(), lines, "{format}:\n{text}");
        assert!(text.contains("t2d_f32_64") && text.contains("xla_tile_bf16"));
        assert!(text.contains("relayout GB/s"));
    }
}

#[test]
fn bench_candidates_time_each_distinct_blocking() {
    use relayout::plan::{Plan, Tactics};
    use relayout::Target;
    let rows = bench_tsv(&[
        "--reduced",
        "--runs",
        "1",
        "--format",
        "tsv",
        "--candidates",
        "t2d_f32_512",
        "copy_f32",
    ]);
    // One row per candidate whose plan differs from every earlier one's, named by its index.
    for name in ["t2d_f32_512", "copy_f32"] {
        let case = suite::case(name, Size::Reduced).unwrap();
        let (src, dst) = case.layouts().unwrap();
        let mut plans: Vec<Plan> = Vec::new();
        let mut want = Vec::new();
        for (k, &t) in Tactics::CANDIDATES.iter().enumerate() {
            let plan =
                Plan::with_tactics(&src, &dst, case.dtype.size(), t, Target::host()).unwrap();
            if !plans.contains(&plan) {
                plans.push(plan);
                want.push(format!("{name}#{k}"));
            }
        }
        let got: Vec<&String> = rows
            .iter()
            .map(|r| &r[0])
            .filter(|n| n.starts_with(&format!("{name}#")))
            .collect();
        assert_eq!(got, want.iter().collect::<Vec<_>>());
    }
    assert!(
        rows.iter()
            .filter(|r| r[0].starts_with("t2d_f32_512#"))
            .count()
            > 1
    );
    let out = bench(&["--reduced", "--candidates", "--no-tune", "copy_f32"]);
    assert!(!out.status.success(), "--candidates and --no-tune conflict");
}

#[test]
fn bench_lists_cases_and_rejects_bad_requests() {
    let out = bench(&["--list"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for case in suite::cases(Size::Full) {
        let flags = format!(
            "--src '{}' --dst '{}' --dtype {}",
            case.src, case.dst, case.dtype
        );
        assert!(text.contains(&flags), "{flags}");
    }
    for args in [
        &["no_such_case"][..],
        &["--src", "cute:(4,4):(4,1)"],
        &[
            "--src",
            "cute:(4,4):(4,1)",
            "--dst",
            "cute:(4,4):(1,4)",
            "t2d_f32_64",
        ],
        &["--src", "cute:(4,4):(4,1)", "--dst", "cute:(4,5):(1,4)"],
        &["--runs", "0"],
    ] {
        let out = bench(args);
        assert!(!out.status.success(), "{args:?} should fail");
        assert!(!out.stderr.is_empty(), "{args:?} says why");
    }
}

#[test]
fn bench_keeps_tuning_choices_in_a_file() {
    // A 9.4 MB transpose, large enough to tune: the first run measures and writes the choice,
    // the second reads it back (and writes it again).
    let file =
        std::env::temp_dir().join(format!("relayout-bench-tuning-{}.tsv", std::process::id()));
    let file_arg = file.to_str().unwrap();
    let args = [
        "--src",
        "cute:(1150,2048):(2048,1)",
        "--dst",
        "cute:(1150,2048):(1,1150)",
        "--runs",
        "1",
        "--format",
        "tsv",
        "--tuning-file",
        file_arg,
    ];
    assert_eq!(bench_tsv(&args).len(), 1);
    let first = std::fs::read_to_string(&file).unwrap();
    let choices: Vec<&str> = first.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(choices.len(), 1, "{first}");
    assert!(
        choices[0].contains("[1150, 2048] -> 2048*x0 + x1"),
        "{first}"
    );
    assert_eq!(bench_tsv(&args).len(), 1);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), first);
    std::fs::remove_file(&file).ok();

    // Converting relayouts keep theirs too: the fused kernel's choice, under its conversion.
    let mut converting = args.to_vec();
    converting.extend(["--to", "f64"]);
    let out = bench(&converting);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let kept = std::fs::read_to_string(&file).unwrap();
    assert!(kept.lines().any(|l| l.contains("f32 -> f64")), "{kept}");
    std::fs::remove_file(&file).ok();
}

/// `relayout bench --conversions` times every converting case of the suite, and a converting
/// pair, with every column a positive figure; the conversion flags need a pair.
#[test]
fn bench_conversions_tsv_covers_the_converting_cases() {
    let header = "case\tconversion\tbytes\tthreads\tfused_gbps\ttwo_pass_gbps\tunconverted_gbps\t\
                  memcpy_gbps\tnaive_gbps\tfused_over_two_pass\tfused_over_unconverted\t\
                  fused_over_memcpy\tcompile_us";
    let rows = |args: &[&str]| -> Vec<Vec<String>> {
        let out = bench(args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some(header));
        lines
            .map(|line| {
                let cells: Vec<String> = line.split('\t').map(String::from).collect();
                assert_eq!(cells.len(), 13, "{line}");
                for cell in &cells[2..] {
                    let x: f64 = cell
                        .parse()
                        .unwrap_or_else(|_| panic!("{cell:?} in {line}"));
                    assert!(x.is_finite() && x > 0.0, "{cell:?} in {line}");
                }
                cells
            })
            .collect()
    };
    let quick = [
        "--reduced",
        "--runs",
        "1",
        "--naive-runs",
        "1",
        "--format",
        "tsv",
    ];
    let suite_rows = rows(&[&["--conversions"], &quick[..]].concat());
    let cases = suite::conversion_cases(Size::Reduced).unwrap();
    assert_eq!(suite_rows.len(), cases.len());
    for (row, case) in suite_rows.iter().zip(&cases) {
        assert_eq!(row[0], case.name);
        let c = case.conversion;
        assert_eq!(row[1], format!("{}>{}", c.from_type(), c.to_type()));
    }
    let pair = [
        "--src",
        "cute:(40,48):(48,1)",
        "--dst",
        "cute:(40,48):(1,40)",
        "--to",
        "bf16",
    ];
    let pair_rows = rows(&[&pair[..], &quick[..]].concat());
    assert_eq!(pair_rows.len(), 1);
    assert_eq!(
        (pair_rows[0][0].as_str(), pair_rows[0][1].as_str()),
        ("custom", "f32>bf16")
    );
    // --candidates: the fused kernel pinned to each candidate tactics in turn, a row each.
    let candidate_rows = rows(&[&pair[..], &quick[..], &["--candidates"]].concat());
    let names: Vec<&str> = candidate_rows.iter().map(|r| r[0].as_str()).collect();
    let want: Vec<String> = (0..relayout::plan::Tactics::CANDIDATES.len())
        .map(|k| format!("custom#{k}"))
        .collect();
    assert_eq!(names, want);
    let out = bench(&["--to", "bf16", "--reduced"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--src/--dst pair"));
}
