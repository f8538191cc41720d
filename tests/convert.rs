//! `relayout convert`: files in, files out, against the reference; `.npy` round trips bit for
//! bit; bad files are one-line errors that leave OUT as it was.

mod common;

use std::path::{Path, PathBuf};

use common::cli;
use relayout::{reference, Element, Layout};

/// A `.npy` file's bytes: a version 1.0 header for `descr` and `shape`, then `data`.
fn npy_bytes(descr: &str, shape: &[usize], fortran: bool, data: &[u8]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape_text = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let order = if fortran { "True" } else { "False" };
    let mut dict =
        format!("{{'descr': '{descr}', 'fortran_order': {order}, 'shape': {shape_text}, }}");
    while (10 + dict.len() + 1) % 64 != 0 {
        dict.push(' ');
    }
    dict.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.extend_from_slice(data);
    out
}

/// The data of a `.npy` file, after checking that it is a 1-D array of `len` elements of `descr`.
fn npy_data(bytes: &[u8], descr: &str, len: usize) -> Vec<u8> {
    let header_len = 10 + u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let header = std::str::from_utf8(&bytes[10..header_len]).unwrap();
    assert!(header.contains(&format!("'descr': '{descr}'")), "{header}");
    assert!(header.contains(&format!("'shape': ({len},)")), "{header}");
    assert!(header.contains("'fortran_order': False"), "{header}");
    assert_eq!(header_len % 64, 0);
    bytes[header_len..].to_vec()
}

/// Distinct-looking bits for `n` elements of `size` bytes (NaN patterns included for floats).
fn pattern_bytes(n: usize, size: usize) -> Vec<u8> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    (0..n * size)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}

/// The destination buffer the reference makes from `src_bytes`, padding slots zero.
fn reference_bytes(src: &str, dst: &str, size: usize, src_bytes: &[u8]) -> Vec<u8> {
    let (src, dst) = (Layout::parse(src).unwrap(), Layout::parse(dst).unwrap());
    match size {
        1 => typed::<u8>(&src, &dst, src_bytes),
        2 => typed::<u16>(&src, &dst, src_bytes),
        4 => typed::<u32>(&src, &dst, src_bytes),
        _ => typed::<u64>(&src, &dst, src_bytes),
    }
}

fn typed<T: Element>(src: &Layout, dst: &Layout, bytes: &[u8]) -> Vec<u8> {
    let size = std::mem::size_of::<T>();
    let from: Vec<T> = bytes
        .chunks_exact(size)
        .map(|c| {
            let mut b = [0u8; 8];
            b[..size].copy_from_slice(c);
            T::from_bits(u64::from_le_bytes(b))
        })
        .collect();
    let mut to = vec![T::from_bits(0); dst.cosize()];
    reference::relayout(src, &from, dst, &mut to, None).unwrap();
    to.iter()
        .flat_map(|t| t.to_bits().to_le_bytes()[..size].to_vec())
        .collect()
}

struct Dir(tempfile::TempDir);

impl Dir {
    fn new() -> Dir {
        Dir(tempfile::tempdir().unwrap())
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }

    fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    /// The names in the directory, sorted (no temporary files may be left).
    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.0.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Runs `relayout convert` and returns its stderr, asserting success or failure.
fn convert(args: &[&str], ok: bool) -> String {
    let mut all = vec!["convert"];
    all.extend_from_slice(args);
    let out = cli(&all);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.success(), ok, "{all:?}: {stderr}");
    if !ok {
        assert_eq!(out.status.code(), Some(1), "{all:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{all:?}: {stderr}");
        assert!(stderr.starts_with("relayout: "), "{stderr}");
    }
    stderr
}

#[test]
fn npy_round_trips_through_xla_tiles_bit_for_bit() {
    let dir = Dir::new();
    let (rows, cols) = (40, 300);
    let plain = format!("xla:f32[{rows},{cols}]{{1,0}}");
    let tiled = format!("xla:f32[{rows},{cols}]{{1,0:T(8,128)}}");
    let data = pattern_bytes(rows * cols, 4);
    let a = dir.write("a.npy", &npy_bytes("<f4", &[rows, cols], false, &data));
    let (t, back) = (dir.path("tiled.npy"), dir.path("back.npy"));
    convert(&["--src", &plain, "--dst", &tiled, s(&a), s(&t)], true);
    let tiled_len = Layout::parse(&tiled).unwrap().cosize();
    assert_eq!(tiled_len, 40 * 384);
    let got = npy_data(&std::fs::read(&t).unwrap(), "<f4", tiled_len);
    assert_eq!(got, reference_bytes(&plain, &tiled, 4, &data));

    convert(&["--src", &tiled, "--dst", &plain, s(&t), s(&back)], true);
    assert_eq!(
        npy_data(&std::fs::read(&back).unwrap(), "<f4", rows * cols),
        data
    );
    assert_eq!(dir.names(), ["a.npy", "back.npy", "tiled.npy"]);
}

#[test]
fn raw_files_every_element_size_and_threads() {
    let dir = Dir::new();
    let src = "cute:(6,40,50):(2000,50,1)";
    let dst = "tvm:[6,40,50] lambda n,c,w: [n, c//16, w, c%16]";
    for (dtype, size) in [("u8", 1), ("bf16", 2), ("i32", 4), ("f64", 8)] {
        let data = pattern_bytes(6 * 40 * 50, size);
        let input = dir.write("in.bin", &data);
        let out = dir.path("out.bin");
        for threads in ["1", "2"] {
            let args = [
                "--src",
                src,
                "--dst",
                dst,
                "--dtype",
                dtype,
                "--threads",
                threads,
                s(&input),
                s(&out),
            ];
            convert(&args, true);
            let want = reference_bytes(src, dst, size, &data);
            assert_eq!(std::fs::read(&out).unwrap(), want, "{dtype}");
        }
    }
}

#[test]
fn slabs_give_the_same_bytes_as_one_run() {
    let dir = Dir::new();
    let pairs = [
        ("cute:(40,48):(48,1)", "xla:f32[40,48]{1,0:T(8,16)}"),
        (
            "xla:f32[37,50]{1,0:T(8,16)}",
            "xla:f32[37,50]{0,1:T(4,4)(2,1)}",
        ),
        ("cute:(1,30,7):(0,-7,1)", "cute:(1,30,7):(0,1,30)"),
        (
            "tvm:[4,32,5,5] lambda n,c,h,w: [n, c, h, w]",
            "tvm:[4,32,5,5] lambda n,c,h,w: [n, c//16, h, w, c%16]",
        ),
        ("morello:[64,8] [0, 1]", "morello:[64,8] [1, 0, 0 oe(8)]"),
    ];
    for (src, dst) in pairs {
        let n = Layout::parse(src).unwrap().cosize();
        let data = pattern_bytes(n, 4);
        let input = dir.write("in.npy", &npy_bytes("<f4", &[n], false, &data));
        let want = reference_bytes(src, dst, 4, &data);
        let dst_len = Layout::parse(dst).unwrap().cosize();
        for slab in ["64", "1000", "1000000000"] {
            let out = dir.path("out.npy");
            let args = [
                "--src",
                src,
                "--dst",
                dst,
                "--slab-bytes",
                slab,
                s(&input),
                s(&out),
            ];
            convert(&args, true);
            let got = npy_data(&std::fs::read(&out).unwrap(), "<f4", dst_len);
            assert_eq!(got, want, "{src} -> {dst}, slabs of {slab} bytes");
        }
    }
}

#[test]
fn pad_values_and_types_numpy_lacks() {
    let dir = Dir::new();
    let src = "xla:bf16[10,20]{1,0}";
    let dst = "xla:bf16[10,20]{1,0:T(8,16)(2,1)}";
    let data = pattern_bytes(200, 2);
    // bf16 is stored as '<u2'; the output is too.
    let input = dir.write("a.npy", &npy_bytes("<u2", &[10, 20], false, &data));
    let out = dir.path("b.npy");
    convert(
        &[
            "--src",
            src,
            "--dst",
            dst,
            "--pad-value",
            "-1.5",
            s(&input),
            s(&out),
        ],
        true,
    );
    let len = Layout::parse(dst).unwrap().cosize();
    assert_eq!(len, 16 * 32);
    let got = npy_data(&std::fs::read(&out).unwrap(), "<u2", len);
    let zero_padded = reference_bytes(src, dst, 2, &data);
    let dst_layout = Layout::parse(dst).unwrap();
    let mut used = vec![false; len];
    for i in dst_layout.offsets() {
        used[(i - dst_layout.buffer_start()) as usize] = true;
    }
    for (slot, used) in used.iter().enumerate() {
        let (g, w) = (
            &got[2 * slot..2 * slot + 2],
            &zero_padded[2 * slot..2 * slot + 2],
        );
        if *used {
            assert_eq!(g, w, "slot {slot}");
        } else {
            assert_eq!(g, 0xbfc0u16.to_le_bytes(), "slot {slot}"); // bf16 -1.5
        }
    }
    // Without a pad value, padding slots hold zeros.
    convert(&["--src", src, "--dst", dst, s(&input), s(&out)], true);
    assert_eq!(
        npy_data(&std::fs::read(&out).unwrap(), "<u2", len),
        zero_padded
    );
    // The element type comes from the input .npy when neither --dtype nor the layouts name one.
    let f64s = pattern_bytes(12, 8);
    let input = dir.write("c.npy", &npy_bytes("<f8", &[3, 4], false, &f64s));
    convert(
        &[
            "--src",
            "cute:(3,4):(4,1)",
            "--dst",
            "cute:(3,4):(1,3)",
            s(&input),
            s(&out),
        ],
        true,
    );
    let want = reference_bytes("cute:(3,4):(4,1)", "cute:(3,4):(1,3)", 8, &f64s);
    assert_eq!(npy_data(&std::fs::read(&out).unwrap(), "<f8", 12), want);
}

#[test]
fn bad_files_are_one_line_errors_and_leave_out_alone() {
    let dir = Dir::new();
    let src = "cute:(4,6):(6,1)";
    let dst = "cute:(4,6):(1,4)";
    let out = dir.write("out.npy", b"keep");
    let data = pattern_bytes(24, 4);
    let fail = |input: &Path, extra: &[&str], message: &str| {
        let mut args = vec!["--src", src, "--dst", dst];
        args.extend_from_slice(extra);
        args.extend_from_slice(&[s(input), s(&out)]);
        let err = convert(&args, false);
        assert!(err.contains(message), "{args:?}: {err}");
        assert_eq!(std::fs::read(&out).unwrap(), b"keep");
    };
    let short = dir.write("short.bin", &data[..95]);
    fail(
        &short,
        &[],
        "holds 95 bytes; the source layout needs 96 (24 f32 elements)",
    );
    let long = dir.write("long.bin", &pattern_bytes(25, 4));
    fail(&long, &[], "holds 100 bytes");
    fail(&dir.path("missing.npy"), &[], "cannot read");
    fail(dir.0.path(), &[], "not a regular file");
    let cut = dir.write("cut.npy", &npy_bytes("<f4", &[4, 6], false, &data[..90]));
    fail(&cut, &[], "is cut short");
    let wrong = dir.write(
        "wrong.npy",
        &npy_bytes("<f8", &[12], false, &pattern_bytes(12, 8)),
    );
    fail(&wrong, &["--dtype", "f32"], "element type mismatch");
    fail(
        &wrong,
        &[],
        "shape [12]; the source layout needs 24 elements",
    );
    let f16 = dir.write(
        "f16.npy",
        &npy_bytes("<f2", &[24], false, &pattern_bytes(24, 2)),
    );
    fail(
        &f16,
        &["--dtype", "bf16"],
        "holds '<f2' elements, the relayout moves bf16",
    );
    let fortran = dir.write("f.npy", &npy_bytes("<f4", &[4, 6], true, &data));
    fail(&fortran, &[], "Fortran order");
    let big_endian = dir.write("be.npy", &npy_bytes(">f4", &[24], false, &data));
    fail(&big_endian, &[], "'>f4'");
    let not_npy = dir.write("raw.npy", &data);
    fail(&not_npy, &[], "is not a .npy file");
    let good = dir.write("good.npy", &npy_bytes("<f4", &[2, 12], false, &data));
    fail(&good, &["--pad-value", "x"], "'x' is not a f32 value");
    fail(&good, &["--dtype", "f128"], "unknown element type");
    let err = convert(
        &["--src", src, "--dst", "cute:(6,4):(1,6)", s(&good), s(&out)],
        false,
    );
    assert!(err.contains("shape mismatch"), "{err}");
    let err = convert(
        &["--src", src, "--dst", "cute:(4,6):(1,1)", s(&good), s(&out)],
        false,
    );
    assert!(err.contains("not injective"), "{err}");
    let nowhere = dir.path("no/such/dir/out.npy");
    let err = convert(&["--src", src, "--dst", dst, s(&good), s(&nowhere)], false);
    assert!(err.contains("cannot write"), "{err}");
    // Nothing was left behind: no temporary files, OUT unchanged.
    let names = dir.names();
    assert!(names.iter().all(|n| !n.contains("relayout")), "{names:?}");
    assert_eq!(std::fs::read(&out).unwrap(), b"keep");
    // And a good conversion replaces it.
    convert(&["--src", src, "--dst", dst, s(&good), s(&out)], true);
    assert_eq!(
        npy_data(&std::fs::read(&out).unwrap(), "<f4", 24),
        reference_bytes(src, dst, 4, &data)
    );
}

#[test]
fn conversions_write_the_destination_type() {
    use relayout::{reference::relayout_converted, Conversion, DType};
    let dir = Dir::new();
    let (plain, tiled) = ("xla:f32[24,40]{1,0}", "xla:bf16[24,40]{1,0:T(8,16)}");
    let data = pattern_bytes(24 * 40, 4);
    let a = dir.write("a.npy", &npy_bytes("<f4", &[24, 40], false, &data));
    let t = dir.path("t.npy");
    // The XLA destination names bf16: stored as '<u2' (NumPy has no bf16), padding -1.
    convert(
        &[
            "--src",
            plain,
            "--dst",
            tiled,
            "--pad-value",
            "-1",
            "--slab-bytes",
            "640",
            s(&a),
            s(&t),
        ],
        true,
    );
    let (src, dst) = (Layout::parse(plain).unwrap(), Layout::parse(tiled).unwrap());
    let input: Vec<u32> = data
        .chunks(4)
        .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    let mut want = vec![0u16; dst.cosize()];
    let c = Conversion::new(DType::F32, DType::BF16).unwrap();
    relayout_converted(&src, &input, &dst, &mut want, c, Some(0xbf80)).unwrap();
    let want: Vec<u8> = want.iter().flat_map(|x| x.to_le_bytes()).collect();
    assert_eq!(
        npy_data(&std::fs::read(&t).unwrap(), "<u2", dst.cosize()),
        want
    );
    // --to with a scale: f32 to i8, '<i1'.
    let q = dir.path("q.npy");
    let col = "cute:(24,40):(1,24)";
    convert(
        &[
            "--src",
            plain,
            "--dst",
            col,
            "--to",
            "i8",
            "--scale",
            "0.5",
            s(&a),
            s(&q),
        ],
        true,
    );
    let c = Conversion::new(DType::F32, DType::I8)
        .unwrap()
        .affine(0.5, 0.0)
        .unwrap();
    let mut want = vec![0u8; 24 * 40];
    relayout_converted(
        &src,
        &input,
        &Layout::parse(col).unwrap(),
        &mut want,
        c,
        None,
    )
    .unwrap();
    assert_eq!(npy_data(&std::fs::read(&q).unwrap(), "|i1", 24 * 40), want);
}

#[test]
fn per_index_maps_convert_in_slabs_too() {
    use relayout::{reference::relayout_per_index, Conversion, DType, PerIndex};
    let dir = Dir::new();
    let (plain, col) = ("xla:f32[24,40]{1,0}", "cute:(24,40):(1,24)");
    let data = pattern_bytes(24 * 40, 4);
    let a = dir.write("a.npy", &npy_bytes("<f4", &[24, 40], false, &data));
    let input: Vec<u32> = data
        .chunks(4)
        .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    let (src, dst) = (Layout::parse(plain).unwrap(), Layout::parse(col).unwrap());
    let c = Conversion::new(DType::F32, DType::I8).unwrap();
    for dim in [0, 1] {
        let n = src.shape()[dim];
        let scales: Vec<f64> = (0..n).map(|i| 0.25 + i as f64 / 8.0).collect();
        let shifts: Vec<f64> = (0..n).map(|i| i as f64 - 3.0).collect();
        let join = |v: &[f64]| v.iter().map(f64::to_string).collect::<Vec<_>>().join(",");
        let (scale_list, shift_list) = (join(&scales), join(&shifts));
        let map = PerIndex::new(dim, &scales, &shifts).unwrap();
        let mut want = vec![0u8; 24 * 40];
        relayout_per_index(&src, &input, &dst, &mut want, c, &map, None).unwrap();
        for slab in ["640", "1000000000"] {
            let q = dir.path("q.npy");
            let along = dim.to_string();
            convert(
                &[
                    "--src",
                    plain,
                    "--dst",
                    col,
                    "--to",
                    "i8",
                    "--scale",
                    &scale_list,
                    "--shift",
                    &shift_list,
                    "--along",
                    &along,
                    "--slab-bytes",
                    slab,
                    s(&a),
                    s(&q),
                ],
                true,
            );
            let got = npy_data(&std::fs::read(&q).unwrap(), "|i1", 24 * 40);
            assert_eq!(got, want, "along {dim}, slabs of {slab} bytes");
        }
    }
}
