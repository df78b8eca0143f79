//! Fuzz target: arbitrary bytes through `Header::read` alone. The logic is
//! `paraes_core::fuzzing`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    paraes_core::fuzzing::parse_header(data);
});
