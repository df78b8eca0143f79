//! Fuzz target: arbitrary bytes as a raw CTR stream and a raw padded ECB stream
//! (`paraes dec --raw`). The logic is `paraes_core::fuzzing`.
#![no_main]

use paraes_core::Mode;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = paraes_core::fuzzing::decrypt_raw(Mode::Ctr, data);
    let _ = paraes_core::fuzzing::decrypt_raw(Mode::Ecb, data);
});
