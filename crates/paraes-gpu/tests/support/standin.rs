//! The CUDA driver the GPU tests run on: the NVIDIA driver where one is installed, else the CPU
//! stand-in (kernels/emulate/cuda-standin.cpp, kernels/aes.cu compiled for the host), built
//! here with the system C++ compiler and named to the engine through `PARAES_CUDA_STANDIN`.
//! Shared by the GPU test files (`#[path]`); also builds the kernel-source emulator.
//!
//! `PARAES_GPU_TESTS=nvidia` (the device runs set it) refuses the stand-in, so a GPU machine
//! whose driver cannot be loaded fails at once instead of passing on the CPU;
//! `PARAES_GPU_TESTS=standin` uses the stand-in even where a driver is installed.
#![allow(dead_code)]

use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// What the GPU tests of this process run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Driver {
    /// The NVIDIA driver and a GPU.
    Nvidia,
    /// The CPU stand-in: not a GPU; sizes are scaled down (it runs ~50-100 MB/s).
    StandIn,
}

impl std::fmt::Display for Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Driver::Nvidia => "the NVIDIA driver",
            Driver::StandIn => paraes_gpu::STANDIN_NAME,
        })
    }
}

/// The repository's `kernels/` folder.
pub fn kernels_dir() -> PathBuf {
    let mut dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    while !dir.join("kernels/aes.cu").exists() {
        assert!(
            dir.pop(),
            "no kernels/aes.cu above {}",
            env!("CARGO_MANIFEST_DIR")
        );
    }
    dir.join("kernels")
}

/// Compiles the C++ file `source` (under kernels/) with `extra` flags into a file of
/// CARGO_TARGET_TMPDIR named after a hash of the sources and flags, unless that exists (built
/// once per change, shared by concurrent test binaries: each writes its own file, then renames).
/// Panics with the compiler's output, or with what to install when there is no compiler.
pub fn compile(source: &str, extra: &[&str], stem: &str) -> PathBuf {
    let kernels = kernels_dir();
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let mut args: Vec<String> = [
        "-O3",
        "-std=c++17",
        "-Wall",
        "-Werror",
        "-Wno-unknown-pragmas",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.push(format!(
        "-DBLOCKS_PER_THREAD={}",
        paraes_gpu::BLOCKS_PER_THREAD
    ));
    args.push(format!(
        "-DMAX_THREADS={}",
        paraes_gpu::MAX_THREADS_PER_BLOCK
    ));
    args.extend(extra.iter().map(|s| s.to_string()));
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (&cxx, &args, source).hash(&mut hasher);
    for file in [
        "aes.cu",
        "ghash.cuh",
        "emulate/cuda-on-cpu.h",
        "emulate/cuda-threads.h",
        "emulate/standin-state.h",
        source,
    ] {
        std::fs::read(kernels.join(file))
            .unwrap_or_else(|e| panic!("reading kernels/{file}: {e}"))
            .hash(&mut hasher);
    }
    let out =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{stem}-{:016x}", hasher.finish()));
    if out.exists() {
        return out;
    }
    let tmp = PathBuf::from(format!("{}.tmp{}", out.display(), std::process::id()));
    let result = Command::new(&cxx)
        .args(&args)
        .arg("-o")
        .arg(&tmp)
        .arg(kernels.join(source))
        .output();
    match result {
        Ok(o) if o.status.success() => {
            std::fs::rename(&tmp, &out).expect("renaming the compiled file into place");
            out
        }
        Ok(o) => panic!(
            "{cxx} failed on kernels/{source}:\n{}",
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => panic!(
            "no C++ compiler ({cxx}: {e}) to build kernels/{source}: install g++ \
             (scripts/test.sh does) or set CXX"
        ),
    }
}

/// The driver the GPU tests run on (decided once per process; see the top of this file).
/// With the stand-in, sets `PARAES_CUDA_STANDIN` before any driver call, so the engines of this
/// process and the `paraes` processes it starts load it; says so in one line.
pub fn driver() -> Driver {
    static DRIVER: OnceLock<Driver> = OnceLock::new();
    *DRIVER.get_or_init(|| {
        let wanted = std::env::var("PARAES_GPU_TESTS").unwrap_or_default();
        let preset = std::env::var_os(paraes_gpu::STANDIN_ENV).is_some_and(|v| !v.is_empty());
        let use_standin = match wanted.as_str() {
            "nvidia" => {
                assert!(
                    !preset,
                    "PARAES_GPU_TESTS=nvidia but {} is set: unset it",
                    paraes_gpu::STANDIN_ENV
                );
                false
            }
            "standin" => true,
            "" | "auto" => preset || !paraes_gpu::driver_installed(),
            other => panic!("PARAES_GPU_TESTS={other}: expected nvidia, standin or auto"),
        };
        if !use_standin {
            return Driver::Nvidia;
        }
        if !preset {
            let lib = compile(
                "emulate/cuda-standin.cpp",
                &[
                    "-shared",
                    "-fPIC",
                    "-pthread",
                    "-Wextra",
                    "-Wl,-soname,libcuda.so",
                ],
                "libcuda-standin.so",
            );
            // Set before any driver call of this process, while the other tests wait on this
            // OnceLock (each GPU test asks for the driver first).
            std::env::set_var(paraes_gpu::STANDIN_ENV, &lib);
        }
        let _ = writeln!(
            std::io::stderr(),
            "*** no NVIDIA driver here: the GPU tests run on the {} (kernels/aes.cu on the CPU, \
             sizes scaled down; {}={}) ***",
            paraes_gpu::STANDIN_NAME,
            paraes_gpu::STANDIN_ENV,
            std::env::var(paraes_gpu::STANDIN_ENV).unwrap_or_default()
        );
        Driver::StandIn
    })
}

/// A GPU engine on this machine's driver (the stand-in where there is none) whose pieces hold
/// `records` GCM chunk records, so that buffers of a few chunks already run several pieces.
pub fn engine_with_record_pieces(records: usize) -> paraes_gpu::GpuEngine {
    let driver = driver();
    let options = paraes_gpu::GpuOptions {
        max_piece: records * 16400,
        min_piece: 16,
        ..paraes_gpu::GpuOptions::default()
    };
    paraes_gpu::GpuEngine::new(options)
        .unwrap_or_else(|e| panic!("the GPU engine did not start on {driver}: {e}"))
}

/// Runs the kernel emulator `exe` (kernels/emulate/host.cpp, built by [`compile`]) on `kernel`
/// with (grid, threads) and `stdin` as its input (host.cpp's protocol); returns its stdout and
/// stderr. Panics, with its stderr, when it fails.
pub fn run_emulator(
    exe: &Path,
    kernel: &str,
    (grid, threads): (u32, u32),
    stdin: &[u8],
) -> (Vec<u8>, String) {
    let mut child = Command::new(exe)
        .args([kernel, &grid.to_string(), &threads.to_string()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {}: {e}", exe.display()));
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{kernel}: emulator failed: {stderr}");
    (out.stdout, stderr)
}
