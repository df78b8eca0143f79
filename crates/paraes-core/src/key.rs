//! Key material: raw AES keys and their FIPS-197 round keys, zeroized on drop and redacted in Debug.

use std::fmt;

use zeroize::{Zeroize, ZeroizeOnDrop, Zeroizing};

use crate::aes::sbox::sub_word;
use crate::gf256::xtime;

/// The three AES key sizes of FIPS-197.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeySize {
    /// 128-bit key, 10 rounds.
    Aes128,
    /// 192-bit key, 12 rounds.
    Aes192,
    /// 256-bit key, 14 rounds.
    Aes256,
}

impl KeySize {
    /// Every key size, smallest first.
    pub const ALL: [KeySize; 3] = [KeySize::Aes128, KeySize::Aes192, KeySize::Aes256];

    /// Key length in bytes (16, 24 or 32).
    pub const fn bytes(self) -> usize {
        match self {
            KeySize::Aes128 => 16,
            KeySize::Aes192 => 24,
            KeySize::Aes256 => 32,
        }
    }

    /// Key length in bits (128, 192 or 256).
    pub const fn bits(self) -> u32 {
        self.bytes() as u32 * 8
    }

    /// Number of rounds Nr (10, 12 or 14).
    pub const fn rounds(self) -> usize {
        self.bytes() / 4 + 6
    }

    /// The key size with `bits` bits, if AES has one.
    pub fn from_bits(bits: u32) -> Result<Self, KeyError> {
        match bits {
            128 => Ok(KeySize::Aes128),
            192 => Ok(KeySize::Aes192),
            256 => Ok(KeySize::Aes256),
            other => Err(KeyError::BadBits(other)),
        }
    }

    /// The key size whose keys are `len` bytes long, if AES has one.
    pub fn from_len(len: usize) -> Result<Self, KeyError> {
        match len {
            16 => Ok(KeySize::Aes128),
            24 => Ok(KeySize::Aes192),
            32 => Ok(KeySize::Aes256),
            other => Err(KeyError::BadLength(other)),
        }
    }
}

/// Why a key could not be made.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KeyError {
    /// The key is not 16, 24 or 32 bytes long.
    #[error("an AES key is 16, 24 or 32 bytes long, this one is {0} bytes")]
    BadLength(usize),
    /// The requested size is not 128, 192 or 256 bits.
    #[error("AES key sizes are 128, 192 or 256 bits, not {0}")]
    BadBits(u32),
    /// Key text that is neither raw key bytes nor hex digits of a key. The message tells
    /// nothing about what was given (it may be another secret).
    #[error(
        "not a key: a key is 32, 48 or 64 hex digits, or 16, 24 or 32 random bytes \
         (make one with `paraes keygen`)"
    )]
    NotAKey,
}

/// A raw AES key (16, 24 or 32 bytes). Zeroized on drop; Debug never shows the bytes.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct Key {
    bytes: [u8; 32],
    #[zeroize(skip)]
    size: KeySize,
}

impl Key {
    /// A key from its raw bytes; the length picks AES-128, -192 or -256.
    pub fn new(bytes: &[u8]) -> Result<Self, KeyError> {
        let size = KeySize::from_len(bytes.len())?;
        let mut key = Key {
            bytes: [0; 32],
            size,
        };
        key.bytes[..bytes.len()].copy_from_slice(bytes);
        Ok(key)
    }

    /// A key from the contents of a key file or a `--key` argument: 32, 48 or 64 hex digits
    /// (surrounding whitespace ignored), or else exactly 16, 24 or 32 raw bytes.
    pub fn parse(contents: &[u8]) -> Result<Self, KeyError> {
        let text = contents.trim_ascii();
        if matches!(text.len(), 32 | 48 | 64) && text.iter().all(u8::is_ascii_hexdigit) {
            let mut bytes = Zeroizing::new([0u8; 32]);
            for (out, pair) in bytes.iter_mut().zip(text.chunks_exact(2)) {
                *out = (hex_value(pair[0]) << 4) | hex_value(pair[1]);
            }
            return Key::new(&bytes[..text.len() / 2]);
        }
        Key::new(contents).map_err(|_| KeyError::NotAKey)
    }

    /// The key size.
    pub fn size(&self) -> KeySize {
        self.size
    }

    /// The raw key bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.size.bytes()]
    }

    /// Runs the FIPS-197 key expansion.
    pub fn expand(&self) -> ExpandedKey {
        ExpandedKey::new(self)
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key {{ bits: {}, bytes: <redacted> }}", self.size.bits())
    }
}

/// Most round keys any key size needs (AES-256: Nr + 1 = 15).
pub const MAX_ROUND_KEYS: usize = 15;

/// The expanded key schedule, in the two forms every engine derives its own layout from.
///
/// `enc` holds the FIPS-197 round keys w[0..=Nr] as 16-byte blocks (byte order as in the spec).
/// `dec` holds the round keys of the "equivalent inverse cipher" (FIPS-197 section 5.3.5):
/// `dec[0] = enc[Nr]`, `dec[i] = InvMixColumns(enc[Nr - i])`, `dec[Nr] = enc[0]`, the form that
/// AES-NI's `aesdec` and T-table decryption use. Zeroized on drop; Debug never shows the keys.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct ExpandedKey {
    enc: [[u8; 16]; MAX_ROUND_KEYS],
    dec: [[u8; 16]; MAX_ROUND_KEYS],
    #[zeroize(skip)]
    size: KeySize,
}

impl ExpandedKey {
    /// Expands `key` (FIPS-197 section 5.2) with the constant-time S-box of the portable path.
    pub fn new(key: &Key) -> Self {
        let size = key.size();
        let nk = size.bytes() / 4;
        let total_words = 4 * (size.rounds() + 1);
        let mut w = [[0u8; 4]; 4 * MAX_ROUND_KEYS];
        for (i, word) in key.as_bytes().chunks_exact(4).enumerate() {
            w[i].copy_from_slice(word);
        }
        let mut rcon = 1u8;
        for i in nk..total_words {
            let mut temp = w[i - 1];
            if i % nk == 0 {
                temp.rotate_left(1);
                temp = sub_word(temp);
                temp[0] ^= rcon;
                rcon = xtime(rcon);
            } else if nk > 6 && i % nk == 4 {
                temp = sub_word(temp);
            }
            for b in 0..4 {
                w[i][b] = w[i - nk][b] ^ temp[b];
            }
        }
        let mut expanded = ExpandedKey {
            enc: [[0; 16]; MAX_ROUND_KEYS],
            dec: [[0; 16]; MAX_ROUND_KEYS],
            size,
        };
        for (round, block) in expanded.enc[..=size.rounds()].iter_mut().enumerate() {
            for col in 0..4 {
                block[4 * col..4 * col + 4].copy_from_slice(&w[4 * round + col]);
            }
        }
        w.zeroize();
        let nr = size.rounds();
        for i in 0..=nr {
            let mut block = expanded.enc[nr - i];
            if i != 0 && i != nr {
                inv_mix_columns(&mut block);
            }
            expanded.dec[i] = block;
        }
        expanded
    }

    /// The key size.
    pub fn size(&self) -> KeySize {
        self.size
    }

    /// Number of rounds Nr.
    pub fn rounds(&self) -> usize {
        self.size.rounds()
    }

    /// The encryption round keys w[0..=Nr], one 16-byte block per round.
    pub fn enc_round_keys(&self) -> &[[u8; 16]] {
        &self.enc[..=self.rounds()]
    }

    /// The equivalent-inverse-cipher decryption round keys (see the type's docs).
    pub fn dec_round_keys(&self) -> &[[u8; 16]] {
        &self.dec[..=self.rounds()]
    }
}

impl fmt::Debug for ExpandedKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ExpandedKey {{ bits: {}, round_keys: <redacted> }}",
            self.size.bits()
        )
    }
}

/// The value of an ASCII hex digit (callers check that it is one).
fn hex_value(digit: u8) -> u8 {
    match digit {
        b'0'..=b'9' => digit - b'0',
        b'a'..=b'f' => digit - b'a' + 10,
        _ => digit.to_ascii_lowercase() - b'a' + 10,
    }
}

/// InvMixColumns (FIPS-197 section 5.3.3) of one block, with shifts and xors only.
fn inv_mix_columns(block: &mut [u8; 16]) {
    for column in block.chunks_exact_mut(4) {
        let a = [column[0], column[1], column[2], column[3]];
        // Multiplying by 0x0e, 0x0b, 0x0d, 0x09 from x, x^2 and x^3.
        let x1 = a.map(xtime);
        let x2 = x1.map(xtime);
        let x3 = x2.map(xtime);
        let mul = |i: usize, coef: u8| -> u8 {
            let mut r = 0;
            if coef & 1 != 0 {
                r ^= a[i];
            }
            if coef & 2 != 0 {
                r ^= x1[i];
            }
            if coef & 4 != 0 {
                r ^= x2[i];
            }
            if coef & 8 != 0 {
                r ^= x3[i];
            }
            r
        };
        for (row, out) in column.iter_mut().enumerate() {
            *out = mul(row, 0x0e)
                ^ mul((row + 1) % 4, 0x0b)
                ^ mul((row + 2) % 4, 0x0d)
                ^ mul((row + 3) % 4, 0x09);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fips197_appendix_a1_last_round_key() {
        let key = Key::new(&hex_bytes("2b7e151628aed2a6abf7158809cf4f3c")).unwrap();
        let expanded = key.expand();
        assert_eq!(
            expanded.enc_round_keys()[10].to_vec(),
            hex_bytes("d014f9a8c9ee2589e13f0cc8b6630ca6")
        );
    }

    #[test]
    fn fips197_appendix_a3_last_round_key() {
        let key = Key::new(&hex_bytes(
            "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4",
        ))
        .unwrap();
        let expanded = key.expand();
        assert_eq!(
            expanded.enc_round_keys()[14].to_vec(),
            hex_bytes("fe4890d1e6188d0b046df344706c631e")
        );
    }

    #[test]
    fn inv_mix_columns_undoes_fips197_mix_columns_example() {
        // FIPS-197 appendix B, round 1: after ShiftRows d4bf5d30.. -> after MixColumns 046681e5..
        let mut block: [u8; 16] = hex_bytes("046681e5e0cb199a48f8d37a2806264c")
            .try_into()
            .unwrap();
        inv_mix_columns(&mut block);
        assert_eq!(
            block.to_vec(),
            hex_bytes("d4bf5d30e0b452aeb84111f11e2798e5")
        );
    }

    #[test]
    fn debug_redacts_key_material() {
        let key = Key::new(&[0xab; 32]).unwrap();
        let shown = format!("{key:?} {:?}", key.expand());
        assert!(!shown.to_lowercase().contains("ab, "));
        assert!(!shown.contains("171"));
        assert!(shown.contains("redacted"));
    }

    #[test]
    fn parses_hex_and_raw_key_files() {
        let hex = Key::parse(b"  000102030405060708090A0b0c0d0e0f\n").unwrap();
        assert_eq!(
            hex.as_bytes(),
            &hex_bytes("000102030405060708090a0b0c0d0e0f")[..]
        );
        assert_eq!(Key::parse(&[0xfe; 24]).unwrap().size(), KeySize::Aes192);
        assert_eq!(Key::parse(&[b'a'; 64]).unwrap().size(), KeySize::Aes256);
        assert_eq!(Key::parse(b"xyz").unwrap_err(), KeyError::NotAKey);
        assert_eq!(Key::parse(&[b'g'; 64]).unwrap_err(), KeyError::NotAKey);
    }

    #[test]
    fn rejects_bad_lengths() {
        assert_eq!(Key::new(&[0; 17]).unwrap_err(), KeyError::BadLength(17));
        assert_eq!(KeySize::from_bits(99).unwrap_err(), KeyError::BadBits(99));
    }

    fn hex_bytes(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }
}
