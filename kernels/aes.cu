// aes.cu: AES-128/192/256 ECB encrypt/decrypt and CTR (fused and keystream-only; one 128-bit
// counter for the stream, or GCM chunk counters for format v3 bodies) for paraes.
//
// Compiled to PTX by build-ptx.py (NVRTC, no nvcc) and to sm_80/sm_90 cubins by the pinned
// ptxas (build-ptx.sh); all three are committed and embedded by crates/paraes-gpu.
// docs/GPU.md explains the design. The Rust model in crates/paraes-gpu/src/model.rs mirrors
// the BASE kernels (ROTATE layout, no R1) operation for operation and is tested against the
// AES oracle on machines without a GPU: keep the two in step. The variants (PAIR, R1, lb5)
// and the GCM chunk counters of the _gcm kernels are not modelled; kernels/emulate/host.cpp
// runs every kernel of this file, variants and _gcm kernels included, on the CPU
// (crates/paraes-gpu/tests/kernel_source_on_cpu.rs).
//
// State layout: one AES block is four 32-bit column words, each loaded little-endian from
// its 4 bytes (byte 0 of the block = row 0 of column 0 = bits 0..7 of word 0), exactly as a
// 16-byte uint4 load yields it.
//
// Tables (the base kernels; the PAIR variants are described at `enum Layout`): ONE
// 256-entry T-table (Te0 for encryption, Td0 for decryption) in shared memory,
// replicated 32 times and interleaved so that entry e of lane l lives at word e * 32 + l,
// i.e. always in bank l. Every lookup of a lane hits that lane's own bank whatever the
// data: no bank conflicts, and the shared-memory timing does not depend on the key or the
// data. Te1..Te3 (Td1..Td3) are byte rotations of Te0 (Td0), done with __funnelshift_l,
// which keeps the table at 32 KiB. The last encryption round takes the S-box byte out of
// Te0 entries with __byte_perm; the last decryption round reads a lane-replicated inverse
// S-box packed four bytes to a word (8 KiB) and picks the byte with __byte_perm.

#define LANES 32
#define TABLE_WORDS (256 * LANES)
#define INV_SBOX_WORDS (64 * LANES)
#ifndef BLOCKS_PER_THREAD
#define BLOCKS_PER_THREAD 4
#endif
#ifndef MAX_THREADS
#define MAX_THREADS 512
#endif

typedef unsigned int u32;
typedef unsigned long long u64;

// Round keys as column words (see the state layout), by value in the kernel's parameter
// space: uniform across the grid, broadcast to all lanes, private to each launch (so
// concurrent launches with different keys cannot race, unlike a __constant__ symbol).
struct RoundKeys {
    u32 w[60];
};

// GCM chunk counters (the _gcm kernels; docs/GPU.md, "GCM chunks"), also by value in the
// parameter space. The stream is records of stride_blocks blocks; the first GCM_CHUNK_BLOCKS
// of record r are chunk r's data, block j of them under the counter block
// (base nonce XOR be96(r)) || be32(2 + j); the others (a tag's room) are left as they are.
#define GCM_CHUNK_BLOCKS 1024
struct GcmLayout {
    u32 nonce[3];       // the base nonce as column words 0..2 (little-endian, as the state)
    u32 stride_blocks;  // blocks from one record to the next (at least GCM_CHUNK_BLOCKS)
};
// A thread's blocks in a tile are blockDim apart: at most one record end between two of them.
static_assert(MAX_THREADS <= GCM_CHUNK_BLOCKS, "a thread block must not span a whole record");

__device__ const unsigned char SBOX[256] = {
    0x63, 0x7c, 0x77, 0x7b, 0xf2, 0x6b, 0x6f, 0xc5, 0x30, 0x01, 0x67, 0x2b, 0xfe, 0xd7, 0xab, 0x76,
    0xca, 0x82, 0xc9, 0x7d, 0xfa, 0x59, 0x47, 0xf0, 0xad, 0xd4, 0xa2, 0xaf, 0x9c, 0xa4, 0x72, 0xc0,
    0xb7, 0xfd, 0x93, 0x26, 0x36, 0x3f, 0xf7, 0xcc, 0x34, 0xa5, 0xe5, 0xf1, 0x71, 0xd8, 0x31, 0x15,
    0x04, 0xc7, 0x23, 0xc3, 0x18, 0x96, 0x05, 0x9a, 0x07, 0x12, 0x80, 0xe2, 0xeb, 0x27, 0xb2, 0x75,
    0x09, 0x83, 0x2c, 0x1a, 0x1b, 0x6e, 0x5a, 0xa0, 0x52, 0x3b, 0xd6, 0xb3, 0x29, 0xe3, 0x2f, 0x84,
    0x53, 0xd1, 0x00, 0xed, 0x20, 0xfc, 0xb1, 0x5b, 0x6a, 0xcb, 0xbe, 0x39, 0x4a, 0x4c, 0x58, 0xcf,
    0xd0, 0xef, 0xaa, 0xfb, 0x43, 0x4d, 0x33, 0x85, 0x45, 0xf9, 0x02, 0x7f, 0x50, 0x3c, 0x9f, 0xa8,
    0x51, 0xa3, 0x40, 0x8f, 0x92, 0x9d, 0x38, 0xf5, 0xbc, 0xb6, 0xda, 0x21, 0x10, 0xff, 0xf3, 0xd2,
    0xcd, 0x0c, 0x13, 0xec, 0x5f, 0x97, 0x44, 0x17, 0xc4, 0xa7, 0x7e, 0x3d, 0x64, 0x5d, 0x19, 0x73,
    0x60, 0x81, 0x4f, 0xdc, 0x22, 0x2a, 0x90, 0x88, 0x46, 0xee, 0xb8, 0x14, 0xde, 0x5e, 0x0b, 0xdb,
    0xe0, 0x32, 0x3a, 0x0a, 0x49, 0x06, 0x24, 0x5c, 0xc2, 0xd3, 0xac, 0x62, 0x91, 0x95, 0xe4, 0x79,
    0xe7, 0xc8, 0x37, 0x6d, 0x8d, 0xd5, 0x4e, 0xa9, 0x6c, 0x56, 0xf4, 0xea, 0x65, 0x7a, 0xae, 0x08,
    0xba, 0x78, 0x25, 0x2e, 0x1c, 0xa6, 0xb4, 0xc6, 0xe8, 0xdd, 0x74, 0x1f, 0x4b, 0xbd, 0x8b, 0x8a,
    0x70, 0x3e, 0xb5, 0x66, 0x48, 0x03, 0xf6, 0x0e, 0x61, 0x35, 0x57, 0xb9, 0x86, 0xc1, 0x1d, 0x9e,
    0xe1, 0xf8, 0x98, 0x11, 0x69, 0xd9, 0x8e, 0x94, 0x9b, 0x1e, 0x87, 0xe9, 0xce, 0x55, 0x28, 0xdf,
    0x8c, 0xa1, 0x89, 0x0d, 0xbf, 0xe6, 0x42, 0x68, 0x41, 0x99, 0x2d, 0x0f, 0xb0, 0x54, 0xbb, 0x16,
};

__device__ const unsigned char INV_SBOX[256] = {
    0x52, 0x09, 0x6a, 0xd5, 0x30, 0x36, 0xa5, 0x38, 0xbf, 0x40, 0xa3, 0x9e, 0x81, 0xf3, 0xd7, 0xfb,
    0x7c, 0xe3, 0x39, 0x82, 0x9b, 0x2f, 0xff, 0x87, 0x34, 0x8e, 0x43, 0x44, 0xc4, 0xde, 0xe9, 0xcb,
    0x54, 0x7b, 0x94, 0x32, 0xa6, 0xc2, 0x23, 0x3d, 0xee, 0x4c, 0x95, 0x0b, 0x42, 0xfa, 0xc3, 0x4e,
    0x08, 0x2e, 0xa1, 0x66, 0x28, 0xd9, 0x24, 0xb2, 0x76, 0x5b, 0xa2, 0x49, 0x6d, 0x8b, 0xd1, 0x25,
    0x72, 0xf8, 0xf6, 0x64, 0x86, 0x68, 0x98, 0x16, 0xd4, 0xa4, 0x5c, 0xcc, 0x5d, 0x65, 0xb6, 0x92,
    0x6c, 0x70, 0x48, 0x50, 0xfd, 0xed, 0xb9, 0xda, 0x5e, 0x15, 0x46, 0x57, 0xa7, 0x8d, 0x9d, 0x84,
    0x90, 0xd8, 0xab, 0x00, 0x8c, 0xbc, 0xd3, 0x0a, 0xf7, 0xe4, 0x58, 0x05, 0xb8, 0xb3, 0x45, 0x06,
    0xd0, 0x2c, 0x1e, 0x8f, 0xca, 0x3f, 0x0f, 0x02, 0xc1, 0xaf, 0xbd, 0x03, 0x01, 0x13, 0x8a, 0x6b,
    0x3a, 0x91, 0x11, 0x41, 0x4f, 0x67, 0xdc, 0xea, 0x97, 0xf2, 0xcf, 0xce, 0xf0, 0xb4, 0xe6, 0x73,
    0x96, 0xac, 0x74, 0x22, 0xe7, 0xad, 0x35, 0x85, 0xe2, 0xf9, 0x37, 0xe8, 0x1c, 0x75, 0xdf, 0x6e,
    0x47, 0xf1, 0x1a, 0x71, 0x1d, 0x29, 0xc5, 0x89, 0x6f, 0xb7, 0x62, 0x0e, 0xaa, 0x18, 0xbe, 0x1b,
    0xfc, 0x56, 0x3e, 0x4b, 0xc6, 0xd2, 0x79, 0x20, 0x9a, 0xdb, 0xc0, 0xfe, 0x78, 0xcd, 0x5a, 0xf4,
    0x1f, 0xdd, 0xa8, 0x33, 0x88, 0x07, 0xc7, 0x31, 0xb1, 0x12, 0x10, 0x59, 0x27, 0x80, 0xec, 0x5f,
    0x60, 0x51, 0x7f, 0xa9, 0x19, 0xb5, 0x4a, 0x0d, 0x2d, 0xe5, 0x7a, 0x9f, 0x93, 0xc9, 0x9c, 0xef,
    0xa0, 0xe0, 0x3b, 0x4d, 0xae, 0x2a, 0xf5, 0xb0, 0xc8, 0xeb, 0xbb, 0x3c, 0x83, 0x53, 0x99, 0x61,
    0x17, 0x2b, 0x04, 0x7e, 0xba, 0x77, 0xd6, 0x26, 0xe1, 0x69, 0x14, 0x63, 0x55, 0x21, 0x0c, 0x7d,
};

__device__ __forceinline__ u32 xtime(u32 b) { return ((b << 1) ^ ((b >> 7) * 0x1bu)) & 0xffu; }

// GF(2^8) product of b with a small constant c (c < 16).
__device__ __forceinline__ u32 gmul(u32 b, u32 c) {
    u32 r = 0;
    for (int i = 0; i < 4; ++i) {
        if (c & (1u << i)) r ^= b;
        b = xtime(b);
    }
    return r;
}

__device__ __forceinline__ u32 rotl(u32 x, u32 n) { return __funnelshift_l(x, x, n); }

// Te0[e] = (2s, s, s, 3s) with s = S[e], rows 0..3 in bytes 0..3.
__device__ __forceinline__ u32 te0_entry(u32 e) {
    u32 s = SBOX[e];
    u32 s2 = xtime(s);
    return s2 | (s << 8) | (s << 16) | ((s2 ^ s) << 24);
}

// Td0[e] = (14s, 9s, 13s, 11s) with s = InvS[e].
__device__ __forceinline__ u32 td0_entry(u32 e) {
    u32 s = INV_SBOX[e];
    return gmul(s, 14) | (gmul(s, 9) << 8) | (gmul(s, 13) << 16) | (gmul(s, 11) << 24);
}

// Word w of the packed inverse S-box: InvS[4w .. 4w + 4], little-endian.
__device__ __forceinline__ u32 inv_sbox_word(u32 w) {
    return INV_SBOX[4 * w] | (INV_SBOX[4 * w + 1] << 8) | (INV_SBOX[4 * w + 2] << 16) |
           ((u32)INV_SBOX[4 * w + 3] << 24);
}

// Byte k of x, alone in the low byte: one PRMT (ALU pipe), where shift-and-mask is two.
__device__ __forceinline__ u32 byte_of(u32 x, int k) { return __byte_perm(x, 0, 0x4440 + k); }

// Table layouts (the LAYOUT template parameter; docs/GPU.md, "Kernel variants"):
//   ROTATE: ONE table, T0 only, entry e of lane l at word e * 32 + l (32 KiB, static shared
//           memory). Row k of a round column is rotl(T0[byte k], 8k): three rotations and
//           one IMAD (the entry address) per lookup.
//   PAIR:   TWO tables interleaved, T0 and T1 = rotl(T0, 8): entry e of table t, lane l at
//           word e * 64 + t * 32 + l (64 KiB, dynamic shared memory). The byte address
//           (e << 8) | (t << 7) | (4 * l) is ONE PRMT of the state word and a per-lane
//           constant, no IMAD; and T2 = rotl(T0, 16), T3 = rotl(T1, 16), so a column is
//           T0[a] ^ T1[b] ^ rotl(T0[c] ^ T1[d], 16): one rotation instead of three.
// In both the bank (address / 4 mod 32) is the lane's own whatever the data.
enum Layout { ROTATE = 0, PAIR = 1 };

// Byte address of entry e of the calling lane in the ROTATE table: e * 128 + lane * 4,
// one IMAD (FMA pipe, leaving the busier ALU pipe alone) that ptxas adds to the table's
// shared-memory address as an immediate. The index depends on the data; the bank
// (address / 4 mod 32 = lane) never does.
__device__ __forceinline__ u32 entry_offset(u32 e, u32 lane4) { return e * (LANES * 4) + lane4; }

// TRACE_BANK: nothing on a GPU; the emulator's trace build records the bank of every table
// lookup (the index depends on the data by design; the bank, offset / 4 mod 32, must not).
#ifndef TRACE_BANK
#define TRACE_BANK(offset) ((void)0)
#endif
__device__ __forceinline__ u32 load_word(const u32* table, u32 offset) {
    TRACE_BANK(offset);
    return *(const u32*)((const char*)table + offset);
}

// The raw table word for byte k of x. ROTATE: T0[byte k], lane_t = 4 * lane. PAIR: table t
// at byte k, lane_t = (t << 7) | (4 * lane): PRMT puts byte k of x in byte 1 of the address,
// byte 0 of lane_t in byte 0 and zeros (bytes of lane_t above 0) in bytes 2 and 3.
template <int LAYOUT>
__device__ __forceinline__ u32 entry(const u32* table, u32 lane_t, u32 x, int k) {
    if (LAYOUT == PAIR) return load_word(table, __byte_perm(x, lane_t, 0x5504 | (k << 4)));
    return load_word(table, entry_offset(byte_of(x, k), lane_t));
}

// Row k of a round column: T_k[byte k of x] (= rotl(T0[byte k of x], 8k)).
template <int LAYOUT>
__device__ __forceinline__ u32 row(const u32* table, u32 lane4, u32 x, int k) {
    if (LAYOUT == PAIR) {
        u32 v = entry<PAIR>(table, (k & 1) ? lane4 | 0x80 : lane4, x, k);
        return k >= 2 ? rotl(v, 16) : v;
    }
    u32 v = entry<ROTATE>(table, lane4, x, k);
    return k ? rotl(v, 8 * k) : v;
}

// One round column without its round key: T0[x0 b0] ^ T1[x1 b1] ^ T2[x2 b2] ^ T3[x3 b3].
template <int LAYOUT>
__device__ __forceinline__ u32 column(const u32* table, u32 lane4, u32 x0, u32 x1, u32 x2, u32 x3) {
    if (LAYOUT == PAIR)
        return entry<PAIR>(table, lane4, x0, 0) ^ entry<PAIR>(table, lane4 | 0x80, x1, 1) ^
               rotl(entry<PAIR>(table, lane4, x2, 2) ^ entry<PAIR>(table, lane4 | 0x80, x3, 3), 16);
    return row<ROTATE>(table, lane4, x0, 0) ^ row<ROTATE>(table, lane4, x1, 1) ^
           row<ROTATE>(table, lane4, x2, 2) ^ row<ROTATE>(table, lane4, x3, 3);
}

// Rounds FIRST..NR-1 through the T-table `table` (FIRST = 1: AddRoundKey with round key 0
// first): row k of output column c comes from column c + k * STEP (STEP 1: ShiftRows, for
// encryption; STEP 3, i.e. c - k: InvShiftRows, for the equivalent inverse cipher).
template <int NR, int STEP, int LAYOUT, int FIRST>
__device__ __forceinline__ void table_rounds(u32 (&s)[BLOCKS_PER_THREAD][4], const u32* table,
                                             u32 lane4, const RoundKeys& rk) {
    if (FIRST == 1)
#pragma unroll
        for (int b = 0; b < BLOCKS_PER_THREAD; ++b)
#pragma unroll
            for (int c = 0; c < 4; ++c) s[b][c] ^= rk.w[c];
#pragma unroll
    for (int r = FIRST; r < NR; ++r) {
#pragma unroll
        for (int b = 0; b < BLOCKS_PER_THREAD; ++b) {
            u32 t[4];
#pragma unroll
            for (int c = 0; c < 4; ++c)
                t[c] = column<LAYOUT>(table, lane4, s[b][c], s[b][(c + STEP) & 3], s[b][(c + 2 * STEP) & 3],
                                      s[b][(c + 3 * STEP) & 3]) ^
                       rk.w[4 * r + c];
#pragma unroll
            for (int c = 0; c < 4; ++c) s[b][c] = t[c];
        }
    }
}

// The last encryption round: S[x] is byte 1 of T0[x]; gather byte 1 of four T0 entries
// into one word (both layouts read T0 here).
template <int NR, int LAYOUT>
__device__ __forceinline__ void last_round(u32 (&s)[BLOCKS_PER_THREAD][4], const u32* te, u32 lane4,
                                           const RoundKeys& rk) {
#pragma unroll
    for (int b = 0; b < BLOCKS_PER_THREAD; ++b) {
        u32 t[4];
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            u32 lo = __byte_perm(entry<LAYOUT>(te, lane4, s[b][c], 0), entry<LAYOUT>(te, lane4, s[b][(c + 1) & 3], 1),
                                 0x0051);
            u32 hi = __byte_perm(entry<LAYOUT>(te, lane4, s[b][(c + 2) & 3], 2),
                                 entry<LAYOUT>(te, lane4, s[b][(c + 3) & 3], 3), 0x0051);
            t[c] = __byte_perm(lo, hi, 0x5410) ^ rk.w[4 * NR + c];
        }
#pragma unroll
        for (int c = 0; c < 4; ++c) s[b][c] = t[c];
    }
}

// Encrypts BLOCKS_PER_THREAD blocks, interleaved for instruction-level parallelism; from
// round FIRST (2: the caller did AddRoundKey 0 and round 1).
template <int NR, int LAYOUT, int FIRST>
__device__ __forceinline__ void encrypt(u32 (&s)[BLOCKS_PER_THREAD][4], const u32* te, u32 lane4,
                                        const RoundKeys& rk) {
    table_rounds<NR, 1, LAYOUT, FIRST>(s, te, lane4, rk);
    last_round<NR, LAYOUT>(s, te, lane4, rk);
}

// Inverse S-box byte for entry `byte` (bits 8k..8k+7 of x), in byte 0 of the result.
__device__ __forceinline__ u32 inv_sub(const u32* inv, u32 lane4, u32 x, int k) {
    u32 e = byte_of(x, k);
    return __byte_perm(load_word(inv, entry_offset(e >> 2, lane4)), 0, e & 3u);
}

// Decrypts with the equivalent inverse cipher (FIPS-197 5.3.5; rk = decryption keys).
template <int NR, int LAYOUT>
__device__ __forceinline__ void decrypt(u32 (&s)[BLOCKS_PER_THREAD][4], const u32* td,
                                        const u32* inv, u32 lane4, const RoundKeys& rk) {
    table_rounds<NR, 3, LAYOUT, 1>(s, td, lane4, rk);
#pragma unroll
    for (int b = 0; b < BLOCKS_PER_THREAD; ++b) {
        u32 t[4];
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            u32 lo = __byte_perm(inv_sub(inv, lane4, s[b][c], 0), inv_sub(inv, lane4, s[b][(c + 3) & 3], 1), 0x0040);
            u32 hi = __byte_perm(inv_sub(inv, lane4, s[b][(c + 2) & 3], 2), inv_sub(inv, lane4, s[b][(c + 1) & 3], 3),
                                 0x0040);
            t[c] = __byte_perm(lo, hi, 0x5410) ^ rk.w[4 * NR + c];
        }
#pragma unroll
        for (int c = 0; c < 4; ++c) s[b][c] = t[c];
    }
}

__device__ __forceinline__ u32 bswap(u32 x) { return __byte_perm(x, 0, 0x0123); }

enum Kind { ECB_ENCRYPT = 0, ECB_DECRYPT = 1, CTR_FUSED = 2, CTR_KEYSTREAM = 3 };

// The dynamic shared memory a PAIR kernel needs: the two interleaved tables, plus the packed
// inverse S-box for decryption (the host passes this size at launch: 64 or 72 KiB).
#ifndef DYNAMIC_SHARED
#define DYNAMIC_SHARED(name) extern __shared__ u32 name[]
#endif

// The block's threads fill its T-table (Te0, or Td0 and the packed inverse S-box to decrypt)
// in `table`, laid out as LAYOUT says; the caller then waits at a barrier.
template <int LAYOUT, bool DECRYPT>
__device__ __forceinline__ void fill_tables(u32* table, u32* inv_sbox) {
    const u32 table_words = LAYOUT == PAIR ? 2 * TABLE_WORDS : TABLE_WORDS;
    for (u32 i = threadIdx.x; i < table_words; i += blockDim.x) {
        // ROTATE: word e * 32 + l; PAIR: word e * 64 + t * 32 + l.
        u32 e = LAYOUT == PAIR ? i / (2 * LANES) : i / LANES;
        u32 v = DECRYPT ? td0_entry(e) : te0_entry(e);
        table[i] = LAYOUT == PAIR && (i / LANES) % 2 ? rotl(v, 8) : v;
    }
    if (DECRYPT)
        for (u32 i = threadIdx.x; i < INV_SBOX_WORDS; i += blockDim.x)
            inv_sbox[i] = inv_sbox_word(i / LANES);
}

// The grid-stride loop shared by every kernel. A tile is BLOCKS_PER_THREAD * blockDim.x
// consecutive AES blocks; block k of a thread in a tile is tile + k * blockDim.x + tid, so
// each of a warp's 16-byte loads and stores covers 512 contiguous bytes (coalesced).
// CTR: the counter of block g is (ctr_hi:ctr_lo) + g, a 128-bit big-endian add with carry,
// made here from the block index (never copied from the host).
// GCM (CTR only; gcm non-null): GCM chunk counters instead (struct GcmLayout). ctr_hi is the
// record of the launch's block 0 and ctr_lo its block within that record (< stride_blocks);
// the host keeps ctr_lo + nblocks + one tile below 2^32, so a thread finds its first block's
// place with one 32-bit division per tile and steps to the others (blockDim <= MAX_THREADS <
// GCM_CHUNK_BLOCKS <= stride_blocks, so a step crosses at most one record end). Blocks in a
// tag's room are computed like the others (no divergence) but masked: the keystream kernel
// writes zeros there, the fused one writes the input back, so those bytes stay as they were.
// R1 (CTR only): when no block of the launch carries out of the counter's low 32 bits (a
// launch-uniform test, true unless the launch straddles a multiple of 2^32 blocks), column
// words 0..2 of every counter are the launch constants, so each thread computes the twelve
// round-1 lookups that depend on them once per launch and per block only the four that
// read column 3; otherwise it takes the general path.
template <int NR, int KIND, int LAYOUT, int R1, int GCM>
__device__ __forceinline__ void run(const uint4* in, uint4* out, u64 nblocks, u64 ctr_hi,
                                    u64 ctr_lo, const RoundKeys& rk, const GcmLayout* gcm) {
    __shared__ u32 fixed_table[LAYOUT == ROTATE ? TABLE_WORDS : 1];
    __shared__ u32 fixed_inv_sbox[LAYOUT == ROTATE && KIND == ECB_DECRYPT ? INV_SBOX_WORDS : 1];
    DYNAMIC_SHARED(dynamic_shared);
    u32* table = LAYOUT == ROTATE ? fixed_table : dynamic_shared;
    u32* inv_sbox = LAYOUT == ROTATE ? fixed_inv_sbox : dynamic_shared + 2 * TABLE_WORDS;
    fill_tables<LAYOUT, KIND == ECB_DECRYPT>(table, inv_sbox);
    __syncthreads();

    const u32 lane4 = (threadIdx.x % LANES) * 4;
    constexpr bool CTR = KIND == CTR_FUSED || KIND == CTR_KEYSTREAM;
    const bool uniform = R1 && CTR && (ctr_lo & 0xffffffffull) + nblocks <= (1ull << 32);
    // Round 1 of every counter of the launch minus the row read from column 3 (R1 only).
    u32 partial[4] = {0, 0, 0, 0};
    if (uniform) {
        const u32 w[3] = {bswap((u32)(ctr_hi >> 32)) ^ rk.w[0], bswap((u32)ctr_hi) ^ rk.w[1],
                          bswap((u32)(ctr_lo >> 32)) ^ rk.w[2]};
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            partial[c] = rk.w[4 + c];
#pragma unroll
            for (int k = 0; k < 4; ++k)
                if (((c + k) & 3) != 3) partial[c] ^= row<LAYOUT>(table, lane4, w[(c + k) & 3], k);
        }
    }
    const u64 tile = (u64)BLOCKS_PER_THREAD * blockDim.x;
    for (u64 base = (u64)blockIdx.x * tile; base < nblocks; base += (u64)gridDim.x * tile) {
        u32 s[BLOCKS_PER_THREAD][4];
        uint4 data[BLOCKS_PER_THREAD];
        u32 keep[BLOCKS_PER_THREAD];  // GCM: ~0 for chunk data, 0 in a tag's room
        u64 record = 0;
        u32 within = 0;
        if (GCM) {
            u32 t = (u32)ctr_lo + (u32)base + threadIdx.x;
            u32 d = t / gcm->stride_blocks;
            within = t - d * gcm->stride_blocks;
            record = ctr_hi + d;
        }
#pragma unroll
        for (int b = 0; b < BLOCKS_PER_THREAD; ++b) {
            u64 g = base + (u64)b * blockDim.x + threadIdx.x;
            bool live = g < nblocks;
            if (KIND == ECB_ENCRYPT || KIND == ECB_DECRYPT || KIND == CTR_FUSED)
                data[b] = live ? in[g] : make_uint4(0, 0, 0, 0);
            if (CTR && GCM) {
                s[b][0] = gcm->nonce[0];
                s[b][1] = gcm->nonce[1] ^ bswap((u32)(record >> 32));
                s[b][2] = gcm->nonce[2] ^ bswap((u32)record);
                s[b][3] = bswap(2 + within);
                keep[b] = within < GCM_CHUNK_BLOCKS ? ~0u : 0u;
                within += blockDim.x;
                if (within >= gcm->stride_blocks) {
                    within -= gcm->stride_blocks;
                    ++record;
                }
            } else if (CTR) {
                u64 lo = ctr_lo + g;
                u64 hi = ctr_hi + (lo < ctr_lo ? 1 : 0);
                s[b][0] = bswap((u32)(hi >> 32));
                s[b][1] = bswap((u32)hi);
                s[b][2] = bswap((u32)(lo >> 32));
                s[b][3] = bswap((u32)lo);
            } else {
                s[b][0] = data[b].x;
                s[b][1] = data[b].y;
                s[b][2] = data[b].z;
                s[b][3] = data[b].w;
            }
        }
        if (KIND == ECB_DECRYPT) {
            decrypt<NR, LAYOUT>(s, table, inv_sbox, lane4, rk);
        } else if (R1 && CTR && uniform) {
            // Round 1: output column c takes row (3 - c) & 3 from column 3.
#pragma unroll
            for (int b = 0; b < BLOCKS_PER_THREAD; ++b) {
                u32 x = s[b][3] ^ rk.w[3];
#pragma unroll
                for (int c = 0; c < 4; ++c) s[b][c] = partial[c] ^ row<LAYOUT>(table, lane4, x, (3 - c) & 3);
            }
            encrypt<NR, LAYOUT, 2>(s, table, lane4, rk);
        } else {
            encrypt<NR, LAYOUT, 1>(s, table, lane4, rk);
        }
#pragma unroll
        for (int b = 0; b < BLOCKS_PER_THREAD; ++b) {
            u64 g = base + (u64)b * blockDim.x + threadIdx.x;
            uint4 o = make_uint4(s[b][0], s[b][1], s[b][2], s[b][3]);
            if (GCM) {
                o.x &= keep[b];
                o.y &= keep[b];
                o.z &= keep[b];
                o.w &= keep[b];
            }
            if (KIND == CTR_FUSED) {
                o.x ^= data[b].x;
                o.y ^= data[b].y;
                o.z ^= data[b].z;
                o.w ^= data[b].w;
            }
            if (g < nblocks) out[g] = o;
        }
    }
}

// ---- GCM chunk records (the _gcm_seal, _gcm_verify and _gcm_open kernels) ----
// docs/GPU.md, "GCM records on the device". C2SP chunked encryption's records: the plaintext
// side is chunks of GCM_CHUNK_BLOCKS blocks back to back, the records side each chunk's
// ciphertext and its 16-byte tag (GCM_CHUNK_BLOCKS + 1 blocks a record); every chunk is whole
// but the last, whose last_len bytes (0..16384) may end inside a block, its tag right after.
// One warp per chunk: lane l takes the chunk's blocks l, l + 32, l + 64, ... (CTR from the
// counter nonce || be32(2 + j)) and folds their ciphertext into its GHASH accumulator by
// Horner with H^32; the lengths block is block nb (nb = data blocks) of the same sequence. The
// lane whose last block is j multiplies its accumulator by H^(nb + 1 - j), taken by a shuffle
// from the lane that computed that power, and the warp adds (XORs) the 32 accumulators with
// shuffles. tag = GHASH XOR E(nonce || be32(1)).
// CONSTANT TIME: GHASH is arithmetic on registers only. The carry-less products are integer
// multiplies of masked operands (BearSSL's ghash_ctmul64: each product keeps every fourth bit
// of its operands, so no carry reaches the bits kept); there is no table of multiples of H,
// and every address (loads, stores, shuffle lanes) depends only on the chunk index, the lane
// and the public lengths. The AES T-table lookups are the bank-safe ones above.
#define GCM_RECORD_BLOCKS (GCM_CHUNK_BLOCKS + 1)
struct GcmKeys {
    u32 nonce[3];  // the base nonce as column words 0..2
    u32 pad;
    u32 hash_key[4];  // H = E(0^128) as column words (secret)
};
enum RecordsKind { GCM_SEAL = 0, GCM_VERIFY = 1, GCM_OPEN = 2 };

#include "ghash.cuh"

// Seal (plaintext `in` -> records `out`), verify (records `in` -> one verdict block per chunk
// in `out`: x = 0 when the tag holds, 1 when not; nothing else written) or open (records `in`
// -> plaintext `out`, CTR only: the host runs it only after every verdict was 0) `chunks`
// chunks, chunk c being GCM chunk first_index + c. Launched with a multiple of 32 threads.
template <int NR, int KIND>
__device__ __forceinline__ void run_records(const uint4* in, uint4* out, u64 chunks, u64 first_index,
                                            u64 last_len, const RoundKeys& rk, const GcmKeys& gk) {
    __shared__ u32 table[TABLE_WORDS];
    fill_tables<ROTATE, false>(table, nullptr);
    __syncthreads();
    const u32 lane = threadIdx.x % LANES, lane4 = lane * 4, warps = blockDim.x / LANES;
    // Lane l holds H^(l + 1) (square and multiply over the public exponent, both products
    // always computed); every lane then takes H^32 from lane 31.
    Gf power = Gf{1ull << 63, 0}, h = gf_of(make_uint4(gk.hash_key[0], gk.hash_key[1], gk.hash_key[2], gk.hash_key[3]));
    GfKey hk = gf_key(h), h32k = hk;
    if (KIND != GCM_OPEN) {
        for (int bit = 5; bit >= 0; --bit) {
            power = gf_mul(power, gf_key(power));
            Gf with_h = gf_mul(power, hk);
            u64 take = 0 - (u64)(((lane + 1) >> bit) & 1);
            power = Gf{(with_h.hi & take) | (power.hi & ~take), (with_h.lo & take) | (power.lo & ~take)};
        }
        h32k = gf_key(gf_shfl(power, LANES - 1));
    }
    for (u64 c = (u64)blockIdx.x * warps + threadIdx.x / LANES; c < chunks; c += (u64)gridDim.x * warps) {
        const u32 len = c + 1 < chunks ? GCM_CHUNK_BLOCKS * 16 : (u32)last_len, nb = (len + 15) / 16;
        const u64 index = first_index + c;
        const u32 n1 = gk.nonce[1] ^ bswap((u32)(index >> 32)), n2 = gk.nonce[2] ^ bswap((u32)index);
        const uint4* src = in + c * (KIND == GCM_SEAL ? GCM_CHUNK_BLOCKS : GCM_RECORD_BLOCKS);
        uint4* dst = out + c * (KIND == GCM_SEAL ? GCM_RECORD_BLOCKS : GCM_CHUNK_BLOCKS);
        Gf acc = Gf{0, 0};
        for (u32 j0 = 0; j0 < nb; j0 += LANES * BLOCKS_PER_THREAD) {
            u32 s[BLOCKS_PER_THREAD][4];
#pragma unroll
            for (int b = 0; b < BLOCKS_PER_THREAD; ++b) {
                s[b][0] = gk.nonce[0];
                s[b][1] = n1;
                s[b][2] = n2;
                s[b][3] = bswap(2 + j0 + b * LANES + lane);
            }
            encrypt<NR, ROTATE, 1>(s, table, lane4, rk);
#pragma unroll
            for (int b = 0; b < BLOCKS_PER_THREAD; ++b) {
                const u32 j = j0 + b * LANES + lane;
                if (j >= nb) continue;
                const u32 part = len - 16 * j;  // bytes of block j (16 unless the last is partial)
                uint4 data = load_part(src + j, part);
                uint4 o = make_uint4(s[b][0] ^ data.x, s[b][1] ^ data.y, s[b][2] ^ data.z, s[b][3] ^ data.w);
                if (KIND != GCM_VERIFY) store_part(dst + j, o, part);
                if (KIND != GCM_OPEN) {
                    Gf x = gf_of(KIND == GCM_SEAL ? keep_part(o, part) : data);
                    acc = gf_mul(acc, h32k);
                    acc.hi ^= x.hi;
                    acc.lo ^= x.lo;
                }
            }
        }
        if (KIND == GCM_OPEN) continue;
        if (lane == nb % LANES) {  // the lengths block be64(0) || be64(8 len) is block nb
            acc = gf_mul(acc, h32k);
            acc.lo ^= (u64)len * 8;
        }
        // Lane l's last block is j = l + 32 * floor((nb - l) / 32) (none when l > nb).
        const u32 last = lane <= nb ? lane + LANES * ((nb - lane) / LANES) : nb;
        acc = gf_mul(acc, gf_key(gf_shfl(power, (int)(nb - last))));  // H^(nb + 1 - last); 0 if none
#pragma unroll
        for (int m = LANES / 2; m; m /= 2) {
            Gf other = gf_shfl(acc, (int)(lane ^ m));
            acc.hi ^= other.hi;
            acc.lo ^= other.lo;
        }
        u32 j0[BLOCKS_PER_THREAD][4];
        j0[0][0] = gk.nonce[0];
        j0[0][1] = n1;
        j0[0][2] = n2;
        j0[0][3] = bswap(1);
#pragma unroll
        for (int b = 1; b < BLOCKS_PER_THREAD; ++b)
#pragma unroll
            for (int w = 0; w < 4; ++w) j0[b][w] = 0;
        encrypt<NR, ROTATE, 1>(j0, table, lane4, rk);
        uint4 tag = block_of(acc);
        tag = make_uint4(tag.x ^ j0[0][0], tag.y ^ j0[0][1], tag.z ^ j0[0][2], tag.w ^ j0[0][3]);
        const u64 tag_offset = c * GCM_RECORD_BLOCKS * 16 + len;  // bytes, in the records side
        if (KIND == GCM_SEAL && lane == 0) store_at(out, tag_offset, tag);
        if (KIND == GCM_VERIFY && lane == 0) {
            uint4 found = load_at(in, tag_offset);
            u32 diff = (found.x ^ tag.x) | (found.y ^ tag.y) | (found.z ^ tag.z) | (found.w ^ tag.w);
            store_at(out, c * 16, make_uint4((diff | (0u - diff)) >> 31, 0, 0, 0));
        }
    }
}

// Every entry point has the same parameters, so the host launches them all one way:
//   in      source blocks (ECB, CTR fused; unused by the keystream kernel; may equal out)
//   out     destination blocks
//   nblocks number of 16-byte blocks
//   ctr_hi, ctr_lo  CTR: the 128-bit counter of block 0 of this launch (unused by ECB)
//   rk      round keys (encryption keys, or equivalent-inverse-cipher keys for decryption)
// PAIR kernels also need their dynamic shared memory at launch (64 KiB; 72 KiB to decrypt).
// The _gcm kernels (AES_GCM_KERNEL) take one parameter more, gcm (struct GcmLayout), and read
// ctr_hi, ctr_lo as the record of block 0 and its block within the record.
// BOUNDS is the __launch_bounds__ argument list: (MAX_THREADS) or, for the lb5 variant,
// (256, 5): at most 256 threads, at most 48 registers, so 5 blocks (40 warps) fit an SM.
// REGISTER_KERNEL lets kernels/emulate/host.cpp list every entry point (nothing on a GPU).
#ifndef REGISTER_KERNEL
#define REGISTER_KERNEL(name)
#endif
#define AES_KERNEL(name, NR, KIND, LAYOUT, R1, BOUNDS)                                         \
    extern "C" __global__ void __launch_bounds__ BOUNDS                                        \
        name(const uint4* in, uint4* out, u64 nblocks, u64 ctr_hi, u64 ctr_lo,                 \
             const __grid_constant__ RoundKeys rk) {                                            \
        run<NR, KIND, LAYOUT, R1, 0>(in, out, nblocks, ctr_hi, ctr_lo, rk, nullptr);            \
    }                                                                                          \
    REGISTER_KERNEL(name)
#define AES_GCM_KERNEL(name, NR, KIND)                                                         \
    extern "C" __global__ void __launch_bounds__(MAX_THREADS)                                  \
        name(const uint4* in, uint4* out, u64 nblocks, u64 ctr_hi, u64 ctr_lo,                 \
             const __grid_constant__ RoundKeys rk, const __grid_constant__ GcmLayout gcm) {     \
        run<NR, KIND, ROTATE, 0, 1>(in, out, nblocks, ctr_hi, ctr_lo, rk, &gcm);                \
    }                                                                                          \
    REGISTER_KERNEL(name)

#define AES_KERNELS(bits, NR)                                                        \
    AES_KERNEL(aes##bits##_ecb_encrypt, NR, ECB_ENCRYPT, ROTATE, 0, (MAX_THREADS))   \
    AES_KERNEL(aes##bits##_ecb_decrypt, NR, ECB_DECRYPT, ROTATE, 0, (MAX_THREADS))   \
    AES_KERNEL(aes##bits##_ctr_fused, NR, CTR_FUSED, ROTATE, 0, (MAX_THREADS))       \
    AES_KERNEL(aes##bits##_ctr_keystream, NR, CTR_KEYSTREAM, ROTATE, 0, (MAX_THREADS))   \
    AES_GCM_KERNEL(aes##bits##_ctr_fused_gcm, NR, CTR_FUSED)                         \
    AES_GCM_KERNEL(aes##bits##_ctr_keystream_gcm, NR, CTR_KEYSTREAM)

AES_KERNELS(128, 10)
AES_KERNELS(192, 12)
AES_KERNELS(256, 14)

// The variants to A/B on a GPU (docs/GPU.md, "Kernel variants"), AES-128 only (the
// headline figure; each variant adds about 1/12 to the PTX and the cubins). The host's
// KernelVariant names them: pair, r1, pair-r1, lb5; a variant leaves the kinds it does not
// change on the base kernel.
#define AES_VARIANTS(bits, NR)                                                                  \
    AES_KERNEL(aes##bits##_ecb_encrypt_pair, NR, ECB_ENCRYPT, PAIR, 0, (MAX_THREADS))           \
    AES_KERNEL(aes##bits##_ecb_decrypt_pair, NR, ECB_DECRYPT, PAIR, 0, (MAX_THREADS))           \
    AES_KERNEL(aes##bits##_ctr_fused_pair, NR, CTR_FUSED, PAIR, 0, (MAX_THREADS))               \
    AES_KERNEL(aes##bits##_ctr_keystream_pair, NR, CTR_KEYSTREAM, PAIR, 0, (MAX_THREADS))       \
    AES_KERNEL(aes##bits##_ctr_fused_r1, NR, CTR_FUSED, ROTATE, 1, (MAX_THREADS))               \
    AES_KERNEL(aes##bits##_ctr_keystream_r1, NR, CTR_KEYSTREAM, ROTATE, 1, (MAX_THREADS))       \
    AES_KERNEL(aes##bits##_ctr_fused_pair_r1, NR, CTR_FUSED, PAIR, 1, (MAX_THREADS))            \
    AES_KERNEL(aes##bits##_ctr_keystream_pair_r1, NR, CTR_KEYSTREAM, PAIR, 1, (MAX_THREADS))    \
    AES_KERNEL(aes##bits##_ctr_fused_lb5, NR, CTR_FUSED, ROTATE, 0, (256, 5))

AES_VARIANTS(128, 10)

// The GCM records kernels (above, "GCM chunk records"), for C2SP chunked encryption's two
// instantiations, Cobblestone-128 and -256. Parameters: in, out, chunks (at least 1),
// first_index (the GCM chunk index of chunk 0), last_len (the last chunk's bytes, 0..16384),
// rk (encryption round keys), gk (struct GcmKeys).
#define GCM_RECORDS_KERNEL(name, NR, KIND)                                                     \
    extern "C" __global__ void __launch_bounds__(MAX_THREADS)                                  \
        name(const uint4* in, uint4* out, u64 chunks, u64 first_index, u64 last_len,           \
             const __grid_constant__ RoundKeys rk, const __grid_constant__ GcmKeys gk) {        \
        run_records<NR, KIND>(in, out, chunks, first_index, last_len, rk, gk);                  \
    }                                                                                          \
    REGISTER_KERNEL(name)
#define GCM_RECORDS_KERNELS(bits, NR)                          \
    GCM_RECORDS_KERNEL(aes##bits##_gcm_seal, NR, GCM_SEAL)     \
    GCM_RECORDS_KERNEL(aes##bits##_gcm_verify, NR, GCM_VERIFY) \
    GCM_RECORDS_KERNEL(aes##bits##_gcm_open, NR, GCM_OPEN)

GCM_RECORDS_KERNELS(128, 10)
GCM_RECORDS_KERNELS(256, 14)
