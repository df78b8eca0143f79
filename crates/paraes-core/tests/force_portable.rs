//! The environment switch that forces the portable constant-time path (its own test binary, so
//! setting the variable cannot race with other tests).

use paraes_core::aes::FORCE_PORTABLE_ENV;
use paraes_core::{CpuEngine, Implementation};

#[test]
fn env_var_forces_portable_path() {
    std::env::set_var(FORCE_PORTABLE_ENV, "1");
    assert_eq!(Implementation::detect(), Implementation::Portable);
    let engine = CpuEngine::new(Some(1)).unwrap();
    assert_eq!(engine.implementation(), Implementation::Portable);
    std::env::set_var(FORCE_PORTABLE_ENV, "0");
    assert_eq!(Implementation::detect(), Implementation::fastest());
}
