/* The simhash of crawlkit/dedup/simhash.py in one pass over a text's code points.
 *
 * Contract: simhash(text) is exactly simhash_numpy(text) for every str, or None for a
 * text this pass leaves to numpy (a capital sigma, whose lowercase depends on the
 * letters around it, or a dotted capital I, whose lowercase is two characters). The
 * tables are the numpy module's own, handed over by set_tables() and, before the first
 * text that is not ASCII, set_unicode_tables(), each once; simhash() raises
 * RuntimeError if the tables it needs are not set. tests/dedup/test_simhash_same_values.py
 * compares both paths with a copy of the first implementation.
 *
 * How: the numpy path makes a dozen passes over a page's text, each a numpy call with
 * its own temporary array (separating, lowering, pair sums, edges, mixing, sorting,
 * voting). Here one loop reads the code points (the str's own 1, 2 or 4-byte units:
 * no encoding), looks a non-ASCII one's class (word, separator, left out) and
 * lowercase up in tables of planes 0 and 1, and sums each word's polynomial hash over
 * the UTF-8 bytes of its lowercase as they go by; date words and words of digits are
 * left out by the numpy path's bucket table. A second loop mixes the 3-shingles,
 * keeps each distinct one once (an open-addressing set instead of a sort) and counts
 * its votes at once, bit-sliced as the numpy path does. The interpreter lock is let go
 * while a long text is hashed.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define PLANES 0x20000u          /* the code points the class and lowercase tables cover */
#define TAGS_START 0xE0000u      /* plane 14's tags: a table of their own */
#define TAGS_END 0xE1000u
#define PRIVATE_PLANES 0xF0000u  /* planes 15 and 16: private use, separators */
#define NO_LOWER 0xFFFFFFFFu     /* in the lowercase table: leave the text to numpy */
#define KIND_WORD 0
#define KIND_SPACE 1
#define DATE_BITS 0x3FFFu        /* the date table's buckets: a word sum's low 14 bits */
#define NOGIL_FROM 4096          /* code points from which the lock is let go */

/* crawlkit/dedup/simhash.py's constants: the inverse of the FNV-64 prime modulo 2**64,
 * the shingle multipliers and MurmurHash3's finaliser. */
static const uint64_t BASE_INV = 0xCE965057AFF6957BULL;
static const uint64_t MUL1 = 0x9E3779B97F4A7C15ULL;
static const uint64_t MUL2 = 0xC2B2AE3D27D4EB4FULL;
static const uint64_t MUL3 = 0x165667B19E3779F9ULL;
static const uint64_t LOW_BITS = 0x0101010101010101ULL;

static uint64_t byte_values[256];   /* a byte's term in a word's hash (0: none) */
static uint8_t byte_is_word[256];   /* whether a byte belongs to a word */
static uint64_t date_sums[DATE_BITS + 1];
static uint8_t kinds_low[PLANES];   /* a non-ASCII code point's class, below PLANES */
static uint8_t kinds_tags[TAGS_END - TAGS_START];
static uint32_t lowercase[PLANES];  /* its lowercase, or NO_LOWER */
static int have_tables = 0, have_unicode_tables = 0;

static inline uint64_t fmix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xFF51AFD7ED558CCDULL;
    x ^= x >> 33;
    x *= 0xC4CEB9FE1A85EC53ULL;
    x ^= x >> 33;
    return x;
}

typedef struct {
    uint64_t *words; /* the mixed hashes of the words kept, in order */
    Py_ssize_t count;
    uint64_t word, power;
    int in_word;
} Words;

static inline void end_word(Words *w) {
    w->in_word = 0;
    /* Words of digits only (sum 0) and date words equal their bucket's entry. */
    if (w->word != date_sums[w->word & DATE_BITS])
        w->words[w->count++] = fmix(w->word);
}

static inline void word_byte(Words *w, uint8_t byte) {
    if (!w->in_word) {
        w->in_word = 1;
        w->word = 0;
        w->power = 1;
    }
    w->word += byte_values[byte] * w->power;
    w->power *= BASE_INV;
}

static inline void ascii_byte(Words *w, uint8_t byte) {
    if (byte_is_word[byte])
        word_byte(w, byte);
    else if (w->in_word)
        end_word(w);
}

/* One code point of 0x80 and up; 0 when the text is left to numpy. */
static inline int other_point(Words *w, uint32_t point) {
    int kind;
    if (point < PLANES)
        kind = kinds_low[point];
    else if (point >= TAGS_START && point < TAGS_END)
        kind = kinds_tags[point - TAGS_START];
    else
        kind = point >= PRIVATE_PLANES ? KIND_SPACE : KIND_WORD;
    if (kind == KIND_SPACE) {
        if (w->in_word)
            end_word(w);
        return 1;
    }
    if (kind != KIND_WORD)
        return 1; /* an invisible format character: the word goes on */
    if (point < PLANES) {
        point = lowercase[point];
        if (point == NO_LOWER)
            return 0;
    }
    /* The lowercase's UTF-8 bytes (surrogates as "surrogatepass" writes them). A
     * lowercase may be ASCII (the Kelvin sign's k): its byte then goes by the tables. */
    if (point < 0x80) {
        ascii_byte(w, (uint8_t)point);
    } else if (point < 0x800) {
        word_byte(w, (uint8_t)(0xC0 | (point >> 6)));
        word_byte(w, (uint8_t)(0x80 | (point & 0x3F)));
    } else if (point < 0x10000) {
        word_byte(w, (uint8_t)(0xE0 | (point >> 12)));
        word_byte(w, (uint8_t)(0x80 | ((point >> 6) & 0x3F)));
        word_byte(w, (uint8_t)(0x80 | (point & 0x3F)));
    } else {
        word_byte(w, (uint8_t)(0xF0 | (point >> 18)));
        word_byte(w, (uint8_t)(0x80 | ((point >> 12) & 0x3F)));
        word_byte(w, (uint8_t)(0x80 | ((point >> 6) & 0x3F)));
        word_byte(w, (uint8_t)(0x80 | (point & 0x3F)));
    }
    return 1;
}

/* The words of a text of n code units of TYPE; 0 when it is left to numpy. */
#define WALK(NAME, TYPE)                                                     \
    static int NAME(Words *w, const void *data, Py_ssize_t n) {              \
        const TYPE *units = (const TYPE *)data;                              \
        for (Py_ssize_t i = 0; i < n; i++) {                                 \
            uint32_t point = units[i];                                       \
            if (point < 0x80)                                                \
                ascii_byte(w, (uint8_t)point);                               \
            else if (!other_point(w, point))                                 \
                return 0;                                                    \
        }                                                                    \
        if (w->in_word)                                                      \
            end_word(w);                                                     \
        return 1;                                                            \
    }
WALK(walk_ucs1, Py_UCS1)
WALK(walk_ucs2, Py_UCS2)
WALK(walk_ucs4, Py_UCS4)

static inline void add_lanes(uint64_t lanes[8], int64_t votes[64]) {
    for (int b = 0; b < 8; b++) {
        for (int j = 0; j < 8; j++)
            votes[8 * j + b] += (int64_t)((lanes[b] >> (8 * j)) & 0xFF);
        lanes[b] = 0;
    }
}

/* The simhash of the word hashes; -1 when out of memory. */
static int votes_of(const uint64_t *words, Py_ssize_t count, uint64_t *result) {
    *result = 0;
    if (count == 0)
        return 0;
    Py_ssize_t shingles = count >= 3 ? count - 2 : 1;
    size_t slots = 1;
    while (slots < 2 * (size_t)shingles)
        slots <<= 1;
    uint64_t *table = calloc(slots, sizeof(uint64_t));
    if (table == NULL)
        return -1;
    uint64_t mask = slots - 1, lanes[8] = {0};
    int64_t votes[64] = {0}, distinct = 0;
    int in_lanes = 0, zero_seen = 0; /* 0 marks a free slot: a shingle of 0 is kept apart */
    for (Py_ssize_t k = 0; k < shingles; k++) {
        uint64_t feature;
        if (count >= 3)
            feature = words[k] * MUL1 + words[k + 1] * MUL2 + words[k + 2] * MUL3;
        else if (count == 2)
            feature = words[0] * MUL1 + words[1] * MUL2;
        else
            feature = words[0] * MUL1;
        feature = fmix(feature);
        if (feature == 0) {
            if (zero_seen)
                continue;
            zero_seen = 1;
        } else {
            /* The hashes are mixed, so their low bits spread them over the slots. */
            uint64_t slot = feature & mask;
            while (table[slot] != 0 && table[slot] != feature)
                slot = (slot + 1) & mask;
            if (table[slot] == feature)
                continue;
            table[slot] = feature;
        }
        distinct++;
        /* Bit-sliced: byte j of lanes[b] counts bit 8 * j + b, 255 at most. */
        for (int b = 0; b < 8; b++)
            lanes[b] += (feature >> b) & LOW_BITS;
        if (++in_lanes == 255) {
            add_lanes(lanes, votes);
            in_lanes = 0;
        }
    }
    free(table);
    add_lanes(lanes, votes);
    /* A bit is set when more than half of the distinct shingles have it (ties clear it). */
    for (int bit = 0; bit < 64; bit++)
        if (votes[bit] > distinct / 2)
            *result |= 1ULL << bit;
    return 0;
}

static PyObject *simhash(PyObject *module, PyObject *text) {
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "simhash() takes a str");
        return NULL;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(text) < 0) /* (a legacy str; every str is ready from 3.12) */
        return NULL;
#endif
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int ascii = PyUnicode_IS_ASCII(text);
    if (!have_tables || (!ascii && !have_unicode_tables)) {
        PyErr_SetString(PyExc_RuntimeError, "simhash(): the tables are not set");
        return NULL;
    }
    Words w = {0};
    /* Each word is at least one code point and a separator follows it. */
    w.words = PyMem_RawMalloc(((size_t)n / 2 + 2) * sizeof(uint64_t));
    if (w.words == NULL)
        return PyErr_NoMemory();
    int kind = PyUnicode_KIND(text), whole = 1, failed = 0;
    const void *data = PyUnicode_DATA(text);
    uint64_t result = 0;
    /* The str is immutable and its caller holds it: it can be read without the lock. */
    PyThreadState *released = n >= NOGIL_FROM ? PyEval_SaveThread() : NULL;
    if (kind == PyUnicode_1BYTE_KIND)
        whole = walk_ucs1(&w, data, n);
    else if (kind == PyUnicode_2BYTE_KIND)
        whole = walk_ucs2(&w, data, n);
    else
        whole = walk_ucs4(&w, data, n);
    if (whole)
        failed = votes_of(w.words, w.count, &result);
    if (released != NULL)
        PyEval_RestoreThread(released);
    PyMem_RawFree(w.words);
    if (failed)
        return PyErr_NoMemory();
    if (!whole)
        Py_RETURN_NONE;
    return PyLong_FromUnsignedLongLong(result);
}

/* crawlkit/html/page.py's collapsed_length: the UTF-8 bytes of a text once each run of
 * ASCII white space (space, tab, LF, VT, FF, CR) is one space and the ends are trimmed;
 * a lone surrogate counts 3 bytes, as "surrogatepass" encodes it. Here because it is
 * the page text's other pass: numpy's took ~35 us for a testweb page's 20 KB of text. */
/* Branch-free over each code point and the one before it (no carried state), in
 * blocks counted in 32 bits, so the compiler vectorizes it: a word starts where white
 * space ends, and a code point counts its UTF-8 bytes unless it is white space. */
#define IS_SPACE(c) (((c) == ' ') | ((c) - 9u <= 4u)) /* space, tab, LF, VT, FF, CR */

/* The common case, Latin-1 text, in byte lanes: blocks of 127 code points count in 8
 * bits (at most 2 bytes each), four times the lanes of the loop below. */
static void collapsed_ucs1(const Py_UCS1 *units, Py_ssize_t n, Py_ssize_t *bytes,
                           Py_ssize_t *words) {
    *bytes = 0;
    *words = n > 0 && !IS_SPACE((uint8_t)units[0]);
    for (Py_ssize_t start = 0; start < n; start += 127) {
        Py_ssize_t end = n - start < 127 ? n : start + 127;
        uint8_t block_bytes = 0, block_words = 0;
        for (Py_ssize_t i = start; i < end; i++) {
            uint8_t c = units[i];
            uint8_t word = ((c == ' ') | ((uint8_t)(c - 9) <= 4)) ^ 1;
            block_bytes += (uint8_t)(word + (word & (c >> 7)));
        }
        for (Py_ssize_t i = start > 0 ? start : 1; i < end; i++) {
            uint8_t before = units[i - 1], c = units[i];
            uint8_t space_before = (before == ' ') | ((uint8_t)(before - 9) <= 4);
            uint8_t space = (c == ' ') | ((uint8_t)(c - 9) <= 4);
            block_words += space_before & !space;
        }
        *bytes += block_bytes;
        *words += block_words;
    }
}

#define BLOCK ((Py_ssize_t)1 << 20)
#define COLLAPSED(NAME, TYPE)                                                          \
    static void NAME(const TYPE *units, Py_ssize_t n, Py_ssize_t *bytes, Py_ssize_t *words) { \
        *bytes = 0;                                                                    \
        *words = n > 0 && !IS_SPACE((uint32_t)units[0]);                               \
        for (Py_ssize_t start = 0; start < n; start += BLOCK) {                        \
            Py_ssize_t end = n - start < BLOCK ? n : start + BLOCK;                    \
            uint32_t block_bytes = 0, block_words = 0;                                 \
            for (Py_ssize_t i = start; i < end; i++) {                                 \
                uint32_t c = units[i];                                                 \
                block_bytes += !IS_SPACE(c) * (1 + (c >= 0x80) + (c >= 0x800) + (c >= 0x10000)); \
            }                                                                          \
            for (Py_ssize_t i = start > 0 ? start : 1; i < end; i++)                   \
                block_words += IS_SPACE((uint32_t)units[i - 1]) & !IS_SPACE((uint32_t)units[i]); \
            *bytes += block_bytes;                                                     \
            *words += block_words;                                                     \
        }                                                                              \
    }
COLLAPSED(collapsed_ucs2, Py_UCS2)
COLLAPSED(collapsed_ucs4, Py_UCS4)

static PyObject *collapsed_length(PyObject *module, PyObject *text) {
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "collapsed_length() takes a str");
        return NULL;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(text) < 0)
        return NULL;
#endif
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), bytes = 0, words = 0;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    if (kind == PyUnicode_1BYTE_KIND)
        collapsed_ucs1(data, n, &bytes, &words);
    else if (kind == PyUnicode_2BYTE_KIND)
        collapsed_ucs2(data, n, &bytes, &words);
    else
        collapsed_ucs4(data, n, &bytes, &words);
    return PyLong_FromSsize_t(words ? bytes + words - 1 : 0);
}

/* Copy a bytes-like object of exactly `size` bytes into `target`. */
static int copy_table(PyObject *source, void *target, size_t size, const char *name) {
    Py_buffer view;
    if (PyObject_GetBuffer(source, &view, PyBUF_SIMPLE) < 0)
        return -1;
    int ok = (size_t)view.len == size;
    if (ok)
        memcpy(target, view.buf, size);
    else
        PyErr_Format(PyExc_ValueError, "%s must be %zu bytes", name, size);
    PyBuffer_Release(&view);
    return ok ? 0 : -1;
}

typedef struct {
    void *target;
    size_t size;
    const char *name;
} Table;

/* Copy the three arguments into the three tables, once: `*set` says they are (a text
 * may be read with them while the lock is let go, so they are never rewritten). */
static PyObject *set_three(PyObject *args, const char *format, const Table tables[3], int *set) {
    PyObject *sources[3];
    if (!PyArg_ParseTuple(args, format, &sources[0], &sources[1], &sources[2]))
        return NULL;
    if (*set)
        Py_RETURN_NONE;
    for (int i = 0; i < 3; i++)
        if (copy_table(sources[i], tables[i].target, tables[i].size, tables[i].name) < 0)
            return NULL;
    *set = 1;
    Py_RETURN_NONE;
}

/* What set_tables() and set_unicode_tables() fill, in their arguments' order. */
static const Table BYTE_TABLES[3] = {
    {byte_values, sizeof byte_values, "values"},
    {byte_is_word, sizeof byte_is_word, "is_word"},
    {date_sums, sizeof date_sums, "dates"},
};
static const Table UNICODE_TABLES[3] = {
    {kinds_low, sizeof kinds_low, "kinds_low"},
    {kinds_tags, sizeof kinds_tags, "kinds_tags"},
    {lowercase, sizeof lowercase, "lowercase"},
};

static PyObject *set_tables(PyObject *module, PyObject *args) {
    return set_three(args, "OOO:set_tables", BYTE_TABLES, &have_tables);
}

static PyObject *set_unicode_tables(PyObject *module, PyObject *args) {
    return set_three(args, "OOO:set_unicode_tables", UNICODE_TABLES, &have_unicode_tables);
}

static PyObject *unicode_tables_set(PyObject *module, PyObject *unused) {
    return PyBool_FromLong(have_unicode_tables);
}

static PyMethodDef methods[] = {
    {"simhash", simhash, METH_O,
     "simhash(text) -> int | None: simhash_numpy(text), or None where numpy must do it."},
    {"collapsed_length", collapsed_length, METH_O,
     "collapsed_length(text) -> int: crawlkit.html.page.collapsed_length(text)."},
    {"set_tables", set_tables, METH_VARARGS,
     "set_tables(values, is_word, dates): the byte and date tables (uint64, uint8, uint64)."},
    {"set_unicode_tables", set_unicode_tables, METH_VARARGS,
     "set_unicode_tables(kinds_low, kinds_tags, lowercase): non-ASCII classes (uint8) "
     "and lowercases (uint32)."},
    {"unicode_tables_set", unicode_tables_set, METH_NOARGS,
     "unicode_tables_set() -> bool: whether set_unicode_tables() has run."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "crawlkit.dedup._simhash",
    "crawlkit's simhash, and the page text's collapsed length, in C (see "
    "crawlkit/dedup/_simhash.c).", -1, methods,
};

PyMODINIT_FUNC PyInit__simhash(void) { return PyModule_Create(&module_def); }
