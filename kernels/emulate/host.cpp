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
// (little-endian host). stdout: nblocks x 16 output bytes. The GCM records kernels
// (_gcm_seal, _gcm_verify, _gcm_open): stdin: u64 chunks, u64 first_index, u64 last_len, 60
// round-key words, 8 GcmKeys words, then the input (records_sizes in cuda-on-cpu.h); stdout:
// the output. Built with -DTRACE_ACCESSES, it also writes the access trace (cuda-on-cpu.h) to
// stderr, one access a line: block, thread, space, where.

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
    LastParam last;
    if (!read_all(header, sizeof header) || !read_all(rk.w, sizeof rk.w)) return 3;
    if (takes_records(kernel) ? !read_all(&last.keys, sizeof last.keys) : !read_all(&last.gcm, sizeof last.gcm))
        return 3;
    u64 in_len = header[0] * 16, out_len = in_len;
    if (takes_records(kernel)) {
        if (header[0] == 0 || header[2] > GCM_CHUNK_BLOCKS * 16 || threads % 32) {
            fprintf(stderr, "host: a records launch needs chunks >= 1, last_len <= 16384, whole warps\n");
            return 2;
        }
        RecordsSizes sizes = records_sizes(kernel, header[0], header[2]);
        in_len = sizes.in;
        out_len = sizes.out;
    }
    std::vector<uint4> in(in_len / 16 + 1), out(out_len / 16 + 1);
    if (!read_all(in.data(), in_len)) return 3;
#ifdef TRACE_ACCESSES
    TRACE_IN = (const char*)in.data();
    TRACE_OUT = (const char*)out.data();
    TRACE_IN_LEN = in_len;
    TRACE_OUT_LEN = out_len;
#endif
    emulate_launch(kernel, grid, threads, in.data(), out.data(), header[0], header[1], header[2], rk, last);
    fwrite(out.data(), 1, out_len, stdout);
#ifdef TRACE_ACCESSES
    for (const Access& a : TRACE) fprintf(stderr, "%u %u %c %llu\n", a.block, a.thread, a.space, (unsigned long long)a.where);
#endif
    return 0;
}
