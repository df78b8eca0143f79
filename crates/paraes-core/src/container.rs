//! The paraes container: a versioned header authenticated with keyed BLAKE3, and STREAM-style
//! per-chunk tags (encrypt-then-MAC with POLYVAL-then-AES, as AES-GCM-SIV makes its tag). The
//! byte layout and the reasoning are in docs/FORMAT.md.

use std::fmt;
use std::io::Read;

use zeroize::{Zeroize, ZeroizeOnDrop, Zeroizing};

use crate::aes::Implementation;
use crate::engine::Mode;
use crate::key::{ExpandedKey, Key, KeySize};
use crate::polyval::Polyval;

/// First bytes of every container: a high-bit byte (catches 7-bit channels), the name, and a
/// newline (catches newline translation), as PNG does.
pub const MAGIC: [u8; 8] = *b"\x89PARAES\n";
/// The only format version this build writes and reads.
pub const VERSION: u8 = 1;
/// Bytes in a chunk tag.
pub const TAG_LEN: usize = 16;
/// Bytes in the header tag.
pub const HEADER_TAG_LEN: usize = 32;
/// Smallest chunk size a container may declare.
pub const MIN_CHUNK_SIZE: usize = 4 << 10;
/// Largest chunk size a container may declare: reading one chunk never allocates more.
pub const MAX_CHUNK_SIZE: usize = 64 << 20;
/// Largest Argon2id memory a container may ask for, in KiB (1 GiB).
pub const MAX_ARGON2_MEMORY_KIB: u32 = 1 << 20;
/// Most Argon2id passes a container may ask for.
pub const MAX_ARGON2_ITERATIONS: u32 = 64;
/// Most Argon2id lanes a container may ask for.
pub const MAX_ARGON2_LANES: u32 = 64;

/// BLAKE3 key-derivation context of the MAC key (domain separation from the AES key).
const MAC_KEY_CONTEXT: &str = "paraes 2026-11 container v1 authentication key";
/// BLAKE3 key-derivation context of a file's chunk-MAC keys (POLYVAL key and tag AES key).
const CHUNK_KEY_CONTEXT: &str = "paraes 2026-11 container v1 per-file chunk MAC keys";

const FIXED_LEN: usize = 32;
const ARGON2_LEN: usize = 28;

/// Why a container could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum ContainerError {
    /// The input does not start with the magic bytes.
    #[error("not a paraes container (no paraes header): decrypt raw streams with --raw")]
    NotAContainer,
    /// A newer or unknown format version.
    #[error("container format version {0} is not supported by this paraes (it reads version {VERSION}): upgrade paraes")]
    UnsupportedVersion(u8),
    /// A header field is invalid or asks for more than the documented limits.
    #[error("damaged or hostile container header: {0}")]
    BadHeader(String),
    /// The header ends early.
    #[error("the container is truncated inside its header")]
    TruncatedHeader,
    /// The header tag does not match: wrong key or passphrase, or a changed header.
    #[error("wrong key or passphrase, or the container header was changed")]
    WrongKeyOrDamagedHeader,
    /// Argon2id failed (e.g. out of memory).
    #[error("passphrase key derivation failed: {0}")]
    Kdf(String),
    /// The system random generator failed.
    #[error("the system random number generator failed: {0}")]
    Random(String),
    /// Reading the header failed (the I/O error is in the message, not also a `source`, so a
    /// report of the error chain gives the reason once).
    #[error("reading the container header failed: {0}")]
    Io(std::io::Error),
}

impl From<std::io::Error> for ContainerError {
    fn from(e: std::io::Error) -> Self {
        ContainerError::Io(e)
    }
}

/// Fills `buf` from the operating system's random generator.
pub fn random_bytes(buf: &mut [u8]) -> Result<(), ContainerError> {
    getrandom::fill(buf).map_err(|e| ContainerError::Random(e.to_string()))
}

/// Argon2id parameters of a passphrase-protected container.
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
            memory_kib: 64 << 10,
            iterations: 3,
            lanes: 4,
        })
    }

    /// Refuses parameters outside the documented limits before anything is allocated.
    fn check(&self) -> Result<(), ContainerError> {
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

    /// Derives a key of `size` from `passphrase`.
    pub fn derive_key(&self, passphrase: &[u8], size: KeySize) -> Result<Key, ContainerError> {
        self.check()?;
        let params = argon2::Params::new(
            self.memory_kib,
            self.iterations,
            self.lanes,
            Some(size.bytes()),
        )
        .map_err(|e| ContainerError::Kdf(e.to_string()))?;
        let argon =
            argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params);
        let mut out = Zeroizing::new([0u8; 32]);
        argon
            .hash_password_into(passphrase, &self.salt, &mut out[..size.bytes()])
            .map_err(|e| ContainerError::Kdf(e.to_string()))?;
        Key::new(&out[..size.bytes()]).map_err(|e| ContainerError::Kdf(e.to_string()))
    }
}

/// Where the key comes from.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum KeySource {
    /// A raw key (key file or `--key`).
    RawKey,
    /// A passphrase through Argon2id.
    Passphrase(Argon2Params),
}

/// The header fields of a container.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Header {
    /// Mode of the body.
    pub mode: Mode,
    /// AES key size.
    pub key_size: KeySize,
    /// Plaintext bytes per chunk (the last chunk may be shorter); a multiple of 16.
    pub chunk_size: usize,
    /// CTR's initial counter block; for ECB a random value that makes every file's tags unique.
    pub nonce: [u8; 16],
    /// How the key was made.
    pub key_source: KeySource,
}

impl Header {
    /// A header with a fresh random nonce.
    pub fn new(
        mode: Mode,
        key_size: KeySize,
        chunk_size: usize,
        key_source: KeySource,
    ) -> Result<Self, ContainerError> {
        let mut nonce = [0u8; 16];
        random_bytes(&mut nonce)?;
        let header = Header {
            mode,
            key_size,
            chunk_size,
            nonce,
            key_source,
        };
        header.check()?;
        Ok(header)
    }

    fn check(&self) -> Result<(), ContainerError> {
        if !(MIN_CHUNK_SIZE..=MAX_CHUNK_SIZE).contains(&self.chunk_size)
            || !self.chunk_size.is_multiple_of(16)
        {
            return Err(ContainerError::BadHeader(format!(
                "chunk size {} (allowed: a multiple of 16 from {MIN_CHUNK_SIZE} to {MAX_CHUNK_SIZE})",
                self.chunk_size
            )));
        }
        if let KeySource::Passphrase(params) = &self.key_source {
            params.check()?;
        }
        Ok(())
    }

    /// The header bytes that the header tag covers.
    fn encode_fields(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(FIXED_LEN + ARGON2_LEN);
        out.extend_from_slice(&MAGIC);
        out.push(VERSION);
        out.push(match self.mode {
            Mode::Ctr => 1,
            Mode::Ecb => 2,
        });
        out.push(self.key_size.bytes() as u8);
        out.push(match self.key_source {
            KeySource::RawKey => 0,
            KeySource::Passphrase(_) => 1,
        });
        out.extend_from_slice(&(self.chunk_size as u32).to_be_bytes());
        out.extend_from_slice(&self.nonce);
        if let KeySource::Passphrase(p) = &self.key_source {
            out.extend_from_slice(&p.salt);
            out.extend_from_slice(&p.memory_kib.to_be_bytes());
            out.extend_from_slice(&p.iterations.to_be_bytes());
            out.extend_from_slice(&p.lanes.to_be_bytes());
        }
        out
    }

    /// The complete header (fields and tag) and the authenticator for the body's chunks.
    pub fn seal(&self, keys: &ContainerKeys) -> (Vec<u8>, Authenticator) {
        let mut bytes = self.encode_fields();
        let tag = keys.header_tag(&bytes);
        bytes.extend_from_slice(&tag);
        (bytes, keys.authenticator(tag))
    }

    /// Reads and parses a header, refusing absurd values before allocating anything. The
    /// result is not yet authenticated: call [`UnverifiedHeader::verify`] with the key.
    pub fn read(input: &mut impl Read) -> Result<UnverifiedHeader, ContainerError> {
        let mut fixed = [0u8; FIXED_LEN];
        match read_header_bytes(input, &mut fixed[..MAGIC.len()]) {
            Err(ContainerError::TruncatedHeader) => return Err(ContainerError::NotAContainer),
            other => other?,
        }
        if fixed[..MAGIC.len()] != MAGIC {
            return Err(ContainerError::NotAContainer);
        }
        read_header_bytes(input, &mut fixed[MAGIC.len()..])?;
        if fixed[8] != VERSION {
            return Err(ContainerError::UnsupportedVersion(fixed[8]));
        }
        let bad = |what: String| ContainerError::BadHeader(what);
        let mode = match fixed[9] {
            1 => Mode::Ctr,
            2 => Mode::Ecb,
            other => return Err(bad(format!("unknown mode {other}"))),
        };
        let key_size = KeySize::from_len(usize::from(fixed[10]))
            .map_err(|_| bad(format!("key size {} bytes", fixed[10])))?;
        let chunk_size = u32::from_be_bytes(fixed[12..16].try_into().expect("4 bytes")) as usize;
        let nonce: [u8; 16] = fixed[16..32].try_into().expect("16 bytes");
        let key_source = match fixed[11] {
            0 => KeySource::RawKey,
            1 => {
                let mut kdf = [0u8; ARGON2_LEN];
                read_header_bytes(input, &mut kdf)?;
                let word = |i: usize| u32::from_be_bytes(kdf[i..i + 4].try_into().expect("4"));
                KeySource::Passphrase(Argon2Params {
                    salt: kdf[..16].try_into().expect("16 bytes"),
                    memory_kib: word(16),
                    iterations: word(20),
                    lanes: word(24),
                })
            }
            other => return Err(bad(format!("unknown key source {other}"))),
        };
        let header = Header {
            mode,
            key_size,
            chunk_size,
            nonce,
            key_source,
        };
        header.check()?;
        let mut tag = [0u8; HEADER_TAG_LEN];
        read_header_bytes(input, &mut tag)?;
        Ok(UnverifiedHeader { header, tag })
    }

    /// Length of the encoded header, tag included.
    pub fn encoded_len(&self) -> usize {
        self.encode_fields().len() + HEADER_TAG_LEN
    }
}

fn read_header_bytes(input: &mut impl Read, buf: &mut [u8]) -> Result<(), ContainerError> {
    input.read_exact(buf).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => ContainerError::TruncatedHeader,
        _ => ContainerError::Io(e),
    })
}

/// A parsed header whose tag has not been checked yet.
#[derive(Debug)]
pub struct UnverifiedHeader {
    /// The parsed fields (check the tag before trusting them beyond choosing how to derive keys).
    pub header: Header,
    tag: [u8; HEADER_TAG_LEN],
}

impl UnverifiedHeader {
    /// Checks the header tag with `keys` and returns the authenticator for the chunks.
    pub fn verify(&self, keys: &ContainerKeys) -> Result<Authenticator, ContainerError> {
        let expected = keys.header_tag(&self.header.encode_fields());
        // blake3::Hash compares in constant time.
        if blake3::Hash::from_bytes(expected) != blake3::Hash::from_bytes(self.tag) {
            return Err(ContainerError::WrongKeyOrDamagedHeader);
        }
        Ok(keys.authenticator(expected))
    }
}

/// The two keys of a container: the AES key (the user's key itself, so the body is the plain
/// ECB/CTR stream that OpenSSL can check) and a MAC key derived from it in a separate domain.
#[derive(Zeroize, ZeroizeOnDrop)]
pub struct ContainerKeys {
    #[zeroize(skip)]
    aes: ExpandedKey,
    mac: [u8; 32],
}

impl ContainerKeys {
    /// Derives the container keys from the user's key.
    pub fn derive(key: &Key) -> Self {
        ContainerKeys {
            aes: key.expand(),
            mac: blake3::derive_key(MAC_KEY_CONTEXT, key.as_bytes()),
        }
    }

    /// The expanded AES key.
    pub fn aes(&self) -> &ExpandedKey {
        &self.aes
    }

    fn header_tag(&self, fields: &[u8]) -> [u8; HEADER_TAG_LEN] {
        *blake3::keyed_hash(&self.mac, fields).as_bytes()
    }

    /// The chunk authenticator of the file whose header tag is `header_tag`: its POLYVAL key
    /// and tag-encryption key are derived from the MAC key and the header tag, so every file
    /// (every fresh nonce) has its own.
    fn authenticator(&self, header_tag: [u8; HEADER_TAG_LEN]) -> Authenticator {
        let mut material = Zeroizing::new([0u8; 48]);
        let mut kdf = blake3::Hasher::new_derive_key(CHUNK_KEY_CONTEXT);
        kdf.update(&self.mac);
        kdf.update(&header_tag);
        kdf.finalize_xof().fill(&mut material[..]);
        let h: &[u8; 16] = material[..16].try_into().expect("16 bytes");
        let tag_key = Key::new(&material[16..]).expect("32-byte key").expand();
        Authenticator {
            polyval: Polyval::new(h),
            tag_key,
            implementation: Implementation::detect(),
        }
    }
}

impl fmt::Debug for ContainerKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ContainerKeys {{ {:?}, mac: <redacted> }}", self.aes)
    }
}

/// Computes and checks chunk tags: `AES-256(K_tag, POLYVAL(H, ciphertext, length) xor N)` with
/// `N = index || last flag`, the tag construction of AES-GCM-SIV (RFC 8452) over the ciphertext.
/// Reordering, duplication, truncation and appending all change `N` or the hashed data.
#[derive(Clone)]
pub struct Authenticator {
    polyval: Polyval,
    tag_key: ExpandedKey,
    implementation: Implementation,
}

impl Authenticator {
    /// The tag of chunk `index` with `ciphertext`.
    pub fn tag(&self, index: u64, last: bool, ciphertext: &[u8]) -> [u8; TAG_LEN] {
        let mut trailer = [0u8; 16];
        trailer[..8].copy_from_slice(&(ciphertext.len() as u64 * 8).to_le_bytes());
        let mut block = self.polyval.hash(ciphertext, &trailer);
        for (b, n) in block.iter_mut().zip(index.to_le_bytes()) {
            *b ^= n;
        }
        block[8] ^= u8::from(last);
        self.implementation
            .encrypt_blocks(&self.tag_key, &mut block);
        block
    }

    /// Whether `tag` is the tag of chunk `index` with `ciphertext` (constant-time comparison).
    pub fn verify(&self, index: u64, last: bool, ciphertext: &[u8], tag: &[u8]) -> bool {
        let expected = self.tag(index, last, ciphertext);
        let difference = expected
            .iter()
            .zip(tag)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        tag.len() == TAG_LEN && std::hint::black_box(difference) == 0
    }
}

impl fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Authenticator { keys: <redacted> }")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw_header(mode: Mode) -> Header {
        Header::new(mode, KeySize::Aes128, 1 << 20, KeySource::RawKey).unwrap()
    }

    #[test]
    fn header_round_trips_and_verifies() {
        let key = Key::new(&[9u8; 16]).unwrap();
        let keys = ContainerKeys::derive(&key);
        for header in [
            raw_header(Mode::Ctr),
            raw_header(Mode::Ecb),
            Header::new(
                Mode::Ctr,
                KeySize::Aes256,
                4096,
                KeySource::Passphrase(Argon2Params::recommended().unwrap()),
            )
            .unwrap(),
        ] {
            let (bytes, auth) = header.seal(&keys);
            assert_eq!(bytes.len(), header.encoded_len());
            let parsed = Header::read(&mut &bytes[..]).unwrap();
            assert_eq!(parsed.header, header);
            let auth2 = parsed.verify(&keys).unwrap();
            assert_eq!(auth.tag(3, true, b"abc"), auth2.tag(3, true, b"abc"));
        }
    }

    #[test]
    fn wrong_key_is_detected_by_the_header_tag() {
        let header = raw_header(Mode::Ctr);
        let (bytes, _) = header.seal(&ContainerKeys::derive(&Key::new(&[1u8; 16]).unwrap()));
        let other = ContainerKeys::derive(&Key::new(&[2u8; 16]).unwrap());
        let parsed = Header::read(&mut &bytes[..]).unwrap();
        assert!(matches!(
            parsed.verify(&other),
            Err(ContainerError::WrongKeyOrDamagedHeader)
        ));
    }

    #[test]
    fn every_header_byte_flip_is_refused() {
        let keys = ContainerKeys::derive(&Key::new(&[1u8; 16]).unwrap());
        let (bytes, _) = raw_header(Mode::Ctr).seal(&keys);
        for i in 0..bytes.len() {
            for bit in 0..8 {
                let mut bad = bytes.clone();
                bad[i] ^= 1 << bit;
                let refused = Header::read(&mut &bad[..]).and_then(|h| h.verify(&keys));
                assert!(refused.is_err(), "flip of byte {i} bit {bit} accepted");
            }
        }
    }

    #[test]
    fn absurd_headers_are_refused_before_allocation() {
        let keys = ContainerKeys::derive(&Key::new(&[1u8; 16]).unwrap());
        let (good, _) = raw_header(Mode::Ctr).seal(&keys);
        let mut giant_chunk = good.clone();
        giant_chunk[12..16].copy_from_slice(&u32::MAX.to_be_bytes());
        let mut key_99 = good.clone();
        key_99[10] = 99;
        let mut mode_7 = good.clone();
        mode_7[9] = 7;
        for bad in [giant_chunk, key_99, mode_7] {
            assert!(matches!(
                Header::read(&mut &bad[..]),
                Err(ContainerError::BadHeader(_))
            ));
        }
        let mut huge_memory = Header::new(
            Mode::Ctr,
            KeySize::Aes256,
            4096,
            KeySource::Passphrase(Argon2Params::recommended().unwrap()),
        )
        .unwrap()
        .seal(&keys)
        .0;
        huge_memory[48..52].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(matches!(
            Header::read(&mut &huge_memory[..]),
            Err(ContainerError::BadHeader(_))
        ));
        assert!(matches!(
            Header::read(&mut &b"not a container at all, no"[..]),
            Err(ContainerError::NotAContainer)
        ));
        assert!(matches!(
            Header::read(&mut &good[..40]),
            Err(ContainerError::TruncatedHeader)
        ));
    }

    #[test]
    fn chunk_tags_bind_index_last_flag_data_and_file() {
        let keys = ContainerKeys::derive(&Key::new(&[1u8; 32]).unwrap());
        let (_, auth) = raw_header(Mode::Ctr).seal(&keys);
        let tag = auth.tag(5, false, b"data");
        assert!(auth.verify(5, false, b"data", &tag));
        assert!(!auth.verify(6, false, b"data", &tag));
        assert!(!auth.verify(5, true, b"data", &tag));
        assert!(!auth.verify(5, false, b"dbta", &tag));
        assert!(
            !auth.verify(5, false, b"data\0", &tag),
            "zero padding is not free"
        );
        assert!(!auth.verify(5, false, b"data", &tag[..15]));
        let (_, other_file) = raw_header(Mode::Ctr).seal(&keys);
        assert!(
            !other_file.verify(5, false, b"data", &tag),
            "tags are per file"
        );
        let big = vec![7u8; 3 << 20];
        let big_tag = auth.tag(0, true, &big);
        let mut changed = big.clone();
        changed[(3 << 20) - 1] ^= 0x80;
        assert!(!auth.verify(0, true, &changed, &big_tag));
    }

    #[test]
    fn argon2_derivation_is_deterministic_per_salt() {
        let params = Argon2Params {
            salt: [3; 16],
            memory_kib: 64,
            iterations: 1,
            lanes: 1,
        };
        let a = params.derive_key(b"pass", KeySize::Aes192).unwrap();
        let b = params.derive_key(b"pass", KeySize::Aes192).unwrap();
        let c = params.derive_key(b"pasS", KeySize::Aes192).unwrap();
        assert_eq!(a.as_bytes(), b.as_bytes());
        assert_ne!(a.as_bytes(), c.as_bytes());
        assert_eq!(a.as_bytes().len(), 24);
    }
}
