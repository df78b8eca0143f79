//! Host-side planning that needs no GPU: how a buffer splits into a partial head block,
//! whole blocks for the device and a partial tail; how the whole blocks split into pieces
//! for the streams; the CTR counter of a piece (Stream counters) or its place among GCM
//! chunks; the grid size; the round-key words.

use std::ops::Range;

use paraes_core::modes::counter_at;

/// Where the bytes of a buffer go: `head` and `tail` are partial CTR blocks (done on the
/// host), `body` is whole blocks starting at stream block `first_block` (done on the GPU).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Split {
    /// Bytes before the first block boundary (CTR only; empty when the buffer starts on one).
    pub head: Range<usize>,
    /// Whole 16-byte blocks.
    pub body: Range<usize>,
    /// Bytes after the last whole block.
    pub tail: Range<usize>,
    /// Stream block index of the first body block.
    pub first_block: u64,
}

/// Splits a buffer of `len` bytes at stream byte `offset` into head, body and tail.
pub fn split(offset: u64, len: usize) -> Split {
    let skip = (offset % 16) as usize;
    let head_len = if skip == 0 { 0 } else { (16 - skip).min(len) };
    let body_len = (len - head_len) / 16 * 16;
    let head = 0..head_len;
    let body = head_len..head_len + body_len;
    let tail = body.end..len;
    Split {
        head,
        body,
        tail,
        first_block: (offset + head_len as u64) / 16,
    }
}

/// Length of the pieces a body of `len` bytes is cut into for `streams` streams: enough
/// pieces to keep every stream busy (copy-in, kernel and copy-out of different pieces
/// overlap), none shorter than `min_piece` (per-piece costs) or longer than `max_piece`
/// (the size of each stream's buffers). A multiple of 16, at least 16.
pub fn piece_len(len: usize, streams: usize, min_piece: usize, max_piece: usize) -> usize {
    let max_piece = (max_piece / 16 * 16).max(16);
    let min_piece = (min_piece / 16 * 16).clamp(16, max_piece);
    let share = len.div_ceil(streams.max(1) * 2).next_multiple_of(16);
    share.clamp(min_piece, max_piece)
}

/// The 128-bit counter of stream block `block` as the kernels take it: (high, low) halves.
pub fn counter_halves(first: &[u8; 16], block: u64) -> (u64, u64) {
    let counter = counter_at(first, u128::from(block));
    ((counter >> 64) as u64, counter as u64)
}

/// The longest stride, in 16-byte blocks, the GCM chunk kernels take (256 MiB records); with
/// [`GCM_MAX_PIECE`] it keeps every block's place within a launch below 2^32, as the kernels
/// assume. Longer strides, and strides that are not whole blocks, run on the host.
pub const GCM_MAX_STRIDE_BLOCKS: u64 = 1 << 24;

/// The longest piece, in bytes, one launch of a GCM chunk kernel takes (2^31 blocks).
pub const GCM_MAX_PIECE: usize = 1 << 35;

/// What a GCM chunk kernel takes besides the common parameters (`struct GcmLayout` in
/// kernels/aes.cu): the base nonce as three little-endian column words and the stride in
/// blocks.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GcmLayout {
    /// Bytes 0..4, 4..8 and 8..12 of the base nonce, each read little-endian.
    pub nonce: [u32; 3],
    /// Blocks from one record to the next.
    pub stride_blocks: u32,
}

impl GcmLayout {
    /// The layout of [`paraes_core::Counters::GcmChunks`] `{ base_nonce, stride }`, or `None`
    /// where the kernels cannot run it: a stride that is not whole blocks, or longer than
    /// [`GCM_MAX_STRIDE_BLOCKS`].
    pub fn new(base_nonce: &[u8; 12], stride: usize) -> Option<GcmLayout> {
        let stride_blocks = stride as u64 / 16;
        if !stride.is_multiple_of(16)
            || stride < paraes_core::engine::GCM_CHUNK_LEN
            || stride_blocks > GCM_MAX_STRIDE_BLOCKS
        {
            return None;
        }
        let word = |i: usize| {
            u32::from_le_bytes([
                base_nonce[i],
                base_nonce[i + 1],
                base_nonce[i + 2],
                base_nonce[i + 3],
            ])
        };
        Some(GcmLayout {
            nonce: [word(0), word(4), word(8)],
            stride_blocks: stride_blocks as u32,
        })
    }

    /// Where stream block `block` lies, as the GCM chunk kernels take it in place of a
    /// counter: (record, block within the record).
    pub fn place(&self, block: u64) -> (u64, u64) {
        let stride = u64::from(self.stride_blocks);
        (block / stride, block % stride)
    }
}

/// Thread blocks for `nblocks` AES blocks: enough to fill every SM (`sms` x
/// `resident_per_sm`), no more than there are tiles of `blocks_per_thread * threads` AES
/// blocks (the kernels loop over the rest, grid-stride). At least 1.
pub fn grid_size(
    nblocks: u64,
    threads: u32,
    blocks_per_thread: u32,
    sms: u32,
    resident_per_sm: u32,
) -> u32 {
    let tile = u64::from(threads.max(1)) * u64::from(blocks_per_thread.max(1));
    let tiles = nblocks.div_ceil(tile).max(1);
    let full = u64::from(sms.max(1)) * u64::from(resident_per_sm.max(1));
    tiles.min(full).min(u64::from(u32::MAX)) as u32
}

/// Round keys as the kernels take them (`struct RoundKeys` in kernels/aes.cu): each 16-byte
/// round key as four little-endian column words, padded with zeros to 15 round keys.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoundKeyWords {
    /// Column words, 4 per round key.
    pub w: [u32; 60],
}

impl RoundKeyWords {
    /// The words of `keys` (encryption keys, or equivalent-inverse-cipher decryption keys).
    pub fn new(keys: &[[u8; 16]]) -> Self {
        let mut w = [0u32; 60];
        for (words, key) in w.chunks_exact_mut(4).zip(keys) {
            for (word, bytes) in words.iter_mut().zip(key.chunks_exact(4)) {
                *word = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
            }
        }
        RoundKeyWords { w }
    }

    /// Overwrites the words (they are key material).
    pub fn wipe(&mut self) {
        for word in self.w.iter_mut() {
            *word = 0;
        }
        // Keeps the stores from being dropped as dead before the value goes away.
        std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn split_examples() {
        assert_eq!(
            split(0, 0),
            Split {
                head: 0..0,
                body: 0..0,
                tail: 0..0,
                first_block: 0
            }
        );
        assert_eq!(
            split(0, 33),
            Split {
                head: 0..0,
                body: 0..32,
                tail: 32..33,
                first_block: 0
            }
        );
        assert_eq!(
            split(5, 3),
            Split {
                head: 0..3,
                body: 3..3,
                tail: 3..3,
                first_block: 0
            }
        );
        assert_eq!(
            split(5, 11),
            Split {
                head: 0..11,
                body: 11..11,
                tail: 11..11,
                first_block: 1
            }
        );
        assert_eq!(
            split(5, 44),
            Split {
                head: 0..11,
                body: 11..43,
                tail: 43..44,
                first_block: 1
            }
        );
        assert_eq!(
            split(32, 16),
            Split {
                head: 0..0,
                body: 0..16,
                tail: 16..16,
                first_block: 2
            }
        );
    }

    proptest! {
        #[test]
        fn split_covers_the_buffer(offset in 0u64..1 << 40, len in 0usize..100_000) {
            let s = split(offset, len);
            prop_assert_eq!(s.head.start, 0);
            prop_assert_eq!(s.head.end, s.body.start);
            prop_assert_eq!(s.body.end, s.tail.start);
            prop_assert_eq!(s.tail.end, len);
            prop_assert!(s.head.len() < 16 && s.tail.len() < 16);
            prop_assert_eq!(s.body.len() % 16, 0);
            if !s.body.is_empty() {
                prop_assert_eq!((offset + s.body.start as u64) % 16, 0);
            }
            if !s.body.is_empty() || !s.tail.is_empty() {
                prop_assert_eq!(s.first_block * 16, offset + s.head.len() as u64);
            }
        }

        #[test]
        fn pieces_are_whole_blocks_within_bounds(
            len in 0usize..1 << 34, streams in 1usize..8, min in 0usize..1 << 22, max in 0usize..1 << 26,
        ) {
            let p = piece_len(len, streams, min, max);
            prop_assert!(p >= 16 && p.is_multiple_of(16));
            prop_assert!(p <= (max / 16 * 16).max(16));
        }

        #[test]
        fn counter_halves_add_with_carry(iv in any::<[u8; 16]>(), block in any::<u64>()) {
            let (hi, lo) = counter_halves(&iv, block);
            let expect = u128::from_be_bytes(iv).wrapping_add(u128::from(block));
            prop_assert_eq!((u128::from(hi) << 64) | u128::from(lo), expect);
        }

        #[test]
        fn grid_never_exceeds_tiles_or_residency(
            nblocks in 0u64..1 << 40, threads in 1u32..1025, sms in 1u32..200, res in 1u32..9,
        ) {
            let g = grid_size(nblocks, threads, 4, sms, res);
            prop_assert!(g >= 1);
            prop_assert!(u64::from(g) <= u64::from(sms) * u64::from(res));
            let tiles = nblocks.div_ceil(u64::from(threads) * 4).max(1);
            prop_assert!(u64::from(g) <= tiles);
        }
    }

    #[test]
    fn piece_len_examples() {
        // A 1 MiB call on 3 streams: 6 pieces of 176 KiB would be under the floor: 256 KiB.
        assert_eq!(piece_len(1 << 20, 3, 256 << 10, 8 << 20), 256 << 10);
        // 4 GiB: capped by the per-stream buffer.
        assert_eq!(piece_len(4 << 30, 3, 256 << 10, 8 << 20), 8 << 20);
        // 24 MiB on 3 streams: 4 MiB pieces, two rounds over the streams.
        assert_eq!(piece_len(24 << 20, 3, 256 << 10, 8 << 20), 4 << 20);
    }

    proptest! {
        /// The counter block a GCM kernel makes for stream block `block` (kernels/aes.cu,
        /// `run`: nonce words, record, 2 + block within the record) is the core's.
        #[test]
        fn gcm_places_give_the_cores_counters(
            nonce in any::<[u8; 12]>(), tag in any::<bool>(), block in 0u64..1 << 50,
        ) {
            let stride = paraes_core::engine::GCM_CHUNK_LEN + if tag { 16 } else { 0 };
            let layout = GcmLayout::new(&nonce, stride).unwrap();
            let (record, within) = layout.place(block);
            prop_assert!(within < u64::from(layout.stride_blocks));
            prop_assert_eq!(record * u64::from(layout.stride_blocks) + within, block);
            let words = [
                layout.nonce[0],
                layout.nonce[1] ^ ((record >> 32) as u32).swap_bytes(),
                layout.nonce[2] ^ (record as u32).swap_bytes(),
                (2 + within as u32).swap_bytes(),
            ];
            let mut counter = [0u8; 16];
            for (bytes, w) in counter.chunks_exact_mut(4).zip(words) {
                bytes.copy_from_slice(&w.to_le_bytes());
            }
            let mut expect = paraes_core::modes::gcm_chunk_counter(&nonce, record);
            expect[12..].copy_from_slice(&(2 + within as u32).to_be_bytes());
            prop_assert_eq!(counter, expect);
        }
    }

    #[test]
    fn gcm_layouts_the_kernels_cannot_run_are_refused() {
        let nonce = [7u8; 12];
        assert!(GcmLayout::new(&nonce, 16384).is_some());
        assert!(GcmLayout::new(&nonce, 16400).is_some());
        assert!(GcmLayout::new(&nonce, 16385).is_none());
        assert!(GcmLayout::new(&nonce, 16368).is_none());
        assert!(GcmLayout::new(&nonce, 16 << 24).is_some());
        assert!(GcmLayout::new(&nonce, (16 << 24) + 16).is_none());
        // The kernels' precondition: a piece's last block within its launch stays below 2^32,
        // with a tile to spare.
        let tile = u64::from(crate::BLOCKS_PER_THREAD * crate::MAX_THREADS_PER_BLOCK);
        assert!(GCM_MAX_STRIDE_BLOCKS + (GCM_MAX_PIECE / 16) as u64 + tile <= 1 << 32);
    }

    #[test]
    fn counter_wraps_at_2_to_128() {
        assert_eq!(counter_halves(&[0xff; 16], 1), (0, 0));
        let mut iv = [0u8; 16];
        iv[8..].copy_from_slice(&[0xff; 8]);
        assert_eq!(counter_halves(&iv, 2), (1, 1));
    }

    #[test]
    fn round_key_words_are_little_endian_columns() {
        let mut key = [[0u8; 16]; 2];
        key[1] = *b"\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f";
        let words = RoundKeyWords::new(&key);
        assert_eq!(
            &words.w[4..8],
            &[0x0302_0100, 0x0706_0504, 0x0b0a_0908, 0x0f0e_0d0c]
        );
        assert!(words.w[8..].iter().all(|&w| w == 0));
    }
}
