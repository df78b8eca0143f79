//! The environment switch that forces the portable constant-time path (its own test binary, so
//! setting the variable cannot race with other tests).

use paraes_core::aes::FORCE_PORTABLE_ENV;
use paraes_core::{AesImpl, CpuEngine};

#[test]
fn env_var_forces_portable_path() {
    std::env::set_var(FORCE_PORTABLE_ENV, "1");
    assert_eq!(AesImpl::detect(), AesImpl::Portable);
    let engine = CpuEngine::new(Some(1)).unwrap();
    assert_eq!(engine.aes_impl(), AesImpl::Portable);
    std::env::set_var(FORCE_PORTABLE_ENV, "0");
    assert_eq!(AesImpl::detect(), AesImpl::fastest());
}
