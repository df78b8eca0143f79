//! POLYVAL's portable path: the constant-time RustCrypto `polyval` crate, fed whole buffers. For
//! GHASH's byte order the blocks are reversed into a stack batch first, so the crate still gets
//! many blocks per call (its own parallel blocks) instead of one.

use polyval::universal_hash::{KeyInit, UniversalHash};
use polyval::Block;
use zeroize::Zeroize;

/// Blocks reversed per call to the crate on the reflected path (1 KiB of stack).
const BATCH: usize = 64;

/// POLYVAL keyed with `h` of `data` (zero-padded) then `trailer`, every block byte-reversed
/// first when `REFLECT`.
pub(super) fn hash<const REFLECT: bool>(h: &[u8; 16], data: &[u8], trailer: &[u8; 16]) -> [u8; 16] {
    let mut mac = polyval::Polyval::new(&(*h).into());
    if REFLECT {
        let mut batch = [Block::default(); BATCH];
        let mut whole = data.chunks_exact(16);
        loop {
            let mut count = 0;
            for (block, bytes) in batch.iter_mut().zip(&mut whole) {
                reverse_into(block, bytes);
                count += 1;
            }
            if count == 0 {
                break;
            }
            mac.update(&batch[..count]);
        }
        let mut last = 0;
        let rest = whole.remainder();
        if !rest.is_empty() {
            let mut padded = [0u8; 16];
            padded[..rest.len()].copy_from_slice(rest);
            reverse_into(&mut batch[0], &padded);
            padded.zeroize();
            last = 1;
        }
        reverse_into(&mut batch[last], trailer);
        mac.update(&batch[..=last]);
        for block in &mut batch {
            block.as_mut_slice().zeroize();
        }
    } else {
        mac.update_padded(data);
        mac.update(&[(*trailer).into()]);
    }
    mac.finalize().into()
}

/// Writes the 16 bytes of `bytes` into `block`, reversed.
fn reverse_into(block: &mut Block, bytes: &[u8]) {
    for (out, byte) in block.iter_mut().zip(bytes.iter().rev()) {
        *out = *byte;
    }
}
