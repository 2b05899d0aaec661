/* lu: blocked right-looking LU factorisation without pivoting of a dense diagonally dominant
   matrix, blocks owned by threads in a 2-D scatter (SPLASH-2 LU's algorithm: Woo et al., ISCA
   1995; the blocked formulation as in Golub & Van Loan, Matrix Computations, sec. 3.2). Per
   step: the owner factors the diagonal block; owners update the perimeter row and column;
   owners update the interior. Checked by recomputing entries of L*U against the input.
   Usage: lu N THREADS [BLOCK]. Written for Veil from the algorithm. */
#include <math.h>
#include <string.h>
#include "common.h"

static long n, threads, bs, nb, pr, pc;
static double *A, *A0;
static pthread_barrier_t bar;

#define AT(i, j) A[(i) * n + (j)]

static int owner(long bi, long bj) { return (int)((bi % pr) * pc + (bj % pc)); }

static void factor_diag(long k)
{
    long o = k * bs, e = o + bs;
    for (long p = o; p < e; p++)
        for (long i = p + 1; i < e; i++) {
            AT(i, p) /= AT(p, p);
            for (long j = p + 1; j < e; j++) AT(i, j) -= AT(i, p) * AT(p, j);
        }
}

static void row_block(long k, long bj)   /* A_kJ = L_kk^-1 A_kJ */
{
    long o = k * bs, c = bj * bs;
    for (long p = o; p < o + bs; p++)
        for (long i = p + 1; i < o + bs; i++)
            for (long j = c; j < c + bs; j++) AT(i, j) -= AT(i, p) * AT(p, j);
}

static void col_block(long k, long bi)   /* A_Ik = A_Ik U_kk^-1 */
{
    long o = k * bs, r = bi * bs;
    for (long i = r; i < r + bs; i++)
        for (long p = o; p < o + bs; p++) {
            AT(i, p) /= AT(p, p);
            for (long j = p + 1; j < o + bs; j++) AT(i, j) -= AT(i, p) * AT(p, j);
        }
}

static void interior(long k, long bi, long bj)   /* A_IJ -= A_Ik A_kJ */
{
    long o = k * bs, r = bi * bs, c = bj * bs;
    for (long i = r; i < r + bs; i++)
        for (long p = o; p < o + bs; p++) {
            double l = AT(i, p);
            for (long j = c; j < c + bs; j++) AT(i, j) -= l * AT(p, j);
        }
}

static void* worker(void* arg)
{
    int id = (int)(long)arg;
    for (long k = 0; k < nb; k++) {
        if (owner(k, k) == id) factor_diag(k);
        pthread_barrier_wait(&bar);
        for (long b = k + 1; b < nb; b++) {
            if (owner(k, b) == id) row_block(k, b);
            if (owner(b, k) == id) col_block(k, b);
        }
        pthread_barrier_wait(&bar);
        for (long bi = k + 1; bi < nb; bi++)
            for (long bj = k + 1; bj < nb; bj++)
                if (owner(bi, bj) == id) interior(k, bi, bj);
        pthread_barrier_wait(&bar);
    }
    return NULL;
}

int main(int argc, char** argv)
{
    n = arg_long(argc, argv, 1, 256);
    threads = arg_long(argc, argv, 2, 4);
    bs = arg_long(argc, argv, 3, 16);
    if (n % bs) fail("N must be a multiple of BLOCK");
    nb = n / bs;
    for (pr = (long)sqrt((double)threads); threads % pr; pr--) {}
    pc = threads / pr;
    A = xmalloc(sizeof(double) * n * n);
    A0 = xmalloc(sizeof(double) * n * n);
    uint64_t s = 3;
    for (long i = 0; i < n; i++)
        for (long j = 0; j < n; j++) AT(i, j) = uniform01(&s) + (i == j ? (double)n : 0.0);
    memcpy(A0, A, sizeof(double) * n * n);
    pthread_barrier_init(&bar, NULL, (unsigned)threads);
    run_team((int)threads, worker);
    double worst = 0;
    for (int t = 0; t < 64; t++) {
        long i = (long)(splitmix64(&s) % (uint64_t)n), j = (long)(splitmix64(&s) % (uint64_t)n);
        double v = 0;
        for (long p = 0; p <= (i < j ? i : j); p++) v += (p == i ? 1.0 : AT(i, p)) * AT(p, j);
        double e = fabs(v - A0[i * n + j]);
        if (e > worst) worst = e;
    }
    if (worst > 1e-8 * n) fail("L*U differs from A");
    printf("lu: %ldx%ld, blocks of %ld, max |LU-A| %.3g\n", n, n, bs, worst);
    return 0;
}
