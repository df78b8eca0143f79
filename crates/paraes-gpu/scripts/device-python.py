#!/usr/bin/env python3
"""device-python.py: paraes.cuda with PyTorch on a GPU (issue 38, item 3: in CI a hand-made
producer of both protocols stands in for PyTorch; on the device, PyTorch itself). Checks, each
printed as one ok/FAIL line:

* README's PyTorch example as written (a container loaded into GPU memory and viewed as
  float32; a tensor sealed and opened; the same on PyTorch's current stream);
* tensors of several dtypes and shapes sealed by ``paraes.cuda.seal`` and opened to the same
  bytes, through DLPack and through ``__cuda_array_interface__`` alone; the records equal to
  those of ``paraes.seal_message`` (host side, which draws its own salt: the device seals
  with that salt) for the same key and context, and that message opening on the host;
* in place: a tensor sealed and opened in place; a tampered record refused with the tensor
  left as it was; a non-contiguous tensor refused with a ValueError;
* README's safetensors example as written, on a file made here (tensors of three dtypes);
* ``paraes.cuda.save`` of a tensor's bytes opening with ``paraes.decrypt_file``;
* the time of ``paraes.cuda.load`` of a 2 GiB container from the page cache (median of 3)
  beside torch's upload of as many bytes from pinned memory.

Each section runs on its own: an exception fails that section (with its traceback) and the
next one still runs.

Usage on the device (after ``pip install --no-deps --target DIR`` of the staged wheel):
``PYTHONPATH=DIR python3 device-python.py [WORKDIR]``. Exits 1 on any failure.
"""

import json
import os
import struct
import sys
import tempfile
import time
import traceback

import torch

import paraes
import paraes.cuda

failures = 0


def check(name, ok, detail=""):
    global failures
    print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}", flush=True)
    failures += 0 if ok else 1


def host_bytes(t):
    return t.contiguous().view(torch.uint8).cpu().numpy().tobytes()


class InterfaceOnly:
    """A producer of ``__cuda_array_interface__`` alone (no DLPack), over a torch tensor."""

    def __init__(self, t):
        self.t = t
        self.__cuda_array_interface__ = t.__cuda_array_interface__


def section(name, fn):
    """Runs one section; an exception fails it, and the script goes on."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 (every failure is reported, none stops the rest)
        check(f"{name}: ran to its end", False, f"{type(e).__name__}: {e}")
        traceback.print_exc()


def main():
    work = sys.argv[1] if len(sys.argv) > 1 else "/dev/shm"
    work = tempfile.mkdtemp(prefix="paraes-py-", dir=work)
    print(f"torch {torch.__version__} (CUDA {torch.version.cuda}) on {torch.cuda.get_device_name(0)}")
    key = paraes.generate_key()
    k, salt = os.urandom(32), os.urandom(24)
    t = torch.randn(1024, 1024, device="cuda")

    def readme_load():
        # README: a container straight into GPU memory, viewed as float32.
        weights = torch.randn(1 << 20, dtype=torch.float32)
        plain = os.path.join(work, "weights.bin")
        weights.numpy().tofile(plain)
        paraes.encrypt_file(plain, plain + ".paraes", keys=[key])
        raw = torch.from_dlpack(paraes.cuda.load(plain + ".paraes", keys=[key]))
        check("load: uint8 on cuda:0", raw.dtype == torch.uint8 and raw.device.type == "cuda")
        check("load: the plaintext", torch.equal(raw.view(torch.float32).cpu(), weights))

    def readme_seal():
        # README: seal and open a tensor; on the current stream; on a side stream.
        sealed = paraes.cuda.seal(t, key=k, salt=salt)
        back = torch.from_dlpack(paraes.cuda.open(sealed, key=k, salt=salt))
        check("seal/open a float32 tensor",
              torch.equal(back.view(torch.float32).view(1024, 1024), t))
        s = torch.cuda.current_stream()
        on_stream = paraes.cuda.seal(t, key=k, salt=salt, stream=s)
        s.synchronize()
        check("seal on the current stream: the same records",
              torch.equal(torch.from_dlpack(on_stream), torch.from_dlpack(sealed)))
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            u = t * 2
        # Inputs stay alive until the stream is synchronized (the module's rules).
        sealed_side = paraes.cuda.seal(u, key=k, salt=salt, stream=side)
        opened = paraes.cuda.open(sealed_side, key=k, salt=salt, stream=side)
        side.synchronize()
        check("seal/open on a side stream after its own work",
              torch.equal(torch.from_dlpack(opened).view(torch.float32).view(1024, 1024), u))
        del sealed_side

    def dtypes():
        # Dtypes and shapes; DLPack and the interface alone; against the host's bare message.
        ctx = b"device-python"
        for dtype, shape in [(torch.float16, (3, 5000)), (torch.bfloat16, (16384,)),
                             (torch.int64, (7, 3, 1000)), (torch.uint8, (0,)),
                             (torch.uint8, (1,)), (torch.float64, (16384 // 8 * 3,))]:
            x = (torch.randn(shape) * 100).to(dtype).cuda() if dtype.is_floating_point else \
                torch.randint(0, 100, shape, dtype=dtype).cuda()
            torch.cuda.synchronize()  # the interface alone (v2) cannot say which stream made x
            message = paraes.seal_message(k, host_bytes(x), context=ctx)  # its own salt
            msalt = message[:24]
            for producer, what in [(x, "DLPack"), (InterfaceOnly(x), "CUDA Array Interface")]:
                records = paraes.cuda.seal(producer, key=k, salt=msalt, context=ctx)
                got = records.to_bytes()
                check(f"{dtype} {tuple(shape)} via {what}: records equal seal_message's",
                      got == message[56:] and
                      paraes.open_message(k, message[:56] + got, context=ctx) == host_bytes(x))
            again = paraes.cuda.open(records, key=k, salt=msalt, context=ctx)
            check(f"{dtype} {tuple(shape)}: opens to its bytes", again.to_bytes() == host_bytes(x))

    def in_place():
        # In place; tampering; non-contiguous.
        n = 5 * 16384 + 3
        buf = torch.randint(0, 256, (paraes.cuda.sealed_len(n),), dtype=torch.uint8,
                            device="cuda")
        original = buf[:n].clone()
        written = paraes.cuda.seal(buf, key=k, salt=salt, inplace=True, length=n)
        check("in place: sealed length", written == paraes.cuda.sealed_len(n))
        tampered = buf.clone()
        tampered[16384 * 2 + 100] ^= 1
        before = tampered.clone()
        try:
            paraes.cuda.open(tampered, key=k, salt=salt, inplace=True)
            check("in place: a tampered record refused", False, "it opened")
        except paraes.AuthenticationError as e:
            check("in place: a tampered record refused, the tensor left as it was",
                  torch.equal(tampered, before), str(e))
        got = paraes.cuda.open(buf, key=k, salt=salt, inplace=True)
        check("in place: opened", got == n and torch.equal(buf[:n], original))
        try:
            paraes.cuda.seal(t.t(), key=k, salt=salt)
            check("a non-contiguous tensor refused", False, "it was sealed")
        except ValueError as e:
            check("a non-contiguous tensor refused with ValueError", True, str(e))

    def safetensors_example():
        # README: an encrypted .safetensors file into GPU memory, turned into tensors.
        tensors_in = {"a": torch.randn(3, 4), "b": torch.randn(100).to(torch.float16),
                      "c": torch.arange(10, dtype=torch.int64)}
        try:
            from safetensors.torch import save_file
            st = os.path.join(work, "model.safetensors")
            save_file(tensors_in, st)
            paraes.encrypt_file(st, st + ".paraes", keys=[key])
            raw = torch.from_dlpack(paraes.cuda.load(st + ".paraes", keys=[key]))
            n = struct.unpack("<Q", raw[:8].cpu().numpy().tobytes())[0]
            header = json.loads(raw[8:8 + n].cpu().numpy().tobytes())
            dtypes = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16,
                      "BF16": torch.bfloat16, "I64": torch.int64, "I32": torch.int32,
                      "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8, "BOOL": torch.bool}
            start = 8 + n
            tensors = {}
            for name, info in header.items():
                if name == "__metadata__":
                    continue
                begin, end = info["data_offsets"]
                piece = raw[start + begin:start + end]
                tensors[name] = piece.view(dtypes[info["dtype"]]).view(info["shape"])
            check("safetensors: every tensor back, on the GPU",
                  all(torch.equal(tensors[k_].cpu(), v) and tensors[k_].is_cuda
                      for k_, v in tensors_in.items()))
        except ImportError as e:
            check("safetensors example", False, f"safetensors not importable: {e}")

    def save():
        # save, then decrypt_file on the host.
        out = os.path.join(work, "saved.paraes")
        paraes.cuda.save(paraes.cuda.open(paraes.cuda.seal(t, key=k, salt=salt), key=k, salt=salt),
                         out, keys=[key])
        paraes.decrypt_file(out, out + ".plain", keys=[key])
        with open(out + ".plain", "rb") as f:
            check("save: decrypt_file gives the tensor's bytes", f.read() == host_bytes(t))

    def timing():
        # The time of a 2 GiB load, beside an upload of as many bytes by torch from pinned memory.
        size = 2 << 30
        big = os.path.join(work, "big.bin")
        chunk = torch.randint(0, 256, (64 << 20,), dtype=torch.uint8).numpy().tobytes()
        with open(big, "wb") as f:
            for _ in range(size // len(chunk)):
                f.write(chunk)
        paraes.encrypt_file(big, big + ".paraes", keys=[key])
        os.remove(big)
        pinned = torch.empty(size, dtype=torch.uint8, pin_memory=True)
        loads, uploads = [], []
        for _ in range(3):
            t0 = time.perf_counter()
            loaded = paraes.cuda.load(big + ".paraes", keys=[key])
            loads.append(time.perf_counter() - t0)
            del loaded
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            up = pinned.cuda(non_blocking=True)
            torch.cuda.synchronize()
            uploads.append(time.perf_counter() - t0)
            del up
        lm, um = sorted(loads)[1], sorted(uploads)[1]
        print(f"time: paraes.cuda.load of 2 GiB from the page cache {lm:.3f} s ({size / lm / 1e9:.1f} GB/s; "
              f"samples {', '.join(f'{x:.3f}' for x in loads)}); torch pinned upload {um:.3f} s "
              f"({size / um / 1e9:.1f} GB/s)", flush=True)
        os.remove(big + ".paraes")

    for name, fn in [("README's load", readme_load), ("README's seal/open", readme_seal),
                     ("dtypes and protocols", dtypes), ("in place", in_place),
                     ("README's safetensors", safetensors_example), ("save", save),
                     ("the load's time", timing)]:
        section(name, fn)
    print(f"device-python: {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
