/* barnes: Barnes-Hut N-body simulation in 3-D (Barnes & Hut, Nature 1986; SPLASH-2 BARNES, Woo
   et al., ISCA 1995): each step one thread builds the octree of the bodies with each cell's mass
   and centre of mass, then all threads compute the forces on their own bodies by walking the
   tree (a cell far enough away, size/distance < theta, counts as one body), then move them.
   The tree walk is the pointer chasing over shared data the benchmark is known for. Checked
   against direct summation on a few bodies.
   Usage: barnes BODIES THREADS [STEPS]. Written for Veil from the algorithm. */
#include <math.h>
#include <string.h>
#include "common.h"

typedef struct Cell {
    double cx, cy, cz, half;      /* cube centre and half-size */
    double mass, mx, my, mz;      /* total mass, centre of mass */
    struct Cell* child[8];
    long body;                    /* leaf body index, -1 when empty or internal */
} Cell;

static long n, threads, steps;
static double *px, *py, *pz, *vx, *vy, *vz, *ax, *ay, *az, *m;
static Cell* pool;
static long pool_used, pool_cap;
static Cell* root;
static pthread_barrier_t bar;
static const double theta = 0.5, eps2 = 1e-4, dt = 1e-3;

static Cell* new_cell(double cx, double cy, double cz, double half)
{
    if (pool_used == pool_cap) fail("octree pool exhausted");
    Cell* c = &pool[pool_used++];
    memset(c, 0, sizeof *c);
    c->cx = cx, c->cy = cy, c->cz = cz, c->half = half, c->body = -1;
    return c;
}

static int octant(Cell* c, long b) { return (px[b] > c->cx) | (py[b] > c->cy) << 1 | (pz[b] > c->cz) << 2; }

static Cell* child_for(Cell* c, int o)
{
    if (!c->child[o]) {
        double h = c->half / 2;
        c->child[o] = new_cell(c->cx + (o & 1 ? h : -h), c->cy + (o & 2 ? h : -h), c->cz + (o & 4 ? h : -h), h);
    }
    return c->child[o];
}

static void insert(Cell* c, long b, int depth)
{
    for (;;) {
        int internal = c->mass > 0 && c->body < 0;
        c->mx += m[b] * px[b], c->my += m[b] * py[b], c->mz += m[b] * pz[b];
        c->mass += m[b];
        if (internal) { c = child_for(c, octant(c, b)); depth++; continue; }
        if (c->body < 0) { c->body = b; return; }
        if (depth > 60) return;                   /* coincident bodies: keep the mass, drop the split */
        long old = c->body;
        c->body = -1;
        Cell* oc = child_for(c, octant(c, old));
        oc->mass = m[old], oc->mx = m[old] * px[old], oc->my = m[old] * py[old], oc->mz = m[old] * pz[old];
        oc->body = old;
        c = child_for(c, octant(c, b));
        depth++;
    }
}

static void force(Cell* c, long b, double* fx, double* fy, double* fz)
{
    if (!c || c->mass == 0 || c->body == b) return;
    double gx = c->mx / c->mass - px[b], gy = c->my / c->mass - py[b], gz = c->mz / c->mass - pz[b];
    double d2 = gx * gx + gy * gy + gz * gz + eps2;
    if (c->body >= 0 || (2 * c->half) * (2 * c->half) < theta * theta * d2) {
        double inv = c->mass / (d2 * sqrt(d2));
        *fx += gx * inv, *fy += gy * inv, *fz += gz * inv;
        return;
    }
    for (int o = 0; o < 8; o++) force(c->child[o], b, fx, fy, fz);
}

static void build(void)
{
    pool_used = 0;
    double r = 0;
    for (long b = 0; b < n; b++) r = fmax(r, fmax(fabs(px[b]), fmax(fabs(py[b]), fabs(pz[b]))));
    root = new_cell(0, 0, 0, r * 1.0001 + 1e-9);
    for (long b = 0; b < n; b++) insert(root, b, 0);
}

static void* worker(void* arg)
{
    long id = (long)arg, lo = n * id / threads, hi = n * (id + 1) / threads;
    for (long s = 0; s < steps; s++) {
        if (id == 0) build();
        pthread_barrier_wait(&bar);
        for (long b = lo; b < hi; b++) {
            ax[b] = ay[b] = az[b] = 0;
            force(root, b, &ax[b], &ay[b], &az[b]);
        }
        pthread_barrier_wait(&bar);
        if (s + 1 < steps)
            for (long b = lo; b < hi; b++) {
                vx[b] += dt * ax[b], vy[b] += dt * ay[b], vz[b] += dt * az[b];
                px[b] += dt * vx[b], py[b] += dt * vy[b], pz[b] += dt * vz[b];
            }
        pthread_barrier_wait(&bar);
    }
    return NULL;
}

int main(int argc, char** argv)
{
    n = arg_long(argc, argv, 1, 8192);
    threads = arg_long(argc, argv, 2, 4);
    steps = arg_long(argc, argv, 3, 2);
    double** arrays[] = { &px, &py, &pz, &vx, &vy, &vz, &ax, &ay, &az, &m };
    for (int i = 0; i < 10; i++) *arrays[i] = calloc((size_t)n, sizeof(double));
    pool_cap = 4 * n + 64;
    pool = xmalloc(sizeof(Cell) * pool_cap);
    uint64_t s = 9;
    for (long b = 0; b < n; b++) {      /* uniform in the unit ball */
        double x, y, z;
        do { x = 2 * uniform01(&s) - 1, y = 2 * uniform01(&s) - 1, z = 2 * uniform01(&s) - 1; } while (x * x + y * y + z * z > 1);
        px[b] = x, py[b] = y, pz[b] = z, m[b] = 1.0 / n;
    }
    pthread_barrier_init(&bar, NULL, (unsigned)threads);
    run_team((int)threads, worker);
    double worst = 0;
    for (int t = 0; t < 8; t++) {
        long b = (long)(splitmix64(&s) % (uint64_t)n);
        double fx = 0, fy = 0, fz = 0;
        for (long j = 0; j < n; j++) {
            if (j == b) continue;
            double gx = px[j] - px[b], gy = py[j] - py[b], gz = pz[j] - pz[b];
            double d2 = gx * gx + gy * gy + gz * gz + eps2, inv = m[j] / (d2 * sqrt(d2));
            fx += gx * inv, fy += gy * inv, fz += gz * inv;
        }
        double e = sqrt(pow(fx - ax[b], 2) + pow(fy - ay[b], 2) + pow(fz - az[b], 2)) / sqrt(fx * fx + fy * fy + fz * fz);
        if (e > worst) worst = e;
    }
    if (worst > 0.05) fail("tree forces differ from direct summation by more than 5%");
    printf("barnes: %ld bodies, %ld steps, %ld cells, worst force error %.4f\n", n, steps, pool_used, worst);
    return 0;
}
