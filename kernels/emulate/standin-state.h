// standin-state.h: the CUDA stand-in's state and work queue (cuda-standin.cpp, which
// #includes this once): result codes, allocations, streams, events, modules, the queued
// operations and how they run, the range checks. Read cuda-standin.cpp's top comment first.
#pragma once

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <set>

#include "cuda-on-cpu.h"

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;

enum : CUresult {
    SUCCESS = 0,
    INVALID_VALUE = 1,
    OUT_OF_MEMORY = 2,
    NOT_INITIALIZED = 3,
    INVALID_DEVICE = 101,
    INVALID_IMAGE = 200,
    INVALID_CONTEXT = 201,
    INVALID_HANDLE = 400,
    NOT_FOUND = 500,
    NOT_READY = 600,
    ILLEGAL_ADDRESS = 700,
};

static const char* error_name(CUresult r) {
    switch (r) {
        case SUCCESS: return "CUDA_SUCCESS";
        case INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
        case OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
        case NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
        case INVALID_DEVICE: return "CUDA_ERROR_INVALID_DEVICE";
        case INVALID_IMAGE: return "CUDA_ERROR_INVALID_IMAGE";
        case INVALID_CONTEXT: return "CUDA_ERROR_INVALID_CONTEXT";
        case INVALID_HANDLE: return "CUDA_ERROR_INVALID_HANDLE";
        case NOT_FOUND: return "CUDA_ERROR_NOT_FOUND";
        case NOT_READY: return "CUDA_ERROR_NOT_READY";
        case ILLEGAL_ADDRESS: return "CUDA_ERROR_ILLEGAL_ADDRESS";
        default: return nullptr;
    }
}

static const char* const DEVICE_NAME = "CUDA stand-in (not a GPU)";

// ---- state (guarded by LOCK) ----

struct Alloc {
    size_t len;
    bool pinned;
    bool ready = true;     // false until its stream-ordered allocation (cuMemAllocAsync) ran
    bool freeing = false;  // true once a stream-ordered free (cuMemFreeAsync) is enqueued
};
struct Stream;
struct Event {
    unsigned flags = 0;
    Stream* stream = nullptr;  // where it was last recorded
    unsigned long recorded = 0, completed = 0;
    double seconds = 0;
};
struct Module {
    std::string image;  // a copy: the caller may free its image once the load returns
};
struct Func {
    std::string name;
    Kernel kernel;
    Module* module;
    unsigned max_threads;
    int max_dynamic_shared = 0;
};
struct Op {
    enum Kind { COPY, MEMSET, LAUNCH, RECORD, WAIT, ALLOC, FREE } kind;
    explicit Op(Kind k) : kind(k) {}
    // COPY, MEMSET (dst, len, value), ALLOC and FREE (dst)
    char* dst = nullptr;
    const char* src = nullptr;
    size_t len = 0;
    unsigned char value = 0;
    bool dst_pinned = false, src_pinned = false;
    // LAUNCH
    Func* func = nullptr;
    unsigned grid = 0, threads = 0;
    u64 in = 0, out = 0, nblocks = 0, hi = 0, lo = 0;
    RoundKeys rk{};
    LastParam last{};       // the _gcm and GCM records kernels only
    u64 in_len = 0, out_len = 0;  // bytes the kernel reads (0: none) and writes
    // RECORD, WAIT (the stream the awaited record was enqueued on)
    Event* event = nullptr;
    unsigned long generation = 0;
    Stream* recorded_on = nullptr;
};
struct Stream {
    std::deque<Op> queue;
};

static std::recursive_mutex LOCK;
static std::map<uintptr_t, Alloc> ALLOCS;
static std::set<Stream*> STREAMS;
static std::set<Module*> MODULES;
static Stream DEFAULT_STREAM;
static bool INITIALISED = false;
static long OOM_AFTER = -1;  // allocations allowed before CUDA_ERROR_OUT_OF_MEMORY; -1: any
static int CONTEXT;          // the primary context's address is its handle
static long RETAINED = 0;    // cuDevicePrimaryCtxRetain minus cuDevicePrimaryCtxRelease
static thread_local void* CURRENT = nullptr;  // the context current on this thread

#define LOCKED std::lock_guard<std::recursive_mutex> guard(LOCK)
// Context-scoped calls fail where the context is not current on the calling thread.
#define NEEDS_CONTEXT \
    if (CURRENT != &CONTEXT) return INVALID_CONTEXT

[[noreturn]] static void die(const std::string& why) {
    fprintf(stderr, "CUDA stand-in (not a GPU): %s\n", why.c_str());
    abort();
}

static double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

static Stream* stream_of(void* handle) { return handle ? (Stream*)handle : &DEFAULT_STREAM; }

// The allocation of kind `pinned` that [p, p + len) lies inside, or null.
static Alloc* find_alloc(const void* p, size_t len, bool pinned) {
    uintptr_t a = (uintptr_t)p;
    auto it = ALLOCS.upper_bound(a);
    if (it == ALLOCS.begin()) return nullptr;
    --it;
    bool in = it->second.pinned == pinned && a >= it->first && a + len <= it->first + it->second.len;
    return in ? &it->second : nullptr;
}

// True when [p, p + len) lies inside one allocation of kind `pinned` that new work may use
// (not one whose stream-ordered free is already enqueued).
static bool inside(const void* p, size_t len, bool pinned) {
    Alloc* a = find_alloc(p, len, pinned);
    return a && !a->freeing;
}

static CUresult bad_range(const char* what, const void* p, size_t len, bool pinned) {
    fprintf(stderr, "CUDA stand-in (not a GPU): %s: %zu bytes at %p are not inside one live %s allocation\n", what, len,
            p, pinned ? "pinned host" : "device");
    return ILLEGAL_ADDRESS;
}

// When queued work runs: its memory must still be allocated, and allocated already.
static void check_live(const char* what, const void* p, size_t len, bool pinned) {
    if (!len) return;
    Alloc* a = find_alloc(p, len, pinned);
    if (!a) die(std::string(what) + " ran on memory that was freed before it ran");
    if (!a->ready) die(std::string(what) + " ran before the stream-ordered allocation of its memory");
}

static bool overlaps(const char* p, size_t len, uintptr_t start, size_t size) {
    return len && (uintptr_t)p < start + size && start < (uintptr_t)p + len;
}

// Aborts when queued work still uses the allocation at `start` (freed or cleared too early).
static void check_idle(uintptr_t start, const char* what) {
    auto it = ALLOCS.find(start);
    if (it == ALLOCS.end()) return;
    size_t size = it->second.len;
    for (Stream* s : STREAMS)
        for (const Op& op : s->queue) {
            bool used = false;
            if (op.kind == Op::COPY || op.kind == Op::MEMSET)
                used = overlaps(op.dst, op.len, start, size) || overlaps(op.src, op.len, start, size);
            if (op.kind == Op::LAUNCH)
                used = overlaps((const char*)op.out, op.out_len, start, size) ||
                       overlaps((const char*)op.in, op.in_len, start, size);
            if (used) die(std::string(what) + " memory that queued work (not yet waited for) still uses");
        }
}

static void run(Op& op);

// True when the record of generation `g` of `e` is still queued on `s`.
static bool record_pending(Stream* s, Event* e, unsigned long g) {
    if (!s) return false;
    for (const Op& op : s->queue)
        if (op.kind == Op::RECORD && op.event == e && op.generation == g) return true;
    return false;
}

// Runs `s` in order up to and including the record of generation `g` of `e` (a GPU has run
// at least that much when a wait for the record returns); nothing when it already ran.
static void run_until(Stream* s, Event* e, unsigned long g) {
    while (record_pending(s, e, g)) {
        Op op = s->queue.front();
        s->queue.pop_front();
        run(op);
    }
}

// Runs everything queued on `s`, in order.
static void flush(Stream* s) {
    while (!s->queue.empty()) {
        Op op = s->queue.front();
        s->queue.pop_front();
        run(op);
    }
}

static void release_now(uintptr_t start, const char* what) {
    check_idle(start, what);
    ALLOCS.erase(start);
    free((void*)start);
}

static void run(Op& op) {
    switch (op.kind) {
        case Op::COPY:
            check_live("a copy", op.dst, op.len, op.dst_pinned);
            check_live("a copy", op.src, op.len, op.src_pinned);
            memmove(op.dst, op.src, op.len);
            break;
        case Op::MEMSET:
            check_live("cuMemsetD8Async", op.dst, op.len, false);
            memset(op.dst, op.value, op.len);
            break;
        case Op::LAUNCH:
            if (!MODULES.count(op.func->module)) die(op.func->name + " ran after its module was unloaded");
            check_live(op.func->name.c_str(), (const void*)op.out, op.out_len, false);
            if (op.in_len) check_live(op.func->name.c_str(), (const void*)op.in, op.in_len, false);
            emulate_launch(op.func->kernel, op.grid, op.threads, (const uint4*)op.in, (uint4*)op.out, op.nblocks,
                           op.hi, op.lo, op.rk, op.last);
            break;
        case Op::RECORD:
            if (op.generation > op.event->completed) {
                op.event->completed = op.generation;
                op.event->seconds = now();
            }
            break;
        case Op::WAIT:
            run_until(op.recorded_on, op.event, op.generation);
            break;
        case Op::ALLOC: {
            auto it = ALLOCS.find((uintptr_t)op.dst);
            if (it == ALLOCS.end()) die("a stream-ordered allocation vanished before it ran");
            it->second.ready = true;
            break;
        }
        case Op::FREE:
            release_now((uintptr_t)op.dst, "cuMemFreeAsync freeing");
            break;
    }
}

static CUresult enqueue(void* stream, const Op& op) {
    Stream* s = stream_of(stream);
    if (s != &DEFAULT_STREAM && !STREAMS.count(s)) return INVALID_HANDLE;
    s->queue.push_back(op);
    return SUCCESS;
}

static CUresult allocate(void** p, size_t len, bool pinned) {
    if (OOM_AFTER == 0) return OUT_OF_MEMORY;
    if (OOM_AFTER > 0) --OOM_AFTER;
    void* mem = aligned_alloc(256, (len + 255) / 256 * 256);
    if (!mem) return OUT_OF_MEMORY;
    ALLOCS[(uintptr_t)mem] = Alloc{len, pinned};
    *p = mem;
    return SUCCESS;
}

static CUresult release(void* p, bool pinned) {
    auto it = ALLOCS.find((uintptr_t)p);
    if (it == ALLOCS.end() || it->second.pinned != pinned || it->second.freeing) return INVALID_VALUE;
    release_now((uintptr_t)p, "freeing");
    return SUCCESS;
}
