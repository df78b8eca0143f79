#!/usr/bin/env python3
"""kb.py: kernel-only timing through the CUDA driver API (ctypes; no Rust, no CuPy), an
independent cross-check of gpu_bench's kernel table, beside the public reference kernel.

Adapted from ../shared/gpu-first-contact/kb.py: loads a cubin or PTX of kernels/aes.cu
(cuModuleLoadDataEx, printing the JIT log and load time), passes the dynamic shared memory
the PAIR variants need, starts the counter where the R1 variants take their fast path, and
matches kernel names exactly (aes128_ctr_fused is a prefix of its variants).

Usage: kb.py IMAGE(.cubin|.ptx) [ANCHOR.ptx|-] [KERNEL]
  KERNEL: time only this one (for Nsight Compute's -k); default: every kernel below.
Timing only: the keys and data are arbitrary; gpu_identity checks correctness.
"""
import ctypes as C
import statistics as st
import sys
import time

cu = C.CDLL("libcuda.so.1")


def ck(r, what):
    if r:
        s = C.c_char_p()
        cu.cuGetErrorName(r, C.byref(s))
        sys.exit(f"{what}: {s.value}")


ck(cu.cuInit(0), "init")
elapsed = getattr(cu, "cuEventElapsedTime_v2", None) or cu.cuEventElapsedTime
dev = C.c_int()
ck(cu.cuDeviceGet(C.byref(dev), 0), "dev")
ctx = C.c_void_p()
ck(cu.cuDevicePrimaryCtxRetain(C.byref(ctx), dev), "ctx")
ck(cu.cuCtxSetCurrent(ctx), "cur")


def attr(a):
    v = C.c_int()
    cu.cuDeviceGetAttribute(C.byref(v), a, dev)
    return v.value


sms, clk = attr(16), attr(13)  # MULTIPROCESSOR_COUNT, CLOCK_RATE (kHz)
print(f"SMs {sms}, max SM clock {clk / 1e6:.3f} GHz, compute capability {attr(75)}.{attr(76)}")


def load(path):
    img = open(path, "rb").read()
    if path.endswith(".ptx"):
        img += b"\0"
    log = C.create_string_buffer(1 << 16)
    opts = (C.c_int * 2)(5, 6)  # CU_JIT_ERROR_LOG_BUFFER, ..._SIZE_BYTES
    vals = (C.c_void_p * 2)(C.cast(log, C.c_void_p), C.c_void_p(1 << 16))
    m = C.c_void_p()
    t = time.time()
    r = cu.cuModuleLoadDataEx(C.byref(m), img, 2, opts, vals)
    print(f"load {path}: {time.time() - t:.3f} s {log.value.decode()[:500]}")
    ck(r, "load " + path)
    return m


ONLY = sys.argv[3] if len(sys.argv) > 3 else ""
ours = load(sys.argv[1])
anchor_path = sys.argv[2] if len(sys.argv) > 2 and sys.argv[2] != "-" else ""
anchor = load(anchor_path) if anchor_path and ONLY in ("", "OneTblBytePermReuseUnroll") else None
N = 1 << 30


def alloc(n):
    p = C.c_uint64()
    ck(cu.cuMemAlloc_v2(C.byref(p), C.c_size_t(n)), "alloc")
    cu.cuMemsetD8_v2(p, 0x5A, C.c_size_t(n))
    return p


din, dout, small = alloc(N), alloc(N), alloc(1 << 20)
e0, e1 = C.c_void_p(), C.c_void_p()
cu.cuEventCreate(C.byref(e0), 0)
cu.cuEventCreate(C.byref(e1), 0)


def shared_bytes(name):
    if "_pair" not in name:
        return 0
    return (2 * 256 * 32 + (64 * 32 if "_ecb_decrypt" in name else 0)) * 4


def fn(m, name, shared):
    f = C.c_void_p()
    ck(cu.cuModuleGetFunction(C.byref(f), m, name.encode()), name)
    cu.cuFuncSetAttribute(f, 9, 100)  # PREFERRED_SHARED_MEMORY_CARVEOUT = 100 %
    if shared:
        ck(cu.cuFuncSetAttribute(f, 8, shared), name + " MAX_DYNAMIC_SHARED_SIZE_BYTES")
    return f


def info(f, threads, shared):
    regs, occ = C.c_int(), C.c_int()
    cu.cuFuncGetAttribute(C.byref(regs), 4, f)
    cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(C.byref(occ), f, threads, C.c_size_t(shared))
    return regs.value, occ.value


def timed(f, grid, threads, shared, params, reps=30):
    arr = (C.c_void_p * len(params))(*[C.addressof(p) for p in params])
    ts = []
    for i in range(reps + 3):
        cu.cuEventRecord(e0, None)
        ck(cu.cuLaunchKernel(f, grid, 1, 1, threads, 1, 1, shared, None, arr, None), "launch")
        cu.cuEventRecord(e1, None)
        ck(cu.cuEventSynchronize(e1), "sync")
        ms = C.c_float()
        ck(elapsed(C.byref(ms), e0, e1), "elapsed")
        if i >= 3:
            ts.append(ms.value)
    return st.median(ts), min(ts)


class RK(C.Structure):
    _fields_ = [("w", C.c_uint32 * 60)]


rk = RK()
rk.w[:] = list(range(1, 61))
NAMES = [
    "aes128_ctr_keystream", "aes128_ctr_fused", "aes128_ecb_encrypt", "aes128_ecb_decrypt",
    "aes256_ctr_keystream", "aes256_ctr_fused",
    "aes128_ctr_keystream_pair", "aes128_ctr_fused_pair", "aes128_ctr_keystream_r1",
    "aes128_ctr_fused_r1", "aes128_ctr_keystream_pair_r1", "aes128_ctr_fused_pair_r1",
    "aes128_ctr_fused_lb5", "aes128_ecb_encrypt_pair",
]
for name in [n for n in NAMES if ONLY in ("", n)]:
    shared = shared_bytes(name)
    f = fn(ours, name, shared)
    for threads in ((256,) if ONLY else (128, 256, 512)):
        if threads > 256 and name.endswith("_lb5"):
            continue
        regs, occ = info(f, threads, shared)
        nb = N // 16
        grid = min(sms * occ, -(-nb // (4 * threads)))
        # Counter hi = 7, lo = 0x1000: no launch crosses 2^32 blocks in the low word, so the
        # R1 variants run their fast path (gpu_bench's counters do the same).
        ps = [din, dout, C.c_uint64(nb), C.c_uint64(7), C.c_uint64(0x1000), rk]
        med, best = timed(f, grid, threads, shared, ps)
        clocks = sms * clk * 1e3 / (nb / (med / 1e3))
        print(f"ours {name:30} t{threads:4} regs {regs:3} blocks/SM {occ} grid {grid:5}: {med:.3f} ms "
              f"{N * 8 / med / 1e9:7.1f} Tbps (best {N * 8 / best / 1e9:.1f}), {clocks:.1f} SM-clocks/block at peak clock")
if anchor is not None:
    f = fn(anchor, "OneTblBytePermReuseUnroll", 0)
    regs, occ = info(f, 1024, 0)
    ps = [dout, small, small, din, small, small]
    med, best = timed(f, 2048, 1024, 0, ps)
    clocks = sms * clk * 1e3 / ((N // 16) / (med / 1e3))
    print(f"anchor OneTblBytePermReuseUnroll t1024 regs {regs} blocks/SM {occ} grid 2048: {med:.3f} ms "
          f"{N * 8 / med / 1e9:.1f} Tbps (best {N * 8 / best / 1e9:.1f}), {clocks:.1f} SM-clocks/block at peak clock")
