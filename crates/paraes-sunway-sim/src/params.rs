//! The one table of cost parameters of the SW26010 model, each with where its value comes from.
//!
//! Nothing here is tuned to reproduce a figure of the paper: every value is either stated in the
//! SW-AES paper, read from the measured DMA table of `ANCHORS.md`, or an explicit assumption
//! (marked as such, with the reason). `docs/SUNWAY.md` prints the same table.

/// Measured DMA bandwidth of one core group (64 CPEs, blocking copies, swCandle STREAM) by
/// transfer size: `(bytes per transfer, GB/s)`. Source: ANCHORS.md. Read as bytes moved (read
/// plus written) per second, the STREAM convention (assumption, see [`Params::dma_counts_both_ways`]).
pub const DMA_TABLE: [(f64, f64); 9] = [
    (8.0, 0.47),
    (64.0, 1.86),
    (256.0, 5.99),
    (512.0, 8.78),
    (1024.0, 12.5),
    (2048.0, 15.3),
    (4096.0, 18.4),
    (8192.0, 19.1),
    (24576.0, 20.4),
];

/// How the pipelined variant interleaves its two batches (Sec. III-B3, Fig. 5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pipelining {
    /// The paper's Pipelined Step Execution: batch A's SubBytes (P1-bound) woven with batch B's
    /// ShiftRows, MixColumns and AddRoundKey (P0-bound) at a half-round lead, step by step, the
    /// instructions of a pair of steps spread evenly so that "the next two instructions in the
    /// front of the instruction queue" can go to the two pipelines.
    Fig5Steps,
    /// A greedy list scheduler over the two batches (any instruction of either, whichever
    /// issues first): an upper bound on what reordering two batches can gain.
    ListScheduler,
}

/// How the original rung's plain C reaches the CPE. The paper's original is C throughout (Sec. IV:
/// only the SubBytes of the vector rungs is assembly), built with the vendor compiler (Table II:
/// sw5cc 5.421-sw-496), and that compiler reorders instructions within a basic block (its output
/// lists each block in cycle order, source lines interleaved: swCandle, e.g.
/// `RLC/row/test_rlc_dynamic_routing/slave.s`). How large the blocks are is
/// [`Params::original_unroll`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Compilation {
    /// Issued in the order the C states its statements: no reordering (a bracket end).
    SourceOrder,
    /// Each basic block (from a step's start or a loop branch to the next) reordered by a list
    /// scheduler; [`Aliasing`] says which LDM accesses may pass each other. The branch that
    /// closes a block stays last. The default is `Scheduled(Aliasing::ByArray)`.
    Scheduled(Aliasing),
}

/// Which LDM accesses a compiler reordering C code may move past each other. A store must keep
/// its order with every load or store the compiler cannot tell apart from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Aliasing {
    /// The compiler tells no two accesses apart: no load or store passes a store, and no store
    /// passes a load. The pessimistic end.
    Undistinguished,
    /// Constant offsets into one array are told apart; accesses to different arrays (the state's
    /// data buffer, the S-box, the round keys, the counters) are not: what a compiler knows when
    /// the C works in place on its state and tables through pointers (as tiny-AES-c's
    /// `Cipher(state_t *state, const uint8_t *RoundKey)` does). `char` accesses may alias
    /// anything, so C's type rules tell nothing apart here. The default (an assumption).
    ByArray,
    /// Only accesses to overlapping bytes keep their order: every array a distinct object the
    /// compiler can see (FIPS-197's `Cipher` copies the state into a local array).
    Exact,
}

/// The result latency of P0 vector operations, cycles: the default (the first) and the other
/// values every headline figure is also reported at (docs/SUNWAY.md). No source gives the
/// latency of an integer vector operation; the one P0 latency our sources show is the vendor
/// compiler's for vector floating point (`vmad` to a dependent `vmad`: 4 cycles, see
/// [`PARAMETER_TABLE`]), and the paper puts integer vector operations in the same P0 pipeline
/// (Sec. II-B). The default takes that value; 1-3 bracket it.
pub const P0_LATENCY_BRACKET: [u32; 4] = [4, 1, 2, 3];

/// Every cost parameter of the model.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    /// CPE and MPE clock, Hz.
    pub clock_hz: f64,
    /// Core groups on one SW26010.
    pub cgs_per_chip: usize,
    /// CPEs per core group (8 x 8 mesh).
    pub cpes_per_cg: usize,
    /// Local data memory per CPE, bytes.
    pub ldm_bytes: usize,
    /// LDM kept back for the CPE thread's stack and spilled registers, bytes.
    pub ldm_reserved_bytes: usize,
    /// CPEs that issue DMA together as one group; groups are served one after another.
    pub dma_group_cpes: usize,
    /// Whether the DMA table's GB/s count the bytes read plus the bytes written (STREAM copy
    /// convention): then an encryption that gets and puts N bytes moves 2N bytes through it.
    pub dma_counts_both_ways: bool,
    /// Result latency of P0 (vector and integer vector) instructions, cycles.
    pub p0_latency: u32,
    /// Result latency of vector LDM loads (`vldd`, and `selldw` to the move that reads its
    /// temporary), cycles.
    pub vector_load_latency: u32,
    /// Result latency of scalar LDM loads (`ldbu`, `ldw`, `ldl`), cycles.
    pub scalar_load_latency: u32,
    /// Cycles from one `selldw` into a temporary register to the next `selldw` into the same
    /// temporary: 1 when only the lane merge waits for the previous value (the lookup reads the
    /// index vector, not the temporary); `vector_load_latency` when the whole lookup waits.
    pub selldw_link_latency: u32,
    /// Temporary registers `selldw` collects its results in before the move to `Vd`
    /// (Sec. III-B2: "It caches the return values in a temporary register and move them to Vd
    /// registers afterwards": one). 0 is the other reading: each `selldw` depends only on its
    /// index vector and writes its `Vd` directly, with no move.
    pub selldw_temporaries: usize,
    /// How the pipelined variant interleaves two batches.
    pub pipelining: Pipelining,
    /// How the original rung's C is compiled.
    pub original_compilation: Compilation,
    /// Iterations of each innermost C loop of the original rung that one compiled loop body
    /// holds: the compiler unrolls the loop this many times, and each unrolled body ends with
    /// the counter update, compare and branch that close its basic block. A loop with no more
    /// trips than this is unrolled completely (no loop left); outer loops (blocks of a batch,
    /// rounds) are kept, one body per iteration.
    pub original_unroll: usize,
    /// Result latency of scalar integer instructions (either pipeline), cycles.
    pub scalar_latency: u32,
    /// athread spawn + join of the 64 CPE threads of a core group, seconds, per offload.
    pub athread_startup_s: f64,
    /// LDM buffer for plaintext, bytes per buffer (two of them with double buffering).
    pub ldm_buffer_bytes: usize,
}

impl Params {
    /// The values the model uses (see [`PARAMETER_TABLE`] for the sources).
    pub const DEFAULT: Params = Params {
        clock_hz: 1.45e9,
        cgs_per_chip: 4,
        cpes_per_cg: 64,
        ldm_bytes: 64 * 1024,
        ldm_reserved_bytes: 8 * 1024,
        dma_group_cpes: 4,
        dma_counts_both_ways: true,
        p0_latency: P0_LATENCY_BRACKET[0],
        vector_load_latency: 4,
        scalar_load_latency: 3,
        selldw_link_latency: 1,
        selldw_temporaries: 1,
        pipelining: Pipelining::Fig5Steps,
        original_compilation: Compilation::Scheduled(Aliasing::ByArray),
        original_unroll: 4,
        scalar_latency: 1,
        athread_startup_s: 10e-6,
        ldm_buffer_bytes: 16 * 1024,
    };

    /// DMA bandwidth of one core group for transfers of `bytes` bytes, bytes/second: the
    /// measured table, interpolated linearly in log(size), flat beyond its ends.
    pub fn dma_bandwidth(&self, bytes: f64) -> f64 {
        let table = &DMA_TABLE;
        let gbps = if bytes <= table[0].0 {
            table[0].1 * bytes / table[0].0
        } else if bytes >= table[table.len() - 1].0 {
            table[table.len() - 1].1
        } else {
            let upper = table
                .iter()
                .position(|&(size, _)| size >= bytes)
                .unwrap_or(1);
            let (s0, g0) = table[upper - 1];
            let (s1, g1) = table[upper];
            let t = (bytes.ln() - s0.ln()) / (s1.ln() - s0.ln());
            g0 + t * (g1 - g0)
        };
        gbps * 1e9
    }
}

impl Default for Params {
    fn default() -> Self {
        Params::DEFAULT
    }
}

/// One row of the parameter table: name, value as text, source.
pub struct ParameterRow {
    /// Parameter name (the field of [`Params`]).
    pub name: &'static str,
    /// Value with unit.
    pub value: &'static str,
    /// Where it comes from: the paper, ANCHORS.md, or an explicit assumption and why.
    pub source: &'static str,
}

/// The documented parameter table (printed in docs/SUNWAY.md by the `reproduce` example).
pub const PARAMETER_TABLE: &[ParameterRow] = &[
    ParameterRow { name: "clock_hz", value: "1.45 GHz", source: "paper, Sec. II-B" },
    ParameterRow { name: "cgs_per_chip", value: "4", source: "paper, Sec. II-B" },
    ParameterRow { name: "cpes_per_cg", value: "64 (8x8 mesh)", source: "paper, Sec. II-B" },
    ParameterRow { name: "ldm_bytes", value: "64 KiB", source: "paper, Sec. II-B" },
    ParameterRow { name: "vector registers", value: "32 x 256 bit (8 x u32 lanes), no byte SIMD", source: "paper, Sec. II-B and III-B (register pressure not modelled)" },
    ParameterRow { name: "ExtS-Box / ExtRoundKey", value: "1 KiB / 2 KiB in LDM", source: "paper, Table I" },
    ParameterRow { name: "ldm_reserved_bytes", value: "8 KiB", source: "assumption: stack, spills and the CTR counter scratch of a CPE thread" },
    ParameterRow { name: "ldm_buffer_bytes", value: "16 KiB per buffer", source: "assumption: the largest power of two that fits twice (double buffering) beside tables and reserve; the paper says only 'as large as possible'" },
    ParameterRow { name: "DMA bandwidth by transfer size", value: "0.47 GB/s @8 B ... 20.4 GB/s @24 KiB, log-interpolated", source: "ANCHORS.md, measured swCandle STREAM copy, 64 CPEs (paper: 4-28 GB/s, >22 GB/s above 256 B)" },
    ParameterRow { name: "dma_counts_both_ways", value: "true", source: "assumption: STREAM 'copy' GB/s count bytes read plus bytes written, so get+put of N bytes costs 2N" },
    ParameterRow { name: "dma_group_cpes", value: "4 CPEs per DMA group, groups served in turn", source: "paper, Sec. IV-A" },
    ParameterRow { name: "issue model", value: "in order, at most one P0 + one P1 per cycle; the vector rungs in the order the kernel code emits, the original as the compiler orders it (original_compilation)", source: "paper, Sec. III-B3 (\"the next two instructions in the front of the instruction queue\") and III-B (\"SW26010 requires programmer to explicitly control the instruction execution sequence\"). That the vector rungs are not reordered is taken from Fig. 8 itself, not from a source: the paper measures 1.5x from hand-pipelining them, which a compiler that filled their stalls would have left no room for, although the vendor compiler does move vector intrinsics (swCandle soft_div/slave.s) (docs/SUNWAY.md)" },
    ParameterRow { name: "pipe of each instruction", value: "vector ops P0; loads/stores/selldw/branches P1; scalar integer either", source: "paper, Sec. II-B and III-B3" },
    ParameterRow { name: "vector_load_latency", value: "4 cycles", source: "the vendor compiler's scheduling model: sw5cc 5.421-sw-485 (the paper used 5.421-sw-496) places a vldd at cycle 3 and the vector op that uses it at cycle 7, in the assembly swCandle publishes (github.com/jameslinsjtu/swCandle, memory/stream_sw/gldst/slave.s, built at -O0: the compiler's latency model, not an optimised schedule; simd_vaddw/vxorw/vandw/vextw); selldw, a vector-lane LDM load, is given the same" },
    ParameterRow { name: "scalar_load_latency", value: "3 cycles", source: "the same compiler output: an ldw at cycle 1 and its dependent s4addl at cycle 4 (swCandle memory/pointer-chasing/LDM/slave.s), an ldl at 3 and the vsraw using it at 6 (gldst/slave.s)" },
    ParameterRow { name: "p0_latency", value: "4 cycles, bracket 1-4", source: "no source gives the integer vector latency. The same compiler output schedules a dependent vector FP op 4 cycles after its producer (vmad at 4, the vmad using it at 8: swCandle pipeline/software_simulated_div_sqrt/soft_div/slave.s), and the paper puts integer vector ops in the same P0 pipeline (Sec. II-B); the default takes 4, and every headline figure is also reported at 1, 2 and 3" },
    ParameterRow { name: "selldw_temporaries", value: "1 (other reading: 0, no temporary, no move)", source: "paper, Sec. III-B2: \"Eight selldw instructions work sequentially ... It caches the return values in a temporary register and move them to Vd registers afterwards\": each selldw merges one lane into the one temporary, one P0 vector move per 8" },
    ParameterRow { name: "selldw_link_latency", value: "1 cycle (other reading: 4, the whole lookup)", source: "assumption: a selldw reads its index from Va, not from the temporary; only the merge of its lane waits for the previous selldw, so 'sequentially' is one per cycle on P1. The other reading (each selldw waits for the previous one's whole LDM lookup, 4 cycles) caps the chip at 57-64 Gbps, 41-47% under the paper's compute-bound 107.9, at every P0 latency (sensitivity table)" },
    ParameterRow { name: "pipelining", value: "Fig. 5 steps (upper bound: list scheduler)", source: "paper, Sec. III-B3 and Fig. 5: SubBytes (P1-bound) of one batch overlapped with ShiftRows/MixColumns/AddRoundKey (P0-bound) of the other; \"the next two instructions in the front of the instruction queue\" dual-issue" },
    ParameterRow { name: "original rung", value: "byte-array C AES, 16-byte state in LDM, ldbu/stb per byte", source: "paper, Sec. IV-A2 (\"original no-vectorized implementation\") and Sec. IV (\"the other steps are implemented with C\"); Table I's 256 B S-Box and 240 B Round Key" },
    ParameterRow { name: "original_compilation", value: "each basic block list-scheduled, arrays told apart by offset (bracket: source order; no accesses told apart; exact bytes)", source: "the original is C: Sec. IV says only 'the SubBytes Step' is assembly, and the original has no selldw SubBytes (our reading), built with sw5cc 5.421-sw-496 (Table II); that compiler at -O2 reorders within a basic block (its output lists each block in cycle order, source lines interleaved: swCandle RLC/row/test_rlc_dynamic_routing/slave.s). Aliasing: assumption, chosen with every reading's figures in view: the C works in place on the data through pointers, as tiny-AES-c's widely copied Cipher(state_t *state, const uint8_t *RoundKey) does, so the compiler tells constant offsets from one pointer apart but not one array from another. FIPS-197's pseudo-code copies the state into a local array instead, which reads as exact bytes (sensitivity grid: selldw -27%, pipelined -31%)" },
    ParameterRow { name: "original_unroll", value: "4 (bracket: 1, 2, complete)", source: "the vendor compiler unrolls at -O2 and picks the factor per loop: in the CPE code swCandle built at plain -O2 (sw5cc 5.421-sw-485) it notes 'unrolled 4 times' on three loops (soft_div/slave.s source lines 64, its copy loop for an 8-double initialiser, and 70; pointer-chasing/LDM/slave.s line 57) and 'unrolled 2 times' on the fourth (soft_div line 90); in its -O2 MPE output (memory/stream_sw/MPE) 'unrolled 2 times' is the commoner note (13 against 5). The paper gives no flags and swCandle's builds are not the paper's: the default takes 4, the sensitivity grid gives 1 (swCandle's own -OPT:unroll_times=0), 2 and complete" },
    ParameterRow { name: "scalar_latency", value: "1 cycle", source: "the same compiler output: a scalar s4addl at cycle 4 and the ldw using it at 5 (swCandle memory/pointer-chasing/LDM/slave.s)" },
    ParameterRow { name: "athread_startup_s", value: "10 us per offload (spawn + join)", source: "assumption: order of magnitude of an athread spawn/join; the paper gives no number, only that it dominates below 1 MB" },
    ParameterRow { name: "start-up in Fig. 7", value: "spawn/join + each CPE's table fetch (S-box, round keys) before its first batch", source: "paper, Sec. IV-A1: the small-size cost is \"thread start-up time on CPE\"; the table fetch is part of a CPE thread starting, not of streaming the data" },
];
