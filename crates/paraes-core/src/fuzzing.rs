//! Shared harness of the hostile-input checks: the decrypt paths that `paraes dec` takes, run on
//! arbitrary bytes with a fixed key, used alike by the cargo-fuzz targets in `fuzz/`, the corpus
//! replay test (`tests/fuzz_corpus.rs`) and the property tests (`tests/hostile.rs`). Not part
//! of the stable API.

use crate::container::{
    self, Argon2Params, BodyAccess, Identity, Recipient, SecretIdentity, Unlock, UnverifiedHeader,
};
use crate::cpu::CpuEngine;
use crate::engine::{Direction, Mode};
use crate::key::{Key, KeySize};
use crate::pipeline::{self, StreamSpec, Tags};

/// The fixed key material: a container of key size `n` is keyed with its first `n` bytes.
pub const FIXED_KEY: [u8; 32] = *b"paraes fuzzing key, 32 bytes ok!";
/// The passphrase of the passphrase-header seeds.
pub const FIXED_PASSPHRASE: &[u8] = b"paraes fuzzing passphrase";
/// The X25519 identity of the public-key seeds (a published test key).
pub const FIXED_X25519_IDENTITY: &str =
    "PARAES-SECRET-KEY-1WPSHYCT9WVSXVAT60F5KUEEQ0QER2DF38YSXJER9DE6XJAREYYSS2CYAVC";
/// The hybrid identity of the public-key seeds (a published test key).
pub const FIXED_HYBRID_IDENTITY: &str =
    "PARAES-PQ-SECRET-KEY-1WPSHYCT9WVSXVAT60F5KUEEQDPUKYUNFVSSXJER9DE6XJAREYYSSYDLZH7";
/// Chunk size of the raw-stream path (the smallest a container may declare, so short inputs
/// still span several chunks).
pub const RAW_CHUNK_SIZE: usize = crate::container::MIN_CHUNK_SIZE;
/// Argon2id settings cheap enough to run on every fuzz input; headers asking for more are
/// refused by the cost cap of [`unlock`] (their limits are checked by the header reader).
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

fn fixed_identities() -> [SecretIdentity; 2] {
    [
        FIXED_X25519_IDENTITY.parse().expect("valid test identity"),
        FIXED_HYBRID_IDENTITY.parse().expect("valid test identity"),
    ]
}

/// What `paraes dec` would be given for a fuzz input: every fixed key size, the fixed
/// passphrase (Argon2id capped at the cheap parameters) and both fixed identities.
pub fn unlock() -> Unlock {
    let mut identities: Vec<Identity> = KeySize::ALL
        .iter()
        .map(|&size| Identity::Key(fixed_key(size)))
        .collect();
    identities.push(Identity::Passphrase(FIXED_PASSPHRASE.to_vec().into()));
    identities.extend(fixed_identities().into_iter().map(Identity::Secret));
    Unlock {
        identities,
        max_kdf_mib: 1,
        allow_unverified_slot: false,
    }
}

/// The recipient kinds a seed can be sealed for.
#[derive(Clone, Copy, Debug)]
pub enum SeedRecipient {
    /// The fixed key (of the container's key size).
    Key,
    /// The fixed passphrase with these Argon2id parameters.
    Passphrase(Argon2Params),
    /// The fixed X25519 identity.
    X25519,
    /// The fixed hybrid identity.
    Hybrid,
}

/// Seals `plain` into a format v2 container (as paraes wrote before v3) that
/// [`decrypt_container`] opens, for `recipients`.
pub fn seal_container(
    mode: Mode,
    key_size: KeySize,
    chunk_size: usize,
    recipients: &[SeedRecipient],
    plain: &[u8],
) -> Vec<u8> {
    let params = container::BodyParams {
        mode,
        key_size,
        chunk_size,
    };
    let sealed = container::seal_v2(params, &seed_recipients(key_size, recipients));
    encrypt_body(sealed.expect("valid container"), plain)
}

/// Seals `plain` into a format v3 container (what paraes writes: a Cobblestone body of
/// `key_size`, 128 or 256 bits) that [`decrypt_container`] opens, for `recipients`.
pub fn seal_v3_container(key_size: KeySize, recipients: &[SeedRecipient], plain: &[u8]) -> Vec<u8> {
    let sealed = container::seal(key_size, &seed_recipients(key_size, recipients));
    encrypt_body(sealed.expect("valid container"), plain)
}

/// The header bytes of a sealed container followed by `plain` encrypted under it.
fn encrypt_body((mut out, opened): (Vec<u8>, container::Opened), plain: &[u8]) -> Vec<u8> {
    let engine = CpuEngine::new(Some(1)).expect("one thread");
    let spec = opened.stream_spec(&engine, Direction::Encrypt);
    pipeline::run(&spec, &mut &plain[..], &mut out, &|_| {}).expect("encryption into memory");
    out
}

/// The recipients a seed names.
fn seed_recipients(key_size: KeySize, recipients: &[SeedRecipient]) -> Vec<Recipient> {
    let [x25519, hybrid] = fixed_identities();
    recipients
        .iter()
        .map(|r| match r {
            SeedRecipient::Key => Recipient::Key(fixed_key(key_size)),
            SeedRecipient::Passphrase(params) => {
                Recipient::Passphrase(FIXED_PASSPHRASE.to_vec().into(), *params)
            }
            SeedRecipient::X25519 => Recipient::Public(x25519.recipient()),
            SeedRecipient::Hybrid => Recipient::Public(hybrid.recipient()),
        })
        .collect()
}

/// Parses `data` as a container header only. Must never panic.
pub fn parse_header(data: &[u8]) {
    if let Ok(unverified) = UnverifiedHeader::read(&mut &data[..]) {
        let info = unverified.info();
        assert!(
            info.header_len <= data.len(),
            "header longer than its input"
        );
        assert!(info.params.chunk_size <= crate::container::MAX_CHUNK_SIZE);
    }
}

/// Decrypts `data` as a container the way `paraes dec` does (header, stanzas, header tag,
/// chunks) and returns the plaintext or the error text. Must never panic or hang, and allocates
/// at most two stanza slots and [`pipeline::BUFFERS`] buffers of the chunk size plus a tag.
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
    let unverified = UnverifiedHeader::read(&mut input).map_err(|e| e.to_string())?;
    let opened = unverified
        .open(&unlock(), BodyAccess::Bytes(data))
        .map_err(|e| e.to_string())?;
    let chunk_size = opened.info().params.chunk_size;
    let engine = CpuEngine::new(Some(1)).map_err(|e| e.to_string())?;
    let spec = opened.stream_spec(&engine, Direction::Decrypt);
    match pipeline::run(&spec, &mut input, output, &|_| {}) {
        Ok(written) => {
            assert_eq!(written, output.len() as u64);
            Ok(())
        }
        Err(e) => {
            assert!(
                output.len().is_multiple_of(chunk_size),
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
    let key = fixed_key(KeySize::Aes128).expand();
    let engine = CpuEngine::new(Some(1)).map_err(|e| e.to_string())?;
    let spec = StreamSpec {
        engine: &engine,
        mode,
        direction: Direction::Decrypt,
        key: &key,
        counter: FIXED_KEY[16..].try_into().expect("16 bytes"),
        chunk_size: RAW_CHUNK_SIZE,
        padding: true,
        tags: Tags::None,
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

/// `container` with stanza slot `position` (0 or 1) replaced by a valid slot of `generation`
/// that wraps a fresh file key of the forger's own for `recipients` (the planted slots of
/// issue 25: one for the victim's public recipient, or a second recipient's slot of a file
/// that shows two recipients different content). Panics on a container that is not v2 or v3.
pub fn plant_slot(
    container: &[u8],
    position: usize,
    recipients: &[Recipient],
    generation: u64,
) -> Vec<u8> {
    crate::container::plant_slot(container, position, recipients, generation)
        .expect("a v2 or v3 container to plant a slot in")
}
