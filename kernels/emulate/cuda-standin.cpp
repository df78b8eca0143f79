// cuda-standin.cpp: a CPU stand-in for the CUDA driver calls that paraes-gpu makes (its own
// raw calls and those of the cudarc safe types it uses), so CI runs the GPU engine's host code
// (offsets, pieces, counters, streams, events, buffer reuse and release) where no NVIDIA
// driver exists. A TEST DOUBLE, NOT A GPU: the device is named "CUDA stand-in (not a GPU)", so
// every engine name, timing line and JSON made on it says so.
//
// Built by the tests (crates/paraes-gpu/tests/support/standin.rs) as a shared library whose
// SONAME is libcuda.so, and loaded only when the environment variable PARAES_CUDA_STANDIN
// names it (crates/paraes-gpu/src/driver.rs): cudarc's dlopen("libcuda.so") then finds it
// already loaded. The shipped binary never builds or loads it on its own. It exports every
// driver entry point the engine links (tests/standin_coverage.rs checks that from the
// symbols of a binary that links all of the engine).
//
// What it does:
// - "Device" and pinned memory are host allocations; every copy, memset and kernel checks
//   that its range lies inside one allocation of the right kind (device / pinned), and fails
//   loudly otherwise, as an illegal address on a GPU would.
// - Kernels are kernels/aes.cu itself, compiled for the host with real block semantics
//   (cuda-on-cpu.h, cuda-threads.h), looked up by
//   the entry-point name, which must also be in the loaded image (cubin or PTX). Cubins must
//   be 8-byte aligned (the driver reads them as ELF structures).
// - Streams run LAZILY: an enqueued copy, memset, kernel, stream-ordered allocation or free
//   runs only when something waits for it (cuStreamSynchronize, cuCtxSynchronize,
//   cuEventSynchronize, or a stream waiting on an event, which runs the recording stream
//   only up to that record). So a host that reads a result before waiting for it sees stale
//   bytes, and one that reuses a buffer before its copy ran sends the wrong bytes: the
//   identity tests catch both. Freeing or clearing memory that queued work still uses,
//   using memory before its stream-ordered allocation ran or after its free was enqueued,
//   and timing with an event made without timing abort the process with a message.
// - The context is current per thread, as on a GPU: allocations, streams, events, module
//   loads, occupancy queries and launches fail with CUDA_ERROR_INVALID_CONTEXT on a thread
//   where it is not.
// - Memory pools are reported supported (as on an A100 or H100), so cudarc allocates and
//   frees in stream order (cuMemAllocAsync, cuMemFreeAsync);
//   PARAES_CUDA_STANDIN_NO_POOLS=1 reports them unsupported (cuMemAlloc_v2, cuMemFree_v2).
// - One lock serialises every call (the emulation is single-threaded).
// - PARAES_CUDA_STANDIN_OOM_AFTER=N: allocations after the first N fail with
//   CUDA_ERROR_OUT_OF_MEMORY (tests of the out-of-memory path).

#include "standin-state.h"

// ---- the driver API (the signatures of cuda.h, CUDA 12.4) ----

#define API extern "C" __attribute__((visibility("default"))) CUresult

API cuGetErrorName(CUresult r, const char** s) {
    *s = error_name(r);
    return *s ? SUCCESS : INVALID_VALUE;
}

API cuGetErrorString(CUresult r, const char** s) {
    *s = error_name(r) ? "reported by the CUDA stand-in (not a GPU)" : nullptr;
    return *s ? SUCCESS : INVALID_VALUE;
}

API cuInit(unsigned flags) {
    LOCKED;
    if (flags) return INVALID_VALUE;
    if (!INITIALISED)
        if (const char* n = getenv("PARAES_CUDA_STANDIN_OOM_AFTER")) OOM_AFTER = atol(n);
    INITIALISED = true;
    return SUCCESS;
}

API cuDriverGetVersion(int* v) {
    *v = 12040;
    return SUCCESS;
}

API cuDeviceGetCount(int* n) {
    if (!INITIALISED) return NOT_INITIALIZED;
    *n = 1;
    return SUCCESS;
}

API cuDeviceGet(CUdevice* d, int ordinal) {
    if (!INITIALISED) return NOT_INITIALIZED;
    if (ordinal != 0) return INVALID_DEVICE;
    *d = 0;
    return SUCCESS;
}

API cuDeviceGetName(char* name, int len, CUdevice d) {
    if (d != 0 || len <= 0) return INVALID_VALUE;
    snprintf(name, (size_t)len, "%s", DEVICE_NAME);
    return SUCCESS;
}

API cuDeviceTotalMem_v2(size_t* bytes, CUdevice d) {
    if (d != 0) return INVALID_DEVICE;
    *bytes = (size_t)16 << 30;
    return SUCCESS;
}

API cuDeviceGetAttribute(int* v, int attribute, CUdevice d) {
    if (d != 0) return INVALID_DEVICE;
    switch (attribute) {
        case 13: *v = 1000000; return SUCCESS;          // CLOCK_RATE (kHz)
        case 16: *v = 2; return SUCCESS;                // MULTIPROCESSOR_COUNT
        case 39: *v = 2048; return SUCCESS;             // MAX_THREADS_PER_MULTIPROCESSOR
        case 75: *v = 9; return SUCCESS;                // COMPUTE_CAPABILITY_MAJOR
        case 76: *v = 0; return SUCCESS;                // COMPUTE_CAPABILITY_MINOR
        case 81: *v = 228 * 1024; return SUCCESS;       // MAX_SHARED_MEMORY_PER_MULTIPROCESSOR
        case 115: {                                     // MEMORY_POOLS_SUPPORTED
            const char* no = getenv("PARAES_CUDA_STANDIN_NO_POOLS");
            *v = no && *no && strcmp(no, "0") != 0 ? 0 : 1;
            return SUCCESS;
        }
        default: *v = 0; return SUCCESS;
    }
}

API cuDevicePrimaryCtxRetain(void** ctx, CUdevice d) {
    LOCKED;
    if (d != 0) return INVALID_DEVICE;
    ++RETAINED;
    *ctx = &CONTEXT;
    return SUCCESS;
}

API cuDevicePrimaryCtxRelease_v2(CUdevice d) {
    LOCKED;
    if (d != 0) return INVALID_DEVICE;
    if (RETAINED == 0) return INVALID_CONTEXT;
    --RETAINED;
    return SUCCESS;
}

// Only the primary context exists here, and it is released, never destroyed.
API cuCtxDestroy_v2(void* ctx) {
    (void)ctx;
    return INVALID_CONTEXT;
}

API cuCtxSetCurrent(void* ctx) {
    LOCKED;
    if (ctx && (ctx != &CONTEXT || RETAINED == 0)) return INVALID_CONTEXT;
    CURRENT = ctx;
    return SUCCESS;
}

API cuCtxGetCurrent(void** ctx) {
    *ctx = CURRENT;
    return SUCCESS;
}

API cuCtxSynchronize() {
    LOCKED;
    NEEDS_CONTEXT;
    flush(&DEFAULT_STREAM);
    for (bool ran = true; ran;) {  // running one stream may queue nothing new, but be thorough
        ran = false;
        for (Stream* s : STREAMS)
            if (!s->queue.empty()) {
                flush(s);
                ran = true;
            }
    }
    return SUCCESS;
}

// cuModuleLoadDataEx: accepts a CUDA ELF cubin (8-byte aligned) or a NUL-terminated PTX.
API cuModuleLoadDataEx(void** module, const void* image, unsigned n, int* options, void** values) {
    LOCKED;
    NEEDS_CONTEXT;
    char *info = nullptr, *error = nullptr;
    size_t info_len = 0, error_len = 0;
    for (unsigned i = 0; i < n; ++i) switch (options[i]) {
            case 2: {  // CU_JIT_WALL_TIME: a float written into the slot
                float zero = 0;
                memcpy(&values[i], &zero, sizeof zero);
                break;
            }
            case 3: info = (char*)values[i]; break;
            case 4: info_len = (size_t)values[i]; break;
            case 5: error = (char*)values[i]; break;
            case 6: error_len = (size_t)values[i]; break;
            default: break;
        }
    auto say = [](char* buf, size_t len, const char* text) {
        if (buf && len) snprintf(buf, len, "%s", text);
    };
    const unsigned char* p = (const unsigned char*)image;
    size_t len;
    if (memcmp(p, "\x7f" "ELF", 4) == 0) {
        if ((uintptr_t)p % 8) {
            say(error, error_len, "CUDA stand-in: cubin not 8-byte aligned");
            return INVALID_IMAGE;
        }
        uint16_t machine;
        memcpy(&machine, p + 18, 2);
        if (machine != 190) {  // EM_CUDA
            say(error, error_len, "CUDA stand-in: not a CUDA ELF file");
            return INVALID_IMAGE;
        }
        uint64_t shoff;
        uint16_t shentsize, shnum;
        memcpy(&shoff, p + 0x28, 8);
        memcpy(&shentsize, p + 0x3a, 2);
        memcpy(&shnum, p + 0x3c, 2);
        len = shoff + (size_t)shentsize * shnum;  // the section headers end the file
    } else if (strstr((const char*)p, ".version") && strstr((const char*)p, ".entry")) {
        len = strlen((const char*)p);
    } else {
        say(error, error_len, "CUDA stand-in: neither a cubin nor PTX");
        return INVALID_IMAGE;
    }
    say(info, info_len, "CUDA stand-in (not a GPU): kernels/aes.cu compiled for the host");
    Module* m = new Module{std::string((const char*)image, len)};
    MODULES.insert(m);
    *module = m;
    return SUCCESS;
}

static bool image_has(const Module* m, const std::string& name) {
    const char* end = m->image.data() + m->image.size();
    for (const char* at = m->image.data(); at + name.size() < end; ++at) {
        at = (const char*)memchr(at, name[0], (size_t)(end - at));
        if (!at || at + name.size() >= end) return false;
        if (memcmp(at, name.data(), name.size()) == 0 && !isalnum((unsigned char)at[name.size()]) &&
            at[name.size()] != '_')
            return true;
    }
    return false;
}

API cuModuleGetFunction(void** func, void* module, const char* name) {
    LOCKED;
    Module* m = (Module*)module;
    if (!MODULES.count(m)) return INVALID_HANDLE;
    Kernel k = find_kernel(name);
    if (!k || !image_has(m, name)) return NOT_FOUND;
    std::string n(name);
    bool lb5 = n.size() > 4 && n.compare(n.size() - 4, 4, "_lb5") == 0;
    *func = new Func{n, k, m, lb5 ? 256u : (unsigned)MAX_THREADS};
    return SUCCESS;
}

// The module's functions may no longer run (a launch of one still queued aborts when it runs).
API cuModuleUnload(void* module) {
    LOCKED;
    Module* m = (Module*)module;
    if (!MODULES.erase(m)) return INVALID_HANDLE;
    return SUCCESS;
}

API cuFuncSetAttribute(void* func, int attribute, int value) {
    Func* f = (Func*)func;
    if (attribute == 8) {  // MAX_DYNAMIC_SHARED_SIZE_BYTES
        if (value < 0 || value > 227 * 1024) return INVALID_VALUE;
        f->max_dynamic_shared = value;
    }
    return SUCCESS;
}

API cuFuncGetAttribute(int* v, int attribute, void* func) {
    Func* f = (Func*)func;
    switch (attribute) {
        case 0: *v = (int)f->max_threads; return SUCCESS;  // MAX_THREADS_PER_BLOCK
        case 4: *v = 40; return SUCCESS;                    // NUM_REGS
        case 8: *v = f->max_dynamic_shared; return SUCCESS;
        default: *v = 0; return SUCCESS;
    }
}

API cuOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, void* func, int threads, size_t shared) {
    LOCKED;
    NEEDS_CONTEXT;
    Func* f = (Func*)func;
    if (threads <= 0 || (unsigned)threads > f->max_threads) return INVALID_VALUE;
    (void)shared;
    *blocks = 1;
    return SUCCESS;
}

API cuLaunchKernel(void* func, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned shared, void* stream, void** params, void** extra) {
    LOCKED;
    NEEDS_CONTEXT;
    Func* f = (Func*)func;
    if (f && !MODULES.count(f->module)) return INVALID_HANDLE;
    if (!f || !params || extra || gx == 0 || gy != 1 || gz != 1 || by != 1 || bz != 1 || bx == 0 ||
        bx > f->max_threads)
        return INVALID_VALUE;
    // Dynamic shared memory: at most what was opted into (48 KiB without), and for the PAIR
    // kernels at least their two tables (+ the inverse S-box to decrypt), or they would read
    // and write past it on a GPU.
    unsigned allowed = f->max_dynamic_shared > 48 * 1024 ? (unsigned)f->max_dynamic_shared : 48 * 1024;
    bool pair = f->name.find("_pair") != std::string::npos;
    unsigned needed = pair ? (f->name.find("decrypt") != std::string::npos ? 72 : 64) * 1024 : 0;
    if (shared > allowed || shared < needed || shared > DYNAMIC_SHARED_WORDS * 4) {
        fprintf(stderr, "CUDA stand-in (not a GPU): %s launched with %u bytes of dynamic shared memory (needs %u, opted into %d)\n",
                f->name.c_str(), shared, needed, f->max_dynamic_shared);
        return INVALID_VALUE;
    }
    Op op(Op::LAUNCH);
    op.func = f;
    op.grid = gx;
    op.threads = bx;
    memcpy(&op.in, params[0], 8);
    memcpy(&op.out, params[1], 8);
    memcpy(&op.nblocks, params[2], 8);
    memcpy(&op.hi, params[3], 8);
    memcpy(&op.lo, params[4], 8);
    memcpy(&op.rk, params[5], sizeof op.rk);
    op.out_len = op.nblocks * 16;
    op.in_len = f->name.find("keystream") == std::string::npos ? op.out_len : 0;
    if (takes_records(f->kernel)) {
        memcpy(&op.last.keys, params[6], sizeof op.last.keys);
        // What the records kernels assume (kernels/aes.cu, run_records): a chunk or more, a
        // last chunk of at most 16384 bytes, whole warps (their shuffles take every lane).
        if (op.nblocks == 0 || op.lo > GCM_CHUNK_BLOCKS * 16 || bx % 32) {
            fprintf(stderr, "CUDA stand-in (not a GPU): %s launched with %llu chunks, a last of %llu bytes, %u threads\n",
                    f->name.c_str(), op.nblocks, op.lo, bx);
            return INVALID_VALUE;
        }
        RecordsSizes sizes = records_sizes(f->kernel, op.nblocks, op.lo);
        op.in_len = sizes.in;
        op.out_len = sizes.out;
    }
    if (takes_gcm(f->kernel)) {
        GcmLayout& gcm = op.last.gcm;
        memcpy(&gcm, params[6], sizeof gcm);
        // What the kernel assumes and a GPU would not check (kernels/aes.cu, run): a stride of
        // at least one chunk, block 0's place inside its record, 32-bit places in the launch.
        if (gcm.stride_blocks < GCM_CHUNK_BLOCKS || op.lo >= gcm.stride_blocks ||
            op.lo + op.nblocks + (u64)BLOCKS_PER_THREAD * bx > (1ull << 32)) {
            fprintf(stderr, "CUDA stand-in (not a GPU): %s launched with stride %u blocks, block %llu of its record, %llu blocks\n",
                    f->name.c_str(), gcm.stride_blocks, op.lo, op.nblocks);
            return INVALID_VALUE;
        }
    }
    if (op.out_len && !inside((void*)op.out, op.out_len, false))
        return bad_range(f->name.c_str(), (void*)op.out, op.out_len, false);
    if (op.in_len && !inside((void*)op.in, op.in_len, false))
        return bad_range(f->name.c_str(), (void*)op.in, op.in_len, false);
    return enqueue(stream, op);
}

API cuStreamCreate(void** stream, unsigned flags) {
    LOCKED;
    NEEDS_CONTEXT;
    (void)flags;
    Stream* s = new Stream;
    STREAMS.insert(s);
    *stream = s;
    return SUCCESS;
}

// Destroying a stream runs its queue first (a GPU finishes it too); the handle's memory is
// kept (an event may still name it), never reused.
API cuStreamDestroy_v2(void* stream) {
    LOCKED;
    Stream* s = (Stream*)stream;
    if (!STREAMS.count(s)) return INVALID_HANDLE;
    flush(s);
    STREAMS.erase(s);
    return SUCCESS;
}

API cuStreamSynchronize(void* stream) {
    LOCKED;
    Stream* s = stream_of(stream);
    if (s != &DEFAULT_STREAM && !STREAMS.count(s)) return INVALID_HANDLE;  // destroyed, as a driver may say
    flush(s);
    return SUCCESS;
}

// Waits for the event's latest record at the time of the call (a wait for an event never
// recorded waits for nothing), as cuStreamWaitEvent does.
API cuStreamWaitEvent(void* stream, void* event, unsigned flags) {
    LOCKED;
    Event* e = (Event*)event;
    if (!e || flags) return INVALID_VALUE;
    Op op(Op::WAIT);
    op.event = e;
    op.generation = e->recorded;
    op.recorded_on = e->stream;
    return enqueue(stream, op);
}

API cuEventCreate(void** event, unsigned flags) {
    LOCKED;
    NEEDS_CONTEXT;
    if (flags & ~7u) return INVALID_VALUE;  // BLOCKING_SYNC 1, DISABLE_TIMING 2, INTERPROCESS 4
    Event* e = new Event;
    e->flags = flags;
    *event = e;
    return SUCCESS;
}

// Events are kept (queued work may still name them), never reused.
API cuEventDestroy_v2(void* event) { return event ? SUCCESS : INVALID_HANDLE; }

API cuEventRecord(void* event, void* stream) {
    LOCKED;
    Event* e = (Event*)event;
    if (!e) return INVALID_HANDLE;
    Op op(Op::RECORD);
    op.event = e;
    op.generation = e->recorded + 1;
    CUresult r = enqueue(stream, op);
    if (r == SUCCESS) {
        e->recorded = op.generation;
        e->stream = stream_of(stream);
    }
    return r;
}

API cuEventSynchronize(void* event) {
    LOCKED;
    Event* e = (Event*)event;
    if (!e) return INVALID_HANDLE;
    // A destroyed stream ran all its work when it was destroyed: nothing left to wait for.
    if (e->stream != &DEFAULT_STREAM && !STREAMS.count(e->stream)) return SUCCESS;
    run_until(e->stream, e, e->recorded);
    return SUCCESS;
}

API cuEventElapsedTime(float* ms, void* start, void* end) {
    LOCKED;
    Event *a = (Event*)start, *b = (Event*)end;
    if (!a || !b) return INVALID_HANDLE;
    if ((a->flags | b->flags) & 2) die("cuEventElapsedTime on an event made with CU_EVENT_DISABLE_TIMING");
    if (!a->recorded || !b->recorded || record_pending(a->stream, a, a->recorded) ||
        record_pending(b->stream, b, b->recorded))
        return NOT_READY;
    *ms = (float)((b->seconds - a->seconds) * 1e3);
    return SUCCESS;
}

API cuMemAlloc_v2(CUdeviceptr* p, size_t len) {
    LOCKED;
    NEEDS_CONTEXT;
    return allocate((void**)p, len, false);
}

API cuMemFree_v2(CUdeviceptr p) {
    LOCKED;
    return release((void*)p, false);
}

// Stream-ordered allocation: the memory exists at once but may be used only by work that
// runs after this point of `stream` (work that runs earlier aborts).
API cuMemAllocAsync(CUdeviceptr* p, size_t len, void* stream) {
    LOCKED;
    NEEDS_CONTEXT;
    void* mem = nullptr;
    CUresult r = allocate(&mem, len, false);
    if (r != SUCCESS) return r;
    ALLOCS[(uintptr_t)mem].ready = false;
    Op op(Op::ALLOC);
    op.dst = (char*)mem;
    r = enqueue(stream, op);
    if (r != SUCCESS) {
        ALLOCS.erase((uintptr_t)mem);
        free(mem);
        return r;
    }
    *p = (CUdeviceptr)mem;
    return SUCCESS;
}

// Stream-ordered free: no work may be enqueued on the memory from now on, and when the free
// runs, no other stream's queued work may still use it.
API cuMemFreeAsync(CUdeviceptr p, void* stream) {
    LOCKED;
    auto it = ALLOCS.find((uintptr_t)p);
    if (it == ALLOCS.end() || it->second.pinned || it->second.freeing) return INVALID_VALUE;
    Op op(Op::FREE);
    op.dst = (char*)p;
    CUresult r = enqueue(stream, op);
    if (r == SUCCESS) it->second.freeing = true;
    return r;
}

API cuMemHostAlloc(void** p, size_t len, unsigned flags) {
    LOCKED;
    NEEDS_CONTEXT;
    if (flags & ~7u) return INVALID_VALUE;  // PORTABLE 1, DEVICEMAP 2, WRITECOMBINED 4
    return allocate(p, len, true);
}

API cuMemFreeHost(void* p) {
    LOCKED;
    return release(p, true);
}

API cuMemsetD8Async(CUdeviceptr p, unsigned char value, size_t len, void* stream) {
    LOCKED;
    if (!inside((void*)p, len, false)) return bad_range("cuMemsetD8Async", (void*)p, len, false);
    Op op(Op::MEMSET);
    op.dst = (char*)p;
    op.len = len;
    op.value = value;
    return enqueue(stream, op);
}

static CUresult copy(const char* what, void* dst, bool dst_pinned, const void* src, bool src_pinned, size_t len,
                     void* stream) {
    LOCKED;
    if (!inside(dst, len, dst_pinned)) return bad_range(what, dst, len, dst_pinned);
    if (!inside(src, len, src_pinned)) return bad_range(what, src, len, src_pinned);
    Op op(Op::COPY);
    op.dst = (char*)dst;
    op.src = (const char*)src;
    op.len = len;
    op.dst_pinned = dst_pinned;
    op.src_pinned = src_pinned;
    return enqueue(stream, op);
}

API cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t len, void* stream) {
    return copy("cuMemcpyHtoDAsync", (void*)dst, false, src, true, len, stream);
}

API cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t len, void* stream) {
    return copy("cuMemcpyDtoHAsync", dst, true, (const void*)src, false, len, stream);
}

API cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t len, void* stream) {
    return copy("cuMemcpyDtoDAsync", (void*)dst, false, (const void*)src, false, len, stream);
}

// Between contexts: the stand-in has one, so only a copy within it is possible (cudarc's
// memcpy_dtod takes this path when the two sides' context objects differ).
API cuMemcpyPeerAsync(CUdeviceptr dst, void* dst_ctx, CUdeviceptr src, void* src_ctx, size_t len, void* stream) {
    if (dst_ctx != &CONTEXT || src_ctx != &CONTEXT) return INVALID_CONTEXT;
    return copy("cuMemcpyPeerAsync", (void*)dst, false, (const void*)src, false, len, stream);
}
