// What bounds two MPI ranks writing one output file on one node's tmpfs (issue 40): the time
// to write 1 GiB of 4 MiB pieces from one process, from two processes writing the two halves
// of one file, and from two processes writing a half each to two files; by pwrite, and through
// a shared mapping (MAP_SHARED, the file sized first), which takes no inode lock; and two
// processes writing the halves of one file taking turns (an exclusive flock around each
// piece, as paraes' ranks on one node do); and through a mapping of a file whose pages
// fallocate(2) made first (timed apart: "fallocate both"). Prints wall seconds and the CPU
// seconds of all the processes (a writer that waits for the file's lock in the kernel spins on
// its core).
// Build and run: cc -O2 -o /tmp/tmpfs_one_file tmpfs_one_file.c && /tmp/tmpfs_one_file DIR ROUNDS
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PIECE (4UL << 20)
#define LEN (1UL << 30)

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static void fail(const char *what) {
  perror(what);
  _exit(1);
}

// Writes bytes [from, to) of `path` (by pwrite, or through a mapping of the file, sized to LEN).
static double cpu_seconds(void) {
  struct rusage self, children;
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &children);
  return self.ru_utime.tv_sec + self.ru_stime.tv_sec + children.ru_utime.tv_sec +
         children.ru_stime.tv_sec +
         (self.ru_utime.tv_usec + self.ru_stime.tv_usec + children.ru_utime.tv_usec +
          children.ru_stime.tv_usec) * 1e-6;
}

// mapped: 0 pwrite, 1 through a mapping, 2 pwrite under an exclusive flock per piece, 3 through
// a mapping whose pages each piece first populates in one call (MADV_POPULATE_WRITE, Linux
// 5.14) instead of a fault per page; 4 the same into pages fallocate made beforehand.
static void write_part(const char *path, size_t from, size_t to, int mapped) {
  int fd = open(path, O_RDWR | O_CREAT, 0600);
  if (fd < 0) fail("open");
  char *piece = aligned_alloc(4096, PIECE);
  memset(piece, 7, PIECE);
  if (mapped == 1 || mapped >= 3) {
    char *map = mmap(NULL, to - from, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)from);
    if (map == MAP_FAILED) fail("mmap");
    for (size_t at = 0; at < to - from; at += PIECE) {
      if (mapped >= 3 && madvise(map + at, PIECE, MADV_POPULATE_WRITE)) fail("madvise");
      memcpy(map + at, piece, PIECE);
    }
    munmap(map, to - from);
  } else {
    for (size_t at = from; at < to; at += PIECE) {
      if (mapped == 2 && flock(fd, LOCK_EX)) fail("flock");
      if (pwrite(fd, piece, PIECE, (off_t)at) != (ssize_t)PIECE) fail("pwrite");
      if (mapped == 2 && flock(fd, LOCK_UN)) fail("flock");
    }
  }
  close(fd);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s DIR ROUNDS\n", argv[0]);
    return 2;
  }
  char a[4096], b[4096];
  snprintf(a, sizeof a, "%s/tmpfs-one-file.a", argv[1]);
  snprintf(b, sizeof b, "%s/tmpfs-one-file.b", argv[1]);
  const char *names[] = {"one process, one file", "two processes, halves of one file",
                         "two processes, a half each in two files"};
  for (int round = 0; round < atoi(argv[2]); round++)
    for (int mapped = 0; mapped < 5; mapped++)
      for (int kind = 0; kind < 3; kind++) {
        if (mapped == 2 && kind != 1) continue;
        unlink(a);
        unlink(b);
        int fd = open(a, O_RDWR | O_CREAT, 0600), fd2 = open(b, O_RDWR | O_CREAT, 0600);
        if ((mapped == 1 || mapped == 3) && (ftruncate(fd, LEN) || ftruncate(fd2, LEN))) fail("ftruncate");
        if (mapped == 4) {
          double at = now();
          if (fallocate(fd, 0, 0, LEN) || fallocate(fd2, 0, 0, LEN)) fail("fallocate");
          printf("round %d  falloc  fallocate both files (2 GiB)                %.3f s wall\n",
                 round + 1, now() - at);
        }
        close(fd);
        close(fd2);
        double start = now(), cpu = cpu_seconds();
        if (kind == 0) {
          write_part(a, 0, LEN, mapped);
        } else {
          for (int p = 0; p < 2; p++)
            if (fork() == 0) {
              if (kind == 1) write_part(a, p * LEN / 2, (p + 1) * LEN / 2, mapped);
              else write_part(p ? b : a, 0, LEN / 2, mapped);
              _exit(0);
            }
          int status, ok = 1;
          for (int p = 0; p < 2; p++) ok &= wait(&status) > 0 && status == 0;
          if (!ok) return 1;
        }
        const char *how[] = {"pwrite", "mapped", "turns", "popul", "falloc"};
        printf("round %d  %-7s %-42s %.3f s wall %.3f s cpu\n", round + 1, how[mapped],
               names[kind], now() - start, cpu_seconds() - cpu);
      }
  unlink(a);
  unlink(b);
  return 0;
}
