//! The Engine seam's contract: every engine in the workspace gives the same bytes for the same
//! job, checked by the one conformance kit (`paraes_core::testing::check_engine`). New engines
//! join by adding themselves to `engines()`. The GPU engine runs on the NVIDIA driver, or, where
//! there is none, on the CUDA stand-in (crates/paraes-gpu/tests/support/standin.rs), as does
//! `paraes --backend gpu` end to end; without either, `--backend gpu` is a one-line error.

#[path = "../crates/paraes-gpu/tests/support/standin.rs"]
mod standin;

use std::path::Path;
use std::process::Command;

use paraes_core::testing::{check_engine, Budget};
use paraes_core::{AesImpl, CpuEngine, Engine};
use paraes_gpu::{CtrVariant, GpuEngine, GpuOptions};
use paraes_sunway_sim::{Buffering, SimConfig, SunwaySimEngine, Variant};

/// Says, past the test harness's capture of `eprintln!`, that a test did not run here because
/// this machine has a GPU (those tests need a machine without one, as CI is: there they run).
fn not_run(test: &str, why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "\n*** NOT RUN {test}: {why} ***\n");
}

/// Every engine this build and machine can run, each with the budget its speed allows.
fn engines() -> Vec<(Box<dyn Engine>, Budget)> {
    let fast = if cfg!(debug_assertions) {
        Budget::quick()
    } else {
        Budget::thorough()
    };
    let slow = if cfg!(debug_assertions) {
        Budget::new(4096 + 5, 4)
    } else {
        Budget::quick()
    };
    let mut engines: Vec<(Box<dyn Engine>, Budget)> = Vec::new();
    for imp in AesImpl::available() {
        for engine in [
            CpuEngine::with_aes_impl(imp, Some(1)).unwrap(),
            CpuEngine::with_aes_impl(imp, Some(2)).unwrap(),
            CpuEngine::with_aes_impl(imp, Some(3))
                .unwrap()
                .with_split(0, 4096),
        ] {
            engines.push((Box::new(engine), fast));
        }
    }
    for (variant, buffering, cgs) in [
        (Variant::Pipelined, Buffering::Double, 4),
        (Variant::Original, Buffering::Single, 1),
        (Variant::Simd, Buffering::Double, 3),
        (Variant::Selldw, Buffering::Single, 2),
    ] {
        let config = SimConfig::new(variant, buffering, cgs);
        engines.push((Box::new(SunwaySimEngine::new(config).unwrap()), slow));
    }
    let gpu_budget = match standin::driver() {
        standin::Driver::Nvidia => fast,
        standin::Driver::StandIn => slow,
    };
    for ctr_variant in CtrVariant::ALL {
        let gpu = GpuEngine::new(GpuOptions {
            ctr_variant,
            ..GpuOptions::default()
        })
        .unwrap_or_else(|e| panic!("the GPU engine did not start on {}: {e}", standin::driver()));
        engines.push((Box::new(gpu), gpu_budget));
    }
    engines
}

#[test]
fn every_engine_passes_the_conformance_kit() {
    let engines = engines();
    assert!(
        engines.len() >= 3,
        "at least the portable CPU engine variants"
    );
    for (engine, budget) in &engines {
        let checked = check_engine(engine.as_ref(), 0x5eed, *budget);
        eprintln!("{}: {checked:?}", engine.name());
    }
}

/// A 16-byte key file `key` in `dir`, readable by its owner only (paraes warns otherwise).
fn key_file(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("key");
    std::fs::write(&path, [7u8; 16]).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// Runs the paraes binary with `args` (and the environment of this process, which names the
/// CUDA stand-in where there is no driver); panics unless it succeeds.
fn paraes(dir: &Path, args: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_paraes"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "paraes {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `paraes --backend gpu` end to end: v3 containers written on either engine read on the other, and
/// raw CTR byte-identical to the CPU engine's, at sizes around the GPU's piece and chunk edges.
#[test]
fn paraes_backend_gpu_round_trips() {
    let driver = standin::driver();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    key_file(d);
    let iv = "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";
    for (i, len) in [0usize, 1, 4101, (1 << 20) + 3, (5 << 20) + 17]
        .into_iter()
        .enumerate()
    {
        let data = paraes_core::seeded::SplitMix64::new(i as u64).bytes(len);
        std::fs::write(d.join("in"), &data).unwrap();
        // A v3 container (AES-GCM chunks) written on one engine opens on the other.
        for (writer, reader) in [("gpu", "cpu"), ("cpu", "gpu")] {
            paraes(
                d,
                &[
                    "enc",
                    "--backend",
                    writer,
                    "-k",
                    "key",
                    "-o",
                    "sealed",
                    "-f",
                    "-q",
                    "in",
                ],
            );
            paraes(
                d,
                &[
                    "dec",
                    "--backend",
                    reader,
                    "-k",
                    "key",
                    "-o",
                    "back",
                    "-f",
                    "-q",
                    "sealed",
                ],
            );
            assert!(
                std::fs::read(d.join("back")).unwrap() == data,
                "written on {writer}, read on {reader}: {len} bytes on {driver}"
            );
        }
        for (backend, out) in [("gpu", "raw.gpu"), ("cpu", "raw.cpu")] {
            let chunk = if len > 1 << 20 { "256KiB" } else { "1MiB" };
            paraes(
                d,
                &[
                    "enc",
                    "--raw",
                    "ctr",
                    "--iv",
                    iv,
                    "--chunk-size",
                    chunk,
                    "--backend",
                    backend,
                    "-k",
                    "key",
                    "-o",
                    out,
                    "-f",
                    "-q",
                    "in",
                ],
            );
        }
        assert!(
            std::fs::read(d.join("raw.gpu")).unwrap() == std::fs::read(d.join("raw.cpu")).unwrap(),
            "raw CTR {len} bytes: gpu differs from cpu on {driver}"
        );
    }
}

/// `paraes --backend gpu` seals v3 bodies with the device's records kernels (its description
/// says so), and a container with one flipped body byte fails `dec --backend gpu` with the CPU
/// engine's message and no output file.
#[test]
fn paraes_backend_gpu_seals_on_the_device_and_refuses_a_tampered_body() {
    // Names the stand-in in this process's environment where there is no driver.
    let driver = standin::driver();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    key_file(d);
    let data = paraes_core::seeded::SplitMix64::new(38).bytes(3 * 16384 + 5);
    std::fs::write(d.join("in"), &data).unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_paraes"))
            .current_dir(d)
            .args(args)
            .output()
            .unwrap()
    };
    let enc = run(&[
        "enc", "-b", "gpu", "-v", "-k", "key", "-o", "sealed", "-f", "in",
    ]);
    let stderr = String::from_utf8_lossy(&enc.stderr);
    assert!(enc.status.success(), "{stderr}");
    assert!(
        stderr.contains("GCM tags on the device"),
        "{driver}: {stderr}"
    );
    let mut sealed = std::fs::read(d.join("sealed")).unwrap();
    let at = sealed.len() - 16384 / 2;
    sealed[at] ^= 1;
    std::fs::write(d.join("bad"), &sealed).unwrap();
    let mut messages = Vec::new();
    for backend in ["gpu", "cpu"] {
        let out = format!("back.{backend}");
        let dec = run(&["dec", "-b", backend, "-k", "key", "-o", &out, "-f", "bad"]);
        let stderr = String::from_utf8_lossy(&dec.stderr).into_owned();
        assert_eq!(dec.status.code(), Some(1), "{backend}: {stderr}");
        assert!(
            !d.join(&out).exists(),
            "{backend}: partial output: {stderr}"
        );
        messages.push(stderr);
    }
    assert_eq!(messages[0], messages[1]);
}

/// Without a driver (and without the stand-in), `--backend gpu` and `--backend hybrid` are one
/// line on stderr, exit status 1 and no output: the binary never loads the stand-in on its own,
/// and the hybrid does not quietly run on the CPU alone.
#[test]
fn paraes_backend_gpu_without_a_driver_is_one_line() {
    if paraes_gpu::driver_installed() && std::env::var_os(paraes_gpu::STANDIN_ENV).is_none() {
        not_run(
            "paraes_backend_gpu_without_a_driver_is_one_line",
            "an NVIDIA driver is installed: the no-driver error is seen only on a machine \
             without a GPU (as CI is)",
        );
        return;
    }
    for backend in ["gpu", "hybrid"] {
        let dir = tempfile::tempdir().unwrap();
        key_file(dir.path());
        std::fs::write(dir.path().join("in"), b"hello").unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_paraes"))
            .current_dir(dir.path())
            .env_remove(paraes_gpu::STANDIN_ENV)
            .args(["enc", "--backend", backend, "-k", "key", "-o", "out", "in"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{backend}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{backend}: {stderr}");
        assert!(stderr.contains("no CUDA driver"), "{backend}: {stderr}");
        assert!(!stderr.contains("stand-in"), "{backend}: {stderr}");
        assert!(!dir.path().join("out").exists(), "{backend}: {stderr}");
    }
}

/// Out of GPU memory in the middle of a run (the stand-in refuses the 4th allocation: the
/// second slot's buffers): one line that says what to do, and no advice about --chunk-size,
/// which does not change the GPU's buffers.
#[test]
fn paraes_backend_gpu_out_of_memory_is_one_line() {
    if standin::driver() != standin::Driver::StandIn {
        not_run(
            "paraes_backend_gpu_out_of_memory_is_one_line",
            "on a GPU: out-of-memory is checked on the CUDA stand-in only, on a machine \
             without a GPU (as CI is)",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    key_file(dir.path());
    std::fs::write(dir.path().join("in"), vec![5u8; 3 << 20]).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_paraes"))
        .current_dir(dir.path())
        .env("PARAES_CUDA_STANDIN_OOM_AFTER", "3")
        .args([
            "enc",
            "--backend",
            "gpu",
            "--chunk-size",
            "2MiB",
            "-k",
            "key",
            "-o",
            "out",
            "in",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("out of GPU memory"), "{stderr}");
    assert!(!stderr.contains("chunk"), "{stderr}");
    // The GPU error's type crossed the engine seam: its advice is there.
    assert!(stderr.contains("or use --backend cpu"), "{stderr}");
    assert!(
        !dir.path().join("out").exists(),
        "no partial output: {stderr}"
    );
}
