//! Unit and model tests: the Fig. 3 layout transform, selldw, LDM overflow, that the recorded
//! instruction stream the timing model uses is the one real data executes, and that the
//! simulated time responds to its parameters.

use paraes_core::Key;
use paraes_core::{Direction, Job, KeySize, Mode};
use paraes_sunway_sim::kernel::layout::{byte_transpose, columns_to_states, states_to_columns};
use paraes_sunway_sim::kernel::{
    record_batch, record_variant, run_batch, ByteFlavor, CipherShape, Counter, ExtractFlavor,
    Flavor, SelldwFlavor, BATCH_WORDS,
};
use paraes_sunway_sim::ldm::Ldm;
use paraes_sunway_sim::ldm_plan::LdmPlan;
use paraes_sunway_sim::machine::{Machine, NullSink, Op, Step, Trace, V256};
use paraes_sunway_sim::params::{Aliasing, Compilation, Params, Pipelining};
use paraes_sunway_sim::schedule::compile_blocks;
use paraes_sunway_sim::{Buffering, SimConfig, SimError, SunwaySimEngine, Variant};

fn lanes(seed: u32) -> [u32; 8] {
    std::array::from_fn(|i| {
        (seed.wrapping_mul(0x9e37_79b9) ^ (i as u32).wrapping_mul(0x85eb_ca6b))
            .rotate_left(i as u32 * 3)
    })
}

#[test]
fn layout_transform_and_back_is_the_identity() {
    let mut m = Machine::new(Trace::default());
    let registers = [0, 1, 2, 3].map(|k| V256::constant(lanes(k + 10)));
    let columns = states_to_columns(&mut m, registers);
    let rows = byte_transpose(&mut m, columns);
    let back_columns = byte_transpose(&mut m, rows);
    assert_eq!(back_columns.map(|v| v.lanes), columns.map(|v| v.lanes));
    let back = columns_to_states(&mut m, back_columns);
    assert_eq!(back.map(|v| v.lanes), registers.map(|v| v.lanes));
    // 8 + 12 shuffles and 2 x 24 shift/and/xor.
    let counts = m.sink.counts();
    assert_eq!(
        counts[Op::ALL.iter().position(|&o| o == Op::VShuffle).unwrap()],
        20
    );
}

#[test]
fn layout_puts_row_r_of_state_s_in_lane_s_of_register_r() {
    // Eight states whose byte (row r, column c) of state s is 16s + 4c + r.
    let bytes: Vec<u8> = (0..128u32).map(|i| i as u8).collect();
    let registers = [0, 1, 2, 3].map(|k| {
        V256::constant(std::array::from_fn(|j| {
            let at = 32 * k + 4 * j;
            u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
        }))
    });
    let mut m = Machine::new(NullSink);
    let columns = states_to_columns(&mut m, registers);
    let rows = byte_transpose(&mut m, columns);
    for (r, row) in rows.iter().enumerate() {
        for s in 0..8 {
            let expected: Vec<u8> = (0..4).map(|c| (16 * s + 4 * c + r) as u8).collect();
            assert_eq!(
                row.lanes[s].to_le_bytes().to_vec(),
                expected,
                "row {r} state {s}"
            );
        }
    }
}

#[test]
fn selldw_loads_the_word_at_the_lane_offset_into_that_lane_only() {
    let mut ldm = Ldm::new(4096);
    let table: Vec<u32> = (0..256).map(|i| 1000 + i).collect();
    ldm.put_words(64, &table);
    let mut m = Machine::new(Trace::default());
    let offsets = V256::constant([5, 0, 255, 7, 7, 100, 1, 2]);
    let mut result = V256::splat(0xdead);
    result = m.selldw(&ldm, offsets, 64, 2, result);
    assert_eq!(
        result.lanes,
        [0xdead, 0xdead, 1255, 0xdead, 0xdead, 0xdead, 0xdead, 0xdead]
    );
    for lane in 0..8 {
        result = m.selldw(&ldm, offsets, 64, lane, result);
    }
    assert_eq!(
        result.lanes,
        [1005, 1000, 1255, 1007, 1007, 1100, 1001, 1002]
    );
    assert_eq!(m.sink.instrs.len(), 9);
    assert!(m.sink.instrs.iter().all(|i| i.op == Op::Selldw));
}

#[test]
fn ldm_overflow_is_an_error() {
    let mut config = SimConfig::new(Variant::Pipelined, Buffering::Double, 4);
    config.params.ldm_buffer_bytes = 32 * 1024; // 2 x 32 KiB + tables > 64 KiB
    match SunwaySimEngine::new(config.clone()) {
        Err(SimError::LdmOverflow { region, .. }) => assert_eq!(region, "data buffer 1"),
        other => panic!("expected an LDM overflow, got {:?}", other.map(|_| ())),
    }
    // The same buffer fits once (single buffering).
    config.buffering = Buffering::Single;
    assert!(SunwaySimEngine::new(config).is_ok());
}

#[test]
fn bad_configurations_are_refused() {
    for cgs in [0, 5] {
        assert!(matches!(
            SunwaySimEngine::new(SimConfig::new(Variant::Simd, Buffering::Single, cgs)),
            Err(SimError::Config(_))
        ));
    }
    assert!("turbo".parse::<Variant>().is_err());
    for v in Variant::ALL {
        assert_eq!(v.name().parse::<Variant>().unwrap(), v);
    }
    for b in Buffering::ALL {
        assert_eq!(b.name().parse::<Buffering>().unwrap(), b);
    }
}

/// The LDM plan of `variant` under the default parameters, double buffered.
fn default_plan(variant: Variant) -> LdmPlan {
    let p = Params::DEFAULT;
    LdmPlan::new(
        variant,
        Buffering::Double,
        p.ldm_bytes,
        p.ldm_reserved_bytes,
        p.ldm_buffer_bytes,
    )
    .unwrap()
}

/// Runs a batch of real random data (not the zeroed one the model records) on a machine built
/// as `params` say, recording it: the trace and the batch's words afterwards.
fn real_run<F: Flavor>(
    plan: &LdmPlan,
    shape: CipherShape,
    seed: u32,
    params: &Params,
) -> (Trace, Vec<u32>) {
    let mut ldm = Ldm::new(plan.total_bytes);
    for w in 0..plan.total_bytes / 4 {
        ldm.set_word(w, lanes(seed + w as u32)[w % 8]);
    }
    // Random data everywhere, but a real S-box (its entries are the next round's indices).
    let sbox: Vec<u32> = F::sbox_image(&paraes_sunway_sim::kernel::sbox::sbox());
    ldm.put_words(plan.sbox.word(), &sbox);
    let mut m = Machine::for_params(Trace::default(), params);
    let mut counter = Counter::new(u128::from(seed) << 64 | u128::from(u64::MAX - 3));
    let word = plan.buffers[0].word();
    run_batch::<F, Trace>(&mut m, &mut ldm, plan, shape, word, &mut counter);
    let out = (word..word + BATCH_WORDS).map(|w| ldm.word(w)).collect();
    (m.sink, out)
}

#[test]
fn the_instruction_stream_does_not_depend_on_the_data() {
    let p = Params::DEFAULT;
    for variant in [Variant::Original, Variant::Simd, Variant::Selldw] {
        let plan = default_plan(variant);
        for shape in [
            CipherShape {
                direction: Direction::Encrypt,
                rounds: 10,
                ctr: false,
            },
            CipherShape {
                direction: Direction::Decrypt,
                rounds: 12,
                ctr: false,
            },
            CipherShape {
                direction: Direction::Encrypt,
                rounds: 14,
                ctr: true,
            },
        ] {
            // The original as written; the timing model compiles it (checked below).
            let model = match variant {
                Variant::Original => record_batch::<ByteFlavor>(&plan, shape, &p),
                _ => record_variant(variant, &plan, shape, &p),
            };
            for seed in 1..4 {
                let real = match variant {
                    Variant::Original => real_run::<ByteFlavor>(&plan, shape, seed, &p).0,
                    Variant::Simd => real_run::<ExtractFlavor>(&plan, shape, seed, &p).0,
                    _ => real_run::<SelldwFlavor>(&plan, shape, seed, &p).0,
                };
                assert_eq!(real.counts(), model.counts(), "{variant} {shape:?}");
                assert_eq!(real.instrs, model.instrs, "{variant} {shape:?}");
                assert_eq!(real.steps, model.steps, "{variant} {shape:?}");
                // The table lookups' addresses follow the data, but tables are never stored
                // to, so what a compiler may reorder does not.
                let kinds = |t: &Trace| {
                    t.accesses
                        .iter()
                        .map(|&(tag, a)| (tag, a.store))
                        .collect::<Vec<_>>()
                };
                assert_eq!(kinds(&real), kinds(&model), "{variant} {shape:?}");
                if variant == Variant::Original {
                    let Compilation::Scheduled(default) = p.original_compilation else {
                        panic!("the default compiles the original");
                    };
                    assert_eq!(
                        record_variant(variant, &plan, shape, &p).instrs,
                        compile_blocks(&model, default, &plan, &p).instrs
                    );
                    for aliasing in [
                        Aliasing::Undistinguished,
                        Aliasing::ByArray,
                        Aliasing::Exact,
                    ] {
                        assert_eq!(
                            compile_blocks(&real, aliasing, &plan, &p).instrs,
                            compile_blocks(&model, aliasing, &plan, &p).instrs,
                            "{variant} {shape:?} {aliasing:?}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn the_original_s_loops_close_a_basic_block_every_unroll_iterations() {
    // Per block: the first AddRoundKey, rounds - 1 rounds in a loop, the last round; 8 blocks in
    // a loop; for CTR the 128-byte keystream xor; then the batch's own branch. An innermost loop
    // of `trips` iterations closes a body every `unroll` iterations with its counter update,
    // compare and branch, and has no branch left when unrolled completely.
    let p = Params::DEFAULT;
    let plan = default_plan(Variant::Original);
    let position = |op| Op::ALL.iter().position(|&o| o == op).unwrap();
    for (direction, rounds, ctr) in [
        (Direction::Encrypt, 10, false),
        (Direction::Decrypt, 12, false),
        (Direction::Encrypt, 14, true),
    ] {
        let shape = CipherShape {
            direction,
            rounds,
            ctr,
        };
        let mut work = None;
        let mut output = None;
        for unroll in [1, 2, 3, 4, 16] {
            let params = Params {
                original_unroll: unroll,
                ..p.clone()
            };
            let trace = record_batch::<ByteFlavor>(&plan, shape, &params);
            let counts = trace.counts();
            let bodies = |trips: u64| {
                let unroll = unroll as u64;
                if trips <= unroll {
                    0
                } else {
                    trips.div_ceil(unroll)
                }
            };
            let rounds = rounds as u64;
            let per_block = rounds - 1 + (2 * rounds + 1) * bodies(16) + (rounds - 1) * bodies(4);
            let branches = 8 * per_block + 8 + u64::from(ctr) * bodies(128) + 1;
            assert_eq!(
                counts[position(Op::Branch)],
                branches,
                "{shape:?} unroll {unroll}"
            );
            // Each SubBytes body is the byte's load, address add, lookup and store; its loop
            // control comes after every `unroll` of them, never before.
            let body = [Op::SLoad, Op::SAlu, Op::SLoad, Op::SStore];
            let mut expected = Vec::new();
            for i in 0..16 {
                expected.extend(body);
                if unroll < 16 && ((i + 1) % unroll == 0 || i == 15) {
                    expected.extend([Op::SAlu, Op::SAlu, Op::Branch]);
                }
            }
            for (k, &(at, step)) in trace.steps.iter().enumerate() {
                if step == Step::SubBytes {
                    let end = trace.steps[k + 1].0;
                    let ops: Vec<Op> = trace.instrs[at..end].iter().map(|i| i.op).collect();
                    assert_eq!(ops, expected, "{shape:?} unroll {unroll}");
                }
            }
            // Each branch comes with its counter update and compare; the AES work is the same.
            let aes = [
                counts[position(Op::SLoad)],
                counts[position(Op::SStore)],
                counts[position(Op::SAlu)] - 2 * branches,
            ];
            assert_eq!(*work.get_or_insert(aes), aes, "{shape:?} unroll {unroll}");
            // And the same bytes come out (recorded, so the loop control runs too).
            let (_, out) = real_run::<ByteFlavor>(&plan, shape, 0, &params);
            assert_eq!(*output.get_or_insert_with(|| out.clone()), out, "{shape:?}");
        }
    }
    // No body holds no iterations.
    let mut config = SimConfig::new(Variant::Original, Buffering::Double, 1);
    config.params.original_unroll = 0;
    assert!(matches!(
        SunwaySimEngine::new(config),
        Err(SimError::Config(_))
    ));
}

#[test]
fn pipelined_unit_is_two_selldw_batches_reordered() {
    let p = Params::DEFAULT;
    let plan = default_plan(Variant::Pipelined);
    let shape = CipherShape {
        direction: Direction::Encrypt,
        rounds: 10,
        ctr: false,
    };
    let one = record_variant(Variant::Selldw, &plan, shape, &p);
    let two = record_variant(Variant::Pipelined, &plan, shape, &p);
    assert_eq!(two.counts(), one.counts().map(|c| 2 * c));
    let list = record_variant(
        Variant::Pipelined,
        &plan,
        shape,
        &Params {
            pipelining: Pipelining::ListScheduler,
            ..p.clone()
        },
    );
    assert_eq!(list.counts(), two.counts());
    let cycles = |t: &Trace| paraes_sunway_sim::schedule::trace_cycles(t, &p);
    let (cycles_one, cycles_two, cycles_list) = (cycles(&one), cycles(&two), cycles(&list));
    assert!(
        cycles_two < 2 * cycles_one * 95 / 100,
        "Fig. 5 interleaving gains: {cycles_two} vs 2 x {cycles_one}"
    );
    assert!(
        cycles_list <= cycles_two,
        "the list scheduler is the upper bound: {cycles_list} vs {cycles_two}"
    );
}

#[test]
fn the_selldw_round_counts_match_the_paper() {
    // Per SubBytes of one row register: 3 vsrlw + 4 vandw, 32 selldw, 4 moves, 3 vsllw + 3 vorw.
    let plan = default_plan(Variant::Selldw);
    let mut ldm = Ldm::new(plan.total_bytes);
    let mut m = Machine::new(Trace::default());
    let shape = CipherShape {
        direction: Direction::Encrypt,
        rounds: 10,
        ctr: false,
    };
    SelldwFlavor::cipher_batch(&mut m, &mut ldm, &plan, shape, plan.buffers[0].word());
    let count = |op| m.sink.instrs.iter().filter(|i| i.op == op).count();
    assert_eq!(count(Op::Selldw), 10 * 4 * 32);
    assert_eq!(count(Op::VMove), 10 * 4 * 4);
    // One temporary: every selldw but the first reads the one before it.
    let selldw: Vec<usize> = (0..m.sink.instrs.len())
        .filter(|&i| m.sink.instrs[i].op == Op::Selldw)
        .collect();
    for pair in selldw.windows(2) {
        assert_eq!(m.sink.instrs[pair[1]].deps[1] as usize, pair[0]);
    }
    // 4 data loads + 11 round keys x 4 rows; 4 stores.
    assert_eq!(count(Op::VLoad), 4 + 11 * 4);
    assert_eq!(count(Op::VStore), 4);
}

fn large_throughput(cgs: usize) -> f64 {
    let engine =
        SunwaySimEngine::new(SimConfig::new(Variant::Pipelined, Buffering::Double, cgs)).unwrap();
    engine
        .predict(Mode::Ecb, Direction::Encrypt, KeySize::Aes128, 256 << 20)
        .gbps()
}

#[test]
fn halving_core_groups_about_halves_large_input_throughput() {
    let four = large_throughput(4);
    let two = large_throughput(2);
    let one = large_throughput(1);
    assert!(
        (four / two - 2.0).abs() < 0.1,
        "4 CGs {four} vs 2 CGs {two}"
    );
    assert!((two / one - 2.0).abs() < 0.1, "2 CGs {two} vs 1 CG {one}");
}

#[test]
fn time_responds_to_parameters() {
    let base = SimConfig::default();
    let engine = SunwaySimEngine::new(base.clone()).unwrap();
    let small = engine.predict(Mode::Ctr, Direction::Encrypt, KeySize::Aes128, 64 << 10);
    let mut slow_start = base.clone();
    slow_start.params.athread_startup_s *= 10.0;
    let slower = SunwaySimEngine::new(slow_start).unwrap().predict(
        Mode::Ctr,
        Direction::Encrypt,
        KeySize::Aes128,
        64 << 10,
    );
    assert!(slower.seconds > small.seconds + 8.0 * base.params.athread_startup_s);
    let mut slow_clock = base;
    slow_clock.params.clock_hz /= 2.0;
    let big = engine.predict(Mode::Ecb, Direction::Encrypt, KeySize::Aes256, 64 << 20);
    let half = SunwaySimEngine::new(slow_clock).unwrap().predict(
        Mode::Ecb,
        Direction::Encrypt,
        KeySize::Aes256,
        64 << 20,
    );
    assert!(
        half.seconds > 1.5 * big.seconds,
        "compute-bound: the clock matters"
    );
    // The parts add up.
    let parts =
        big.compute_seconds + big.dma_seconds + big.startup_seconds + big.overlapped_seconds;
    assert!((parts - big.seconds).abs() < 1e-9 * big.seconds.max(1.0));
}

#[test]
fn simulating_256_mb_runs_and_matches_the_prediction() {
    let engine = SunwaySimEngine::new(SimConfig::default()).unwrap();
    let key = Key::new(&[0x42; 32]).unwrap().expand();
    let job = Job::ctr(&key, [3; 16], 0);
    // 256 MiB in release builds (a couple of seconds); 16 MiB in unoptimised ones.
    let size: usize = if cfg!(debug_assertions) {
        16 << 20
    } else {
        256 << 20
    };
    let mut data = vec![0u8; size];
    let report = engine.process_timed(&job, &mut data).unwrap();
    let predicted = engine.predict(Mode::Ctr, Direction::Encrypt, KeySize::Aes256, size as u64);
    assert_eq!(report, predicted);
    assert!(report.gbps() > 0.0);
    assert!(data.iter().any(|&b| b != 0));
}
