//! The standard suite under criterion: relayout beside memcpy of the same bytes, the naive
//! per-element loop, the `transpose` crate (cases that are batches of 2-D transposes),
//! ndarray's strided assign (every case, as a permutation of axes) and, with the `hptt` feature,
//! HPTT (the f32 and f64 cases, one thread, through the `hptt` crate, which plans each call
//! afresh). Throughput is in bytes.
//!
//! `cargo bench --bench suite` runs everything in minutes (10 flat samples per function);
//! `cargo bench --bench suite -- t2d_f32_8000` runs one case. Without `--bench` (as under
//! `cargo test`) criterion runs each function once, and the cases are built at their reduced
//! sizes. Before timing relayout, `transpose` or ndarray, each run checks its output against the
//! reference (the naive loop is the reference; memcpy is no relayout).

use std::hint::black_box;
use std::time::Duration;

use criterion::{Bencher, Criterion, SamplingMode, Throughput};
use ndarray::{ArrayView, ArrayViewD, ArrayViewMut, ArrayViewMutD, Dimension, IxDyn};
use relayout::suite::{self, Case, PageAligned, Permutation, Size};
use relayout::{compile_relayout_with, reference, DType, Element, Layout, Options, Relayout};

fn main() {
    let has = |flag: &str| std::env::args().any(|a| a == flag);
    let size = if has("--bench") && !has("--test") && !has("--list") {
        Size::Full
    } else {
        Size::Reduced
    };
    let mut criterion = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .configure_from_args();
    for case in suite::cases(size) {
        // The float types as themselves, so that HPTT can take them.
        match (case.dtype, case.dtype.size()) {
            (DType::F32, _) => bench_case::<f32>(&mut criterion, &case),
            (DType::F64, _) => bench_case::<f64>(&mut criterion, &case),
            (_, 1) => bench_case::<u8>(&mut criterion, &case),
            (_, 2) => bench_case::<u16>(&mut criterion, &case),
            (_, 4) => bench_case::<u32>(&mut criterion, &case),
            _ => bench_case::<u64>(&mut criterion, &case),
        }
    }
    criterion.final_summary();
}

/// A case's kernel and buffers, made when the first of its functions passes criterion's filter.
struct State<T> {
    src_layout: Layout,
    dst_layout: Layout,
    kernel: Relayout,
    src: PageAligned<T>,
    dst: PageAligned<T>,
    /// The reference result.
    want: Vec<T>,
}

impl<T: Element + PartialEq> State<T> {
    fn new(case: &Case) -> State<T> {
        let (src_layout, dst_layout) = case.layouts().expect("the suite's layouts parse");
        let n = case.elements();
        assert_eq!(
            (src_layout.cosize(), dst_layout.cosize()),
            (n, n),
            "{}: the suite's buffers are dense",
            case.name
        );
        // Tuned, as `relayout bench` does: the runs below end the tuning before any timing.
        let options = Options::new().dtype(case.dtype).tune(true);
        let kernel = compile_relayout_with(&src_layout, &dst_layout, options)
            .expect("the suite's cases compile");
        // Page-aligned, as in `relayout bench`, so no contender depends on where the allocator
        // put the buffers.
        let src = PageAligned::from_fn(n, |i| T::from_bits(i as u64));
        let mut want = vec![T::from_bits(0); n];
        reference::relayout(&src_layout, &src, &dst_layout, &mut want, None).expect("reference");
        let mut dst = PageAligned::filled(n, T::from_bits(u64::MAX));
        while kernel.tactics().is_none() {
            kernel.run(&src, &mut dst).expect("the suite's buffers fit");
        }
        State {
            src_layout,
            dst_layout,
            kernel,
            src,
            dst,
            want,
        }
    }

    /// Runs a contender once on a cleared destination and panics unless it matches the reference.
    fn check(&mut self, case: &Case, name: &str, mut contender: impl FnMut(&mut Self)) {
        self.dst.fill(T::from_bits(u64::MAX));
        contender(self);
        assert!(
            *self.dst == *self.want,
            "{}: {name} disagrees with the reference",
            case.name
        );
    }
}

/// One criterion group per case: every contender that applies, on the same buffers.
fn bench_case<T: Element + PartialEq>(criterion: &mut Criterion, case: &Case) {
    let mut state: Option<State<T>> = None;
    let mut group = criterion.benchmark_group(case.name);
    group
        .throughput(Throughput::Bytes(case.bytes() as u64))
        .sampling_mode(SamplingMode::Flat);
    let mut contender = |name: &str, run: &dyn Fn(&mut State<T>)| {
        group.bench_function(name, |b: &mut Bencher| {
            let state = state.get_or_insert_with(|| State::new(case));
            if !matches!(name, "naive" | "memcpy") {
                state.check(case, name, run);
            }
            b.iter(|| run(black_box(&mut *state)));
        });
    };
    contender("relayout", &|s| s.kernel.run(&s.src, &mut s.dst).unwrap());
    contender("memcpy", &|s| s.dst.copy_from_slice(&s.src));
    contender("naive", &|s| {
        reference::relayout(&s.src_layout, &s.src, &s.dst_layout, &mut s.dst, None).unwrap()
    });
    if let Some((rows, cols)) = case.permutation.batched_transpose() {
        contender("transpose", &|s| {
            let matrix = rows * cols;
            for (from, to) in s
                .src
                .chunks_exact(matrix)
                .zip(s.dst.chunks_exact_mut(matrix))
            {
                transpose::transpose(from, to, cols, rows);
            }
        });
    }
    contender("ndarray", &|s| {
        permuted_assign(&case.permutation, &s.src, &mut s.dst)
    });
    #[cfg(feature = "hptt")]
    if matches!(case.dtype, DType::F32 | DType::F64) {
        contender("hptt", &|s| hptt_transpose(&case.permutation, s));
    }
    group.finish();
}

/// HPTT's transpose of `s.src` into `s.dst` (f32 and f64 states only): its permutation is NumPy's
/// axes, in row-major order.
#[cfg(feature = "hptt")]
fn hptt_transpose<T: 'static>(p: &Permutation, s: &mut State<T>) {
    use hptt::MemoryOrder::RowMajor;
    let any: &mut dyn std::any::Any = s;
    if let Some(s) = any.downcast_mut::<State<f32>>() {
        hptt::transpose_f32(&p.axes, 1.0, &s.src, &p.shape, 0.0, &mut s.dst, 1, RowMajor)
            .expect("HPTT transposes the case");
    } else if let Some(s) = any.downcast_mut::<State<f64>>() {
        hptt::transpose_f64(&p.axes, 1.0, &s.src, &p.shape, 0.0, &mut s.dst, 1, RowMajor)
            .expect("HPTT transposes the case");
    }
}

/// `dst` (row-major) gets `src` viewed as a row-major array with its axes permuted, through
/// ndarray's `assign` on arrays of the permutation's fixed rank.
fn permuted_assign<T: Copy>(p: &Permutation, src: &[T], dst: &mut [T]) {
    let view = ArrayView::from_shape(IxDyn(&p.shape), src)
        .unwrap()
        .permuted_axes(IxDyn(&p.axes));
    let mut out = ArrayViewMut::from_shape(IxDyn(&p.permuted_shape()), dst).unwrap();
    match p.shape.len() {
        1 => assign_fixed::<ndarray::Ix1, T>(out, view),
        2 => assign_fixed::<ndarray::Ix2, T>(out, view),
        3 => assign_fixed::<ndarray::Ix3, T>(out, view),
        4 => assign_fixed::<ndarray::Ix4, T>(out, view),
        5 => assign_fixed::<ndarray::Ix5, T>(out, view),
        _ => out.assign(&view),
    }
}

fn assign_fixed<D: Dimension, T: Copy>(out: ArrayViewMutD<T>, view: ArrayViewD<T>) {
    let mut out = out.into_dimensionality::<D>().unwrap();
    out.assign(&view.into_dimensionality::<D>().unwrap());
}
