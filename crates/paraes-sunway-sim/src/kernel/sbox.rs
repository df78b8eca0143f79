//! The AES S-box and its inverse, computed from the multiplicative inverse in GF(2^8) and the
//! affine map (FIPS-197 Sec. 5.1.1), so the simulator carries no hand-typed table.

/// The AES S-box (FIPS-197 Fig. 7).
pub fn sbox() -> [u8; 256] {
    let mut table = [0u8; 256];
    for (x, out) in table.iter_mut().enumerate() {
        let inv = gf_inverse(x as u8);
        let mut s = inv;
        for shift in 1..5 {
            s ^= inv.rotate_left(shift);
        }
        *out = s ^ 0x63;
    }
    table
}

/// The inverse S-box.
pub fn inv_sbox() -> [u8; 256] {
    let forward = sbox();
    let mut table = [0u8; 256];
    for (x, &s) in forward.iter().enumerate() {
        table[s as usize] = x as u8;
    }
    table
}

fn gf_mul(mut a: u8, mut b: u8) -> u8 {
    let mut product = 0;
    while b != 0 {
        if b & 1 != 0 {
            product ^= a;
        }
        a = (a << 1) ^ if a & 0x80 != 0 { 0x1b } else { 0 };
        b >>= 1;
    }
    product
}

fn gf_inverse(x: u8) -> u8 {
    // x^254 = x^-1 in GF(2^8) (0 maps to 0).
    let mut result = 1u8;
    let mut power = x;
    let mut exponent = 254u32;
    while exponent != 0 {
        if exponent & 1 != 0 {
            result = gf_mul(result, power);
        }
        power = gf_mul(power, power);
        exponent >>= 1;
    }
    result
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
