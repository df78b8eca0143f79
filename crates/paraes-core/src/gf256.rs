//! The reference arithmetic of GF(2^8) modulo the AES polynomial x^8 + x^4 + x^3 + x + 1, and
//! the S-box and its inverse derived from it (FIPS-197 Sec. 4 and 5.1.1): one definition for
//! every model of AES in the workspace (the GPU kernel model, the Sunway simulator, tests).
//!
//! Tables built here are indexed by data, so they are not constant-time: the ciphers themselves
//! use the bitsliced S-box of `aes::sbox`. A leaf module: it depends on nothing.

/// Multiplication by x, branch-free.
pub const fn xtime(b: u8) -> u8 {
    (b << 1) ^ (0x1b & 0u8.wrapping_sub(b >> 7))
}

/// The product `a * b`.
pub const fn mul(mut a: u8, mut b: u8) -> u8 {
    let mut product = 0;
    while b != 0 {
        if b & 1 != 0 {
            product ^= a;
        }
        a = xtime(a);
        b >>= 1;
    }
    product
}

/// The multiplicative inverse, `x^254` (0 maps to 0, as in the S-box).
pub const fn inverse(x: u8) -> u8 {
    let mut result = 1u8;
    let mut power = x;
    let mut exponent = 254u32;
    while exponent != 0 {
        if exponent & 1 != 0 {
            result = mul(result, power);
        }
        power = mul(power, power);
        exponent >>= 1;
    }
    result
}

/// The S-box of one byte: the inverse, then the affine map (FIPS-197 equation 5.1).
pub const fn sub_byte(x: u8) -> u8 {
    let inv = inverse(x);
    inv ^ inv.rotate_left(1) ^ inv.rotate_left(2) ^ inv.rotate_left(3) ^ inv.rotate_left(4) ^ 0x63
}

/// The AES S-box (FIPS-197 Fig. 7), computed at compile time.
pub const SBOX: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut x = 0;
    while x < 256 {
        table[x] = sub_byte(x as u8);
        x += 1;
    }
    table
};

/// The inverse S-box (FIPS-197 Fig. 14), computed at compile time.
pub const INV_SBOX: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut x = 0;
    while x < 256 {
        table[SBOX[x] as usize] = x as u8;
        x += 1;
    }
    table
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fips_197_values() {
        assert_eq!(
            (SBOX[0x00], SBOX[0x01], SBOX[0x53], SBOX[0xff]),
            (0x63, 0x7c, 0xed, 0x16)
        );
        assert!((0..=255u8).all(|x| INV_SBOX[SBOX[x as usize] as usize] == x));
        // FIPS-197 Sec. 4.2: {57} * {83} = {c1}; {57} * {13} = {fe}.
        assert_eq!(mul(0x57, 0x83), 0xc1);
        assert_eq!(mul(0x57, 0x13), 0xfe);
        assert!((1..=255u8).all(|x| mul(x, inverse(x)) == 1));
    }
}
