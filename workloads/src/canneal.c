/* canneal: simulated-annealing placement of a netlist on a grid, the kernel of PARSEC's canneal
   (Bienia, Kumar, Singh & Li, "The PARSEC benchmark suite", PACT 2008), which follows the
   cache-aware parallel annealing of Banerjee (Parallel Algorithms for VLSI Computer-Aided
   Design, 1994): every netlist element sits on one grid location; the routing cost of an element
   is the Manhattan distance to each element of its fan-in and fan-out. Threads repeatedly pick two
   elements and swap their locations when the change in routing cost passes the Metropolis test
   (always if it falls, with probability exp(-delta/T) if it rises). The cache-aware part: each move
   keeps one element of the previous move and draws one new one, so half the data is reused.
   Swaps take no lock: an element is claimed with a compare-and-swap (a move whose elements are
   claimed by another thread is skipped) and locations are read and written as atomics, so threads
   evaluate moves against neighbours that other threads may be moving (as in PARSEC: the cost
   estimate races, the placement stays a permutation). The temperature falls by a fixed factor at
   each step; threads meet at a barrier between steps.
   The netlist and the initial placement are generated from a fixed seed: each element drives 1-4
   others, mostly nearby in index (a circuit's locality), some anywhere; the initial placement is a
   random permutation, so the first cost is far from a good one.
   Checked: the placement is still a permutation of the grid, and the final routing cost (computed
   from scratch) is below the initial one.
   Usage: canneal ELEMENTS THREADS [MOVES_PER_STEP] [STEPS]; ELEMENTS is rounded down to a
   square grid. Written for Veil from the algorithm; no PARSEC source was used. */
#include <math.h>
#include <stdatomic.h>
#include "common.h"

typedef struct {
    _Atomic int loc;       /* grid location: y * side + x */
    atomic_int busy;       /* claimed by a thread that is swapping it */
    int nin, nout;
    int* in;               /* fan-in: elements that drive this one */
    int* out;              /* fan-out: elements this one drives */
} Element;

static Element* elem;
static long n, side, threads, moves, steps;
static double t_start;
static pthread_barrier_t bar;
static long accepted[1024];

static inline long dist(int a, int b)
{
    long ax = a % side, ay = a / side, bx = b % side, by = b / side;
    return labs(ax - bx) + labs(ay - by);
}

/* Routing cost of element e if it sat at location `at`, with `other` (the swap partner) taken
   to be at `other_at`. */
static long cost_at(const Element* e, int at, int other, int other_at)
{
    long c = 0;
    for (int i = 0; i < e->nin; i++) {
        int f = e->in[i];
        c += dist(at, f == other ? other_at : atomic_load_explicit(&elem[f].loc, memory_order_relaxed));
    }
    for (int i = 0; i < e->nout; i++) {
        int f = e->out[i];
        c += dist(at, f == other ? other_at : atomic_load_explicit(&elem[f].loc, memory_order_relaxed));
    }
    return c;
}

static int claim(Element* e)
{
    int free_ = 0;
    return atomic_compare_exchange_strong_explicit(&e->busy, &free_, 1, memory_order_acquire, memory_order_relaxed);
}

static void* worker(void* arg)
{
    long id = (long)arg, mine = moves / threads + (id < moves % threads);
    uint64_t s = 0x5eed0000u + (uint64_t)id;
    long b = (long)(splitmix64(&s) % (uint64_t)n), ok = 0;
    double t = t_start;
    for (long step = 0; step < steps; step++) {
        for (long m = 0; m < mine; m++) {
            long a = b;                                  /* reuse one element of the last move */
            do b = (long)(splitmix64(&s) % (uint64_t)n); while (b == a);
            Element *ea = &elem[a], *eb = &elem[b];
            if (!claim(ea)) continue;
            if (!claim(eb)) {
                atomic_store_explicit(&ea->busy, 0, memory_order_release);
                continue;
            }
            int la = atomic_load_explicit(&ea->loc, memory_order_relaxed);
            int lb = atomic_load_explicit(&eb->loc, memory_order_relaxed);
            long delta = cost_at(ea, lb, (int)b, la) + cost_at(eb, la, (int)a, lb)
                       - cost_at(ea, la, (int)b, lb) - cost_at(eb, lb, (int)a, la);
            if (delta < 0 || uniform01(&s) < exp(-(double)delta / t)) {
                atomic_store_explicit(&ea->loc, lb, memory_order_relaxed);
                atomic_store_explicit(&eb->loc, la, memory_order_relaxed);
                ok++;
            }
            atomic_store_explicit(&eb->busy, 0, memory_order_release);
            atomic_store_explicit(&ea->busy, 0, memory_order_release);
        }
        t *= 0.8;
        pthread_barrier_wait(&bar);
    }
    accepted[id] = ok;
    return NULL;
}

static long total_cost(void)
{
    long c = 0;      /* each net counted once, from its driver */
    for (long e = 0; e < n; e++)
        for (int i = 0; i < elem[e].nout; i++) c += dist(elem[e].loc, elem[elem[e].out[i]].loc);
    return c;
}

int main(int argc, char** argv)
{
    long want = arg_long(argc, argv, 1, 1 << 16);
    threads = arg_long(argc, argv, 2, 4);
    moves = arg_long(argc, argv, 3, 1 << 15);
    steps = arg_long(argc, argv, 4, 24);
    if (threads > 1024) fail("too many threads");
    for (side = 1; (side + 1) * (side + 1) <= want; side++) {}
    n = side * side;
    if (n < 16) fail("at least 16 elements");
    elem = calloc((size_t)n, sizeof(Element));
    int* fanout = xmalloc(sizeof(int) * n * 4);
    int* nin = calloc((size_t)n, sizeof(int));
    uint64_t s = 11;
    for (long e = 0; e < n; e++) {             /* nets: 1-4 sinks, 3 in 4 within +-32 in index */
        elem[e].nout = 1 + (int)(splitmix64(&s) % 4);
        elem[e].out = fanout + 4 * e;
        for (int i = 0; i < elem[e].nout; i++) {
            long f;
            do {
                if (splitmix64(&s) % 4)
                    f = (e + (long)(splitmix64(&s) % 65) - 32 + n) % n;
                else
                    f = (long)(splitmix64(&s) % (uint64_t)n);
            } while (f == e);
            elem[e].out[i] = (int)f;
            nin[f]++;
        }
    }
    int* fanin = xmalloc(sizeof(int) * n * 4);
    long off = 0;
    for (long e = 0; e < n; e++) {
        elem[e].in = fanin + off;
        off += nin[e];
    }
    for (long e = 0; e < n; e++)
        for (int i = 0; i < elem[e].nout; i++) {
            Element* f = &elem[elem[e].out[i]];
            f->in[f->nin++] = (int)e;
        }
    int* perm = xmalloc(sizeof(int) * n);      /* random initial placement */
    for (long i = 0; i < n; i++) perm[i] = (int)i;
    for (long i = n - 1; i > 0; i--) {
        long j = (long)(splitmix64(&s) % (uint64_t)(i + 1));
        int x = perm[i];
        perm[i] = perm[j];
        perm[j] = x;
    }
    for (long e = 0; e < n; e++) elem[e].loc = perm[e];
    long before = total_cost();
    t_start = (double)before / (double)n;       /* about one net's length: most moves pass at first */
    pthread_barrier_init(&bar, NULL, (unsigned)threads);
    run_team((int)threads, worker);
    long after = total_cost(), ok = 0;
    for (long i = 0; i < n; i++) perm[i] = 0;
    for (long e = 0; e < n; e++) {
        int l = elem[e].loc;
        if (l < 0 || l >= n || perm[l]++) fail("the placement is not a permutation");
    }
    for (long i = 0; i < threads; i++) ok += accepted[i];
    if (after >= before) fail("the routing cost did not fall");
    printf("canneal: %ld elements on a %ldx%ld grid, %ld threads, %ld steps x %ld moves, %ld accepted, "
           "routing cost %ld -> %ld\n", n, side, side, threads, steps, moves, ok, before, after);
    return 0;
}
