/* ocean: red-black successive over-relaxation of a 2-D Poisson equation on an (N+2)^2 grid,
   rows in contiguous bands per thread, a barrier after each colour: the relaxation at the heart
   of SPLASH-2 OCEAN's multigrid solver (Woo et al., ISCA 1995; red-black SOR as in Briggs,
   Henson & McCormick, A Multigrid Tutorial, 2nd ed., SIAM 2000, ch. 2). Neighbouring bands
   share their boundary rows. Checked by the residual falling.
   Usage: ocean N THREADS [ITERS]. Written for Veil from the algorithm. */
#include <math.h>
#include "common.h"

static long n, threads, iters;
static double *u, *f;
static double res_part[1024];
static pthread_barrier_t bar;
#define U(i, j) u[(i) * (n + 2) + (j)]
#define F(i, j) f[(i) * (n + 2) + (j)]

static double residual_rows(long lo, long hi)
{
    double s = 0;
    for (long i = lo; i < hi; i++)
        for (long j = 1; j <= n; j++) {
            double r = F(i, j) - (4 * U(i, j) - U(i - 1, j) - U(i + 1, j) - U(i, j - 1) - U(i, j + 1));
            s += r * r;
        }
    return s;
}

static void* worker(void* arg)
{
    long id = (long)arg, lo = 1 + n * id / threads, hi = 1 + n * (id + 1) / threads;
    const double w = 1.6;
    for (long it = 0; it < iters; it++)
        for (int colour = 0; colour < 2; colour++) {
            for (long i = lo; i < hi; i++)
                for (long j = 1 + ((i + colour) & 1); j <= n; j += 2) {
                    double gs = 0.25 * (F(i, j) + U(i - 1, j) + U(i + 1, j) + U(i, j - 1) + U(i, j + 1));
                    U(i, j) += w * (gs - U(i, j));
                }
            pthread_barrier_wait(&bar);
        }
    res_part[id] = residual_rows(lo, hi);
    return NULL;
}

int main(int argc, char** argv)
{
    n = arg_long(argc, argv, 1, 256);
    threads = arg_long(argc, argv, 2, 4);
    iters = arg_long(argc, argv, 3, 20);
    if (threads > 1024 || threads > n) fail("too many threads for the grid");
    u = calloc((size_t)(n + 2) * (n + 2), sizeof(double));
    f = calloc((size_t)(n + 2) * (n + 2), sizeof(double));
    if (!u || !f) fail("out of memory");
    uint64_t s = 4;
    for (long i = 1; i <= n; i++)
        for (long j = 1; j <= n; j++) F(i, j) = uniform01(&s) - 0.5;
    double r0 = residual_rows(1, n + 1);
    pthread_barrier_init(&bar, NULL, (unsigned)threads);
    run_team((int)threads, worker);
    double r1 = 0;
    for (long t = 0; t < threads; t++) r1 += res_part[t];
    if (!(r1 < 0.5 * r0)) fail("the residual did not fall");
    printf("ocean: %ldx%ld, %ld iterations, residual %.3g -> %.3g\n", n, n, iters, sqrt(r0), sqrt(r1));
    return 0;
}
