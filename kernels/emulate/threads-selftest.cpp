// threads-selftest.cpp: checks the block semantics of the CPU emulation (cuda-threads.h) with
// small kernels whose answers are known: warp shuffles of every kind and width, 64-bit
// shuffles, a reduction through shared memory across warps with barriers, shared memory fresh
// in every block, and that the same reduction WITHOUT its barrier gives a wrong answer (the
// emulation exposes the race). Built and run by crates/paraes-gpu/tests/kernel_source_on_cpu.rs.
//
// Prints one line per check, "NAME ok" or "NAME WRONG: ...", and exits 1 if any is wrong.
// `threads-selftest deadlock` runs a kernel whose threads wait at different barriers (the
// emulation must abort saying "deadlock").

#include <string>

#include "cuda-threads.h"

static int failures = 0;

static void report(const char* name, bool ok, const std::string& detail = "") {
    printf("%s %s%s\n", name, ok ? "ok" : "WRONG: ", ok ? "" : detail.c_str());
    failures += !ok;
}

// Runs `body` on `grid` blocks of `threads` threads.
static void launch(unsigned grid, unsigned threads, const std::function<void()>& body) {
    blockDim = Dim3{threads, 1, 1};
    gridDim = Dim3{grid, 1, 1};
    for (unsigned b = 0; b < grid; ++b) {
        blockIdx = Dim3{b, 0, 0};
        cuda_threads::run_block(threads, body);
    }
}

static unsigned value_of(unsigned block, unsigned t) { return block * 7919u + t * 2654435761u; }

// Every shuffle kind against its definition, on blocks of 96 (three full warps) and 80 threads
// (a partial last warp of 16 lanes), at widths 32, 16 and 4.
static void shuffles() {
    for (unsigned threads : {96u, 80u})
        for (int width : {32, 16, 4}) {
            std::vector<unsigned> got_xor(2 * threads), got_down(2 * threads), got_up(2 * threads), got_idx(2 * threads);
            launch(2, threads, [&] {
                unsigned t = threadIdx.x, g = blockIdx.x * threads + t;
                unsigned warp_lanes = threads - (t - t % 32) < 32 ? threads - (t - t % 32) : 32;
                unsigned mask = warp_lanes == 32 ? ~0u : (1u << warp_lanes) - 1;
                unsigned v = value_of(blockIdx.x, t);
                got_xor[g] = __shfl_xor_sync(mask, v, 1, width);
                got_down[g] = __shfl_down_sync(mask, v, 3, width);
                got_up[g] = __shfl_up_sync(mask, v, 2, width);
                got_idx[g] = __shfl_sync(mask, v, 5, width);
            });
            bool ok = true;
            std::string detail;
            for (unsigned g = 0; g < 2 * threads; ++g) {
                unsigned b = g / threads, t = g % threads, lane = t % 32, warp = t - lane;
                unsigned lanes = threads - warp < 32 ? threads - warp : 32, seg = lane & ~(unsigned)(width - 1);
                auto at = [&](unsigned l) { return value_of(b, warp + l); };
                auto or_own = [&](int l) {
                    bool in = l >= (int)seg && l < (int)(seg + width) && (unsigned)l < lanes;
                    return in ? at((unsigned)l) : at(lane);
                };
                unsigned want_xor = or_own((int)(lane ^ 1)), want_down = or_own((int)lane + 3),
                         want_up = or_own((int)lane - 2), want_idx = or_own((int)(seg + 5 % width));
                if (got_xor[g] != want_xor || got_down[g] != want_down || got_up[g] != want_up ||
                    got_idx[g] != want_idx) {
                    ok = false;
                    detail = "thread " + std::to_string(t) + " of block " + std::to_string(b) + " at width " +
                             std::to_string(width);
                }
            }
            std::string name = "shuffle_" + std::to_string(threads) + "_threads_width_" + std::to_string(width);
            report(name.c_str(), ok, detail);
        }
}

// A butterfly sum of 64-bit values: every lane ends with its warp's total.
static void butterfly_u64() {
    std::vector<unsigned long long> got(64);
    launch(1, 64, [&] {
        unsigned long long v = (unsigned long long)value_of(0, threadIdx.x) << 20;
        for (int m = 16; m; m /= 2) v += __shfl_xor_sync(~0u, v, m);
        got[threadIdx.x] = v;
    });
    bool ok = true;
    for (unsigned w = 0; w < 2; ++w) {
        unsigned long long want = 0;
        for (unsigned l = 0; l < 32; ++l) want += (unsigned long long)value_of(0, 32 * w + l) << 20;
        for (unsigned l = 0; l < 32; ++l) ok = ok && got[32 * w + l] == want;
    }
    report("butterfly_u64", ok);
}

// The block's sum: each warp's lane 0 stores its warp's sum in shared memory, then thread 0
// adds them up, with or without a barrier between the two. Returns whether every block's
// total was right.
static bool block_sums(bool barrier) {
    const unsigned threads = 256, grid = 2;
    std::vector<unsigned> got(grid);
    launch(grid, threads, [&] {
        __shared__ unsigned partial[8];
        unsigned v = value_of(blockIdx.x, threadIdx.x);
        for (int m = 16; m; m /= 2) v += __shfl_xor_sync(~0u, v, m);
        if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
        if (barrier) __syncthreads();
        if (threadIdx.x == 0) {
            unsigned sum = 0;
            for (unsigned w = 0; w < threads / 32; ++w) sum += partial[w];
            got[blockIdx.x] = sum;
        }
    });
    bool ok = true;
    for (unsigned b = 0; b < grid; ++b) {
        unsigned want = 0;
        for (unsigned t = 0; t < threads; ++t) want += value_of(b, t);
        ok = ok && got[b] == want;
    }
    return ok;
}

// Shared memory does not carry over from one block to the next: block 1 reads what block 0
// wrote only if the emulation kept it.
static void shared_is_per_block() {
    unsigned seen = 0;
    launch(2, 32, [&] {
        __shared__ unsigned word;
        if (blockIdx.x == 0 && threadIdx.x == 0) word = 0x1234567u;
        __syncthreads();
        if (blockIdx.x == 1 && threadIdx.x == 0) seen = word;
    });
    report("shared_memory_fresh_per_block", seen != 0x1234567u);
}

int main(int argc, char** argv) {
    if (argc == 2 && std::string(argv[1]) == "deadlock") {
        launch(1, 32, [] {
            if (threadIdx.x < 16) __syncthreads();
            else __syncwarp();
        });
        return 0;  // not reached: the emulation aborts
    }
    shuffles();
    butterfly_u64();
    report("block_sum_with_barrier", block_sums(true));
    report("block_sum_without_barrier_is_caught", !block_sums(false));
    shared_is_per_block();
    return failures ? 1 : 0;
}
