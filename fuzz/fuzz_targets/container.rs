//! Fuzz target: arbitrary bytes as a container through `paraes dec`'s path (header, fixed key,
//! header tag, chunk pipeline), plus header parsing. The logic is `paraes_core::fuzzing`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    paraes_core::fuzzing::parse_header(data);
    let _ = paraes_core::fuzzing::decrypt_container(data);
});
