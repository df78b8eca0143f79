//! PARAES_NO_GPU makes the engine report "disabled" even on a GPU machine (its own test
//! binary: it sets an environment variable).

use paraes_gpu::{probe, GpuEngine, GpuError, GpuOptions};

#[test]
fn paraes_no_gpu_disables_the_engine() {
    std::env::set_var("PARAES_NO_GPU", "1");
    assert_eq!(probe().unwrap_err(), GpuError::Disabled);
    let error = GpuEngine::new(GpuOptions::default()).err().unwrap();
    assert_eq!(error, GpuError::Disabled);
    assert!(error.is_unavailable());
    // Says what to do, in the library's words: no command-line flag (the binary adds those).
    let message = error.to_string();
    assert!(message.contains("unset it"), "{message}");
    assert!(!message.contains("--"), "names a flag: {message}");
}
