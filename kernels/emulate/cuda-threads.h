// cuda-threads.h: a CUDA thread block on the CPU with real block semantics, for the kernel
// emulator (cuda-on-cpu.h: host.cpp and the CUDA stand-in) and its self-test
// (threads-selftest.cpp).
//
// - Each thread of a block is a fiber (ucontext) on the calling OS thread. A fiber runs until
//   it reaches a barrier (__syncthreads), a warp sync (a shuffle, __syncwarp) or its end; the
//   scheduler runs every runnable fiber, then releases a warp all of whose live lanes wait at
//   a warp sync, else the block when every live thread waits at __syncthreads (an exited
//   thread counts as arrived, as on a GPU). Anything else is a deadlock (some threads wait at
//   a barrier the others never reach), reported and aborted.
// - Between two barriers the threads run one after another, in index order in even blocks and
//   in reverse order in odd ones: a thread that reads what another writes without a barrier
//   between them sees the value missing in one of the two orders (a launch of two blocks or
//   more tries both), so a race in a kernel shows as wrong output.
// - __shared__ variables live in one linker section that is filled with a poison pattern
//   before every block: a block sees none of the previous block's shared memory, as on a GPU.
// - Shuffles (__shfl_sync, __shfl_xor_sync, __shfl_down_sync, __shfl_up_sync) exchange 32- or
//   64-bit values among the lanes of a warp at the call, which is a sync point of those
//   lanes; the mask must name every lane of the warp that exists (partial masks are not
//   emulated: aborted).
// Not thread-safe: the built-in variables are process-wide; callers serialise.
#pragma once

#include <sys/mman.h>
#include <ucontext.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

struct Dim3 {
    unsigned x, y, z;
};
static Dim3 threadIdx, blockIdx, blockDim, gridDim;
static const int warpSize = 32;

// Every __shared__ variable in the section cuda_shared (the linker defines its bounds).
#define __shared__ static __attribute__((section("cuda_shared")))
extern "C" char __start_cuda_shared[] __attribute__((weak));
extern "C" char __stop_cuda_shared[] __attribute__((weak));

namespace cuda_threads {

const unsigned MAX_BLOCK_THREADS = 1024;
const size_t STACK_BYTES = 256 * 1024;  // per fiber, with a guard page below it
const unsigned char SHARED_POISON = 0xa5;

[[noreturn]] inline void die(const char* why) {
    fprintf(stderr, "CUDA emulation (not a GPU): %s\n", why);
    abort();
}

enum State { READY, AT_BARRIER, AT_WARP, DONE };

struct Fiber {
    ucontext_t context;
    State state;
    unsigned syncs;  // warp syncs done: which half of the exchange the next shuffle uses
};

struct Block {
    unsigned threads = 0;
    Fiber fibers[MAX_BLOCK_THREADS];
    uint64_t exchange[2][MAX_BLOCK_THREADS];  // shuffle values, double-buffered by `syncs`
    ucontext_t scheduler;
    unsigned current = 0;
    const std::function<void()>* body = nullptr;
    char* stacks = nullptr;
};

inline Block& block() {
    static Block* b = new Block;  // large; never freed
    return *b;
}

inline void fiber_entry() {
    Block& b = block();
    (*b.body)();
    b.fibers[b.current].state = DONE;  // returns to uc_link, the scheduler
}

// Every fiber's stack, with a guard page below each (made once; pages are touched as used).
inline void make_stacks(Block& b) {
    if (b.stacks) return;
    size_t each = STACK_BYTES + 4096;
    void* mem = mmap(nullptr, each * MAX_BLOCK_THREADS, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                     -1, 0);
    if (mem == MAP_FAILED) die("no memory for the fibers' stacks");
    for (unsigned t = 0; t < MAX_BLOCK_THREADS; ++t) mprotect((char*)mem + t * each, 4096, PROT_NONE);
    b.stacks = (char*)mem;
}

// Switches from the calling fiber to the scheduler, which resumes it once released.
inline void wait_as(State state) {
    Block& b = block();
    if (!b.body) die("__syncthreads or a shuffle outside a kernel launch");
    Fiber& f = b.fibers[b.current];
    f.state = state;
    swapcontext(&f.context, &b.scheduler);
}

// Releases every warp whose live lanes all wait at a warp sync; else the block when every
// live thread waits at the barrier. False when neither (a deadlock).
inline bool release(Block& b) {
    bool released = false;
    for (unsigned w = 0; w < b.threads; w += 32) {
        unsigned end = w + 32 < b.threads ? w + 32 : b.threads, waiting = 0, live = 0;
        for (unsigned t = w; t < end; ++t) {
            live += b.fibers[t].state != DONE;
            waiting += b.fibers[t].state == AT_WARP;
        }
        if (waiting && waiting == live) {
            if (live < end - w) die("a shuffle or __syncwarp in a warp with exited lanes");
            for (unsigned t = w; t < end; ++t) b.fibers[t].state = READY;
            released = true;
        }
    }
    if (released) return true;
    unsigned at_barrier = 0, live = 0;
    for (unsigned t = 0; t < b.threads; ++t) {
        live += b.fibers[t].state != DONE;
        at_barrier += b.fibers[t].state == AT_BARRIER;
    }
    if (!at_barrier || at_barrier != live) return false;
    for (unsigned t = 0; t < b.threads; ++t)
        if (b.fibers[t].state == AT_BARRIER) b.fibers[t].state = READY;
    return true;
}

// Runs `body` as the `threads` threads of block blockIdx (set by the caller), with fresh
// (poisoned) shared memory; returns when every thread has returned.
inline void run_block(unsigned threads, const std::function<void()>& body) {
    if (threads == 0 || threads > MAX_BLOCK_THREADS) die("a block of 0 or more than 1024 threads");
    Block& b = block();
    make_stacks(b);
    if (__start_cuda_shared && __stop_cuda_shared)
        memset(__start_cuda_shared, SHARED_POISON, (size_t)(__stop_cuda_shared - __start_cuda_shared));
    b.threads = threads;
    b.body = &body;
    for (unsigned t = 0; t < threads; ++t) {
        Fiber& f = b.fibers[t];
        getcontext(&f.context);
        f.context.uc_stack.ss_sp = b.stacks + t * (STACK_BYTES + 4096) + 4096;
        f.context.uc_stack.ss_size = STACK_BYTES;
        f.context.uc_link = &b.scheduler;
        makecontext(&f.context, fiber_entry, 0);
        f.state = READY;
        f.syncs = 0;
    }
    bool reverse = blockIdx.x % 2 == 1;
    for (;;) {
        for (unsigned i = 0; i < threads; ++i) {
            unsigned t = reverse ? threads - 1 - i : i;
            if (b.fibers[t].state != READY) continue;
            b.current = t;
            threadIdx = Dim3{t, 0, 0};
            swapcontext(&b.scheduler, &b.fibers[t].context);
        }
        bool all_done = true;
        for (unsigned t = 0; t < threads; ++t) all_done = all_done && b.fibers[t].state == DONE;
        if (all_done) break;
        if (!release(b)) die("deadlock: some threads wait at __syncthreads or a warp sync the others never reach");
    }
    b.body = nullptr;
}

// A warp sync of the calling lane that publishes `value` and returns lane `src`'s (the
// caller's own when `src` is outside the caller's segment of `width` lanes).
inline uint64_t exchange(unsigned mask, uint64_t value, int src, int width, bool in_segment) {
    Block& b = block();
    unsigned t = b.current, lane = t % 32, warp = t - lane;
    unsigned lanes = b.threads - warp < 32 ? b.threads - warp : 32;
    unsigned full = lanes == 32 ? ~0u : (1u << lanes) - 1;
    if (mask != full) die("a shuffle whose mask is not every lane of its warp (not emulated)");
    if (width <= 0 || width > 32 || (width & (width - 1))) die("a shuffle width that is not a power of 2 up to 32");
    Fiber& f = b.fibers[t];
    unsigned half = f.syncs++ % 2;
    b.exchange[half][t] = value;
    wait_as(AT_WARP);
    unsigned segment = lane & ~(unsigned)(width - 1);
    if (!in_segment || src < (int)segment || src >= (int)(segment + width) || (unsigned)src >= lanes) return value;
    return b.exchange[half][warp + src];
}

}  // namespace cuda_threads

#define __syncthreads() cuda_threads::wait_as(cuda_threads::AT_BARRIER)
static inline void __syncwarp(unsigned mask = ~0u) { cuda_threads::exchange(mask, 0, 0, 32, false); }

template <class T>
static inline T shuffle_as(unsigned mask, T value, int src, int width, bool in_segment) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 8, "shuffles of 32- and 64-bit values");
    uint64_t v = 0;
    memcpy(&v, &value, sizeof value);
    v = cuda_threads::exchange(mask, v, src, width, in_segment);
    memcpy(&value, &v, sizeof value);
    return value;
}
template <class T>
static inline T __shfl_sync(unsigned mask, T value, int src, int width = 32) {
    int lane = (int)(threadIdx.x % 32);
    return shuffle_as(mask, value, (lane & ~(width - 1)) + (src & (width - 1)), width, true);
}
template <class T>
static inline T __shfl_xor_sync(unsigned mask, T value, int lane_mask, int width = 32) {
    return shuffle_as(mask, value, (int)(threadIdx.x % 32) ^ lane_mask, width, true);
}
template <class T>
static inline T __shfl_down_sync(unsigned mask, T value, unsigned delta, int width = 32) {
    return shuffle_as(mask, value, (int)(threadIdx.x % 32 + delta), width, true);
}
template <class T>
static inline T __shfl_up_sync(unsigned mask, T value, unsigned delta, int width = 32) {
    return shuffle_as(mask, value, (int)(threadIdx.x % 32) - (int)delta, width, true);
}
