/* The C suite's checks: each prints one line; any failure makes the exit status 1. */
#ifndef KVS_SUITE_CHECK_H
#define KVS_SUITE_CHECK_H

#include <stdio.h>
#include <stdlib.h>

/* Shared by every file of the suite (defined in suite.c). */
extern int checks_run, checks_failed;

#define CHECK(cond, what)                                                      \
  do {                                                                         \
    checks_run++;                                                              \
    if (cond) {                                                                \
      printf("ok %d - %s\n", checks_run, what);                                \
    } else {                                                                   \
      checks_failed++;                                                         \
      printf("FAILED %d - %s (%s:%d: %s)\n", checks_run, what, __FILE__,       \
             __LINE__, #cond);                                                 \
    }                                                                          \
  } while (0)

/* A call's result against the one expected. */
#define EXPECT(call, want, what)                                               \
  do {                                                                         \
    kvs_result got_ = (call);                                                  \
    checks_run++;                                                              \
    if (got_ == (want)) {                                                      \
      printf("ok %d - %s\n", checks_run, what);                                \
    } else {                                                                   \
      checks_failed++;                                                         \
      printf("FAILED %d - %s: got 0x%x, want 0x%x (%s:%d)\n", checks_run,      \
             what, (unsigned)got_, (unsigned)(want), __FILE__, __LINE__);      \
    }                                                                          \
  } while (0)

/* Prints the last line the Rust test looks for; the exit status. */
int checks_end(void);

#endif
