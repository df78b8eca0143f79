//! GHASH (NIST SP 800-38D), the universal hash of AES-GCM, computed with paraes's own POLYVAL
//! as RFC 8452 appendix A gives it: `GHASH_H(X_1..X_n) = ByteReverse(POLYVAL_{mulX_POLYVAL(
//! ByteReverse(H))}(ByteReverse(X_1), ..., ByteReverse(X_n)))`. Without the mulX the tags are
//! wrong. The VPCLMULQDQ path byte-reflects each block as it loads it; elsewhere the
//! constant-time RustCrypto `polyval` crate runs (no table indexed by secrets on either path).

use zeroize::{Zeroize, ZeroizeOnDrop};

use crate::polyval::Polyval;

/// GHASH keyed with the hash key `H = E_K(0^128)`.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct Ghash {
    polyval: Polyval,
}

impl Ghash {
    /// GHASH with hash key `h` (in GCM, the encryption of the zero block).
    pub fn new(h: &[u8; 16]) -> Self {
        let mut reversed = *h;
        reversed.reverse();
        let key = mul_x(&reversed);
        reversed.zeroize();
        Ghash {
            polyval: Polyval::new(&key),
        }
    }

    /// GHASH of `data` zero-padded to whole blocks, followed by the block `trailer`.
    pub fn hash(&self, data: &[u8], trailer: &[u8; 16]) -> [u8; 16] {
        self.polyval.hash_reflected(data, trailer)
    }

    /// The fast path's dot-powers of the POLYVAL key mulX_POLYVAL(ByteReverse(H)), H^64 ..
    /// H^1, or `None` where that path does not run: the stitched AES-GCM kernel hashes
    /// byte-reversed ciphertext blocks with them, as [`Ghash::hash`] does.
    pub(crate) fn powers(&self) -> Option<&[[u8; 16]; crate::polyval::GROUP]> {
        self.polyval.powers()
    }

    /// GCM's hash of a ciphertext with no associated data: GHASH of `ciphertext` zero-padded,
    /// then the lengths block `be64(0) || be64(8 * len(ciphertext))`.
    pub fn gcm(&self, ciphertext: &[u8]) -> [u8; 16] {
        let mut lengths = [0u8; 16];
        lengths[8..].copy_from_slice(&(ciphertext.len() as u64 * 8).to_be_bytes());
        self.hash(ciphertext, &lengths)
    }
}

/// mulX_POLYVAL (RFC 8452 appendix A): `x` times the polynomial x in POLYVAL's field, in its
/// little-endian representation.
fn mul_x(x: &[u8; 16]) -> [u8; 16] {
    let v = u128::from_le_bytes(*x);
    let reduced = (v << 1) ^ ((v >> 127) * ((0xc2 << 120) | 1));
    reduced.to_le_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(text: &str) -> [u8; 16] {
        hex::decode(text).unwrap().try_into().unwrap()
    }

    /// RFC 8452 appendix A's inputs (H, X_1, X_2); the GHASH value is from a bit-serial GF(2^128)
    /// multiplication (SP 800-38D's algorithm 1) written apart from this code.
    #[test]
    fn ghash_of_rfc8452_appendix_a() {
        let h = block("25629347589242761d31f826ba4b757b");
        let x1 = block("4f4f95668c83dfb6401762bb2d01a262");
        let x2 = block("d1a24ddd2721d006bbe45f20d3c9f362");
        assert_eq!(
            hex::encode(Ghash::new(&h).hash(&x1, &x2)),
            "bd9b3997046731fb96251b91f9c99d7a"
        );
    }

    /// The GCM test vectors' case 2 (zero key and IV, one zero block): T xor E(J0).
    #[test]
    fn gcm_test_case_2() {
        let h = block("66e94bd4ef8a2c3b884cfa59ca342b2e");
        let c = block("0388dace60b6a392f328c2b971b2fe78");
        assert_eq!(
            hex::encode(Ghash::new(&h).gcm(&c)),
            "f38cbb1ad69223dcc3457ae5b6b0f885"
        );
    }

    /// The fast path agrees with the portable one at every length around its 64-block groups.
    #[test]
    fn every_length_agrees_with_the_portable_path() {
        let h = block("25629347589242761d31f826ba4b757b");
        let data: Vec<u8> = (0..5000u32).map(|i| (i * 193 + 11) as u8).collect();
        let fast = Ghash::new(&h);
        let portable = Ghash {
            polyval: Polyval::portable(&fast.polyval),
        };
        for len in (0..=300).chain([1023, 1024, 1025, 2047, 2048, 4096 + 5, 5000]) {
            assert_eq!(
                fast.gcm(&data[..len]),
                portable.gcm(&data[..len]),
                "len {len}"
            );
        }
    }
}
