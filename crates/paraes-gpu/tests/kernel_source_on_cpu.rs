//! Runs the kernel SOURCE, kernels/aes.cu, on the CPU through kernels/emulate/host.cpp
//! (built here with the system C++ compiler, tests/support/standin.rs) and compares every
//! kernel, key size and several launch shapes with the core's AES (the `_gcm` kernels with
//! GCM chunk counters, records with and without a tag's room). This tests the .cu file
//! itself where there is no GPU; without a C++ compiler it fails, saying what to install (set
//! CXX to pick one).

#[path = "support/standin.rs"]
mod standin;

use std::path::{Path, PathBuf};
use std::process::Command;

use paraes_core::seeded::SplitMix64;
use paraes_core::{modes, AesImpl, Counters, Direction, Job, Key, Mode};
use paraes_gpu::plan::{counter_halves, GcmLayout, RoundKeyWords};

/// The emulator, built once per change of its sources (panics when there is no C++ compiler).
fn build() -> PathBuf {
    standin::compile("emulate/host.cpp", &[], "aes-host")
}

fn run(
    exe: &Path,
    kernel: &str,
    (grid, threads): (u32, u32),
    ctr: (u64, u64),
    keys: &RoundKeyWords,
    gcm: &GcmLayout,
    input: &[u8],
) -> Vec<u8> {
    let mut stdin = Vec::new();
    for v in [(input.len() / 16) as u64, ctr.0, ctr.1] {
        stdin.extend_from_slice(&v.to_le_bytes());
    }
    for w in keys.w.iter().chain(&gcm.nonce).chain([&gcm.stride_blocks]) {
        stdin.extend_from_slice(&w.to_le_bytes());
    }
    stdin.extend_from_slice(input);
    standin::run_emulator(exe, kernel, (grid, threads), &stdin).0
}

/// Every kernel aes.cu defines, as the emulator lists them.
fn kernel_names(exe: &Path) -> Vec<String> {
    let out = Command::new(exe).arg("--list").output().unwrap();
    assert!(out.status.success(), "host --list failed");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Whether `name` is a GCM records kernel (tested by tests/gcm_records_on_cpu.rs).
fn is_records_kernel(name: &str) -> bool {
    ["_gcm_seal", "_gcm_verify", "_gcm_open"]
        .iter()
        .any(|k| name.ends_with(k))
}

/// (key bits, kind, GCM chunk counters) of a kernel name `aes{bits}_{kind}[_{variant}]`.
fn parse(name: &str) -> (usize, &'static str, bool) {
    let bits = name[3..6].parse().unwrap();
    let kind = ["ecb_encrypt", "ecb_decrypt", "ctr_fused", "ctr_keystream"]
        .into_iter()
        .find(|k| name[7..].starts_with(k))
        .unwrap_or_else(|| panic!("unknown kernel kind in {name}"));
    (bits, kind, name.ends_with("_gcm"))
}

#[test]
fn kernel_source_matches_the_core_on_the_cpu() {
    let exe = build();
    let names = kernel_names(&exe);
    // The emulator must list exactly the kernels in the committed PTX (so none escapes).
    let mut in_ptx: Vec<String> = paraes_gpu::PTX
        .lines()
        .filter_map(|l| l.strip_prefix(".visible .entry "))
        .map(|l| l[..l.find('(').unwrap()].to_string())
        .collect();
    let mut listed = names.clone();
    in_ptx.sort();
    listed.sort();
    assert_eq!(listed, in_ptx, "emulator list vs kernels/aes.ptx");
    assert!(
        names.len() >= 12 + 9 + 6,
        "base kernels, the AES-128 variants and the GCM chunk kernels: {names:?}"
    );
    assert_eq!(names.iter().filter(|n| n.ends_with("_gcm")).count(), 6);
    assert_eq!(names.iter().filter(|n| is_records_kernel(n)).count(), 6);

    let mut rng = SplitMix64::new(0x1234_5678_9abc_def1);
    // (grid, threads, AES blocks, counter block 0's low 32 bits, or None: the wrap cases).
    // The R1 variants take their fast path only when no counter of the launch carries out
    // of the low 32 bits; shapes 0 and 3 do not carry, 1, 2 and 4 do.
    let shapes: [(u32, u32, usize, Option<u32>); 5] = [
        (1, 32, 1, Some(0x1000)),
        (3, 64, 1000, None),
        (5, 96, 2333, None),
        (2, 64, 700, Some(0xffff_f000)),
        (2, 32, 300, Some(0xffff_ff80)),
    ];
    let (mut uniform_launches, mut carrying_launches) = (0, 0);
    let mut keys = std::collections::HashMap::new();
    for bits in [128usize, 192, 256] {
        let key_bytes = rng.bytes(bits / 8);
        keys.insert(bits, Key::new(&key_bytes).unwrap().expand());
    }
    for (i, &(grid, threads, nblocks, low)) in shapes.iter().enumerate() {
        let input = rng.bytes(nblocks * 16);
        let mut iv = [0u8; 16];
        rng.fill(&mut iv);
        // Counter of the launch's first block: the IV itself (start 0) except for shape 0, so
        // that the carries of shapes 1, 2 and 4 happen inside the launch.
        let mut start = 0;
        match (i, low) {
            (0, Some(low)) => {
                iv[12..].copy_from_slice(&low.to_be_bytes());
                start = rng.next_u64() % 5000;
            }
            (_, Some(low)) => iv[12..].copy_from_slice(&low.to_be_bytes()),
            (1, None) => iv[8..].copy_from_slice(&(u64::MAX - 300).to_be_bytes()), // carry into the high half
            _ => iv = [0xff; 16],                                                  // wraps at 2^128
        }
        let ctr = counter_halves(&iv, start);
        // GCM chunk counters for the _gcm kernels: back to back (shapes 0, 2, 4) or with a
        // tag's room (1, 3); the launch starts at a random place in a record near 2^32 records
        // (so the record's high word changes inside shape 2) or at a random record.
        let stride = paraes_core::engine::GCM_CHUNK_LEN + if i % 2 == 1 { 16 } else { 0 };
        let base_nonce: [u8; 12] = rng.array();
        let layout = GcmLayout::new(&base_nonce, stride).unwrap();
        let stride_blocks = u64::from(layout.stride_blocks);
        let first_record = match i {
            2 => (1 << 32) - 2,
            _ => rng.next_u64() >> 20,
        };
        let within = match i {
            0 => 0,
            1 => stride_blocks - 1,
            _ => rng.next_u64() % stride_blocks,
        };
        let gcm_start = first_record * stride_blocks + within;
        assert_eq!(layout.place(gcm_start), (first_record, within));
        if (ctr.1 & 0xffff_ffff) + nblocks as u64 <= 1 << 32 {
            uniform_launches += 1;
        } else {
            carrying_launches += 1;
        }
        for name in names.iter().filter(|n| !is_records_kernel(n)) {
            let (bits, kind, gcm) = parse(name);
            let key = &keys[&bits];
            let (mode, direction) = match kind {
                "ecb_encrypt" => (Mode::Ecb, Direction::Encrypt),
                "ecb_decrypt" => (Mode::Ecb, Direction::Decrypt),
                _ => (Mode::Ctr, Direction::Encrypt),
            };
            let job = Job::new(
                mode,
                direction,
                key,
                iv,
                if gcm { gcm_start } else { start } * 16,
            )
            .with_counters(if gcm {
                Counters::GcmChunks { base_nonce, stride }
            } else {
                Counters::Stream
            });
            let mut expect = if kind == "ctr_keystream" {
                vec![0u8; input.len()]
            } else {
                input.clone()
            };
            modes::apply(AesImpl::Portable, &job, &mut expect).unwrap();
            let words = RoundKeyWords::new(if kind == "ecb_decrypt" {
                key.dec_round_keys()
            } else {
                key.enc_round_keys()
            });
            let (ctr, launch_layout) = if gcm {
                ((first_record, within), layout)
            } else {
                (ctr, GcmLayout::default())
            };
            let got = run(
                &exe,
                name,
                (grid, threads),
                ctr,
                &words,
                &launch_layout,
                &input,
            );
            assert!(
                got == expect,
                "{name} grid {grid} x {threads}, {nblocks} blocks from counter {ctr:x?}: differs from the core"
            );
        }
    }
    assert_eq!((uniform_launches, carrying_launches), (2, 3));
}

/// The emulation's block semantics (kernels/emulate/cuda-threads.h) on small kernels with known
/// answers: every shuffle kind and width, 64-bit shuffles, a barrier-ordered reduction through
/// shared memory, fresh shared memory per block, the reduction without its barrier caught, and
/// a deadlock (threads at different barriers) aborted with a message.
#[test]
fn emulated_blocks_have_barriers_shuffles_and_shared_memory() {
    let exe = standin::compile("emulate/threads-selftest.cpp", &[], "threads-selftest");
    let out = Command::new(&exe).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "self-test failed:\n{stdout}");
    let checks: Vec<&str> = stdout.lines().collect();
    assert_eq!(checks.len(), 10, "{stdout}");
    assert!(checks.iter().all(|l| l.ends_with(" ok")), "{stdout}");
    assert!(checks.contains(&"block_sum_without_barrier_is_caught ok"));

    let out = Command::new(&exe).arg("deadlock").output().unwrap();
    assert!(!out.status.success(), "a deadlocked block ran to its end");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("deadlock"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A race in the real kernel is caught: aes.cu with the barrier after the shared-table fill in
/// `run` removed gives wrong output on the emulator (threads that read the table before the
/// others filled it), while the file as it is gives the core's.
#[test]
fn a_kernel_without_its_barrier_fails_on_the_emulator() {
    let source = std::fs::read_to_string(standin::kernels_dir().join("aes.cu")).unwrap();
    let barrier = "    __syncthreads();\n\n    const u32 lane4";
    assert_eq!(
        source.matches(barrier).count(),
        1,
        "the table fill's barrier in run"
    );
    let racy = source.replace(barrier, "\n    const u32 lane4");
    // Named by its content, so the build below is cached like the others.
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    std::hash::Hash::hash(&racy, &mut hasher);
    let name = format!(
        "aes-no-barrier-{:016x}.cu",
        std::hash::Hasher::finish(&hasher)
    );
    let racy_path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(&racy_path, racy).unwrap();
    let define = format!("-DKERNEL_SOURCE=\"{}\"", racy_path.display());
    let include = format!("-I{}", standin::kernels_dir().display()); // its #include "ghash.cuh"
    let racy_exe = standin::compile(
        "emulate/host.cpp",
        &[&define, &include],
        "aes-host-no-barrier",
    );

    let mut rng = SplitMix64::new(7);
    let key = Key::new(&rng.bytes(16)).unwrap().expand();
    let input = rng.bytes(16 * 1000);
    let iv: [u8; 16] = rng.array();
    let mut expect = input.clone();
    let job = Job::new(Mode::Ctr, Direction::Encrypt, &key, iv, 0);
    modes::apply(AesImpl::Portable, &job, &mut expect).unwrap();
    let words = RoundKeyWords::new(key.enc_round_keys());
    let ctr = counter_halves(&iv, 0);
    let gcm = GcmLayout::default();
    for kernel in ["aes128_ctr_fused", "aes128_ctr_fused_pair"] {
        let shape = (2, 64);
        let good = run(&build(), kernel, shape, ctr, &words, &gcm, &input);
        assert!(good == expect, "{kernel} with its barrier");
        let bad = run(&racy_exe, kernel, shape, ctr, &words, &gcm, &input);
        assert!(
            bad != expect,
            "{kernel} without its barrier gave the right output"
        );
    }
}
