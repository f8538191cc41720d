//! Sub-byte elements packed several to a byte, in XLA's bit order.
//!
//! A tensor of 4-bit elements (`s4`, `u4`, `f4e2m1fn`) packed with XLA's `E(4)` holds two
//! elements per byte, and one of 2-bit elements (`s2`, `u2`, `E(2)`) four. Element `i` of a
//! packed buffer lives in byte `i / k` (`k` elements per byte), and the first element of a byte
//! takes its most significant bits: element `i` sits `bits · (k - 1 - i % k)` bits up from the
//! byte's least significant bit. That is the order of XLA's `PackIntN` (`xla/util.h`), which
//! shifts element `j` of a byte left by `bits · (elements_per_byte - j - 1)`.
//!
//! A packed relayout moves elements by these indices: the layouts' offsets count elements, and
//! a buffer of `n` elements takes [`Packed::bytes_for`]`(n)` bytes.
//!
//! ```
//! use relayout::packing::{get, set};
//! use relayout::plan::Packed;
//!
//! let int4 = Packed::FOUR_BITS;
//! let mut buf = [0u8; 2];
//! set(&mut buf, 0, int4, 0x3)?; // element 0: the high nibble of byte 0
//! set(&mut buf, 1, int4, 0xa)?; // element 1: the low nibble
//! set(&mut buf, 2, int4, 0xf)?;
//! assert_eq!(buf, [0x3a, 0xf0]);
//! assert_eq!((get(&buf, 1, int4)?, get(&buf, 3, int4)?), (0xa, 0));
//! assert!(get(&buf, 4, int4).is_err()); // beyond the buffer
//! assert_eq!(int4.bytes_for(3), 2);
//! # Ok::<(), relayout::Error>(())
//! ```

use crate::error::{Error, Result};
use crate::plan::Packed;

/// The bits (low bits of the result) of element `index` of a packed buffer; fails with
/// [`Error::PackedBufferTooShort`] when the buffer does not hold that element.
pub fn get(buf: &[u8], index: usize, packed: Packed) -> Result<u8> {
    check_len("packed", index.saturating_add(1), packed.bits(), buf.len())?;
    Ok(read(buf, index, packed.bits()))
}

/// Sets element `index` of a packed buffer to the low bits of `value`, leaving the other
/// elements of its byte alone; fails as [`get`] does.
pub fn set(buf: &mut [u8], index: usize, packed: Packed, value: u8) -> Result<()> {
    check_len("packed", index.saturating_add(1), packed.bits(), buf.len())?;
    write(buf, index, packed.bits(), value);
    Ok(())
}

/// Bytes that hold `elements` elements of `bits` bits (2 or 4), packed.
pub(crate) fn bytes_for(elements: usize, bits: u32) -> usize {
    elements.div_ceil(per_byte(bits))
}

/// Elements of `bits` bits (2 or 4) in one byte.
pub(crate) fn per_byte(bits: u32) -> usize {
    8 / bits as usize
}

/// [`get`] for an index the caller has checked; `bits` is 2 or 4.
pub(crate) fn read(buf: &[u8], index: usize, bits: u32) -> u8 {
    let (byte, shift) = place(index, bits);
    (buf[byte] >> shift) & mask(bits)
}

/// [`set`] for an index the caller has checked; `bits` is 2 or 4.
pub(crate) fn write(buf: &mut [u8], index: usize, bits: u32, value: u8) {
    let (byte, shift) = place(index, bits);
    buf[byte] = (buf[byte] & !(mask(bits) << shift)) | ((value & mask(bits)) << shift);
}

/// A byte holding the low `bits` bits of `value` in every one of its elements (how a pad value
/// fills a packed buffer).
pub(crate) fn repeated(value: u8, bits: u32) -> u8 {
    (0..per_byte(bits)).fold(0, |b, i| b | ((value & mask(bits)) << (i as u32 * bits)))
}

/// Fails unless `bits` is a packed element size: 2 or 4.
pub(crate) fn check_bits(bits: u32) -> Result<()> {
    match bits {
        2 | 4 => Ok(()),
        _ => Err(Error::ElementType(format!(
            "packed elements of {bits} bits; elements pack 2 (4 bits) or 4 (2 bits) to a byte"
        ))),
    }
}

/// Fails unless a buffer of `len` bytes holds `elements` packed elements of `bits` bits.
pub(crate) fn check_len(which: &'static str, elements: usize, bits: u32, len: usize) -> Result<()> {
    let needed = bytes_for(elements, bits);
    if len < needed {
        return Err(Error::PackedBufferTooShort {
            which,
            elements,
            bits,
            needed,
            got: len,
        });
    }
    Ok(())
}

/// The byte of element `index` and how far its bits sit from the byte's least significant bit.
fn place(index: usize, bits: u32) -> (usize, u32) {
    let k = per_byte(bits);
    (index / k, bits * (k - 1 - index % k) as u32)
}

fn mask(bits: u32) -> u8 {
    ((1u16 << bits) - 1) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_bit_elements_fill_a_byte_from_the_top() {
        let mut buf = [0u8; 1];
        for (i, v) in [1u8, 2, 3, 0].into_iter().enumerate() {
            set(&mut buf, i, Packed::TWO_BITS, v).unwrap();
        }
        assert_eq!(buf, [0b01_10_11_00]);
        let got: Vec<u8> = (0..4).map(|i| read(&buf, i, 2)).collect();
        assert_eq!(got, [1, 2, 3, 0]);
        assert!(set(&mut buf, 4, Packed::TWO_BITS, 1).is_err());
        assert!(get(&buf, 4, Packed::TWO_BITS).is_err());
        assert_eq!(repeated(0b10, 2), 0b10_10_10_10);
        assert_eq!(repeated(0x7, 4), 0x77);
    }

    #[test]
    fn only_two_and_four_bits_pack() {
        assert!(check_bits(4).is_ok() && check_bits(2).is_ok());
        assert!(check_bits(8).is_err() && check_bits(3).is_err());
    }
}
