/* mgrid: V-cycle multigrid for the 3-D Poisson equation on an (N+1)^3 grid with zero boundary
   values: weighted-Jacobi smoothing, half-weighting restriction of the residual, trilinear
   prolongation of the correction (Briggs, Henson & McCormick, A Multigrid Tutorial, 2nd ed.,
   SIAM 2000, ch. 3-4): the method and the 3-D stencil sweeps of SPEC CPU2000's 172.mgrid
   (NAS MG). Checked by the residual falling by a factor of ten.
   Usage: mgrid LOG2_N [CYCLES]. Written for Veil from the algorithm. */
#include <math.h>
#include <string.h>
#include "common.h"

typedef struct { long n; double h; double *u, *f, *r; } Level;
static Level lv[16];
static int levels;

#define IX(L, i, j, k) (((i) * ((L)->n + 1) + (j)) * ((L)->n + 1) + (k))

static double resid(Level* L)
{
    long n = L->n;
    double s = 0, h2 = 1.0 / (L->h * L->h);
    for (long i = 1; i < n; i++)
        for (long j = 1; j < n; j++)
            for (long k = 1; k < n; k++) {
                double* u = L->u;
                double au = (6 * u[IX(L, i, j, k)] - u[IX(L, i - 1, j, k)] - u[IX(L, i + 1, j, k)] -
                             u[IX(L, i, j - 1, k)] - u[IX(L, i, j + 1, k)] - u[IX(L, i, j, k - 1)] -
                             u[IX(L, i, j, k + 1)]) * h2;
                double r = L->f[IX(L, i, j, k)] - au;
                L->r[IX(L, i, j, k)] = r;
                s += r * r;
            }
    return sqrt(s);
}

static void smooth(Level* L, int sweeps)
{
    double w = 2.0 / 3.0, d = 6.0 / (L->h * L->h);
    long n = L->n;
    for (int s = 0; s < sweeps; s++) {
        resid(L);
        for (long i = 1; i < n; i++)
            for (long j = 1; j < n; j++)
                for (long k = 1; k < n; k++) L->u[IX(L, i, j, k)] += w * L->r[IX(L, i, j, k)] / d;
    }
}

static void vcycle(int l)
{
    Level *L = &lv[l], *C = &lv[l + 1];
    if (l == levels - 1) {
        smooth(L, 20);
        return;
    }
    smooth(L, 2);
    resid(L);
    long nc = C->n;
    memset(C->u, 0, sizeof(double) * (nc + 1) * (nc + 1) * (nc + 1));
    for (long i = 1; i < nc; i++)
        for (long j = 1; j < nc; j++)
            for (long k = 1; k < nc; k++) {
                long a = 2 * i, b = 2 * j, c = 2 * k;
                double* r = L->r;
                C->f[IX(C, i, j, k)] = 0.5 * r[IX(L, a, b, c)] +
                    (r[IX(L, a - 1, b, c)] + r[IX(L, a + 1, b, c)] + r[IX(L, a, b - 1, c)] +
                     r[IX(L, a, b + 1, c)] + r[IX(L, a, b, c - 1)] + r[IX(L, a, b, c + 1)]) / 12.0;
            }
    vcycle(l + 1);
    long n = L->n;
    for (long i = 1; i < n; i++)
        for (long j = 1; j < n; j++)
            for (long k = 1; k < n; k++) {
                double v = 0;
                for (int di = 0; di < 2; di++)
                    for (int dj = 0; dj < 2; dj++)
                        for (int dk = 0; dk < 2; dk++)
                            v += C->u[IX(C, (i + di * (i & 1)) / 2, (j + dj * (j & 1)) / 2, (k + dk * (k & 1)) / 2)];
                L->u[IX(L, i, j, k)] += v / 8.0;
            }
    smooth(L, 2);
}

int main(int argc, char** argv)
{
    long m = arg_long(argc, argv, 1, 6), cycles = arg_long(argc, argv, 2, 4);
    if (m < 2 || m > 10) fail("LOG2_N must be from 2 to 10");
    for (long n = 1L << m; n >= 2; n /= 2) {
        Level* L = &lv[levels++];
        size_t pts = (size_t)(n + 1) * (n + 1) * (n + 1);
        L->n = n;
        L->h = 1.0 / n;
        L->u = calloc(pts, sizeof(double));
        L->f = calloc(pts, sizeof(double));
        L->r = calloc(pts, sizeof(double));
        if (!L->u || !L->f || !L->r) fail("out of memory");
    }
    uint64_t s = 7;
    Level* F = &lv[0];
    for (long i = 1; i < F->n; i++)
        for (long j = 1; j < F->n; j++)
            for (long k = 1; k < F->n; k++) F->f[IX(F, i, j, k)] = uniform01(&s) - 0.5;
    double r0 = resid(F);
    for (long c = 0; c < cycles; c++) vcycle(0);
    double r1 = resid(F);
    if (!(r1 < 0.1 * r0)) fail("the residual did not fall tenfold");
    printf("mgrid: %ld^3, %ld V-cycles, residual %.3g -> %.3g\n", F->n, cycles, r0, r1);
    return 0;
}
