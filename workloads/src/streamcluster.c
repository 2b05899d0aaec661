/* streamcluster: facility-location local search over a point set, the kernel of PARSEC's
   streamcluster (Bienia et al., PACT 2008), itself from the streaming k-median algorithm of
   O'Callaghan, Mishra, Meyerson, Guha & Motwani (ICDE 2002): a greedy first solution (points in
   order open a facility with probability d/z), then rounds in which a candidate point is
   evaluated by every thread over its own points (the gain of reassigning them to it), the
   partial gains summed, and the candidate opened when the gain pays the facility cost z.
   Checked: the cost never rises and every point is assigned to an open facility.
   Usage: streamcluster POINTS THREADS [DIM] [ROUNDS]. Written for Veil from the algorithm. */
#include <math.h>
#include <string.h>
#include "common.h"

static long n, threads, dim, rounds;
static float* pts;        /* n x dim */
static long* assign;      /* facility (a point index) of each point */
static double* cost;      /* distance of each point to its facility */
static char* open_fac;
static double gain_part[1024];
static long candidate;
static double z;
static pthread_barrier_t bar;

static double dist(long a, long b)
{
    double s = 0;
    for (long k = 0; k < dim; k++) {
        double d = pts[a * dim + k] - pts[b * dim + k];
        s += d * d;
    }
    return s;
}

static void* worker(void* arg)
{
    long id = (long)arg, lo = n * id / threads, hi = n * (id + 1) / threads;
    uint64_t s = 99;
    for (long r = 0; r < rounds; r++) {
        if (id == 0) candidate = (long)(splitmix64(&s) % (uint64_t)n);
        pthread_barrier_wait(&bar);
        long x = candidate;
        double g = 0;
        for (long p = lo; p < hi; p++) {
            double d = dist(p, x);
            if (d < cost[p]) g += cost[p] - d;
        }
        gain_part[id] = g;
        pthread_barrier_wait(&bar);
        double total = 0;
        for (long t = 0; t < threads; t++) total += gain_part[t];
        if (total > z && !open_fac[x]) {
            for (long p = lo; p < hi; p++) {
                double d = dist(p, x);
                if (d < cost[p]) {
                    cost[p] = d;
                    assign[p] = x;
                }
            }
            pthread_barrier_wait(&bar);
            if (id == 0) open_fac[x] = 1;
        }
        pthread_barrier_wait(&bar);
    }
    return NULL;
}

int main(int argc, char** argv)
{
    n = arg_long(argc, argv, 1, 16384);
    threads = arg_long(argc, argv, 2, 4);
    dim = arg_long(argc, argv, 3, 32);
    rounds = arg_long(argc, argv, 4, 200);
    if (threads > 1024) fail("too many threads");
    pts = xmalloc(sizeof(float) * n * dim);
    assign = xmalloc(sizeof(long) * n);
    cost = xmalloc(sizeof(double) * n);
    open_fac = calloc((size_t)n, 1);
    uint64_t s = 8;
    for (long p = 0; p < n; p++) {   /* 20 clusters with noise */
        long c = (long)(splitmix64(&s) % 20);
        for (long k = 0; k < dim; k++)
            pts[p * dim + k] = (float)(10.0 * ((c * 7 + k * 3) % 11) + 2.0 * (uniform01(&s) - 0.5));
    }
    z = 50.0 * dim;
    /* greedy first solution: open a facility with probability cost/z */
    assign[0] = 0;
    cost[0] = 0;
    open_fac[0] = 1;
    long nopen = 1;
    for (long p = 1; p < n; p++) {
        double best = INFINITY;
        long f = 0;
        for (long q = 0; q < p; q++)
            if (open_fac[q]) {
                double d = dist(p, q);
                if (d < best) { best = d; f = q; }
            }
        if (uniform01(&s) < best / (20 * z) && nopen < 64) {
            open_fac[p] = 1;
            nopen++;
            f = p;
            best = 0;
        }
        assign[p] = f;
        cost[p] = best;
    }
    double before = 0, after = 0;
    for (long p = 0; p < n; p++) before += cost[p];
    pthread_barrier_init(&bar, NULL, (unsigned)threads);
    run_team((int)threads, worker);
    long opened = 0;
    for (long p = 0; p < n; p++) {
        after += cost[p];
        if (!open_fac[assign[p]]) fail("a point is assigned to a closed facility");
        opened += open_fac[p];
    }
    if (after > before + 1e-6) fail("the cost rose");
    printf("streamcluster: %ld points x %ld dims, %ld facilities, cost %.1f -> %.1f\n", n, dim, opened, before, after);
    return 0;
}
