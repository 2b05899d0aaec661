/* memcrypt's all-zero and random programs (outside the trace suite; docs/memcrypt.md, Results): a 32 MB
   array of all-zero or random words, filled once, then 1.5 M random-index read-modify-writes
   (almost every access misses the L2 and the data TLB). `memfill z`: all zero; `memfill r`: random. */
#include <stdint.h>
#include <stdlib.h>
#define N (1u << 22)
int main(int argc, char **argv) {
    int zero = argc > 1 && argv[1][0] == 'z';
    uint64_t *a = malloc((size_t)N * 8), x = 88172645463325252ull, s = 0;
    for (uint32_t i = 0; i < N; i++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; a[i] = zero ? 0 : x; }
    for (uint32_t k = 0; k < 1500000; k++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        uint64_t j = x % N;
        s += a[j];
        a[j] = zero ? 0 : (s ^ x);
    }
    volatile uint64_t sink = s; (void)sink;
    return 0;
}
