/* tensorsight fused metric kernel: one pass over a (target x, bench y) chunk.
 *
 * Compiled on first use by tensorsight/compare/metrics/_native.py (cc -O3 -fopenmp-simd);
 * the numpy implementation in kernel.py is the reference and the fallback. Every sum is a
 * float64 accumulation. The caller handles non-finite values: when a chunk's sums come back
 * non-finite it recomputes that chunk with numpy's masked path.
 *
 * acc layout (all doubles, zeroed by the caller):
 *   0 sx  1 sy  2 sxx(shifted) 3 syy(shifted) 4 sxy 5 sdd 6 sad 7 acc_rel 8 max_abs
 *   9 max_rel 10 within1 11 within5 12 max_ulp_q 13 kl_u 14 kl_v 15 kl_s
 *   16 sx_raw2 (sum x*x) 17 syy_raw (sum y*y)
 */
#include <stdint.h>
#include <string.h>

#define EPS64 2.220446049250313e-16
#define EPS32 1.1920928955078125e-07
#define LN2 0.6931471805599453
#define SQRT2 1.4142135623730951

static inline double ts_log(double u) { /* u > 0 and normal (u/v >= eps32 / 2**64 here) */
    uint64_t b;
    memcpy(&b, &u, 8);
    /* exponent as a double without an int64 -> double conversion (2**52 magic number) */
    uint64_t eb = (b >> 52) | 0x4330000000000000ULL;
    double ed;
    memcpy(&ed, &eb, 8);
    ed -= 4503599627370496.0 + 1023.0;
    uint64_t mb = (b & 0x000FFFFFFFFFFFFFULL) | 0x3FF0000000000000ULL;
    double m;
    memcpy(&m, &mb, 8);
    int big = m > SQRT2;
    m = big ? m * 0.5 : m;
    ed = big ? ed + 1.0 : ed;
    double s = (m - 1.0) / (m + 1.0);
    double z = s * s;
    double p = 1.0 + z * (1.0 / 3 + z * (1.0 / 5 + z * (1.0 / 7 + z * (1.0 / 9 + z * (1.0 / 11
               + z * (1.0 / 13 + z * (1.0 / 15 + z * (1.0 / 17))))))));
    return ed * LN2 + 2.0 * s * p;
}

static inline double ts_inv_binade(double a, double floor) {
    /* 1 / max(2**floor(log2(a)), floor) for a >= 0, exact (powers of two; no division) */
    uint64_t b;
    memcpy(&b, &a, 8);
    b &= 0x7FF0000000000000ULL;
    double p;
    memcpy(&p, &b, 8);
    p = p > floor ? p : floor;
    memcpy(&b, &p, 8);
    b = 0x7FE0000000000000ULL - b;
    memcpy(&p, &b, 8);
    return p;
}

#define TS_BODY(T)                                                                          \
    double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0, sdd = 0, sad = 0, arel = 0;          \
    double mabs = 0, mrel = 0, w1 = 0, w5 = 0, mulp = 0, ku = 0, kv = 0, ks = 0;           \
    double rxx = 0, ryy = 0;                                                               \
    _Pragma("omp simd reduction(+:sx,sy,sxx,syy,sxy,sdd,sad,arel,w1,w5,ku,kv,ks,rxx,ryy) \
reduction(max:mabs,mrel,mulp)")                                                            \
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
        double q = ad * ts_inv_binade(ay, ulp_floor);                                      \
        mulp = q > mulp ? q : mulp;                                                        \
        double u = (xv - xo) * xsc;                                                        \
        u = u > EPS32 ? u : EPS32;                                                         \
        double v = (yv - yo) * ysc;                                                        \
        v = v > EPS32 ? v : EPS32;                                                         \
        ku += u; kv += v;                                                                  \
        ks += u * ts_log(u / v);                                                           \
    }                                                                                      \
    acc[0] = sx; acc[1] = sy; acc[2] = sxx; acc[3] = syy; acc[4] = sxy; acc[5] = sdd;      \
    acc[6] = sad; acc[7] = arel; acc[8] = mabs; acc[9] = mrel; acc[10] = w1; acc[11] = w5; \
    acc[12] = mulp; acc[13] = ku; acc[14] = kv; acc[15] = ks; acc[16] = rxx; acc[17] = ryy;

void ts_pass_f32(const float *x, const float *y, int64_t n, double kx, double ky, double xo,
                 double xsc, double yo, double ysc, double ulp_floor, double *acc) {
    TS_BODY(float)
}

void ts_pass_f64(const double *x, const double *y, int64_t n, double kx, double ky, double xo,
                 double xsc, double yo, double ysc, double ulp_floor, double *acc) {
    TS_BODY(double)
}
