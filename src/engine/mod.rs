//! The engine: the one owner of the pipeline from a layout pair to machine code.
//!
//! A relayout is compiled in two steps, each with a bounded cache in front of it:
//!
//! ```text
//! (src, dst, element size, tactics, target) ──plan──▶ Arc<Plan> ──jit──▶ Arc<Compiled>
//!            plans, keyed by that tuple                 kernels, keyed by the plan
//! ```
//!
//! Keying kernels by plan means that two requests whose plans agree (two candidate tactics that
//! make the same plan, or layouts written in two notations) share machine code, and that the JIT
//! compiles a [`Plan`] without knowing any layout. The engine also remembers, boundedly, what
//! tuning chose for each request, so that compiling the same relayout again goes straight to it.

mod bounded;
pub(crate) mod offsets;

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Instant;

use bounded::BoundedMap;

use crate::convert::{Conversion, PerIndex};
use crate::error::Result;
use crate::jit::{self, Compiled};
use crate::layout::Layout;
use crate::plan::{LineOffsets, Packed, Plan, Tactics};
use crate::target::Target;
use crate::tuning;

/// Plans the engine keeps.
const PLAN_CAPACITY: usize = 1024;
/// Kernels the engine keeps alive; the oldest is dropped first when the cache is full.
const KERNEL_CAPACITY: usize = 256;
/// Tuning choices the engine remembers.
const TUNED_CAPACITY: usize = 1024;

/// Everything a plan depends on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Request {
    pub src: Layout,
    pub dst: Layout,
    pub elem_size: usize,
    /// How sub-byte elements pack into bytes, for a packed relayout (then `elem_size` is 1).
    pub packed: Option<Packed>,
    /// The conversion of each element, if the types differ (then `elem_size` is the source's).
    pub conversion: Option<Conversion>,
    /// The per-index affine map on the way, if any (then `conversion` is set).
    pub per_index: Option<PerIndex>,
    pub tactics: Tactics,
    pub target: Target,
    /// Where the buffers lie in their cache lines (see [`Plan::with_tactics_at`]); only moved
    /// elements plan by it.
    pub line_offsets: LineOffsets,
}

/// What a tuning choice is remembered by: the request but its tactics, and the thread count.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct TuneKey {
    pub request: Request,
    pub threads: usize,
}

/// A planned and compiled request.
#[derive(Clone)]
pub(crate) struct Candidate {
    pub tactics: Tactics,
    pub plan: Arc<Plan>,
    pub kernel: Arc<Compiled>,
}

/// The process's plans, kernels and tuning choices.
pub(crate) struct Engine {
    plans: Mutex<BoundedMap<Request, Arc<Plan>>>,
    kernels: Mutex<BoundedMap<Arc<Plan>, Arc<Compiled>>>,
    tuned: Mutex<BoundedMap<TuneKey, Tactics>>,
    /// Choices read from tuning files, keyed by their text (see [`crate::tuning`]).
    loaded: Mutex<BoundedMap<String, Tactics>>,
}

impl Engine {
    /// The engine of this process.
    pub(crate) fn global() -> &'static Engine {
        static ENGINE: OnceLock<Engine> = OnceLock::new();
        ENGINE.get_or_init(Engine::new)
    }

    /// An engine with empty caches.
    fn new() -> Engine {
        Engine {
            plans: Mutex::new(BoundedMap::new(PLAN_CAPACITY)),
            kernels: Mutex::new(BoundedMap::new(KERNEL_CAPACITY)),
            tuned: Mutex::new(BoundedMap::new(TUNED_CAPACITY)),
            loaded: Mutex::new(BoundedMap::new(TUNED_CAPACITY)),
        }
    }

    /// The plan of `request`, and when planning it began if it was planned now (always, and
    /// leaving the cache alone, without `use_cache`).
    pub(crate) fn plan(
        &self,
        request: &Request,
        use_cache: bool,
    ) -> Result<(Arc<Plan>, Option<Instant>)> {
        if use_cache {
            if let Some(plan) = lock(&self.plans).get(request) {
                return Ok((plan, None));
            }
        }
        let start = Instant::now();
        let (src, dst) = (&request.src, &request.dst);
        let (tactics, target) = (request.tactics, request.target);
        let plan = Arc::new(
            match (request.conversion, &request.per_index, request.packed) {
                (Some(c), Some(map), _) => {
                    Plan::converting_per_index(src, dst, c, map.clone(), tactics, target)
                }
                (Some(c), None, _) => Plan::converting(src, dst, c, tactics, target),
                (None, _, Some(p)) => Plan::packed(src, dst, p, tactics, target),
                (None, _, None) => Plan::with_tactics_at(
                    src,
                    dst,
                    request.elem_size,
                    tactics,
                    target,
                    request.line_offsets,
                ),
            }?,
        );
        if use_cache {
            lock(&self.plans).insert(request.clone(), plan.clone());
        }
        Ok((plan, Some(start)))
    }

    /// The kernel of `plan`, compiled now unless the cache holds it (always, and leaving the
    /// cache alone, without `use_cache`); `planned` is when planning began, if it happened just
    /// now, so that the kernel's compile time covers it. The flag says whether it was a hit.
    pub(crate) fn kernel(
        &self,
        plan: Arc<Plan>,
        planned: Option<Instant>,
        use_cache: bool,
    ) -> Result<(Arc<Compiled>, bool)> {
        if use_cache {
            if let Some(kernel) = lock(&self.kernels).get(&plan) {
                return Ok((kernel, true));
            }
        }
        let kernel = Arc::new(jit::compile(
            plan.clone(),
            planned.unwrap_or_else(Instant::now),
        )?);
        if use_cache {
            lock(&self.kernels).insert(plan, kernel.clone());
        }
        Ok((kernel, false))
    }

    /// `request` planned and compiled, and whether the kernel came from the cache.
    pub(crate) fn candidate(
        &self,
        request: &Request,
        use_cache: bool,
    ) -> Result<(Candidate, bool)> {
        let (plan, planned) = self.plan(request, use_cache)?;
        let (kernel, hit) = self.kernel(plan.clone(), planned, use_cache)?;
        let candidate = Candidate {
            tactics: request.tactics,
            plan,
            kernel,
        };
        Ok((candidate, hit))
    }

    /// The other candidates tuning measures against `first` (the request with its tactics):
    /// each of [`Tactics::CANDIDATES`] whose plan differs from every earlier one's, each planned
    /// once and compiled.
    pub(crate) fn alternatives(
        &self,
        first: &Candidate,
        request: &Request,
        use_cache: bool,
    ) -> Result<Vec<Candidate>> {
        let mut out: Vec<Candidate> = Vec::new();
        for tactics in Tactics::CANDIDATES {
            let request = Request {
                tactics,
                ..request.clone()
            };
            let (plan, planned) = self.plan(&request, use_cache)?;
            if *plan == *first.plan || out.iter().any(|c| *c.plan == *plan) {
                continue;
            }
            let (kernel, _) = self.kernel(plan.clone(), planned, use_cache)?;
            out.push(Candidate {
                tactics,
                plan,
                kernel,
            });
        }
        Ok(out)
    }

    /// What an earlier tuning chose for `key`, in this process or in a loaded tuning file of
    /// this CPU, if the engine remembers it.
    pub(crate) fn remembered(&self, key: &TuneKey) -> Option<Tactics> {
        if let Some(tactics) = lock(&self.tuned).get(key) {
            return Some(tactics);
        }
        let loaded = lock(&self.loaded);
        if loaded.is_empty() {
            return None;
        }
        loaded.get(&tuning::key_text(&tuning::cpu(), key))
    }

    /// Every choice remembered, as tuning-file keys of `cpu` with their tactics: this process's
    /// choices, then the loaded ones it did not make again.
    pub(crate) fn tuning_choices(&self, cpu: &str) -> Vec<(String, Tactics)> {
        let mut out: Vec<(String, Tactics)> = lock(&self.tuned)
            .entries()
            .iter()
            .map(|(key, tactics)| (tuning::key_text(cpu, key), *tactics))
            .collect();
        for (key, tactics) in lock(&self.loaded).entries() {
            if out.iter().all(|(k, _)| *k != key) {
                out.push((key, tactics));
            }
        }
        out
    }

    /// Remembers choices read from a tuning file.
    pub(crate) fn load_tuning_choices(&self, choices: Vec<(String, Tactics)>) {
        let mut loaded = lock(&self.loaded);
        for (key, tactics) in choices {
            loaded.insert(key, tactics);
        }
    }

    /// Remembers that tuning chose `tactics` for `key`.
    pub(crate) fn remember(&self, key: TuneKey, tactics: Tactics) {
        lock(&self.tuned).insert(key, tactics);
    }
}

/// Locks one of the engine's maps, recovering from a panic in another thread (every update is
/// a single insert, so the map stays consistent).
fn lock<T>(map: &Mutex<T>) -> MutexGuard<'_, T> {
    map.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::LargeWrites;

    fn transpose(tactics: Tactics) -> Request {
        Request {
            src: Layout::row_major(&[32, 48]).unwrap(),
            dst: Layout::col_major(&[32, 48]).unwrap(),
            elem_size: 4,
            packed: None,
            conversion: None,
            per_index: None,
            tactics,
            target: Target::host(),
            line_offsets: LineOffsets::default(),
        }
    }

    #[test]
    fn a_request_is_planned_once() {
        let engine = Engine::new();
        let request = transpose(Tactics::default());
        let (first, planned) = engine.plan(&request, true).unwrap();
        assert!(planned.is_some());
        let (again, planned) = engine.plan(&request, true).unwrap();
        assert!(planned.is_none() && Arc::ptr_eq(&first, &again));
        // Without the cache: planned afresh, and the cache left alone.
        let (fresh, planned) = engine.plan(&request, false).unwrap();
        assert!(planned.is_some() && !Arc::ptr_eq(&first, &fresh));
        assert_eq!(*first, *fresh);
    }

    #[test]
    fn requests_whose_plans_agree_share_one_kernel() {
        let engine = Engine::new();
        // A small transpose streams nothing, so how large destinations are written does not
        // change its plan.
        let streamed = transpose(Tactics::default());
        let stored = transpose(Tactics {
            large_writes: LargeWrites::Stored,
            ..Tactics::default()
        });
        let (a, hit_a) = engine.candidate(&streamed, true).unwrap();
        let (b, hit_b) = engine.candidate(&stored, true).unwrap();
        assert!(!hit_a && hit_b);
        assert!(Arc::ptr_eq(&a.kernel, &b.kernel));
        assert_eq!(
            b.tactics, stored.tactics,
            "each candidate keeps its own tactics"
        );
        let (c, hit_c) = engine.candidate(&streamed, false).unwrap();
        assert!(!hit_c && !Arc::ptr_eq(&a.kernel, &c.kernel));
        // Tuning compares plans: here every candidate's plan is one of a few.
        let others = engine.alternatives(&a, &streamed, true).unwrap();
        for (i, x) in others.iter().enumerate() {
            assert_ne!(*x.plan, *a.plan);
            assert!(others[..i].iter().all(|y| *y.plan != *x.plan));
        }
    }

    #[test]
    fn tuning_choices_are_remembered_per_request_and_threads() {
        let engine = Engine::new();
        let key = |threads| TuneKey {
            request: transpose(Tactics::default()),
            threads,
        };
        assert_eq!(engine.remembered(&key(1)), None);
        engine.remember(key(1), Tactics::CANDIDATES[5]);
        assert_eq!(engine.remembered(&key(1)), Some(Tactics::CANDIDATES[5]));
        assert_eq!(engine.remembered(&key(2)), None);
    }
}
