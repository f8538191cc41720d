//! Steps 2–4 of planning for one region: coalesce its loops, pick the innermost kernel, order
//! the outer loops, and split long copies so that threads can share them.

use super::{Blocking, Kernel, Loop, Region, MAX_STAGE_BYTES};

/// Contiguous copies longer than this many bytes are split into chunks of this size.
const COPY_CHUNK_BYTES: usize = 16 * 1024;
/// Copies of at least this many bytes, a cache line, stream (the runs of a copy's innermost loop
/// go to the streaming routine as the rows of one call).
const STREAM_COPY_MIN_BYTES: usize = 64;
/// Zips that stream are cut into interleaved runs of at most about this many bytes.
const ZIP_CHUNK_BYTES: usize = 4096;
/// Zips whose interleaved run has at least this many bytes stream it out from a staging buffer,
/// one call per run: on a 2-core AMD EPYC VM that took XLA's `T(8,128)(2,1)` bf16 tiles (512-byte
/// runs) from 0.43 to 0.52 of memcpy, while odd/even strips (64-byte runs) fell from 1.0 to 0.78.
const STREAM_ZIP_MIN_BYTES: usize = 512;
/// Zips and unzips whose runs continue one another along their innermost loop (the loops of a
/// streamed zip or unzip are ordered by the destination, so that they do where they can) are
/// staged for up to this many bytes of that loop at a time, and the joined run streamed out with
/// one call. On a 2-core AMD EPYC (Zen 4) VM a C model of odd/even strips of 16 f32 moved
/// 16.7 GB/s with ordinary stores, and 17.7, 19.9, 22.5 and 12.3 GB/s staged in runs of 256
/// bytes, 1, 4 and 16 KiB; relayout's odd/even strips went from 13 to 18–20 GB/s, and XLA's
/// `T(8,128)(2,1)` bf16 tiles (four 512-byte runs a tile) from 10.2–10.4 to 14.1–14.8.
const STAGED_RUN_BYTES: usize = 4096;

/// Schedules one region (its loops in any order, kernel not yet chosen). A long copy comes back
/// as two regions: whole chunks, then the rest.
/// With `stream` (a large destination), copies of a cache line or more, zips whose runs are long
/// or continue one another, and unzips whose runs continue one another write with streaming
/// stores (see [`Region::streamed`]) unless `blocking` says otherwise, and transposes too if it
/// says so (zips, unzips and transposes through a staging buffer); transposes are cut up as
/// `blocking`, fitted to their destination rows ([`Blocking::fitted`]), says.
pub(super) fn schedule(
    region: Region,
    elem_size: usize,
    stream: bool,
    blocking: Blocking,
) -> Vec<Region> {
    let mut loops = coalesce(
        region
            .loops
            .iter()
            .copied()
            .filter(|l| l.extent > 1)
            .collect(),
    );
    let lanes = 16 / elem_size;
    let kernel = pick_kernel(&mut loops, lanes);
    let streamed_copy = |kernel: Kernel| match kernel {
        Kernel::Copy { len } => {
            stream && blocking.stream_copies && len * elem_size >= STREAM_COPY_MIN_BYTES
        }
        _ => false,
    };
    let order = match kernel {
        _ if streamed_copy(kernel) => Order::Source,
        Kernel::Zip { .. } | Kernel::Unzip { .. } if stream && blocking.stream_copies => {
            Order::Destination
        }
        _ => Order::Both,
    };
    order_outer(&mut loops, kernel, order);
    let region = Region {
        loops,
        kernel,
        ..region
    };
    let blocking = match kernel {
        Kernel::Transpose { a, .. } => {
            blocking.fitted(a.dst_stride.unsigned_abs() as usize * elem_size)
        }
        _ => blocking,
    };
    let regions = match kernel {
        Kernel::Copy { len } if len * elem_size > 4 * COPY_CHUNK_BYTES => {
            let run = Loop {
                extent: len,
                src_stride: 1,
                dst_stride: 1,
            };
            split_tile_loop(region, run, COPY_CHUNK_BYTES / elem_size, |len| {
                Kernel::Copy { len }
            })
        }
        Kernel::Transpose { a, b, lanes } => {
            block_transpose(region, a, b, lanes, elem_size, blocking)
        }
        Kernel::Zip { short, long, lanes }
            if stream
                && blocking.stream_copies
                && short.extent * long.extent * elem_size > ZIP_CHUNK_BYTES =>
        {
            let steps = (ZIP_CHUNK_BYTES / (short.extent * elem_size) / lanes).max(1) * lanes;
            split_tile_loop(region, long, steps, |extent| Kernel::Zip {
                short,
                long: Loop { extent, ..long },
                lanes,
            })
        }
        _ => vec![region],
    };
    let regions: Vec<Region> = if stream && blocking.stream_copies {
        regions
            .into_iter()
            .flat_map(|r| stage_runs(r, elem_size))
            .collect()
    } else {
        regions
    };
    regions
        .into_iter()
        .map(|r| {
            // A staging buffer is a stack slot of the generated function, so only blocks that
            // fit one are staged; streamed transposes and zips go through it.
            let fits = r
                .block_bytes(elem_size)
                .is_some_and(|bytes| bytes <= MAX_STAGE_BYTES);
            let streamed = match r.kernel {
                Kernel::Copy { .. } => streamed_copy(r.kernel),
                Kernel::Transpose { .. } => stream && fits && blocking.stream,
                Kernel::Zip { short, long, .. } => {
                    stream
                        && blocking.stream_copies
                        && fits
                        && (r.staged_loop
                            || short.extent * long.extent * elem_size >= STREAM_ZIP_MIN_BYTES)
                }
                Kernel::Unzip { .. } => fits && r.staged_loop,
                Kernel::Element => false,
            };
            let staged = fits
                && match r.kernel {
                    Kernel::Transpose { .. } => blocking.stage || streamed,
                    Kernel::Zip { .. } | Kernel::Unzip { .. } => streamed,
                    _ => false,
                };
            let across = blocking.across && matches!(r.kernel, Kernel::Transpose { .. });
            Region {
                staged,
                streamed,
                across,
                ..r
            }
        })
        .collect()
}

/// Cuts the innermost loop of a zip or unzip whose destination runs (the kernel's block, when it
/// is contiguous and at most [`STAGED_RUN_BYTES`]) continue one another along that loop into
/// runs of up to [`STAGED_RUN_BYTES`],
/// each staged and streamed out as one ([`Region::staged_loop`]); steps that do not fill a whole
/// run stay in a region of their own, with ordinary stores (or, for zips of
/// [`STREAM_ZIP_MIN_BYTES`] or more, each streamed on its own).
fn stage_runs(region: Region, elem_size: usize) -> Vec<Region> {
    let block = match region.kernel {
        Kernel::Zip { short, long, .. } => short.extent * long.extent,
        Kernel::Unzip { short, long, .. } if short.dst_stride == long.extent as i64 => {
            short.extent * long.extent
        }
        _ => return vec![region],
    };
    let Some((&inner, outer)) = region.loops.split_last() else {
        return vec![region];
    };
    if inner.dst_stride != block as i64 || block * elem_size > STAGED_RUN_BYTES {
        return vec![region];
    }
    let steps = (STAGED_RUN_BYTES / (block * elem_size))
        .max(1)
        .min(inner.extent);
    let (whole, rest) = (inner.extent / steps, inner.extent % steps);
    // The outermost loop is the threads' unit of work, so a staged loop needs one around it.
    if whole == 0 || (whole == 1 && outer.is_empty()) {
        return vec![region];
    }
    let mut loops = outer.to_vec();
    if whole > 1 {
        loops.push(Loop {
            extent: whole,
            src_stride: steps as i64 * inner.src_stride,
            dst_stride: steps as i64 * inner.dst_stride,
        });
    }
    loops.push(Loop {
        extent: steps,
        ..inner
    });
    let mut out = vec![Region {
        loops,
        staged_loop: true,
        ..region.clone()
    }];
    if rest > 0 {
        let done = (whole * steps) as i64;
        let mut loops = outer.to_vec();
        loops.push(Loop {
            extent: rest,
            ..inner
        });
        out.push(Region {
            src_base: region.src_base + done * inner.src_stride,
            dst_base: region.dst_base + done * inner.dst_stride,
            loops,
            ..region
        });
    }
    out
}

/// Merges loops that continue each other on both sides (CuTe's coalesce rule on both layouts at
/// once): `(e1, s1, t1)` and `(e2, e1·s1, e1·t1)` become `(e1·e2, s1, t1)`.
fn coalesce(mut loops: Vec<Loop>) -> Vec<Loop> {
    'merge: loop {
        for i in 0..loops.len() {
            for j in 0..loops.len() {
                let (inner, outer) = (loops[i], loops[j]);
                let e = inner.extent as i64;
                if i != j
                    && inner.src_stride.checked_mul(e) == Some(outer.src_stride)
                    && inner.dst_stride.checked_mul(e) == Some(outer.dst_stride)
                {
                    loops[i].extent *= outer.extent;
                    loops.remove(j);
                    continue 'merge;
                }
            }
        }
        return loops;
    }
}

/// Chooses the kernel from the loops and removes the loops it consumes:
/// a loop contiguous on both sides is a copy; a source-contiguous and a destination-contiguous
/// loop of at least `lanes` each form a transpose; anything else moves single elements, with the
/// destination-contiguous (or smallest destination stride) loop innermost.
fn pick_kernel(loops: &mut Vec<Loop>, lanes: usize) -> Kernel {
    if let Some(i) = loops
        .iter()
        .position(|l| l.src_stride == 1 && l.dst_stride == 1)
    {
        let len = loops.remove(i).extent;
        return Kernel::Copy { len };
    }
    let a = loops
        .iter()
        .position(|l| l.src_stride == 1 && l.extent >= lanes);
    let b = loops
        .iter()
        .position(|l| l.dst_stride == 1 && l.extent >= lanes);
    if let (Some(ia), Some(ib)) = (a, b) {
        let (la, lb) = (loops[ia], loops[ib]);
        remove_two(loops, ia, ib);
        return Kernel::Transpose {
            a: la,
            b: lb,
            lanes,
        };
    }
    if let Some(kernel) = pick_zip(loops, lanes) {
        return kernel;
    }
    if let Some(i) = (0..loops.len()).min_by_key(|&i| {
        let l = loops[i];
        (l.dst_stride.unsigned_abs(), l.src_stride.unsigned_abs())
    }) {
        let inner = loops.remove(i);
        loops.push(inner);
    }
    Kernel::Element
}

/// A zip or unzip: a short loop (a power of two below `lanes`) that is contiguous on one side
/// and interleaved with a long loop (at least `lanes`) that is contiguous on the other.
fn pick_zip(loops: &mut Vec<Loop>, lanes: usize) -> Option<Kernel> {
    let short_ok = |l: &Loop| l.extent.is_power_of_two() && (2..lanes).contains(&l.extent);
    for (i, short) in loops.iter().enumerate() {
        for (j, long) in loops.iter().enumerate() {
            if i == j || !short_ok(short) || long.extent < lanes {
                continue;
            }
            let k = short.extent as i64;
            let (short, long) = (*short, *long);
            let kernel = if short.dst_stride == 1 && long.src_stride == 1 && long.dst_stride == k {
                Kernel::Zip { short, long, lanes }
            } else if short.src_stride == 1 && long.src_stride == k && long.dst_stride == 1 {
                Kernel::Unzip { short, long, lanes }
            } else {
                continue;
            };
            remove_two(loops, i, j);
            return Some(kernel);
        }
    }
    None
}

/// Cuts a transpose into blocks as [`Blocking`] describes: strips of destination runs along `b`,
/// blocks along `a`, and macro blocks of strips and blocks, so that one macro block touches a few
/// hundred pages on each side (the TLB's reach) while the source is still read in long strips.
fn block_transpose(
    region: Region,
    a: Loop,
    b: Loop,
    lanes: usize,
    elem_size: usize,
    blocking: Blocking,
) -> Vec<Region> {
    let strip = lanes.max(blocking.run_bytes / elem_size);
    let width = (blocking.block_bytes / elem_size / strip).max(lanes);
    let outer = region.loops.len();
    let strips = split_tile_loop(region, b, strip, |extent| Kernel::Transpose {
        a,
        b: Loop { extent, ..b },
        lanes,
    });
    let mut out = Vec::new();
    for r in strips {
        let Kernel::Transpose { b, .. } = r.kernel else {
            out.push(r);
            continue;
        };
        out.extend(split_tile_loop(r, a, width, |extent| Kernel::Transpose {
            a: Loop { extent, ..a },
            b,
            lanes,
        }));
    }
    for r in &mut out {
        if let [strips, blocks] = r.loops[outer..] {
            let (strips_out, strips_in) = group(strips, blocking.macro_strips);
            let (blocks_out, blocks_in) = group(blocks, blocking.macro_blocks);
            r.loops.truncate(outer);
            r.loops.extend(
                [strips_out, blocks_out, strips_in, blocks_in]
                    .into_iter()
                    .filter(|l| l.extent > 1),
            );
        }
    }
    out
}

/// Splits `l` into an outer and an inner loop, the inner one of the extent that divides `l.extent`
/// and is nearest `target` by ratio.
fn group(l: Loop, target: usize) -> (Loop, Loop) {
    let ratio = |g: usize| (g as f64 / target as f64).ln().abs();
    let inner = (1..=l.extent.min(target.saturating_mul(4)))
        .filter(|&g| l.extent.is_multiple_of(g))
        .min_by(|&x, &y| ratio(x).total_cmp(&ratio(y)))
        .unwrap_or(1);
    (
        Loop {
            extent: l.extent / inner,
            src_stride: l.src_stride * inner as i64,
            dst_stride: l.dst_stride * inner as i64,
        },
        Loop { extent: inner, ..l },
    )
}

/// Removes the loops at two distinct positions.
fn remove_two(loops: &mut Vec<Loop>, i: usize, j: usize) {
    loops.remove(i.max(j));
    loops.remove(i.min(j));
}

/// Orders the loops outside the kernel (all but an element kernel's innermost loop) from the
/// largest strides outside to the smallest inside, so both sides walk memory forwards in long
/// runs as far as possible. Around copies that stream ([`Order::Source`]) the order follows the
/// source alone: it is read from start to end while the streaming stores fill whole destination
/// lines in a few places at once, which on a 2-core AMD EPYC VM ran NHWC → NCHW16c at 28 GB/s
/// against 15 for walking the destination in order (and 12 for either order with ordinary
/// stores). Around zips and unzips that stream ([`Order::Destination`]) it follows the
/// destination, so that the runs of consecutive steps join into one staged run (see
/// [`stage_runs`]).
fn order_outer(loops: &mut [Loop], kernel: Kernel, order: Order) {
    let sortable = match kernel {
        Kernel::Element => loops.len().saturating_sub(1),
        _ => loops.len(),
    };
    loops[..sortable].sort_by_key(|l| {
        let (src, dst) = (l.src_stride.unsigned_abs(), l.dst_stride.unsigned_abs());
        std::cmp::Reverse(match order {
            Order::Source => (src, dst),
            Order::Destination => (dst, src),
            Order::Both => (dst.max(src), dst),
        })
    });
}

/// How [`order_outer`] sorts the loops around a kernel.
#[derive(Clone, Copy)]
enum Order {
    /// By source stride: the source is read from start to end.
    Source,
    /// By destination stride: the destination is written from start to end.
    Destination,
    /// By the larger stride of the two, then the destination's.
    Both,
}

/// Splits one loop of a region's kernel (`run`, with extent and strides) into whole blocks of
/// `block` steps, as a new innermost loop of the region around a kernel of `block` steps, plus a
/// region for the remaining steps; `kernel(n)` is the kernel over `n` steps.
fn split_tile_loop(
    region: Region,
    run: Loop,
    block: usize,
    kernel: impl Fn(usize) -> Kernel,
) -> Vec<Region> {
    let (whole, rest) = (run.extent / block, run.extent % block);
    if whole <= 1 {
        return vec![region];
    }
    let mut main = region.clone();
    main.loops.push(Loop {
        extent: whole,
        src_stride: block as i64 * run.src_stride,
        dst_stride: block as i64 * run.dst_stride,
    });
    main.kernel = kernel(block);
    let mut out = vec![main];
    if rest > 0 {
        let done = (whole * block) as i64;
        out.push(Region {
            src_base: region.src_base + done * run.src_stride,
            dst_base: region.dst_base + done * run.dst_stride,
            kernel: kernel(rest),
            ..region
        });
    }
    out
}
