/* mcf: minimum-cost flow by the primal network simplex method, the algorithm of SPEC CPU2000's
   181.mcf (Löbel, "Solving large-scale real-world minimum-cost flow problems by a network
   simplex method", ZIB SC-96-7, 1996; Ahuja, Magnanti & Orlin, Network Flows, 1993, ch. 11).
   The basis is a spanning tree rooted at an artificial node, stored in the node structs as
   parent / first child / next and previous sibling pointers with depth and potential (as Löbel's
   code keeps it; Ahuja's thread indices serve the same walk of a subtree). Each iteration:
   - pricing by multiple partial pricing: the arcs are scanned in groups; arcs whose reduced cost
     violates optimality join a candidate basket, re-priced at every iteration, and the most
     violating one enters (Löbel 1996; Ahuja sec. 11.5, candidate lists);
   - the pivot cycle is closed by walking the two tree paths up to their apex (depths), the flow
     change is the smallest residual on it, and the leaving arc is the last blocking arc seen from
     the apex, which keeps the tree strongly feasible (Cunningham 1976; Ahuja sec. 11.6), so
     degenerate pivots cannot cycle;
   - the tree update reverses the parent path of the subtree cut off by the leaving arc, hangs it
     from the entering arc, and recomputes depth and potential over that subtree.
   The start is the all-artificial tree (each node joined to the root by an arc of cost BIG_M).
   The network is random and sparse with a chain 0 -> 1 -> ... -> n-1 for feasibility; UNITS
   units go from node 0 to node n-1. Nodes are visited through pointers in the arcs and the tree,
   so the work is the pointer chasing over a large graph that makes 181.mcf memory bound.
   Checked: capacities, flow conservation (over each node's arc lists), no flow left on artificial
   arcs, arc states that agree with the tree, and optimality (every tree arc has reduced cost 0,
   every arc at its lower bound >= 0, at its upper bound <= 0).
   `mcf NODES ARCS_PER_NODE UNITS ssp` solves the same network by successive shortest paths
   (FIFO Bellman-Ford on the residual network, Ahuja ch. 9): the reference the tests compare the
   optimal cost with.
   Usage: mcf NODES [ARCS_PER_NODE] [UNITS] [ssp]. Written for Veil from the algorithms. */
#include <string.h>
#include "common.h"

typedef struct { long tail, head, cap, cost; } Spec;

static long n_nodes, n_specs, units;
static Spec* spec;
static long* scatter;   /* a permutation of 2 * n_specs residual-arc slots (ssp only) */

/* The network: a chain for feasibility, then ARCS_PER_NODE random arcs per node. The generator
   first shuffles the residual-arc slots (ssp scatters its arcs by them); the simplex needs no
   slots and skips those draws (splitmix64's state advances by a constant per draw), so both
   solve the same network. */
static void generate(long degree, int with_scatter)
{
    n_specs = n_nodes * degree + n_nodes - 1;
    spec = xmalloc(sizeof(Spec) * n_specs);
    uint64_t s = 6;
    if (with_scatter) {
        scatter = xmalloc(sizeof(long) * 2 * n_specs);
        for (long i = 0; i < 2 * n_specs; i++) scatter[i] = i;
        for (long i = 2 * n_specs - 1; i > 0; i--) {
            long j = (long)(splitmix64(&s) % (uint64_t)(i + 1));
            long t = scatter[i];
            scatter[i] = scatter[j];
            scatter[j] = t;
        }
    } else {
        s += (uint64_t)(2 * n_specs - 1) * 0x9E3779B97F4A7C15ull;
    }
    long k = 0;
    for (long u = 0; u + 1 < n_nodes; u++) spec[k++] = (Spec){ u, u + 1, units, 1000 };
    for (long u = 0; u < n_nodes; u++)
        for (long d = 0; d < degree; d++) {
            long v = (long)(splitmix64(&s) % (uint64_t)n_nodes);
            long cost = 1 + (long)(splitmix64(&s) % 100);   /* cost before capacity: the input as */
            long cap = 1 + (long)(splitmix64(&s) % 20);     /* Veil's first mcf drew it */
            spec[k++] = (Spec){ u, v, cap, cost };
        }
}

/* ------------------------------------------------------------------ network simplex */

/* Laid out as 181.mcf's arc and node (Löbel's code): an arc carries its out- and in-list links
   and its state, a node its lists' heads beside the tree; the size of these structs, not only
   the algorithm, sets how much of the network a cache holds. */
typedef struct Node Node;
enum { AT_LOWER, AT_UPPER, BASIC };
typedef struct Arc Arc;
struct Arc {
    Node *tail, *head;
    Arc *nextout, *nextin;
    long cost, cap, flow, ident;
};
struct Node {
    Node *pred, *child, *sibling, *sibling_prev;
    Arc* basic;        /* tree arc to pred */
    Arc *firstout, *firstin;
    long depth, potential, supply;
};

#define BIG_M (1L << 40)
#define INF_CAP (1L << 50)
enum { GROUP = 300, BASKET = 50 };

static Node* nodes;     /* n_nodes real nodes, then the root */
static Arc* arcs;       /* n_specs real arcs, then one artificial arc per node */
static long n_arcs;

static inline long reduced(const Arc* a) { return a->cost - a->tail->potential + a->head->potential; }

/* How far an arc violates optimality (0 if it does not). */
static inline long violation(const Arc* a)
{
    if (a->ident == BASIC) return 0;
    long rc = reduced(a);
    if (rc < 0 && a->ident == AT_LOWER) return -rc;
    if (rc > 0 && a->ident == AT_UPPER) return rc;
    return 0;
}

static Arc* basket[2 * BASKET + GROUP];
static long basket_size, next_group;

/* Multiple partial pricing: keep the basket's arcs that still violate, then scan groups of arcs
   until the basket holds some; the most violating arc enters. NULL when no arc violates. */
static Arc* price(void)
{
    long keep = 0, groups = (n_specs + GROUP - 1) / GROUP;
    for (long i = 0; i < basket_size; i++)
        if (violation(basket[i])) basket[keep++] = basket[i];
    for (long g = 0; g < groups && keep < BASKET; g++) {
        long lo = next_group * GROUP, hi = lo + GROUP < n_specs ? lo + GROUP : n_specs;
        next_group = (next_group + 1) % groups;
        for (long i = lo; i < hi && keep < 2 * BASKET; i++)
            if (violation(&arcs[i])) basket[keep++] = &arcs[i];
    }
    basket_size = keep;
    if (!keep) return NULL;
    long best = 0, bv = violation(basket[0]);
    for (long i = 1; i < keep; i++) {
        long v = violation(basket[i]);
        if (v > bv) { bv = v; best = i; }
    }
    Arc* a = basket[best];
    basket[best] = basket[--basket_size];
    return a;
}

static void attach(Node* v, Node* parent, Arc* via)
{
    v->pred = parent;
    v->basic = via;
    v->sibling_prev = NULL;
    v->sibling = parent->child;
    if (parent->child) parent->child->sibling_prev = v;
    parent->child = v;
}

static void detach(Node* v)
{
    if (v->sibling_prev) v->sibling_prev->sibling = v->sibling;
    else v->pred->child = v->sibling;
    if (v->sibling) v->sibling->sibling_prev = v->sibling_prev;
}

/* Depth and potential from the parent, over the subtree of `top` in preorder. */
static void refresh(Node* top)
{
    Node* v = top;
    for (;;) {
        Arc* a = v->basic;
        v->depth = v->pred->depth + 1;
        v->potential = a->tail == v ? a->cost + v->pred->potential : v->pred->potential - a->cost;
        if (v->child) { v = v->child; continue; }
        while (v != top && !v->sibling) v = v->pred;
        if (v == top) return;
        v = v->sibling;
    }
}

/* Residual capacity of the tree arc from v to its parent, in the direction up (or down). */
static inline long up_residual(const Node* v) { return v->basic->tail == v ? v->basic->cap - v->basic->flow : v->basic->flow; }
static inline long down_residual(const Node* v) { return v->basic->tail == v ? v->basic->flow : v->basic->cap - v->basic->flow; }

/* One pivot on the entering arc e. */
static void pivot(Arc* e)
{
    /* The cycle's orientation is that of the flow change on e: from -> to. */
    int forward = reduced(e) < 0;
    Node *from = forward ? e->tail : e->head, *to = forward ? e->head : e->tail;
    /* Traversed from the apex: down to `from`, e, up from `to`; the leaving arc is the last
       blocking arc in that order (nearest `from` on its side, nearest the apex on the other). */
    long delta = e->cap;
    Node *out_from = NULL, *out_to = NULL, *u = from, *v = to;
    long min_from = INF_CAP, min_to = INF_CAP;
    while (u != v) {
        if (u->depth >= v->depth) {
            long r = down_residual(u);
            if (r < min_from) { min_from = r; out_from = u; }
            u = u->pred;
        } else {
            long r = up_residual(v);
            if (r <= min_to) { min_to = r; out_to = v; }
            v = v->pred;
        }
    }
    if (min_from < delta) delta = min_from;
    if (min_to < delta) delta = min_to;
    if (delta >= INF_CAP) fail("unbounded cycle");
    Node* apex = u;
    if (delta > 0) {
        e->flow += forward ? delta : -delta;
        for (u = from; u != apex; u = u->pred) u->basic->flow += u->basic->tail == u ? -delta : delta;
        for (v = to; v != apex; v = v->pred) v->basic->flow += v->basic->tail == v ? delta : -delta;
    }
    Node *cut, *hang, *onto;   /* cut: child end of the leaving arc; hang: e's end below it */
    if (min_to == delta) {
        cut = out_to; hang = to; onto = from;
    } else if (e->cap == delta) {
        e->ident = e->flow ? AT_UPPER : AT_LOWER;       /* e goes to its other bound */
        return;
    } else {
        cut = out_from; hang = from; onto = to;
    }
    e->ident = BASIC;
    cut->basic->ident = cut->basic->flow ? AT_UPPER : AT_LOWER;
    /* Reverse the parent path hang -> ... -> cut and hang it from `onto` by e. */
    Node *w = hang, *parent = onto;
    Arc* via = e;
    for (;;) {
        Node* old_parent = w->pred;
        Arc* old_via = w->basic;
        detach(w);
        attach(w, parent, via);
        if (w == cut) break;
        parent = w;
        via = old_via;
        w = old_parent;
    }
    refresh(hang);
}

static long simplex(void)
{
    nodes = calloc((size_t)n_nodes + 1, sizeof(Node));
    n_arcs = n_specs + n_nodes;
    arcs = xmalloc(sizeof(Arc) * n_arcs);
    Node* root = &nodes[n_nodes];
    for (long i = 0; i < n_specs; i++) {
        Node *u = &nodes[spec[i].tail], *v = &nodes[spec[i].head];
        arcs[i] = (Arc){ u, v, u->firstout, v->firstin, spec[i].cost, spec[i].cap, 0, AT_LOWER };
        u->firstout = v->firstin = &arcs[i];
    }
    nodes[0].supply = units;
    nodes[n_nodes - 1].supply = -units;
    for (long i = 0; i < n_nodes; i++) {    /* strongly feasible: supply nodes point up to the root */
        Node* x = &nodes[i];
        Arc* a = &arcs[n_specs + i];
        *a = x->supply >= 0 ? (Arc){ x, root, NULL, NULL, BIG_M, INF_CAP, x->supply, BASIC }
                            : (Arc){ root, x, NULL, NULL, BIG_M, INF_CAP, -x->supply, BASIC };
        attach(x, root, a);
        x->depth = 1;
        x->potential = x->supply >= 0 ? BIG_M : -BIG_M;
    }
    long pivots = 0;
    for (Arc* e; (e = price()); pivots++) pivot(e);
    return pivots;
}

static long check_simplex(void)
{
    long cost = 0;
    for (long i = 0; i < n_arcs; i++) {
        Arc* a = &arcs[i];
        if (a->flow < 0 || a->flow > a->cap) fail("capacity exceeded");
        int basic = a->tail->basic == a || a->head->basic == a;
        if (basic != (a->ident == BASIC) || (!basic && a->flow != (a->ident == AT_UPPER ? a->cap : 0)))
            fail("an arc's state disagrees with the tree or its flow");
        if (i >= n_specs) {
            if (a->flow) fail("flow left on an artificial arc");
            continue;                     /* optimality is over the real arcs */
        }
        cost += a->flow * a->cost;
        long rc = reduced(a);
        if (basic ? rc != 0 : (rc < 0 && a->flow < a->cap) || (rc > 0 && a->flow > 0)) fail("not optimal");
    }
    for (long i = 0; i < n_nodes; i++) {   /* conservation over each node's out- and in-lists */
        long net = nodes[i].supply;
        for (Arc* a = nodes[i].firstout; a; a = a->nextout) net -= a->flow;
        for (Arc* a = nodes[i].firstin; a; a = a->nextin) net += a->flow;
        if (net) fail("flow not conserved");
    }
    return cost;
}

/* ------------------------------------------------------- successive shortest paths (reference) */

typedef struct RArc RArc;
typedef struct RNode { RArc* first; RArc* pred; long dist; int queued; long excess; } RNode;
struct RArc { RNode* head; RNode* tail; RArc* next; RArc* rev; long cap, cost, flow; };

static RNode* rnodes;

/* Bellman-Ford with a FIFO queue from s; false when t is unreachable. */
static int shortest_path(long s, long t, long* queue)
{
    const long inf = 1L << 60;
    for (long i = 0; i < n_nodes; i++) {
        rnodes[i].dist = inf;
        rnodes[i].pred = NULL;
        rnodes[i].queued = 0;
    }
    long head = 0, tail = 0, cap = n_nodes + 1;
    rnodes[s].dist = 0;
    queue[tail++] = s;
    rnodes[s].queued = 1;
    while (head != tail) {
        RNode* u = &rnodes[queue[head]];
        head = (head + 1) % cap;
        u->queued = 0;
        for (RArc* a = u->first; a; a = a->next) {
            if (a->cap - a->flow <= 0) continue;
            long d = u->dist + a->cost;
            if (d < a->head->dist) {
                a->head->dist = d;
                a->head->pred = a;
                if (!a->head->queued) {
                    a->head->queued = 1;
                    queue[tail] = a->head - rnodes;
                    tail = (tail + 1) % cap;
                }
            }
        }
    }
    return rnodes[t].dist < inf;
}

static long ssp(long* paths)
{
    rnodes = calloc((size_t)n_nodes, sizeof(RNode));
    RArc* rarcs = xmalloc(sizeof(RArc) * 2 * n_specs);
    for (long i = 0; i < n_specs; i++) {   /* each arc and its reverse, scattered over memory */
        RArc *a = &rarcs[scatter[2 * i]], *b = &rarcs[scatter[2 * i + 1]];
        RNode *u = &rnodes[spec[i].tail], *v = &rnodes[spec[i].head];
        *a = (RArc){ v, u, u->first, b, spec[i].cap, spec[i].cost, 0 };
        *b = (RArc){ u, v, v->first, a, 0, -spec[i].cost, 0 };
        u->first = a;
        v->first = b;
    }
    long* queue = xmalloc(sizeof(long) * (n_nodes + 1));
    long src = 0, dst = n_nodes - 1, shipped = 0, cost = 0;
    *paths = 0;
    while (shipped < units && shortest_path(src, dst, queue)) {
        long push = units - shipped;
        for (RArc* a = rnodes[dst].pred; a; a = a->tail->pred)
            if (a->cap - a->flow < push) push = a->cap - a->flow;
        for (RArc* a = rnodes[dst].pred; a; a = a->tail->pred) {
            a->flow += push;
            a->rev->flow -= push;
            cost += push * a->cost;
        }
        shipped += push;
        ++*paths;
    }
    for (long i = 0; i < 2 * n_specs; i++) {
        RArc* a = &rarcs[i];
        if (a->flow > a->cap) fail("capacity exceeded");
        a->tail->excess -= a->flow;
    }
    for (long i = 0; i < n_nodes; i++) {
        long want = i == src ? -shipped : i == dst ? shipped : 0;
        if (rnodes[i].excess != want) fail("flow not conserved");
    }
    if (shipped != units) fail("not all units shipped");
    return cost;
}

int main(int argc, char** argv)
{
    n_nodes = arg_long(argc, argv, 1, 20000);
    long degree = arg_long(argc, argv, 2, 4);
    units = arg_long(argc, argv, 3, 100);
    int reference = argc > 4 && !strcmp(argv[4], "ssp");
    if (argc > 4 && !reference) {
        fprintf(stderr, "%s: the fourth argument can only be 'ssp', got '%s'\n", argv[0], argv[4]);
        return 2;
    }
    if (n_nodes < 2) fail("at least 2 nodes");
    generate(degree, reference);
    if (reference) {
        long paths, cost = ssp(&paths);
        printf("mcf (successive shortest paths): %ld nodes, %ld arcs, %ld units in %ld paths, cost %ld\n",
               n_nodes, n_specs, units, paths, cost);
    } else {
        long pivots = simplex(), cost = check_simplex();
        printf("mcf (network simplex): %ld nodes, %ld arcs, %ld units, %ld pivots, cost %ld\n",
               n_nodes, n_specs, units, pivots, cost);
    }
    return 0;
}
