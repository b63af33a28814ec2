/* tensorsight dump statistics: min, max, sum, sum of squares and NaN/+Inf/-Inf counts of a
 * contiguous buffer in one read (the float64 copy + aminmax + sum + dot of the torch path
 * read and write ~32 bytes per element; this reads the element once).
 *
 * Compiled on first use by tensorsight/dumpformat/_stats_native.py through tensorsight._cbuild,
 * for the architecture's baseline; the same loop is compiled three times, for the baseline
 * (suffix _portable), for AVX2 + FMA (_avx2) and for AVX-512 F + DQ (_avx512, both x86-64
 * only) through per-function target attributes, and the caller picks one at run time from
 * ts_cpu_features() (cpuid) and TENSORSIGHT_KERNEL. The torch and numpy paths in _torch_stats.py / _np_stats.py are the reference and the
 * fallback. Every element is converted to float64 before it is accumulated; sums run in
 * blocks (a float64 sum per block, then the blocks' sums) to bound rounding on big tensors.
 *
 * out (7 doubles): 0 min  1 max  2 sum  3 sum of squares  4 NaN  5 +Inf  6 -Inf
 * NaN rules (as torch.aminmax / sum): any NaN makes min, max, sum and sumsq NaN. The counts
 * are only counted (second pass) when the sums come back non-finite, which is the case
 * whenever a NaN or an Inf is present.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) || defined(_M_X64)
#define TS_X86 1
#define TS_AVX2 __attribute__((target("avx2,fma")))
#define TS_AVX512 __attribute__((target("avx2,fma,avx512f,avx512dq")))
#endif

/* bit 0 avx2, 1 fma, 2 avx512f, 3 avx512dq, as the CPU and the OS (saved vector state)
   support them; 0 off x86-64 (the same function as in compare/metrics/_kernel.c) */
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

#define TS_BLOCK 4096

static inline double ts_bf16(uint16_t b) {
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return (double)f;
}

static inline double ts_f16(uint16_t h) {
    /* bit-exact widening: normals, +-Inf and NaN by moving the fields; subnormals m * 2**-24 */
    uint64_t e = (h >> 10) & 31, m = h & 1023, sign = (uint64_t)(h & 0x8000) << 48;
    uint64_t ed = e == 31 ? 0x7FF : e + 1008;
    uint64_t bits = sign | (ed << 52) | (m << 42);
    double v;
    memcpy(&v, &bits, 8);
    double sub = (double)(int32_t)m * 0x1p-24;
    return e == 0 ? (sign ? -sub : sub) : v;
}

#define TS_CONV(x) ((double)(x))

#define TS_STATS(NAME, T, CONV, ATTR)                                                      \
    ATTR void NAME(const T *p, int64_t n, double *out) {                                  \
        double mn = INFINITY, mx = -INFINITY, s = 0.0, sq = 0.0;                          \
        for (int64_t b = 0; b < n; b += TS_BLOCK) {                                       \
            int64_t e = n - b < TS_BLOCK ? n : b + TS_BLOCK;                              \
            double bs = 0.0, bq = 0.0, bmn = INFINITY, bmx = -INFINITY;                   \
            _Pragma("omp simd reduction(+:bs,bq) reduction(min:bmn) reduction(max:bmx)")  \
            for (int64_t i = b; i < e; i++) {                                             \
                double v = CONV(p[i]);                                                    \
                bs += v;                                                                  \
                bq += v * v;                                                              \
                bmn = v < bmn ? v : bmn;                                                  \
                bmx = v > bmx ? v : bmx;                                                  \
            }                                                                             \
            s += bs;                                                                      \
            sq += bq;                                                                     \
            mn = bmn < mn ? bmn : mn;                                                     \
            mx = bmx > mx ? bmx : mx;                                                     \
        }                                                                                 \
        double nan = 0.0, pinf = 0.0, ninf = 0.0;                                         \
        if (!isfinite(s) || !isfinite(sq)) {                                              \
            for (int64_t i = 0; i < n; i++) {                                             \
                double v = CONV(p[i]);                                                    \
                nan += isnan(v) ? 1.0 : 0.0;                                              \
                pinf += v == INFINITY ? 1.0 : 0.0;                                        \
                ninf += v == -INFINITY ? 1.0 : 0.0;                                       \
            }                                                                             \
            if (nan > 0) {                                                                \
                mn = mx = s = sq = NAN;                                                   \
            }                                                                             \
        }                                                                                 \
        out[0] = mn; out[1] = mx; out[2] = s; out[3] = sq;                                \
        out[4] = nan; out[5] = pinf; out[6] = ninf;                                       \
    }

/* every dtype for one loop ISA: ts_stats_<dtype>_<ISA> */
#define TS_ALL(ISA, ATTR)                                                                  \
    TS_STATS(ts_stats_f64_##ISA, double, TS_CONV, ATTR)                                   \
    TS_STATS(ts_stats_f32_##ISA, float, TS_CONV, ATTR)                                    \
    TS_STATS(ts_stats_f16_##ISA, uint16_t, ts_f16, ATTR)                                  \
    TS_STATS(ts_stats_bf16_##ISA, uint16_t, ts_bf16, ATTR)                                \
    TS_STATS(ts_stats_i64_##ISA, int64_t, TS_CONV, ATTR)                                  \
    TS_STATS(ts_stats_i32_##ISA, int32_t, TS_CONV, ATTR)                                  \
    TS_STATS(ts_stats_i16_##ISA, int16_t, TS_CONV, ATTR)                                  \
    TS_STATS(ts_stats_i8_##ISA, int8_t, TS_CONV, ATTR)                                    \
    TS_STATS(ts_stats_u8_##ISA, uint8_t, TS_CONV, ATTR)

TS_ALL(portable, )
#ifdef TS_X86
TS_ALL(avx2, TS_AVX2)
TS_ALL(avx512, TS_AVX512)
#endif

/* The unsuffixed names (ts_stats_f32, ...) run the loop ts_stats_use() chose, the portable
 * one until then: they serve the native op capture (capture/_native_capture.cpp #includes
 * this file and calls them from C++), whose Python side chooses the loop as _stats_native
 * does. ts_stats_use(isa): 0 portable, 1 avx2, 2 avx512; a loop the CPU cannot run gives
 * the portable one; returns the loop now in use. */
static int ts_stats_isa = 0;

int ts_stats_use(int isa) {
    int f = ts_cpu_features();
    if ((isa == 2 && (f & 15) != 15) || (isa == 1 && (f & 3) != 3) || isa < 0 || isa > 2) {
        isa = 0;
    }
    ts_stats_isa = isa;
    return isa;
}

#ifdef TS_X86
#define TS_PICK(SUFFIX, T)                                                                 \
    void ts_stats_##SUFFIX(const T *p, int64_t n, double *out) {                          \
        if (ts_stats_isa == 2) {                                                          \
            ts_stats_##SUFFIX##_avx512(p, n, out);                                        \
        } else if (ts_stats_isa == 1) {                                                   \
            ts_stats_##SUFFIX##_avx2(p, n, out);                                          \
        } else {                                                                          \
            ts_stats_##SUFFIX##_portable(p, n, out);                                      \
        }                                                                                 \
    }
#else
#define TS_PICK(SUFFIX, T)                                                                 \
    void ts_stats_##SUFFIX(const T *p, int64_t n, double *out) {                          \
        ts_stats_##SUFFIX##_portable(p, n, out);                                          \
    }
#endif

TS_PICK(f64, double)
TS_PICK(f32, float)
TS_PICK(f16, uint16_t)
TS_PICK(bf16, uint16_t)
TS_PICK(i64, int64_t)
TS_PICK(i32, int32_t)
TS_PICK(i16, int16_t)
TS_PICK(i8, int8_t)
TS_PICK(u8, uint8_t)
