//! Runtime detection agrees with what the CPU says it has, so a hardware path can never be
//! silently left out of the test suite on a machine that has it.

use paraes_core::AesImpl;

#[test]
fn detected_implementations_match_cpu_flags() {
    let available = AesImpl::available();
    println!("AES implementations tested on this CPU: {available:?}");
    assert!(available.contains(&AesImpl::Portable));
    let Ok(cpuinfo) = std::fs::read_to_string("/proc/cpuinfo") else {
        // CI runs on Linux, which has /proc/cpuinfo: there a missing one fails the test.
        assert!(
            std::env::var_os("CI").is_none(),
            "no /proc/cpuinfo under CI: detection cannot be checked against the CPU's flags"
        );
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "\n*** no /proc/cpuinfo: only checked that the portable path is present ***\n"
        );
        return;
    };
    let flags: Vec<&str> = cpuinfo
        .lines()
        .find(|l| l.starts_with("flags"))
        .map(|l| l.split_whitespace().collect())
        .unwrap_or_default();
    let has = |f: &str| flags.contains(&f);
    let expected = [
        (AesImpl::AesNi, has("aes") && has("ssse3")),
        (AesImpl::Vaes256, has("aes") && has("vaes") && has("avx2")),
        (
            AesImpl::Vaes512,
            has("aes") && has("vaes") && has("avx512f") && has("avx512bw"),
        ),
    ];
    for (imp, cpu_has_it) in expected {
        if cfg!(target_arch = "x86_64") {
            assert_eq!(available.contains(&imp), cpu_has_it, "{imp}");
        }
    }
}
