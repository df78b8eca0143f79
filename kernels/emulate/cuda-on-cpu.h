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

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __grid_constant__
// Dynamic shared memory (PAIR kernels): a static array as large as the largest launch.
#define DYNAMIC_SHARED_WORDS (2 * 256 * 32 + 64 * 32)
#define DYNAMIC_SHARED(name) __shared__ unsigned name[DYNAMIC_SHARED_WORDS]

// Every kernel registers itself here (REGISTER_KERNEL in aes.cu), in definition order, with
// its parameter count: 6 (the common signature) or 7 (the _gcm kernels: + struct GcmLayout).
struct Entry {
    std::string name;
    void* kernel;
    int params;
};
static std::vector<Entry>& registry() {
    static std::vector<Entry> entries;
    return entries;
}
struct Registrar {
    template <class... Params>
    Registrar(const char* name, void (*kernel)(Params...)) {
        registry().push_back(Entry{name, (void*)kernel, (int)sizeof...(Params)});
    }
};
#define REGISTER_KERNEL(name) static Registrar name##_registrar(#name, &name);

#ifndef KERNEL_SOURCE
#define KERNEL_SOURCE "../aes.cu"
#endif
#include KERNEL_SOURCE

typedef const Entry* Kernel;
typedef void (*StreamKernel)(const uint4*, uint4*, u64, u64, u64, const RoundKeys);
typedef void (*GcmKernel)(const uint4*, uint4*, u64, u64, u64, const RoundKeys, const GcmLayout);

// The kernel called `name`, or null.
static inline Kernel find_kernel(const char* name) {
    for (const Entry& e : registry())
        if (e.name == name) return &e;
    return nullptr;
}

// Whether `kernel` takes the GcmLayout parameter (the _gcm kernels).
static inline bool takes_gcm(Kernel kernel) { return kernel->params == 7; }

static inline void call(Kernel kernel, const uint4* in, uint4* out, u64 nblocks, u64 ctr_hi, u64 ctr_lo,
                        const RoundKeys& rk, const GcmLayout& gcm) {
    if (takes_gcm(kernel))
        ((GcmKernel)kernel->kernel)(in, out, nblocks, ctr_hi, ctr_lo, rk, gcm);
    else
        ((StreamKernel)kernel->kernel)(in, out, nblocks, ctr_hi, ctr_lo, rk);
}

// One launch of `kernel` on a grid of `grid` blocks of `threads` threads, block after block
// (see the top); `gcm` is passed to the kernels that take it and ignored by the others.
static inline void emulate_launch(Kernel kernel, unsigned grid, unsigned threads, const uint4* in, uint4* out,
                                  u64 nblocks, u64 ctr_hi, u64 ctr_lo, const RoundKeys& rk, const GcmLayout& gcm) {
    blockDim = Dim3{threads, 1, 1};
    gridDim = Dim3{grid, 1, 1};
    const std::function<void()> body = [&] { call(kernel, in, out, nblocks, ctr_hi, ctr_lo, rk, gcm); };
    for (unsigned b = 0; b < grid; ++b) {
        blockIdx = Dim3{b, 0, 0};
        cuda_threads::run_block(threads, body);
    }
}
