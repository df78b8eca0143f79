//! The AES S-box and its inverse as the simulated kernels load them into LDM: the workspace's
//! one GF(2^8) reference (`paraes_core::gf256`, computed from the multiplicative inverse and
//! the affine map, FIPS-197 Sec. 5.1.1), so the simulator carries no hand-typed table.

use paraes_core::gf256;

/// The AES S-box (FIPS-197 Fig. 7).
pub fn sbox() -> [u8; 256] {
    gf256::SBOX
}

/// The inverse S-box.
pub fn inv_sbox() -> [u8; 256] {
    gf256::INV_SBOX
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fips_197_entries() {
        let s = sbox();
        assert_eq!(
            (s[0x00], s[0x01], s[0x53], s[0xff]),
            (0x63, 0x7c, 0xed, 0x16)
        );
        let inv = inv_sbox();
        assert!((0..=255u8).all(|x| inv[s[x as usize] as usize] == x));
    }
}
