//! The `ndarray` feature against ndarray itself: the layout of any view, relayouts from views into
//! layouts' buffers and back, and `to_standard_layout` against `as_standard_layout`.
#![cfg(feature = "ndarray")]

use ndarray::{s, Array, ArrayBase, ArrayD, ArrayView, Axis, IxDyn, Slice};
use relayout::ndarray::{
    buffer_to_view, layout_of, to_standard_layout, to_standard_layout_with, view_to_buffer,
};
use relayout::{reference, Element, Error, Layout, Options};

mod common;

use common::permutations;

/// An array of `shape` whose elements are distinct (as far as `T` can hold them).
fn numbered<T: Element>(shape: &[usize]) -> ArrayD<T> {
    let mut i = 0u64;
    Array::from_shape_simple_fn(IxDyn(shape), || {
        i += 1;
        T::from_bits(i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 7)
    })
}

/// One step in making a strided view.
#[derive(Debug, Clone)]
enum Op {
    Permute(Vec<usize>),
    Reverse(usize),
    Swap(usize, usize),
    /// Along an axis: from `start`, every `step`-th element (negative: from the end).
    Step(usize, isize, isize),
}

/// `a` after the ops: the same view of any array of `a`'s shape, shared or mutable.
fn apply<S: ndarray::RawData>(mut a: ArrayBase<S, IxDyn>, ops: &[Op]) -> ArrayBase<S, IxDyn> {
    for op in ops {
        match op {
            Op::Permute(axes) => a = a.permuted_axes(axes.clone()),
            Op::Reverse(d) => a.invert_axis(Axis(*d)),
            Op::Swap(x, y) => a.swap_axes(*x, *y),
            &Op::Step(d, start, step) => {
                a.slice_axis_inplace(Axis(d), Slice::new(start, None, step))
            }
        }
    }
    a
}

/// Recipes for views with every kind of stride: the array, every axis permutation, every axis
/// reversed in turn, and slices with steps of 2 and -3 along each axis.
fn view_recipes(rank: usize) -> Vec<Vec<Op>> {
    let mut out = vec![vec![]];
    for axes in permutations(rank) {
        out.push(vec![Op::Permute(axes)]);
    }
    for d in 0..rank {
        out.push(vec![Op::Reverse(d)]);
        out.push(vec![Op::Reverse(d), Op::Swap(0, rank - 1)]);
        out.push(vec![Op::Step(d, 0, 2)]);
        out.push(vec![Op::Step(d, 0, -3)]);
    }
    let reversed: Vec<usize> = (0..rank).rev().collect();
    out.push(vec![Op::Permute(reversed), Op::Step(0, 1, 2)]);
    out
}

fn check_every_view<T: Element + PartialEq + std::fmt::Debug>() {
    let zero = T::from_bits(0);
    for shape in [
        vec![7],
        vec![5, 9],
        vec![17, 33],
        vec![3, 4, 5],
        vec![2, 3, 4, 5],
    ] {
        let a = numbered::<T>(&shape);
        for ops in view_recipes(shape.len()) {
            let v = apply(a.view(), &ops);
            let what = format!("{shape:?} {ops:?}");
            let got = to_standard_layout(&v).unwrap();
            assert!(got.is_standard_layout(), "{what}");
            assert_eq!(got, v.as_standard_layout(), "{what}");

            // Into a column-major buffer, against the reference...
            let src = layout_of(&v).unwrap();
            let dst = Layout::col_major(v.shape()).unwrap();
            let mut buf = vec![zero; dst.cosize()];
            view_to_buffer(&v, &dst, &mut buf, None, Options::new()).unwrap();
            let mut want = vec![zero; dst.cosize()];
            reference::relayout(&src, lowest_slice(&a, &v), &dst, &mut want, None).unwrap();
            assert_eq!(buf, want, "{what}");

            // ...and back into the same view of a zeroed array: `v`'s elements land where they
            // were in `a`, and nothing else is written.
            let mut back = ArrayD::from_elem(IxDyn(&shape), zero);
            let mut view = apply(back.view_mut(), &ops);
            buffer_to_view(&dst, &buf, &mut view, Options::new()).unwrap();
            assert_eq!(view, v, "{what}");
            let written = back.iter().filter(|&&x| x != zero).count();
            assert_eq!(written, v.iter().filter(|&&x| x != zero).count(), "{what}");
        }
    }
}

/// The part of `a`'s data that `v` (a view of `a`) spans, from its lowest element.
fn lowest_slice<'a, T>(a: &'a ArrayD<T>, v: &ArrayView<'a, T, IxDyn>) -> &'a [T] {
    let data = a.as_slice().expect("a standard-layout array");
    let layout = layout_of(v).unwrap();
    let first = (v.as_ptr() as usize - data.as_ptr() as usize) / std::mem::size_of::<T>();
    let lowest = (first as i64 + layout.buffer_start()) as usize;
    &data[lowest..lowest + layout.cosize()]
}

#[test]
fn every_view_at_every_element_size() {
    check_every_view::<u8>();
    check_every_view::<i16>();
    check_every_view::<i32>();
    check_every_view::<u64>();
}

#[test]
fn layouts_of_strided_views() {
    let a = Array::from_shape_fn((4, 6, 10), |(i, j, k)| (i * 60 + j * 10 + k) as u32);
    let v = a.slice(s![1..;2, ..;-1, 3..9;3]);
    let layout = layout_of(&v).unwrap();
    assert_eq!(layout.shape(), [2, 6, 2]);
    assert_eq!(
        layout,
        Layout::from_strides(&[2, 6, 2], &[120, -10, 3]).unwrap()
    );
    // Every element of the view is where the layout says, from the view's first element.
    for ((i, j, k), x) in v.indexed_iter() {
        let at = v.as_ptr() as isize / 4 + layout.offset(&[i, j, k]).unwrap() as isize;
        assert_eq!(at, (x as *const u32 as isize) / 4);
    }
    // A broadcast view has zero strides: a source, not a destination.
    let row = Array::from_shape_fn(5, |i| i as f64);
    let wide = row.broadcast((3, 5)).unwrap();
    assert_eq!(
        layout_of(&wide).unwrap(),
        Layout::from_strides(&[3, 5], &[0, 1]).unwrap()
    );
    assert_eq!(to_standard_layout(&wide).unwrap(), wide);
    // An empty array is a layout of no elements, and relayouts as nothing.
    let e = Array::<f32, _>::zeros((3, 0));
    assert_eq!(layout_of(&e).unwrap().cosize(), 0);
    assert_eq!(to_standard_layout(&e.t()).unwrap().shape(), &[0, 3]);
}

#[test]
fn standard_layout_copies_of_degenerate_arrays() {
    let empty = Array::<f32, _>::zeros((4, 0, 3));
    let t = to_standard_layout(&empty.view().permuted_axes([2, 1, 0])).unwrap();
    assert_eq!(t.shape(), [3, 0, 4]);
    let scalar = ndarray::arr0(7u16);
    assert_eq!(to_standard_layout(&scalar).unwrap(), scalar);
    let a = Array::from_shape_fn((64, 48), |(i, j)| (i * 48 + j) as f64);
    let options = Options::new().threads(3).min_bytes_per_thread(1);
    let t = to_standard_layout_with(&a.t(), options).unwrap();
    assert_eq!(t, a.t().as_standard_layout());
}

#[test]
fn padding_is_set_only_when_asked() {
    let a = Array::from_shape_fn((3, 5), |(i, j)| (5 * i + j) as i32);
    let dst = Layout::parse("xla:s32[3,5]{1,0:T(2,2)}").unwrap();
    let mut buf = vec![99i32; dst.cosize()];
    view_to_buffer(&a, &dst, &mut buf, None, Options::new()).unwrap();
    let mut want = vec![99i32; dst.cosize()];
    reference::relayout(
        &layout_of(&a).unwrap(),
        a.as_slice().unwrap(),
        &dst,
        &mut want,
        None,
    )
    .unwrap();
    assert_eq!(buf, want);
    assert_eq!(buf.iter().filter(|&&x| x == 99).count(), dst.cosize() - 15);
    view_to_buffer(&a, &dst, &mut buf, Some(-7), Options::new()).unwrap();
    assert_eq!(buf.iter().filter(|&&x| x == -7).count(), dst.cosize() - 15);
}

#[test]
fn bad_input_is_an_error_and_nothing_is_written() {
    let a = Array::from_shape_fn((4, 6), |(i, j)| (i * 6 + j) as f32);
    let dst = Layout::row_major(&[4, 6]).unwrap();
    let mut short = vec![0.0f32; 23];
    let e = view_to_buffer(&a, &dst, &mut short, Some(1.0), Options::new()).unwrap_err();
    assert_eq!(
        e,
        Error::BufferTooShort {
            which: "destination",
            needed: 24,
            got: 23
        }
    );
    assert!(short.iter().all(|&x| x == 0.0));
    let e = view_to_buffer(&a.t(), &dst, &mut [0.0; 24], None, Options::new()).unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e:?}");

    let mut out = Array::<f32, _>::zeros((4, 6));
    let e = buffer_to_view(&dst, &[0.0; 20], &mut out, Options::new()).unwrap_err();
    assert!(
        matches!(
            e,
            Error::BufferTooShort {
                which: "source",
                ..
            }
        ),
        "{e:?}"
    );
    assert!(out.iter().all(|&x| x == 0.0));
    let src = Layout::row_major(&[6, 4]).unwrap();
    let e = buffer_to_view(&src, &[0.0; 24], &mut out, Options::new()).unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e:?}");
}
