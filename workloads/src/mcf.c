/* mcf: minimum-cost flow by successive shortest paths (Bellman-Ford with a FIFO queue on the
   residual network; Ahuja, Magnanti & Orlin, Network Flows, 1993, ch. 9) over a random sparse
   network stored as linked node and arc structs, arcs scattered in memory: the pointer chasing
   over a large graph that makes SPEC CPU2000's 181.mcf (a network simplex code) memory bound.
   This is a different min-cost-flow algorithm with the same kind of data structure, not mcf.
   Checked by flow conservation and capacity at every node and arc.
   Usage: mcf NODES [ARCS_PER_NODE] [UNITS]. Written for Veil from the algorithm. */
#include <string.h>
#include "common.h"

typedef struct Arc Arc;
typedef struct Node { Arc* first; Arc* pred; long dist; long next_in_queue; int queued; long excess; } Node;
struct Arc { Node* head; Node* tail; Arc* next; Arc* rev; long cap, cost, flow; };

static Node* nodes;
static Arc* arcs;
static long n_nodes, n_arcs, used;

static void add_arc(Arc** slot_order, long u, long v, long cap, long cost)
{
    Arc *a = slot_order[used++], *b = slot_order[used++];
    *a = (Arc){ &nodes[v], &nodes[u], nodes[u].first, b, cap, cost, 0 };
    *b = (Arc){ &nodes[u], &nodes[v], nodes[v].first, a, 0, -cost, 0 };
    nodes[u].first = a;
    nodes[v].first = b;
}

/* Bellman-Ford with a FIFO queue from s; false when t is unreachable. */
static int shortest_path(long s, long t, long* queue)
{
    const long inf = 1L << 60;
    for (long i = 0; i < n_nodes; i++) {
        nodes[i].dist = inf;
        nodes[i].pred = NULL;
        nodes[i].queued = 0;
    }
    long head = 0, tail = 0, cap = n_nodes + 1;
    nodes[s].dist = 0;
    queue[tail++] = s;
    nodes[s].queued = 1;
    while (head != tail) {
        Node* u = &nodes[queue[head]];
        head = (head + 1) % cap;
        u->queued = 0;
        for (Arc* a = u->first; a; a = a->next) {
            if (a->cap - a->flow <= 0) continue;
            long d = u->dist + a->cost;
            if (d < a->head->dist) {
                a->head->dist = d;
                a->head->pred = a;
                if (!a->head->queued) {
                    a->head->queued = 1;
                    queue[tail] = a->head - nodes;
                    tail = (tail + 1) % cap;
                }
            }
        }
    }
    return nodes[t].dist < inf;
}

int main(int argc, char** argv)
{
    n_nodes = arg_long(argc, argv, 1, 20000);
    long degree = arg_long(argc, argv, 2, 4), units = arg_long(argc, argv, 3, 100);
    n_arcs = 2 * (n_nodes * degree + n_nodes - 1);
    nodes = calloc((size_t)n_nodes, sizeof(Node));
    arcs = xmalloc(sizeof(Arc) * n_arcs);
    Arc** order = xmalloc(sizeof(Arc*) * n_arcs);
    uint64_t s = 6;
    for (long i = 0; i < n_arcs; i++) order[i] = &arcs[i];
    for (long i = n_arcs - 1; i > 0; i--) {   /* scatter arcs over memory */
        long j = (long)(splitmix64(&s) % (uint64_t)(i + 1));
        Arc* t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (long u = 0; u + 1 < n_nodes; u++) add_arc(order, u, u + 1, units, 1000);   /* feasibility */
    for (long u = 0; u < n_nodes; u++)
        for (long d = 0; d < degree; d++) {
            long v = (long)(splitmix64(&s) % (uint64_t)n_nodes);
            add_arc(order, u, v, 1 + (long)(splitmix64(&s) % 20), 1 + (long)(splitmix64(&s) % 100));
        }
    long* queue = xmalloc(sizeof(long) * (n_nodes + 1));
    long src = 0, dst = n_nodes - 1, shipped = 0, cost = 0, paths = 0;
    while (shipped < units && shortest_path(src, dst, queue)) {
        long push = units - shipped;
        for (Arc* a = nodes[dst].pred; a; a = a->tail->pred)
            if (a->cap - a->flow < push) push = a->cap - a->flow;
        for (Arc* a = nodes[dst].pred; a; a = a->tail->pred) {
            a->flow += push;
            a->rev->flow -= push;
            cost += push * a->cost;
        }
        shipped += push;
        paths++;
    }
    for (long i = 0; i < n_arcs; i++) {
        Arc* a = &arcs[i];
        if (a->flow > a->cap) fail("capacity exceeded");
        a->tail->excess -= a->flow;
    }
    for (long i = 0; i < n_nodes; i++) {
        long want = i == src ? -shipped : i == dst ? shipped : 0;
        if (nodes[i].excess != want) fail("flow not conserved");
    }
    if (shipped != units) fail("not all units shipped");
    printf("mcf: %ld nodes, %ld arcs, %ld units in %ld paths, cost %ld\n", n_nodes, n_arcs, shipped, paths, cost);
    return 0;
}
