//! The scheduler's tests: latencies, dual issue, interleaving, the software pipeline and
//! the block compiler.

use super::*;

fn instr(op: Op, deps: [Tag; 2]) -> Instr {
    Instr { op, deps }
}

const NONE: [Tag; 2] = [NO_TAG, NO_TAG];

#[test]
fn p0_p0_p1_takes_two_cycles() {
    let params = Params::DEFAULT;
    let code = [
        instr(Op::VLogic, NONE),
        instr(Op::VLogic, NONE),
        instr(Op::VLoad, NONE),
    ];
    assert_eq!(schedule(&code, &params), 2);
}

#[test]
fn grouped_pipes_take_longer_than_interleaved() {
    let params = Params::DEFAULT;
    let grouped = [
        instr(Op::VLogic, NONE),
        instr(Op::VLogic, NONE),
        instr(Op::VLoad, NONE),
        instr(Op::VLoad, NONE),
    ];
    let interleaved = [grouped[0], grouped[2], grouped[1], grouped[3]];
    assert_eq!(schedule(&grouped, &params), 3);
    assert_eq!(schedule(&interleaved, &params), 2);
}

#[test]
fn dependent_pair_does_not_dual_issue_and_waits_for_latency() {
    let params = Params {
        vector_load_latency: 4,
        p0_latency: 1,
        ..Params::DEFAULT
    };
    // vldd at cycle 0, its user at cycle 4 (latency 4), then 5 cycles in all.
    let code = [instr(Op::VLoad, NONE), instr(Op::VLogic, [0, NO_TAG])];
    assert_eq!(schedule(&code, &params), 5);
    // A P0 op using a P0 result: cannot pair, issues the next cycle.
    let code = [
        instr(Op::VLogic, NONE),
        instr(Op::VLoad, NONE),
        instr(Op::VLogic, [0, NO_TAG]),
    ];
    assert_eq!(schedule(&code, &params), 2);
}

#[test]
fn scalar_ops_pair_with_either_pipe() {
    let params = Params::DEFAULT;
    let code = [
        instr(Op::SAlu, NONE),
        instr(Op::SAlu, NONE),
        instr(Op::VLogic, NONE),
        instr(Op::SAlu, NONE),
        instr(Op::VLoad, NONE),
        instr(Op::VLoad, NONE),
    ];
    // (SAlu, SAlu) (VLogic, SAlu) (VLoad) (VLoad) = 4 cycles.
    assert_eq!(schedule(&code, &params), 4);
}

#[test]
fn interleaving_two_streams_overlaps_p0_and_p1() {
    let params = Params::DEFAULT;
    // Steps like a round: load (P0), AddRoundKey (P0), SubBytes (P1 x 4), ShiftRows and
    // MixColumns (P0 x 4), SubBytes, MixColumns.
    let mut stream = Trace::default();
    for (pipe_op, count) in [
        (Op::VLogic, 2),
        (Op::VLogic, 2),
        (Op::VLoad, 4),
        (Op::VLogic, 4),
        (Op::VLoad, 4),
        (Op::VLogic, 4),
    ] {
        let step = if pipe_op == Op::VLoad {
            Step::SubBytes
        } else {
            Step::MixColumns
        };
        stream.steps.push((stream.instrs.len(), step));
        for _ in 0..count {
            stream.instrs.push(instr(pipe_op, NONE));
        }
    }
    // 4 P0 | P1 P1 P1 | P1+P0 | P0 P0 | P0+P1 | P1 P1 | P1+P0 | P0 P0 P0 = 16 cycles.
    let alone = trace_cycles(&stream, &params);
    assert_eq!(alone, 16);
    let both = interleave(&stream, &stream, &params);
    assert_eq!(both.instrs.len(), 40);
    let together = trace_cycles(&both, &params);
    // 24 P0 instructions in all bound it below; kept apart they take 2 x 16.
    assert!(
        (24..=28).contains(&together),
        "{together} cycles for two interleaved streams"
    );
    // Fig. 5 pairs each P1 step of one stream with a P0 step of the other: between the
    // list scheduler's bound and running the two apart.
    let steps = pipeline_steps(&stream, &stream, 1);
    assert_eq!(steps.instrs.len(), 40);
    let paired = trace_cycles(&steps, &params);
    assert!(
        together <= paired && paired < 2 * alone,
        "Fig. 5 {paired}, list {together}, apart {}",
        2 * alone
    );
    let units: Vec<bool> = half_rounds(&stream).iter().map(|u| u.0).collect();
    assert_eq!(units, [false, true, false, true, false]);
}

#[test]
fn the_move_waits_for_the_lookup_but_the_next_selldw_only_for_the_merge() {
    let params = Params {
        vector_load_latency: 4,
        selldw_link_latency: 1,
        p0_latency: 1,
        ..Params::DEFAULT
    };
    // selldw, selldw (chained through the temporary), move of the temporary.
    let code = [
        instr(Op::Selldw, [NO_TAG, NO_TAG]),
        instr(Op::Selldw, [NO_TAG, 0]),
        instr(Op::VMove, [1, NO_TAG]),
    ];
    // Issue at 0 and 1; the move at 1 + 4 = 5; 6 cycles in all.
    assert_eq!(schedule(&code, &params), 6);
    // A selldw whose index vector (operand 0) comes from another selldw's temporary waits
    // for the whole lookup.
    let code = [
        instr(Op::Selldw, [NO_TAG, NO_TAG]),
        instr(Op::Selldw, [0, NO_TAG]),
    ];
    assert_eq!(schedule(&code, &params), 5);
}

#[test]
fn a_shared_temporary_chains_the_two_batches_selldw() {
    // Two streams of one 8-selldw chain each: woven, the second chain waits for the first.
    let params = Params::DEFAULT;
    let mut stream = Trace::default();
    stream.steps.push((0, Step::SubBytes));
    for i in 0..8 {
        let previous = if i == 0 { NO_TAG } else { i - 1 };
        stream.instrs.push(instr(Op::Selldw, [NO_TAG, previous]));
    }
    let woven = pipeline_steps(&stream, &stream, 1);
    let selldw: Vec<_> = woven.instrs.iter().map(|i| i.deps[1]).collect();
    assert_eq!(
        selldw[8], 7,
        "the second batch's first selldw follows the first's last"
    );
    let link = u64::from(params.selldw_link_latency);
    assert_eq!(trace_cycles(&woven, &params), 15 * link + 1);
    assert_eq!(
        trace_cycles(&pipeline_steps(&stream, &stream, 2), &params),
        15 * link + 1
    );
    // The other reading: each link is a whole lookup.
    let whole = Params {
        selldw_link_latency: params.vector_load_latency,
        ..params
    };
    assert_eq!(
        trace_cycles(&woven, &whole),
        15 * u64::from(whole.vector_load_latency) + 1
    );
}

/// One test instruction: what it is, what it reads, and (store?, byte) if it touches LDM.
type Line = (Op, [Tag; 2], Option<(bool, usize)>);

/// The LDM plan of the original rung (8 KiB reserved first, then the S-box).
fn plan() -> LdmPlan {
    use crate::config::{Buffering, Variant};
    LdmPlan::new(
        Variant::Original,
        Buffering::Single,
        64 * 1024,
        8 * 1024,
        16 * 1024,
    )
    .expect("fits")
}

/// One step of scalar code.
fn block(code: &[Line]) -> Trace {
    let mut trace = Trace::default();
    trace.steps.push((0, Step::SubBytes));
    for (index, &(op, deps, access)) in code.iter().enumerate() {
        trace.instrs.push(instr(op, deps));
        if let Some((store, byte)) = access {
            let access = Access {
                store,
                byte,
                len: 1,
            };
            trace.accesses.push((index as Tag, access));
        }
    }
    trace
}

/// Where each memory instruction of `original` went (found by the access it makes, unique
/// in these tests); `usize::MAX` for the others.
fn positions(compiled: &Trace, original: &Trace) -> Vec<usize> {
    let mut at = vec![usize::MAX; original.instrs.len()];
    for &(tag, access) in &original.accesses {
        let (new, _) = compiled
            .accesses
            .iter()
            .find(|(_, a)| *a == access)
            .expect("every access is kept");
        at[tag as usize] = *new as usize;
    }
    at
}

fn compile(code: &Trace, aliasing: Aliasing) -> Trace {
    let compiled = compile_blocks(code, aliasing, &plan(), &Params::DEFAULT);
    // Every instruction once, every dependency backwards, accesses on memory instructions.
    assert_eq!(compiled.counts(), code.counts());
    for (i, instr) in compiled.instrs.iter().enumerate() {
        assert!(instr.deps.iter().all(|&d| d == NO_TAG || (d as usize) < i));
    }
    assert_eq!(compiled.accesses.len(), code.accesses.len());
    for &(tag, _) in &compiled.accesses {
        let op = compiled.instrs[tag as usize].op;
        assert!(matches!(op, Op::SLoad | Op::SStore), "{op:?}");
    }
    compiled
}

#[test]
fn a_compiler_fills_load_latency_with_the_next_statement() {
    let params = Params::DEFAULT;
    // s[0] ^= 1; s[1] ^= 1; as written: load, xor (waits 3), store, then the same again.
    let code = block(&[
        (Op::SLoad, NONE, Some((false, 0))),
        (Op::SAlu, [0, NO_TAG], None),
        (Op::SStore, [1, NO_TAG], Some((true, 0))),
        (Op::SLoad, NONE, Some((false, 1))),
        (Op::SAlu, [3, NO_TAG], None),
        (Op::SStore, [4, NO_TAG], Some((true, 1))),
    ]);
    let written = trace_cycles(&code, &params);
    // One array, other bytes: the second load moves up beside the first.
    for aliasing in [Aliasing::ByArray, Aliasing::Exact] {
        let compiled = compile(&code, aliasing);
        assert!(trace_cycles(&compiled, &params) < written);
        assert_eq!(positions(&compiled, &code)[3], 1, "{aliasing:?}");
    }
    // Nothing told apart: no load passes the store before it, so nothing moves.
    let undistinguished = compile(&code, Aliasing::Undistinguished);
    assert_eq!(undistinguished.instrs, code.instrs);
}

#[test]
fn reads_and_writes_of_one_byte_keep_their_order() {
    // The address of a load, or the value of a store, comes late (after two ALU ops); an
    // independent access to the same byte behind it would otherwise go first.
    let late = [(Op::SAlu, NONE, None), (Op::SAlu, [0, NO_TAG], None)];
    let orders = [
        // store then load (RAW), load then store (WAR), store then store (WAW).
        ((Op::SStore, true), (Op::SLoad, false)),
        ((Op::SLoad, false), (Op::SStore, true)),
        ((Op::SStore, true), (Op::SStore, true)),
    ];
    for ((first, first_store), (second, second_store)) in orders {
        let mut code = block(&[
            late[0],
            late[1],
            (first, [1, NO_TAG], Some((first_store, 7))),
            (second, NONE, Some((second_store, 7))),
        ]);
        // Two bytes from 7, so that the two accesses differ (and still overlap).
        code.accesses[1].1.len = 2;
        for aliasing in [
            Aliasing::Undistinguished,
            Aliasing::ByArray,
            Aliasing::Exact,
        ] {
            let at = positions(&compile(&code, aliasing), &code);
            assert!(at[2] < at[3], "{first:?} then {second:?}, {aliasing:?}");
        }
        // Another byte of the same array: free to go first where offsets are told apart.
        let mut other = code.clone();
        other.accesses[1].1.byte = 8;
        assert_fourth_moves_up(&other, [false, true, true]);
    }
}

#[test]
fn by_array_keeps_a_store_to_the_state_and_a_table_load_in_order() {
    let sbox = plan().sbox.byte;
    let code = block(&[
        (Op::SAlu, NONE, None),
        (Op::SAlu, [0, NO_TAG], None),
        (Op::SStore, [1, NO_TAG], Some((true, 7))),
        (Op::SLoad, NONE, Some((false, sbox + 7))),
    ]);
    assert_fourth_moves_up(&code, [false, false, true]);
}

/// Whether instruction 3 of `code` (an access) goes before instruction 2 once compiled,
/// for each aliasing rule in turn: nothing told apart, arrays by offset, exact bytes.
fn assert_fourth_moves_up(code: &Trace, moves: [bool; 3]) {
    let rules = [
        Aliasing::Undistinguished,
        Aliasing::ByArray,
        Aliasing::Exact,
    ];
    for (aliasing, moves) in rules.into_iter().zip(moves) {
        let at = positions(&compile(code, aliasing), code);
        assert_eq!(at[3] < at[2], moves, "{aliasing:?}: {:?}", code.accesses);
    }
}

#[test]
fn only_branches_end_blocks_and_the_branch_stays_last() {
    // A branch with nothing to wait for, and a load after it: without the rule the branch
    // would issue beside the second ALU op and the load would lead.
    let mut code = block(&[
        (Op::SAlu, NONE, None),
        (Op::SAlu, [0, NO_TAG], None),
        (Op::SAlu, [1, NO_TAG], None),
        (Op::SLoad, NONE, Some((false, 3))),
        (Op::Branch, NONE, None),
        (Op::SLoad, NONE, Some((false, 4))),
    ]);
    // A second step (inlined C: no block boundary) whose load feeds an ALU op, so that it
    // has the longer path and goes ahead of the first step's load.
    code.steps.push((6, Step::ShiftRows));
    code.instrs.push(instr(Op::SLoad, NONE));
    code.instrs.push(instr(Op::SAlu, [6, NO_TAG]));
    let access = Access {
        store: false,
        byte: 9,
        len: 1,
    };
    code.accesses.push((6, access));
    let compiled = compile(&code, Aliasing::Exact);
    assert_eq!(compiled.instrs[4].op, Op::Branch, "{:?}", compiled.instrs);
    let at = positions(&compiled, &code);
    assert!(
        at[5] > 4 && at[6] > 4,
        "an instruction crossed the branch: {at:?}"
    );
    assert!(at[6] < at[5], "the step's start ended a block: {at:?}");
}
