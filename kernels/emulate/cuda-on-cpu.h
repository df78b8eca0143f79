// cuda-on-cpu.h: kernels/aes.cu compiled for the host, each thread block run with real
// block semantics (cuda-threads.h: threads as fibers interleaved at every barrier and warp
// sync, fresh shared memory per block, warp shuffles). Shared by host.cpp (the kernel-source
// test's emulator) and cuda-standin.cpp (the CPU stand-in for the CUDA driver that CI runs the
// GPU engine's host code on), so both run the very same kernel source the same way.
//
// Emulation: the CUDA qualifiers become plain C++; __byte_perm and __funnelshift_l are written
// out from the CUDA documentation. A launch runs its blocks one after another. KERNEL_SOURCE
// (default ../aes.cu) names the kernel file, so a test can build a changed copy of it.
// Not thread-safe: the built-in variables are process-wide; callers serialise.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "cuda-threads.h"

struct uint4 {
    unsigned x, y, z, w;
};
static inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return uint4{x, y, z, w}; }

// CUDA: byte n of the result is byte ((s >> 4n) & 7) of the 8 bytes y:x.
static inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
    uint64_t v = ((uint64_t)y << 32) | x;
    unsigned r = 0;
    for (int n = 0; n < 4; ++n) r |= (unsigned)((v >> (8 * ((s >> (4 * n)) & 7))) & 0xff) << (8 * n);
    return r;
}
// CUDA: the high 32 bits of (hi:lo) << (shift & 31).
static inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned shift) {
    uint64_t v = ((uint64_t)hi << 32) | lo;
    return (unsigned)((v << (shift & 31)) >> 32);
}

// CUDA: the bits of x in reverse order.
static inline unsigned long long __brevll(unsigned long long x) {
    unsigned long long r = 0;
    for (int i = 0; i < 64; ++i) r |= ((x >> i) & 1) << (63 - i);
    return r;
}

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __grid_constant__
// Dynamic shared memory (PAIR kernels): a static array as large as the largest launch.
#define DYNAMIC_SHARED_WORDS (2 * 256 * 32 + 64 * 32)
#define DYNAMIC_SHARED(name) __shared__ unsigned name[DYNAMIC_SHARED_WORDS]

// Every kernel registers itself here (REGISTER_KERNEL in aes.cu), in definition order, with
// its signature: the common one, + struct GcmLayout (the _gcm CTR kernels), or + struct
// GcmKeys (the GCM records kernels).
enum Signature { STREAM_KERNEL, GCM_CTR_KERNEL, GCM_RECORDS_KERNEL_SIGNATURE };
struct Entry {
    std::string name;
    void* kernel;
    Signature signature;
};
static std::vector<Entry>& registry() {
    static std::vector<Entry> entries;
    return entries;
}
struct RoundKeys;
struct GcmLayout;
struct GcmKeys;
typedef unsigned long long u64;
typedef void (*StreamKernel)(const uint4*, uint4*, u64, u64, u64, RoundKeys);
typedef void (*GcmKernel)(const uint4*, uint4*, u64, u64, u64, RoundKeys, GcmLayout);
typedef void (*RecordsKernel)(const uint4*, uint4*, u64, u64, u64, RoundKeys, GcmKeys);
struct Registrar {
    Registrar(const char* name, StreamKernel k) { registry().push_back(Entry{name, (void*)k, STREAM_KERNEL}); }
    Registrar(const char* name, GcmKernel k) { registry().push_back(Entry{name, (void*)k, GCM_CTR_KERNEL}); }
    Registrar(const char* name, RecordsKernel k) {
        registry().push_back(Entry{name, (void*)k, GCM_RECORDS_KERNEL_SIGNATURE});
    }
};
#define REGISTER_KERNEL(name) static Registrar name##_registrar(#name, &name);

#ifdef TRACE_ACCESSES
// The trace build (-DTRACE_ACCESSES, host.cpp): every global access of the records kernels
// (TRACE_GLOBAL in ghash.cuh) as (block, thread, buffer, byte offset), and the bank of every
// T-table lookup (TRACE_BANK in aes.cu) as (block, thread, 's', bank), in program order.
struct Access {
    unsigned block, thread;
    char space;  // 'i': the input, 'o': the output, 's': a shared-memory bank, '?': elsewhere
    uint64_t where;
};
static std::vector<Access> TRACE;
static const char *TRACE_IN = nullptr, *TRACE_OUT = nullptr;
static size_t TRACE_IN_LEN = 0, TRACE_OUT_LEN = 0;
static inline void trace(char space, uint64_t where) { TRACE.push_back(Access{blockIdx.x, threadIdx.x, space, where}); }
static inline void trace_global(const void* p) {
    const char* c = (const char*)p;
    if (c >= TRACE_IN && c < TRACE_IN + TRACE_IN_LEN)
        trace('i', (uint64_t)(c - TRACE_IN));
    else if (c >= TRACE_OUT && c < TRACE_OUT + TRACE_OUT_LEN)
        trace('o', (uint64_t)(c - TRACE_OUT));
    else
        trace('?', 0);
}
#define TRACE_GLOBAL(address) trace_global(address)
#define TRACE_BANK(offset) trace('s', (offset) / 4 % 32)
#endif

#ifndef KERNEL_SOURCE
#define KERNEL_SOURCE "../aes.cu"
#endif
#include KERNEL_SOURCE

typedef const Entry* Kernel;

// The kernel called `name`, or null.
static inline Kernel find_kernel(const char* name) {
    for (const Entry& e : registry())
        if (e.name == name) return &e;
    return nullptr;
}

// Whether `kernel` takes the GcmLayout parameter (the _gcm CTR kernels).
static inline bool takes_gcm(Kernel kernel) { return kernel->signature == GCM_CTR_KERNEL; }
// Whether `kernel` is a GCM records kernel (parameters: chunks, first_index, last_len, GcmKeys).
static inline bool takes_records(Kernel kernel) { return kernel->signature == GCM_RECORDS_KERNEL_SIGNATURE; }

// The bytes a GCM records kernel reads (`in`) and writes (`out`) for `chunks` chunks (at least
// 1) whose last has `last_len` bytes (0..16384): plaintext, records, or one verdict block per chunk.
struct RecordsSizes {
    u64 in, out;
};
static inline RecordsSizes records_sizes(Kernel kernel, u64 chunks, u64 last_len) {
    u64 plaintext = (chunks - 1) * GCM_CHUNK_BLOCKS * 16 + last_len, records = plaintext + 16 * chunks;
    const std::string& n = kernel->name;
    if (n.find("_gcm_seal") != std::string::npos) return RecordsSizes{plaintext, records};
    if (n.find("_gcm_verify") != std::string::npos) return RecordsSizes{records, 16 * chunks};
    return RecordsSizes{records, plaintext};
}

// The kernel's last parameter, by its signature: GcmLayout, GcmKeys or none.
struct LastParam {
    GcmLayout gcm{};
    GcmKeys keys{};
};

static inline void call(Kernel kernel, const uint4* in, uint4* out, u64 nblocks, u64 ctr_hi, u64 ctr_lo,
                        const RoundKeys& rk, const LastParam& last) {
    if (takes_gcm(kernel))
        ((GcmKernel)kernel->kernel)(in, out, nblocks, ctr_hi, ctr_lo, rk, last.gcm);
    else if (takes_records(kernel))
        ((RecordsKernel)kernel->kernel)(in, out, nblocks, ctr_hi, ctr_lo, rk, last.keys);
    else
        ((StreamKernel)kernel->kernel)(in, out, nblocks, ctr_hi, ctr_lo, rk);
}

// One launch of `kernel` on a grid of `grid` blocks of `threads` threads, block after block
// (see the top); `last` is passed to the kernels that take it and ignored by the others.
static inline void emulate_launch(Kernel kernel, unsigned grid, unsigned threads, const uint4* in, uint4* out,
                                  u64 nblocks, u64 ctr_hi, u64 ctr_lo, const RoundKeys& rk, const LastParam& last) {
    blockDim = Dim3{threads, 1, 1};
    gridDim = Dim3{grid, 1, 1};
    const std::function<void()> body = [&] { call(kernel, in, out, nblocks, ctr_hi, ctr_lo, rk, last); };
    for (unsigned b = 0; b < grid; ++b) {
        blockIdx = Dim3{b, 0, 0};
        cuda_threads::run_block(threads, body);
    }
}
