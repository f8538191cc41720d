//! The reference relayout: one element at a time, straight from the layouts' definitions.
//!
//! It is the oracle every kernel is tested against and the "naive loop" of the benchmarks, so it
//! is written to be obviously correct: for every logical coordinate `x`,
//! `dst[dst.index(x)] = src[src.index(x)]`, with each offset evaluated from the digits.

use crate::convert::{Conversion, PerIndex};
use crate::error::{Error, Result};
use crate::layout::{check_pair, for_each_coord, Layout};
use crate::packing;
use crate::relayout::Element;

/// Copies every element of `src` (laid out by `src_layout`) to its place in `dst` (laid out by
/// `dst_layout`). With `pad = Some(v)`, every slot of the destination buffer that holds no element
/// (padding) is set to `v` first; with `None` padding is left untouched.
///
/// Buffers start at each layout's [`Layout::buffer_start`] and must hold its
/// [`Layout::cosize`] elements.
///
/// ```
/// use relayout::{reference::relayout, Layout};
///
/// let src = Layout::row_major(&[2, 3])?;
/// let dst = Layout::col_major(&[2, 3])?;
/// let a = [0, 1, 2, 3, 4, 5];
/// let mut b = [0; 6];
/// relayout(&src, &a, &dst, &mut b, None)?;
/// assert_eq!(b, [0, 3, 1, 4, 2, 5]);
/// # Ok::<(), relayout::Error>(())
/// ```
pub fn relayout<T: Copy>(
    src_layout: &Layout,
    src: &[T],
    dst_layout: &Layout,
    dst: &mut [T],
    pad: Option<T>,
) -> Result<()> {
    each_element(src_layout, src, dst_layout, dst, pad, |x, _| x)
}

/// The loop of both relayouts: checks the pair and the buffers, fills the padding with `pad`,
/// then stores `put(src element, its coordinate)` at every element's place in `dst`.
fn each_element<S: Copy, D: Copy>(
    src_layout: &Layout,
    src: &[S],
    dst_layout: &Layout,
    dst: &mut [D],
    pad: Option<D>,
    put: impl Fn(S, &[usize]) -> D,
) -> Result<()> {
    check_pair(src_layout, dst_layout)?;
    check_len("source", src_layout, src.len())?;
    check_len("destination", dst_layout, dst.len())?;
    if let Some(v) = pad {
        dst[..dst_layout.cosize()].fill(v);
    }
    let (src_start, dst_start) = (src_layout.buffer_start(), dst_layout.buffer_start());
    for_each_coord(src_layout.shape(), |x| {
        let from = (src_layout.offset_unchecked(x) - src_start) as usize;
        let to = (dst_layout.offset_unchecked(x) - dst_start) as usize;
        dst[to] = put(src[from], x);
    });
    Ok(())
}

/// [`relayout`] with every element converted on the way by `conversion` (its rules are in
/// [`crate::convert`]): `src` holds elements of the conversion's source type, `dst` of its
/// destination type (as their bits in any [`Element`] of that size). With `pad = Some(v)`,
/// padding is set to `v`, a destination element.
///
/// ```
/// use relayout::{reference::relayout_converted, Conversion, DType, Layout};
///
/// let src = Layout::row_major(&[2, 2])?;
/// let dst = Layout::col_major(&[2, 2])?;
/// let to_u8 = Conversion::new(DType::F32, DType::U8)?;
/// let mut b = [0u8; 4];
/// relayout_converted(&src, &[0.5f32, 1.5, -3.0, 300.0], &dst, &mut b, to_u8, None)?;
/// assert_eq!(b, [0, 0, 2, 255]); // to nearest even, saturated
/// # Ok::<(), relayout::Error>(())
/// ```
pub fn relayout_converted<S: Element, D: Element>(
    src_layout: &Layout,
    src: &[S],
    dst_layout: &Layout,
    dst: &mut [D],
    conversion: Conversion,
    pad: Option<D>,
) -> Result<()> {
    check_sizes::<S, D>(conversion)?;
    each_element(src_layout, src, dst_layout, dst, pad, |x, _| {
        D::from_bits(conversion.apply(x.to_bits()))
    })
}

/// [`relayout_converted`] with a per-index affine map: the element at coordinate `x` is
/// converted with `map`'s scale and shift for index `x[map.dim()]` (see [`PerIndex::apply`]).
/// Fails with [`Error::Conversion`] when the map does not fit the conversion or the layouts'
/// shape, as compiling does.
///
/// ```
/// use relayout::{reference::relayout_per_index, Conversion, DType, Layout, PerIndex};
///
/// let l = Layout::row_major(&[2, 2])?;
/// let rows = PerIndex::new(0, &[2.0, 10.0], &[1.0, 0.0])?;
/// let to_i8 = Conversion::new(DType::F32, DType::I8)?;
/// let mut b = [0i8; 4];
/// relayout_per_index(&l, &[1.0f32, 2.0, 3.0, 4.0], &l, &mut b, to_i8, &rows, None)?;
/// assert_eq!(b, [3, 5, 30, 40]);
/// # Ok::<(), relayout::Error>(())
/// ```
pub fn relayout_per_index<S: Element, D: Element>(
    src_layout: &Layout,
    src: &[S],
    dst_layout: &Layout,
    dst: &mut [D],
    conversion: Conversion,
    map: &PerIndex,
    pad: Option<D>,
) -> Result<()> {
    check_sizes::<S, D>(conversion)?;
    map.check(&conversion, src_layout.shape())?;
    let dim = map.dim();
    each_element(src_layout, src, dst_layout, dst, pad, |v, x| {
        D::from_bits(map.apply(&conversion, v.to_bits(), x[dim]))
    })
}

/// Fails unless `S` and `D` are of the sizes of `conversion`'s two types.
fn check_sizes<S: Element, D: Element>(conversion: Conversion) -> Result<()> {
    for (which, ty, size) in [
        ("source", conversion.from_type(), std::mem::size_of::<S>()),
        (
            "destination",
            conversion.to_type(),
            std::mem::size_of::<D>(),
        ),
    ] {
        if ty.size() != size {
            return Err(Error::ElementType(format!(
                "{which} elements of {size} bytes for {ty}, of {} bytes",
                ty.size()
            )));
        }
    }
    Ok(())
}

/// [`relayout`] for elements of `bits` bits (2 or 4) packed several to a byte, in XLA's bit
/// order (see [`crate::packing`]): `src` and `dst` are the packed bytes, and must hold each
/// layout's [`Layout::cosize`] elements ([`Packed::bytes_for`](crate::plan::Packed::bytes_for)
/// bytes). With `pad = Some(v)`,
/// every element slot of the destination that holds no element is set to `v` (its low `bits`
/// bits) first; with `None`, those slots are left alone.
///
/// ```
/// use relayout::{reference::relayout_packed, Layout};
///
/// let src = Layout::row_major(&[2, 2])?;
/// let dst = Layout::col_major(&[2, 2])?;
/// let mut b = [0u8; 2];
/// relayout_packed(&src, &[0x12, 0x34], &dst, &mut b, 4, None)?; // elements 1 2 / 3 4
/// assert_eq!(b, [0x13, 0x24]);
/// # Ok::<(), relayout::Error>(())
/// ```
pub fn relayout_packed(
    src_layout: &Layout,
    src: &[u8],
    dst_layout: &Layout,
    dst: &mut [u8],
    bits: u32,
    pad: Option<u8>,
) -> Result<()> {
    packing::check_bits(bits)?;
    check_pair(src_layout, dst_layout)?;
    for (which, layout, len) in [
        ("source", src_layout, src.len()),
        ("destination", dst_layout, dst.len()),
    ] {
        packing::check_len(which, layout.cosize(), bits, len)?;
    }
    if let Some(v) = pad {
        for i in 0..dst_layout.cosize() {
            packing::write(dst, i, bits, v);
        }
    }
    let (src_start, dst_start) = (src_layout.buffer_start(), dst_layout.buffer_start());
    for_each_coord(src_layout.shape(), |x| {
        let from = (src_layout.offset_unchecked(x) - src_start) as usize;
        let to = (dst_layout.offset_unchecked(x) - dst_start) as usize;
        packing::write(dst, to, bits, packing::read(src, from, bits));
    });
    Ok(())
}

/// Fails unless a buffer of `len` elements covers `layout`.
pub fn check_len(which: &'static str, layout: &Layout, len: usize) -> Result<()> {
    if len < layout.cosize() {
        return Err(Error::BufferTooShort {
            which,
            needed: layout.cosize(),
            got: len,
        });
    }
    Ok(())
}
