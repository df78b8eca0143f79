//! GHASH (NIST SP 800-38D), the universal hash of AES-GCM, computed with paraes's own POLYVAL
//! as RFC 8452 appendix A gives it: `GHASH_H(X_1..X_n) = ByteReverse(POLYVAL_{mulX_POLYVAL(
//! ByteReverse(H))}(ByteReverse(X_1), ..., ByteReverse(X_n)))`. Without the mulX the tags are
//! wrong. POLYVAL's x86 paths (VPCLMULQDQ on AVX-512 or AVX2, PCLMULQDQ) byte-reflect each
//! block as they load it; elsewhere the constant-time RustCrypto `polyval` crate runs on blocks
//! reversed in batches (no table indexed by secrets on any path).

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
        let mut key = polyval_key(h);
        let polyval = Polyval::new(&key);
        key.zeroize();
        Ghash { polyval }
    }

    /// GHASH with hash key `h` on POLYVAL's `path`, or `None` where this CPU lacks it (tests
    /// run each).
    #[cfg(test)]
    pub(crate) fn on_path(h: &[u8; 16], path: crate::polyval::Path) -> Option<Self> {
        let mut key = polyval_key(h);
        let polyval = Polyval::on_path(&key, path);
        key.zeroize();
        Some(Ghash { polyval: polyval? })
    }

    /// GHASH of `data` zero-padded to whole blocks, followed by the block `trailer`.
    pub fn hash(&self, data: &[u8], trailer: &[u8; 16]) -> [u8; 16] {
        self.polyval.hash_reflected(data, trailer)
    }

    /// The AVX-512 path's dot-powers of the POLYVAL key mulX_POLYVAL(ByteReverse(H)), H^64 ..
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

/// The POLYVAL key of GHASH key `h`: mulX_POLYVAL(ByteReverse(h)).
fn polyval_key(h: &[u8; 16]) -> [u8; 16] {
    let mut reversed = *h;
    reversed.reverse();
    let key = mul_x(&reversed);
    reversed.zeroize();
    key
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

    /// GCM's GHASH on every POLYVAL path this CPU runs against RustCrypto `aes-gcm`: with no
    /// associated data, the tag of a ciphertext C is GHASH_H(C, lengths) xor E_K(J0), H =
    /// E_K(0^128), J0 = nonce || be32(1). Every length 0 ..= 600, around the groups, one record,
    /// and 1 MiB + 17.
    #[test]
    fn every_path_matches_aes_gcm_at_every_length() {
        use aes::cipher::{BlockEncrypt, KeyInit as _};
        use aes_gcm::aead::AeadInPlace;

        use crate::polyval::Path;

        let key = [0x42u8; 32];
        let nonce = [0x24u8; 12];
        let aes = aes::Aes256::new(&key.into());
        let mut h = [0u8; 16];
        aes.encrypt_block((&mut h).into());
        let mut j0 = [0u8; 16];
        j0[..12].copy_from_slice(&nonce);
        j0[15] = 1;
        aes.encrypt_block((&mut j0).into());
        let gcm = aes_gcm::Aes256Gcm::new_from_slice(&key).unwrap();
        let paths: Vec<(Path, Ghash)> = Path::ALL
            .into_iter()
            .filter_map(|path| {
                let ghash = Ghash::on_path(&h, path);
                if ghash.is_none() {
                    eprintln!("SKIPPED: GHASH on POLYVAL's {path:?} path: this CPU lacks it");
                }
                Some((path, ghash?))
            })
            .collect();
        let lengths = (0..=600)
            .chain(
                [1024, 2048, 16384]
                    .into_iter()
                    .flat_map(|n| n - 17..=n + 17),
            )
            .chain([(1 << 20) + 17]);
        for len in lengths {
            let mut ciphertext: Vec<u8> = (0..len).map(|i| (i * 7 + len) as u8).collect();
            let tag = gcm
                .encrypt_in_place_detached(&nonce.into(), b"", &mut ciphertext)
                .unwrap();
            let mut expected: [u8; 16] = tag.into();
            expected.iter_mut().zip(&j0).for_each(|(t, e)| *t ^= e);
            for (path, ghash) in &paths {
                assert_eq!(ghash.gcm(&ciphertext), expected, "{path:?}, len {len}");
            }
        }
    }
}
