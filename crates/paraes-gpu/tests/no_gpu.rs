//! Where there is no usable GPU (this project's build machines), the engine reports it in
//! one clean line and nothing panics; where there is one, it starts.

use std::io::Write;

use paraes_core::EngineError;
use paraes_gpu::{probe, CtrVariant, GpuEngine, GpuError, GpuOptions};

#[test]
fn new_fails_cleanly_without_a_gpu() {
    match probe() {
        Ok(info) => {
            eprintln!("a GPU is present ({info}): checking that the engine starts instead");
            GpuEngine::new(GpuOptions::default()).expect("engine starts where probe succeeds");
        }
        Err(probe_error) => {
            assert!(probe_error.is_unavailable(), "{probe_error}");
            let error = GpuEngine::new(GpuOptions::default())
                .err()
                .expect("no engine without a GPU");
            let message = error.to_string();
            let _ = writeln!(std::io::stderr(), "GpuEngine::new without a GPU: {message}");
            assert!(
                !message.is_empty() && !message.contains('\n'),
                "one line: {message:?}"
            );
            // What to do, in the library's words: no command-line flag (the binary adds those).
            assert!(
                message.contains("install")
                    || message.contains("nvidia-smi")
                    || message.contains("unset"),
                "says what to do: {message}"
            );
            assert!(!message.contains("--"), "names a flag: {message}");
            assert!(matches!(
                EngineError::from(error),
                EngineError::Unavailable(_)
            ));
            // Asking twice gives the same answer (the driver search is cached, not re-panicking).
            assert_eq!(probe().unwrap_err(), probe_error);
        }
    }
}

#[test]
fn bad_options_are_rejected_before_touching_the_driver() {
    for options in [
        GpuOptions {
            streams: 0,
            ..GpuOptions::default()
        },
        GpuOptions {
            threads_per_block: 100,
            ..GpuOptions::default()
        },
        GpuOptions {
            threads_per_block: 1024,
            ..GpuOptions::default()
        },
        GpuOptions {
            min_piece: 1 << 30,
            ..GpuOptions::default()
        },
        GpuOptions {
            host_threads: Some(0),
            ..GpuOptions::default()
        },
    ] {
        assert!(matches!(
            GpuEngine::new(options),
            Err(GpuError::BadOption(_))
        ));
    }
}

#[test]
fn ctr_variant_names_round_trip() {
    for v in CtrVariant::ALL {
        assert_eq!(v.name().parse::<CtrVariant>().unwrap(), v);
        assert_eq!(v.to_string(), v.name());
    }
    assert_eq!(
        "KEYSTREAM".parse::<CtrVariant>().unwrap(),
        CtrVariant::Keystream
    );
    assert!("bogus"
        .parse::<CtrVariant>()
        .unwrap_err()
        .contains("auto, fused or keystream"));
    assert_eq!(GpuOptions::default().ctr_variant, CtrVariant::Auto);
}
