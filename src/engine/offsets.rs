//! Kernels for buffers that start part-way into a cache line.
//!
//! A plan cuts a transpose's rows into runs and blocks counted from the start of each buffer.
//! Where a buffer starts part-way into a line (a `Vec` of more than 128 KiB from glibc's
//! allocator starts 16 bytes past a page), every run and block starts and ends part-way into a
//! line too: the next strip finishes a destination line after the first has left the cache, and
//! the tiles' 32-byte loads split across source lines. On a 2-core Intel Xeon VM (family 6,
//! model 167), a 4000² f32 transpose (streamed) moved 3.6–3.8 GB/s between buffers 16 bytes
//! past a page and 7.4–8.1 between buffers at a page (`relayout bench --no-tune
//! --page-offset`). [`OffsetKernels`] plans and compiles, on first use, the kernel for the
//! buffers' offsets in their lines
//! ([`Plan::with_tactics_at`](crate::plan::Plan::with_tactics_at)), whose blocks read and runs
//! write whole lines: 7.2–7.8 GB/s there.

use std::sync::{Arc, Mutex};

use super::{lock, Candidate, Engine, Request};
use crate::plan::{Blocking, CopyWrite, Kernel, LineOffsets, Tactics};

/// Kernels one relayout keeps for buffers at offsets in their lines: a few placements by the
/// tactics tuning measures. Buffers at further placements run the aligned kernel.
const MAX_KERNELS: usize = 64;

/// The kernels of one relayout for buffers at each pair of offsets in their lines, by tactics,
/// planned and compiled on first use.
pub(crate) struct OffsetKernels {
    /// The relayout's request (its tactics and offset are each kernel's own).
    request: Request,
    line_bytes: usize,
    use_cache: bool,
    /// (offsets, tactics, the kernel if its plan differs from the aligned one).
    kernels: Mutex<Vec<(LineOffsets, Tactics, Option<Candidate>)>>,
}

impl OffsetKernels {
    /// The kernels for `request`, whose plan for aligned buffers is `first`'s, if any could
    /// differ: plans of moved elements with a transpose, an unzip or copies by the runtime's
    /// routines (whose rows may then lie along another loop), whose destination leaves the L2
    /// ([`Blocking::BEYOND_L2_BYTES`]). Smaller relayouts run from the cache, where a partial
    /// line costs no memory traffic, and would pay a compile for nothing.
    pub(crate) fn of(request: &Request, first: &Candidate, use_cache: bool) -> Option<Arc<Self>> {
        let plain = request.conversion.is_none() && request.packed.is_none();
        let peelable = first.plan.regions().iter().any(|r| {
            matches!(
                r.kernel,
                Kernel::Transpose { .. }
                    | Kernel::Unzip { .. }
                    | Kernel::Copy {
                        write: CopyWrite::Streamed { .. } | CopyWrite::Prefetched { .. },
                        ..
                    }
            )
        });
        let beyond_l2 = first.plan.dst_bytes() >= Blocking::BEYOND_L2_BYTES;
        (plain && peelable && beyond_l2).then(|| {
            Arc::new(OffsetKernels {
                request: request.clone(),
                line_bytes: request.target.line_bytes.max(1),
                use_cache,
                kernels: Mutex::new(Vec::new()),
            })
        })
    }

    /// The kernel of `candidate`'s tactics for buffers at `src` and `dst`, where one lies
    /// part-way into a line and the plan for their offsets differs from `candidate`'s; `None`
    /// where `candidate` is that kernel (or planning it failed, which leaves `candidate`
    /// correct).
    pub(crate) fn for_buffers(
        &self,
        candidate: &Candidate,
        src: *const u8,
        dst: *mut u8,
    ) -> Option<Candidate> {
        let offsets = LineOffsets::of(src, dst, self.line_bytes);
        if offsets.is_aligned() {
            return None;
        }
        let mut kernels = lock(&self.kernels);
        let tactics = candidate.tactics;
        if let Some((_, _, kernel)) = kernels
            .iter()
            .find(|(o, t, _)| *o == offsets && *t == tactics)
        {
            return kernel.clone();
        }
        if kernels.len() >= MAX_KERNELS {
            return None;
        }
        let request = Request {
            tactics,
            line_offsets: offsets,
            ..self.request.clone()
        };
        let kernel = Engine::global()
            .candidate(&request, self.use_cache)
            .ok()
            .map(|(c, _)| c)
            .filter(|c| *c.plan != *candidate.plan);
        kernels.push((offsets, tactics, kernel.clone()));
        kernel
    }
}
