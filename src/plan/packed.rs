//! Lowering a scheduled region to what a packed (sub-byte) plan can run.
//!
//! The scheduler plans a packed relayout as if its elements were bytes. A kernel then keeps its
//! vector form only where every offset it starts from is a whole number of bytes on both sides
//! ([`aligned`]): a copy of whole bytes, or, for 4-bit elements, a transpose whose rows pair up
//! into bytes (the code generator combines two source rows into one row of nibble pairs and
//! transposes those bytes). Every other kernel becomes the loops it stands for around single
//! element moves, which read and write one element inside its byte.

use super::ir::{Kernel, Packed, Region, TransposeWrite};

/// `region` with each kernel the packed code generator cannot run as it is replaced by its loops
/// around [`Kernel::Element`]. A transpose stages only where each staging row (a block's run
/// along `b`) fills whole bytes; otherwise it is written in place.
pub(super) fn lower(mut region: Region, packed: Packed) -> Region {
    if let Kernel::Transpose { tile, write } = region.kernel {
        if !stages_whole_bytes(tile.b.extent, write, packed) {
            let write = TransposeWrite::InPlace;
            region.kernel = Kernel::Transpose { tile, write };
        }
    }
    if region.kernel != Kernel::Element && !moves_whole_bytes(&region, packed) {
        let loops = region.kernel.loops();
        region
            .loops
            .extend(loops.into_iter().filter(|l| l.extent != 1));
        region.kernel = Kernel::Element;
    }
    region
}

/// Whether the region's kernel moves whole bytes, starting from whole bytes on both sides: a
/// copy of whole bytes, or a transpose of 4-bit elements whose rows pair up into bytes on both
/// sides, written in place or through staging rows of whole bytes.
pub(super) fn moves_whole_bytes(region: &Region, packed: Packed) -> bool {
    let k = packed.per_byte() as i64;
    let whole = |n: i64| n % k == 0;
    aligned(region, k)
        && match region.kernel {
            Kernel::Copy { len, write, .. } => {
                let rows = write.rows();
                whole(len as i64) && whole(rows.src_stride) && whole(rows.dst_stride)
            }
            Kernel::Transpose { tile, write } => {
                k == 2
                    && (write == TransposeWrite::InPlace
                        || stages_whole_bytes(tile.b.extent, write, packed))
                    && whole(tile.a.dst_stride)
                    && whole(tile.b.src_stride)
            }
            Kernel::Element | Kernel::Zip { .. } | Kernel::Unzip { .. } => false,
        }
}

/// Whether a transpose written as `write` stages rows of `run` elements that fill whole bytes.
fn stages_whole_bytes(run: usize, write: TransposeWrite, packed: Packed) -> bool {
    matches!(write, TransposeWrite::Staged(_)) && run.is_multiple_of(packed.per_byte())
}

/// Whether every point at which the region runs its kernel starts a whole byte on both sides:
/// the bases, the loops' strides and the indexed offsets' strides are whole numbers of bytes,
/// and no side is swizzled (a swizzle can move an offset inside a byte).
fn aligned(region: &Region, per_byte: i64) -> bool {
    let whole = |n: i64| n % per_byte == 0;
    let indexed = region.indexed.as_ref().is_none_or(|ix| {
        ix.src_swizzle.is_none()
            && ix.dst_swizzle.is_none()
            && ix.src.iter().chain(&ix.dst).all(|t| whole(t.stride))
    });
    indexed
        && whole(region.src_base)
        && whole(region.dst_base)
        && region
            .loops
            .iter()
            .all(|l| whole(l.src_stride) && whole(l.dst_stride))
}
