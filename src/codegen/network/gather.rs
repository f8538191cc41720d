//! Gather networks: `k` registers of short strips (3, 5, 6, 7 … elements) zipped or unzipped,
//! each output register built from the few input registers its lanes come from.
//!
//! Three constructions, of which [`Gather::cheapest`] keeps the one [`Network::cost`] rates
//! cheapest. Two-register byte shuffles with any mask (`pshufb` twice and `por`, or
//! `vpermi2b`) fold each output from its sources ([`Gather::folded`]). Where the lanes allow,
//! blends (`pblendw`, lane for lane) and one-register permutes (`pshufd`, `pshufb`), single
//! cheap instructions, do it instead: blending an output's sources, whose lanes sit at
//! distinct positions, and permuting the result (an unzip; [`Gather::blended_then_permuted`]),
//! or permuting each input so that its lanes sit where the outputs want them and blending
//! those (a zip; [`Gather::permuted_then_blended`]). Blends of single bytes are no single
//! instruction, so 1-byte elements fold.

use super::{Network, Op, Shuffle, VECTOR_BYTES};

/// Where each output lane of a gather comes from, and in which order each output uses its
/// input registers.
pub(super) struct Gather {
    elem: usize,
    /// `sources[r][j]`: the (input register, lane) that lane `j` of output `r` takes.
    sources: Vec<Vec<(usize, usize)>>,
    /// The input registers output `r` takes lanes from, in order of first use.
    order: Vec<Vec<usize>>,
}

impl Gather {
    /// `k` input registers of `elem`-byte lanes into `k` outputs, lane `j` of output `r` being
    /// lane `source(r, j) = (register, lane)` of the inputs.
    pub(super) fn new(
        k: usize,
        elem: usize,
        source: impl Fn(usize, usize) -> (usize, usize),
    ) -> Gather {
        let lanes = VECTOR_BYTES / elem;
        let sources: Vec<Vec<(usize, usize)>> = (0..k)
            .map(|r| (0..lanes).map(|j| source(r, j)).collect())
            .collect();
        let order = sources
            .iter()
            .map(|lanes| {
                let mut regs: Vec<usize> = Vec::new();
                for &(reg, _) in lanes {
                    if !regs.contains(&reg) {
                        regs.push(reg);
                    }
                }
                regs
            })
            .collect();
        Gather {
            elem,
            sources,
            order,
        }
    }

    /// The cheapest construction ([`Network::cost`]).
    pub(super) fn cheapest(&self) -> Network {
        let blended =
            (self.elem >= 2).then(|| [self.blended_then_permuted(), self.permuted_then_blended()]);
        blended
            .into_iter()
            .flatten()
            .flatten()
            .chain([self.folded()])
            .min_by_key(Network::cost)
            .expect("the folded network is always there")
    }

    /// Each output: its index, where its lanes come from, and its registers in order of use.
    fn outputs(&self) -> impl Iterator<Item = (usize, &[(usize, usize)], &[usize])> {
        self.sources
            .iter()
            .zip(&self.order)
            .enumerate()
            .map(|(r, (lanes_of, regs))| (r, lanes_of.as_slice(), regs.as_slice()))
    }

    fn k(&self) -> usize {
        self.sources.len()
    }

    fn lanes(&self) -> usize {
        VECTOR_BYTES / self.elem
    }

    /// Output `r` folded from the input registers its lanes come from, in order of first use:
    /// the first stage shuffles the first two into an accumulator register (`k + r`), each
    /// later stage shuffles in one more.
    fn folded(&self) -> Network {
        let (k, elem) = (self.k(), self.elem);
        let chains = self.outputs().map(|(r, lanes_of, regs)| {
            // Stage 0 picks from the first two sources (one, twice, when the output has a
            // single source); stage `s` keeps what the accumulator holds and adds the lanes of
            // source `s + 1`.
            (0..regs.len().max(2) - 1).map(move |stage| {
                let (x, y) = match stage {
                    0 => (regs[0], regs[regs.len().min(2) - 1]),
                    s => (k + r, regs[s + 1]),
                };
                let mut mask = [0u8; VECTOR_BYTES];
                for (j, &(reg, lane)) in lanes_of.iter().enumerate() {
                    let from = if reg == y && (stage > 0 || x != y) {
                        VECTOR_BYTES + lane * elem
                    } else if stage == 0 && reg == x {
                        lane * elem
                    } else if stage > 0 {
                        j * elem
                    } else {
                        continue;
                    };
                    for b in 0..elem {
                        mask[j * elem + b] = (from + b) as u8;
                    }
                }
                Op {
                    x,
                    y,
                    shuffle: Shuffle::Bytes { mask },
                    out: k + r,
                }
            })
        });
        self.accumulated(chains)
    }

    /// Blends, then a permute per output: output `r`'s sources are blended lane for lane into
    /// its accumulator (`k + r`), which then holds each of its lanes where its source held it,
    /// and one permute puts them in order. `None` unless every output's lanes come from
    /// distinct positions of their registers (so they fit one register where they are).
    fn blended_then_permuted(&self) -> Option<Network> {
        let (k, elem) = (self.k(), self.elem);
        let mut chains = Vec::new();
        for (r, lanes_of, regs) in self.outputs() {
            // Which register holds each position of the accumulator.
            let mut holder = vec![None; self.lanes()];
            for &(reg, lane) in lanes_of {
                if holder[lane].replace(reg).is_some() {
                    return None;
                }
            }
            let acc = k + r;
            let mut chain: Vec<Op> = regs
                .windows(2)
                .enumerate()
                .map(|(s, pair)| Op {
                    x: if s == 0 { pair[0] } else { acc },
                    y: pair[1],
                    shuffle: Shuffle::Bytes {
                        mask: blend_mask(elem, |p| holder[p] == Some(pair[1])),
                    },
                    out: acc,
                })
                .collect();
            // The permute, unless the lanes are in order already (and the blends wrote them).
            let mask = permute_mask(elem, |j| lanes_of[j].1);
            if regs.len() == 1 || !is_blend(&mask) {
                let from = if regs.len() == 1 { regs[0] } else { acc };
                chain.push(Op {
                    x: from,
                    y: from,
                    shuffle: Shuffle::Bytes { mask },
                    out: acc,
                });
            }
            chains.push(chain);
        }
        Some(self.accumulated(chains))
    }

    /// The network of `chains` of ops, one chain per output, each op `s` of a chain in stage
    /// `s`, whose outputs are the accumulators `k + r`.
    fn accumulated(
        &self,
        chains: impl IntoIterator<Item = impl IntoIterator<Item = Op>>,
    ) -> Network {
        let k = self.k();
        let mut stages = Vec::new();
        staged(&mut stages, 0, chains);
        Network {
            inputs: k,
            registers: 2 * k,
            stages,
            outputs: (k..2 * k).collect(),
        }
    }

    /// A permute per input, then blends: input `i` is permuted (into register `k + i`) so that
    /// each of its lanes sits at the position its output wants it, and each output (`2k + r`)
    /// blends its permuted sources lane for lane. `None` unless the lanes of every input go to
    /// distinct positions.
    fn permuted_then_blended(&self) -> Option<Network> {
        let (k, elem) = (self.k(), self.elem);
        // For each input, which of its lanes each position takes.
        let mut wanted = vec![vec![None; self.lanes()]; k];
        for lanes_of in &self.sources {
            for (j, &(reg, lane)) in lanes_of.iter().enumerate() {
                if wanted[reg][j].replace(lane).is_some() {
                    return None;
                }
            }
        }
        // Positions no output takes from an input keep their lane; an input whose lanes all
        // stay is used as it is.
        let masks: Vec<[u8; VECTOR_BYTES]> = wanted
            .iter()
            .map(|wants| permute_mask(elem, |j| wants[j].unwrap_or(j)))
            .collect();
        let permuted = |i: usize| if is_blend(&masks[i]) { i } else { k + i };
        let permutes = (0..k)
            .filter(|&i| permuted(i) != i)
            .map(|i| Op {
                x: i,
                y: i,
                shuffle: Shuffle::Bytes { mask: masks[i] },
                out: k + i,
            })
            .collect();
        let chains = self.outputs().map(|(r, lanes_of, regs)| {
            let out = 2 * k + r;
            // A single source is its permuted register, copied by a blend with itself.
            let pairs: Vec<[usize; 2]> = match regs.len() {
                1 => vec![[regs[0]; 2]],
                _ => regs.windows(2).map(|pair| [pair[0], pair[1]]).collect(),
            };
            pairs
                .into_iter()
                .enumerate()
                .map(|(s, [first, then])| Op {
                    x: if s == 0 { permuted(first) } else { out },
                    y: permuted(then),
                    shuffle: Shuffle::Bytes {
                        mask: blend_mask(elem, |p| then != first && lanes_of[p].0 == then),
                    },
                    out,
                })
                .collect::<Vec<Op>>()
        });
        let mut stages = vec![permutes];
        staged(&mut stages, 1, chains);
        Some(Network {
            inputs: k,
            registers: 3 * k,
            stages,
            outputs: (2 * k..3 * k).collect(),
        })
    }
}

/// Adds each chain of ops to `stages`, its `s`-th op to stage `first + s`.
fn staged(
    stages: &mut Vec<Vec<Op>>,
    first: usize,
    chains: impl IntoIterator<Item = impl IntoIterator<Item = Op>>,
) {
    for chain in chains {
        for (s, op) in chain.into_iter().enumerate() {
            if stages.len() <= first + s {
                stages.resize_with(first + s + 1, Vec::new);
            }
            stages[first + s].push(op);
        }
    }
}

/// The mask of a blend of `elem`-byte lanes: lane `p` from `y` where `from_y(p)`, else from `x`,
/// each at its own position.
pub(super) fn blend_mask(elem: usize, from_y: impl Fn(usize) -> bool) -> [u8; VECTOR_BYTES] {
    std::array::from_fn(|i| {
        let y = if from_y(i / elem) { VECTOR_BYTES } else { 0 };
        (y + i) as u8
    })
}

/// The mask of a permute of one register's `elem`-byte lanes: lane `j` of the output is lane
/// `lane(j)` of `x`.
pub(super) fn permute_mask(elem: usize, lane: impl Fn(usize) -> usize) -> [u8; VECTOR_BYTES] {
    std::array::from_fn(|i| (lane(i / elem) * elem + i % elem) as u8)
}

/// Whether the mask takes every byte from its own position of `x` or of `y`.
pub(super) fn is_blend(mask: &[u8; VECTOR_BYTES]) -> bool {
    mask.iter()
        .enumerate()
        .all(|(i, &m)| m as usize % VECTOR_BYTES == i)
}
