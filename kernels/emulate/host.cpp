// host.cpp: runs kernels/aes.cu itself on the CPU, block by block (cuda-threads.h), so
// the kernel SOURCE (not only the Rust model of it) is tested where there is no GPU.
// crates/paraes-gpu/tests/kernel_source_on_cpu.rs compiles this with the system C++
// compiler and compares the output with the core's AES.
//
// The emulation itself (built-ins, block semantics) is in cuda-on-cpu.h and cuda-threads.h,
// shared with the CUDA stand-in of the GPU engine's tests (cuda-standin.cpp).
//
// Protocol: `host --list` prints the name of every kernel aes.cu defines, one a line (the
// test runs them all, so a new kernel cannot escape it). Otherwise argv[1] = kernel name
// (e.g. aes128_ctr_fused), argv[2] = grid, argv[3] = threads per block. stdin: u64 nblocks,
// u64 ctr_hi, u64 ctr_lo, 60 x u32 round-key words, 4 x u32 GcmLayout words (3 nonce words,
// stride in blocks; only the _gcm kernels read them), then nblocks x 16 input bytes
// (little-endian host). stdout: nblocks x 16 output bytes.

#include <cstdio>

#include "cuda-on-cpu.h"

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
    Kernel kernel = find_kernel(argv[1]);
    if (!kernel) {
        fprintf(stderr, "host: no kernel %s\n", argv[1]);
        return 2;
    }
    unsigned grid = (unsigned)std::stoul(argv[2]), threads = (unsigned)std::stoul(argv[3]);
    u64 header[3];
    RoundKeys rk;
    GcmLayout gcm;
    if (!read_all(header, sizeof header) || !read_all(rk.w, sizeof rk.w) || !read_all(&gcm, sizeof gcm)) return 3;
    u64 nblocks = header[0];
    std::vector<uint4> in(nblocks ? nblocks : 1), out(nblocks ? nblocks : 1);
    if (!read_all(in.data(), nblocks * 16)) return 3;
    emulate_launch(kernel, grid, threads, in.data(), out.data(), nblocks, header[1], header[2], rk, gcm);
    fwrite(out.data(), 1, nblocks * 16, stdout);
    return 0;
}
