//! A CPE's local data memory as the simulated instructions and DMA see it: word-addressed
//! storage of the allocated part (the layout is [`crate::ldm_plan::LdmPlan`]'s).

/// The contents of a CPE's LDM (only the allocated part is stored), as 32-bit words.
#[derive(Clone, Debug)]
pub struct Ldm {
    words: Vec<u32>,
}

impl Ldm {
    /// Zeroed storage for `bytes` bytes of LDM.
    pub fn new(bytes: usize) -> Self {
        Ldm {
            words: vec![0; bytes.div_ceil(4)],
        }
    }

    /// The word at word address `word`.
    #[inline(always)]
    pub fn word(&self, word: usize) -> u32 {
        self.words[word]
    }

    /// Writes the word at `word`.
    #[inline(always)]
    pub fn set_word(&mut self, word: usize, value: u32) {
        self.words[word] = value;
    }

    /// The byte at byte address `addr` (little-endian words).
    #[inline(always)]
    pub fn byte(&self, addr: usize) -> u8 {
        (self.words[addr / 4] >> (8 * (addr % 4))) as u8
    }

    /// The 8 words at `word`.
    #[inline(always)]
    pub fn vector(&self, word: usize) -> [u32; 8] {
        let mut lanes = [0u32; 8];
        lanes.copy_from_slice(&self.words[word..word + 8]);
        lanes
    }

    /// Writes 8 words at `word`.
    #[inline(always)]
    pub fn set_vector(&mut self, word: usize, lanes: [u32; 8]) {
        self.words[word..word + 8].copy_from_slice(&lanes);
    }

    /// Copies `words` into LDM at `word` (a DMA get of prepared tables).
    pub fn put_words(&mut self, word: usize, words: &[u32]) {
        self.words[word..word + words.len()].copy_from_slice(words);
    }

    /// A DMA get: writes `bytes` at LDM byte address `4 * word + skip` (word-aligned runs are
    /// copied whole; `skip` may be any byte offset).
    pub fn get_bytes(&mut self, word: usize, skip: usize, bytes: &[u8]) {
        let mut addr = 4 * word + skip;
        let mut rest = bytes;
        while !rest.is_empty() && !addr.is_multiple_of(4) {
            self.set_byte(addr, rest[0]);
            addr += 1;
            rest = &rest[1..];
        }
        let whole = rest.len() / 4;
        for (slot, chunk) in self.words[addr / 4..addr / 4 + whole]
            .iter_mut()
            .zip(rest.chunks_exact(4))
        {
            *slot = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        }
        addr += 4 * whole;
        for &b in &rest[4 * whole..] {
            self.set_byte(addr, b);
            addr += 1;
        }
    }

    /// A DMA put: reads `out.len()` bytes from LDM byte address `4 * word + skip`.
    pub fn put_bytes_out(&self, word: usize, skip: usize, out: &mut [u8]) {
        let mut addr = 4 * word + skip;
        let mut rest: &mut [u8] = out;
        while !rest.is_empty() && !addr.is_multiple_of(4) {
            rest[0] = self.byte(addr);
            addr += 1;
            rest = &mut rest[1..];
        }
        let whole = rest.len() / 4;
        let (body, tail) = rest.split_at_mut(4 * whole);
        for (chunk, word) in body
            .chunks_exact_mut(4)
            .zip(&self.words[addr / 4..addr / 4 + whole])
        {
            chunk.copy_from_slice(&word.to_le_bytes());
        }
        addr += 4 * whole;
        for b in tail.iter_mut() {
            *b = self.byte(addr);
            addr += 1;
        }
    }

    /// Writes the byte at byte address `addr` (little-endian words).
    #[inline(always)]
    pub fn set_byte(&mut self, addr: usize, value: u8) {
        let shift = 8 * (addr % 4);
        let word = &mut self.words[addr / 4];
        *word = (*word & !(0xff << shift)) | (u32::from(value) << shift);
    }
}
