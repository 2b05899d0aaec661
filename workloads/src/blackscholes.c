/* blackscholes: prices European calls and puts with the Black-Scholes closed form (Black &
   Scholes, J. Political Economy 1973), the cumulative normal by the Abramowitz & Stegun 26.2.17
   polynomial, options split statically across threads and priced ROUNDS times, as PARSEC's
   blackscholes does (Bienia et al., PACT 2008). Options live in an array of structs, as
   PARSEC's input records. Checked by put-call parity on every option.
   Usage: blackscholes OPTIONS THREADS [ROUNDS]. Written for Veil from the formulae. */
#include <math.h>
#include "common.h"

typedef struct { double s, k, r, v, t, call, put; } Option;
static Option* opt;
static long n, threads, rounds;

static double cndf(double x)
{
    const double b1 = 0.319381530, b2 = -0.356563782, b3 = 1.781477937, b4 = -1.821255978,
                 b5 = 1.330274429, p = 0.2316419;
    double ax = fabs(x), k = 1.0 / (1.0 + p * ax);
    double poly = k * (b1 + k * (b2 + k * (b3 + k * (b4 + k * b5))));
    double c = 1.0 - exp(-0.5 * ax * ax) / sqrt(2 * M_PI) * poly;
    return x < 0 ? 1.0 - c : c;
}

static void* worker(void* arg)
{
    long id = (long)arg, lo = n * id / threads, hi = n * (id + 1) / threads;
    for (long r = 0; r < rounds; r++)
        for (long i = lo; i < hi; i++) {
            Option* o = &opt[i];
            double sq = o->v * sqrt(o->t);
            double d1 = (log(o->s / o->k) + (o->r + 0.5 * o->v * o->v) * o->t) / sq, d2 = d1 - sq;
            double disc = o->k * exp(-o->r * o->t);
            o->call = o->s * cndf(d1) - disc * cndf(d2);
            o->put = disc * cndf(-d2) - o->s * cndf(-d1);
        }
    return NULL;
}

int main(int argc, char** argv)
{
    n = arg_long(argc, argv, 1, 65536);
    threads = arg_long(argc, argv, 2, 4);
    rounds = arg_long(argc, argv, 3, 4);
    opt = xmalloc(sizeof(Option) * n);
    uint64_t s = 5;
    for (long i = 0; i < n; i++) {
        Option* o = &opt[i];
        o->s = 20 + 100 * uniform01(&s);
        o->k = o->s * (0.8 + 0.4 * uniform01(&s));
        o->r = 0.01 + 0.05 * uniform01(&s);
        o->v = 0.1 + 0.5 * uniform01(&s);
        o->t = 0.25 + 2 * uniform01(&s);
    }
    run_team((int)threads, worker);
    double sum = 0, worst = 0;
    for (long i = 0; i < n; i++) {
        Option* o = &opt[i];
        double e = fabs((o->call - o->put) - (o->s - o->k * exp(-o->r * o->t)));
        if (e > worst) worst = e;
        sum += o->call;
    }
    if (worst > 1e-6) fail("put-call parity");
    printf("blackscholes: %ld options x %ld rounds, sum of calls %.6f, parity error %.2g\n", n, rounds, sum, worst);
    return 0;
}
