//! Key material of the container: the per-file data key, the keys derived from it (body AES key,
//! header MAC key, chunk MAC keys), Argon2id parameters, and the chunk authenticator.

use std::fmt;

use zeroize::{Zeroize, ZeroizeOnDrop, Zeroizing};

use super::ContainerError;
use crate::key::{ExpandedKey, Key, KeySize};
use crate::polyval::Polyval;

pub use crate::chunk_tag::{Authenticator, TAG_LEN};
/// Bytes in a file (data) key: always 256 bits, whatever the body's AES key size.
pub const FILE_KEY_LEN: usize = 32;

/// Largest Argon2id memory a container may ask for, in KiB (1 GiB), whatever the cost cap.
pub const MAX_ARGON2_MEMORY_KIB: u32 = 1 << 20;
/// Most Argon2id passes a container may ask for.
pub const MAX_ARGON2_ITERATIONS: u32 = 64;
/// Most Argon2id lanes a container may ask for.
pub const MAX_ARGON2_LANES: u32 = 64;
/// The Argon2id memory paraes writes, in KiB (64 MiB, RFC 9106's second recommendation).
pub const DEFAULT_ARGON2_MEMORY_KIB: u32 = 64 << 10;
/// The Argon2id passes paraes writes.
pub const DEFAULT_ARGON2_ITERATIONS: u32 = 3;
/// The Argon2id lanes paraes writes.
pub const DEFAULT_ARGON2_LANES: u32 = 4;
/// The default cap on a header's Argon2id cost, memory x passes in MiB: 16 x the default
/// (64 MiB x 3 passes).
pub const DEFAULT_MAX_KDF_MIB: u64 =
    16 * (DEFAULT_ARGON2_MEMORY_KIB as u64 >> 10) * DEFAULT_ARGON2_ITERATIONS as u64;

/// Fills `buf` from the operating system's random generator.
pub fn random_bytes(buf: &mut [u8]) -> Result<(), ContainerError> {
    getrandom::fill(buf).map_err(|e| ContainerError::Random(e.to_string()))
}

/// Argon2id parameters of a passphrase.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Argon2Params {
    /// Random salt, fresh for every container.
    pub salt: [u8; 16],
    /// Memory in KiB.
    pub memory_kib: u32,
    /// Passes over memory.
    pub iterations: u32,
    /// Parallel lanes.
    pub lanes: u32,
}

impl Argon2Params {
    /// RFC 9106's second recommended setting (64 MiB, 3 passes, 4 lanes) with a fresh salt.
    pub fn recommended() -> Result<Self, ContainerError> {
        let mut salt = [0u8; 16];
        random_bytes(&mut salt)?;
        Ok(Argon2Params {
            salt,
            memory_kib: DEFAULT_ARGON2_MEMORY_KIB,
            iterations: DEFAULT_ARGON2_ITERATIONS,
            lanes: DEFAULT_ARGON2_LANES,
        })
    }

    /// The cost a reader weighs against its cap: memory in MiB times passes (rounded up).
    pub fn cost_mib(&self) -> u64 {
        u64::from(self.memory_kib).div_ceil(1024) * u64::from(self.iterations)
    }

    /// Refuses parameters outside the documented limits before anything is allocated.
    pub(crate) fn check(&self) -> Result<(), ContainerError> {
        let bad = |what: String| Err(ContainerError::BadHeader(what));
        if !(1..=MAX_ARGON2_LANES).contains(&self.lanes) {
            return bad(format!(
                "Argon2id lanes {} (allowed 1..={MAX_ARGON2_LANES})",
                self.lanes
            ));
        }
        if !(1..=MAX_ARGON2_ITERATIONS).contains(&self.iterations) {
            return bad(format!(
                "Argon2id passes {} (allowed 1..={MAX_ARGON2_ITERATIONS})",
                self.iterations
            ));
        }
        if self.memory_kib < 8 * self.lanes || self.memory_kib > MAX_ARGON2_MEMORY_KIB {
            return bad(format!(
                "Argon2id memory {} KiB (allowed 8 KiB per lane ..= {MAX_ARGON2_MEMORY_KIB} KiB)",
                self.memory_kib
            ));
        }
        Ok(())
    }

    /// Fills `out` with Argon2id(`passphrase`, salt, parameters).
    pub(crate) fn derive_into(
        &self,
        passphrase: &[u8],
        out: &mut [u8],
    ) -> Result<(), ContainerError> {
        self.check()?;
        let params = argon2::Params::new(
            self.memory_kib,
            self.iterations,
            self.lanes,
            Some(out.len()),
        )
        .map_err(|e| ContainerError::Kdf(e.to_string()))?;
        let argon =
            argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params);
        argon
            .hash_password_into(passphrase, &self.salt, out)
            .map_err(|e| ContainerError::Kdf(e.to_string()))
    }

    /// Derives a key of `size` from `passphrase` (format v1's passphrase key).
    pub fn derive_key(&self, passphrase: &[u8], size: KeySize) -> Result<Key, ContainerError> {
        let mut out = Zeroizing::new([0u8; 32]);
        self.derive_into(passphrase, &mut out[..size.bytes()])?;
        Key::new(&out[..size.bytes()]).map_err(|e| ContainerError::Kdf(e.to_string()))
    }

    pub(crate) fn encode(&self) -> [u8; 28] {
        let mut out = [0u8; 28];
        out[..16].copy_from_slice(&self.salt);
        out[16..20].copy_from_slice(&self.memory_kib.to_be_bytes());
        out[20..24].copy_from_slice(&self.iterations.to_be_bytes());
        out[24..28].copy_from_slice(&self.lanes.to_be_bytes());
        out
    }

    pub(crate) fn decode(bytes: &[u8; 28]) -> Self {
        let word = |i: usize| u32::from_be_bytes(bytes[i..i + 4].try_into().expect("4 bytes"));
        Argon2Params {
            salt: bytes[..16].try_into().expect("16 bytes"),
            memory_kib: word(16),
            iterations: word(20),
            lanes: word(24),
        }
    }
}

/// The secret a container opens with: format v2's random 256-bit file key D (which keys
/// nothing itself: every key of the file is derived from it), or format v1's user key K.
/// Zeroized on drop; Debug never shows it. Hand it to another process of the same job (an MPI
/// rank) instead of the user's key.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct FileSecret(Vec<u8>);

impl FileSecret {
    /// A fresh random v2 file key.
    pub(crate) fn random() -> Result<Self, ContainerError> {
        let mut bytes = vec![0u8; FILE_KEY_LEN];
        random_bytes(&mut bytes)?;
        Ok(FileSecret(bytes))
    }

    /// The secret from its bytes (as [`FileSecret::as_bytes`] gave them).
    pub fn from_bytes(bytes: &[u8]) -> Self {
        FileSecret(bytes.to_vec())
    }

    /// The secret's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for FileSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FileSecret(<redacted>)")
    }
}

/// The keys a stream of a container runs with: the body's AES key and the chunk authenticator.
pub(crate) struct StreamKeys {
    pub(crate) body: Key,
    pub(crate) expanded: ExpandedKey,
    pub(crate) auth: Authenticator,
}

impl StreamKeys {
    /// Keys from the body key and the 48 bytes of chunk MAC key material (POLYVAL key `H`,
    /// then the 32-byte tag-encryption key).
    pub(crate) fn new(body: Key, chunk_material: &[u8; 48]) -> Self {
        let h: &[u8; 16] = chunk_material[..16].try_into().expect("16 bytes");
        let tag_key = Key::new(&chunk_material[16..])
            .expect("32-byte key")
            .expand();
        StreamKeys {
            expanded: body.expand(),
            body,
            auth: Authenticator::new(Polyval::new(h), tag_key),
        }
    }
}

/// BLAKE3 in key-derivation mode over the concatenation of `parts`, filling `out`. The
/// hasher, which holds key material in its state, is wiped afterwards.
pub(crate) fn derive(context: &str, parts: &[&[u8]], out: &mut [u8]) {
    let mut kdf = blake3::Hasher::new_derive_key(context);
    for part in parts {
        kdf.update(part);
    }
    kdf.finalize_xof().fill(out);
    kdf.zeroize();
}
