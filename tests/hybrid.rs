//! The hybrid engine over the CPU engine and the GPU engine, on the NVIDIA driver or, where
//! there is none, the CUDA stand-in (crates/paraes-gpu/tests/support/standin.rs): the CPU
//! engine's bytes at the edge sizes with both engines working, and `paraes --backend hybrid`
//! end to end, its split reported, and a GPU that fails mid-run (the stand-in's
//! `PARAES_CUDA_STANDIN_OOM_AFTER`) finishing on the CPU with one warning line.

#[path = "../crates/paraes-gpu/tests/support/standin.rs"]
mod standin;

use std::path::Path;
use std::process::{Command, Output};

use paraes_core::engine::GCM_CHUNK_LEN;
use paraes_core::testing::edges::{check_edge_sizes, WINDOW};
use paraes_core::{CpuEngine, Engine, HybridEngine};
use paraes_gpu::{GpuEngine, GpuOptions};

/// The hybrid of a two-thread CPU engine and the GPU engine, splitting calls of a GCM chunk
/// or more (so the edge sizes split too).
fn hybrid() -> HybridEngine {
    let driver = standin::driver();
    let gpu = GpuEngine::new(GpuOptions::default())
        .unwrap_or_else(|e| panic!("the GPU engine did not start on {driver}: {e}"));
    HybridEngine::new(Box::new(CpuEngine::new(Some(2)).unwrap()), Box::new(gpu))
        .unwrap()
        .with_min_split(GCM_CHUNK_LEN)
}

#[test]
fn the_hybrid_gives_the_cpu_engines_bytes_with_both_engines_working() {
    let engine = hybrid();
    check_edge_sizes(&engine, 0x38);
    let split = engine.split().unwrap();
    assert!(split.cpu_bytes > 0 && split.gpu_bytes > 0, "{split:?}");
    assert_eq!(split.gpu_failure, None, "{}", engine.name());
}

/// A 16-byte key file `key` in `dir`, readable by its owner only.
fn key_file(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("key");
    std::fs::write(&path, [9u8; 16]).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// Runs paraes in `dir` with `args` and the extra environment `env`.
fn paraes(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    standin::driver();
    let out = Command::new(env!("CARGO_BIN_EXE_paraes"))
        .current_dir(dir)
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "paraes {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The `split` object of a `--stats json` line on `stderr`.
fn split_of(stderr: &str) -> serde_json::Value {
    let line = stderr
        .lines()
        .find(|line| line.starts_with('{'))
        .unwrap_or_else(|| panic!("no --stats json line: {stderr}"));
    let stats: serde_json::Value = serde_json::from_str(line).unwrap();
    stats["split"].clone()
}

/// `paraes --backend hybrid` round trips: a v3 container it writes opens on the CPU engine and
/// one the CPU engine writes opens on it; its raw CTR and ECB are the CPU engine's bytes; a
/// file of several windows runs on both engines, as `--stats json` and `-v` say.
#[test]
fn paraes_backend_hybrid_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    key_file(d);
    for (i, len) in [0usize, 1, GCM_CHUNK_LEN + 1, 2 * WINDOW + 17]
        .into_iter()
        .enumerate()
    {
        let data = paraes_core::seeded::SplitMix64::new(i as u64).bytes(len);
        std::fs::write(d.join("in"), &data).unwrap();
        for (writer, reader) in [("hybrid", "cpu"), ("cpu", "hybrid")] {
            let sealed = paraes(
                d,
                &["enc", "-b", writer, "-k", "key", "--stats", "json", "-v"]
                    .into_iter()
                    .chain(["-f", "-o", "sealed", "in"])
                    .collect::<Vec<_>>(),
                &[],
            );
            let stderr = String::from_utf8_lossy(&sealed.stderr);
            if writer == "hybrid" && len > WINDOW {
                let split = split_of(&stderr);
                assert!(split["cpu_bytes"].as_u64().unwrap() > 0, "{stderr}");
                assert!(split["gpu_bytes"].as_u64().unwrap() > 0, "{stderr}");
                assert!(split["gpu_failure"].is_null(), "{stderr}");
                assert!(
                    stderr.contains("on the GPU\n"),
                    "-v says the split: {stderr}"
                );
            }
            paraes(
                d,
                &[
                    "dec", "-b", reader, "-k", "key", "-f", "-o", "opened", "sealed",
                ],
                &[],
            );
            assert!(
                std::fs::read(d.join("opened")).unwrap() == data,
                "{len} bytes by {writer}"
            );
        }
        let iv = "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";
        for mode in ["ctr", "ecb"] {
            if mode == "ecb" && len % 16 != 0 {
                continue;
            }
            for backend in ["hybrid", "cpu"] {
                let mut args = vec!["enc", "--raw", mode, "-b", backend, "-k", "key", "-f"];
                if mode == "ctr" {
                    args.extend(["--iv", iv]);
                }
                args.extend(["-o", backend, "in"]);
                paraes(d, &args, &[]);
            }
            assert!(
                std::fs::read(d.join("hybrid")).unwrap() == std::fs::read(d.join("cpu")).unwrap(),
                "raw {mode} of {len} bytes"
            );
        }
    }
}

/// A GPU out of memory in the middle of a run, after the engines started (the stand-in
/// refuses every allocation after the first 4, one GPU call's buffers): the run finishes on
/// the CPU, says so in one warning line, exits 0, and its output opens on the CPU engine. (A
/// GPU that ran calls before it failed, deterministically: the fake GPU of
/// crates/paraes-core/src/hybrid/tests.rs.)
#[test]
fn paraes_backend_hybrid_finishes_on_the_cpu_when_the_gpu_fails() {
    if standin::driver() != standin::Driver::StandIn {
        eprintln!("*** NOT RUN: the GPU failure is injected on the CUDA stand-in only ***");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    key_file(d);
    let data = paraes_core::seeded::SplitMix64::new(40).bytes(3 * WINDOW + 5);
    std::fs::write(d.join("in"), &data).unwrap();
    let args = [
        "enc", "-b", "hybrid", "-k", "key", "--stats", "json", "-o", "sealed", "in",
    ];
    let out = paraes(d, &args, &[("PARAES_CUDA_STANDIN_OOM_AFTER", "4")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(
        warnings[0].contains("the GPU failed during the run")
            && warnings[0].contains("out of GPU memory")
            && warnings[0].contains("the rest ran on the CPU"),
        "{stderr}"
    );
    // The two workers' first windows are split half and half, their GPU parts side by side:
    // one of them may have had all 4 allocations and run (then the next GPU part failed), or
    // each had some and both failed; every byte the GPU did not run ran on the CPU.
    let split = split_of(&stderr);
    let (cpu, gpu) = (split["cpu_bytes"].as_u64(), split["gpu_bytes"].as_u64());
    assert_eq!(cpu.unwrap() + gpu.unwrap(), data.len() as u64, "{stderr}");
    assert!(
        split["gpu_failure"]
            .as_str()
            .is_some_and(|why| why.contains("out of GPU memory")),
        "{stderr}"
    );
    paraes(
        d,
        &["dec", "-b", "cpu", "-k", "key", "-o", "opened", "sealed"],
        &[],
    );
    assert!(std::fs::read(d.join("opened")).unwrap() == data);
}
