/* radix: parallel least-significant-digit radix sort of 32-bit keys (SPLASH-2 RADIX's
   algorithm: Blelloch et al., "A comparison of sorting algorithms for the Connection Machine
   CM-2", SPAA 1991; Woo et al., "The SPLASH-2 programs", ISCA 1995). Each thread histograms its
   own slice, one thread turns the histograms into per-thread offsets, each thread scatters its
   keys: the scatter is the all-to-all memory traffic the benchmark is known for.
   Usage: radix KEYS THREADS [RADIX_BITS]. Written for Veil from the algorithm. */
#include <string.h>
#include "common.h"

static long n, threads, bits, buckets;
static uint32_t *src, *dst;
static long* counts;   /* threads x buckets */
static pthread_barrier_t bar;

static void* worker(void* arg)
{
    long id = (long)arg, lo = n * id / threads, hi = n * (id + 1) / threads;
    for (int shift = 0; shift < 32; shift += (int)bits) {
        long* c = counts + id * buckets;
        memset(c, 0, sizeof(long) * buckets);
        for (long i = lo; i < hi; i++) c[(src[i] >> shift) & (buckets - 1)]++;
        pthread_barrier_wait(&bar);
        if (id == 0) {   /* exclusive prefix over (digit, thread) */
            long sum = 0;
            for (long d = 0; d < buckets; d++)
                for (long t = 0; t < threads; t++) {
                    long k = counts[t * buckets + d];
                    counts[t * buckets + d] = sum;
                    sum += k;
                }
        }
        pthread_barrier_wait(&bar);
        for (long i = lo; i < hi; i++) dst[c[(src[i] >> shift) & (buckets - 1)]++] = src[i];
        pthread_barrier_wait(&bar);
        if (id == 0) {
            uint32_t* t = src;
            src = dst;
            dst = t;
        }
        pthread_barrier_wait(&bar);
    }
    return NULL;
}

int main(int argc, char** argv)
{
    n = arg_long(argc, argv, 1, 1 << 20);
    threads = arg_long(argc, argv, 2, 4);
    bits = arg_long(argc, argv, 3, 8);
    if (32 % bits) fail("radix bits must divide 32");
    buckets = 1L << bits;
    src = xmalloc(sizeof(uint32_t) * n);
    dst = xmalloc(sizeof(uint32_t) * n);
    counts = xmalloc(sizeof(long) * threads * buckets);
    uint64_t s = 1, before = 0, after = 0;
    for (long i = 0; i < n; i++) {
        src[i] = (uint32_t)splitmix64(&s);
        before += src[i];
    }
    pthread_barrier_init(&bar, NULL, (unsigned)threads);
    run_team((int)threads, worker);
    for (long i = 0; i < n; i++) {
        after += src[i];
        if (i && src[i - 1] > src[i]) fail("keys not sorted");
    }
    if (before != after) fail("keys lost");
    printf("radix: %ld keys sorted, checksum %llu\n", n, (unsigned long long)after);
    return 0;
}
