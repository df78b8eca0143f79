//! Shared harness of the hostile-input checks: the decrypt paths that `paraes dec` takes, run on
//! arbitrary bytes with a fixed key, used alike by the cargo-fuzz targets in `fuzz/`, the corpus
//! replay test (`tests/fuzz_corpus.rs`) and the property tests (`tests/hostile.rs`). Not part
//! of the stable API.

use crate::container::{Argon2Params, ContainerKeys, Header, KeySource};
use crate::cpu::CpuEngine;
use crate::engine::{Direction, Mode};
use crate::key::{Key, KeySize};
use crate::pipeline::{self, StreamSpec};

/// The fixed key material: a container of key size `n` is keyed with its first `n` bytes.
pub const FIXED_KEY: [u8; 32] = *b"paraes fuzzing key, 32 bytes ok!";
/// The passphrase of the passphrase-header seeds.
pub const FIXED_PASSPHRASE: &[u8] = b"paraes fuzzing passphrase";
/// Chunk size of the raw-stream path (the smallest a container may declare, so short inputs
/// still span several chunks).
pub const RAW_CHUNK_SIZE: usize = crate::container::MIN_CHUNK_SIZE;
/// Argon2id settings cheap enough to run on every fuzz input; headers asking for more are
/// keyed with [`FIXED_KEY`] instead (their limits are checked by `Header::read`).
pub const CHEAP_ARGON2_MEMORY_KIB: u32 = 64;
/// Most Argon2id passes run per fuzz input (see [`CHEAP_ARGON2_MEMORY_KIB`]).
pub const CHEAP_ARGON2_ITERATIONS: u32 = 1;

/// The fixed key of `size`.
pub fn fixed_key(size: KeySize) -> Key {
    Key::new(&FIXED_KEY[..size.bytes()]).expect("16, 24 or 32 bytes")
}

/// Cheap Argon2id parameters with a fixed salt, for passphrase seeds.
pub fn cheap_argon2_params() -> Argon2Params {
    Argon2Params {
        salt: *b"paraes fuzz salt",
        memory_kib: CHEAP_ARGON2_MEMORY_KIB,
        iterations: CHEAP_ARGON2_ITERATIONS,
        lanes: 1,
    }
}

/// The key `paraes dec` would use for `header`: the fixed key, or the fixed passphrase through
/// Argon2id when the header's parameters are cheap enough to run per input.
fn key_for(header: &Header) -> Result<Key, String> {
    match header.key_source {
        KeySource::Passphrase(params)
            if params.memory_kib <= CHEAP_ARGON2_MEMORY_KIB
                && params.iterations <= CHEAP_ARGON2_ITERATIONS =>
        {
            params
                .derive_key(FIXED_PASSPHRASE, header.key_size)
                .map_err(|e| e.to_string())
        }
        _ => Ok(fixed_key(header.key_size)),
    }
}

/// Seals `plain` into a container keyed as [`decrypt_container`] expects (`argon2`: a
/// passphrase header with those parameters, keyed as [`key_for`] does).
pub fn seal_container(
    mode: Mode,
    key_size: KeySize,
    chunk_size: usize,
    argon2: Option<Argon2Params>,
    plain: &[u8],
) -> Vec<u8> {
    let key_source = argon2.map_or(KeySource::RawKey, KeySource::Passphrase);
    let header = Header::new(mode, key_size, chunk_size, key_source).expect("valid header");
    let key = key_for(&header).expect("cheap Argon2id parameters");
    let keys = ContainerKeys::derive(&key);
    let (mut out, auth) = header.seal(&keys);
    let engine = CpuEngine::new(Some(1)).expect("one thread");
    let spec = StreamSpec::for_container(&engine, &header, &keys, &auth, Direction::Encrypt);
    pipeline::run(&spec, &mut &plain[..], &mut out, &|_| {}).expect("encryption into memory");
    out
}

/// Parses `data` as a container header only. Must never panic.
pub fn parse_header(data: &[u8]) {
    if let Ok(unverified) = Header::read(&mut &data[..]) {
        let header = unverified.header;
        assert!(
            header.encoded_len() <= data.len(),
            "header longer than its input"
        );
        assert!(header.chunk_size <= crate::container::MAX_CHUNK_SIZE);
    }
}

/// Decrypts `data` as a container the way `paraes dec` does (header, key, header tag, chunks)
/// and returns the plaintext or the error text. Must never panic or hang, and allocates at
/// most [`pipeline::BUFFERS`] buffers of the header's chunk size plus a tag.
pub fn decrypt_container(data: &[u8]) -> Result<Vec<u8>, String> {
    let mut output = Vec::new();
    decrypt_container_into(data, &mut output)?;
    Ok(output)
}

/// [`decrypt_container`] into `output`, which keeps what the decryptor released even when it
/// fails. Checks that a failed decryption released only whole chunks (every chunk but the last
/// is whole, so a damaged last chunk or anything after the damage never comes out).
pub fn decrypt_container_into(data: &[u8], output: &mut Vec<u8>) -> Result<(), String> {
    output.clear();
    let mut input = data;
    let unverified = Header::read(&mut input).map_err(|e| e.to_string())?;
    let header = unverified.header;
    let key = key_for(&header)?;
    let keys = ContainerKeys::derive(&key);
    let auth = unverified.verify(&keys).map_err(|e| e.to_string())?;
    let engine = CpuEngine::new(Some(1)).map_err(|e| e.to_string())?;
    let spec = StreamSpec::for_container(&engine, &header, &keys, &auth, Direction::Decrypt);
    match pipeline::run(&spec, &mut input, output, &|_| {}) {
        Ok(written) => {
            assert_eq!(written, output.len() as u64);
            Ok(())
        }
        Err(e) => {
            assert!(
                output.len().is_multiple_of(header.chunk_size),
                "a failed decryption released {} bytes: not whole verified chunks",
                output.len()
            );
            Err(e.to_string())
        }
    }
}

/// Decrypts `data` as a raw stream (no header, no tags) in `mode` with the fixed 128-bit key,
/// ECB with PKCS#7 padding as `paraes dec --raw --mode ecb` does. Must never panic or hang.
pub fn decrypt_raw(mode: Mode, data: &[u8]) -> Result<Vec<u8>, String> {
    let keys = ContainerKeys::derive(&fixed_key(KeySize::Aes128));
    let engine = CpuEngine::new(Some(1)).map_err(|e| e.to_string())?;
    let spec = StreamSpec {
        engine: &engine,
        mode,
        direction: Direction::Decrypt,
        key: keys.aes(),
        iv: FIXED_KEY[16..].try_into().expect("16 bytes"),
        chunk_size: RAW_CHUNK_SIZE,
        padding: true,
        auth: None,
    };
    let mut output = Vec::new();
    let result = pipeline::run(&spec, &mut &data[..], &mut output, &|_| {});
    match (mode, result) {
        (Mode::Ctr, Ok(_)) => {
            assert_eq!(output.len(), data.len(), "CTR keeps the length");
            Ok(output)
        }
        (_, Ok(_)) => Ok(output),
        (_, Err(e)) => Err(e.to_string()),
    }
}

/// Everything at once: header parsing, container decryption and both raw decryptions of `data`.
/// The fuzz target and the corpus replay test call this.
pub fn all_paths(data: &[u8]) {
    parse_header(data);
    let _ = decrypt_container(data);
    let _ = decrypt_raw(Mode::Ctr, data);
    let _ = decrypt_raw(Mode::Ecb, data);
}
