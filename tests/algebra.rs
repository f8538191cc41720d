//! CuTe's layout algebra against the public worked examples and the numbers of the MoYe and
//! CuTe layout documentation (kept in `tests/data`): every algebra case through the library and
//! through `relayout cute`, `print_layout` tables and printed matrices through `relayout table`,
//! and algebra results used as relayout destinations.

mod common;

use common::{check_pair, cli, golden_cases, run_cli};
use relayout::algebra::{CuteLayout, IntTuple, Tiler};
use relayout::Layout;
use serde_json::Value;

/// The `print_layout` tables of the MoYe documentation's "layout" page, one per line.
const MOYE_TABLES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/moye_print_layout_tables.txt"
);

/// The matrices of CuTe's `01_layout.md`: a layout line, then its rows of offsets.
const CUTE_MATRICES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/cute_layout_matrices.txt"
);

/// The lines of a data file that are not `#` comments.
fn data_lines(path: &str) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .lines()
        .filter(|line| !line.starts_with('#'))
        .map(str::to_string)
        .collect()
}

fn cute(text: &str) -> CuteLayout {
    CuteLayout::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// The algebra cases of the worked examples (the ones with an `op`).
fn op_cases() -> Vec<Value> {
    let cases: Vec<Value> = golden_cases()
        .into_iter()
        .filter(|c| c.get("op").is_some())
        .collect();
    assert_eq!(cases.len(), 21, "the public algebra cases");
    cases
}

fn text(case: &Value, key: &str) -> String {
    case[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key}"))
        .to_string()
}

/// The second operand of a case as the command line takes it: CuTe's `profile=Step<_1,_1>` is
/// the profile `(_1,_1)`.
fn operand(case: &Value) -> Option<String> {
    let arg = case["args"].as_array().unwrap().first()?.as_str().unwrap();
    let arg = arg.strip_prefix("profile=").unwrap_or(arg);
    Some(
        match arg.strip_prefix("Step<").and_then(|a| a.strip_suffix('>')) {
            Some(inner) => format!("({inner})"),
            None => arg.to_string(),
        },
    )
}

/// The case's operation through the library.
fn apply(op: &str, layout: &CuteLayout, arg: Option<&str>) -> relayout::Result<CuteLayout> {
    let tiler = || arg.expect("a second operand").parse::<Tiler>();
    match (op, arg) {
        ("coalesce", Some(profile)) => layout.coalesce_by(&profile.parse()?),
        ("coalesce", None) => Ok(layout.coalesce()),
        ("complement", Some(cotarget)) => layout.complement(cotarget.parse::<IntTuple>()?),
        ("complement", None) => layout.complement_in_cosize(),
        ("right_inverse", None) => Ok(layout.right_inverse()),
        ("composition", _) => layout.composition(tiler()?),
        ("logical_divide", _) => layout.logical_divide(tiler()?),
        ("logical_product", _) => layout.logical_product(tiler()?),
        other => panic!("no algebra case is {other:?}"),
    }
}

/// Checks a result against its case: the same size and 1-D function as the expected layout,
/// the same text as CuTe's (without the static markers `_`) where the case is exact, and the
/// text of the reference implementation.
fn check_case(case: &Value, result: &CuteLayout) {
    let id = text(case, "id");
    let want: Vec<i64> = case["expected_offsets_1d_colex"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    let got: Vec<i64> = (0..result.size() as i64)
        .map(|i| result.eval(i).unwrap())
        .collect();
    assert_eq!(got, want, "{id}: {result}");
    let expected = text(case, "expected").replace('_', "");
    let expected_offsets: Vec<i64> = {
        let l = cute(&expected);
        (0..l.size() as i64).map(|i| l.eval(i).unwrap()).collect()
    };
    assert_eq!(got, expected_offsets, "{id}: {result} and {expected}");
    match case["match"].as_str().unwrap() {
        "exact" => assert_eq!(result.to_string(), expected, "{id}"),
        "functional" => {}
        other => panic!("{id}: unknown match {other}"),
    }
    assert_eq!(result.to_string(), text(case, "reference_result"), "{id}");
}

#[test]
fn every_algebra_case_through_the_library() {
    for case in op_cases() {
        let input = cute(&text(&case, "input"));
        let result = apply(&text(&case, "op"), &input, operand(&case).as_deref())
            .unwrap_or_else(|e| panic!("{}: {e}", case["id"]));
        check_case(&case, &result);
    }
}

#[test]
fn every_algebra_case_through_the_command_line() {
    for case in op_cases() {
        let (op, input) = (text(&case, "op"), text(&case, "input"));
        let mut args = vec!["cute", op.as_str(), input.as_str()];
        let arg = operand(&case);
        args.extend(arg.as_deref());
        let printed = run_cli(&args);
        assert_eq!(printed.lines().count(), 1, "{args:?}");
        check_case(&case, &cute(printed.trim_end()));
    }
}

#[test]
fn command_line_runs_every_operation() {
    for (args, want) in [
        (
            ["tiled_divide", "(6,8):(8,1)", "(3,4)"],
            "((3,4),2,2):((8,1),24,4)",
        ),
        (
            ["flat_divide", "(6,8):(8,1)", "[3:1;4:1]"],
            "(3,4,2,2):(8,1,24,4)",
        ),
        (
            ["zipped_divide", "(6,8):(8,1)", "<3, 4>"],
            "((3,4),(2,2)):((8,1),(24,4))",
        ),
        (
            ["zipped_product", "(2,2):(1,2)", "(3,4):(1,3)"],
            "((2,2),(3,4)):((1,2),(4,12))",
        ),
        (
            ["tiled_product", "(2,2):(1,2)", "(3,4):(1,3)"],
            "((2,2),3,4):((1,2),4,12)",
        ),
        (
            ["flat_product", "(2,2):(1,2)", "(3,4):(1,3)"],
            "(2,2,3,4):(1,2,4,12)",
        ),
        (
            ["blocked_product", "(2,2):(1,2)", "(3,4):(4,1)"],
            "((2,3),(2,4)):((1,16),(2,4))",
        ),
        (
            ["raked_product", "(2,2):(1,2)", "(3,4):(4,1)"],
            "((3,2),(4,2)):((16,1),(4,2))",
        ),
        (["composition", "(6,8):(8,1)", "<_, 4:2>"], "(6,4):(8,2)"),
    ] {
        let mut argv = vec!["cute"];
        argv.extend(args);
        assert_eq!(run_cli(&argv).trim_end(), want, "{args:?}");
    }
}

/// Runs the command line expecting it to fail; returns the exit code and what it said.
fn failure(args: &[&str]) -> (i32, String) {
    let out = cli(args);
    let code = out.status.code().expect("an exit code, not a signal");
    assert_ne!(code, 0, "{args:?} should fail");
    (code, String::from_utf8(out.stderr).unwrap())
}

#[test]
fn command_line_errors_say_what_is_wrong() {
    for (args, says) in [
        (
            &["cute", "composition", "(8,8):(8,1)", "4:3"][..],
            "stride divisibility",
        ),
        (&["cute", "complement", "(2,2):(1,1)", "8"], "non-injective"),
        (&["cute", "coalesce", "(2,2):(1,2)", "(1,1,1)"], "3 modes"),
        (
            &["cute", "logical_divide", "(8,8)", "<2:1, 4:1"],
            "column 10",
        ),
        (&["cute", "right_inverse", "(2,4:(1,2)"], "column 5"),
        (&["table", "(2,2,2):(1,2,4)"], "rank 2"),
        (&["table", "(2,x)"], "column 4"),
    ] {
        let (code, stderr) = failure(args);
        assert_eq!(code, 1, "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    // A missing operand is a usage error.
    let (code, stderr) = failure(&["cute", "composition", "(8,8):(8,1)"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("<TILER>"), "{stderr}");
}

#[test]
fn odd_input_never_panics() {
    for args in [
        &["cute", "composition", "", ""][..],
        &["cute", "composition", "_", "_"],
        &["cute", "logical_product", "(4611686018427387904,2)", "8"],
        &["cute", "blocked_product", "1152921504606846975:1", "(2,2)"],
        &["cute", "complement", "2:1", "9223372036854775807"],
        &[
            "cute",
            "complement",
            "2:1",
            "(9223372036854775807,9223372036854775807,3)",
        ],
        &[
            "cute",
            "coalesce",
            "(1,1,1):(9223372036854775807,0,-9223372036854775808)",
        ],
        &[
            "cute",
            "composition",
            "(2,1):(3,9223372036854775807)",
            "1:9223372036854775807",
        ],
        &[
            "cute",
            "logical_divide",
            "(3,5)",
            "<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<",
        ],
        &["table", "(1000000000000,1000000000000):(1,1000000000000)"],
        &["table", "(3,4):(9223372036854775807,1)"],
    ] {
        let code = cli(args).status.code().expect("an exit code");
        assert!(code == 0 || code == 1, "{args:?}: exit code {code}");
    }
}

/// Every `print_layout(…)` table of the MoYe documentation's "layout" page, in order, with
/// whitespace collapsed and the static markers `_` removed (as [`collapse`] leaves a table).
fn moye_tables() -> Vec<String> {
    data_lines(MOYE_TABLES)
        .into_iter()
        .filter(|line| !line.trim().is_empty())
        .collect()
}

fn collapse(table: &str) -> String {
    table
        .replace('_', "")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn moye_print_layout_tables() {
    let tile = cute("(2,2):(1,2)");
    let matrix_of_tiles = cute("(3,4):(4,1)");
    let complement = cute("4:2").complement(24).unwrap();
    let raked = tile.raked_product(&matrix_of_tiles).unwrap();
    let subtile: Tiler = "<2:3, 2:4>".parse().unwrap();
    let layouts = [
        complement.clone(),
        CuteLayout::from_modes(vec![cute("4:2"), complement]).unwrap(),
        tile.clone(),
        matrix_of_tiles.clone(),
        tile.logical_product(&matrix_of_tiles).unwrap(),
        tile.blocked_product(&matrix_of_tiles).unwrap(),
        raked.clone(),
        raked.logical_divide(&subtile).unwrap(),
        raked.zipped_divide(&subtile).unwrap(),
    ];
    let seeds = moye_tables();
    assert_eq!(
        seeds.len(),
        layouts.len(),
        "the documented print_layout tables"
    );
    for (layout, seed) in layouts.iter().zip(&seeds) {
        let table = layout.table().unwrap().one_based().to_string();
        assert_eq!(collapse(&table), *seed, "{layout}");
        let printed = run_cli(&["table", "--one-based", &layout.to_string()]);
        assert_eq!(printed, table, "{layout}");
    }
}

/// The cells of a printed table, row by row.
fn cells(table: &str) -> Vec<Vec<i64>> {
    table
        .lines()
        .filter(|line| line.contains('|'))
        .map(|line| {
            line.split('|')
                .skip(1)
                .filter_map(|cell| cell.trim().parse().ok())
                .collect()
        })
        .collect()
}

/// The matrices CuTe's `01_layout.md` prints, in order: `Shape:`/`Stride:` pairs, and `print2D`
/// of the layouts it defines (written as their definitions), each with its rows of offsets.
fn cute_seed_matrices() -> Vec<(String, Vec<Vec<i64>>)> {
    let lines = data_lines(CUTE_MATRICES);
    lines
        .split(|line| line.trim().is_empty())
        .filter(|block| !block.is_empty())
        .map(|block| {
            let (layout, rows) = block.split_first().unwrap();
            assert!(!rows.is_empty(), "{layout}: no rows");
            let rows = rows
                .iter()
                .map(|row| {
                    row.split_whitespace()
                        .map(|v| v.parse().unwrap_or_else(|e| panic!("{layout}: {v}: {e}")))
                        .collect()
                })
                .collect();
            (layout.clone(), rows)
        })
        .collect()
}

#[test]
fn table_cells_are_the_offsets_of_each_coordinate() {
    for text in ["((2,2),(3,2)):((1,12),(2,6))", "(3,(2,2)):(-7,(0,3))"] {
        let l = cute(text);
        let lowered = l.to_layout().unwrap();
        for one_based in [false, true] {
            let table = l.table().unwrap();
            let table = if one_based { table.one_based() } else { table };
            let grid = cells(&table.to_string());
            assert_eq!(grid.len(), lowered.shape()[0], "{text}");
            for (m, row) in grid.iter().enumerate() {
                assert_eq!(row.len(), lowered.shape()[1], "{text}");
                for (n, &v) in row.iter().enumerate() {
                    let want = lowered.offset(&[m, n]).unwrap() + i64::from(one_based);
                    assert_eq!(v, want, "{text} at ({m}, {n})");
                }
            }
        }
    }
}

#[test]
fn cute_seed_matrices_as_tables() {
    let matrices = cute_seed_matrices();
    assert_eq!(matrices.len(), 6, "the documented matrices");
    for (layout, rows) in matrices {
        let printed = run_cli(&["table", &layout]);
        assert_eq!(
            printed.lines().next(),
            Some(cute(&layout).to_string().as_str())
        );
        assert_eq!(cells(&printed), rows, "{layout}");
    }
}

#[test]
fn algebra_results_are_relayout_destinations() {
    let block = cute("(2,2):(1,2)");
    let grid = cute("(3,4):(4,1)");
    let results = [
        block.blocked_product(&grid).unwrap(),
        block.raked_product(&grid).unwrap(),
        cute("(6,8):(8,1)")
            .zipped_divide("(3,4)".parse::<Tiler>().unwrap())
            .unwrap(),
        cute("(2,4,6):(4,1,8)").right_inverse(),
    ];
    for l in &results {
        let layout = l.to_layout().unwrap();
        let rm = Layout::row_major(layout.shape()).unwrap();
        check_pair(&rm, &layout);
        check_pair(&layout, &rm);
    }
    // The same through the command line: the printed result is a `cute:` layout.
    let blocked = run_cli(&["cute", "blocked_product", "(2,2):(1,2)", "(3,4):(4,1)"]);
    let dst = format!("cute:{}", blocked.trim_end());
    let checked = run_cli(&["check", "--src", "cute:(6,8):(8,1)", "--dst", &dst]);
    assert!(checked.starts_with("ok: 48 elements"), "{checked}");
}
