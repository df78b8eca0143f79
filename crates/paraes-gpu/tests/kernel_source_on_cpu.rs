//! Runs the kernel SOURCE, kernels/aes.cu, on the CPU through kernels/emulate/host.cpp
//! (built here with the system C++ compiler) and compares every kernel, key size and
//! several launch shapes with the core's AES. This tests the .cu file itself where there is
//! no GPU; it skips loudly when no C++ compiler is found (set CXX to pick one).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use paraes_core::seeded::SplitMix64;
use paraes_core::{modes, Direction, Implementation, Job, Key, Mode};
use paraes_gpu::plan::{counter_halves, RoundKeyWords};
use paraes_gpu::{BLOCKS_PER_THREAD, MAX_THREADS_PER_BLOCK};

fn kernels_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../kernels")
}

/// Builds the emulator, or None (after a loud line) when there is no C++ compiler.
fn build() -> Option<PathBuf> {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let exe =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("aes-host-{}", std::process::id()));
    let output = Command::new(&cxx)
        .args([
            "-O2",
            "-std=c++17",
            "-Wall",
            "-Werror",
            "-Wno-unknown-pragmas",
        ])
        .arg(format!("-DBLOCKS_PER_THREAD={BLOCKS_PER_THREAD}"))
        .arg(format!("-DMAX_THREADS={MAX_THREADS_PER_BLOCK}"))
        .arg("-o")
        .arg(&exe)
        .arg(kernels_dir().join("emulate/host.cpp"))
        .output();
    match output {
        Ok(out) if out.status.success() => Some(exe),
        Ok(out) => panic!(
            "{cxx} failed on kernels/emulate/host.cpp:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "\n*** SKIPPED: no C++ compiler ({cxx}: {e}) to run kernels/aes.cu on the CPU ***\n");
            None
        }
    }
}

fn run(
    exe: &Path,
    kernel: &str,
    grid: u32,
    threads: u32,
    ctr: (u64, u64),
    keys: &RoundKeyWords,
    input: &[u8],
) -> Vec<u8> {
    let mut stdin = Vec::new();
    for v in [(input.len() / 16) as u64, ctr.0, ctr.1] {
        stdin.extend_from_slice(&v.to_le_bytes());
    }
    for w in keys.w {
        stdin.extend_from_slice(&w.to_le_bytes());
    }
    stdin.extend_from_slice(input);
    let mut child = Command::new(exe)
        .args([kernel, &grid.to_string(), &threads.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&stdin).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{kernel}: emulator failed");
    out.stdout
}

#[test]
fn kernel_source_matches_the_core_on_the_cpu() {
    let Some(exe) = build() else { return };
    let mut rng = SplitMix64::new(0x1234_5678_9abc_def1);
    let shapes = [(1u32, 32u32, 1usize), (3, 64, 1000), (5, 96, 2333)];
    for bits in [128usize, 192, 256] {
        let key_bytes = rng.bytes(bits / 8);
        let key = Key::new(&key_bytes).unwrap().expand();
        let enc = RoundKeyWords::new(key.enc_round_keys());
        let dec = RoundKeyWords::new(key.dec_round_keys());
        for (i, &(grid, threads, nblocks)) in shapes.iter().enumerate() {
            let input = rng.bytes(nblocks * 16);
            let mut iv = [0u8; 16];
            rng.fill(&mut iv);
            if i == 1 {
                iv[8..].copy_from_slice(&(u64::MAX - 300).to_be_bytes()); // carry into the high half
            }
            if i == 2 {
                iv = [0xff; 16]; // wraps at 2^128
            }
            let start = rng.next_u64() % 5000;
            let ctr = counter_halves(&iv, start);
            for (kind, mode, direction) in [
                ("ecb_encrypt", Mode::Ecb, Direction::Encrypt),
                ("ecb_decrypt", Mode::Ecb, Direction::Decrypt),
                ("ctr_fused", Mode::Ctr, Direction::Encrypt),
                ("ctr_keystream", Mode::Ctr, Direction::Encrypt),
            ] {
                let job = Job {
                    mode,
                    direction,
                    key: &key,
                    iv,
                    offset: start * 16,
                };
                let mut expect = if kind == "ctr_keystream" {
                    vec![0u8; input.len()]
                } else {
                    input.clone()
                };
                modes::apply(Implementation::Portable, &job, &mut expect).unwrap();
                let keys = if kind == "ecb_decrypt" { &dec } else { &enc };
                let name = format!("aes{bits}_{kind}");
                let got = run(&exe, &name, grid, threads, ctr, keys, &input);
                assert!(
                    got == expect,
                    "{name} grid {grid} x {threads}, {nblocks} blocks: differs from the core"
                );
            }
        }
    }
    let _ = std::fs::remove_file(exe);
}
