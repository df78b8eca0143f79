//! PARAES_GPU_* environment variables override the engine's options (so the `paraes` tool
//! can A/B the settings without a flag for each); bad values are refused before the driver
//! is touched. Its own test binary: it sets environment variables.

use paraes_gpu::{
    GpuEngine, GpuError, GpuOptions, ImageChoice, KernelVariant, SyncMode, ENV_OVERRIDES,
};

#[test]
fn overrides_apply_and_bad_values_are_refused() {
    for (name, _) in ENV_OVERRIDES {
        std::env::remove_var(name);
    }
    assert_eq!(
        GpuOptions::default().with_env().unwrap(),
        GpuOptions::default()
    );

    std::env::set_var("PARAES_GPU_KERNEL", "pair-r1");
    std::env::set_var("PARAES_GPU_SYNC", "blocking");
    std::env::set_var("PARAES_GPU_IMAGE", "ptx");
    std::env::set_var("PARAES_GPU_STREAMS", "4");
    std::env::set_var("PARAES_GPU_PIECE", "65536");
    std::env::set_var("PARAES_GPU_THREADS", "512");
    let o = GpuOptions::default().with_env().unwrap();
    assert_eq!(o.kernel_variant, KernelVariant::PairR1);
    assert_eq!(o.sync, SyncMode::Blocking);
    assert_eq!(o.image, ImageChoice::Ptx);
    assert_eq!(o.streams, 4);
    assert_eq!(o.max_piece, 65536);
    assert!(o.min_piece <= o.max_piece);
    assert_eq!(o.threads_per_block, 512);

    // lb5 allows 256 threads at most: refused by the option check, before any driver call.
    std::env::set_var("PARAES_GPU_KERNEL", "lb5");
    assert!(matches!(
        GpuEngine::new(GpuOptions::default()),
        Err(GpuError::BadOption(_))
    ));

    for (name, bad) in [
        ("PARAES_GPU_KERNEL", "fast"),
        ("PARAES_GPU_SYNC", "sometimes"),
        ("PARAES_GPU_IMAGE", "sass"),
        ("PARAES_GPU_STREAMS", "many"),
        ("PARAES_GPU_PIECE", "-1"),
        ("PARAES_GPU_THREADS", "1.5"),
    ] {
        let old = std::env::var(name).unwrap();
        std::env::set_var(name, bad);
        let error = GpuEngine::new(GpuOptions::default()).err().unwrap();
        assert!(matches!(error, GpuError::BadOption(_)), "{name}: {error}");
        assert!(error.to_string().contains(name), "{error}");
        std::env::set_var(name, old);
    }
}
