//! The fault-injection shim of the fault tests (tests/cli/faults.rs): an `LD_PRELOAD` library,
//! compiled by the test that needs it, that fails reads of one file after a number of bytes and
//! writes at offsets into one directory from a given write on.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::common::{skip, stderr, Scratch};

/// An LD_PRELOAD library of faults. Reads (read, readv, pread, preadv) of the file FAULT_PATH fail
/// with EIO once FAULT_AFTER bytes have been read from it. Writes at offsets (pwrite, pwritev)
/// into files in the directory FAULT_WRITE_DIR (an unnamed temporary there too) fail with errno
/// FAULT_WRITE_ERRNO from the FAULT_WRITE_NTH-th on (counting from 0). Other descriptors work
/// normally.
const READ_FAULT_SHIM: &str = r#"
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static long long served;
static long long pwrites;

static int path_of(int fd, char *path, size_t size) {
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, size - 1);
    if (n <= 0) return 0;
    path[n] = 0;
    return 1;
}

static int is_target(int fd) {
    const char *target = getenv("FAULT_PATH");
    char path[4096];
    return target && getenv("FAULT_AFTER") && fd > 2 && path_of(fd, path, sizeof path)
        && strcmp(path, target) == 0;
}

/* Takes up to `count` of the bytes of the target that may still be read, or returns -1 with
   errno set: the fault. Taken at once (compare and swap), so that threads reading side by side
   cannot each be let through by the same count and together read past the fault. */
static long long allowed(size_t count) {
    long long limit = atoll(getenv("FAULT_AFTER"));
    long long done = __atomic_load_n(&served, __ATOMIC_SEQ_CST);
    for (;;) {
        if (done >= limit) { errno = EIO; return -1; }
        long long n = (long long)count > limit - done ? limit - done : (long long)count;
        if (__atomic_compare_exchange_n(&served, &done, done + n, 0, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST))
            return n;
    }
}

/* Gives back what a read took by `allowed` and did not get. */
static void unused(long long taken, ssize_t got) {
    long long back = taken - (got > 0 ? got : 0);
    if (back > 0) __atomic_sub_fetch(&served, back, __ATOMIC_SEQ_CST);
}

ssize_t read(int fd, void *buf, size_t count) {
    static ssize_t (*real)(int, void *, size_t);
    if (!real) real = (ssize_t (*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
    if (!is_target(fd)) return real(fd, buf, count);
    long long n = allowed(count);
    if (n < 0) return -1;
    ssize_t got = real(fd, buf, (size_t)n);
    unused(n, got);
    return got;
}

/* A vectored read of the target, buffer by buffer through read above (so it counts the same
   bytes and fails at the same one): a stream read into the data slots of GCM records. */
ssize_t readv(int fd, const struct iovec *iov, int iovcnt) {
    static ssize_t (*real)(int, const struct iovec *, int);
    if (!real) real = (ssize_t (*)(int, const struct iovec *, int))dlsym(RTLD_NEXT, "readv");
    if (!is_target(fd)) return real(fd, iov, iovcnt);
    ssize_t total = 0;
    for (int i = 0; i < iovcnt; i++) {
        ssize_t got = read(fd, iov[i].iov_base, iov[i].iov_len);
        if (got < 0) return total > 0 ? total : -1;
        total += got;
        if ((size_t)got < iov[i].iov_len) break;
    }
    return total;
}

ssize_t pread64(int fd, void *buf, size_t count, off_t offset) {
    static ssize_t (*real)(int, void *, size_t, off_t);
    if (!real) real = (ssize_t (*)(int, void *, size_t, off_t))dlsym(RTLD_NEXT, "pread64");
    if (!is_target(fd)) return real(fd, buf, count, offset);
    long long n = allowed(count);
    if (n < 0) return -1;
    ssize_t got = real(fd, buf, (size_t)n, offset);
    unused(n, got);
    return got;
}

ssize_t pread(int fd, void *buf, size_t count, off_t offset) {
    return pread64(fd, buf, count, offset);
}

/* A vectored read of the target, buffer by buffer through pread64 above (so it counts the
   same bytes and fails at the same one). */
ssize_t preadv64(int fd, const struct iovec *iov, int iovcnt, off_t offset) {
    static ssize_t (*real)(int, const struct iovec *, int, off_t);
    if (!real) real = (ssize_t (*)(int, const struct iovec *, int, off_t))dlsym(RTLD_NEXT, "preadv64");
    if (!is_target(fd)) return real(fd, iov, iovcnt, offset);
    ssize_t total = 0;
    for (int i = 0; i < iovcnt; i++) {
        ssize_t got = pread64(fd, iov[i].iov_base, iov[i].iov_len, offset + total);
        if (got < 0) return total > 0 ? total : -1;
        total += got;
        if ((size_t)got < iov[i].iov_len) break;
    }
    return total;
}

ssize_t preadv(int fd, const struct iovec *iov, int iovcnt, off_t offset) {
    return preadv64(fd, iov, iovcnt, offset);
}

/* Whether this write at an offset into fd fails (errno set): the FAULT_WRITE_NTH-th on. */
static int write_fails(int fd) {
    const char *dir = getenv("FAULT_WRITE_DIR");
    const char *nth = getenv("FAULT_WRITE_NTH");
    const char *err = getenv("FAULT_WRITE_ERRNO");
    char path[4096];
    if (dir && nth && err && fd > 2 && path_of(fd, path, sizeof path)
        && strncmp(path, dir, strlen(dir)) == 0 && path[strlen(dir)] == '/') {
        long long this = __atomic_fetch_add(&pwrites, 1, __ATOMIC_SEQ_CST);
        if (this >= atoll(nth)) { errno = atoi(err); return 1; }
    }
    return 0;
}

ssize_t pwrite64(int fd, const void *buf, size_t count, off_t offset) {
    static ssize_t (*real)(int, const void *, size_t, off_t);
    if (!real) real = (ssize_t (*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite64");
    if (write_fails(fd)) return -1;
    return real(fd, buf, count, offset);
}

ssize_t pwrite(int fd, const void *buf, size_t count, off_t offset) {
    return pwrite64(fd, buf, count, offset);
}

ssize_t pwritev64(int fd, const struct iovec *iov, int iovcnt, off_t offset) {
    static ssize_t (*real)(int, const struct iovec *, int, off_t);
    if (!real) real = (ssize_t (*)(int, const struct iovec *, int, off_t))dlsym(RTLD_NEXT, "pwritev64");
    if (write_fails(fd)) return -1;
    return real(fd, iov, iovcnt, offset);
}

ssize_t pwritev(int fd, const struct iovec *iov, int iovcnt, off_t offset) {
    return pwritev64(fd, iov, iovcnt, offset);
}
"#;

/// Compiles [`READ_FAULT_SHIM`] into `s`; `None` (after a loud skip line) without a compiler.
pub(crate) fn build_read_fault_shim(s: &Scratch, test: &str) -> Option<PathBuf> {
    let source = s.write("readfault.c", READ_FAULT_SHIM.as_bytes());
    let library = s.path("readfault.so");
    let built = Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&library)
        .arg(&source)
        .arg("-ldl")
        .output();
    match built {
        Ok(out) if out.status.success() => Some(library),
        Ok(out) => {
            skip(
                test,
                &format!("`cc` could not build the read-fault shim: {}", stderr(&out)),
            );
            None
        }
        Err(e) => {
            skip(
                test,
                &format!("no C compiler (`cc`) to build the read-fault shim: {e}"),
            );
            None
        }
    }
}

/// Runs `paraes ARGS` in `s` with read() of `faulty` failing after `after` bytes.
pub(crate) fn run_with_read_fault(
    s: &Scratch,
    shim: &Path,
    faulty: &str,
    after: u64,
    args: &[&str],
) -> Output {
    let target = fs::canonicalize(s.path(faulty)).expect("canonical path");
    s.command(args)
        .env("LD_PRELOAD", shim)
        .env("FAULT_PATH", target)
        .env("FAULT_AFTER", after.to_string())
        .stdin(Stdio::null())
        .output()
        .expect("paraes runs")
}
