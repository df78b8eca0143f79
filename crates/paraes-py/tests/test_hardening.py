"""What a hostile review found, each pinned by a test: the Writer never deadlocks the interpreter
(threads, a watchdog's abort, a sink that re-enters it); a str key is never echoed; a FIFO is
read as a stream and never replaced; an output has no name until it is complete, even after
SIGKILL; and the small things (finalizers of failed constructors, a sink's write() returning
None, a read larger than memory).

The tests that could hang run their body in a child interpreter with a timeout and
faulthandler, so a regression fails with the child's stacks instead of hanging the run."""

import errno
import gc
import io
import os
import re
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import paraes

from conftest import seeded

HERE = os.path.dirname(os.path.abspath(__file__))


def child(code, *args, timeout=60):
    """Runs `code` in a child interpreter (faulthandler dumps its stacks before the timeout);
    returns the completed process."""
    script = "import faulthandler, sys\nfaulthandler.dump_traceback_later(%d, exit=True)\n" % (
        timeout - 10) + textwrap.dedent(code)
    try:
        return subprocess.run([sys.executable, "-c", script, *map(str, args)],
                              capture_output=True, timeout=timeout, cwd=HERE)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the child hung (a deadlock?): {e.stderr!r}")


def ok(proc):
    assert proc.returncode == 0, (proc.returncode, proc.stdout.decode(), proc.stderr.decode())
    return proc.stdout.decode()


def files_in(path):
    return sorted(p.name for p in path.iterdir())


# 1. The Writer and threads.

def test_writer_threads_never_deadlock(tmp_path):
    out = ok(child("""
        import io, threading, paraes
        key = paraes.generate_key()
        sink = io.BytesIO()
        w = paraes.Writer(sink, keys=[key])
        done, busy, other = [], [], []
        def write():
            for _ in range(8):
                try:
                    w.write(b"x" * (1 << 20))
                    done.append(1)
                except RuntimeError as e:
                    assert "another thread" in str(e), e
                    busy.append(1)
                except BaseException as e:
                    other.append(repr(e))
        threads = [threading.Thread(target=write) for _ in range(4)]
        for t in threads: t.start()
        for t in threads: t.join(40)
        assert not any(t.is_alive() for t in threads), "a writer thread is stuck"
        assert not other, other
        w.close()
        with open(sys.argv[1], "wb") as f:
            f.write(sink.getvalue())
        with paraes.Reader(sys.argv[1], keys=[key]) as r:
            assert r.read() == b"x" * (len(done) << 20)
        print(len(done), len(busy))
    """, tmp_path / "t.paraes"))
    done, busy = map(int, out.split())
    assert done >= 1 and done + busy == 32


def test_a_watchdog_aborts_a_writer_that_is_writing(tmp_path):
    ok(child("""
        import os, threading, time, paraes
        # The interpreter never takes the GIL from a thread on its own here (a switch interval
        # far longer than the test): the writer thread gives it up only inside w.write(), which
        # runs without it. So once that thread has begun writing, whenever this one runs, the
        # writer is inside a write.
        sys.setswitchinterval(1000)
        dst = sys.argv[1]
        w = paraes.Writer(dst, keys=[paraes.generate_key()])
        began, stop = [], []
        def write():
            try:
                while True:
                    began.append(1)
                    w.write(b"y" * (4 << 20))
            except (ValueError, RuntimeError) as e:
                stop.append(e)
        t = threading.Thread(target=write)
        t.start()
        while not began:
            time.sleep(0.001)
        w.abort()  # from another thread, while a write runs
        assert w.closed
        t.join(40)
        assert not t.is_alive(), "the writer thread is stuck"
        # The write that was running ends with the error (not the next one, with "closed").
        assert stop and "aborted" in str(stop[0]), stop
        assert not os.path.exists(dst)
        assert os.listdir(os.path.dirname(dst)) == [], os.listdir(os.path.dirname(dst))
    """, tmp_path / "w.paraes"))


def test_a_sink_that_reenters_its_writer_gets_an_error(tmp_path):
    ok(child("""
        import io, paraes
        class Sink(io.RawIOBase):
            def writable(self): return True
            def write(self, b):
                if self.w is not None:
                    assert self.w.closed is False  # a read of the state is fine
                    self.w.write(b"again")         # a write from inside is refused
                return len(b)
        sink = Sink()
        sink.w = None
        w = paraes.Writer(sink, keys=[paraes.generate_key()])
        sink.w = w
        try:
            w.write(b"z" * (3 << 20))  # seals whole batches: the sink is called
        except RuntimeError as e:
            assert "another thread or its own sink" in str(e), e
        else:
            raise AssertionError("no error")
        assert w.closed  # a failed write discards the container
    """))


# 2. A key given as str is a path, and its text is never shown.

def test_a_str_key_is_never_echoed(tmp_path):
    (tmp_path / "p.bin").write_bytes(b"data")
    key = paraes.generate_key()
    for secret in (key.hex(), "correct horse battery staple", "x" * 300, "a/b/" + key.hex()):
        for call in (lambda: paraes.encrypt_file(tmp_path / "p.bin", tmp_path / "c", keys=[secret]),
                     lambda: paraes.decrypt_file(tmp_path / "p.bin", tmp_path / "c", keys=[secret]),
                     lambda: paraes.decrypt_file(tmp_path / "p.bin", tmp_path / "c",
                                                 identities=[secret]),
                     lambda: paraes.Writer(io.BytesIO(), keys=[secret])):
            with pytest.raises(OSError) as caught:
                call()
            text = str(caught.value)
            assert secret[:12] not in text and secret[-12:] not in text, text
            assert "pass the key as bytes" in text or "identity" in text, text
    with pytest.raises(FileNotFoundError, match="none exists there; pass the key as bytes"):
        paraes.encrypt_file(tmp_path / "p.bin", tmp_path / "c", keys=[key.hex()])
    # A path given as os.PathLike is named, as before; a str that names a key file works.
    with pytest.raises(FileNotFoundError, match="no.key"):
        paraes.encrypt_file(tmp_path / "p.bin", tmp_path / "c", keys=[tmp_path / "no.key"])
    (tmp_path / "k.key").write_text(key.hex())
    paraes.encrypt_file(tmp_path / "p.bin", tmp_path / "c", keys=[str(tmp_path / "k.key")])
    paraes.decrypt_file(tmp_path / "c", tmp_path / "d", keys=[key])
    assert (tmp_path / "d").read_bytes() == b"data"


# 3. FIFOs.

def open_fifo_for_writing(path, seconds=30):
    """Opens the FIFO `path` for writing once a reader has it open (never blocks forever)."""
    import time
    deadline = time.monotonic() + seconds
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as e:
            if e.errno != errno.ENXIO or time.monotonic() > deadline:
                raise
            time.sleep(0.01)
            continue
        os.set_blocking(fd, True)
        return os.fdopen(fd, "wb")


def feed(path, data):
    """Writes `data` into the FIFO `path` from a thread; returns the thread."""

    def run():
        try:
            with open(path, "wb") as f:
                f.write(data)
        except BrokenPipeError:
            pass

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_decrypt_file_reads_a_fifo_as_a_stream(tmp_path):
    key = paraes.generate_key()
    for n in (0, 100, 100_000, (1 << 20) + 777):
        data = seeded(n, n)
        (tmp_path / "p.bin").write_bytes(data)
        paraes.encrypt_file(tmp_path / "p.bin", tmp_path / "c.paraes", keys=[key], overwrite=True)
        fifo = tmp_path / "in.fifo"
        os.mkfifo(fifo)
        t = feed(fifo, (tmp_path / "c.paraes").read_bytes())
        paraes.decrypt_file(fifo, tmp_path / "out.bin", keys=[key], overwrite=True)
        t.join(30)
        assert (tmp_path / "out.bin").read_bytes() == data
        # Damage is still caught, and nothing is left.
        bad = bytearray((tmp_path / "c.paraes").read_bytes())
        bad[-1] ^= 1
        t = feed(fifo, bytes(bad))
        with pytest.raises(paraes.AuthenticationError):
            paraes.decrypt_file(fifo, tmp_path / "bad.bin", keys=[key])
        t.join(30)
        assert not (tmp_path / "bad.bin").exists()
        os.unlink(fifo)
    # Encrypting from a FIFO works too.
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    t = feed(fifo, data)
    paraes.encrypt_file(fifo, tmp_path / "f.paraes", keys=[key])
    t.join(30)
    with paraes.Reader(tmp_path / "f.paraes", keys=[key]) as r:
        assert r.read() == data


def test_a_fifo_or_directory_at_the_destination_is_never_replaced(tmp_path):
    key = paraes.generate_key()
    (tmp_path / "p.bin").write_bytes(b"secret plaintext")
    paraes.encrypt_file(tmp_path / "p.bin", tmp_path / "c.paraes", keys=[key])
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    (tmp_path / "dir").mkdir()
    for call in (
        lambda dst: paraes.decrypt_file(tmp_path / "c.paraes", dst, keys=[key], overwrite=True),
        lambda dst: paraes.encrypt_file(tmp_path / "p.bin", dst, keys=[key], overwrite=True),
        lambda dst: paraes.Writer(dst, keys=[key], overwrite=True),
    ):
        with pytest.raises(ValueError, match="not a regular file"):
            call(fifo)
        with pytest.raises(IsADirectoryError, match="is a directory"):
            call(tmp_path / "dir")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert files_in(tmp_path) == ["c.paraes", "dir", "out.fifo", "p.bin"]


def test_reader_refuses_a_fifo(tmp_path):
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    t = feed(fifo, b"")
    with pytest.raises(ValueError, match="not a regular file"):
        paraes.Reader(fifo, keys=[paraes.generate_key()])
    # Unblock the feeder if the reader never opened the FIFO.
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    os.close(fd)
    t.join(30)


# 4. Temporaries: unnamed where the file system allows, else the CLI's hidden name; SIGKILL
# leaves nothing (or only a name the CLI recognises).

def has_o_tmpfile(directory):
    try:
        fd = os.open(directory, os.O_TMPFILE | os.O_RDWR, 0o600)
    except (AttributeError, OSError):
        return False
    os.close(fd)
    return True


def wait_until(what, ready, seconds=30):
    """Polls `ready` every few milliseconds until it holds; fails the test after `seconds`."""
    deadline = time.monotonic() + seconds
    while not ready():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {seconds} s waiting for {what}")
        time.sleep(0.005)


def unfinished_output(pid, directory):
    """The size of the unfinished output that process `pid` has open in `directory` (an unnamed
    temporary, whose /proc link reads `DIR/#INODE (deleted)`, or the hidden named one), or
    None."""
    directory = os.path.realpath(directory)
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return None
    for fd in fds:
        link = f"/proc/{pid}/fd/{fd}"
        try:
            target = os.readlink(link)
            if (os.path.dirname(target) == directory
                    and (target.endswith(" (deleted)") or target.endswith(".paraes-tmp"))):
                return os.stat(link).st_size
        except OSError:
            continue
    return None


def check_leftovers(directory, dst_name, before):
    new = sorted(set(files_in(directory)) - set(before))
    if has_o_tmpfile(directory):
        assert new == [], new
    else:
        assert all(re.fullmatch(re.escape(f".{dst_name}.") + r".+\.paraes-tmp", n) for n in new), new


def test_an_unfinished_output_has_no_name(tmp_path):
    key = paraes.generate_key()
    before = files_in(tmp_path)
    w = paraes.Writer(tmp_path / "w.paraes", keys=[key])
    w.write(seeded(100_000))
    check_leftovers(tmp_path, "w.paraes", before)
    w.close()
    assert files_in(tmp_path) == ["w.paraes"]
    assert stat.S_IMODE(os.stat(tmp_path / "w.paraes").st_mode) == 0o600
    # overwrite=True replaces a regular file (an unnamed temporary is linked under a hidden
    # name and renamed over it).
    (tmp_path / "w.paraes").write_bytes(b"old")
    with paraes.Writer(tmp_path / "w.paraes", keys=[key], overwrite=True) as w:
        w.write(b"new")
    with paraes.Reader(tmp_path / "w.paraes", keys=[key]) as r:
        assert r.read() == b"new"
    with pytest.raises(FileExistsError):
        with paraes.Writer(tmp_path / "w.paraes", keys=[key]) as w:
            pass
    assert files_in(tmp_path) == ["w.paraes"]


def test_sigkill_leaves_no_partial_output(tmp_path):
    key = paraes.generate_key()
    data = seeded(12_000_000, 9)
    (tmp_path / "p.bin").write_bytes(data)
    paraes.encrypt_file(tmp_path / "p.bin", tmp_path / "c.paraes", keys=[key])
    before = files_in(tmp_path)
    proc = child("""
        import os, signal, paraes
        w = paraes.Writer(sys.argv[1], keys=[bytes.fromhex(sys.argv[2])])
        w.write(b"q" * 3_000_000)
        os.kill(os.getpid(), signal.SIGKILL)
    """, tmp_path / "w.paraes", key.hex())
    assert proc.returncode == -signal.SIGKILL, proc
    check_leftovers(tmp_path, "w.paraes", before)
    # decrypt_file killed while it writes: a FIFO feeds most of the container and then stalls.
    # A stream is read in windows of 4 MiB of plaintext (as the CLI's); a window's plaintext
    # goes out once the next window is whole (so it is known not to be the last): 9 MB holds
    # the header and two whole windows (4,198,400 bytes each with their tags), and the first
    # goes out.
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    before = files_in(tmp_path)
    code = textwrap.dedent("""
        import sys, paraes
        paraes.decrypt_file(sys.argv[1], sys.argv[2], keys=[bytes.fromhex(sys.argv[3])])
    """)
    kid = subprocess.Popen([sys.executable, "-c", code, str(fifo), str(tmp_path / "out.bin"),
                            key.hex()], cwd=HERE)
    try:
        with open_fifo_for_writing(fifo) as f:
            f.write((tmp_path / "c.paraes").read_bytes()[:9_000_000])
            f.flush()
            # Wait until that plaintext went out to the temporary.
            wait_until("1 MiB of plaintext in decrypt_file's temporary",
                       lambda: (unfinished_output(kid.pid, tmp_path) or 0) >= 1 << 20
                       or kid.poll() is not None)
            assert kid.poll() is None, "decrypt_file stopped before it was killed"
            kid.kill()
            kid.wait(30)
    finally:
        if kid.poll() is None:
            kid.kill()
    check_leftovers(tmp_path, "out.bin", before)


# 5. Polish.

def test_failed_constructors_leave_quiet_finalizers(tmp_path):
    # io's finalizer reports an exception from close() only in development mode (-X dev).
    proc = subprocess.run([sys.executable, "-X", "dev", "-c", textwrap.dedent("""
        import gc, sys, paraes
        seen = []
        sys.unraisablehook = seen.append
        key = paraes.generate_key()
        for make in (lambda: paraes.Reader(sys.argv[1] + "/missing", keys=[key]),
                     lambda: paraes.Writer(sys.argv[1] + "/no/dir", keys=[key]),
                     lambda: paraes.Writer(sys.argv[1] + "/x", keys=[b"short"])):
            try:
                make()
            except (OSError, ValueError):
                pass
            else:
                raise AssertionError("no error")
        gc.collect()
        assert not seen, [(u.exc_type, u.exc_value) for u in seen]
    """), str(tmp_path)], capture_output=True, timeout=60, cwd=HERE)
    ok(proc)


class Sink(io.RawIOBase):
    """A sink that takes at most `most` bytes a call; `none` makes write() return None."""

    def __init__(self, most=1 << 30, none=False):
        self.data, self.most, self.none = bytearray(), most, none

    def writable(self):
        return True

    def write(self, b):
        if self.none:
            return None
        b = bytes(b)[:self.most]
        self.data += b
        return len(b)


def test_a_sink_write_returning_none_is_an_error(tmp_path):
    key = paraes.generate_key()
    with pytest.raises(paraes.Error, match="returned None"):
        paraes.Writer(Sink(none=True), keys=[key])
    # Partial writes are fine: the rest is sent again.
    sink = Sink(most=1000)
    data = seeded(200_000, 3)
    with paraes.Writer(sink, keys=[key]) as w:
        w.write(data)
    (tmp_path / "s.paraes").write_bytes(sink.data)
    with paraes.Reader(tmp_path / "s.paraes", keys=[key]) as r:
        assert r.read() == data


def test_an_aborted_file_object_sink_keeps_a_container_that_fails(tmp_path):
    # What the docstring says: a file object keeps what was written, and it never opens as
    # complete.
    key = paraes.generate_key()
    sink = io.BytesIO()
    w = paraes.Writer(sink, keys=[key])
    w.write(seeded(100_000, 4))
    w.abort()
    assert len(sink.getvalue()) > 0
    (tmp_path / "a.paraes").write_bytes(sink.getvalue())
    with pytest.raises(paraes.AuthenticationError):
        paraes.decrypt_file(tmp_path / "a.paraes", tmp_path / "a.out", keys=[key])
    assert "file object keeps" in paraes.Writer.__doc__


def test_a_read_larger_than_memory_raises_memory_error(tmp_path):
    key = paraes.generate_key()
    n = 96 << 20
    with open(tmp_path / "p.bin", "wb") as f:
        f.truncate(n)
    paraes.encrypt_file(tmp_path / "p.bin", tmp_path / "c.paraes", keys=[key])
    os.unlink(tmp_path / "p.bin")
    ok(child("""
        import resource, paraes
        r = paraes.Reader(sys.argv[1], keys=[bytes.fromhex(sys.argv[2])])
        r.read(10)
        vm = [l for l in open("/proc/self/status") if l.startswith("VmSize:")][0]
        size = int(vm.split()[1]) * 1024
        resource.setrlimit(resource.RLIMIT_AS, (size + (48 << 20), resource.RLIM_INFINITY))
        try:
            r.read()
        except MemoryError:
            pass
        else:
            raise AssertionError("no MemoryError")
        assert r.read(1000) == bytes(1000)
    """, tmp_path / "c.paraes", key.hex()))
