//! Portable constant-time AES (FIPS-197): fixsliced on `u64` bit planes, four blocks at a time.
#![deny(unsafe_code)]

// Design. Four blocks are transposed into eight 64-bit bit planes (`State`). SubBytes is the
// Boyar–Peralta S-box circuit (AND/XOR gates) run on the planes, MixColumns is rotations and
// XORs, and ShiftRows is never done explicitly: after round `i` the state is kept permuted by
// ShiftRows^-i ("fixslicing", Adomnicai & Peyrin), so each round uses one of four twisted
// MixColumns and the round keys are permuted to match. The S-box's affine constant 0x63 is
// folded into the round keys. Decryption runs the equivalent inverse cipher the same way, with
// InvSubBytes built from the same circuit. No table is indexed by secret data and nothing
// branches on it.

use zeroize::{Zeroize, ZeroizeOnDrop};

use super::sbox::{sub_bytes, State};
use crate::key::{ExpandedKey, MAX_ROUND_KEYS};

/// Bytes per batch: four 16-byte blocks.
const BATCH: usize = 64;

/// Encrypts whole 16-byte blocks in place (`blocks.len() % 16 == 0`).
pub(crate) fn encrypt_blocks(key: &ExpandedKey, blocks: &mut [u8]) {
    if blocks.is_empty() {
        return;
    }
    let keys = RoundKeys::encryption(key);
    for_each_batch(blocks, |state| keys.cipher(state, false));
}

/// Decrypts whole 16-byte blocks in place (`blocks.len() % 16 == 0`).
pub(crate) fn decrypt_blocks(key: &ExpandedKey, blocks: &mut [u8]) {
    if blocks.is_empty() {
        return;
    }
    let keys = RoundKeys::decryption(key);
    for_each_batch(blocks, |state| keys.cipher(state, true));
}

/// XORs the CTR keystream for counter blocks `counter, counter + 1, ...` (128-bit big-endian,
/// wrapping at 2^128) into whole 16-byte blocks in place (`blocks.len() % 16 == 0`).
pub(crate) fn ctr_blocks(key: &ExpandedKey, counter: u128, blocks: &mut [u8]) {
    if blocks.is_empty() {
        return;
    }
    let keys = RoundKeys::encryption(key);
    let mut counter = counter;
    let (batches, tail) = blocks.as_chunks_mut::<BATCH>();
    for batch in batches {
        let stream = keys.keystream(counter);
        for (chunk, word) in batch.as_chunks_mut::<8>().0.iter_mut().zip(stream) {
            *chunk = (u64::from_le_bytes(*chunk) ^ word).to_le_bytes();
        }
        counter = counter.wrapping_add(4);
    }
    if !tail.is_empty() {
        // The unused part of this batch's keystream belongs to counters later calls will use.
        let mut stream = keys.keystream(counter);
        for (byte, k) in tail
            .iter_mut()
            .zip(stream.iter().flat_map(|w| w.to_le_bytes()))
        {
            *byte ^= k;
        }
        stream.zeroize();
    }
}

/// Runs `cipher` over every batch of `blocks`, padding a short last batch with zeros.
#[inline(always)]
fn for_each_batch(blocks: &mut [u8], cipher: impl Fn(&mut State)) {
    let (batches, tail) = blocks.as_chunks_mut::<BATCH>();
    for batch in batches {
        let mut state = load(batch);
        cipher(&mut state);
        store(state, batch);
    }
    if !tail.is_empty() {
        let mut buffer = [0u8; BATCH];
        buffer[..tail.len()].copy_from_slice(tail);
        let mut state = load(&buffer);
        cipher(&mut state);
        store(state, &mut buffer);
        tail.copy_from_slice(&buffer[..tail.len()]);
        buffer.zeroize();
    }
}

/// The round keys of one direction as bit planes, each replicated into all four block slots,
/// pre-shifted for fixslicing and with the S-box constant folded in. Zeroized on drop.
#[derive(Zeroize, ZeroizeOnDrop)]
struct RoundKeys {
    planes: [State; MAX_ROUND_KEYS],
    #[zeroize(skip)]
    rounds: usize,
}

impl RoundKeys {
    /// Keys for the cipher.
    fn encryption(key: &ExpandedKey) -> Self {
        Self::new(key.enc_round_keys(), false)
    }

    /// Keys for the equivalent inverse cipher.
    fn decryption(key: &ExpandedKey) -> Self {
        Self::new(key.dec_round_keys(), true)
    }

    /// Bitslices `round_keys`: a middle round's key is permuted like that round's state (see
    /// [`twist`]), and 0x63 is added to every key that follows a SubBytes (encryption: rounds
    /// 1..=Nr) or precedes an InvSubBytes (decryption: rounds 0..Nr).
    fn new(round_keys: &[[u8; 16]], decrypt: bool) -> Self {
        let rounds = round_keys.len() - 1;
        let mut keys = RoundKeys {
            planes: [[0; 8]; MAX_ROUND_KEYS],
            rounds,
        };
        let mut batch = [0u8; BATCH];
        for (i, (round_key, planes)) in round_keys.iter().zip(&mut keys.planes).enumerate() {
            let twist = if i == 0 || i == rounds {
                0
            } else {
                twist(i, decrypt)
            };
            let constant = if (decrypt && i < rounds) || (!decrypt && i > 0) {
                0x63
            } else {
                0
            };
            for block in batch.chunks_exact_mut(16) {
                // Permuted by ShiftRows^-twist: byte (r, c) comes from (r, c - twist * r).
                for (index, byte) in block.iter_mut().enumerate() {
                    let (col, row) = (index / 4, index % 4);
                    let from_col = (col + 4 - twist * row % 4) % 4;
                    *byte = round_key[4 * from_col + row] ^ constant;
                }
            }
            *planes = load(&batch);
        }
        batch.zeroize();
        keys
    }

    /// Encrypts (or with `decrypt`, decrypts) the four blocks of `state`.
    #[inline(always)]
    fn cipher(&self, state: &mut State, decrypt: bool) {
        let nr = self.rounds;
        add_round_key(state, &self.planes[0]);
        // Four rounds at a time, so that every round's twist is a constant.
        let (groups, rest) = self.planes[1..nr].as_chunks::<4>();
        for [k1, k2, k3, k4] in groups {
            round(state, k1, 1, decrypt);
            round(state, k2, 2, decrypt);
            round(state, k3, 3, decrypt);
            round(state, k4, 4, decrypt);
        }
        for (i, key) in rest.iter().enumerate() {
            match i {
                0 => round(state, key, 1, decrypt),
                1 => round(state, key, 2, decrypt),
                _ => round(state, key, 3, decrypt),
            }
        }
        if decrypt {
            inv_sub_bytes(state);
        } else {
            sub_bytes(state);
        }
        finish(state, &self.planes[nr], nr);
    }

    /// The keystream for the four counter blocks from `counter`, as the little-endian words of
    /// its 64 bytes.
    #[inline(always)]
    fn keystream(&self, counter: u128) -> [u64; 8] {
        let mut words = [0u64; 8];
        for (block, pair) in words.chunks_exact_mut(2).enumerate() {
            let value = counter.wrapping_add(block as u128);
            pair[0] = u64::from_le_bytes(((value >> 64) as u64).to_be_bytes());
            pair[1] = u64::from_le_bytes((value as u64).to_be_bytes());
        }
        let mut state = to_planes(words);
        self.cipher(&mut state, false);
        from_planes(state)
    }
}

/// How the state is kept after middle round `i` (0 < i < Nr): permuted by ShiftRows^-twist of
/// the real state, where the twist is `i` (encryption) or `-i` (decryption) mod 4.
#[inline(always)]
fn twist(i: usize, decrypt: bool) -> usize {
    if decrypt {
        (4 - i % 4) % 4
    } else {
        i % 4
    }
}

/// Middle round `i` of either direction (only `i` mod 4 matters): (Inv)SubBytes, then
/// (Inv)MixColumns twisted to match, then the round key.
#[inline(always)]
fn round(state: &mut State, key: &State, i: usize, decrypt: bool) {
    let twist = twist(i, decrypt) as u32;
    if decrypt {
        inv_sub_bytes(state);
        inv_mix_columns(state, twist);
    } else {
        sub_bytes(state);
        mix_columns(state, twist);
    }
    add_round_key(state, key);
}

/// XORs a round key into the state.
#[inline(always)]
fn add_round_key(state: &mut State, key: &State) {
    for (s, k) in state.iter_mut().zip(key) {
        *s ^= k;
    }
}

/// The last round after its (Inv)SubBytes: undoes what is left of the twist (ShiftRows^±Nr,
/// which is ShiftRows^2 for 10 and 14 rounds and the identity for 12) and adds the last key.
#[inline(always)]
fn finish(state: &mut State, key: &State, rounds: usize) {
    if rounds % 4 == 2 {
        for x in state.iter_mut() {
            // Rows 1 and 3 move by two columns: swap the byte halves of 16-bit lanes 1 and 3.
            let t = (*x ^ (*x >> 8)) & 0x00ff_0000_00ff_0000;
            *x ^= t ^ (t << 8);
        }
    }
    add_round_key(state, key);
}

/// Reads a batch of four blocks into bit planes.
#[inline(always)]
fn load(batch: &[u8; BATCH]) -> State {
    let mut words = [0u64; 8];
    for (word, chunk) in words.iter_mut().zip(batch.as_chunks::<8>().0) {
        *word = u64::from_le_bytes(*chunk);
    }
    to_planes(words)
}

/// Writes bit planes back as a batch of four blocks.
#[inline(always)]
fn store(state: State, batch: &mut [u8; BATCH]) {
    for (chunk, word) in batch
        .as_chunks_mut::<8>()
        .0
        .iter_mut()
        .zip(from_planes(state))
    {
        *chunk = word.to_le_bytes();
    }
}

/// A transposition stage: `swap_move` arguments (word distance, bit shift, mask).
type Stage = (usize, u32, u64);

/// Exchanges one bit of the word index with bit `shift.trailing_zeros()` of the bit position:
/// the bits of word `a` at positions with that bit set trade places with those of word `b`
/// (`b = a + distance`) at positions without it. Applied to every such word pair.
#[inline(always)]
fn swap_move(words: &mut [u64; 8], (distance, shift, mask): Stage) {
    for a in 0..8 {
        if a & distance == 0 {
            let t = ((words[a] >> shift) ^ words[a + distance]) & mask;
            words[a + distance] ^= t;
            words[a] ^= t << shift;
        }
    }
}

/// The transposition between four blocks and bit planes, in packing order; each stage is an
/// involution, so unpacking runs them backwards.
///
/// Word `n` of a batch holds bytes `8n..8n + 8` little-endian, so a bit's index is
/// `[b1 b0 c1 | c0 r1 r0 j2 j1 j0]` (word | position). Four swaps with word bit `c1` rotate
/// `c1, r0, r1, c0` into place, two more swap `b1`, `b0` with `j1`, `j0`, leaving
/// `[j1 j0 j2 | r1 r0 c1 c0 b1 b0]`: plane `j` is word `4 j1 + 2 j0 + j2`.
const STAGES: [Stage; 6] = [
    (1, 8, 0x00ff_00ff_00ff_00ff),
    (1, 16, 0x0000_ffff_0000_ffff),
    (1, 32, 0x0000_0000_ffff_ffff),
    (1, 4, 0x0f0f_0f0f_0f0f_0f0f),
    (4, 2, 0x3333_3333_3333_3333),
    (2, 1, 0x5555_5555_5555_5555),
];

/// Transposes four blocks (as eight little-endian words) into bit planes.
#[inline(always)]
fn to_planes(mut w: [u64; 8]) -> State {
    let [s0, s1, s2, s3, s4, s5] = STAGES;
    swap_move(&mut w, s0);
    swap_move(&mut w, s1);
    swap_move(&mut w, s2);
    swap_move(&mut w, s3);
    swap_move(&mut w, s4);
    swap_move(&mut w, s5);
    [w[0], w[2], w[4], w[6], w[1], w[3], w[5], w[7]]
}

/// Inverse of [`to_planes`].
#[inline(always)]
fn from_planes(s: State) -> [u64; 8] {
    let mut w = [s[0], s[4], s[1], s[5], s[2], s[6], s[3], s[7]];
    let [s0, s1, s2, s3, s4, s5] = STAGES;
    swap_move(&mut w, s5);
    swap_move(&mut w, s4);
    swap_move(&mut w, s3);
    swap_move(&mut w, s2);
    swap_move(&mut w, s1);
    swap_move(&mut w, s0);
    w
}

/// Moves the bytes of a plane `rows` rows up and `cols` columns left: the byte at row `r`,
/// column `c` becomes the one from row `r + rows`, column `c + cols` (both mod 4).
#[inline(always)]
fn shift(x: u64, rows: u32, cols: u32) -> u64 {
    let cols = cols % 4;
    if cols == 0 {
        x.rotate_right(16 * rows)
    } else {
        // Where the source column wraps around past column 3, the source is one row (16 bits)
        // nearer than the plain rotation reaches.
        let wrap = 0x0001_0001_0001_0001 * (0xffff << (16 - 4 * cols) & 0xffff);
        let y = x.rotate_right(16 * rows + 4 * cols);
        y ^ ((y ^ y.rotate_left(16)) & wrap)
    }
}

/// MixColumns conjugated by ShiftRows^twist (for a state kept as ShiftRows^-twist of the real
/// one): byte (r, c) mixes with (r + d, c + twist * d), d = 1, 2, 3.
#[inline(always)]
fn mix_columns(state: &mut State, twist: u32) {
    // out = 2 * (x + x') + x' + x'' + x''' where ' is one step down the (twisted) column.
    let next = state.map(|x| shift(x, 1, twist));
    let mut pair = [0u64; 8];
    for (p, (x, n)) in pair.iter_mut().zip(state.iter().zip(&next)) {
        *p = x ^ n;
    }
    let far = pair.map(|x| shift(x, 2, 2 * twist));
    let doubled = xtime(&pair);
    for (s, ((d, n), f)) in state.iter_mut().zip(doubled.iter().zip(&next).zip(&far)) {
        *s = d ^ n ^ f;
    }
}

/// InvMixColumns conjugated like [`mix_columns`], as MixColumns after multiplying each column
/// by `05 + 04 * y^2`.
#[inline(always)]
fn inv_mix_columns(state: &mut State, twist: u32) {
    let mut v = [0u64; 8];
    for (v, x) in v.iter_mut().zip(state.iter()) {
        *v = x ^ shift(*x, 2, 2 * twist);
    }
    let quadrupled = xtime(&xtime(&v));
    for (s, q) in state.iter_mut().zip(quadrupled) {
        *s ^= q;
    }
    mix_columns(state, twist);
}

/// Multiplies every byte by x in GF(2^8) (modulo x^8 + x^4 + x^3 + x + 1).
#[inline(always)]
fn xtime(x: &State) -> State {
    [
        x[7],
        x[0] ^ x[7],
        x[1],
        x[2] ^ x[7],
        x[3] ^ x[7],
        x[4],
        x[5],
        x[6],
    ]
}

/// InvSubBytes without the constant 0x63 on its input (which the round keys carry instead), as
/// `A^-1 ∘ S ∘ A^-1`, where `S` is [`sub_bytes`] and `A^-1` the linear part of the inverse
/// affine map: inversion in GF(2^8) is `A^-1 ∘ S`, and InvSubBytes is inversion after `A^-1`.
#[inline(always)]
fn inv_sub_bytes(state: &mut State) {
    inv_affine(state);
    sub_bytes(state);
    inv_affine(state);
}

/// The linear part of the inverse of the S-box affine map: bit `i` becomes
/// `b[i + 2] ^ b[i + 5] ^ b[i + 7]` (indices mod 8).
#[inline(always)]
fn inv_affine(state: &mut State) {
    let x = *state;
    for (i, s) in state.iter_mut().enumerate() {
        *s = x[(i + 2) % 8] ^ x[(i + 5) % 8] ^ x[(i + 7) % 8];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aes::sbox::sub_word;
    use crate::key::{Key, KeySize};
    use aes::cipher::consts::U16;
    use aes::cipher::{BlockDecrypt, BlockEncrypt, BlockSizeUser, KeyInit};
    use ctr::cipher::{KeyIvInit, StreamCipher};
    use proptest::prelude::*;

    /// The S-box from its definition (the workspace's GF(2^8) reference).
    fn reference_sbox(x: u8) -> u8 {
        crate::gf256::SBOX[x as usize]
    }

    fn expand(key: &[u8]) -> ExpandedKey {
        Key::new(key).unwrap().expand()
    }

    fn reference_ecb<C>(key: &[u8], data: &mut [u8], decrypt: bool)
    where
        C: KeyInit + BlockEncrypt + BlockDecrypt + BlockSizeUser<BlockSize = U16>,
    {
        let cipher = C::new_from_slice(key).unwrap();
        for block in data.chunks_exact_mut(16) {
            let block = aes::Block::from_mut_slice(block);
            if decrypt {
                cipher.decrypt_block(block);
            } else {
                cipher.encrypt_block(block);
            }
        }
    }

    /// ECB with the `aes` crate, for any key size.
    fn reference_blocks(key: &[u8], data: &mut [u8], decrypt: bool) {
        match key.len() {
            16 => reference_ecb::<aes::Aes128>(key, data, decrypt),
            24 => reference_ecb::<aes::Aes192>(key, data, decrypt),
            _ => reference_ecb::<aes::Aes256>(key, data, decrypt),
        }
    }

    /// CTR with the `ctr` crate's 128-bit big-endian counter, for any key size.
    fn reference_ctr(key: &[u8], counter: u128, data: &mut [u8]) {
        let iv = counter.to_be_bytes();
        match key.len() {
            16 => ctr::Ctr128BE::<aes::Aes128>::new_from_slices(key, &iv)
                .unwrap()
                .apply_keystream(data),
            24 => ctr::Ctr128BE::<aes::Aes192>::new_from_slices(key, &iv)
                .unwrap()
                .apply_keystream(data),
            _ => ctr::Ctr128BE::<aes::Aes256>::new_from_slices(key, &iv)
                .unwrap()
                .apply_keystream(data),
        }
    }

    #[test]
    fn sub_word_matches_sbox_for_every_byte() {
        for x in 0..=255u8 {
            let word = [x, x.wrapping_add(1), x ^ 0x5a, !x];
            assert_eq!(
                sub_word(word),
                word.map(reference_sbox),
                "input {word:02x?}"
            );
        }
    }

    #[test]
    fn bitsliced_sbox_and_inverse_for_every_byte() {
        // Four batches of 64 bytes cover all 256 inputs.
        for base in (0..=255u8).step_by(BATCH) {
            let mut batch = [0u8; BATCH];
            for (i, byte) in batch.iter_mut().enumerate() {
                *byte = base + i as u8;
            }
            let mut state = load(&batch);
            sub_bytes(&mut state);
            let mut out = [0u8; BATCH];
            store(state, &mut out);
            for (x, y) in batch.iter().zip(out) {
                assert_eq!(y ^ 0x63, reference_sbox(*x), "S-box of {x:#04x}");
            }
            inv_sub_bytes(&mut state);
            store(state, &mut out);
            assert_eq!(out, batch);
        }
    }

    #[test]
    fn planes_round_trip_and_layout() {
        let mut batch = [0u8; BATCH];
        for (i, byte) in batch.iter_mut().enumerate() {
            *byte = (i as u8).wrapping_mul(37) ^ 0xa5;
        }
        let state = load(&batch);
        for (index, byte) in batch.iter().enumerate() {
            let (block, col, row) = (index / 16, index % 16 / 4, index % 4);
            for (j, plane) in state.iter().enumerate() {
                let bit = (plane >> (16 * row + 4 * col + block)) & 1;
                assert_eq!(bit, u64::from((byte >> j) & 1), "byte {index} bit {j}");
            }
        }
        let mut out = [0u8; BATCH];
        store(state, &mut out);
        assert_eq!(out, batch);
    }

    #[test]
    fn fips197_appendix_c() {
        let plaintext = hex::decode("00112233445566778899aabbccddeeff").unwrap();
        let vectors = [
            (KeySize::Aes128, "69c4e0d86a7b0430d8cdb78070b4c55a"),
            (KeySize::Aes192, "dda97ca4864cdfe06eaf70a0ec0d7191"),
            (KeySize::Aes256, "8ea2b7ca516745bfeafc49904b496089"),
        ];
        for (size, ciphertext) in vectors {
            let key_bytes: Vec<u8> = (0..size.bytes() as u8).collect();
            let key = expand(&key_bytes);
            let mut block = plaintext.clone();
            encrypt_blocks(&key, &mut block);
            assert_eq!(hex::encode(&block), ciphertext, "{size:?} encrypt");
            decrypt_blocks(&key, &mut block);
            assert_eq!(block, plaintext, "{size:?} decrypt");
        }
    }

    #[test]
    fn ctr_counter_wraps_and_carries() {
        let edges = [
            u128::MAX - 2,
            u128::MAX,
            (1u128 << 64) - 3,
            (1u128 << 64) - 1,
            u128::from(u64::MAX) << 64 | 0xffff_fff0,
        ];
        for size in KeySize::ALL {
            let key_bytes: Vec<u8> = (0..size.bytes() as u8).map(|b| b * 7 + 1).collect();
            let key = expand(&key_bytes);
            for counter in edges {
                for blocks in [1, 3, 4, 5, 8, 9] {
                    let data: Vec<u8> = (0..16 * blocks).map(|i| i as u8).collect();
                    let (mut ours, mut theirs) = (data.clone(), data);
                    ctr_blocks(&key, counter, &mut ours);
                    reference_ctr(&key_bytes, counter, &mut theirs);
                    assert_eq!(
                        ours, theirs,
                        "{size:?} counter {counter:#x} {blocks} blocks"
                    );
                }
            }
        }
    }

    fn key_and_data() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
        (
            prop::sample::select(&KeySize::ALL[..]),
            prop::collection::vec(any::<u8>(), 32),
            0usize..=20,
            prop::collection::vec(any::<u8>(), 16 * 20),
        )
            .prop_map(|(size, mut key, blocks, mut data)| {
                key.truncate(size.bytes());
                data.truncate(16 * blocks);
                (key, data)
            })
    }

    proptest! {
        #[test]
        fn blocks_match_aes_crate((key_bytes, data) in key_and_data()) {
            let key = expand(&key_bytes);
            let (mut ours, mut theirs) = (data.clone(), data.clone());
            encrypt_blocks(&key, &mut ours);
            reference_blocks(&key_bytes, &mut theirs, false);
            prop_assert_eq!(&ours, &theirs);
            decrypt_blocks(&key, &mut ours);
            prop_assert_eq!(&ours, &data);

            // Decrypting arbitrary data, not just a ciphertext of ours.
            let (mut ours, mut theirs) = (data.clone(), data);
            decrypt_blocks(&key, &mut ours);
            reference_blocks(&key_bytes, &mut theirs, true);
            prop_assert_eq!(ours, theirs);
        }

        #[test]
        fn ctr_matches_ctr_crate(
            (key_bytes, data) in key_and_data(),
            counter in prop_oneof![
                any::<u128>(),
                (0u128..40).prop_map(|d| u128::MAX - d),
                (0u128..40).prop_map(|d| (1u128 << 64) - 20 + d),
            ],
        ) {
            let key = expand(&key_bytes);
            let (mut ours, mut theirs) = (data.clone(), data);
            ctr_blocks(&key, counter, &mut ours);
            reference_ctr(&key_bytes, counter, &mut theirs);
            prop_assert_eq!(ours, theirs);
        }
    }
}
