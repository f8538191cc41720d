//! Relayouts of [`ndarray`](https://docs.rs/ndarray) arrays and views (the `ndarray` feature).
//!
//! An array or view of any strides (permuted axes, slices with steps, negative strides, broadcast
//! views as sources) is a [`Layout`]: [`layout_of`]. From there a relayout moves it into the
//! buffer of any layout ([`view_to_buffer`]), moves a layout's buffer into a view
//! ([`buffer_to_view`]), or makes a row-major copy ([`to_standard_layout`], what
//! `as_standard_layout` does for a permuted view, with a compiled kernel).
//!
//! ```
//! use ndarray::{Array, Array3};
//! use relayout::{ndarray::to_standard_layout, Layout};
//!
//! let a: Array3<f32> = Array::from_shape_fn((4, 6, 8), |(i, j, k)| (64 * i + 8 * j + k) as f32);
//! let view = a.view().permuted_axes([2, 0, 1]); // shape [8, 4, 6], strides [1, 48, 8]
//! let layout = relayout::ndarray::layout_of(&view)?;
//! assert_eq!(layout, Layout::from_strides(&[8, 4, 6], &[1, 48, 8])?);
//!
//! let b = to_standard_layout(&view)?; // a row-major Array3 of shape [8, 4, 6]
//! assert!(b.is_standard_layout());
//! assert_eq!(b, view.as_standard_layout());
//! # Ok::<(), relayout::Error>(())
//! ```

use ::ndarray::{Array, ArrayBase, Data, DataMut, Dimension, RawData};

use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::relayout::{compile_relayout_with, Element, Options};

/// The layout of an array or view: its shape, and its strides in elements (negative strides and
/// the zero strides of broadcast views included).
///
/// Fails with [`Error::InvalidLayout`] for an empty array (a zero extent), which no layout
/// describes.
///
/// ```
/// use ndarray::{s, Array2};
/// use relayout::Layout;
///
/// let a = Array2::<u16>::zeros((6, 10));
/// let v = a.slice(s![..;2, ..;-3]); // shape [3, 4], strides [20, -3]
/// let layout = relayout::ndarray::layout_of(&v)?;
/// assert_eq!(layout, Layout::from_strides(&[3, 4], &[20, -3])?);
/// assert_eq!(layout.cosize(), 50); // from the lowest element the view touches to the highest
/// # Ok::<(), relayout::Error>(())
/// ```
pub fn layout_of<S: RawData, D: Dimension>(a: &ArrayBase<S, D>) -> Result<Layout> {
    let strides: Vec<i64> = a.strides().iter().map(|&s| s as i64).collect();
    Layout::from_strides(a.shape(), &strides)
}

/// Moves every element of `src` (any strides) to its place in `out`, a buffer laid out by `dst`
/// (from [`Layout::buffer_start`], at least [`Layout::cosize`] elements).
///
/// The element size is `A`'s, whatever `options` says; with `pad = Some(v)` every padding slot
/// of the destination (a slot that holds no element) is set to `v`, otherwise padding is left
/// alone (a pad value in `options` is not used: give it here). Fails when `dst` has another
/// logical shape than `src` or is not injective, or when `out` is too short; nothing is written
/// then.
///
/// ```
/// use ndarray::Array2;
/// use relayout::{ndarray::view_to_buffer, Layout, Options};
///
/// let a = Array2::from_shape_fn((3, 5), |(i, j)| (5 * i + j) as f32);
/// let dst = Layout::parse("xla:f32[3,5]{1,0:T(2,2)}")?; // 2x2 tiles, 24 slots
/// let mut buf = vec![f32::NAN; dst.cosize()];
/// view_to_buffer(&a, &dst, &mut buf, Some(-1.0), Options::new())?;
/// assert_eq!(buf[..8], [0.0, 1.0, 5.0, 6.0, 2.0, 3.0, 7.0, 8.0]); // the first two tiles
/// assert_eq!(buf[9], -1.0); // where (0, 5) would be: a padding slot
///
/// let err = view_to_buffer(&a.t(), &dst, &mut buf, None, Options::new()).unwrap_err();
/// assert!(matches!(err, relayout::Error::ShapeMismatch { .. })); // a [5, 3] view
/// # Ok::<(), relayout::Error>(())
/// ```
pub fn view_to_buffer<A, S, D>(
    src: &ArrayBase<S, D>,
    dst: &Layout,
    out: &mut [A],
    pad: Option<A>,
    options: Options,
) -> Result<()>
where
    A: Element,
    S: Data<Elem = A>,
    D: Dimension,
{
    let src_layout = layout_of(src)?;
    let options = options.elem_size(std::mem::size_of::<A>());
    let kernel = compile_relayout_with(&src_layout, dst, options)?;
    let needed = kernel.plan().dst_len();
    if out.len() < needed {
        return Err(Error::BufferTooShort {
            which: "destination",
            needed,
            got: out.len(),
        });
    }
    if let Some(v) = pad {
        out[..needed].fill(v);
    }
    let start = lowest_element(src.as_ptr(), &src_layout);
    // SAFETY: `start` is the lowest element `src` holds and the kernel reads only elements of
    // `src` (at their offsets from it, by `src_layout`); `out` holds the `dst_len` elements the
    // kernel writes (checked above); `out` is borrowed mutably, so it cannot overlap `src`.
    unsafe { kernel.run_raw(start.cast(), out.as_mut_ptr().cast()) };
    Ok(())
}

/// Moves every element of `buf`, a buffer laid out by `src` (from [`Layout::buffer_start`], at
/// least [`Layout::cosize`] elements), to its place in `out`, an array or view of any strides.
///
/// The element size is `A`'s, whatever `options` says. Fails when `src` has another logical
/// shape than `out`, when `out`'s elements overlap one another, or when `buf` is too short;
/// nothing is written then. Only `out`'s elements are written, never the gaps between them.
///
/// ```
/// use ndarray::{s, Array2};
/// use relayout::{ndarray::buffer_to_view, Layout, Options};
///
/// let src = Layout::parse("morello:[4] [0, 0 oe(4)]")?; // evens first, then odds
/// let mut a = Array2::<u8>::zeros((2, 8));
/// let mut row = a.slice_mut(s![1, ..;2]); // every other element of the second row
/// buffer_to_view(&src, &[10u8, 12, 11, 13], &mut row, Options::new())?;
/// assert_eq!(a.row(1).to_vec(), [10, 0, 11, 0, 12, 0, 13, 0]);
/// # Ok::<(), relayout::Error>(())
/// ```
pub fn buffer_to_view<A, S, D>(
    src: &Layout,
    buf: &[A],
    out: &mut ArrayBase<S, D>,
    options: Options,
) -> Result<()>
where
    A: Element,
    S: DataMut<Elem = A>,
    D: Dimension,
{
    let dst_layout = layout_of(out)?;
    let options = options.elem_size(std::mem::size_of::<A>());
    let kernel = compile_relayout_with(src, &dst_layout, options)?;
    let needed = kernel.plan().src_len();
    if buf.len() < needed {
        return Err(Error::BufferTooShort {
            which: "source",
            needed,
            got: buf.len(),
        });
    }
    let start = lowest_element(out.as_mut_ptr().cast_const(), &dst_layout).cast_mut();
    // SAFETY: `buf` holds the `src_len` elements the kernel reads (checked above); `start` is the
    // lowest element of `out`, whose data `as_mut_ptr` made unique and which is borrowed mutably
    // (so it cannot overlap `buf`), and the kernel writes only `out`'s elements, at their offsets
    // from `start` by `dst_layout`, which is injective (the compile checked it).
    unsafe { kernel.run_raw(buf.as_ptr().cast(), start.cast()) };
    Ok(())
}

/// A row-major (standard layout) copy of `a`, made by a compiled kernel: the same as ndarray's
/// `a.as_standard_layout().into_owned()`, and much faster on permuted views of large arrays.
/// One thread; see [`to_standard_layout_with`] for more.
///
/// ```
/// use ndarray::{s, Array};
/// use relayout::ndarray::to_standard_layout;
///
/// let nchw = Array::from_shape_fn((2, 16, 5, 5), |(n, c, h, w)| (n * 400 + c * 25 + h * 5 + w) as u8);
/// let nhwc = to_standard_layout(&nchw.view().permuted_axes([0, 2, 3, 1]))?;
/// assert_eq!(nhwc.shape(), [2, 5, 5, 16]);
/// assert_eq!(nhwc[[1, 2, 3, 4]], nchw[[1, 4, 2, 3]]);
/// let flipped = to_standard_layout(&nchw.slice(s![.., ..;-2, .., 1..]))?;
/// assert_eq!(flipped, nchw.slice(s![.., ..;-2, .., 1..]));
/// # Ok::<(), relayout::Error>(())
/// ```
pub fn to_standard_layout<A, S, D>(a: &ArrayBase<S, D>) -> Result<Array<A, D>>
where
    A: Element,
    S: Data<Elem = A>,
    D: Dimension,
{
    to_standard_layout_with(a, Options::new())
}

/// [`to_standard_layout`] with [`Options`] (threads, tuning; the element size is `A`'s).
pub fn to_standard_layout_with<A, S, D>(
    a: &ArrayBase<S, D>,
    options: Options,
) -> Result<Array<A, D>>
where
    A: Element,
    S: Data<Elem = A>,
    D: Dimension,
{
    if a.is_standard_layout() || a.is_empty() {
        return Ok(a.to_owned());
    }
    let src = layout_of(a)?;
    let dst = Layout::row_major(a.shape())?;
    let kernel = compile_relayout_with(&src, &dst, options.elem_size(std::mem::size_of::<A>()))?;
    let len = a.len();
    let mut data: Vec<A> = Vec::with_capacity(len);
    let start = lowest_element(a.as_ptr(), &src);
    // SAFETY: the kernel reads only `a`'s elements, at their offsets from its lowest one
    // (`start`), and writes the `len` elements of a row-major buffer of `a`'s shape into `data`'s
    // capacity of `len`, which no one else sees.
    unsafe { kernel.run_raw(start.cast(), data.as_mut_ptr().cast()) };
    // SAFETY: a row-major layout of `len` elements has no padding and the destination is
    // injective, so the kernel wrote each of the `len` elements once.
    unsafe { data.set_len(len) };
    Array::from_shape_vec(a.raw_dim(), data)
        .map_err(|e| Error::InvalidLayout(format!("a standard-layout copy of {src}: {e}")))
}

/// The lowest address an array holds an element at, from the address of its first element and
/// its layout (whose first element is at offset 0, so [`Layout::buffer_start`] is 0 or below).
fn lowest_element<A>(first: *const A, layout: &Layout) -> *const A {
    first.wrapping_offset(layout.buffer_start() as isize)
}
