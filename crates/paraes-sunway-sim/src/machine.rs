//! The simulated CPE instruction set: a 256-bit register of 8 x u32 lanes and 64-bit scalar
//! registers, whose every operation both computes its result and is reported to a [`Sink`],
//! tagged with its pipeline (P0 or P1) and the instructions it depends on.
//!
//! The real run uses [`NullSink`] (the reporting compiles away); the timing model records one
//! batch with [`Trace`] and schedules it, since the instruction stream of a batch does not depend
//! on the data (see `kernel::tests` for the proof on random data).

use crate::ldm::Ldm;
use crate::params::Params;

/// Index of the instruction (in a [`Trace`]) that produced a value; [`NO_TAG`] for values
/// available before the traced code starts (constants, loop-carried values).
pub type Tag = u32;
/// The tag of a value that no traced instruction produced.
pub const NO_TAG: Tag = u32::MAX;

/// Which issue pipeline an instruction needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pipe {
    /// Vector and floating-point pipeline.
    P0,
    /// Memory (LDM load/store, selldw) and control pipeline.
    P1,
    /// Scalar integer: either pipeline (paper, Sec. II-B).
    Either,
}

/// Every simulated instruction kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    /// `vldd`: 32-byte aligned vector load from LDM.
    VLoad,
    /// `vstd`: 32-byte aligned vector store to LDM.
    VStore,
    /// Lane-wise logic: and, or, xor.
    VLogic,
    /// Lane-wise 32-bit shifts (`vsllw`, `vsrlw`).
    VShift,
    /// `vshff`: four lanes from each of two registers.
    VShuffle,
    /// `selldw`: one lane looked up in an LDM word table.
    Selldw,
    /// Vector register move (the copy of a `selldw` temporary into its `Vd`, Sec. III-B2).
    VMove,
    /// Moves one lane of a vector to a scalar register.
    VExtract,
    /// Moves a scalar into one lane of a vector.
    VInsert,
    /// Scalar load from LDM (byte, word or long).
    SLoad,
    /// Scalar store to LDM.
    SStore,
    /// Scalar integer arithmetic or logic.
    SAlu,
    /// Loop branch.
    Branch,
}

impl Op {
    /// Every instruction kind, in the order counts are reported.
    pub const ALL: [Op; 13] = [
        Op::VLoad,
        Op::VStore,
        Op::VLogic,
        Op::VShift,
        Op::VShuffle,
        Op::Selldw,
        Op::VMove,
        Op::VExtract,
        Op::VInsert,
        Op::SLoad,
        Op::SStore,
        Op::SAlu,
        Op::Branch,
    ];

    /// The pipeline the instruction issues to.
    pub fn pipe(self) -> Pipe {
        match self {
            Op::VLogic | Op::VShift | Op::VShuffle | Op::VMove | Op::VExtract | Op::VInsert => {
                Pipe::P0
            }
            Op::VLoad | Op::VStore | Op::Selldw | Op::SLoad | Op::SStore | Op::Branch => Pipe::P1,
            Op::SAlu => Pipe::Either,
        }
    }
}

/// The AES steps the kernels mark in their instruction streams (Fig. 5 pairs them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Step {
    /// Loading a batch into registers (and the Fig. 3 layout transform).
    Load,
    /// AddRoundKey.
    AddRoundKey,
    /// SubBytes: the P1-bound step (Sec. III-B3).
    SubBytes,
    /// ShiftRows.
    ShiftRows,
    /// MixColumns (with the InvMixColumns preparation when decrypting).
    MixColumns,
    /// Storing a batch back (and the inverse layout transform).
    Store,
    /// CTR: the keystream xored into the data.
    CtrXor,
}

/// The LDM bytes one load or store instruction touches: what a compiler reordering C code must
/// keep in order ([`crate::schedule::compile_blocks`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// Whether the instruction writes them.
    pub store: bool,
    /// The first LDM byte address.
    pub byte: usize,
    /// How many bytes.
    pub len: usize,
}

impl Access {
    /// Whether the two touch a common byte.
    pub fn overlaps(&self, other: &Access) -> bool {
        self.byte < other.byte + other.len && other.byte < self.byte + self.len
    }
}

/// Receives every executed instruction.
pub trait Sink {
    /// Whether the sink keeps what it receives. Code that only shapes the recorded stream
    /// (a C loop's counter, compare and branch) is skipped when it does not.
    const RECORDS: bool = true;
    /// Records `op` depending on the values tagged `deps`; returns the tag of its result.
    fn issue(&mut self, op: Op, deps: [Tag; 2]) -> Tag;
    /// Marks the start of an AES step (for interleaving); ignored by default.
    fn step(&mut self, _step: Step) {}
    /// Records the LDM bytes the instruction tagged `tag` loads or stores; ignored by default.
    #[inline(always)]
    fn access(&mut self, _tag: Tag, _access: Access) {}
}

/// A sink that records nothing: the fast path of the real run.
#[derive(Clone, Copy, Debug, Default)]
pub struct NullSink;

impl Sink for NullSink {
    const RECORDS: bool = false;

    #[inline(always)]
    fn issue(&mut self, _op: Op, _deps: [Tag; 2]) -> Tag {
        NO_TAG
    }
}

/// One recorded instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Instr {
    /// What it is.
    pub op: Op,
    /// Indices (in the same trace) of the instructions whose results it reads.
    pub deps: [Tag; 2],
}

/// A recorded instruction stream, with the positions where AES steps start.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    /// The instructions in program order.
    pub instrs: Vec<Instr>,
    /// Where each marked step begins (index into `instrs`) and which step it is.
    pub steps: Vec<(usize, Step)>,
    /// The LDM bytes each load and store touches, by instruction index, in program order, as the
    /// machine records them (streams woven from two batches do not carry them).
    pub accesses: Vec<(Tag, Access)>,
}

impl Trace {
    /// How many instructions of each kind, in the order of [`Op::ALL`].
    pub fn counts(&self) -> [u64; Op::ALL.len()] {
        let mut counts = [0u64; Op::ALL.len()];
        for instr in &self.instrs {
            counts[Op::ALL.iter().position(|&op| op == instr.op).unwrap_or(0)] += 1;
        }
        counts
    }

    /// Instructions per pipeline: (P0 only, P1 only, either).
    pub fn pipe_counts(&self) -> (u64, u64, u64) {
        let mut counts = (0, 0, 0);
        for instr in &self.instrs {
            match instr.op.pipe() {
                Pipe::P0 => counts.0 += 1,
                Pipe::P1 => counts.1 += 1,
                Pipe::Either => counts.2 += 1,
            }
        }
        counts
    }
}

impl Sink for Trace {
    fn issue(&mut self, op: Op, deps: [Tag; 2]) -> Tag {
        self.instrs.push(Instr { op, deps });
        (self.instrs.len() - 1) as Tag
    }

    fn step(&mut self, step: Step) {
        self.steps.push((self.instrs.len(), step));
    }

    fn access(&mut self, tag: Tag, access: Access) {
        self.accesses.push((tag, access));
    }
}

/// A simulated 256-bit vector register: 8 lanes of 32 bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct V256 {
    /// The lanes, lane 0 first (lane `i` holds LDM bytes `4i..4i + 4`, little-endian).
    pub lanes: [u32; 8],
    /// The instruction that produced it.
    pub tag: Tag,
}

impl V256 {
    /// A register preloaded before the kernel starts (constants, masks): not counted.
    pub fn constant(lanes: [u32; 8]) -> Self {
        V256 { lanes, tag: NO_TAG }
    }

    /// A register with `value` in every lane, preloaded (not counted).
    pub fn splat(value: u32) -> Self {
        V256::constant([value; 8])
    }
}

/// A simulated 64-bit scalar register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scalar {
    /// The value.
    pub value: u64,
    /// The instruction that produced it.
    pub tag: Tag,
}

impl Scalar {
    /// An immediate or a value available before the traced code (not counted).
    pub fn imm(value: u64) -> Self {
        Scalar { value, tag: NO_TAG }
    }
}

/// `lanes` with lane `index` replaced by `value`, as a lane-wise select (a store of one lane into
/// a copy would cost the host a store-forwarding stall on every simulated lane insert).
#[inline(always)]
fn with_lane(lanes: [u32; 8], index: usize, value: u32) -> [u32; 8] {
    std::array::from_fn(|i| if i == index { value } else { lanes[i] })
}

/// A CPE executing counted instructions into a sink.
pub struct Machine<S: Sink> {
    /// Where the instructions go.
    pub sink: S,
    /// The temporary registers `selldw` collects its results in (Sec. III-B2); empty for the
    /// other reading, where each `selldw` depends only on its index vector.
    temporaries: Vec<V256>,
    /// Iterations of an innermost C loop that one compiled loop body holds (the original
    /// rung's C; [`Params::original_unroll`]).
    c_unroll: usize,
}

impl<S: Sink> Machine<S> {
    /// A machine reporting to `sink` that runs the code as the default parameters build it
    /// (one `selldw` temporary, as Sec. III-B2 describes).
    pub fn new(sink: S) -> Self {
        Machine::for_params(sink, &Params::DEFAULT)
    }

    /// A machine running the code as `params` build it: `params.selldw_temporaries` `selldw`
    /// temporary registers (0: no temporary, no move), the original's C loops unrolled
    /// `params.original_unroll` times.
    pub fn for_params(sink: S, params: &Params) -> Self {
        Machine {
            sink,
            temporaries: vec![V256::splat(0); params.selldw_temporaries],
            c_unroll: params.original_unroll.max(1), // 0 is refused by `SimConfig::validate`
        }
    }

    /// How many temporary registers `selldw` collects results in (0: the other reading).
    pub fn temporaries(&self) -> usize {
        self.temporaries.len()
    }

    /// Iterations of an innermost C loop that one compiled loop body holds (at least 1).
    pub fn c_unroll(&self) -> usize {
        self.c_unroll
    }

    /// Marks the start of an AES step in the instruction stream.
    #[inline(always)]
    pub fn step(&mut self, step: Step) {
        self.sink.step(step);
    }

    /// Issues the memory instruction `op` and reports the `len` LDM bytes at `byte` it touches.
    #[inline(always)]
    fn memory(&mut self, op: Op, deps: [Tag; 2], byte: usize, len: usize) -> Tag {
        let tag = self.sink.issue(op, deps);
        let store = matches!(op, Op::VStore | Op::SStore);
        self.sink.access(tag, Access { store, byte, len });
        tag
    }

    #[inline(always)]
    fn lanewise(&mut self, op: Op, a: V256, b: V256, f: impl Fn(u32, u32) -> u32) -> V256 {
        let mut lanes = [0u32; 8];
        for (out, (x, y)) in lanes.iter_mut().zip(a.lanes.iter().zip(b.lanes.iter())) {
            *out = f(*x, *y);
        }
        V256 {
            lanes,
            tag: self.sink.issue(op, [a.tag, b.tag]),
        }
    }

    /// `vxorw`: lane-wise xor.
    #[inline(always)]
    pub fn vxor(&mut self, a: V256, b: V256) -> V256 {
        self.lanewise(Op::VLogic, a, b, |x, y| x ^ y)
    }

    /// `vandw`: lane-wise and.
    #[inline(always)]
    pub fn vand(&mut self, a: V256, b: V256) -> V256 {
        self.lanewise(Op::VLogic, a, b, |x, y| x & y)
    }

    /// `vorw`: lane-wise or.
    #[inline(always)]
    pub fn vor(&mut self, a: V256, b: V256) -> V256 {
        self.lanewise(Op::VLogic, a, b, |x, y| x | y)
    }

    /// `vsllw`: lane-wise left shift by an immediate.
    #[inline(always)]
    pub fn vsll(&mut self, a: V256, bits: u32) -> V256 {
        let mut lanes = a.lanes;
        lanes.iter_mut().for_each(|lane| *lane <<= bits);
        V256 {
            lanes,
            tag: self.sink.issue(Op::VShift, [a.tag, NO_TAG]),
        }
    }

    /// `vsrlw`: lane-wise logical right shift by an immediate.
    #[inline(always)]
    pub fn vsrl(&mut self, a: V256, bits: u32) -> V256 {
        let mut lanes = a.lanes;
        lanes.iter_mut().for_each(|lane| *lane >>= bits);
        V256 {
            lanes,
            tag: self.sink.issue(Op::VShift, [a.tag, NO_TAG]),
        }
    }

    /// `vshff`: result lanes 0-3 are `a[mask[0..4]]`, lanes 4-7 are `b[mask[4..8]]` (Fig. 3).
    #[inline(always)]
    pub fn vshuffle(&mut self, a: V256, b: V256, mask: [usize; 8]) -> V256 {
        let mut lanes = [0u32; 8];
        for (i, lane) in lanes.iter_mut().enumerate() {
            *lane = if i < 4 {
                a.lanes[mask[i]]
            } else {
                b.lanes[mask[i]]
            };
        }
        V256 {
            lanes,
            tag: self.sink.issue(Op::VShuffle, [a.tag, b.tag]),
        }
    }

    /// `vldd`: loads 8 words at LDM word address `word` (32-byte aligned).
    #[inline(always)]
    pub fn vload(&mut self, ldm: &Ldm, word: usize) -> V256 {
        V256 {
            lanes: ldm.vector(word),
            tag: self.memory(Op::VLoad, [NO_TAG, NO_TAG], 4 * word, 32),
        }
    }

    /// `vstd`: stores 8 words at LDM word address `word`.
    #[inline(always)]
    pub fn vstore(&mut self, ldm: &mut Ldm, word: usize, value: V256) {
        ldm.set_vector(word, value.lanes);
        self.memory(Op::VStore, [value.tag, NO_TAG], 4 * word, 32);
    }

    /// `selldw va, rb, #c, vd`: lane `c` of the result is the LDM word at `table_word + va[c]`,
    /// the other lanes are `vd`'s. This form depends only on `va` (the reading in which the eight
    /// selldw of a lookup are independent); see [`Self::selldw_temporary`] for the paper's.
    #[inline(always)]
    pub fn selldw(&mut self, ldm: &Ldm, va: V256, table_word: usize, c: usize, vd: V256) -> V256 {
        let at = table_word + va.lanes[c] as usize;
        let value = ldm.word(at);
        V256 {
            lanes: with_lane(vd.lanes, c, value),
            tag: self.memory(Op::Selldw, [va.tag, NO_TAG], 4 * at, 4),
        }
    }

    /// `selldw va, rb, #c, t`: the looked-up word goes into lane `c` of temporary register
    /// `temporary`, whose other lanes it keeps, so it depends on the previous `selldw` into the
    /// same temporary as well as on `va` ("Eight selldw instructions work sequentially ... It
    /// caches the return values in a temporary register", Sec. III-B2).
    #[inline(always)]
    pub fn selldw_temporary(
        &mut self,
        ldm: &Ldm,
        va: V256,
        table_word: usize,
        c: usize,
        temporary: usize,
    ) {
        let at = table_word + va.lanes[c] as usize;
        let value = ldm.word(at);
        let old = self.temporaries[temporary];
        self.temporaries[temporary] = V256 {
            lanes: with_lane(old.lanes, c, value),
            tag: self.memory(Op::Selldw, [va.tag, old.tag], 4 * at, 4),
        };
    }

    /// Moves temporary register `temporary` to a new register ("and move them to Vd registers
    /// afterwards", Sec. III-B2): one P0 vector move.
    #[inline(always)]
    pub fn move_temporary(&mut self, temporary: usize) -> V256 {
        let value = self.temporaries[temporary];
        V256 {
            lanes: value.lanes,
            tag: self.sink.issue(Op::VMove, [value.tag, NO_TAG]),
        }
    }

    /// Moves lane `lane` of `a` to a scalar register.
    #[inline(always)]
    pub fn vextract(&mut self, a: V256, lane: usize) -> Scalar {
        Scalar {
            value: u64::from(a.lanes[lane]),
            tag: self.sink.issue(Op::VExtract, [a.tag, NO_TAG]),
        }
    }

    /// Moves the low 32 bits of `s` into lane `lane` of `a`.
    #[inline(always)]
    pub fn vinsert(&mut self, a: V256, s: Scalar, lane: usize) -> V256 {
        V256 {
            lanes: with_lane(a.lanes, lane, s.value as u32),
            tag: self.sink.issue(Op::VInsert, [a.tag, s.tag]),
        }
    }

    /// Scalar integer operation `f(a, b)` (add, and, or, xor, shifts, compare).
    #[inline(always)]
    pub fn alu(&mut self, a: Scalar, b: Scalar, f: impl Fn(u64, u64) -> u64) -> Scalar {
        Scalar {
            value: f(a.value, b.value),
            tag: self.sink.issue(Op::SAlu, [a.tag, b.tag]),
        }
    }

    /// `ldbu`: loads the byte at LDM byte address `addr` (a register).
    #[inline(always)]
    pub fn load_byte(&mut self, ldm: &Ldm, addr: Scalar) -> Scalar {
        Scalar {
            value: u64::from(ldm.byte(addr.value as usize)),
            tag: self.memory(Op::SLoad, [addr.tag, NO_TAG], addr.value as usize, 1),
        }
    }

    /// `ldw`: loads the 32-bit word at LDM word address `word`.
    #[inline(always)]
    pub fn load_word(&mut self, ldm: &Ldm, word: usize) -> Scalar {
        Scalar {
            value: u64::from(ldm.word(word)),
            tag: self.memory(Op::SLoad, [NO_TAG, NO_TAG], 4 * word, 4),
        }
    }

    /// `stb`: stores the low 8 bits of `s` at LDM byte address `addr` (an immediate offset).
    #[inline(always)]
    pub fn store_byte(&mut self, ldm: &mut Ldm, addr: usize, s: Scalar) {
        ldm.set_byte(addr, s.value as u8);
        self.memory(Op::SStore, [s.tag, NO_TAG], addr, 1);
    }

    /// `ldbu`: loads the byte at LDM byte address `addr` (an immediate offset from a base
    /// register, so no address arithmetic).
    #[inline(always)]
    pub fn load_byte_at(&mut self, ldm: &Ldm, addr: usize) -> Scalar {
        Scalar {
            value: u64::from(ldm.byte(addr)),
            tag: self.memory(Op::SLoad, [NO_TAG, NO_TAG], addr, 1),
        }
    }

    /// `stw`: stores the low 32 bits of `s` at LDM word address `word`.
    #[inline(always)]
    pub fn store_word(&mut self, ldm: &mut Ldm, word: usize, s: Scalar) {
        ldm.set_word(word, s.value as u32);
        self.memory(Op::SStore, [s.tag, NO_TAG], 4 * word, 4);
    }

    /// `stl`: stores the 64 bits of `s` at LDM word address `word` (two words, little-endian).
    #[inline(always)]
    pub fn store_long(&mut self, ldm: &mut Ldm, word: usize, s: Scalar) {
        ldm.set_word(word, s.value as u32);
        ldm.set_word(word + 1, (s.value >> 32) as u32);
        self.memory(Op::SStore, [s.tag, NO_TAG], 4 * word, 8);
    }

    /// A conditional branch that closes a loop body (a basic block).
    #[inline(always)]
    pub fn branch(&mut self, condition: Scalar) {
        self.sink.issue(Op::Branch, [condition.tag, NO_TAG]);
    }
}
