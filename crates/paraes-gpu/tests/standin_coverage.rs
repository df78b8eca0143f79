//! The CUDA stand-in covers every driver call the engine makes: this binary links all of the
//! engine that reaches the driver (the Engine path, every timer, the probe), runs each of them
//! once on the driver of this machine (the stand-in where there is none: then through both of
//! cudarc's allocation paths, with memory pools and without, and from a thread the context was
//! never bound on), and then checks that every driver entry point it links is exported by
//! that driver. An entry point the stand-in lacks fails here even when no test reaches the
//! code that calls it (a teardown or error path): cudarc resolves each one on its first call
//! and panics if it is missing.
//!
//! One test in its own binary, since it sets the stand-in's environment for its process.

#[path = "support/standin.rs"]
mod standin;

use std::collections::BTreeSet;

use paraes_core::{modes, AesImpl, Counters, Direction, Engine, Job, Key, Mode};
use paraes_gpu::{
    CopyDirection, CtrVariant, GpuEngine, GpuOptions, ImageChoice, KernelKind, KernelVariant,
};
use standin::Driver;

/// Every job kind the engine runs, once, against the core.
fn run_every_kind(engine: &GpuEngine) {
    let key = Key::new(&[0x42; 32]).unwrap().expand();
    let input: Vec<u8> = (0..(1 << 18) + 21).map(|i| (i * 7 + 3) as u8).collect();
    let layouts = [
        Counters::Stream,
        Counters::GcmChunks {
            base_nonce: [9; 12],
            stride: 16400,
        },
    ];
    for (mode, direction, counters) in [
        (Mode::Ecb, Direction::Encrypt, layouts[0]),
        (Mode::Ecb, Direction::Decrypt, layouts[0]),
        (Mode::Ctr, Direction::Encrypt, layouts[0]),
        (Mode::Ctr, Direction::Encrypt, layouts[1]),
    ] {
        let len = if mode == Mode::Ecb {
            input.len() / 16 * 16
        } else {
            input.len()
        };
        let job = Job::new(
            mode,
            direction,
            &key,
            [0xfe; 16],
            if mode == Mode::Ecb { 32 } else { 5 },
        )
        .with_counters(counters);
        let variants: &[CtrVariant] = match mode {
            Mode::Ecb => &[CtrVariant::Auto],
            Mode::Ctr => &[CtrVariant::Fused, CtrVariant::Keystream],
        };
        for &variant in variants {
            let mut want = input[..len].to_vec();
            modes::apply(AesImpl::Portable, &job, &mut want).unwrap();
            let mut got = input[..len].to_vec();
            engine.process_with(&job, &mut got, variant).unwrap();
            assert!(
                got == want,
                "{mode:?} {direction:?} {counters:?} {variant}: {}",
                engine.name()
            );
        }
    }
    let mut got = input.clone();
    let job = Job::new(Mode::Ctr, Direction::Decrypt, &key, [1; 16], 0);
    engine.process(&job, &mut got).unwrap();
    let mut want = input;
    modes::apply(AesImpl::Portable, &job, &mut want).unwrap();
    assert!(got == want, "{}", engine.name());
}

/// Every timer, once, on small sizes.
fn run_every_timer(engine: &GpuEngine) {
    let key = Key::new(&[0x17; 16]).unwrap().expand();
    for kind in KernelKind::ALL {
        let t = engine.time_kernel(&key, kind, 1 << 16, 1).unwrap();
        assert_eq!(t.len(), 1);
    }
    let timing = engine
        .time_kernel_with(
            &key,
            KernelKind::CtrFused,
            KernelVariant::PairR1,
            128,
            1 << 16,
            1,
        )
        .unwrap();
    assert!(
        timing.registers > 0 && timing.seconds.len() == 1,
        "{timing:?}"
    );
    for direction in [
        CopyDirection::HostToDevice,
        CopyDirection::DeviceToHost,
        CopyDirection::DeviceToDevice,
    ] {
        assert_eq!(engine.time_copy(direction, 1 << 16, 1).unwrap().len(), 1);
    }
    assert_eq!(engine.time_copy_both_ways(1 << 16, 1).unwrap().len(), 1);
}

/// The names of the CUDA driver entry points this binary links: the cudarc bindings
/// (`cudarc::driver::sys::cuXxx`, with `dynamic-loading` each resolved on its first call) are
/// in the symbol table, length-prefixed in either mangling (`...6driver3sys11cuDeviceGet...`).
fn linked_entry_points() -> BTreeSet<String> {
    let exe = std::env::current_exe().unwrap();
    let bytes = std::fs::read(&exe).unwrap();
    let marker = b"6driver3sys";
    let mut names = BTreeSet::new();
    let mut at = 0;
    while let Some(found) = bytes[at..].windows(marker.len()).position(|w| w == marker) {
        let mut i = at + found + marker.len();
        at = i;
        let digits = bytes[i..].iter().take_while(|b| b.is_ascii_digit()).count();
        let Some(len) = std::str::from_utf8(&bytes[i..i + digits])
            .ok()
            .and_then(|d| d.parse::<usize>().ok())
        else {
            continue;
        };
        i += digits;
        let Some(name) = bytes.get(i..i + len) else {
            continue;
        };
        let is_entry = name.len() > 2
            && name.starts_with(b"cu")
            && name[2].is_ascii_uppercase()
            && name.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_');
        if is_entry {
            names.insert(String::from_utf8(name.to_vec()).unwrap());
        }
    }
    names
}

#[test]
fn the_driver_exports_every_entry_point_the_engine_links() {
    let driver = standin::driver();
    if driver == Driver::StandIn {
        // cudarc's allocation path without memory pools (cuMemAlloc_v2 / cuMemFree_v2): a
        // context made while the stand-in says it has none (the PTX image's own Device).
        std::env::set_var("PARAES_CUDA_STANDIN_NO_POOLS", "1");
        let engine = GpuEngine::new(GpuOptions {
            image: ImageChoice::Ptx,
            streams: 2,
            max_piece: 1 << 16,
            min_piece: 1 << 16,
            ..GpuOptions::default()
        })
        .unwrap();
        std::env::remove_var("PARAES_CUDA_STANDIN_NO_POOLS");
        run_every_kind(&engine);
        run_every_timer(&engine);
    }
    // The stream-ordered path (cuMemAllocAsync / cuMemFreeAsync) where memory pools exist, as
    // on an A100 or H100; the engine is made on one thread and used on another.
    let engine = GpuEngine::new(GpuOptions {
        streams: 3,
        max_piece: 1 << 16,
        min_piece: 1 << 16,
        ..GpuOptions::default()
    })
    .unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            run_every_kind(&engine);
            run_every_timer(&engine);
        })
        .join()
        .unwrap()
    });
    drop(engine);
    assert!(paraes_gpu::probe().is_ok());

    let linked = linked_entry_points();
    eprintln!(
        "{} driver entry points linked: {}",
        linked.len(),
        linked.iter().cloned().collect::<Vec<_>>().join(" ")
    );
    // Not vacuous: the symbols are there (an unstripped binary) and hold what the engine calls.
    for anchor in [
        "cuInit",
        "cuModuleLoadDataEx",
        "cuLaunchKernel",
        "cuMemAllocAsync",
        "cuMemHostAlloc",
        "cuMemcpyHtoDAsync_v2",
        "cuEventElapsedTime",
    ] {
        assert!(
            linked.contains(anchor),
            "{anchor} is not among the linked entry points (is the test binary stripped?): \
             {linked:?}"
        );
    }
    // SAFETY: the driver library is loaded already (the engines above ran on it); culib only
    // returns cudarc's handle to it.
    let library = unsafe { cudarc::driver::sys::culib() };
    let missing: Vec<&String> = linked
        .iter()
        .filter(|name| {
            // SAFETY: the symbol is only looked up, never called or dereferenced.
            unsafe { library.get::<unsafe extern "C" fn()>(name.as_bytes()) }.is_err()
        })
        .collect();
    assert!(
        missing.is_empty(),
        "{driver} lacks driver entry points the engine links: {missing:?} \
         (add them to kernels/emulate/cuda-standin.cpp)"
    );
}
