// host.cpp: runs kernels/aes.cu itself on the CPU, one emulated GPU thread at a time, so
// the kernel SOURCE (not only the Rust model of it) is tested where there is no GPU.
// crates/paraes-gpu/tests/kernel_source_on_cpu.rs compiles this with the system C++
// compiler and compares the output with the core's AES.
//
// Emulation: the CUDA qualifiers become plain C++ (__shared__ arrays become static, shared
// by every emulated thread block, which is harmless because every block fills them with the
// same tables); __byte_perm and __funnelshift_l are written out from the CUDA
// documentation. Threads run one after another, so __syncthreads cannot order a block's
// table fill before its lookups: the grid is therefore run twice, out of place; the first
// pass fills the tables (its output is discarded), the second computes with full tables.
//
// Protocol: `host --list` prints the name of every kernel aes.cu defines, one a line (the
// test runs them all, so a new kernel cannot escape it). Otherwise argv[1] = kernel name
// (e.g. aes128_ctr_fused), argv[2] = grid, argv[3] = threads per block. stdin: u64 nblocks, u64 ctr_hi, u64 ctr_lo, 60 x u32 round-key words,
// then nblocks x 16 input bytes (little-endian host). stdout: nblocks x 16 output bytes.

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

struct uint4 {
    unsigned x, y, z, w;
};
static inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return uint4{x, y, z, w}; }
struct Dim3 {
    unsigned x, y, z;
};
static Dim3 threadIdx, blockIdx, blockDim, gridDim;

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
#define __shared__ static
#define __launch_bounds__(...)
#define __grid_constant__
#define __syncthreads() ((void)0)
// Dynamic shared memory (PAIR kernels): a static array as large as the largest launch.
#define DYNAMIC_SHARED(name) static unsigned name[2 * 256 * 32 + 64 * 32]

// Every kernel registers itself here (REGISTER_KERNEL in aes.cu), in definition order.
struct Entry {
    std::string name;
    void* kernel;
};
static std::vector<Entry>& registry() {
    static std::vector<Entry> entries;
    return entries;
}
struct Registrar {
    Registrar(const char* name, void* kernel) { registry().push_back(Entry{name, kernel}); }
};
#define REGISTER_KERNEL(name) static Registrar name##_registrar(#name, (void*)&name);

#include "../aes.cu"

typedef void (*Kernel)(const uint4*, uint4*, u64, u64, u64, const RoundKeys);

static bool read_all(void* dst, size_t len) { return fread(dst, 1, len, stdin) == len; }

int main(int argc, char** argv) {
    if (argc == 2 && std::string(argv[1]) == "--list") {
        for (const Entry& e : registry()) printf("%s\n", e.name.c_str());
        return 0;
    }
    if (argc != 4) {
        fprintf(stderr, "usage: host KERNEL GRID THREADS < input > output | host --list\n");
        return 2;
    }
    Kernel kernel = nullptr;
    for (const Entry& e : registry())
        if (argv[1] == e.name) kernel = (Kernel)e.kernel;
    if (!kernel) {
        fprintf(stderr, "host: no kernel %s\n", argv[1]);
        return 2;
    }
    unsigned grid = (unsigned)std::stoul(argv[2]), threads = (unsigned)std::stoul(argv[3]);
    u64 header[3];
    RoundKeys rk;
    if (!read_all(header, sizeof header) || !read_all(rk.w, sizeof rk.w)) return 3;
    u64 nblocks = header[0];
    std::vector<uint4> in(nblocks ? nblocks : 1), out(nblocks ? nblocks : 1);
    if (!read_all(in.data(), nblocks * 16)) return 3;
    gridDim = Dim3{grid, 1, 1};
    blockDim = Dim3{threads, 1, 1};
    for (int pass = 0; pass < 2; ++pass)
        for (unsigned b = 0; b < grid; ++b)
            for (unsigned t = 0; t < threads; ++t) {
                blockIdx = Dim3{b, 0, 0};
                threadIdx = Dim3{t, 0, 0};
                kernel(in.data(), out.data(), nblocks, header[1], header[2], rk);
            }
    fwrite(out.data(), 1, nblocks * 16, stdout);
    return 0;
}
