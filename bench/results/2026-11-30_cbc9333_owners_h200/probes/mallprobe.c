// LD_PRELOAD probe for call 26: every second appends glibc's mallinfo2 (all
// arenas) to $MALLPROBE_OUT; when the file $MALLPROBE_OUT.trim appears, runs
// malloc_trim(0) first and removes it; between $MALLPROBE_OUT.trace_on and
// .trace_off, glibc's mtrace records allocations to $MALLOC_TRACE.
#define _GNU_SOURCE
#include <malloc.h>
#include <mcheck.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <errno.h>
#include <unistd.h>

static char out_path[512];

static int exists_and_remove(const char* suffix) {
  char path[600];
  snprintf(path, sizeof path, "%s.%s", out_path, suffix);
  if (access(path, F_OK) != 0) return 0;
  unlink(path);
  return 1;
}

static void* sample(void* unused) {
  (void)unused;
  for (;;) {
    int trimmed = exists_and_remove("trim");
    if (trimmed) malloc_trim(0);
    if (exists_and_remove("trace_on")) mtrace();
    if (exists_and_remove("trace_off")) muntrace();
    struct mallinfo2 m = mallinfo2();
    FILE* f = fopen(out_path, "a");
    if (f != NULL) {
      fprintf(f, "t=%ld arena=%zu uordblks=%zu fordblks=%zu hblkhd=%zu keepcost=%zu%s\n",
              (long)time(NULL), m.arena, m.uordblks, m.fordblks, m.hblkhd, m.keepcost,
              trimmed ? " (after malloc_trim)" : "");
      fclose(f);
    }
    sleep(1);
  }
  return NULL;
}

__attribute__((constructor)) static void start(void) {
  const char* out = getenv("MALLPROBE_OUT");
  const char* only = getenv("MALLPROBE_ONLY");  // a program name: other processes are left alone
  if (out == NULL) return;
  if (only != NULL && strcmp(only, program_invocation_short_name) != 0) return;
  snprintf(out_path, sizeof out_path, "%s", out);
  pthread_t thread;
  pthread_create(&thread, NULL, sample, NULL);
  pthread_detach(thread);
}
