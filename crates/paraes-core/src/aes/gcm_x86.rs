//! Stitched AES-GCM of one C2SP chunk on VAES-512 and VPCLMULQDQ: CTR and GHASH in one pass.
//!
//! The unstitched path runs CTR over a chunk and then GHASH over the ciphertext, each a loop
//! that keeps one kind of unit busy (the AES units, then the carry-less multiplier). Here each
//! loop step encrypts one batch of 32 counter blocks ([`x86::encrypt_rounds`], the same round
//! code as CTR) and, between its rounds, hashes 32 ciphertext blocks with the precomputed
//! powers H^32 .. H^1, summed unreduced and reduced once per batch ([`crate::polyval`]'s
//! aggregated reduction, as BoringSSL's and Linux's VAES GCM code interleave them):
//!
//! - sealing hashes the batch encrypted in the previous step (the ciphertext just written),
//!   so the last full batch is hashed after the loop, with the tail's keystream when there is
//!   one;
//! - opening hashes the batch it is about to decrypt, read before it is overwritten.
//!
//! GHASH is computed as [`crate::ghash`] computes it: POLYVAL with the key mulX(ByteReverse(H))
//! over byte-reversed blocks. The chunk's last partial batch (fewer than 32 blocks, the last
//! block possibly partial) goes through a zero-padded stack buffer that is wiped after; the
//! final hash right-aligns the tail blocks and the lengths block in a buffer of
//! [`FINAL_BLOCKS`] so that block `p` always takes the power H^(FINAL_BLOCKS - p). E(J0) is one
//! more register through the same rounds, at the start, where its latency hides.
//!
//! Only the counter block's last 32 bits count: a 16 KiB chunk uses counters 2 .. 1025 (the
//! padded tail batch at most 1057), so the 64-bit lane adds never carry into the nonce.
//! Nothing is indexed by secret data; the only branches are on lengths.

use core::arch::x86_64::*;

use super::x86::{broadcast_keys, encrypt_rounds, AesVec, BatchBuffer, LANES};
use crate::key::ExpandedKey;
use crate::polyval::x86::Wide;
use crate::polyval::GROUP as POWERS;

/// The register: four AES blocks.
type V = __m512i;
/// Bytes per register.
const REGISTER_BYTES: usize = 64;
/// Blocks per batch: [`LANES`] registers of four.
const BATCH_BLOCKS: usize = LANES * 4;
/// Bytes per batch.
const BATCH_BYTES: usize = BATCH_BLOCKS * 16;
/// Blocks of the final hash's buffer: a tail of up to [`BATCH_BLOCKS`] blocks and the lengths
/// block, rounded up to whole registers.
const FINAL_BLOCKS: usize = (BATCH_BLOCKS + 1).div_ceil(4) * 4;

/// The final hash's buffer, aligned to a register.
#[repr(C, align(64))]
struct FinalBuffer([u8; FINAL_BLOCKS * 16]);

/// The key material of the kernel, broadcast or loaded once per chunk.
struct Keys {
    rounds: [V; 15],
    /// H^32 .. H^1 (dot-powers), four per register, for a whole batch.
    batch_powers: [V; LANES],
}

/// Loads the four dot-powers from `powers[first]` on.
#[inline(always)]
unsafe fn powers_at(powers: &[[u8; 16]; POWERS], first: usize) -> V {
    // SAFETY: CPU features are the caller's contract; `load` bounds-checks the 64 bytes.
    unsafe { V::load(&powers.as_flattened()[16 * first..]) }
}

impl Keys {
    #[inline(always)]
    unsafe fn new<const NR: usize>(key: &ExpandedKey, powers: &[[u8; 16]; POWERS]) -> Self {
        // SAFETY: CPU features are the caller's contract.
        unsafe {
            Keys {
                rounds: broadcast_keys::<V, NR>(key.enc_round_keys()),
                batch_powers: core::array::from_fn(|r| {
                    powers_at(powers, POWERS - BATCH_BLOCKS + 4 * r)
                }),
            }
        }
    }
}

/// Counter blocks kept little-endian per lane (so 64-bit adds step them), byte-reversed into
/// the big-endian blocks AES takes.
struct Counters {
    /// The counters of the next batch's first register, little-endian.
    next: V,
}

impl Counters {
    /// Counters from `first` (the big-endian block of the chunk's first data block).
    #[inline(always)]
    unsafe fn new(first: &[u8; 16]) -> Self {
        let mut words = [0u8; REGISTER_BYTES];
        let base = u128::from_be_bytes(*first);
        for (lane, word) in words.chunks_exact_mut(16).enumerate() {
            word.copy_from_slice(&base.wrapping_add(lane as u128).to_le_bytes());
        }
        // SAFETY: CPU features are the caller's contract.
        unsafe {
            Counters {
                next: V::load(&words),
            }
        }
    }

    /// The big-endian counter blocks of the next batch.
    #[inline(always)]
    unsafe fn batch(&mut self) -> [V; LANES] {
        // SAFETY: CPU features are the caller's contract.
        unsafe {
            let step = _mm512_set_epi64(0, 4, 0, 4, 0, 4, 0, 4);
            let mut out = [self.next; LANES];
            for o in out.iter_mut() {
                *o = self.next.reverse_lanes();
                self.next = self.next.add64(step);
            }
            out
        }
    }
}

/// Adds the hash of register `r` of a batch (its 64 bytes at `64 * r` of `batch`) to `sum`,
/// with the running hash `acc` folded into register 0.
#[inline(always)]
unsafe fn hash_register(keys: &Keys, sum: &mut Wide, acc: __m128i, batch: &[u8], r: usize) {
    // SAFETY: CPU features are the caller's contract; `load` bounds-checks the 64 bytes.
    unsafe {
        let mut x = V::load(&batch[64 * r..]).reverse_lanes();
        if r == 0 {
            x = _mm512_xor_si512(x, _mm512_zextsi128_si512(acc));
        }
        sum.mul_add(x, keys.batch_powers[r]);
    }
}

/// The keystream of the next batch; between its rounds, when `hashed` holds a batch of
/// ciphertext, that batch is hashed into `acc` (reduced after the rounds).
#[inline(always)]
unsafe fn keystream<const NR: usize>(
    keys: &Keys,
    counters: &mut Counters,
    hashed: Option<&[u8]>,
    acc: &mut __m128i,
) -> [V; LANES] {
    // SAFETY: CPU features are the caller's contract, and so the closure's.
    unsafe {
        let mut stream = counters.batch();
        match hashed {
            Some(batch) => {
                let mut sum = Wide::new();
                encrypt_rounds::<V, NR, LANES>(
                    &keys.rounds,
                    &mut stream,
                    #[inline(always)]
                    |i| {
                        if i < LANES {
                            hash_register(keys, &mut sum, *acc, batch, i);
                        }
                    },
                );
                *acc = sum.reduce();
            }
            None => encrypt_rounds::<V, NR, LANES>(&keys.rounds, &mut stream, |_| {}),
        }
        stream
    }
}

/// XORs the keystream into the first [`BATCH_BYTES`] bytes of `data`.
#[inline(always)]
unsafe fn xor_batch(stream: &[V; LANES], data: &mut [u8]) {
    for (i, ks) in stream.iter().enumerate() {
        let register = &mut data[i * 64..];
        // SAFETY: CPU features are the caller's contract; load and store bounds-check.
        unsafe { V::load(register).xor(*ks).store(register) };
    }
}

/// Hashes a whole batch of ciphertext into `acc` with no AES beside it.
#[inline(always)]
unsafe fn hash_batch(keys: &Keys, batch: &[u8], acc: &mut __m128i) {
    // SAFETY: CPU features are the caller's contract.
    unsafe {
        let mut sum = Wide::new();
        for r in 0..LANES {
            hash_register(keys, &mut sum, *acc, batch, r);
        }
        *acc = sum.reduce();
    }
}

/// XORs the keystream of the chunk's last partial batch into `tail` (fewer than
/// [`BATCH_BYTES`] bytes) through a wiped stack buffer, hashing `hashed` between the rounds.
#[inline(always)]
unsafe fn crypt_tail<const NR: usize>(
    keys: &Keys,
    counters: &mut Counters,
    hashed: Option<&[u8]>,
    acc: &mut __m128i,
    tail: &mut [u8],
) {
    let mut buf = BatchBuffer([0u8; BATCH_BYTES]);
    buf.0[..tail.len()].copy_from_slice(tail);
    // SAFETY: CPU features are the caller's contract.
    unsafe {
        let stream = keystream::<NR>(keys, counters, hashed, acc);
        xor_batch(&stream, &mut buf.0);
    }
    tail.copy_from_slice(&buf.0[..tail.len()]);
    // The padding now holds keystream of counters no other chunk uses, but wipe it anyway.
    buf.wipe(BATCH_BYTES);
}

/// The end of the hash: the running hash `acc` of the whole batches, then `tail` (the
/// ciphertext of the last partial batch, zero-padded) and the lengths block of a chunk of
/// `len` bytes. Returns the POLYVAL value (byte-reversed GHASH).
#[inline(always)]
unsafe fn finish_hash(
    powers: &[[u8; 16]; POWERS],
    acc: __m128i,
    tail: &[u8],
    len: usize,
) -> __m128i {
    let m = tail.len().div_ceil(16) + 1;
    let mut buf = FinalBuffer([0u8; FINAL_BLOCKS * 16]);
    let at = (FINAL_BLOCKS - m) * 16;
    buf.0[at..at + tail.len()].copy_from_slice(tail);
    buf.0[FINAL_BLOCKS * 16 - 8..].copy_from_slice(&(8 * len as u64).to_be_bytes());
    // SAFETY: CPU features are the caller's contract; loads are bounds-checked.
    unsafe {
        let mut sum = Wide::new();
        // acc times H^m: it is the running value before the first of the m blocks.
        let power = _mm_loadu_si128(powers[POWERS - m].as_ptr().cast());
        sum.mul_add(_mm512_zextsi128_si512(acc), _mm512_zextsi128_si512(power));
        // Block p takes H^(FINAL_BLOCKS - p); registers before the first block are zero.
        for r in (FINAL_BLOCKS - m) / 4..FINAL_BLOCKS / 4 {
            let x = V::load(&buf.0[64 * r..]).reverse_lanes();
            sum.mul_add(x, powers_at(powers, POWERS - FINAL_BLOCKS + 4 * r));
        }
        sum.reduce()
    }
}

/// The tag: ByteReverse(POLYVAL value) XOR E(J0) (lane 0 of `ej0`).
#[inline(always)]
unsafe fn tag(polyval: __m128i, ej0: V) -> [u8; 16] {
    // SAFETY: CPU features are the caller's contract; the store writes the 16 bytes of `out`.
    unsafe {
        let reverse = _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        let t = _mm_xor_si128(
            _mm_shuffle_epi8(polyval, reverse),
            _mm512_castsi512_si128(ej0),
        );
        let mut out = [0u8; 16];
        _mm_storeu_si128(out.as_mut_ptr().cast(), t);
        out
    }
}

/// E(J0) with J0 = the counter block before `first`, in every lane.
#[inline(always)]
unsafe fn encrypt_j0<const NR: usize>(keys: &Keys, first: &[u8; 16]) -> V {
    let j0 = u128::from_be_bytes(*first).wrapping_sub(1).to_be_bytes();
    // SAFETY: CPU features are the caller's contract.
    unsafe {
        let mut state = [V::broadcast(&j0)];
        encrypt_rounds::<V, NR, 1>(&keys.rounds, &mut state, |_| {});
        state[0]
    }
}

#[inline(always)]
unsafe fn seal_nr<const NR: usize>(
    key: &ExpandedKey,
    powers: &[[u8; 16]; POWERS],
    first: &[u8; 16],
    data: &mut [u8],
) -> [u8; 16] {
    // SAFETY: CPU features are this function's contract.
    unsafe {
        let keys = Keys::new::<NR>(key, powers);
        let ej0 = encrypt_j0::<NR>(&keys, first);
        let mut counters = Counters::new(first);
        let mut acc = _mm_setzero_si128();
        let len = data.len();
        let whole = len / BATCH_BYTES;
        for b in 0..whole {
            // Batch b's keystream, with batch b - 1's ciphertext hashed between its rounds.
            let (done, rest) = data.split_at_mut(b * BATCH_BYTES);
            let hashed = done.len().checked_sub(BATCH_BYTES).map(|at| &done[at..]);
            let stream = keystream::<NR>(&keys, &mut counters, hashed, &mut acc);
            xor_batch(&stream, rest);
        }
        let (done, tail) = data.split_at_mut(whole * BATCH_BYTES);
        let last = done.len().checked_sub(BATCH_BYTES).map(|at| &done[at..]);
        if !tail.is_empty() {
            crypt_tail::<NR>(&keys, &mut counters, last, &mut acc, tail);
        } else if let Some(last) = last {
            hash_batch(&keys, last, &mut acc);
        }
        tag(finish_hash(powers, acc, tail, len), ej0)
    }
}

#[inline(always)]
unsafe fn open_nr<const NR: usize>(
    key: &ExpandedKey,
    powers: &[[u8; 16]; POWERS],
    first: &[u8; 16],
    data: &mut [u8],
) -> [u8; 16] {
    // SAFETY: CPU features are this function's contract.
    unsafe {
        let keys = Keys::new::<NR>(key, powers);
        let ej0 = encrypt_j0::<NR>(&keys, first);
        let mut counters = Counters::new(first);
        let mut acc = _mm_setzero_si128();
        let len = data.len();
        let mut batches = data.chunks_exact_mut(BATCH_BYTES);
        for batch in &mut batches {
            // The batch's ciphertext is hashed between the rounds of its own keystream.
            let stream = keystream::<NR>(&keys, &mut counters, Some(&*batch), &mut acc);
            xor_batch(&stream, batch);
        }
        let tail = batches.into_remainder();
        let polyval = finish_hash(powers, acc, tail, len);
        if !tail.is_empty() {
            crypt_tail::<NR>(&keys, &mut counters, None, &mut acc, tail);
        }
        tag(polyval, ej0)
    }
}

/// Picks the unrolled kernel for the key's round count (GCM has no 192-bit chunks here, but
/// the kernel takes any AES key).
macro_rules! by_rounds {
    ($kernel:ident, $key:expr, $($arg:expr),*) => {
        match $key.rounds() {
            10 => $kernel::<10>($key, $($arg),*),
            12 => $kernel::<12>($key, $($arg),*),
            _ => $kernel::<14>($key, $($arg),*),
        }
    };
}

/// Encrypts one chunk in place with CTR from `first` (`nonce || be32(2)`) and returns its GCM
/// tag (no associated data). `powers` are [`crate::ghash::Ghash::powers`] of `H = E(0)`.
///
/// # Safety
/// The CPU must have the features of the `target_feature` attribute (`super::StitchedGcm::detect`
/// checks them).
#[target_feature(enable = "aes,vaes,avx2,avx512f,avx512bw,pclmulqdq,vpclmulqdq")]
pub(super) unsafe fn seal(
    key: &ExpandedKey,
    powers: &[[u8; 16]; POWERS],
    first: &[u8; 16],
    data: &mut [u8],
) -> [u8; 16] {
    // SAFETY: the features the kernel needs are enabled here, and the caller guarantees the CPU
    // has them.
    unsafe { by_rounds!(seal_nr, key, powers, first, data) }
}

/// Decrypts one chunk in place (CTR from `first`) and returns the GCM tag of the ciphertext it
/// held, hashed in the same pass. The caller compares the tags and undoes the decryption (CTR
/// again) when they differ.
///
/// # Safety
/// As for [`seal`].
#[target_feature(enable = "aes,vaes,avx2,avx512f,avx512bw,pclmulqdq,vpclmulqdq")]
pub(super) unsafe fn open(
    key: &ExpandedKey,
    powers: &[[u8; 16]; POWERS],
    first: &[u8; 16],
    data: &mut [u8],
) -> [u8; 16] {
    // SAFETY: as in `seal`.
    unsafe { by_rounds!(open_nr, key, powers, first, data) }
}

#[cfg(test)]
mod tests {
    //! The stitched kernel against RustCrypto `aes-gcm` and against the unstitched path (CTR,
    //! then GHASH) at every chunk length, both key sizes, small and large chunk indices.
    use aes_gcm::aead::{AeadInPlace, KeyInit};
    use proptest::prelude::*;

    use super::super::{AesImpl, StitchedGcm};
    use crate::cobblestone::{ChunkCipher, CobblestoneError, CHUNK_LEN, MAX_CHUNKS};
    use crate::key::Key;

    /// Whether this CPU runs the kernel: where it does not, the tests below still check the
    /// unstitched path, and say so.
    fn kernel() -> Option<StitchedGcm> {
        let kernel = StitchedGcm::detect(AesImpl::detect());
        if kernel.is_none() {
            eprintln!("no VAES-512 + VPCLMULQDQ here: only the unstitched path is tested");
        }
        kernel
    }

    /// RustCrypto's AES-GCM seal of `data` under `key` and `nonce`: ciphertext, tag.
    fn oracle(key: &[u8], nonce: &[u8; 12], data: &[u8]) -> (Vec<u8>, [u8; 16]) {
        let mut out = data.to_vec();
        let tag = match key.len() {
            16 => aes_gcm::Aes128Gcm::new_from_slice(key)
                .unwrap()
                .encrypt_in_place_detached(nonce.into(), b"", &mut out),
            _ => aes_gcm::Aes256Gcm::new_from_slice(key)
                .unwrap()
                .encrypt_in_place_detached(nonce.into(), b"", &mut out),
        }
        .unwrap();
        (out, tag.into())
    }

    /// Checks chunk `index` of `data` under `key` and `base_nonce`: the cipher's seal (stitched
    /// where the CPU can) against aes-gcm and against CTR then GHASH; open of the result back to
    /// `data`; open of a changed tag, and of a changed ciphertext byte, refused with the
    /// ciphertext left as it was.
    fn check_chunk(key: &[u8], base_nonce: [u8; 12], index: u64, data: &[u8]) {
        let cipher = ChunkCipher::new(&Key::new(key).unwrap(), base_nonce);
        let len = data.len();
        let (expected, expected_tag) = oracle(key, &cipher.nonce(index), data);

        let mut sealed = data.to_vec();
        let tag = cipher.seal(index, &mut sealed);
        assert!(sealed == expected, "{len} bytes, chunk {index}: ciphertext");
        assert_eq!(tag, expected_tag, "{len} bytes, chunk {index}: tag");

        let mut unstitched = data.to_vec();
        cipher.ctr(index, &mut unstitched);
        assert!(unstitched == sealed);
        assert_eq!(cipher.tag(index, &unstitched), tag);

        let mut opened = sealed.clone();
        cipher.open(index, &mut opened, &tag).unwrap();
        assert!(opened == data, "{len} bytes, chunk {index}: open");

        let mut bad_tag = tag;
        bad_tag[len % 16] ^= 1 << (len % 8);
        let mut refused = sealed.clone();
        assert_eq!(
            cipher.open(index, &mut refused, &bad_tag),
            Err(CobblestoneError::Tampered(index))
        );
        assert!(
            refused == sealed,
            "{len} bytes: a refused chunk was changed"
        );
        if len > 0 {
            refused[len / 2] ^= 0x80;
            let changed = refused.clone();
            assert_eq!(
                cipher.open(index, &mut refused, &tag),
                Err(CobblestoneError::Tampered(index))
            );
            assert!(
                refused == changed,
                "{len} bytes: a refused chunk was changed"
            );
        }
        // The chunk's tag is its own: the next chunk's nonce refuses it.
        let mut other = sealed.clone();
        assert!(cipher.open(index ^ 1, &mut other, &tag).is_err());
        assert!(other == sealed);
    }

    fn data(len: usize, seed: u8) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_be_bytes()[0] ^ seed)
            .collect()
    }

    #[test]
    fn the_kernel_runs_where_the_cpu_has_it() {
        let vaes512 = AesImpl::Vaes512.is_available()
            && std::is_x86_feature_detected!("vpclmulqdq")
            && std::is_x86_feature_detected!("pclmulqdq");
        let forced = std::env::var(super::super::FORCE_PORTABLE_ENV).is_ok_and(|v| v == "1");
        assert_eq!(kernel().is_some(), vaes512 && !forced);
    }

    /// Every length whose tail differs: all of the first batches, and around every batch and
    /// block boundary up to a whole chunk.
    #[test]
    fn chunks_of_every_shape_match_aes_gcm_and_the_unstitched_path() {
        kernel();
        let lengths: Vec<usize> = (0..=1100)
            .chain((1..=CHUNK_LEN / 512).flat_map(|b| 512 * b - 20..=(512 * b + 20).min(CHUNK_LEN)))
            .chain((0..CHUNK_LEN).step_by(97))
            .collect();
        for key in [&[0x11u8; 16][..], &[0x22u8; 32][..]] {
            let plain = data(CHUNK_LEN, key[0]);
            for &len in &lengths {
                check_chunk(key, [0xc3; 12], len as u64 * 3, &plain[..len]);
            }
        }
    }

    /// Every length 0 ..= 16384, seal and open against the unstitched path (aes-gcm is checked
    /// on the shapes above and on random ones below).
    #[test]
    fn every_length_seals_and_opens_as_the_unstitched_path() {
        for key in [&[0x5au8; 16][..], &[0xa5u8; 32][..]] {
            let cipher = ChunkCipher::new(&Key::new(key).unwrap(), [9; 12]);
            let plain = data(CHUNK_LEN, key[1]);
            for len in 0..=CHUNK_LEN {
                let index = len as u64;
                let mut sealed = plain[..len].to_vec();
                let tag = cipher.seal(index, &mut sealed);
                let mut unstitched = plain[..len].to_vec();
                cipher.ctr(index, &mut unstitched);
                assert!(sealed == unstitched, "{len} bytes");
                assert_eq!(tag, cipher.tag(index, &unstitched), "{len} bytes");
                cipher.open(index, &mut sealed, &tag).unwrap();
                assert!(sealed == plain[..len], "{len} bytes");
            }
        }
    }

    #[test]
    fn large_chunk_indices_and_nonces() {
        let plain = data(CHUNK_LEN, 7);
        let indices = [1, 255, 256, 1 << 32, MAX_CHUNKS - 1, MAX_CHUNKS, u64::MAX];
        for (n, &index) in indices.iter().enumerate() {
            for nonce in [[0u8; 12], [0xff; 12]] {
                check_chunk(&[0xee; 32], nonce, index, &plain);
                check_chunk(&[0x77; 16], nonce, index, &plain[..CHUNK_LEN - 1 - 37 * n]);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn random_chunks_match_aes_gcm(
            key in prop_oneof![
                prop::collection::vec(any::<u8>(), 16),
                prop::collection::vec(any::<u8>(), 32),
            ],
            base_nonce in any::<[u8; 12]>(),
            index in prop_oneof![0u64..100, any::<u64>()],
            len in prop_oneof![0usize..=CHUNK_LEN, Just(CHUNK_LEN), CHUNK_LEN - 600..=CHUNK_LEN],
            seed in any::<u8>(),
        ) {
            check_chunk(&key, base_nonce, index, &data(len, seed));
        }
    }
}
