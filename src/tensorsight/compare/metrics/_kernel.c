/* tensorsight fused metric kernel: one pass over a (target x, bench y) chunk.
 *
 * Compiled on first use by tensorsight/compare/metrics/_native.py for the baseline of the
 * machine's architecture (no -march=native: a cached library runs on any CPU of the
 * architecture); the numpy implementation in kernel.py is the reference and the fallback.
 * Every sum is a float64 accumulation and every per-element step is float64 arithmetic.
 * The caller handles non-finite values: when a chunk's sums come back non-finite it
 * recomputes that chunk with numpy's masked path.
 *
 * Three implementations of the same pass, each exported under its own suffix, the caller
 * choosing one at run time from ts_cpu_features() (cpuid) and TENSORSIGHT_KERNEL:
 *   _portable  a loop the compiler vectorises for the baseline (SSE2 on x86-64, NEON on
 *              aarch64), TS_BODY;
 *   _avx2      explicit 4-lane AVX2 + FMA code (x86-64 only), TS_AVX2_BODY;
 *   _avx512    explicit 8-lane AVX-512 F + DQ code (x86-64 only), TS_AVX512_BODY.
 * The explicit loops do what the auto-vectoriser cannot: they pick the cheapest exact form
 * of log(u/v) per vector (see ts_log_ratio8). The portable loop sums KL's atanh series on
 * s = (u - v)/(u + v) (one division) and redoes a block of TS_BLOCK with the general form
 * only when one of its ratios leaves [0.707, 1.414]. The "within" counts are |d| < t|y|
 * with t|y| rounded once, as the reference computes them (not the quotient |d|/|y| < t,
 * which can land on the other side within an ulp of t), x = y always inside. The ulp
 * quotient keeps |d| 2**(1 - E) (ts_inv_binade2) and halves its maximum: 2**-E is
 * subnormal at E = 1023. The explicit loops are bound by their vector operations, not by
 * memory, nor by their two divisions (the divider runs beside the FMA/ALU pipes: on Zen 5,
 * ~3.8 cycles each, ymm or zmm; dropping both outright, in an experiment, saved <= 7 % on
 * AVX-512 and nothing measurable on AVX2, less than the ~6 pipe operations that a
 * reciprocal estimate and its Newton steps cost). AVX2 has 16 vector registers and the
 * pass's 15 accumulators (and its constants and temporaries):
 * it runs in two passes over each run of TS_SUB elements (moments and KL, then errors, the
 * second reading the first's float64 copy from L1), so no accumulator spills to the
 * stack. Measured on an AMD EPYC (Zen 5, KVM), one thread, thread CPU time: AVX-512 ~9.4
 * cycles per 4 elements, AVX2 ~14.6 (~15.2 with the KL form chosen per vector, ~18 before
 * the two passes; ~5.3 on runs equal bit for bit), portable ~80 (was ~105). On an Intel Xeon
 * (Ice Lake server, KVM, 2.8 GHz) the 256-bit divider binds where Zen 5's does not: one
 * vdivpd ymm per pass takes ~8 cycles and seems to hold port 0 for part of them, so the
 * error pass (~7.7 cycles per 4 elements) sits at the divider's bound and the moments pass
 * (~12.7) at the two FP ports' one; only operations taken off the moments pass count there
 * (moving the bench side's moments into the error pass gained nothing, deriving sum x*y
 * gained ~3 %: AVX2 1.69 -> 1.62 ns per element, min of interleaved runs in L2). Each loop is
 * compiled with a per-function target attribute, so only the functions the CPU can run
 * are ever called.
 * Both explicit loops are bound by their vector operations, not by memory: on that EPYC a
 * pair of 8192 elements (in L1/L2) runs at the same ns per element as a pair of 2 x 64 MiB
 * (AVX2 1.14 vs 1.19, AVX-512 0.68 vs 0.69), so blocking for the cache gains nothing; what
 * counts is operations per element. Two such savings: the raw sums of squares are derived
 * from the shifted ones per block (TS_RAW_SQ), and u = (x - lo) s is computed as
 * fma(x - k, s, (k - lo) s) from the moments' x - k (k the chunk's shift), one operation
 * fewer per side; the rounding of (k - lo) s shifts every u of the chunk alike, by at most
 * an ulp of 1 (u is in [0, 1]), which moves KL relatively by ~eps / |s| (s = (u - v) /
 * (u + v)), far inside the 1e-9 the tests require. Each saves ~2-3 %.
 *
 * acc layout (all doubles, zeroed by the caller): TS_NACC slots named TS_SX, TS_SY, TS_SXX,
 * TS_SYY (shifted moments), TS_SXY, TS_SDD, TS_SAD, TS_ACC_REL, TS_MAX_ABS, TS_MAX_REL,
 * TS_WITHIN1, TS_WITHIN5, TS_MAX_ULP_Q, TS_KL_U, TS_KL_D (sum v - u), TS_KL_S, TS_SXX_RAW (sum
 * x*x), TS_SYY_RAW (sum y*y); TS_IS_MAX(i) says which merge by maximum. The indices are not
 * written here: they come from the one table in compare/metrics/_layout.py (ACCUMULATORS),
 * passed as -D flags (_layout.c_defines()), from which the Python merge reads them too.
 */
#if !defined(TS_NACC) || !defined(TS_NROW) || !defined(TS_IS_MAX)
#error "compile with the layout flags of compare/metrics/_layout.py (c_defines())"
#endif
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) || defined(_M_X64)
#define TS_X86 1
#include <immintrin.h>
#define TS_AVX2 __attribute__((target("avx2,fma")))
#define TS_AVX512 __attribute__((target("avx2,fma,avx512f,avx512dq")))
#endif

/* How often the explicit loops took each of their data-dependent paths, for tests (relaxed
 * atomic adds, a few per block of 8,192 elements; shared by all threads):
 *   0 a block's raw sum of squares derived from the shifted sums (per side, TS_RAW_SQ)
 *   1 a block's raw sum of squares summed again directly (an outlier shift)
 *   2 an AVX2 run whose two sides are equal bit for bit (TS_AVX2_EQUAL)
 *   3 an AVX2 run whose KL sum was summed again with the form chosen per vector
 *   4 an AVX2 block's sum x*y derived from its sums of squares (TS_XY_SUM)
 *   5 an AVX2 block's sum x*y summed directly (the sides far from proportional)
 * ts_path_counts copies them into out[0..5] and, when reset is non-zero, zeroes them. */
static int64_t ts_counts[6];
#define TS_COUNT(i) __atomic_fetch_add(&ts_counts[(i)], 1, __ATOMIC_RELAXED)

void ts_path_counts(int64_t *out, int reset) {
    for (int i = 0; i < 6; i++) {
        out[i] = reset ? __atomic_exchange_n(&ts_counts[i], 0, __ATOMIC_RELAXED)
                       : __atomic_load_n(&ts_counts[i], __ATOMIC_RELAXED);
    }
}

/* bit 0 avx2, 1 fma, 2 avx512f, 3 avx512dq, as the CPU and the OS (saved vector state)
   support them; 0 off x86-64 */
int ts_cpu_features(void) {
#ifdef TS_X86
    __builtin_cpu_init();
    return (__builtin_cpu_supports("avx2") ? 1 : 0) | (__builtin_cpu_supports("fma") ? 2 : 0) |
           (__builtin_cpu_supports("avx512f") ? 4 : 0) |
           (__builtin_cpu_supports("avx512dq") ? 8 : 0);
#else
    return 0;
#endif
}

#define EPS64 2.220446049250313e-16
#define EPS32 1.1920928955078125e-07
#define LN2 0.6931471805599453
#define DBL_MIN_NORMAL 2.2250738585072014e-308
#define DBL_MAX_FINITE 1.7976931348623157e308

/* |s| <= 0.1716 (u/v within [0.707, 1.414]): log(u/v) = 2 atanh(s), s = (u - v)/(u + v) */
#define TS_Z_FULL (0.1716 * 0.1716)

static inline double ts_atanh2(double s, double z) {
    /* 2 atanh(s) = 2s (1 + z/3 + z^2/5 + ... + z^9/19), z = s^2 <= TS_Z_FULL: the first
       omitted term is below 2.5e-17 relatively; two interleaved chains keep latency short */
    double z2 = z * z;
    double a = 2.0 / 5 + z2 * (2.0 / 9 + z2 * (2.0 / 13 + z2 * (2.0 / 17)));
    double c = 2.0 / 3 + z2 * (2.0 / 7 + z2 * (2.0 / 11 + z2 * (2.0 / 15 + z2 * (2.0 / 19))));
    return s * (2.0 + z * (c + z * a));
}

static inline double ts_log(double u, double v) {
    /* log(u/v) for u, v >= 2**-1021: u/v = 2**k m with m in [sqrt(1/2), sqrt(2)), k from the
       bits of the rounded quotient (subtracting the bits of sqrt(1/2) carries into the
       exponent field exactly when the mantissa is at least sqrt(2)); then w = 2**k v
       exactly and log(u/v) = k ln 2 + 2 atanh(s), s = (u - w)/(u + w), whose numerator is
       exact (Sterbenz), so the result keeps its relative accuracy near u = v. Where u/v is
       not a normal number (only when a caller's min/max do not bound the data, or a range
       is 0 and the values are extreme) the result is NaN, so the chunk goes to numpy
       instead of returning a wrong finite number; w = u/m overflows by one binade at most,
       to an Inf or NaN bit pattern, which makes the result NaN as well. */
    double q = u / v;
    int ok = q >= DBL_MIN_NORMAL && q <= DBL_MAX_FINITE;
    uint64_t b, vb;
    memcpy(&b, &q, 8);
    memcpy(&vb, &v, 8);
    /* t = k + 1024 through an unsigned shift of a value biased by 2**62 = 1024 * 2**52, and
       k as a double from t in the mantissa of 2**52 + t: baseline SSE2 (and AVX2) have no
       64-bit arithmetic shift nor int64 -> double conversion, and emulating them kept the
       compiler's vector loop slower than scalar code */
    uint64_t t = (b - 0x3FE6A09E667F3BCDULL + (1ULL << 62)) >> 52;
    uint64_t wb = vb + ((t - 1024) << 52);
    uint64_t tb = t | 0x4330000000000000ULL;
    double w, kd;
    memcpy(&w, &wb, 8);
    memcpy(&kd, &tb, 8);
    kd -= 0x1p52 + 1024.0;
    double s = (u - w) / (u + w);
    double r = kd * LN2 + ts_atanh2(s, s * s);
    return ok ? r : __builtin_nan("");
}

static inline double ts_inv_binade2(double a, double floor) {
    /* 2 / max(2**floor(log2(a)), floor) for a >= 0, exact (powers of two; no division).
       Twice the inverse, because 2**-E itself is subnormal at E = 1023 (the bits would
       wrap to 0); 2**(1 - E) is normal for every E from -1022 to 1023. The loops keep
       |d| 2**(1 - E), which is 0 or normal (|d| >= 2**(E - 53) where |y| >= 2**E), so
       halving their maximum is exact. */
    uint64_t b;
    memcpy(&b, &a, 8);
    b &= 0x7FF0000000000000ULL;
    double p;
    memcpy(&p, &b, 8);
    p = p > floor ? p : floor;
    memcpy(&b, &p, 8);
    b = 0x7FF0000000000000ULL - b;
    memcpy(&p, &b, 8);
    return p;
}

#define TS_BODY(T)                                                                          \
    double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0, sdd = 0, sad = 0, arel = 0;          \
    double mabs = 0, mrel = 0, w1 = 0, w5 = 0, mulp = 0, ku = 0, kd = 0, ks = 0;           \
    double rxx = 0, ryy = 0, zmax = 0;                                                     \
    _Pragma("omp simd reduction(+:sx,sy,sxx,syy,sxy,sdd,sad,arel,w1,w5,ku,kd,ks,rxx,ryy) \
reduction(max:mabs,mrel,mulp,zmax)")                                                       \
    for (int64_t i = 0; i < n; i++) {                                                      \
        double xv = (double)x[i], yv = (double)y[i];                                       \
        double xs = xv - kx, ys = yv - ky;                                                 \
        sx += xs; sy += ys; sxx += xs * xs; syy += ys * ys;                                \
        rxx += xv * xv; ryy += yv * yv; sxy += xv * yv;                                    \
        double d = xv - yv;                                                                \
        sdd += d * d;                                                                      \
        double ad = d < 0 ? -d : d;                                                        \
        double ay = yv < 0 ? -yv : yv;                                                     \
        sad += ad;                                                                         \
        mabs = ad > mabs ? ad : mabs;                                                      \
        double r = ad / (ay > EPS64 ? ay : 1.0);                                           \
        r = ay > EPS64 ? r : 0.0;                                                          \
        arel += r;                                                                         \
        mrel = r > mrel ? r : mrel;                                                        \
        /* msprobe's ratios: |d| < t |y|, and 0/0 counts as no error */                    \
        w1 += ((ad < 1e-3 * ay) | (ad == 0.0)) ? 1.0 : 0.0;                                \
        w5 += ((ad < 5e-3 * ay) | (ad == 0.0)) ? 1.0 : 0.0;                                \
        double q = ad * ts_inv_binade2(ay, ulp_floor);                                      \
        mulp = q > mulp ? q : mulp;                                                        \
        double u = (xv - xo) * xsc;                                                        \
        u = u > EPS32 ? u : EPS32;                                                         \
        double v = (yv - yo) * ysc;                                                        \
        v = v > EPS32 ? v : EPS32;                                                         \
        /* KL = ks/ku + log1p(kd/ku): kd = sum(v - u) directly, not sum v - sum u, whose   \
           cancellation would cost KL its digits when the runs agree */                     \
        ku += u; kd += v - u;                                                              \
        /* the series on s = (u - v)/(u + v) (u - v exact, Sterbenz) wherever every z of   \
           the block is at most TS_Z_FULL (one division, no bit work); else the block's    \
           sum again with the general form (the loop cannot choose per element) */         \
        double s = (u - v) / (u + v), z = s * s;                                           \
        zmax = z > zmax ? z : zmax;                                                        \
        ks += u * ts_atanh2(s, z);                                                         \
    }                                                                                      \
    if (zmax > TS_Z_FULL) {                                                                \
        ks = 0;                                                                            \
        _Pragma("omp simd reduction(+:ks)")                                                \
        for (int64_t i = 0; i < n; i++) {                                                  \
            double u = ((double)x[i] - xo) * xsc, v = ((double)y[i] - yo) * ysc;           \
            u = u > EPS32 ? u : EPS32;                                                     \
            v = v > EPS32 ? v : EPS32;                                                     \
            ks += u * ts_log(u, v);                                                        \
        }                                                                                  \
    }                                                                                      \
    acc[TS_SX] = sx; acc[TS_SY] = sy; acc[TS_SXX] = sxx; acc[TS_SYY] = syy;                \
    acc[TS_SXY] = sxy; acc[TS_SDD] = sdd; acc[TS_SAD] = sad; acc[TS_ACC_REL] = arel;       \
    acc[TS_MAX_ABS] = mabs; acc[TS_MAX_REL] = mrel; acc[TS_WITHIN1] = w1;                  \
    acc[TS_WITHIN5] = w5; acc[TS_MAX_ULP_Q] = 0.5 * mulp; acc[TS_KL_U] = ku;               \
    acc[TS_KL_D] = kd; acc[TS_KL_S] = ks; acc[TS_SXX_RAW] = rxx; acc[TS_SYY_RAW] = ryy;


static void ts_portable_block_f32(const float *x, const float *y, int64_t n, double kx,
                                  double ky, double xo, double xsc, double yo, double ysc,
                                  double ulp_floor, double *acc) {
    TS_BODY(float)
}

static void ts_portable_block_f64(const double *x, const double *y, int64_t n, double kx,
                                  double ky, double xo, double xsc, double yo, double ysc,
                                  double ulp_floor, double *acc) {
    TS_BODY(double)
}

/* Sums run in blocks of TS_BLOCK elements whose totals are added in float64: the rounding
 * error of a sum then grows with TS_BLOCK / 8 + n / TS_BLOCK additions instead of n / 8
 * (~1150 instead of 131072 for a chunk of 2**20), which is what keeps KL's first-order
 * terms, cancelling between sum(u log(u/v)) and sum(v - u), from costing it 3 digits. */
#define TS_BLOCK 8192

static inline double ts_max(double a, double b) { return a > b ? a : b; }

static inline void ts_add_block(double *acc, const double *b) {
    for (int i = 0; i < TS_NACC; i++) acc[i] = TS_IS_MAX(i) ? ts_max(acc[i], b[i]) : acc[i] + b[i];
}

/* The explicit loops accumulate only the shifted squares sum (x - k)^2 and derive the raw
 * sum x^2 = sum (x - k)^2 + k (2 sum (x - k) + n k) per block (two FMAs per vector fewer).
 * That is exact to a few roundings of its largest term, so it is kept only while those terms
 * are within a factor 64 of the result (|k| up to ~8 rms: always for k = 0, as after a
 * ReLU); otherwise (the block's first element an outlier) the raw sum is taken again over
 * the block, which is still in cache. The bound keeps the derived sum within ~1e-12 of the
 * directly accumulated one. */
#define TS_RAW_SQ(NAME, CT, ATTR)                                                          \
    ATTR static double NAME(const CT *p, int64_t n) {                                     \
        double q = 0;                                                                     \
        _Pragma("omp simd reduction(+:q)")                                                \
        for (int64_t i = 0; i < n; i++) q += (double)p[i] * (double)p[i];                 \
        return q;                                                                         \
    }                                                                                     \
    ATTR static inline double NAME##_derived(const CT *p, int64_t n, double k, double s,  \
                                             double ss) {                                 \
        double raw = ss + k * (2.0 * s + (double)n * k);                                  \
        double big = (k < 0 ? -k : k) * (2.0 * (s < 0 ? -s : s) + (double)n * (k < 0 ? -k : k)); \
        if (big <= 64.0 * raw) {                                                          \
            TS_COUNT(0);                                                                  \
            return raw;                                                                   \
        }                                                                                 \
        TS_COUNT(1);                                                                      \
        return NAME(p, n);                                                                \
    }

/* Likewise the AVX2 loop derives sum x*y = (sum x^2 + sum y^2 - sum (x - y)^2) / 2 per block
 * from the sums it has anyway (one FMA per vector fewer). Its error is a few roundings of
 * sum x^2 + sum y^2 (the raw sums within ~1e-12 of the direct ones, see above), so it is kept
 * only while |sum x*y| is at least 1/16 of that (a cosine above ~1/8: the common case, runs
 * that agree); otherwise sum x*y is taken directly over the block, still in cache. Within the
 * bound the derived sum is within ~2e-11 of the direct one, relatively. */
#define TS_XY_SUM(NAME, CT, ATTR)                                                         \
    ATTR static double NAME##_derived(const CT *x, const CT *y, int64_t n, double rxx,    \
                                      double ryy, double sdd) {                           \
        double r = rxx + ryy, xy = 0.5 * (r - sdd);                                       \
        if (16.0 * (xy < 0 ? -xy : xy) >= r) {                                            \
            TS_COUNT(4);                                                                  \
            return xy;                                                                    \
        }                                                                                 \
        TS_COUNT(5);                                                                      \
        double q = 0;                                                                     \
        _Pragma("omp simd reduction(+:q)")                                                \
        for (int64_t i = 0; i < n; i++) q += (double)x[i] * (double)y[i];                 \
        return q;                                                                         \
    }

#define TS_BLOCKED(NAME, BLOCK, CT, ATTR)                                                   \
    ATTR static void NAME(const CT *x, const CT *y, int64_t n, double kx, double ky,       \
                          double xo, double xsc, double yo, double ysc, double ulp_floor,  \
                          double *acc) {                                                   \
        double b[TS_NACC];                                                                 \
        for (int i = 0; i < TS_NACC; i++) acc[i] = 0.0;                                    \
        for (int64_t s = 0; s < n; s += TS_BLOCK) {                                        \
            int64_t m = n - s < TS_BLOCK ? n - s : TS_BLOCK;                               \
            BLOCK(x + s, y + s, m, kx, ky, xo, xsc, yo, ysc, ulp_floor, b);                \
            ts_add_block(acc, b);                                                          \
        }                                                                                  \
    }

TS_BLOCKED(ts_portable_f32, ts_portable_block_f32, float, )
TS_BLOCKED(ts_portable_f64, ts_portable_block_f64, double, )

/* out[i] = log(u[i] / v[i]) as the portable pass computes it for KL (u, v >= 2**-1021), for
   tests; _avx2 and _avx512 below give their loops' values */
void ts_log_ratio_portable(const double *u, const double *v, int64_t n, double *out) {
    for (int64_t i = 0; i < n; i++) {
        double s = (u[i] - v[i]) / (u[i] + v[i]), z = s * s;
        out[i] = z <= TS_Z_FULL ? ts_atanh2(s, z) : ts_log(u[i], v[i]);
    }
}

#ifdef TS_X86
/* ---------------------------------------------------------------- AVX2 + FMA, 4 lanes */

TS_RAW_SQ(ts_avx2_sq_f32, float, TS_AVX2)
TS_RAW_SQ(ts_avx2_sq_f64, double, TS_AVX2)
TS_XY_SUM(ts_avx2_xy_f32, float, TS_AVX2)
TS_XY_SUM(ts_avx2_xy_f64, double, TS_AVX2)
TS_RAW_SQ(ts_avx512_sq_f32, float, TS_AVX512)
TS_RAW_SQ(ts_avx512_sq_f64, double, TS_AVX512)

/* the same series as ts_atanh8 (below) and its two shorter forms, 4 lanes at a time */
TS_AVX2 static inline __m256d ts_atanh4(__m256d s, __m256d z) {
    __m256d z2 = _mm256_mul_pd(z, z);
    __m256d a = _mm256_set1_pd(2.0 / 17);
    a = _mm256_fmadd_pd(a, z2, _mm256_set1_pd(2.0 / 13));
    a = _mm256_fmadd_pd(a, z2, _mm256_set1_pd(2.0 / 9));
    a = _mm256_fmadd_pd(a, z2, _mm256_set1_pd(2.0 / 5));
    a = _mm256_fmadd_pd(a, z2, _mm256_set1_pd(2.0));
    __m256d c = _mm256_set1_pd(2.0 / 19);
    c = _mm256_fmadd_pd(c, z2, _mm256_set1_pd(2.0 / 15));
    c = _mm256_fmadd_pd(c, z2, _mm256_set1_pd(2.0 / 11));
    c = _mm256_fmadd_pd(c, z2, _mm256_set1_pd(2.0 / 7));
    c = _mm256_fmadd_pd(c, z2, _mm256_set1_pd(2.0 / 3));
    return _mm256_mul_pd(s, _mm256_fmadd_pd(c, z, a));
}

TS_AVX2 static inline __m256d ts_atanh4_short(__m256d s, __m256d z) {
    __m256d p = _mm256_set1_pd(2.0 / 7);
    p = _mm256_fmadd_pd(p, z, _mm256_set1_pd(2.0 / 5));
    p = _mm256_fmadd_pd(p, z, _mm256_set1_pd(2.0 / 3));
    p = _mm256_fmadd_pd(p, z, _mm256_set1_pd(2.0));
    return _mm256_mul_pd(s, p);
}

TS_AVX2 static inline __m256d ts_atanh4_shorter(__m256d s, __m256d z) {
    __m256d p = _mm256_set1_pd(2.0 / 5);
    p = _mm256_fmadd_pd(p, z, _mm256_set1_pd(2.0 / 3));
    p = _mm256_fmadd_pd(p, z, _mm256_set1_pd(2.0));
    return _mm256_mul_pd(s, p);
}

/* ts_log for 4 lanes, with ts_log's shift and conversion (AVX2 has no 64-bit arithmetic
   shift nor int64 -> double conversion): k + 1024 from an unsigned shift of the quotient's
   bits biased by 2**62, k as a double from the mantissa of 2**52 + (k + 1024) */
TS_AVX2 static inline __m256d ts_log_any4(__m256d u, __m256d v) {
    __m256d q = _mm256_div_pd(u, v);
    __m256d ok = _mm256_and_pd(_mm256_cmp_pd(q, _mm256_set1_pd(DBL_MIN_NORMAL), _CMP_GE_OQ),
                               _mm256_cmp_pd(q, _mm256_set1_pd(DBL_MAX_FINITE), _CMP_LE_OQ));
    __m256i t = _mm256_srli_epi64(
        _mm256_add_epi64(_mm256_castpd_si256(q),
                         _mm256_set1_epi64x((long long)((1ULL << 62) - 0x3FE6A09E667F3BCDULL))),
        52);
    __m256i k52 = _mm256_slli_epi64(_mm256_sub_epi64(t, _mm256_set1_epi64x(1024)), 52);
    __m256d w = _mm256_castsi256_pd(_mm256_add_epi64(_mm256_castpd_si256(v), k52));
    __m256d kd = _mm256_sub_pd(
        _mm256_castsi256_pd(_mm256_or_si256(t, _mm256_set1_epi64x(0x4330000000000000LL))),
        _mm256_set1_pd(0x1p52 + 1024.0));
    __m256d s = _mm256_div_pd(_mm256_sub_pd(u, w), _mm256_add_pd(u, w));
    __m256d r = _mm256_fmadd_pd(kd, _mm256_set1_pd(LN2), ts_atanh4(s, _mm256_mul_pd(s, s)));
    return _mm256_blendv_pd(_mm256_set1_pd(__builtin_nan("")), r, ok);
}

/* ts_log_ratio8's choice of form, per vector of 4, from s = (u - v)/(u + v) and z = s^2 */
TS_AVX2 static inline __m256d ts_log_select4(__m256d u, __m256d v, __m256d s, __m256d z) {
    if (!_mm256_movemask_pd(_mm256_cmp_pd(z, _mm256_set1_pd(1e-6), _CMP_GT_OQ))) {
        return ts_atanh4_shorter(s, z);
    }
    if (!_mm256_movemask_pd(_mm256_cmp_pd(z, _mm256_set1_pd(1e-4), _CMP_GT_OQ))) {
        return ts_atanh4_short(s, z);
    }
    if (!_mm256_movemask_pd(_mm256_cmp_pd(z, _mm256_set1_pd(0.1716 * 0.1716), _CMP_GT_OQ))) {
        return ts_atanh4(s, z);
    }
    return ts_log_any4(u, v);
}

TS_AVX2 static inline __m256d ts_log_ratio4(__m256d u, __m256d v, __m256d u_minus_v) {
    __m256d s = _mm256_div_pd(u_minus_v, _mm256_add_pd(u, v));
    return ts_log_select4(u, v, s, _mm256_mul_pd(s, s));
}

TS_AVX2 static inline double ts_hadd4(__m256d a) {
    __m128d s = _mm_add_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd(a, 1));
    return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}

TS_AVX2 static inline double ts_hmax4(__m256d a) {
    __m128d m = _mm_max_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd(a, 1));
    return _mm_cvtsd_f64(_mm_max_sd(m, _mm_unpackhi_pd(m, m)));
}

TS_AVX2 static inline int64_t ts_hadd4_i64(__m256i a) {
    int64_t v[4];
    _mm256_storeu_si256((__m256i *)v, a);
    return v[0] + v[1] + v[2] + v[3];
}

#define TS_LOAD4_F32(p) _mm256_cvtps_pd(_mm_loadu_ps(p))
#define TS_LOAD4_F64(p) _mm256_loadu_pd(p)

/* TS_AVX512_BODY's steps on 4 lanes, in two passes over each run of TS_SUB elements (which
   stays in L1): the moments and KL, then the error metrics. AVX2 has 16 vector registers
   and the pass's 15 accumulators (17 before the raw squares were derived) with its
   temporaries do not fit in them: in one loop the compiler kept half of them on the stack, a store and a reload on every iteration (~40 % of the loop's time on
   Zen 5). Each pass is its own function whose accumulators are locals (loaded and stored
   once per run), so they stay in registers; the second pass reloads from L1. Masks are
   vectors, |.| clears the sign bit, the two "within" counts share one register (32-bit
   counters, within 1e-3 in the low half of each 64-bit lane, 5e-3 in the high half). */
#define TS_SUB 1024

typedef struct {
    __m256d sx, sy, sxx, syy, ku, kd, ks;
} ts_mom4;

typedef struct {
    __m256d sdd, sad, mabs, arel, mrel, mulp, mulp_exact;
    __m256i w;
} ts_err4;

/* the largest |d| 2**(1 - E) of the error pass's integer-add lanes: below 2**-900 it can
   only come from lanes with d = 0 (see ts_avx2_err_f64), whose true value is 0 */
static inline double ts_ulp_fast(double m) { return m < 0x1p-900 ? 0.0 : m; }

#define TS_STORE_NONE(p, X, Y) ((void)0)
#define TS_STORE_BUF(p, X, Y) (_mm256_store_pd((p), (X)), _mm256_store_pd((p) + TS_SUB, (Y)))
/* ks + u log(u/v) from s = (u - v)/(u + v) and z = s^2, in one form for a whole run (the
   mom passes below); the two short series multiply u s while the polynomial is evaluated,
   which shortens the chain after the division */
TS_AVX2 static inline __m256d ts_kl_shorter4(__m256d ks, __m256d u, __m256d s, __m256d z) {
    __m256d p = _mm256_fmadd_pd(z, _mm256_set1_pd(2.0 / 5), _mm256_set1_pd(2.0 / 3));
    p = _mm256_fmadd_pd(p, z, _mm256_set1_pd(2.0));
    return _mm256_fmadd_pd(_mm256_mul_pd(u, s), p, ks);
}

TS_AVX2 static inline __m256d ts_kl_short4(__m256d ks, __m256d u, __m256d s, __m256d z) {
    __m256d p = _mm256_fmadd_pd(z, _mm256_set1_pd(2.0 / 7), _mm256_set1_pd(2.0 / 5));
    p = _mm256_fmadd_pd(p, z, _mm256_set1_pd(2.0 / 3));
    p = _mm256_fmadd_pd(p, z, _mm256_set1_pd(2.0));
    return _mm256_fmadd_pd(_mm256_mul_pd(u, s), p, ks);
}

#define TS_FORM_SHORTER(ks, u, v, s, z) ts_kl_shorter4((ks), (u), (s), (z))
#define TS_FORM_SHORT(ks, u, v, s, z) ts_kl_short4((ks), (u), (s), (z))
#define TS_FORM_FULL(ks, u, v, s, z) _mm256_fmadd_pd((u), ts_atanh4((s), (z)), (ks))
#define TS_FORM_SELECT(ks, u, v, s, z) \
    _mm256_fmadd_pd((u), ts_log_select4((u), (v), (s), (z)), (ks))

/* The moments and KL of one run with one form of log(u/v) for every vector (no branch per
   vector: choosing the form per vector cost ~1 of ~9 cycles per 4 elements on Zen 5). The
   run's sum u log(u/v) is returned, not added, and *zhi gets an upper bound of the run's
   largest z (the maximum of its high 32-bit words, an integer operation on any vector
   pipe): the caller keeps the sum when the form is exact for that bound, else recomputes
   it (ts_avx2_kl_redo). */
#define TS_AVX2_MOM(T, CT, LOAD, STORE, FORM, NAME)                                         \
    TS_AVX2 __attribute__((noinline)) static __m256d NAME(const CT *x, const CT *y,          \
        int64_t n, const double *c, ts_mom4 *a, double *buf, uint32_t *zhi) {              \
        __m256d sx = a->sx, sy = a->sy, sxx = a->sxx, syy = a->syy;                       \
        __m256d ku = a->ku, kd = a->kd, ks = _mm256_setzero_pd();                         \
        __m256i zh = _mm256_setzero_si256();                                              \
        const __m256d KX = _mm256_set1_pd(c[0]), KY = _mm256_set1_pd(c[1]);               \
        const __m256d CX = _mm256_set1_pd((c[0] - c[2]) * c[3]), XSC = _mm256_set1_pd(c[3]); \
        const __m256d CY = _mm256_set1_pd((c[1] - c[4]) * c[5]), YSC = _mm256_set1_pd(c[5]); \
        const __m256d E32 = _mm256_set1_pd(EPS32);                                        \
        for (int64_t i = 0; i < n; i += 4) {                                              \
            _mm_prefetch((const char *)(x + i) + 4096, _MM_HINT_T0);                       \
            _mm_prefetch((const char *)(y + i) + 4096, _MM_HINT_T0);                       \
            __m256d X = LOAD(x + i), Y = LOAD(y + i);                                      \
            STORE(buf + i, X, Y);                                                          \
            __m256d xs = _mm256_sub_pd(X, KX), ys = _mm256_sub_pd(Y, KY);                  \
            sx = _mm256_add_pd(sx, xs);                                                    \
            sy = _mm256_add_pd(sy, ys);                                                    \
            sxx = _mm256_fmadd_pd(xs, xs, sxx);                                            \
            syy = _mm256_fmadd_pd(ys, ys, syy);                                            \
            __m256d u = _mm256_max_pd(_mm256_fmadd_pd(xs, XSC, CX), E32);                  \
            __m256d v = _mm256_max_pd(_mm256_fmadd_pd(ys, YSC, CY), E32);                  \
            ku = _mm256_add_pd(ku, u);                                                     \
            __m256d umv = _mm256_sub_pd(u, v);                                             \
            kd = _mm256_sub_pd(kd, umv);                                                   \
            __m256d s = _mm256_div_pd(umv, _mm256_add_pd(u, v)), z = _mm256_mul_pd(s, s);  \
            zh = _mm256_max_epu32(zh, _mm256_castpd_si256(z));                             \
            ks = FORM(ks, u, v, s, z);                                                     \
        }                                                                                  \
        a->sx = sx; a->sy = sy; a->sxx = sxx; a->syy = syy;                                \
        a->ku = ku; a->kd = kd;                                                            \
        uint32_t w[8];                                                                     \
        _mm256_storeu_si256((__m256i *)w, zh);                                             \
        uint32_t hi = w[1] > w[3] ? w[1] : w[3], hj = w[5] > w[7] ? w[5] : w[7];           \
        *zhi = hi > hj ? hi : hj;                                                          \
        return ks;                                                                         \
    }

/* A run whose two sides are equal bit for bit (a tensor before the first divergence, data
   movement, weights nobody changed): d = 0, so every error term is an exact zero and every
   element is within both tolerances; the error pass is skipped. Under the same shifts and
   KL normalisation on both sides, u = v as well, so sum(v - u) and sum u log(u/v) gain exact
   zeros and only the moments and sum u are left (ts_avx2_mom_same). Both sum with the same
   operations in the same order as the full passes, so the accumulators get the same bits. */
#define TS_AVX2_EQUAL(T, CT, LOAD, VEC, CMPEQ)                                             \
    TS_AVX2 __attribute__((noinline)) static int ts_avx2_same_##T(const CT *x, const CT *y, \
                                                                   int64_t n) {            \
        const int64_t step = 32 / sizeof(CT);                                              \
        int64_t i = 0;                                                                     \
        for (; i + step <= n; i += step) {                                                 \
            __m256i a = _mm256_loadu_si256((const __m256i *)(x + i));                       \
            __m256i b = _mm256_loadu_si256((const __m256i *)(y + i));                       \
            if (_mm256_movemask_epi8(CMPEQ(a, b)) != -1) return 0;                          \
        }                                                                                  \
        return memcmp(x + i, y + i, (size_t)(n - i) * sizeof(CT)) == 0;                    \
    }                                                                                      \
    TS_AVX2 __attribute__((noinline)) static void ts_avx2_mom_same_##T(                     \
        const CT *x, int64_t n, const double *c, ts_mom4 *a) {                              \
        __m256d sx = a->sx, sy = a->sy, sxx = a->sxx, syy = a->syy;                       \
        __m256d ku = a->ku;                                                                \
        const __m256d KX = _mm256_set1_pd(c[0]);                                           \
        const __m256d CX = _mm256_set1_pd((c[0] - c[2]) * c[3]), XSC = _mm256_set1_pd(c[3]); \
        const __m256d E32 = _mm256_set1_pd(EPS32);                                        \
        for (int64_t i = 0; i < n; i += 4) {                                              \
            _mm_prefetch((const char *)(x + i) + 4096, _MM_HINT_T0);                       \
            __m256d X = LOAD(x + i);                                                       \
            __m256d xs = _mm256_sub_pd(X, KX);                                             \
            sx = _mm256_add_pd(sx, xs);                                                    \
            sy = _mm256_add_pd(sy, xs);                                                    \
            sxx = _mm256_fmadd_pd(xs, xs, sxx);                                            \
            syy = _mm256_fmadd_pd(xs, xs, syy);                                            \
            ku = _mm256_add_pd(ku, _mm256_max_pd(_mm256_fmadd_pd(xs, XSC, CX), E32));      \
        }                                                                                  \
        a->sx = sx; a->sy = sy; a->sxx = sxx; a->syy = syy; a->ku = ku;                    \
    }

#define TS_AVX2_PASSES(T, CT, LOAD, STORE)                                                  \
    TS_AVX2_MOM(T, CT, LOAD, STORE, TS_FORM_SHORTER, ts_avx2_mom_##T##_0)                   \
    TS_AVX2_MOM(T, CT, LOAD, STORE, TS_FORM_SHORT, ts_avx2_mom_##T##_1)                     \
    TS_AVX2_MOM(T, CT, LOAD, STORE, TS_FORM_FULL, ts_avx2_mom_##T##_2)                      \
    TS_AVX2_MOM(T, CT, LOAD, STORE, TS_FORM_SELECT, ts_avx2_mom_##T##_3)                    \
    TS_AVX2 __attribute__((noinline)) static void ts_avx2_err_##T(                          \
        const CT *x, const CT *y, int64_t n, double ulp_floor, ts_err4 *a) {               \
        __m256d sdd = a->sdd, sad = a->sad, mabs = a->mabs, arel = a->arel;                \
        __m256d mrel = a->mrel, mulp = a->mulp, mulp_exact = a->mulp_exact;                \
        __m256i w = a->w;                                                                  \
        const __m256d ABS = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFFLL)); \
        const __m256d FLOOR = _mm256_set1_pd(ulp_floor);                                   \
        const __m256d T1 = _mm256_set1_pd(1e-3), T5 = _mm256_set1_pd(5e-3);               \
        const __m256i E64B = _mm256_set1_epi64x(0x3CB0000000000000LL); /* bits of EPS64 */ \
        const __m256i EXPMASK = _mm256_set1_epi64x(0x7FF0000000000000LL);                 \
        const __m256i INVC = _mm256_set1_epi64x(0x7FF0000000000000LL);                    \
        const __m256i QC = _mm256_set1_epi64x(0x4000000000000000LL);                      \
        const int floor_small = ulp_floor <= EPS64;                                        \
        for (int64_t i = 0; i < n; i += 4) {                                              \
            __m256d X = LOAD(x + i), Y = LOAD(y + i);                                      \
            __m256d d = _mm256_sub_pd(X, Y);                                               \
            sdd = _mm256_fmadd_pd(d, d, sdd);                                              \
            __m256d ad = _mm256_and_pd(d, ABS), ay = _mm256_and_pd(Y, ABS);                \
            __m256i adb = _mm256_castpd_si256(ad), ayb = _mm256_castpd_si256(ay);          \
            sad = _mm256_add_pd(sad, ad);                                                  \
            mabs = _mm256_max_pd(mabs, ad);                                                \
            /* the comparisons of values >= 0 compare their bits as int64 (the same order  \
               for finite values; NaN and Inf make the sums non-finite, and the caller     \
               recomputes such a chunk): vpcmpgtq runs on the shuffle port, beside the two \
               FP ports this loop is bound by */                                           \
            __m256i big = _mm256_cmpgt_epi64(ayb, E64B);                                   \
            __m256d r = _mm256_div_pd(ad, ay);                                             \
            /* msprobe's ratios as the reference defines them: |d| < t|y| (the product    \
               rounded once), and x = y always (0 vs 0 included; t|y| is 0 only where    \
               |y| <= eps) */                                                              \
            __m256i in1 = _mm256_cmpgt_epi64(_mm256_castpd_si256(_mm256_mul_pd(ay, T1)), adb); \
            __m256i in5 = _mm256_cmpgt_epi64(_mm256_castpd_si256(_mm256_mul_pd(ay, T5)), adb); \
            /* |d| 2**(1 - floor(log2 max(|y|, floor))): exponent bits, exact, normal for  \
               every exponent (2**-E itself is subnormal at E = 1023); halved at the end */ \
            __m256i e = _mm256_and_si256(ayb, EXPMASK);                                    \
            if (__builtin_expect(_mm256_movemask_pd(_mm256_castsi256_pd(big)) == 0xF &&    \
                                 floor_small, 1)) {                                        \
                /* every |y| > eps >= floor: no lane to mask, no floor to apply; |d| is 0  \
                   or at least 2**(E - 106), normal, so the product by 2**(1 - E) is an   \
                   integer add to its exponent field (no overflow while d*d is finite);   \
                   a lane with d = 0 gets a value below 2**-969 (or < 0) instead of 0,    \
                   where any other lane gets at least 2**-105: ts_ulp_fast zeroes it */    \
                mulp = _mm256_max_pd(mulp, _mm256_castsi256_pd(                            \
                                               _mm256_add_epi64(adb, _mm256_sub_epi64(QC, e)))); \
                arel = _mm256_add_pd(arel, r);                                             \
                mrel = _mm256_max_pd(mrel, r);                                             \
            } else { /* exact products, kept apart from the lanes above */                \
                __m256d rb = _mm256_and_pd(_mm256_castsi256_pd(big), r);                   \
                arel = _mm256_add_pd(arel, rb);                                            \
                mrel = _mm256_max_pd(mrel, rb);                                            \
                __m256i z = _mm256_castpd_si256(                                           \
                    _mm256_cmp_pd(ad, _mm256_setzero_pd(), _CMP_EQ_OQ));                   \
                in1 = _mm256_or_si256(in1, z);                                             \
                in5 = _mm256_or_si256(in5, z);                                             \
                __m256d ef = _mm256_max_pd(_mm256_castsi256_pd(e), FLOOR);                 \
                __m256d inv = _mm256_castsi256_pd(                                         \
                    _mm256_sub_epi64(INVC, _mm256_castpd_si256(ef)));                      \
                mulp_exact = _mm256_max_pd(mulp_exact, _mm256_mul_pd(ad, inv));            \
            }                                                                              \
            w = _mm256_sub_epi32(w, _mm256_blend_epi32(in1, in5, 0xAA));                   \
        }                                                                                  \
        a->sdd = sdd; a->sad = sad; a->mabs = mabs; a->arel = arel; a->mrel = mrel;        \
        a->mulp = mulp; a->mulp_exact = mulp_exact; a->w = w;                              \
    }

/* The least form of log(u/v) (0 shorter, 1 short, 2 full series, 3 chosen per vector) that
   is exact for every z of a run whose z have high words at most zhi (z >= 0: the bits order
   as the values; NaN needs 3) */
static inline int ts_form_needed(uint32_t zhi) {
    uint64_t b = ((uint64_t)zhi << 32) | 0xFFFFFFFFu;
    double z;
    memcpy(&z, &b, 8);
    return z <= 1e-6 ? 0 : z <= 1e-4 ? 1 : z <= TS_Z_FULL ? 2 : 3;
}

/* a run's sum u log(u/v) again with the form chosen per vector, from the float64 values */
TS_AVX2 __attribute__((noinline)) static __m256d ts_avx2_kl_redo(const double *x,
        const double *y, int64_t n, const double *c) {
    __m256d ks = _mm256_setzero_pd();
    const __m256d KX = _mm256_set1_pd(c[0]), KY = _mm256_set1_pd(c[1]);
    const __m256d CX = _mm256_set1_pd((c[0] - c[2]) * c[3]), XSC = _mm256_set1_pd(c[3]);
    const __m256d CY = _mm256_set1_pd((c[1] - c[4]) * c[5]), YSC = _mm256_set1_pd(c[5]);
    const __m256d E32 = _mm256_set1_pd(EPS32);
    for (int64_t i = 0; i < n; i += 4) {
        __m256d xs = _mm256_sub_pd(_mm256_loadu_pd(x + i), KX);
        __m256d ys = _mm256_sub_pd(_mm256_loadu_pd(y + i), KY);
        __m256d u = _mm256_max_pd(_mm256_fmadd_pd(xs, XSC, CX), E32);
        __m256d v = _mm256_max_pd(_mm256_fmadd_pd(ys, YSC, CY), E32);
        ks = _mm256_fmadd_pd(u, ts_log_ratio4(u, v, _mm256_sub_pd(u, v)), ks);
    }
    return ks;
}

TS_AVX2_EQUAL(f32, float, TS_LOAD4_F32, __m256i, _mm256_cmpeq_epi32)
TS_AVX2_EQUAL(f64, double, TS_LOAD4_F64, __m256i, _mm256_cmpeq_epi64)
TS_AVX2_PASSES(f32, float, TS_LOAD4_F32, TS_STORE_BUF)
/* the f32 error pass reads the mom pass's float64 copy of the run (no second conversion) */
#define TS_ERR_F32(x, y, n, f, e, buf) ts_avx2_err_f64((buf), (buf) + TS_SUB, (n), (f), (e))
#define TS_X64_F32(p, buf) (buf)
#define TS_Y64_F32(p, buf) ((buf) + TS_SUB)
#define TS_X64_F64(p, buf) (p)
#define TS_Y64_F64(p, buf) (p)
#define TS_ERR_F64(x, y, n, f, e, buf) ts_avx2_err_f64((x), (y), (n), (f), (e))
TS_AVX2_PASSES(f64, double, TS_LOAD4_F64, TS_STORE_NONE)

#define TS_AVX2_BODY(T, ERR, X64, Y64)                                                         \
    const __m256d zero = _mm256_setzero_pd();                                              \
    ts_mom4 m = {zero, zero, zero, zero, zero, zero, zero};                                \
    ts_err4 e = {zero, zero, zero, zero, zero, zero, zero, _mm256_setzero_si256()};              \
    const double c[6] = {kx, ky, xo, xsc, yo, ysc};                                       \
    double buf[2 * TS_SUB] __attribute__((aligned(32)));                                   \
    const int same_map = kx == ky && xo == yo && xsc == ysc;                               \
    int64_t n4 = n & ~(int64_t)3;                                                          \
    for (int64_t s = 0; s < n4; s += TS_SUB) {                                             \
        int64_t len = n4 - s < TS_SUB ? n4 - s : TS_SUB;                                   \
        int same = ts_avx2_same_##T(x + s, y + s, len);                                    \
        if (same && same_map) {                                                            \
            ts_avx2_mom_same_##T(x + s, len, c, &m);                                       \
            e.w = _mm256_add_epi32(e.w, _mm256_set1_epi32((int)(len / 4)));                \
            *level = 0;                                                                    \
            TS_COUNT(2);                                                                   \
            continue;                                                                      \
        }                                                                                  \
        uint32_t zhi;                                                                      \
        __m256d ks;                                                                        \
        switch (*level) {                                                                  \
        case 0: ks = ts_avx2_mom_##T##_0(x + s, y + s, len, c, &m, buf, &zhi); break;      \
        case 1: ks = ts_avx2_mom_##T##_1(x + s, y + s, len, c, &m, buf, &zhi); break;      \
        case 2: ks = ts_avx2_mom_##T##_2(x + s, y + s, len, c, &m, buf, &zhi); break;      \
        default: ks = ts_avx2_mom_##T##_3(x + s, y + s, len, c, &m, buf, &zhi); break;     \
        }                                                                                  \
        int need = ts_form_needed(zhi);                                                    \
        if (need > *level) {                                                               \
            ks = ts_avx2_kl_redo(X64(x + s, buf), Y64(y + s, buf), len, c);                \
            TS_COUNT(3);                                                                   \
        }                                                                                  \
        *level = need;                                                                     \
        m.ks = _mm256_add_pd(m.ks, ks);                                                    \
        if (same) { /* equal values, different shifts or ranges: KL is not 0, errors are */ \
            e.w = _mm256_add_epi32(e.w, _mm256_set1_epi32((int)(len / 4)));                \
            TS_COUNT(2);                                                                   \
        } else {                                                                           \
            ERR(x + s, y + s, len, ulp_floor, &e, buf);                                   \
        }                                                                                  \
    }                                                                                      \
    double tail[TS_NACC] = {0};                                                            \
    if (n > n4) {                                                                          \
        ts_portable_block_##T(x + n4, y + n4, n - n4, kx, ky, xo, xsc, yo, ysc, ulp_floor, \
                              tail);                                                       \
    }                                                                                      \
    int32_t wc[8];                                                                         \
    _mm256_storeu_si256((__m256i *)wc, e.w);                                               \
    acc[TS_SX] = ts_hadd4(m.sx) + tail[TS_SX];                                             \
    acc[TS_SY] = ts_hadd4(m.sy) + tail[TS_SY];                                             \
    acc[TS_SXX] = ts_hadd4(m.sxx) + tail[TS_SXX];                                          \
    acc[TS_SYY] = ts_hadd4(m.syy) + tail[TS_SYY];                                          \
    acc[TS_SDD] = ts_hadd4(e.sdd) + tail[TS_SDD];                                          \
    acc[TS_SAD] = ts_hadd4(e.sad) + tail[TS_SAD];                                          \
    acc[TS_ACC_REL] = ts_hadd4(e.arel) + tail[TS_ACC_REL];                                 \
    acc[TS_MAX_ABS] = ts_max(ts_hmax4(e.mabs), tail[TS_MAX_ABS]);                          \
    acc[TS_MAX_REL] = ts_max(ts_hmax4(e.mrel), tail[TS_MAX_REL]);                          \
    acc[TS_WITHIN1] = (double)((int64_t)wc[0] + wc[2] + wc[4] + wc[6]) + tail[TS_WITHIN1]; \
    acc[TS_WITHIN5] = (double)((int64_t)wc[1] + wc[3] + wc[5] + wc[7]) + tail[TS_WITHIN5]; \
    acc[TS_MAX_ULP_Q] = ts_max(0.5 * ts_max(ts_ulp_fast(ts_hmax4(e.mulp)),                \
                                            ts_hmax4(e.mulp_exact)), tail[TS_MAX_ULP_Q]);  \
    acc[TS_KL_U] = ts_hadd4(m.ku) + tail[TS_KL_U];                                         \
    acc[TS_KL_D] = ts_hadd4(m.kd) + tail[TS_KL_D];                                         \
    acc[TS_KL_S] = ts_hadd4(m.ks) + tail[TS_KL_S];                                         \
    double rxx = ts_avx2_sq_##T##_derived(x, n4, kx, ts_hadd4(m.sx), ts_hadd4(m.sxx));     \
    double ryy = ts_avx2_sq_##T##_derived(y, n4, ky, ts_hadd4(m.sy), ts_hadd4(m.syy));     \
    acc[TS_SXX_RAW] = rxx + tail[TS_SXX_RAW];                                              \
    acc[TS_SYY_RAW] = ryy + tail[TS_SYY_RAW];                                              \
    acc[TS_SXY] = ts_avx2_xy_##T##_derived(x, y, n4, rxx, ryy, ts_hadd4(e.sdd)) + tail[TS_SXY];

TS_AVX2 static void ts_avx2_block_f32(const float *x, const float *y, int64_t n, double kx,
                                      double ky, double xo, double xsc, double yo, double ysc,
                                      double ulp_floor, double *acc, int *level) {
    TS_AVX2_BODY(f32, TS_ERR_F32, TS_X64_F32, TS_Y64_F32)
}

TS_AVX2 static void ts_avx2_block_f64(const double *x, const double *y, int64_t n, double kx,
                                      double ky, double xo, double xsc, double yo, double ysc,
                                      double ulp_floor, double *acc, int *level) {
    TS_AVX2_BODY(f64, TS_ERR_F64, TS_X64_F64, TS_Y64_F64)
}

/* TS_BLOCKED with the form of log(u/v) carried from run to run through the whole call (it
   starts at the shortest in each call, so a chunk's result does not depend on the others) */
#define TS_BLOCKED_AVX2(NAME, BLOCK, CT)                                                    \
    TS_AVX2 static void NAME(const CT *x, const CT *y, int64_t n, double kx, double ky,    \
                             double xo, double xsc, double yo, double ysc, double ulp_floor, \
                             double *acc) {                                                \
        double b[18];                                                                      \
        int level = 0;                                                                     \
        for (int i = 0; i < 18; i++) acc[i] = 0.0;                                         \
        for (int64_t s = 0; s < n; s += TS_BLOCK) {                                        \
            int64_t m = n - s < TS_BLOCK ? n - s : TS_BLOCK;                               \
            BLOCK(x + s, y + s, m, kx, ky, xo, xsc, yo, ysc, ulp_floor, b, &level);        \
            ts_add_block(acc, b);                                                          \
        }                                                                                  \
    }

TS_BLOCKED_AVX2(ts_avx2_f32, ts_avx2_block_f32, float)
TS_BLOCKED_AVX2(ts_avx2_f64, ts_avx2_block_f64, double)

TS_AVX2 void ts_log_ratio_avx2(const double *u, const double *v, int64_t n, double *out) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256d u4 = _mm256_loadu_pd(u + i), v4 = _mm256_loadu_pd(v + i);
        _mm256_storeu_pd(out + i, ts_log_ratio4(u4, v4, _mm256_sub_pd(u4, v4)));
    }
    for (; i < n; i++) out[i] = ts_log(u[i], v[i]);
}

/* ------------------------------------------------------------- AVX-512 F + DQ, 8 lanes */

/* 2 atanh(s) = s P(z), z = s^2, P = 2 (1 + z/3 + ... + z^9/19): |s| <= 0.1716 (first omitted
   term below 2.5e-17 relatively); even and odd halves in two chains for a short latency */
TS_AVX512 static inline __m512d ts_atanh8(__m512d s, __m512d z) {
    __m512d z2 = _mm512_mul_pd(z, z);
    __m512d a = _mm512_set1_pd(2.0 / 17);
    a = _mm512_fmadd_pd(a, z2, _mm512_set1_pd(2.0 / 13));
    a = _mm512_fmadd_pd(a, z2, _mm512_set1_pd(2.0 / 9));
    a = _mm512_fmadd_pd(a, z2, _mm512_set1_pd(2.0 / 5));
    a = _mm512_fmadd_pd(a, z2, _mm512_set1_pd(2.0));
    __m512d c = _mm512_set1_pd(2.0 / 19);
    c = _mm512_fmadd_pd(c, z2, _mm512_set1_pd(2.0 / 15));
    c = _mm512_fmadd_pd(c, z2, _mm512_set1_pd(2.0 / 11));
    c = _mm512_fmadd_pd(c, z2, _mm512_set1_pd(2.0 / 7));
    c = _mm512_fmadd_pd(c, z2, _mm512_set1_pd(2.0 / 3));
    return _mm512_mul_pd(s, _mm512_fmadd_pd(c, z, a));
}

/* the same series to z^3, for z <= 1e-4 (first omitted term below 1.2e-17 relatively) */
TS_AVX512 static inline __m512d ts_atanh8_short(__m512d s, __m512d z) {
    __m512d p = _mm512_set1_pd(2.0 / 7);
    p = _mm512_fmadd_pd(p, z, _mm512_set1_pd(2.0 / 5));
    p = _mm512_fmadd_pd(p, z, _mm512_set1_pd(2.0 / 3));
    p = _mm512_fmadd_pd(p, z, _mm512_set1_pd(2.0));
    return _mm512_mul_pd(s, p);
}

/* the series to z^2, for z <= 1e-6 (first omitted term below 2.9e-19 relatively) */
TS_AVX512 static inline __m512d ts_atanh8_shorter(__m512d s, __m512d z) {
    __m512d p = _mm512_set1_pd(2.0 / 5);
    p = _mm512_fmadd_pd(p, z, _mm512_set1_pd(2.0 / 3));
    p = _mm512_fmadd_pd(p, z, _mm512_set1_pd(2.0));
    return _mm512_mul_pd(s, p);
}

/* ts_log for 8 lanes: log(u/v) for u, v >= 2**-1021, NaN where ts_log gives NaN */
TS_AVX512 static inline __m512d ts_log_any8(__m512d u, __m512d v) {
    __m512d q = _mm512_div_pd(u, v);
    __mmask8 ok = _mm512_cmp_pd_mask(q, _mm512_set1_pd(DBL_MIN_NORMAL), _CMP_GE_OQ) &
                  _mm512_cmp_pd_mask(q, _mm512_set1_pd(DBL_MAX_FINITE), _CMP_LE_OQ);
    __m512i b = _mm512_castpd_si512(q);
    __m512i k = _mm512_srai_epi64(_mm512_sub_epi64(b, _mm512_set1_epi64(0x3FE6A09E667F3BCDLL)), 52);
    __m512d w = _mm512_castsi512_pd(
        _mm512_add_epi64(_mm512_castpd_si512(v), _mm512_slli_epi64(k, 52)));
    __m512d s = _mm512_div_pd(_mm512_sub_pd(u, w), _mm512_add_pd(u, w));
    __m512d r = _mm512_fmadd_pd(_mm512_cvtepi64_pd(k), _mm512_set1_pd(LN2),
                                ts_atanh8(s, _mm512_mul_pd(s, s)));
    return _mm512_mask_blend_pd(ok, _mm512_set1_pd(__builtin_nan("")), r);
}

/* log(u/v) = 2 atanh((u - v)/(u + v)): one division, and u - v is exact (Sterbenz) while
   u/v is within [1/2, 2]. Per vector of 8: the series to z^2 when every |s| <= 0.001 and
   to z^3 when every |s| <= 0.01 (the common cases when two runs agree), the full one while
   every |s| <= 0.1716 (u/v within [0.707, 1.414]), else the general form for all 8 lanes. u - v comes from the caller,
   which also sums it for KL. */
TS_AVX512 static inline __m512d ts_log_ratio8(__m512d u, __m512d v, __m512d u_minus_v) {
    __m512d s = _mm512_div_pd(u_minus_v, _mm512_add_pd(u, v));
    __m512d z = _mm512_mul_pd(s, s);
    if (!_mm512_cmp_pd_mask(z, _mm512_set1_pd(1e-6), _CMP_GT_OQ)) return ts_atanh8_shorter(s, z);
    if (!_mm512_cmp_pd_mask(z, _mm512_set1_pd(1e-4), _CMP_GT_OQ)) return ts_atanh8_short(s, z);
    if (!_mm512_cmp_pd_mask(z, _mm512_set1_pd(0.1716 * 0.1716), _CMP_GT_OQ)) {
        return ts_atanh8(s, z);
    }
    return ts_log_any8(u, v);
}

#define TS_LOAD8_F32(p) _mm512_cvtps_pd(_mm256_loadu_ps(p))
#define TS_LOAD8_F64(p) _mm512_loadu_pd(p)

#define TS_AVX512_BODY(T, LOAD)                                                             \
    const __m512d zero = _mm512_setzero_pd();                                              \
    __m512d sx = zero, sy = zero, sxx = zero, syy = zero, sxy = zero, sdd = zero;           \
    __m512d sad = zero, arel = zero, mabs = zero, mrel = zero, mulp = zero;                \
    __m512d ku = zero, kd = zero, ks = zero;                                               \
    __m512i w1 = _mm512_setzero_si512(), w5 = _mm512_setzero_si512();                      \
    const __m512i ONE = _mm512_set1_epi64(1);                                              \
    const __m512d KX = _mm512_set1_pd(kx), KY = _mm512_set1_pd(ky);                        \
    const __m512d CX = _mm512_set1_pd((kx - xo) * xsc), XSC = _mm512_set1_pd(xsc);          \
    const __m512d CY = _mm512_set1_pd((ky - yo) * ysc), YSC = _mm512_set1_pd(ysc);          \
    const __m512d E32 = _mm512_set1_pd(EPS32), E64 = _mm512_set1_pd(EPS64);                \
    const __m512d T1 = _mm512_set1_pd(1e-3), T5 = _mm512_set1_pd(5e-3);                    \
    const __m512d FLOOR = _mm512_set1_pd(ulp_floor);                                        \
    const __m512i EXPMASK = _mm512_set1_epi64(0x7FF0000000000000LL);                        \
    const __m512i INVC = _mm512_set1_epi64(0x7FF0000000000000LL);                           \
    const int floor_small = ulp_floor <= EPS64;                                            \
    int64_t n8 = n & ~(int64_t)7;                                                          \
    for (int64_t i = 0; i < n8; i += 8) {                                                  \
        /* the loop is compute-bound; prefetching 4 KiB ahead keeps DRAM latency off it */ \
        _mm_prefetch((const char *)(x + i) + 4096, _MM_HINT_T0);                           \
        _mm_prefetch((const char *)(y + i) + 4096, _MM_HINT_T0);                           \
        __m512d X = LOAD(x + i), Y = LOAD(y + i);                                          \
        __m512d xs = _mm512_sub_pd(X, KX), ys = _mm512_sub_pd(Y, KY);                      \
        sx = _mm512_add_pd(sx, xs);                                                        \
        sy = _mm512_add_pd(sy, ys);                                                        \
        sxx = _mm512_fmadd_pd(xs, xs, sxx);                                                \
        syy = _mm512_fmadd_pd(ys, ys, syy);                                                \
        sxy = _mm512_fmadd_pd(X, Y, sxy);                                                  \
        __m512d d = _mm512_sub_pd(X, Y);                                                   \
        sdd = _mm512_fmadd_pd(d, d, sdd);                                                  \
        __m512d ad = _mm512_abs_pd(d), ay = _mm512_abs_pd(Y);                              \
        sad = _mm512_add_pd(sad, ad);                                                      \
        mabs = _mm512_max_pd(mabs, ad);                                                    \
        /* r = |d|/|y|: +Inf where |y| = 0 < |d| (or the quotient overflows), NaN for 0/0; \
           the relative error is r where |y| > eps, else 0 */                              \
        __mmask8 big = _mm512_cmp_pd_mask(ay, E64, _CMP_GT_OQ);                            \
        __m512d r = _mm512_div_pd(ad, ay);                                                 \
        arel = _mm512_mask_add_pd(arel, big, arel, r);                                     \
        mrel = _mm512_mask_max_pd(mrel, big, mrel, r);                                     \
        /* msprobe's ratios as the reference defines them: |d| < t|y| (the product      \
           rounded once, not the quotient: they differ within an ulp of t), and x = y    \
           always (0 vs 0 included; t|y| is 0 only where |y| <= eps) */                  \
        __mmask8 in1 = _mm512_cmp_pd_mask(ad, _mm512_mul_pd(ay, T1), _CMP_LT_OQ);         \
        __mmask8 in5 = _mm512_cmp_pd_mask(ad, _mm512_mul_pd(ay, T5), _CMP_LT_OQ);         \
        /* |d| 2**(1 - E), E = floor(log2 max(|y|, floor)): see ts_inv_binade2; while every \
           |y| > eps >= floor the floor cannot apply */                                    \
        __m512d e = _mm512_castsi512_pd(_mm512_and_si512(_mm512_castpd_si512(ay), EXPMASK)); \
        if (__builtin_expect((big != 0xFF) | !floor_small, 0)) {                           \
            __mmask8 z = _mm512_cmp_pd_mask(ad, zero, _CMP_EQ_OQ);                         \
            in1 |= z;                                                                      \
            in5 |= z;                                                                      \
            e = _mm512_max_pd(e, FLOOR);                                                   \
        }                                                                                  \
        w1 = _mm512_mask_add_epi64(w1, in1, w1, ONE);                                      \
        w5 = _mm512_mask_add_epi64(w5, in5, w5, ONE);                                      \
        __m512d inv = _mm512_castsi512_pd(_mm512_sub_epi64(INVC, _mm512_castpd_si512(e))); \
        mulp = _mm512_max_pd(mulp, _mm512_mul_pd(ad, inv));                                \
        __m512d u = _mm512_max_pd(_mm512_fmadd_pd(xs, XSC, CX), E32);                      \
        __m512d v = _mm512_max_pd(_mm512_fmadd_pd(ys, YSC, CY), E32);                      \
        ku = _mm512_add_pd(ku, u);                                                         \
        __m512d umv = _mm512_sub_pd(u, v);                                                 \
        kd = _mm512_sub_pd(kd, umv);                                                       \
        ks = _mm512_fmadd_pd(u, ts_log_ratio8(u, v, umv), ks);                             \
    }                                                                                      \
    double tail[TS_NACC] = {0};                                                            \
    if (n > n8) {                                                                          \
        ts_portable_block_##T(x + n8, y + n8, n - n8, kx, ky, xo, xsc, yo, ysc, ulp_floor, \
                              tail);                                                       \
    }                                                                                      \
    acc[TS_SX] = _mm512_reduce_add_pd(sx) + tail[TS_SX];                                   \
    acc[TS_SY] = _mm512_reduce_add_pd(sy) + tail[TS_SY];                                   \
    acc[TS_SXX] = _mm512_reduce_add_pd(sxx) + tail[TS_SXX];                                \
    acc[TS_SYY] = _mm512_reduce_add_pd(syy) + tail[TS_SYY];                                \
    acc[TS_SXY] = _mm512_reduce_add_pd(sxy) + tail[TS_SXY];                                \
    acc[TS_SDD] = _mm512_reduce_add_pd(sdd) + tail[TS_SDD];                                \
    acc[TS_SAD] = _mm512_reduce_add_pd(sad) + tail[TS_SAD];                                \
    acc[TS_ACC_REL] = _mm512_reduce_add_pd(arel) + tail[TS_ACC_REL];                       \
    acc[TS_MAX_ABS] = ts_max(_mm512_reduce_max_pd(mabs), tail[TS_MAX_ABS]);                \
    acc[TS_MAX_REL] = ts_max(_mm512_reduce_max_pd(mrel), tail[TS_MAX_REL]);                \
    acc[TS_WITHIN1] = (double)_mm512_reduce_add_epi64(w1) + tail[TS_WITHIN1];              \
    acc[TS_WITHIN5] = (double)_mm512_reduce_add_epi64(w5) + tail[TS_WITHIN5];              \
    acc[TS_MAX_ULP_Q] = ts_max(0.5 * _mm512_reduce_max_pd(mulp), tail[TS_MAX_ULP_Q]);      \
    acc[TS_KL_U] = _mm512_reduce_add_pd(ku) + tail[TS_KL_U];                               \
    acc[TS_KL_D] = _mm512_reduce_add_pd(kd) + tail[TS_KL_D];                               \
    acc[TS_KL_S] = _mm512_reduce_add_pd(ks) + tail[TS_KL_S];                               \
    acc[TS_SXX_RAW] = ts_avx512_sq_##T##_derived(x, n8, kx, _mm512_reduce_add_pd(sx),      \
                                         _mm512_reduce_add_pd(sxx)) + tail[TS_SXX_RAW];    \
    acc[TS_SYY_RAW] = ts_avx512_sq_##T##_derived(y, n8, ky, _mm512_reduce_add_pd(sy),      \
                                         _mm512_reduce_add_pd(syy)) + tail[TS_SYY_RAW];

TS_AVX512 static void ts_avx512_block_f32(const float *x, const float *y, int64_t n, double kx, double ky,
                          double xo, double xsc, double yo, double ysc, double ulp_floor,
                          double *acc) {
    TS_AVX512_BODY(f32, TS_LOAD8_F32)
}

TS_AVX512 static void ts_avx512_block_f64(const double *x, const double *y, int64_t n, double kx, double ky,
                          double xo, double xsc, double yo, double ysc, double ulp_floor,
                          double *acc) {
    TS_AVX512_BODY(f64, TS_LOAD8_F64)
}
TS_BLOCKED(ts_avx512_f32, ts_avx512_block_f32, float, TS_AVX512)
TS_BLOCKED(ts_avx512_f64, ts_avx512_block_f64, double, TS_AVX512)

TS_AVX512 void ts_log_ratio_avx512(const double *u, const double *v, int64_t n, double *out) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m512d u8 = _mm512_loadu_pd(u + i), v8 = _mm512_loadu_pd(v + i);
        _mm512_storeu_pd(out + i, ts_log_ratio8(u8, v8, _mm512_sub_pd(u8, v8)));
    }
    for (; i < n; i++) out[i] = ts_log(u[i], v[i]);
}
#endif /* TS_X86 */

/* The exported entry points of one loop ISA:
 * ts_pass_{f32,f64}_ISA: one chunk into the TS_NACC accumulators of the layout above;
 * ts_chunks_{f32,f64}_ISA: every chunk of `chunk` elements (the last one shorter): out holds
 * TS_NROW doubles per chunk, the TS_NACC accumulators, then the chunk's shifts kx = x[start]
 * (TS_KX) and ky = y[start] (TS_KY) (the variance sums are shifted by a typical element: a
 * shift far from the mean, such as the minimum, would cost digits to cancellation). A chunk
 * whose shifts are not finite is left with out[TS_SX] = NaN (the caller recomputes it with
 * numpy, as any chunk with non-finite sums). One call per thread keeps Python (and the GIL)
 * out of the chunk loop. */
#define TS_ENTRY(ISA, T, CT)                                                                \
    void ts_pass_##T##_##ISA(const CT *x, const CT *y, int64_t n, double kx, double ky,    \
                             double xo, double xsc, double yo, double ysc, double ulp_floor, \
                             double *acc) {                                                \
        ts_##ISA##_##T(x, y, n, kx, ky, xo, xsc, yo, ysc, ulp_floor, acc);                 \
    }                                                                                      \
    void ts_chunks_##T##_##ISA(const CT *x, const CT *y, int64_t n, int64_t chunk,         \
                               double xo, double xsc, double yo, double ysc,               \
                               double ulp_floor, double *out) {                            \
        for (int64_t s = 0, c = 0; s < n; s += chunk, c++) {                               \
            int64_t m = n - s < chunk ? n - s : chunk;                                     \
            double *o = out + TS_NROW * c;                                                 \
            double kx = (double)x[s], ky = (double)y[s];                                   \
            o[TS_KX] = kx;                                                                 \
            o[TS_KY] = ky;                                                                 \
            if (!__builtin_isfinite(kx) || !__builtin_isfinite(ky)) {                      \
                o[TS_SX] = __builtin_nan("");                                              \
                continue;                                                                  \
            }                                                                              \
            ts_##ISA##_##T(x + s, y + s, m, kx, ky, xo, xsc, yo, ysc, ulp_floor, o);       \
        }                                                                                  \
    }

TS_ENTRY(portable, f32, float)
TS_ENTRY(portable, f64, double)
#ifdef TS_X86
TS_ENTRY(avx2, f32, float)
TS_ENTRY(avx2, f64, double)
TS_ENTRY(avx512, f32, float)
TS_ENTRY(avx512, f64, double)
#endif
