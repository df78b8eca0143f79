// What reading a tmpfs file costs by copy and by mapping (issue 37: whether a mapped input
// would take `enc` to /dev/null under 0.9x `cat`). Each of THREADS threads takes every
// THREADS-th 4 MiB window of FILE and brings it in: by one pread of the window into a 4 MiB
// buffer ("pread 4 MiB"), by preads of 256 KiB into a buffer that stays in L2 ("pread 256 KiB",
// as paraes reads a window a piece at a time), or through a mapping of the window touched once
// per 4 KiB page ("map per window": mmap, fault, munmap; the bytes then stay in the page cache
// and the AES would read them from there). Nothing else reads the bytes, so each row is the
// cost of bringing the file in alone. Prints wall seconds.
// Build and run: cc -O2 -pthread -o /tmp/mapped_read mapped_read.c && /tmp/mapped_read FILE ROUNDS
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define WINDOW (4u << 20)
#define PIECE (256u << 10)

static int fd, threads, mode;
static size_t size;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static void *reader(void *arg) {
  long id = (long)arg;
  uint64_t seen = 0;
  char *buf = aligned_alloc(4096, WINDOW);
  for (size_t off = id * (size_t)WINDOW; off < size; off += (size_t)threads * WINDOW) {
    size_t n = size - off < WINDOW ? size - off : WINDOW;
    if (mode == 0) {
      if (pread(fd, buf, n, off) != (ssize_t)n) abort();
    } else if (mode == 1) {
      for (size_t p = 0; p < n; p += PIECE) {
        size_t k = n - p < PIECE ? n - p : PIECE;
        if (pread(fd, buf, k, off + p) != (ssize_t)k) abort();
      }
    } else {
      volatile char *m = mmap(NULL, n, PROT_READ, MAP_SHARED, fd, off);
      if (m == MAP_FAILED) abort();
      for (size_t p = 0; p < n; p += 4096) seen += m[p];
      munmap((void *)m, n);
    }
  }
  free(buf);
  return (void *)(uintptr_t)seen;
}

static double run(int how, int count) {
  pthread_t t[64];
  mode = how;
  threads = count;
  double start = now();
  for (long i = 0; i < count; i++) pthread_create(&t[i], NULL, reader, (void *)i);
  for (int i = 0; i < count; i++) pthread_join(t[i], NULL);
  return now() - start;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s FILE ROUNDS\n", argv[0]);
    return 2;
  }
  fd = open(argv[1], O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) return 1;
  size = st.st_size;
  const char *names[] = {"pread 4 MiB", "pread 256 KiB", "map per window"};
  for (int round = 1; round <= atoi(argv[2]); round++)
    for (int count = 1; count <= 2; count++)
      for (int how = 0; how < 3; how++)
        printf("round %d, %d thread(s), %-15s %.3f s\n", round, count, names[how], run(how, count));
  return 0;
}
