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

use crate::key::{ExpandedKey, MAX_ROUND_KEYS};

/// Four blocks as eight bit planes: `state[j]` holds bit `j` of all 64 bytes, the byte in row
/// `r`, column `c` of block `b` at bit `16 * r + 4 * c + b`. So moving every byte one row is a
/// 16-bit rotation, and moving it along its row needs a masked pair of rotations.
type State = [u64; 8];

/// Bytes per batch: four 16-byte blocks.
const BATCH: usize = 64;

/// FIPS-197 SubWord: the S-box applied to each byte of a key-schedule word, in constant time.
pub(crate) fn sub_word(w: [u8; 4]) -> [u8; 4] {
    let mut planes: State = [0; 8];
    for (j, plane) in planes.iter_mut().enumerate() {
        for (k, byte) in w.iter().enumerate() {
            *plane |= u64::from((byte >> j) & 1) << k;
        }
    }
    sub_bytes(&mut planes);
    let mut out = [0u8; 4];
    for (j, plane) in planes.iter().enumerate() {
        for (k, byte) in out.iter_mut().enumerate() {
            *byte |= (((plane >> k) & 1) as u8) << j;
        }
    }
    planes.zeroize();
    out.map(|b| b ^ 0x63)
}

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

/// SubBytes without its constant 0x63 (the round keys carry it instead): inversion in GF(2^8)
/// followed by the linear part of the affine map, on bit planes (`state[j]` is bit `j`). This is
/// Boyar & Peralta's 115-gate circuit with its four XNORs turned into XORs: 32 AND and 79 XOR.
#[inline(always)]
fn sub_bytes(state: &mut State) {
    let [u7, u6, u5, u4, u3, u2, u1, u0] = *state;

    // Top linear layer.
    let y14 = u3 ^ u5;
    let y13 = u0 ^ u6;
    let y9 = u0 ^ u3;
    let y8 = u0 ^ u5;
    let t0 = u1 ^ u2;
    let y1 = t0 ^ u7;
    let y4 = y1 ^ u3;
    let y12 = y13 ^ y14;
    let y2 = y1 ^ u0;
    let y5 = y1 ^ u6;
    let y3 = y5 ^ y8;
    let t1 = u4 ^ y12;
    let y15 = t1 ^ u5;
    let y20 = t1 ^ u1;
    let y6 = y15 ^ u7;
    let y10 = y15 ^ t0;
    let y11 = y20 ^ y9;
    let y7 = u7 ^ y11;
    let y17 = y10 ^ y11;
    let y19 = y10 ^ y8;
    let y16 = t0 ^ y11;
    let y21 = y13 ^ y16;
    let y18 = u0 ^ y16;

    // Shared non-linear middle: inversion in GF(2^4)^2.
    let t2 = y12 & y15;
    let t3 = y3 & y6;
    let t4 = t3 ^ t2;
    let t5 = y4 & u7;
    let t6 = t5 ^ t2;
    let t7 = y13 & y16;
    let t8 = y5 & y1;
    let t9 = t8 ^ t7;
    let t10 = y2 & y7;
    let t11 = t10 ^ t7;
    let t12 = y9 & y11;
    let t13 = y14 & y17;
    let t14 = t13 ^ t12;
    let t15 = y8 & y10;
    let t16 = t15 ^ t12;
    let t17 = t4 ^ t14;
    let t18 = t6 ^ t16;
    let t19 = t9 ^ t14;
    let t20 = t11 ^ t16;
    let t21 = t17 ^ y20;
    let t22 = t18 ^ y19;
    let t23 = t19 ^ y21;
    let t24 = t20 ^ y18;
    let t25 = t21 ^ t22;
    let t26 = t21 & t23;
    let t27 = t24 ^ t26;
    let t28 = t25 & t27;
    let t29 = t28 ^ t22;
    let t30 = t23 ^ t24;
    let t31 = t22 ^ t26;
    let t32 = t31 & t30;
    let t33 = t32 ^ t24;
    let t34 = t23 ^ t33;
    let t35 = t27 ^ t33;
    let t36 = t24 & t35;
    let t37 = t36 ^ t34;
    let t38 = t27 ^ t36;
    let t39 = t29 & t38;
    let t40 = t25 ^ t39;
    let t41 = t40 ^ t37;
    let t42 = t29 ^ t33;
    let t43 = t29 ^ t40;
    let t44 = t33 ^ t37;
    let t45 = t42 ^ t41;
    let z0 = t44 & y15;
    let z1 = t37 & y6;
    let z2 = t33 & u7;
    let z3 = t43 & y16;
    let z4 = t40 & y1;
    let z5 = t29 & y7;
    let z6 = t42 & y11;
    let z7 = t45 & y17;
    let z8 = t41 & y10;
    let z9 = t44 & y12;
    let z10 = t37 & y3;
    let z11 = t33 & y4;
    let z12 = t43 & y13;
    let z13 = t40 & y5;
    let z14 = t29 & y2;
    let z15 = t42 & y9;
    let z16 = t45 & y14;
    let z17 = t41 & y8;

    // Bottom linear layer.
    let t46 = z15 ^ z16;
    let t47 = z10 ^ z11;
    let t48 = z5 ^ z13;
    let t49 = z9 ^ z10;
    let t50 = z2 ^ z12;
    let t51 = z2 ^ z5;
    let t52 = z7 ^ z8;
    let t53 = z0 ^ z3;
    let t54 = z6 ^ z7;
    let t55 = z16 ^ z17;
    let t56 = z12 ^ t48;
    let t57 = t50 ^ t53;
    let t58 = z4 ^ t46;
    let t59 = z3 ^ t54;
    let t60 = t46 ^ t57;
    let t61 = z14 ^ t57;
    let t62 = t52 ^ t58;
    let t63 = t49 ^ t58;
    let t64 = z4 ^ t59;
    let t65 = t61 ^ t62;
    let t66 = z1 ^ t63;
    let s0 = t59 ^ t63;
    let s6 = t56 ^ t62;
    let s7 = t48 ^ t60;
    let t67 = t64 ^ t65;
    let s3 = t53 ^ t66;
    let s4 = t51 ^ t66;
    let s5 = t47 ^ t65;
    let s1 = t64 ^ s3;
    let s2 = t55 ^ t67;

    *state = [s7, s6, s5, s4, s3, s2, s1, s0];
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{Key, KeySize};
    use aes::cipher::consts::U16;
    use aes::cipher::{BlockDecrypt, BlockEncrypt, BlockSizeUser, KeyInit};
    use ctr::cipher::{KeyIvInit, StreamCipher};
    use proptest::prelude::*;

    /// The S-box from its definition: inversion in GF(2^8), then the affine map.
    fn reference_sbox(x: u8) -> u8 {
        let mul = |mut a: u8, mut b: u8| {
            let mut p = 0u8;
            while b != 0 {
                if b & 1 != 0 {
                    p ^= a;
                }
                a = (a << 1) ^ if a & 0x80 != 0 { 0x1b } else { 0 };
                b >>= 1;
            }
            p
        };
        // x^254 is the inverse (and maps 0 to 0).
        let mut inv = 1u8;
        for _ in 0..254 {
            inv = mul(inv, x);
        }
        inv ^ inv.rotate_left(1)
            ^ inv.rotate_left(2)
            ^ inv.rotate_left(3)
            ^ inv.rotate_left(4)
            ^ 0x63
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
