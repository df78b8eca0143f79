// ghash.cuh: GHASH arithmetic in constant time and the byte-granular loads and stores of the
// GCM records kernels, #included by kernels/aes.cu (after its u32/u64, uint4 and bswap). See
// aes.cu, "GCM chunk records".
//
// CONSTANT TIME: GHASH here is arithmetic on registers only. The carry-less products are
// integer multiplies of masked operands (BearSSL's ghash_ctmul64: each product keeps every
// fourth bit of its operands, so no carry reaches the bits kept; a GPU's integer multiply
// takes the same time whatever its operands); no table of multiples of H, no array indexed by
// H or by data.
#pragma once

// Every global load and store of the records kernels goes through the helpers below, which
// name its address to TRACE_GLOBAL: nothing on a GPU; the emulator's trace build records it
// (crates/paraes-gpu/tests/gcm_records_on_cpu.rs checks that the address stream does not
// depend on H, the key or the data).
#ifndef TRACE_GLOBAL
#define TRACE_GLOBAL(address) ((void)0)
#endif

struct Gf {
    u64 hi, lo;  // bytes 0..7 and 8..15 of a GHASH block, big-endian
};
// A GHASH multiplier with its bit reversals and Karatsuba sums made once.
struct GfKey {
    u64 h0, h1, h2, h0r, h1r, h2r;
};

// The low 64 bits of the carry-less product of x and y (masked integer multiplies).
__device__ __forceinline__ u64 clmul_lo(u64 x, u64 y) {
    const u64 m0 = 0x1111111111111111ull, m1 = m0 << 1, m2 = m0 << 2, m3 = m0 << 3;
    u64 x0 = x & m0, x1 = x & m1, x2 = x & m2, x3 = x & m3;
    u64 y0 = y & m0, y1 = y & m1, y2 = y & m2, y3 = y & m3;
    u64 z0 = (x0 * y0) ^ (x1 * y3) ^ (x2 * y2) ^ (x3 * y1);
    u64 z1 = (x0 * y1) ^ (x1 * y0) ^ (x2 * y3) ^ (x3 * y2);
    u64 z2 = (x0 * y2) ^ (x1 * y1) ^ (x2 * y0) ^ (x3 * y3);
    u64 z3 = (x0 * y3) ^ (x1 * y2) ^ (x2 * y1) ^ (x3 * y0);
    return (z0 & m0) | (z1 & m1) | (z2 & m2) | (z3 & m3);
}

__device__ __forceinline__ GfKey gf_key(Gf h) {
    GfKey k;
    k.h1 = h.hi;
    k.h0 = h.lo;
    k.h1r = __brevll(h.hi);
    k.h0r = __brevll(h.lo);
    k.h2 = k.h0 ^ k.h1;
    k.h2r = k.h0r ^ k.h1r;
    return k;
}

// y * H in GHASH's field (NIST SP 800-38D), as BearSSL's br_ghash_ctmul64 computes it.
__device__ __forceinline__ Gf gf_mul(Gf y, const GfKey& k) {
    u64 y1 = y.hi, y0 = y.lo, y0r = __brevll(y0), y1r = __brevll(y1), y2 = y0 ^ y1, y2r = y0r ^ y1r;
    u64 z0 = clmul_lo(y0, k.h0), z1 = clmul_lo(y1, k.h1), z2 = clmul_lo(y2, k.h2);
    u64 z0h = clmul_lo(y0r, k.h0r), z1h = clmul_lo(y1r, k.h1r), z2h = clmul_lo(y2r, k.h2r);
    z2 ^= z0 ^ z1;
    z2h ^= z0h ^ z1h;
    z0h = __brevll(z0h) >> 1;
    z1h = __brevll(z1h) >> 1;
    z2h = __brevll(z2h) >> 1;
    u64 v0 = z0, v1 = z0h ^ z2, v2 = z1 ^ z2h, v3 = z1h;
    v3 = (v3 << 1) | (v2 >> 63);
    v2 = (v2 << 1) | (v1 >> 63);
    v1 = (v1 << 1) | (v0 >> 63);
    v0 = v0 << 1;
    v2 ^= v0 ^ (v0 >> 1) ^ (v0 >> 2) ^ (v0 >> 7);
    v1 ^= (v0 << 63) ^ (v0 << 62) ^ (v0 << 57);
    v3 ^= v1 ^ (v1 >> 1) ^ (v1 >> 2) ^ (v1 >> 7);
    v2 ^= (v1 << 63) ^ (v1 << 62) ^ (v1 << 57);
    return Gf{v3, v2};
}

__device__ __forceinline__ Gf gf_of(uint4 v) {
    return Gf{((u64)bswap(v.x) << 32) | bswap(v.y), ((u64)bswap(v.z) << 32) | bswap(v.w)};
}
__device__ __forceinline__ uint4 block_of(Gf g) {
    return make_uint4(bswap((u32)(g.hi >> 32)), bswap((u32)g.hi), bswap((u32)(g.lo >> 32)), bswap((u32)g.lo));
}
__device__ __forceinline__ Gf gf_shfl(Gf g, int src) {
    return Gf{__shfl_sync(0xffffffffu, g.hi, src), __shfl_sync(0xffffffffu, g.lo, src)};
}

// Bytes are gathered and scattered one at a time with constant indices (registers only, no
// local memory); `n` is public (a length).
// The first n bytes (0..4) at p as a little-endian word, zero-padded.
__device__ __forceinline__ u32 load_bytes(const unsigned char* p, u32 n) {
    u32 w = 0;
#pragma unroll
    for (u32 i = 0; i < 4; ++i)
        if (i < n) {
            TRACE_GLOBAL(p + i);
            w |= (u32)p[i] << (8 * i);
        }
    return w;
}
__device__ __forceinline__ void store_bytes(unsigned char* p, u32 w, u32 n) {
#pragma unroll
    for (u32 i = 0; i < 4; ++i)
        if (i < n) {
            TRACE_GLOBAL(p + i);
            p[i] = (unsigned char)(w >> (8 * i));
        }
}
// Bytes of word k (0..3) among the first n bytes of a block.
__device__ __forceinline__ u32 word_bytes(u32 n, u32 k) { return n <= 4 * k ? 0 : n - 4 * k >= 4 ? 4 : n - 4 * k; }
// The first n bytes of a block at p (n >= 16: the whole block, one 16-byte load), zero-padded.
__device__ __forceinline__ uint4 load_part(const uint4* p, u32 n) {
    if (n >= 16) {
        TRACE_GLOBAL(p);
        return *p;
    }
    const unsigned char* b = (const unsigned char*)p;
    return make_uint4(load_bytes(b, word_bytes(n, 0)), load_bytes(b + 4, word_bytes(n, 1)),
                      load_bytes(b + 8, word_bytes(n, 2)), load_bytes(b + 12, word_bytes(n, 3)));
}
// Stores the first n bytes of v at p (n >= 16: one 16-byte store).
__device__ __forceinline__ void store_part(uint4* p, uint4 v, u32 n) {
    if (n >= 16) {
        TRACE_GLOBAL(p);
        *p = v;
        return;
    }
    unsigned char* b = (unsigned char*)p;
    store_bytes(b, v.x, word_bytes(n, 0));
    store_bytes(b + 4, v.y, word_bytes(n, 1));
    store_bytes(b + 8, v.z, word_bytes(n, 2));
    store_bytes(b + 12, v.w, word_bytes(n, 3));
}
// v with the bytes from n on zeroed (GHASH pads a partial last block with zeros).
__device__ __forceinline__ u32 keep_word(u32 w, u32 bytes) { return bytes >= 4 ? w : w & ((1u << (8 * bytes)) - 1); }
__device__ __forceinline__ uint4 keep_part(uint4 v, u32 n) {
    if (n >= 16) return v;
    return make_uint4(keep_word(v.x, word_bytes(n, 0)), keep_word(v.y, word_bytes(n, 1)), keep_word(v.z, word_bytes(n, 2)),
                      keep_word(v.w, word_bytes(n, 3)));
}
// The 16 bytes at byte `offset` of `base`, which need not be 16-byte aligned (a tag).
__device__ __forceinline__ uint4 load_at(const uint4* base, u64 offset) {
    if (offset % 16 == 0) {
        TRACE_GLOBAL(base + offset / 16);
        return base[offset / 16];
    }
    const unsigned char* b = (const unsigned char*)base + offset;
    return make_uint4(load_bytes(b, 4), load_bytes(b + 4, 4), load_bytes(b + 8, 4), load_bytes(b + 12, 4));
}
__device__ __forceinline__ void store_at(uint4* base, u64 offset, uint4 v) {
    if (offset % 16 == 0) {
        TRACE_GLOBAL(base + offset / 16);
        base[offset / 16] = v;
        return;
    }
    unsigned char* b = (unsigned char*)base + offset;
    store_bytes(b, v.x, 4);
    store_bytes(b + 4, v.y, 4);
    store_bytes(b + 8, v.z, 4);
    store_bytes(b + 12, v.w, 4);
}
