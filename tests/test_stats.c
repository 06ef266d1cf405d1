/* The statistics accumulator: exact moments, quantiles within 1 % of numpy's
   linear interpolation, NaN/inf rejection, merging, and no allocation. */
#include <stddef.h>
#include "count_alloc.h"                 /* alloc_count: the "alloc" configuration */
#include "gpuprof.h"
#include "impl/hooks.h"
#include "check.h"

static uint64_t rng = 88172645463325252ull;
static double unif(void) {              /* (0, 1) */
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return ((double)(rng >> 11) + 0.5) / 9007199254740992.0;
}
static double normal(void) { return sqrt(-2.0 * log(unif())) * cos(6.283185307179586 * unif()); }

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double exact_quantile(const double *sorted, size_t n, double q) {   /* numpy "linear" */
    double h = (double)(n - 1) * q;
    size_t k = (size_t)h;
    if (k + 1 >= n) return sorted[n - 1];
    return sorted[k] + (h - (double)k) * (sorted[k + 1] - sorted[k]);
}

/* Every percentile p1..p99 (and p99.9) of x within 1 % of the exact one. */
static void check_quantiles(const char *what, double *x, size_t n) {
    static gpuprof_stats s;
    char msg[128];
    int p, worst_p = 0;
    double worst = 0;
    gpuprof_stats_init(&s);
    for (size_t i = 0; i < n; i++) gpuprof_stats_add(&s, x[i]);
    qsort(x, n, sizeof *x, cmp);
    for (p = 1; p <= 100; p++) {
        double q = p == 100 ? 0.999 : p / 100.0;
        double want = exact_quantile(x, n, q), got = gpuprof_stats_quantile(&s, q);
        double err = fabs(got - want) / fabs(want);
        if (err > worst) { worst = err; worst_p = p; }
    }
    snprintf(msg, sizeof msg, "%s: worst quantile error %.4f %% (at p%d) is within 1 %%", what, 100 * worst, worst_p);
    CHECK(worst <= 0.01, msg);
    CHECK_EQ_U(gpuprof_stats_count(&s), n, "count is exact");
    CHECK(gpuprof_stats_min(&s) == x[0] && gpuprof_stats_max(&s) == x[n - 1], "min and max are exact");
    CHECK(gpuprof_stats_quantile(&s, 0) == x[0] && gpuprof_stats_quantile(&s, 1) == x[n - 1], "p0 and p100 are min and max");
}

int main(void) {
    enum { N = 100000, BIG = 1000000 };
    static double x[BIG];
    static gpuprof_stats a, b, all, s;
    size_t i;
    long before;

    /* exact moments of 1..1000 */
    gpuprof_stats_init(&s);
    for (i = 1; i <= 1000; i++) gpuprof_stats_add(&s, (double)i);
    CHECK_EQ_U(gpuprof_stats_count(&s), 1000, "count of 1..1000");
    CHECK(gpuprof_stats_sum(&s) == 500500.0, "sum of 1..1000 is exact");
    CHECK(gpuprof_stats_mean(&s) == 500.5, "mean of 1..1000 is exact");
    CHECK_REL(gpuprof_stats_stddev(&s), sqrt(1000.0 * 1001.0 / 12.0), 1e-12, "sample std of 1..1000");
    CHECK(gpuprof_stats_min(&s) == 1.0 && gpuprof_stats_max(&s) == 1000.0, "min/max of 1..1000");
    CHECK_REL(gpuprof_stats_quantile(&s, 0.5), 500.5, 0.01, "median of 1..1000");

    /* std of large values with a tiny spread stays accurate (shifted sums) */
    gpuprof_stats_init(&s);
    for (i = 0; i < 1000; i++) gpuprof_stats_add(&s, 1e9 + (double)(i % 2));
    CHECK_REL(gpuprof_stats_stddev(&s), sqrt(0.25 * 1000.0 / 999.0), 1e-9, "std of 1e9 +- 0.5 is not lost to cancellation");

    /* NaN and infinities are rejected and counted, not added */
    gpuprof_stats_init(&s);
    gpuprof_stats_add(&s, 2.0);
    gpuprof_stats_add(&s, NAN);
    gpuprof_stats_add(&s, INFINITY);
    gpuprof_stats_add(&s, -INFINITY);
    gpuprof_stats_add(&s, 4.0);
    CHECK_EQ_U(gpuprof_stats_count(&s), 2, "NaN/inf are not counted as samples");
    CHECK_EQ_U(gpuprof_stats_rejected(&s), 3, "NaN/inf are counted as rejected");
    CHECK(gpuprof_stats_mean(&s) == 3.0, "mean ignores NaN/inf");

    /* empty and single-sample accumulators */
    gpuprof_stats_init(&s);
    CHECK(isnan(gpuprof_stats_mean(&s)) && isnan(gpuprof_stats_quantile(&s, 0.5)), "an empty accumulator reports NaN, not 0");
    gpuprof_stats_add(&s, 123.456);
    CHECK(gpuprof_stats_quantile(&s, 0.01) == 123.456 && gpuprof_stats_quantile(&s, 0.99) == 123.456, "single sample: every quantile is that sample");
    CHECK(gpuprof_stats_stddev(&s) == 0.0, "single sample: std is 0");

    /* Zeros beside large values (a GPU idle share: 0 % in most steps, 89.5 %
       in a few): the zeros fall below the bucket window and are folded into
       its lowest bucket, and the median must still read 0, not 2e-08. */
    gpuprof_stats_init(&s);
    for (i = 0; i < 100; i++) gpuprof_stats_add(&s, i < 60 ? 0.0 : 89.5);
    CHECK(gpuprof_stats_quantile(&s, 0.5) == 0.0, "60 zeros and 40 x 89.5: the median is exactly 0");
    CHECK(gpuprof_stats_quantile(&s, 0.59) == 0.0, "p59 is exactly 0");
    CHECK_REL(gpuprof_stats_quantile(&s, 0.95), 89.5, 0.01, "p95 is 89.5");

    for (i = 0; i < N; i++) x[i] = unif();
    check_quantiles("uniform(0,1)", x, N);
    for (i = 0; i < N; i++) x[i] = exp(normal());
    check_quantiles("log-normal(0,1)", x, N);
    for (i = 0; i < N; i++) x[i] = (unif() < 0.7 ? 1e6 : 1e8) * (1 + 0.05 * normal());   /* 1 ms and 100 ms modes, in ns */
    check_quantiles("bimodal (1 ms / 100 ms)", x, N);
    for (i = 0; i < N; i++) x[i] = 42.0;
    check_quantiles("constant", x, N);
    for (i = 0; i < N; i++) x[i] = pow(10.0, 9.0 * unif());                  /* 1 ns .. 1 s, log-uniform */
    check_quantiles("log-uniform over 9 decades", x, N);
    for (i = 0; i < N; i++) x[i] = -exp(normal());
    check_quantiles("negative log-normal", x, N);
    for (i = 0; i < BIG; i++) x[i] = 1000.0 + 200.0 * normal() * normal();
    check_quantiles("10^6 samples", x, BIG);

    /* merge equals adding all samples to one accumulator */
    gpuprof_stats_init(&a);
    gpuprof_stats_init(&b);
    gpuprof_stats_init(&all);
    for (i = 0; i < N; i++) {
        double v = exp(2.0 * normal());
        gpuprof_stats_add(i % 3 ? &a : &b, v);
        gpuprof_stats_add(&all, v);
    }
    gpuprof_stats_add(&b, NAN);
    gpuprof_stats_merge(&a, &b);
    CHECK_EQ_U(gpuprof_stats_count(&a), gpuprof_stats_count(&all), "merge: count");
    CHECK_EQ_U(gpuprof_stats_rejected(&a), 1, "merge: rejected count carried over");
    CHECK_REL(gpuprof_stats_sum(&a), gpuprof_stats_sum(&all), 1e-12, "merge: sum");
    CHECK_REL(gpuprof_stats_stddev(&a), gpuprof_stats_stddev(&all), 1e-9, "merge: std");
    CHECK(gpuprof_stats_min(&a) == gpuprof_stats_min(&all) && gpuprof_stats_max(&a) == gpuprof_stats_max(&all), "merge: min/max");
    {
        int same = 1;
        double q;
        for (q = 0.01; q < 1.0; q += 0.01) if (gpuprof_stats_quantile(&a, q) != gpuprof_stats_quantile(&all, q)) same = 0;
        CHECK(same, "merge: every quantile equals that of one accumulator fed all samples");
    }
    gpuprof_stats_init(&s);
    gpuprof_stats_merge(&s, &all);
    CHECK(gpuprof_stats_quantile(&s, 0.37) == gpuprof_stats_quantile(&all, 0.37), "merge into an empty accumulator copies it");

    /* counts near 2^32 in one bucket are halved, not wrapped */
    gpuprof_stats_init(&s);
    gpuprof_stats_add(&s, 1.0);
    gpuprof_stats_add(&s, 2.0);
    impl_stats_count(&s, 1.0, 0xF0000000u);
    impl_stats_count(&s, 1.0, 0xF0000000u);
    s.count += 2ull * 0xF0000000u;
    CHECK(s.halvings >= 1, "an overflowing bucket halves the histogram");
    CHECK_REL(gpuprof_stats_quantile(&s, 0.5), 1.0, 0.01, "after halving the median is still right");

    /* the hot path's key of a whole number of ns (no sign to handle) equals the general key */
    {
        int same = 1;
        uint64_t v;
        for (i = 0; i < 1000000 && same; i++) {
            rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
            v = rng >> (rng % 64);
            if (v >> 53) v >>= 11;
            if (!impl_key_ns_agrees((double)v)) same = 0;
        }
        for (v = 0; v < 5000 && same; v++) if (!impl_key_ns_agrees((double)v)) same = 0;
        CHECK(same, "the hot path's histogram key agrees with the general one");
        gpuprof_stats_init(&a);
        gpuprof_stats_init(&b);
        for (i = 0; i < 100000; i++) {
            v = (uint64_t)(exp(3.0 * normal()) * 1000.0);
            gpuprof_stats_add(&a, (double)v);
            impl_stats_add_ns(&b, v);
        }
        CHECK(memcmp(&a, &b, sizeof a) == 0, "the hot path's add gives exactly the public add's state");
    }

    /* merging a halved accumulator (counts in units of 2^halvings samples)
       with an unhalved one: 2^33 samples of 1.0 and 2^31 of 100.0 */
    {
        gpuprof_stats big, small, copy;
        int k;
        gpuprof_stats_init(&big);
        gpuprof_stats_init(&small);
        gpuprof_stats_add(&big, 1.0);
        gpuprof_stats_add(&small, 100.0);
        for (k = 0; k < 33; k++) { copy = big; gpuprof_stats_merge(&big, &copy); }      /* doubling */
        for (k = 0; k < 31; k++) { copy = small; gpuprof_stats_merge(&small, &copy); }
        CHECK(big.halvings > 0 && small.halvings == 0, "setup: one side halved, the other not");
        CHECK_EQ_U(gpuprof_stats_count(&big), 8589934592.0, "setup: 2^33 samples of 1.0");
        copy = big;
        gpuprof_stats_merge(&big, &small);
        CHECK_REL(gpuprof_stats_quantile(&big, 0.6), 1.0, 0.01, "halved + unhalved: p60 is 1.0 (80% of the samples, within a bucket), not 100");
        CHECK_EQ_U(gpuprof_stats_quantile(&big, 0.9), 100.0, "halved + unhalved: p90 is 100");
        gpuprof_stats_merge(&small, &copy);
        CHECK_REL(gpuprof_stats_quantile(&small, 0.6), 1.0, 0.01, "unhalved + halved: p60 is 1.0");
        CHECK_EQ_U(gpuprof_stats_quantile(&small, 0.9), 100.0, "unhalved + halved: p90 is 100");
        CHECK_EQ_U(gpuprof_stats_count(&small), 8589934592.0 + 2147483648.0, "and the count is exact");
    }

    /* no allocation: init, add, merge and quantile use only the struct */
    before = alloc_count;
    gpuprof_stats_init(&s);
    for (i = 0; i < 1000; i++) gpuprof_stats_add(&s, (double)i);
    gpuprof_stats_merge(&s, &all);
    (void)gpuprof_stats_quantile(&s, 0.99);
    (void)gpuprof_stats_stddev(&s);
    CHECK_EQ_U(alloc_count - before, 0, "the accumulator allocates nothing");
    return check_done("test_stats");
}
