/* fft: complex 1-D FFT of n = r*r points by the six-step algorithm that SPLASH-2 FFT uses
   (Bailey, "FFTs in external or hierarchical memory", J. Supercomputing 1990; Woo et al.,
   ISCA 1995): transpose, r-point FFTs on rows, twiddle, transpose, r-point FFTs, transpose.
   Threads own contiguous rows; the transposes are the all-to-all communication. Row FFTs are
   iterative radix-2 Cooley-Tukey. Checked against a direct DFT at a few outputs.
   Usage: fft LOG2_N(even) THREADS. Written for Veil from the algorithm. */
#include <complex.h>
#include <math.h>
#include "common.h"

typedef double complex cplx;
static long r, n, threads;
static cplx *a, *b, *roots;   /* roots[k] = exp(-2 pi i k / r) */
static pthread_barrier_t bar;

static void transpose(cplx* dst, const cplx* s, long lo, long hi)
{
    for (long i = lo; i < hi; i++)
        for (long j = 0; j < r; j++) dst[i * r + j] = s[j * r + i];
}

static void row_fft(cplx* x)
{
    for (long i = 1, j = 0; i < r; i++) {   /* bit reversal */
        long bit = r >> 1;
        for (; j & bit; bit >>= 1) j ^= bit;
        j ^= bit;
        if (i < j) {
            cplx t = x[i];
            x[i] = x[j];
            x[j] = t;
        }
    }
    for (long len = 2; len <= r; len <<= 1)
        for (long s = 0; s < r; s += len)
            for (long k = 0; k < len / 2; k++) {
                cplx w = roots[k * (r / len)], u = x[s + k], v = x[s + k + len / 2] * w;
                x[s + k] = u + v;
                x[s + k + len / 2] = u - v;
            }
}

static void* worker(void* arg)
{
    long id = (long)arg, lo = r * id / threads, hi = r * (id + 1) / threads;
    transpose(b, a, lo, hi);
    pthread_barrier_wait(&bar);
    for (long i = lo; i < hi; i++) {
        row_fft(b + i * r);
        for (long k = 0; k < r; k++) b[i * r + k] *= cexp(-2.0 * M_PI * I * (double)(i * k) / (double)n);
    }
    pthread_barrier_wait(&bar);
    transpose(a, b, lo, hi);
    pthread_barrier_wait(&bar);
    for (long i = lo; i < hi; i++) row_fft(a + i * r);
    pthread_barrier_wait(&bar);
    transpose(b, a, lo, hi);
    return NULL;
}

int main(int argc, char** argv)
{
    long m = arg_long(argc, argv, 1, 16);
    threads = arg_long(argc, argv, 2, 4);
    if (m % 2) fail("LOG2_N must be even");
    r = 1L << (m / 2);
    n = r * r;
    a = xmalloc(sizeof(cplx) * n);
    b = xmalloc(sizeof(cplx) * n);
    cplx* x = xmalloc(sizeof(cplx) * n);
    roots = xmalloc(sizeof(cplx) * r);
    for (long k = 0; k < r; k++) roots[k] = cexp(-2.0 * M_PI * I * (double)k / (double)r);
    uint64_t s = 2;
    for (long j = 0; j < n; j++) x[j] = a[j] = (2 * uniform01(&s) - 1) + I * (2 * uniform01(&s) - 1);
    pthread_barrier_init(&bar, NULL, (unsigned)threads);
    run_team((int)threads, worker);
    double worst = 0;
    for (int t = 0; t < 4; t++) {
        long k = (long)(splitmix64(&s) % (uint64_t)n);
        cplx want = 0;
        for (long j = 0; j < n; j++) want += x[j] * cexp(-2.0 * M_PI * I * (double)((j * k) % n) / (double)n);
        double e = cabs(want - b[k]);
        if (e > worst) worst = e;
    }
    if (worst > 1e-6 * sqrt((double)n)) fail("FFT differs from the direct DFT");
    printf("fft: %ld points, max error %.3g against the direct DFT\n", n, worst);
    return 0;
}
