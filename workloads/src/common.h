/* Shared by Veil's workload kernels: a seeded generator (so inputs are generated, identically,
   in the program itself), argument parsing, a thread team with a barrier. */
#ifndef VEIL_WORKLOAD_COMMON_H
#define VEIL_WORKLOAD_COMMON_H
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static inline uint64_t splitmix64(uint64_t* s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline double uniform01(uint64_t* s) { return (splitmix64(s) >> 11) * (1.0 / 9007199254740992.0); }

static long arg_long(int argc, char** argv, int i, long dflt)
{
    if (argc <= i) return dflt;
    char* end;
    long v = strtol(argv[i], &end, 10);
    if (*end || v <= 0) {
        fprintf(stderr, "%s: argument %d must be a positive integer, got '%s'\n", argv[0], i, argv[i]);
        exit(2);
    }
    return v;
}

static void* xmalloc(size_t n)
{
    void* p = malloc(n);
    if (!p) {
        fprintf(stderr, "out of memory (%zu bytes)\n", n);
        exit(1);
    }
    return p;
}

/* Runs fn(id) on `threads` threads (the caller's thread is id 0) and joins them. */
static void run_team(int threads, void* (*fn)(void*))
{
    pthread_t* t = xmalloc(sizeof(pthread_t) * threads);
    for (long i = 1; i < threads; i++) pthread_create(&t[i], NULL, fn, (void*)i);
    fn((void*)0);
    for (long i = 1; i < threads; i++) pthread_join(t[i], NULL);
    free(t);
}

static void fail(const char* what)
{
    fprintf(stderr, "check failed: %s\n", what);
    exit(3);
}
#endif
