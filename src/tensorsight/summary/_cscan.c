/* Fast scanner for TFRecord-framed TensorBoard event files (loaded by _scan.py via ctypes).
 *
 * ts_scan() walks a buffer of records, checks the length CRC and (optionally) the payload
 * CRC of each, resynchronises after a corrupt record, and decodes the two common scalar
 * layouts straight into caller-provided arrays:
 *   - Summary.Value.simple_value (tensorboardX, torch.utils.tensorboard),
 *   - Summary.Value.tensor = DT_FLOAT rank-0 TensorProto (TF2, torch new_style), with no
 *     metadata or with plugin_data.plugin_name == "scalars".
 * Every other record is reported as (offset, length, seq) for the Python protobuf path.
 * Nothing here allocates per record; tags are interned in a small hash table.
 * No Python headers: the library has a plain C ABI and is compiled on first use.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ CRC-32C */
static uint32_t crc_table[8][256];
static int crc_ready = 0;

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : (c >> 1);
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++) {
        for (int t = 1; t < 8; t++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xFF];
    }
    crc_ready = 1;
}

static uint32_t crc_sw(uint32_t crc, const uint8_t *p, size_t n) {
    while (n >= 8) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4);
        memcpy(&hi, p + 4, 4);
        lo ^= crc;
        crc = crc_table[7][lo & 0xFF] ^ crc_table[6][(lo >> 8) & 0xFF] ^
              crc_table[5][(lo >> 16) & 0xFF] ^ crc_table[4][lo >> 24] ^
              crc_table[3][hi & 0xFF] ^ crc_table[2][(hi >> 8) & 0xFF] ^
              crc_table[1][(hi >> 16) & 0xFF] ^ crc_table[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--) crc = (crc >> 8) ^ crc_table[0][(crc ^ *p++) & 0xFF];
    return crc;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <nmmintrin.h>
#define TS_HAVE_HW 1
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const uint8_t *p,
                                                           size_t n) {
    uint64_t c = crc;
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c = _mm_crc32_u64(c, v);
        p += 8;
        n -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (n--) c32 = _mm_crc32_u8(c32, *p++);
    return c32;
}
static int hw_state = -1; /* -1 unknown, 0 no, 1 yes */
#endif

static uint32_t crc32c(const uint8_t *p, size_t n) {
#ifdef TS_HAVE_HW
    if (hw_state < 0) {
        __builtin_cpu_init();
        hw_state = __builtin_cpu_supports("sse4.2") ? 1 : 0;
    }
    if (hw_state) return ~crc_hw(0xFFFFFFFFu, p, n);
#endif
    if (!crc_ready) crc_init();
    return ~crc_sw(0xFFFFFFFFu, p, n);
}

static uint32_t masked(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u; }

uint32_t ts_masked_crc32c(const uint8_t *p, int64_t n) { return masked(crc32c(p, (size_t)n)); }

int ts_hw_crc(void) {
#ifdef TS_HAVE_HW
    crc32c((const uint8_t *)"", 0);
    return hw_state;
#else
    return 0;
#endif
}

/* ------------------------------------------------------------------ tag table */
typedef struct {
    int64_t n, cap;
    int64_t *step, *seq;
    double *wall, *val;
    int8_t *flag;
} tagbuf;

typedef struct {
    tagbuf *bufs; /* per id: points decoded since the last ts_tag_take */
    char *arena;
    int64_t arena_len, arena_cap;
    int64_t *off; /* per id: offset into arena */
    int32_t *len; /* per id: length */
    int32_t count, cap_ids;
    int32_t *slots; /* open addressing: id + 1, 0 = empty */
    uint64_t *hashes;
    int32_t nslots;
} tagtab;

void *ts_tagtab_new(void) {
    tagtab *t = (tagtab *)calloc(1, sizeof(tagtab));
    if (!t) return NULL;
    t->nslots = 64;
    t->slots = (int32_t *)calloc((size_t)t->nslots, sizeof(int32_t));
    t->hashes = (uint64_t *)calloc((size_t)t->nslots, sizeof(uint64_t));
    if (!t->slots || !t->hashes) {
        free(t->slots);
        free(t->hashes);
        free(t);
        return NULL;
    }
    return t;
}

void ts_tagtab_free(void *p) {
    tagtab *t = (tagtab *)p;
    if (!t) return;
    for (int32_t i = 0; i < t->count; i++) {
        tagbuf *b = &t->bufs[i];
        free(b->step);
        free(b->seq);
        free(b->wall);
        free(b->val);
        free(b->flag);
    }
    free(t->bufs);
    free(t->arena);
    free(t->off);
    free(t->len);
    free(t->slots);
    free(t->hashes);
    free(t);
}

int32_t ts_tagtab_count(void *p) { return ((tagtab *)p)->count; }

int32_t ts_tagtab_name(void *p, int32_t id, char *out, int32_t cap) {
    tagtab *t = (tagtab *)p;
    if (id < 0 || id >= t->count) return -1;
    int32_t n = t->len[id];
    if (n > cap) return -n;
    memcpy(out, t->arena + t->off[id], (size_t)n);
    return n;
}

static uint64_t fnv(const uint8_t *s, int64_t n) {
    uint64_t h = 1469598103934665603ull;
    for (int64_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ull;
    return h;
}

static int tagtab_grow_slots(tagtab *t) {
    int32_t ns = t->nslots * 2;
    int32_t *slots = (int32_t *)calloc((size_t)ns, sizeof(int32_t));
    uint64_t *hashes = (uint64_t *)calloc((size_t)ns, sizeof(uint64_t));
    if (!slots || !hashes) {
        free(slots);
        free(hashes);
        return -1;
    }
    for (int32_t i = 0; i < t->nslots; i++) {
        if (!t->slots[i]) continue;
        uint64_t h = t->hashes[i];
        int32_t j = (int32_t)(h & (uint64_t)(ns - 1));
        while (slots[j]) j = (j + 1) & (ns - 1);
        slots[j] = t->slots[i];
        hashes[j] = h;
    }
    free(t->slots);
    free(t->hashes);
    t->slots = slots;
    t->hashes = hashes;
    t->nslots = ns;
    return 0;
}

/* id of tag s[0..n), adding it when new; -1 on allocation failure */
static int32_t tagtab_id(tagtab *t, const uint8_t *s, int64_t n) {
    uint64_t h = fnv(s, n);
    int32_t mask = t->nslots - 1;
    int32_t j = (int32_t)(h & (uint64_t)mask);
    while (t->slots[j]) {
        int32_t id = t->slots[j] - 1;
        if (t->hashes[j] == h && t->len[id] == n && memcmp(t->arena + t->off[id], s, (size_t)n) == 0)
            return id;
        j = (j + 1) & mask;
    }
    if (t->count == t->cap_ids) {
        int32_t nc = t->cap_ids ? t->cap_ids * 2 : 16;
        int64_t *off = (int64_t *)realloc(t->off, (size_t)nc * sizeof(int64_t));
        if (!off) return -1;
        t->off = off;
        int32_t *len = (int32_t *)realloc(t->len, (size_t)nc * sizeof(int32_t));
        if (!len) return -1;
        t->len = len;
        tagbuf *bufs = (tagbuf *)realloc(t->bufs, (size_t)nc * sizeof(tagbuf));
        if (!bufs) return -1;
        t->bufs = bufs;
        t->cap_ids = nc;
    }
    if (t->arena_len + n > t->arena_cap) {
        int64_t nc = t->arena_cap ? t->arena_cap * 2 : 1024;
        while (nc < t->arena_len + n) nc *= 2;
        char *a = (char *)realloc(t->arena, (size_t)nc);
        if (!a) return -1;
        t->arena = a;
        t->arena_cap = nc;
    }
    memcpy(t->arena + t->arena_len, s, (size_t)n);
    int32_t id = t->count++;
    memset(&t->bufs[id], 0, sizeof(tagbuf));
    t->off[id] = t->arena_len;
    t->len[id] = (int32_t)n;
    t->arena_len += n;
    t->slots[j] = id + 1;
    t->hashes[j] = h;
    if (t->count * 2 > t->nslots && tagtab_grow_slots(t) != 0) return -1;
    return id;
}

static int tagbuf_push(tagbuf *b, int64_t step, double wall, double val, int64_t seq, int8_t flag) {
    if (b->n == b->cap) {
        int64_t nc = b->cap ? b->cap * 2 : 1024;
        int64_t *s1 = (int64_t *)realloc(b->step, (size_t)nc * sizeof(int64_t));
        if (!s1) return -1;
        b->step = s1;
        int64_t *s2 = (int64_t *)realloc(b->seq, (size_t)nc * sizeof(int64_t));
        if (!s2) return -1;
        b->seq = s2;
        double *w = (double *)realloc(b->wall, (size_t)nc * sizeof(double));
        if (!w) return -1;
        b->wall = w;
        double *v = (double *)realloc(b->val, (size_t)nc * sizeof(double));
        if (!v) return -1;
        b->val = v;
        int8_t *f = (int8_t *)realloc(b->flag, (size_t)nc);
        if (!f) return -1;
        b->flag = f;
        b->cap = nc;
    }
    b->step[b->n] = step;
    b->wall[b->n] = wall;
    b->val[b->n] = val;
    b->seq[b->n] = seq;
    b->flag[b->n] = flag;
    b->n++;
    return 0;
}

int64_t ts_tag_npoints(void *p, int32_t id) {
    tagtab *t = (tagtab *)p;
    return (id >= 0 && id < t->count) ? t->bufs[id].n : -1;
}

/* copy the points of tag id out (arrays of ts_tag_npoints entries) and empty its buffer */
void ts_tag_take(void *p, int32_t id, int64_t *step, double *wall, double *val, int64_t *seq,
                 int8_t *flag) {
    tagtab *t = (tagtab *)p;
    if (id < 0 || id >= t->count) return;
    tagbuf *b = &t->bufs[id];
    size_t n = (size_t)b->n;
    memcpy(step, b->step, n * sizeof(int64_t));
    memcpy(wall, b->wall, n * sizeof(double));
    memcpy(val, b->val, n * sizeof(double));
    memcpy(seq, b->seq, n * sizeof(int64_t));
    memcpy(flag, b->flag, n);
    b->n = 0;
    if (b->cap > (1 << 20)) { /* do not keep a huge buffer around between chunks */
        free(b->step);
        free(b->seq);
        free(b->wall);
        free(b->val);
        free(b->flag);
        memset(b, 0, sizeof(tagbuf));
    }
}

/* ------------------------------------------------------------------ protobuf helpers */
static int varint(const uint8_t **pp, const uint8_t *end, uint64_t *out) {
    const uint8_t *p = *pp;
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (p >= end) return 0;
        uint8_t b = *p++;
        v |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            *pp = p;
            *out = v;
            return 1;
        }
    }
    return 0;
}

/* skip a field of wire type wt; 0 on malformed input */
static int skip(const uint8_t **pp, const uint8_t *end, uint32_t wt) {
    uint64_t v;
    switch (wt) {
    case 0: return varint(pp, end, &v);
    case 1: if (end - *pp < 8) return 0; *pp += 8; return 1;
    case 5: if (end - *pp < 4) return 0; *pp += 4; return 1;
    case 2:
        if (!varint(pp, end, &v) || v > (uint64_t)(end - *pp)) return 0;
        *pp += v;
        return 1;
    default: return 0;
    }
}

static int get_len(const uint8_t **pp, const uint8_t *end, const uint8_t **s, const uint8_t **e) {
    uint64_t v;
    if (!varint(pp, end, &v) || v > (uint64_t)(end - *pp)) return 0;
    *s = *pp;
    *e = *pp + v;
    *pp += v;
    return 1;
}

/* SummaryMetadata: 1 = scalars plugin, 2 = other plugin / unknown content */
static int parse_meta(const uint8_t *p, const uint8_t *end) {
    int result = 1; /* metadata without plugin data: treat as "other" below */
    int saw_plugin = 0;
    while (p < end) {
        uint64_t key;
        if (!varint(&p, end, &key)) return 2;
        uint32_t f = (uint32_t)(key >> 3), wt = (uint32_t)(key & 7);
        if (f == 1 && wt == 2) {
            const uint8_t *s, *e;
            if (!get_len(&p, end, &s, &e)) return 2;
            while (s < e) {
                uint64_t k2;
                if (!varint(&s, e, &k2)) return 2;
                if ((k2 >> 3) == 1 && (k2 & 7) == 2) {
                    const uint8_t *ns, *ne;
                    if (!get_len(&s, e, &ns, &ne)) return 2;
                    saw_plugin = 1;
                    result = (ne - ns == 7 && memcmp(ns, "scalars", 7) == 0) ? 1 : 2;
                } else if (!skip(&s, e, (uint32_t)(k2 & 7))) {
                    return 2;
                }
            }
        } else if (!skip(&p, end, wt)) {
            return 2;
        }
    }
    return saw_plugin ? result : 2;
}

/* rank-0 DT_FLOAT TensorProto -> value; 0 when not that layout */
static int parse_float_tensor(const uint8_t *p, const uint8_t *end, float *out) {
    int dtype_ok = 0, nvals = 0;
    float val = 0;
    while (p < end) {
        uint64_t key;
        if (!varint(&p, end, &key)) return 0;
        uint32_t f = (uint32_t)(key >> 3), wt = (uint32_t)(key & 7);
        if (f == 1 && wt == 0) {
            uint64_t d;
            if (!varint(&p, end, &d)) return 0;
            dtype_ok = (d == 1);
        } else if (f == 2 && wt == 2) { /* shape: rank 0 only (no dims) */
            const uint8_t *s, *e;
            if (!get_len(&p, end, &s, &e)) return 0;
            while (s < e) {
                uint64_t k2;
                if (!varint(&s, e, &k2)) return 0;
                if ((k2 >> 3) == 2 || (k2 >> 3) == 3) return 0; /* a dim, or unknown_rank */
                if (!skip(&s, e, (uint32_t)(k2 & 7))) return 0;
            }
        } else if (f == 3 && wt == 0) {
            uint64_t v;
            if (!varint(&p, end, &v)) return 0;
        } else if (f == 4 && wt == 2) {
            const uint8_t *s, *e;
            if (!get_len(&p, end, &s, &e) || e - s != 4) return 0;
            memcpy(&val, s, 4);
            nvals++;
        } else if (f == 5 && wt == 2) {
            const uint8_t *s, *e;
            if (!get_len(&p, end, &s, &e) || e - s != 4) return 0;
            memcpy(&val, s, 4);
            nvals++;
        } else if (f == 5 && wt == 5) {
            if (end - p < 4) return 0;
            memcpy(&val, p, 4);
            p += 4;
            nvals++;
        } else {
            return 0;
        }
    }
    if (!dtype_ok || nvals != 1) return 0;
    *out = val;
    return 1;
}

#define MAXV 64
typedef struct {
    const uint8_t *tag;
    int64_t tag_len;
    float value;
    int8_t flag;
} fastval;

/* Decode an Event holding only scalar values. Returns the number of values (>0) or 0. */
static int parse_event(const uint8_t *p, const uint8_t *end, double *wall, int64_t *step,
                       fastval *vals) {
    int nv = 0, saw_summary = 0;
    *wall = 0;
    *step = 0;
    while (p < end) {
        uint64_t key;
        if (!varint(&p, end, &key)) return 0;
        uint32_t f = (uint32_t)(key >> 3), wt = (uint32_t)(key & 7);
        if (f == 1 && wt == 1) {
            if (end - p < 8) return 0;
            memcpy(wall, p, 8);
            p += 8;
        } else if (f == 2 && wt == 0) {
            uint64_t v;
            if (!varint(&p, end, &v)) return 0;
            *step = (int64_t)v;
        } else if (f == 5 && wt == 2) {
            const uint8_t *s, *e;
            if (!get_len(&p, end, &s, &e)) return 0;
            saw_summary = 1;
            while (s < e) { /* Summary */
                uint64_t k2;
                if (!varint(&s, e, &k2)) return 0;
                if ((k2 >> 3) != 1 || (k2 & 7) != 2) return 0;
                const uint8_t *vs, *ve;
                if (!get_len(&s, e, &vs, &ve)) return 0;
                if (nv == MAXV) return 0;
                fastval *fv = &vals[nv];
                int has_tag = 0, has_simple = 0, has_tensor = 0, meta = 0;
                while (vs < ve) { /* Summary.Value */
                    uint64_t k3;
                    if (!varint(&vs, ve, &k3)) return 0;
                    uint32_t f3 = (uint32_t)(k3 >> 3), w3 = (uint32_t)(k3 & 7);
                    if (f3 == 1 && w3 == 2) {
                        const uint8_t *ts, *te;
                        if (!get_len(&vs, ve, &ts, &te)) return 0;
                        fv->tag = ts;
                        fv->tag_len = te - ts;
                        has_tag = 1;
                    } else if (f3 == 2 && w3 == 5) {
                        if (ve - vs < 4) return 0;
                        memcpy(&fv->value, vs, 4);
                        vs += 4;
                        has_simple = 1;
                    } else if (f3 == 8 && w3 == 2) {
                        const uint8_t *ts, *te;
                        if (!get_len(&vs, ve, &ts, &te)) return 0;
                        if (!parse_float_tensor(ts, te, &fv->value)) return 0;
                        has_tensor = 1;
                    } else if (f3 == 9 && w3 == 2) {
                        const uint8_t *ms, *me;
                        if (!get_len(&vs, ve, &ms, &me)) return 0;
                        meta = parse_meta(ms, me);
                        if (meta != 1) return 0;
                    } else if (f3 == 7 && w3 == 2) {
                        if (!skip(&vs, ve, w3)) return 0;
                    } else {
                        return 0;
                    }
                }
                if (!has_tag || has_simple + has_tensor != 1) return 0;
                fv->flag = has_simple ? 0 : (meta == 1 ? 1 : 2);
                nv++;
            }
        } else if (f == 10 && wt == 2) {
            if (!skip(&p, end, wt)) return 0;
        } else {
            return 0;
        }
    }
    return saw_summary ? nv : 0;
}

/* ------------------------------------------------------------------ scanner */
static uint64_t rd_u64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}
static uint32_t rd_u32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* 1 = a complete valid record at pos, 2 = valid header but record not complete, 0 = corrupt
 * (either CRC wrong, or a length over max_len: no tail could be that long) */
static int record_at(const uint8_t *buf, int64_t n, int64_t pos, int check_data, uint64_t max_len,
                     uint64_t *len) {
    if (masked(crc32c(buf + pos, 8)) != rd_u32(buf + pos + 8)) return 0;
    *len = rd_u64(buf + pos);
    if (*len > max_len) return 0;
    if (*len > (uint64_t)(n - pos - 12) || (uint64_t)(n - pos - 12) - *len < 4) return 2;
    if (check_data &&
        masked(crc32c(buf + pos + 12, (size_t)*len)) != rd_u32(buf + pos + 12 + *len))
        return 0;
    return 1;
}

/* First pos >= start with a header whose length CRC is valid and length <= max_len, or -1. */
int64_t ts_find_header(const uint8_t *buf, int64_t n, int64_t start, uint64_t max_len) {
    for (int64_t q = start; n - q >= 12; q++) {
        if (masked(crc32c(buf + q, 8)) == rd_u32(buf + q + 8) && rd_u64(buf + q) <= max_len)
            return q;
    }
    return -1;
}

/* counts: out [consumed, n_points, n_others, n_bad, n_records, status(0 end, 1 full)] */
/* Scalar points go to the per-tag buffers of the tag table (take them with ts_tag_take). */
int ts_scan(const uint8_t *buf, int64_t n, int check_data, int fast, void *tabp, int64_t seq0,
            int64_t cap_o, int64_t *o_off, int64_t *o_len, int64_t *o_seq, int64_t cap_b,
            int64_t *b_start, int64_t *b_end, int64_t *counts, uint64_t max_len) {
    tagtab *tab = (tagtab *)tabp;
    int64_t pos = 0, np_ = 0, no = 0, nb = 0, nrec = 0;
    int status = 0;
    fastval vals[MAXV];
    while (n - pos >= 12) {
        uint64_t len = 0;
        int r = record_at(buf, n, pos, check_data, max_len, &len);
        if (r == 2) break;
        if (r == 0) {
            if (nb == cap_b) {
                status = 1;
                break;
            }
            int64_t q = pos + 1;
            for (; n - q >= 12; q++) {
                uint64_t l2;
                if (record_at(buf, n, q, check_data, max_len, &l2) != 0) break;
            }
            b_start[nb] = pos;
            b_end[nb] = q;
            nb++;
            pos = q;
            continue;
        }
        const uint8_t *payload = buf + pos + 12;
        int nv = 0;
        double wall;
        int64_t step;
        if (fast) nv = parse_event(payload, payload + len, &wall, &step, vals);
        if (nv > 0) {
            for (int i = 0; i < nv; i++) {
                int32_t id = tagtab_id(tab, vals[i].tag, vals[i].tag_len);
                if (id < 0) return -1;
                if (tagbuf_push(&tab->bufs[id], step, wall, (double)vals[i].value, seq0 + nrec,
                                vals[i].flag) != 0)
                    return -1;
                np_++;
            }
        } else {
            if (no == cap_o) {
                status = 1;
                break;
            }
            o_off[no] = pos + 12;
            o_len[no] = (int64_t)len;
            o_seq[no] = seq0 + nrec;
            no++;
        }
        nrec++;
        pos += 16 + (int64_t)len;
    }
    counts[0] = pos;
    counts[1] = np_;
    counts[2] = no;
    counts[3] = nb;
    counts[4] = nrec;
    counts[5] = status;
    return 0;
}
