//! The constant-time AES S-box on bit planes (Boyar & Peralta's circuit), shared by the portable
//! cipher and the key schedule: a leaf module, so neither depends on the other for it.
//!
//! The planes' layout is the portable cipher's: `state[j]` holds bit `j` of 64 bytes. The
//! circuit works on any layout, since it treats every bit position alike.

use zeroize::Zeroize;

/// Four blocks as eight bit planes: `state[j]` holds bit `j` of all 64 bytes, the byte in row
/// `r`, column `c` of block `b` at bit `16 * r + 4 * c + b`. So moving every byte one row is a
/// 16-bit rotation, and moving it along its row needs a masked pair of rotations.
pub(crate) type State = [u64; 8];

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

/// SubBytes without its constant 0x63 (the round keys carry it instead): inversion in GF(2^8)
/// followed by the linear part of the affine map, on bit planes (`state[j]` is bit `j`). This is
/// Boyar & Peralta's 115-gate circuit with its four XNORs turned into XORs: 32 AND and 79 XOR.
#[inline(always)]
pub(crate) fn sub_bytes(state: &mut State) {
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
