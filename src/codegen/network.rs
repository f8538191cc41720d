//! Shuffle networks: fixed sequences of two-register shuffles that rearrange a tile held in
//! 16-byte registers, and the tile kernels built from them (transpose, zip, unzip).
//!
//! A network is described once, as data, and used twice: to emit Cranelift instructions and to
//! simulate where every input byte ends up. The simulation tells each kernel where to store each
//! output register, so a network's bookkeeping is never written by hand.
//!
//! Strips of 2, 4 and 8 elements interleave and de-interleave with single-instruction shuffles
//! (`punpck*`, `shufps`, pack). Other short strips (3, 5, 6, 7 … elements, RGB pixels, NCHW with
//! three channels) take a *gather* network: blends and one-register permutes where the lanes
//! allow, else each output register is folded together from the few input registers its lanes
//! come from, one two-register byte shuffle per extra source. Even counts with an odd factor
//! (6, 10, 12 …) may instead halve first: de-interleave stages leave groups of an odd count of
//! strips, each gathered on its own (zips run the same the other way round).

use cranelift_codegen::ir::{types, Endianness, Immediate, InstBuilder, MemFlagsData, Type, Value};

mod gather;

use gather::{is_blend, Gather};

use super::convert::LaneIndex;
use super::{Emitter, VECTOR_BYTES};

/// One shuffle of two registers `x` and `y` into one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shuffle {
    /// `punpck{l,h}`: alternate `unit`-byte chunks of `x` and `y`, from their low (or high) halves.
    Interleave { unit: usize, high: bool },
    /// Any bytes of `x` and `y`: output byte `i` is byte `mask[i]` of `x ++ y` (`pshufb` and
    /// `por`, or `vpermi2b` where the CPU has AVX-512 VBMI).
    Bytes { mask: [u8; VECTOR_BYTES] },
    /// The even (or odd) `unit`-byte chunks of `x`, then those of `y` (`shufps 0x88/0xDD` for
    /// 4-byte units, `punpck{l,h}qdq` for 8-byte units, mask-and-pack for 1- and 2-byte units).
    Deinterleave { unit: usize, odd: bool },
}

impl Shuffle {
    /// The byte mask: output byte `i` is byte `m[i]` of the 32-byte concatenation `x ++ y`.
    fn mask(self) -> [u8; VECTOR_BYTES] {
        let mut mask = [0u8; VECTOR_BYTES];
        for (i, m) in mask.iter_mut().enumerate() {
            *m = match self {
                Shuffle::Interleave { unit, high } => {
                    let (chunk, byte) = (i / unit, i % unit);
                    let from = if high { VECTOR_BYTES / 2 } else { 0 };
                    (chunk % 2) * VECTOR_BYTES + from + (chunk / 2) * unit + byte
                }
                Shuffle::Deinterleave { unit, odd } => {
                    let (chunk, byte) = (i / unit, i % unit);
                    let per_half = VECTOR_BYTES / unit / 2;
                    let operand = chunk / per_half;
                    let pick = 2 * (chunk % per_half) + usize::from(odd);
                    operand * VECTOR_BYTES + pick * unit + byte
                }
                Shuffle::Bytes { mask } => mask[i] as usize,
            } as u8;
        }
        mask
    }
}

/// One shuffle of a stage: registers `x` and `y` into output register `out`.
#[derive(Debug, Clone, Copy)]
struct Op {
    x: usize,
    y: usize,
    shuffle: Shuffle,
    out: usize,
}

/// A sequence of stages; each stage reads the registers the previous one wrote (and the ones it
/// did not write, unchanged). The first `inputs` registers are loaded; `outputs` are stored.
#[derive(Debug, Clone)]
pub(super) struct Network {
    inputs: usize,
    registers: usize,
    stages: Vec<Vec<Op>>,
    outputs: Vec<usize>,
}

impl Network {
    /// Transposes `lanes` registers of `lanes` elements of `elem` bytes: `log2(lanes)` stages of
    /// interleaves on doubling chunks (the classic `punpck` transpose).
    pub(super) fn transpose(lanes: usize, elem: usize) -> Network {
        let stages = std::iter::successors(Some(1), |c| Some(c * 2))
            .take_while(|&chunk| chunk < lanes)
            .map(|chunk| {
                pairs_split(lanes, |high| Shuffle::Interleave {
                    unit: elem * chunk,
                    high,
                })
            })
            .collect();
        Network::in_place(lanes, stages)
    }

    /// A network whose stages rewrite its `registers` inputs in place, all of them outputs.
    fn in_place(registers: usize, stages: Vec<Vec<Op>>) -> Network {
        Network {
            inputs: registers,
            registers,
            stages,
            outputs: (0..registers).collect(),
        }
    }

    /// Interleaves `k` registers element by element: register `i` holds strip `i`, and the
    /// outputs, in order, hold the strips zipped.
    ///
    /// Strip counts with an odd factor `m > 1` take a gather network; where they are even too
    /// (`k = 2^a · m`: six or twelve channels) the cheaper of one gather of all `k` and a
    /// gather of `m` for each of the `2^a` groups of strips followed by `a` interleave stages.
    pub(super) fn zip(k: usize, elem: usize) -> Network {
        let halvings = k.trailing_zeros() as usize;
        let m = k >> halvings;
        if m == 1 {
            return Network::in_place(k, vec![zip_stage(k, elem); halvings]);
        }
        let lanes = VECTOR_BYTES / elem;
        // Output lane `t` of a run of `n` strips is element `t / n` of strip `t % n`.
        let zipped = |n: usize| {
            move |r: usize, j: usize| {
                let t = r * lanes + j;
                (t % n, t / n)
            }
        };
        let whole = Network::gather(k, elem, zipped(k));
        if halvings == 0 {
            return whole;
        }
        // Group `g` zips strips `g, g + 2^a, …` (those the interleave stages put `2^a` apart)
        // into a run of `m` registers, `runs[g·m …]`, which the stages then interleave with the
        // other groups' runs.
        let group = Network::gather(m, elem, zipped(m));
        let groups = 1 << halvings;
        let mut halved = Network::in_place(k, Vec::new());
        let mut runs = Vec::new();
        for g in 0..groups {
            runs.extend(halved.append(&group, |i| g + groups * i));
        }
        // The first interleave stage reads the groups' runs and writes registers 0 … k.
        let stage = zip_stage(k, elem);
        let first = stage
            .iter()
            .map(|op| Op {
                x: runs[op.x],
                y: runs[op.y],
                ..*op
            })
            .collect();
        halved.stages.push(first);
        halved.stages.extend(vec![stage; halvings - 1]);
        Network::cheaper(whole, halved)
    }

    /// The inverse of [`Network::zip`]: `k` registers of `k` interleaved strips into one register
    /// per strip. For `k = 2^a · m`, the cheaper of one gather of all `k` and `a` de-interleave
    /// stages followed by a gather of `m` for each group of `m` registers they leave.
    pub(super) fn unzip(k: usize, elem: usize) -> Network {
        let halvings = k.trailing_zeros() as usize;
        let m = k >> halvings;
        let stage = pairs_split(k, |odd| Shuffle::Deinterleave { unit: elem, odd });
        if m == 1 {
            return Network::in_place(k, vec![stage; halvings]);
        }
        let lanes = VECTOR_BYTES / elem;
        // Output `r` of a run of `n` strips is strip `r`; its lane `j` is element `j·n + r`.
        let unzipped = |n: usize| {
            move |r: usize, j: usize| {
                let q = j * n + r;
                (q / lanes, q % lanes)
            }
        };
        let whole = Network::gather(k, elem, unzipped(k));
        if halvings == 0 {
            return whole;
        }
        // The de-interleave stages leave in group `g` of `m` registers the elements `q ≡ g`
        // modulo `2^a`, which interleave the `m` strips `g, g + 2^a, …`.
        let group = Network::gather(m, elem, unzipped(m));
        let groups = 1 << halvings;
        let mut halved = Network::in_place(k, vec![stage; halvings]);
        let strips_of: Vec<Vec<usize>> = (0..groups)
            .map(|g| halved.append(&group, |i| g * m + i))
            .collect();
        // Outputs in strip order, so that strips adjacent in the destination stay adjacent.
        halved.outputs = (0..k).map(|s| strips_of[s % groups][s / groups]).collect();
        Network::cheaper(whole, halved)
    }

    /// `b` where it costs less than `a`, else `a`.
    fn cheaper(a: Network, b: Network) -> Network {
        if b.cost() < a.cost() {
            b
        } else {
            a
        }
    }

    /// Appends `part`'s stages after this network's, its input `i` read from register
    /// `input(i)` and its other registers new ones past this network's; returns the registers
    /// that hold `part`'s outputs. `part` must write its own registers only past its inputs
    /// (as gathers do), so that the registers it reads keep their values for later stages.
    fn append(&mut self, part: &Network, input: impl Fn(usize) -> usize) -> Vec<usize> {
        let base = self.registers;
        let at = |r: usize| {
            if r < part.inputs {
                input(r)
            } else {
                base + r - part.inputs
            }
        };
        self.registers += part.registers - part.inputs;
        self.stages.extend(part.stages.iter().map(|stage| {
            stage
                .iter()
                .map(|op| Op {
                    x: at(op.x),
                    y: at(op.y),
                    out: at(op.out),
                    ..*op
                })
                .collect()
        }));
        part.outputs.iter().map(|&o| at(o)).collect()
    }

    /// `k` input registers of `elem`-byte lanes into `k` outputs, lane `j` of output `r` being
    /// lane `source(r, j) = (register, lane)` of the inputs: the cheapest [`Gather`]
    /// construction.
    fn gather(k: usize, elem: usize, source: impl Fn(usize, usize) -> (usize, usize)) -> Network {
        Gather::new(k, elem, source).cheapest()
    }

    /// What a network costs, about: a shuffle of two registers with any byte mask counts three
    /// (`pshufb` twice and `por` without AVX-512 VBMI), and so does a de-interleave of 1- or
    /// 2-byte units (a mask or shift of each operand and a pack); a blend, a permute of one
    /// register or any other single-instruction shuffle one.
    fn cost(&self) -> usize {
        self.stages
            .iter()
            .flatten()
            .map(|op| match op.shuffle {
                Shuffle::Bytes { mask } if op.x != op.y && !is_blend(&mask) => 3,
                // A mask or shift of each operand, then a pack.
                Shuffle::Deinterleave { unit: 1 | 2, .. } => 3,
                _ => 1,
            })
            .sum()
    }

    /// Where every byte ends up: `result[o][i] = (register, byte)` of the input that byte `i`
    /// of the `o`-th output holds (`(usize::MAX, 0)` for a byte no input reached).
    pub(super) fn simulate(&self) -> Vec<Vec<(usize, usize)>> {
        let mut regs: Vec<Vec<(usize, usize)>> = (0..self.registers)
            .map(|r| {
                (0..VECTOR_BYTES)
                    .map(|b| {
                        if r < self.inputs {
                            (r, b)
                        } else {
                            (usize::MAX, 0)
                        }
                    })
                    .collect()
            })
            .collect();
        for stage in &self.stages {
            let mut next = regs.clone();
            for op in stage {
                let mask = op.shuffle.mask();
                next[op.out] = mask
                    .iter()
                    .map(|&m| {
                        let m = m as usize;
                        if m < VECTOR_BYTES {
                            regs[op.x][m]
                        } else {
                            regs[op.y][m - VECTOR_BYTES]
                        }
                    })
                    .collect();
            }
            regs = next;
        }
        self.outputs.iter().map(|&o| regs[o].clone()).collect()
    }
}

/// A stage of `n` registers that interleaves register `p` with register `n/2 + p` into
/// registers `2p` and `2p + 1` (the inverse of a de-interleaving [`pairs_split`]).
fn zip_stage(n: usize, elem: usize) -> Vec<Op> {
    let half = n / 2;
    (0..half)
        .flat_map(|p| {
            [false, true].map(|high| Op {
                x: p,
                y: p + half,
                shuffle: Shuffle::Interleave { unit: elem, high },
                out: 2 * p + usize::from(high),
            })
        })
        .collect()
}

/// A stage that pairs registers `2p` and `2p + 1` and sends the first shuffle of each pair to
/// register `p` and the second to `n/2 + p`.
fn pairs_split(n: usize, shuffle: impl Fn(bool) -> Shuffle) -> Vec<Op> {
    let half = n / 2;
    (0..half)
        .flat_map(|p| {
            [false, true].map(|second| Op {
                x: 2 * p,
                y: 2 * p + 1,
                shuffle: shuffle(second),
                out: if second { half + p } else { p },
            })
        })
        .collect()
}

/// Output registers of `lanes` elements each, joined into runs of at most `most` registers that
/// continue one another in the destination (and in a per-index map's index): each run's
/// registers, its first destination element and its first lane's index.
fn joined_runs(
    outputs: Vec<(Value, i64, Option<LaneIndex>)>,
    lanes: usize,
    most: usize,
) -> Vec<(Vec<Value>, i64, Option<LaneIndex>)> {
    let mut runs: Vec<(Vec<Value>, i64, Option<LaneIndex>)> = Vec::new();
    for (reg, at, index) in outputs {
        if let Some((regs, first, first_index)) = runs.last_mut() {
            let done = regs.len() * lanes;
            let index_continues = match (*first_index, index) {
                (None, None) => true,
                (Some(a), Some(b)) => a.step == b.step && b.first == a.first + done as i64 * a.step,
                _ => false,
            };
            if regs.len() < most && at == *first + done as i64 && index_continues {
                regs.push(reg);
                continue;
            }
        }
        runs.push((vec![reg], at, index));
    }
    runs
}

/// A tile for [`Emitter::shuffle_tile`]: which registers to load and where each input element
/// belongs in the destination.
pub(super) struct Tile<'n> {
    /// The network that rearranges the loaded registers.
    pub network: &'n Network,
    /// Source byte offset of input register `r`.
    pub load_at: Vec<i64>,
    /// Destination element offset of element `e` of input register `r`.
    pub dst_of: &'n dyn Fn(usize, usize) -> i64,
    /// For tiles whose output lanes follow a per-index map's index: the index of an output
    /// register whose first lane is element `e` of input register `r`.
    pub index_of: Option<&'n dyn Fn(usize, usize) -> LaneIndex>,
}

impl Emitter<'_> {
    /// Loads the tile's registers from `s`, runs the network, and stores each output register
    /// where its first element belongs (the network guarantees its lanes are consecutive there).
    /// A conversion that narrows the elements converts output registers that continue one
    /// another in the destination together, so that they fill whole destination vectors.
    pub(super) fn shuffle_tile(&mut self, tile: &Tile, s: Value, d: Value) {
        let lanes = VECTOR_BYTES / self.src_size as usize;
        let per_store = match self.route {
            Some(_) if self.dst_size < self.src_size => (self.src_size / self.dst_size) as usize,
            _ => 1,
        };
        self.sharing_table_loads(|e| {
            let outputs = e.shuffled(tile, s);
            for (regs, at, index) in joined_runs(outputs, lanes, per_store) {
                e.store_vectors(&regs, regs.len() * lanes, d, at * e.dst_size, index);
            }
        });
    }

    /// Loads the tile's registers from `s` and runs the network: each output register, with
    /// the destination element (from the tile's `d`) of its first lane and its lanes' index.
    pub(super) fn shuffled(
        &mut self,
        tile: &Tile,
        s: Value,
    ) -> Vec<(Value, i64, Option<LaneIndex>)> {
        let elem = self.src_size as usize;
        let loaded: Vec<Value> = tile
            .load_at
            .iter()
            .map(|&at| {
                let (base, offset) = self.address(s, at);
                self.b.ins().load(types::I8X16, self.flags, base, offset)
            })
            .collect();
        self.run_network(tile.network, loaded)
            .into_iter()
            .map(|(reg, (r, b))| {
                let index = tile.index_of.map(|index_of| index_of(r, b / elem));
                (reg, (tile.dst_of)(r, b / elem), index)
            })
            .collect()
    }

    /// Runs `network` on the registers `inputs`: each output register, with the input register
    /// and byte its first byte comes from.
    pub(super) fn run_network(
        &mut self,
        network: &Network,
        inputs: Vec<Value>,
    ) -> Vec<(Value, (usize, usize))> {
        let mut regs = inputs;
        // Registers past the inputs are written before they are read.
        regs.resize(network.registers, regs[0]);
        for stage in &network.stages {
            let mut next = regs.clone();
            for op in stage {
                next[op.out] = self.emit_shuffle(op.shuffle, regs[op.x], regs[op.y]);
            }
            regs = next;
        }
        let outputs = network.outputs.iter().map(|&o| regs[o]);
        outputs
            .zip(network.simulate())
            .map(|(reg, bytes)| (reg, bytes[0]))
            .collect()
    }

    /// Stores `regs`, vectors of `n` consecutive source elements in all, at byte `at` from `d`:
    /// as they are, or converted (a per-index map's scales and shifts at `index`, which tiles
    /// under a per-index map give).
    pub(super) fn store_vectors(
        &mut self,
        regs: &[Value],
        n: usize,
        d: Value,
        at: i64,
        index: Option<LaneIndex>,
    ) {
        match self.route {
            Some(route) => {
                let index = match (self.table, index) {
                    (Some(_), None) => unreachable!("the planner gives per-index maps no zips"),
                    (_, index) => index.unwrap_or(LaneIndex::HERE),
                };
                self.store_converted(route, regs, n, d, at, index)
            }
            None => {
                for (k, &reg) in regs.iter().enumerate() {
                    let (base, offset) = self.address(d, at + (k * VECTOR_BYTES) as i64);
                    self.b.ins().store(self.flags, reg, base, offset);
                }
            }
        }
    }

    /// `base + bytes` as a base and the immediate offset of a load or store (which holds 32 bits;
    /// larger offsets are added to the base).
    pub(super) fn address(&mut self, base: Value, bytes: i64) -> (Value, i32) {
        match i32::try_from(bytes) {
            Ok(offset) => (base, offset),
            Err(_) => (self.b.ins().iadd_imm_s(base, bytes), 0),
        }
    }

    /// One shuffle, as the cheapest instructions Cranelift has for it on x86-64: a mask
    /// `shuffle` where that is one instruction, and for 1- and 2-byte de-interleaves a mask or
    /// shift of each operand followed by an unsigned saturating pack (`packuswb`/`packusdw`),
    /// which Cranelift would otherwise lower to two `pshufb` and an `or`.
    fn emit_shuffle(&mut self, shuffle: Shuffle, x: Value, y: Value) -> Value {
        if let Shuffle::Deinterleave {
            unit: unit @ (1 | 2),
            odd,
        } = shuffle
        {
            let wide: Type = if unit == 1 {
                types::I16X8
            } else {
                types::I32X4
            };
            let bits = 8 * unit as i64;
            let [x, y] = [x, y].map(|v| {
                let v = self.bitcast(wide, v);
                if odd {
                    self.b.ins().ushr_imm_s(v, bits)
                } else {
                    let low = self.b.ins().iconst(wide.lane_type(), (1i64 << bits) - 1);
                    let low = self.b.ins().splat(wide, low);
                    self.b.ins().band(v, low)
                }
            });
            let packed = self.b.ins().unarrow(x, y);
            return self.bitcast(types::I8X16, packed);
        }
        let mask = self.shuffle_mask(&shuffle.mask());
        self.b.ins().shuffle(x, y, mask)
    }

    /// Reinterprets a vector's bits as another vector type of the same width.
    pub(super) fn bitcast(&mut self, ty: Type, v: Value) -> Value {
        if self.b.func.dfg.value_type(v) == ty {
            return v;
        }
        let flags = MemFlagsData::new().with_endianness(Endianness::Little);
        self.b.ins().bitcast(ty, flags, v)
    }

    pub(super) fn shuffle_mask(&mut self, bytes: &[u8; VECTOR_BYTES]) -> Immediate {
        self.b.func.dfg.immediates.push(bytes.to_vec().into())
    }
}

#[cfg(test)]
mod tests {
    use super::gather::{blend_mask, permute_mask};
    use super::*;

    /// Checks that output register `r` holds, lane after lane, consecutive destination elements,
    /// that together the outputs hold every input element once, and, `in_order`, that output
    /// `r` is the destination's `r`-th vector.
    fn check(network: &Network, elem: usize, in_order: bool, dst_of: impl Fn(usize, usize) -> i64) {
        let out = network.simulate();
        let mut seen = std::collections::HashSet::new();
        for (r, bytes) in out.iter().enumerate() {
            assert!(
                bytes.iter().all(|&(reg, _)| reg < network.inputs),
                "output {r} holds bytes no input reached: {network:?}"
            );
            let (r0, b0) = bytes[0];
            let first = dst_of(r0, b0 / elem) * elem as i64 + (b0 % elem) as i64;
            if in_order {
                assert_eq!(first, (r * VECTOR_BYTES) as i64, "output {r}: {network:?}");
            }
            for (i, &(reg, byte)) in bytes.iter().enumerate() {
                let at = dst_of(reg, byte / elem) * elem as i64 + (byte % elem) as i64;
                assert_eq!(at, first + i as i64, "register {r} byte {i}: {network:?}");
                assert!(seen.insert((reg, byte)));
            }
        }
        assert_eq!(seen.len(), network.inputs * VECTOR_BYTES);
    }

    #[test]
    fn transposes_put_rows_into_columns() {
        for elem in [1, 2, 4, 8] {
            let lanes = VECTOR_BYTES / elem;
            // Input register i is row i of a lanes × lanes tile; the destination is column-major.
            let dst_of = |i: usize, e: usize| (e * lanes + i) as i64;
            check(&Network::transpose(lanes, elem), elem, false, dst_of);
        }
    }

    #[test]
    fn zips_and_unzips_are_exact_inverses() {
        for elem in [1, 2, 4, 8] {
            let lanes = VECTOR_BYTES / elem;
            // Powers of two through the single-instruction networks, every other strip count
            // (3, 5, 6, 7 … RGB pixels, three channels) through gathers, and past the lanes
            // (six f32 channels) as far as the planner could ask.
            for k in 2..2 * lanes {
                // Zip: register i is strip i; the destination interleaves the k strips.
                check(&Network::zip(k, elem), elem, true, |i, e| {
                    (e * k + i) as i64
                });
                // Unzip: registers hold the interleaved run; strip s goes to row s.
                let unzip = |i: usize, e: usize| {
                    let q = i * lanes + e;
                    ((q % k) * lanes + q / k) as i64
                };
                check(&Network::unzip(k, elem), elem, true, unzip);
            }
        }
    }

    #[test]
    fn masks_are_the_x86_single_instruction_shuffles() {
        // punpckldq: a0 b0 a1 b1 in 32-bit units.
        let punpckldq = Shuffle::Interleave {
            unit: 4,
            high: false,
        };
        assert_eq!(
            punpckldq.mask(),
            [0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23]
        );
        // shufps 0xDD: the odd 32-bit lanes of a, then of b.
        let odd = Shuffle::Deinterleave { unit: 4, odd: true };
        assert_eq!(
            odd.mask(),
            [4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31]
        );
        // punpckhqdq is also the odd 64-bit de-interleave.
        let high = Shuffle::Interleave {
            unit: 8,
            high: true,
        };
        let odd64 = Shuffle::Deinterleave { unit: 8, odd: true };
        assert_eq!(high.mask(), odd64.mask());
    }

    #[test]
    fn gathers_fold_each_output_from_its_sources() {
        // Strips of 3 bytes: no single-instruction byte blend, so each output register is
        // folded from the three strips its 16 lanes come from, two shuffles each.
        let bytes = Network::unzip(3, 1);
        assert_eq!(bytes.stages.len(), 2);
        assert_eq!(bytes.stages.iter().map(Vec::len).sum::<usize>(), 6);
        assert_eq!(bytes.cost(), 18);
        // Every gather op writes a register of its own, never an input.
        for network in [
            bytes,
            Network::unzip(7, 2),
            Network::zip(5, 1),
            Network::zip(3, 4),
        ] {
            let ops = network.stages.iter().flatten();
            assert!(ops.into_iter().all(|op| op.out >= network.inputs));
        }
    }

    #[test]
    fn gathers_of_wider_lanes_blend_and_permute() {
        // RGB f32 unzipped: each plane blends its three source registers (two blends) and one
        // permute puts its lanes in order; zipped: each strip is permuted once, and each
        // output blends the three (two blends).
        let unzip = Network::unzip(3, 4);
        assert_eq!(unzip.stages.len(), 3);
        assert_eq!(unzip.cost(), 3 * 2 + 3);
        let zip = Network::zip(3, 4);
        assert_eq!(zip.stages.len(), 3);
        assert_eq!(zip.cost(), 3 + 3 * 2);
        // Where the strip count is prime to the lane count, 2-byte elements blend too.
        for k in [3, 5, 7] {
            for network in [Network::zip(k, 2), Network::unzip(k, 2)] {
                let ops = network.stages.iter().flatten().count();
                assert_eq!(network.cost(), ops, "k {k}: only blends and permutes");
            }
        }
        // Six strips of eight 2-byte lanes neither blend nor permute as one gather, and fold;
        // a de-interleave stage leaves two groups of three strips, which do.
        let whole = Network::gather(6, 2, |r, j| ((j * 6 + r) / 8, (j * 6 + r) % 8));
        assert!(whole.cost() > whole.stages.iter().flatten().count());
        let six = Network::unzip(6, 2);
        assert_eq!(six.cost(), 6 * 3 + 2 * (3 * 2 + 3));
        assert!(six.cost() < whole.cost());
        // Six and twelve f32 channels (more strips than lanes): one or two de-interleave
        // stages, then gathers of three.
        assert_eq!(Network::unzip(6, 4).cost(), 6 + 2 * 9);
        assert_eq!(Network::unzip(12, 4).cost(), 2 * 12 + 4 * 9);
        assert_eq!(Network::zip(6, 4).cost(), 2 * 9 + 6);
        // Blend masks take each byte from its own position, a pair at a time (`pblendw`).
        let mask = blend_mask(2, |p| p % 3 == 0);
        assert!(is_blend(&mask));
        assert!(mask.chunks(2).all(|pair| pair[1] == pair[0] + 1));
        assert!(!is_blend(&permute_mask(4, |j| 3 - j)));
    }
}
