/* crawlkit.html's per-page work in C, each function the twin of Python code that stays
 * (the path without a C compiler, and the reference the tests hold this to):
 *
 * - Core: crawlkit/html/resolve.py's resolver core (PyCore): the cache key, the cache,
 *   and the plain-path shortcut, for every href a page links to;
 * - requisite_markers: crawlkit/html/links.py's requisite_markers_py, whether a page's
 *   bytes can hold a CSS requisite at all.
 *
 * Core's contract: Core(...).resolve(href, base, authority) returns what PyCore's does, for
 * every str, and leaves the same entries in the same dicts (the cache and the
 * authorities, both the Python object's own) with the same byte estimate.
 * tests/html/test_speedups.py holds both to the canonicalizer and to each other.
 *
 * Why: a testweb page has ~36 hrefs, a real one ~155; half of a testweb page's miss
 * the cache (links to pages not seen yet). In Python a hit cost 0.8 µs and a miss 4 µs
 * (the key's tests, the shortcut's string tests and joins, the entry), ~0.1 ms a page
 * of the extract process's ~0.7. Here the string work is loops over the str's own code
 * units; what stays in Python is what must agree with the canonicalizer's rules: the
 * query's (query_part), a new authority's (host_site) and any href the shortcut does
 * not take (parse); the fingerprint is xxhash's, called at once.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "structmember.h"
#include <string.h>

/* An ASCII character's classes (resolve.py's patterns). */
#define PATH_OK 1    /* _CLEAN: unreserved and "/" */
#define QUERY_OK 2   /* _CLEAN_QUERY: unreserved, "=", "&", "+" */
#define REL_START 4  /* _PATH_START: what may start a relative-path reference */
#define SCHEME_OK 8  /* after a scheme's first letter: letters, digits, "+", ".", "-" */
#define NAME_OK 16   /* a host name's character in _CLEAN_HOST: a-z, 0-9, "-" */
static unsigned char classes[128];

/* resolve.py's _ENTRY_BYTES: an entry's bytes besides its strings. */
#define ENTRY_BYTES 400

typedef struct {
    PyObject_HEAD
    PyObject *cache;       /* dict: (key, href) -> ParsedURL | None */
    PyObject *authorities; /* dict: authority -> (host, site) | None (host_site fills it) */
    PyObject *parse;       /* parse(href, base) -> ParsedURL | None */
    PyObject *query_part;  /* query_part(raw_query) -> "?..." or "" */
    PyObject *host_site;   /* host_site(authority) -> (host, site) | None */
    PyObject *fingerprint; /* fingerprint(url's UTF-8 bytes) -> str */
    PyObject *parsed_type; /* ParsedURL (a tuple subclass) */
    Py_ssize_t max_entries, max_bytes, bytes;
    PyObject *key_base, *key_dir; /* the last base and its directory key */
} Core;

static PyObject *empty_str;

static inline Py_UCS4 at(PyObject *s, Py_ssize_t i) {
    return PyUnicode_READ(PyUnicode_KIND(s), PyUnicode_DATA(s), i);
}

static inline int is(Py_UCS4 c, int cls) { return c < 128 && (classes[c] & cls); }

static int starts_with(PyObject *s, Py_ssize_t from, const char *prefix) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    for (Py_ssize_t i = 0; prefix[i]; i++)
        if (from + i >= n || at(s, from + i) != (Py_UCS4)(unsigned char)prefix[i])
            return 0;
    return 1;
}

static inline int http_prefix(PyObject *s) {
    return starts_with(s, 0, "http://") || starts_with(s, 0, "https://");
}

/* The first index of c in s[start:end], or end. */
static Py_ssize_t find(PyObject *s, Py_UCS4 c, Py_ssize_t start, Py_ssize_t end) {
    for (Py_ssize_t i = start; i < end; i++)
        if (at(s, i) == c)
            return i;
    return end;
}

/* resolve.py's _clean_path over s[a:b]. */
static int clean_path(PyObject *s, Py_ssize_t a, Py_ssize_t b) {
    if (a < b && at(s, a) == '.')
        return 0;
    for (Py_ssize_t i = a; i < b; i++) {
        Py_UCS4 c = at(s, i);
        if (!is(c, PATH_OK) || (c == '/' && i + 1 < b && at(s, i + 1) == '.'))
            return 0;
    }
    return 1;
}

static int all_of(PyObject *s, Py_ssize_t a, Py_ssize_t b, int cls) {
    for (Py_ssize_t i = a; i < b; i++)
        if (!is(at(s, i), cls))
            return 0;
    return 1;
}

/* _relative_path(href). */
static int relative_path(PyObject *h) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(h);
    if (n == 0 || !is(at(h, 0), REL_START))
        return 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = at(h, i);
        if (c == '\t' || c == '\n' || c == '\r')
            return 0;
    }
    Py_UCS4 first = at(h, 0);
    if ((first | 0x20) >= 'a' && (first | 0x20) <= 'z') { /* _SCHEME.match */
        Py_ssize_t i = 1;
        while (i < n && is(at(h, i), SCHEME_OK))
            i++;
        if (i < n && at(h, i) == ':')
            return 0;
    }
    return 1;
}

/* An IPv4 octet of _CLEAN_HOST in s[a:b]: 0-255, no leading zero. */
static int octet(PyObject *s, Py_ssize_t a, Py_ssize_t b) {
    Py_ssize_t n = b - a;
    if (n < 1 || n > 3)
        return 0;
    int value = 0;
    for (Py_ssize_t i = a; i < b; i++) {
        Py_UCS4 c = at(s, i);
        if (c < '0' || c > '9')
            return 0;
        value = value * 10 + (int)(c - '0');
    }
    return (n == 1 || at(s, a) != '0') && value <= 255;
}

/* _CLEAN_HOST.fullmatch(s[a:b]): a name whose last label has a letter or "-", or a
 * dotted quad; then ":" and 1 to 5 digits, or nothing. */
static int clean_host(PyObject *s, Py_ssize_t a, Py_ssize_t b) {
    Py_ssize_t colon = find(s, ':', a, b);
    if (colon < b) {
        Py_ssize_t digits = b - colon - 1;
        if (digits < 1 || digits > 5)
            return 0;
        for (Py_ssize_t i = colon + 1; i < b; i++)
            if (at(s, i) < '0' || at(s, i) > '9')
                return 0;
    }
    /* a name: labels of [a-z0-9-], none empty, the last with a letter or "-" */
    int name = colon > a, letter = 0;
    Py_ssize_t label = a;
    for (Py_ssize_t i = a; name && i < colon; i++) {
        Py_UCS4 c = at(s, i);
        if (c == '.') {
            name = i > label;
            label = i + 1;
            letter = 0;
        } else if (is(c, NAME_OK)) {
            letter |= c == '-' || (c >= 'a' && c <= 'z');
        } else {
            name = 0;
        }
    }
    if (name && label < colon && letter)
        return 1;
    /* a dotted quad */
    Py_ssize_t start = a;
    for (int k = 0; k < 4; k++) {
        Py_ssize_t end = k < 3 ? find(s, '.', start, colon) : colon;
        if (end >= colon && k < 3)
            return 0;
        if (!octet(s, start, end))
            return 0;
        start = end + 1;
    }
    return 1;
}

/* _directory_key(base, authority), borrowed (kept in the core). */
static PyObject *directory_key(Core *self, PyObject *base, PyObject *authority) {
    if (self->key_base != base) {
        int same = self->key_base != NULL && PyUnicode_Compare(self->key_base, base) == 0;
        if (PyErr_Occurred())
            return NULL;
        if (!same) {
            Py_ssize_t n = PyUnicode_GET_LENGTH(base);
            Py_ssize_t cut = find(base, '?', 0, n);
            cut = find(base, '#', 0, cut);
            Py_ssize_t slash = cut - 1;
            while (slash >= 0 && at(base, slash) != '/')
                slash--;
            PyObject *dir = slash >= PyUnicode_GET_LENGTH(authority)
                                ? PyUnicode_Substring(base, 0, slash + 1)
                                : (Py_INCREF(base), base);
            if (dir == NULL)
                return NULL;
            Py_XSETREF(self->key_dir, dir);
        }
        Py_INCREF(base);
        Py_XSETREF(self->key_base, base);
    }
    return self->key_dir;
}

/* (host, site) of a canonical authority, from the authorities dict or made by host_site
 * (which keeps it there), a new reference; NULL with no error set: not canonical. */
static PyObject *host_site(Core *self, PyObject *authority) {
    PyObject *info = PyDict_GetItemWithError(self->authorities, authority);
    if (info != NULL)
        Py_INCREF(info);
    else if (PyErr_Occurred() || (info = PyObject_CallOneArg(self->host_site, authority)) == NULL)
        return NULL;
    if (info == Py_None) {
        Py_DECREF(info);
        return NULL;
    }
    return info;
}

#define NOT_PLAIN 1 /* fast(): leave it to parse */

/* PyCore._fast: the plain-path cases. Sets *out to a new ParsedURL and returns 0,
 * returns NOT_PLAIN, or -1 on an error. */
static int fast(Core *self, PyObject *h, PyObject *base, PyObject *authority, PyObject **out) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(h), auth_len = PyUnicode_GET_LENGTH(authority);
    Py_ssize_t end = find(h, '#', 0, n), q = find(h, '?', 0, end);
    if (q < end && !all_of(h, q + 1, end, QUERY_OK))
        return NOT_PLAIN;
    PyObject *path = NULL, *url = NULL, *host_auth = NULL, *owned = NULL, *dir = NULL;
    int result = NOT_PLAIN;
    if (starts_with(h, 0, "//")) {
        /* scheme-relative: the base's scheme, then as an absolute URL */
        Py_ssize_t colon = find(authority, ':', 0, auth_len);
        if (colon == auth_len)
            return NOT_PLAIN;
        PyObject *scheme = PyUnicode_Substring(authority, 0, colon + 1);
        PyObject *rest = scheme ? PyUnicode_Substring(h, 0, q) : NULL;
        path = rest ? PyUnicode_Concat(scheme, rest) : NULL;
        Py_XDECREF(scheme);
        Py_XDECREF(rest);
    } else {
        path = PyUnicode_Substring(h, 0, q);
    }
    if (path == NULL)
        return -1;
    Py_ssize_t plen = PyUnicode_GET_LENGTH(path);
    if (starts_with(path, 0, "/")) {
        if (!(PyUnicode_GET_LENGTH(base) > auth_len && at(base, auth_len) == '/' &&
              PyUnicode_Tailmatch(base, authority, 0, auth_len, -1) == 1) ||
            !clean_path(path, 0, plen))
            goto done;
        host_auth = authority;
        Py_INCREF(host_auth);
        url = PyUnicode_Concat(authority, path);
    } else if (http_prefix(path)) {
        Py_ssize_t start = at(path, 4) == 's' ? 8 : 7;
        Py_ssize_t slash = find(path, '/', start, plen);
        if (slash == plen || !clean_host(path, start, slash) || !clean_path(path, slash, plen))
            goto done;
        host_auth = PyUnicode_Substring(path, 0, slash);
        url = path;
        Py_INCREF(url);
    } else {
        if (plen == 0 || starts_with(h, 0, "//"))
            goto done; /* (a scheme-relative href not to http(s): ":" is not clean) */
        PyObject *key = directory_key(self, base, authority);
        if (key == NULL) {
            result = -1;
            goto done;
        }
        Py_ssize_t key_len = PyUnicode_GET_LENGTH(key);
        if (!(key_len > auth_len && at(key, auth_len) == '/' && clean_path(key, auth_len, key_len)))
            goto done;
        /* _climb: leading "./" and "../" (and a last "." or "..") */
        Py_ssize_t dir_end = key_len, p = 0;
        while (p < plen && at(path, p) == '.') {
            if (starts_with(path, p, "./") || plen - p == 1) {
                p += 2;
            } else if (starts_with(path, p, "../") || (plen - p == 2 && at(path, p + 1) == '.')) {
                p += 3;
                if (dir_end > auth_len + 1) {
                    dir_end -= 2; /* the "/" before the last one */
                    while (at(key, dir_end) != '/')
                        dir_end--;
                    dir_end++;
                }
            } else {
                break;
            }
        }
        if (p > plen)
            p = plen;
        if (p < plen && !clean_path(path, p, plen))
            goto done;
        dir = PyUnicode_Substring(key, 0, dir_end);
        PyObject *tail = dir ? PyUnicode_Substring(path, p, plen) : NULL;
        url = tail ? PyUnicode_Concat(dir, tail) : NULL;
        Py_XDECREF(tail);
        host_auth = authority;
        Py_INCREF(host_auth);
    }
    if (url == NULL || host_auth == NULL) {
        result = -1;
        goto done;
    }
    PyObject *info = owned = host_site(self, host_auth);
    if (info == NULL) {
        result = PyErr_Occurred() ? -1 : NOT_PLAIN;
        goto done;
    }
    if (!PyTuple_Check(info) || PyTuple_GET_SIZE(info) != 2) {
        PyErr_SetString(PyExc_TypeError, "host_site must give (host, site) or None");
        result = -1;
        goto done;
    }
    if (q < end) {
        PyObject *raw = PyUnicode_Substring(h, q + 1, end);
        PyObject *query = raw ? PyObject_CallOneArg(self->query_part, raw) : NULL;
        Py_XDECREF(raw);
        if (query == NULL || !PyUnicode_Check(query)) {
            if (query != NULL)
                PyErr_SetString(PyExc_TypeError, "query_part must give a str");
            Py_XDECREF(query);
            result = -1;
            goto done;
        }
        PyUnicode_Append(&url, query);
        Py_DECREF(query);
        if (url == NULL) {
            result = -1;
            goto done;
        }
    }
    PyObject *utf8 = PyUnicode_AsUTF8String(url);
    PyObject *fp = utf8 ? PyObject_CallOneArg(self->fingerprint, utf8) : NULL;
    Py_XDECREF(utf8);
    PyObject *items = fp ? PyTuple_Pack(4, url, PyTuple_GET_ITEM(info, 0),
                                        PyTuple_GET_ITEM(info, 1), fp)
                         : NULL;
    PyObject *args = items ? PyTuple_Pack(1, items) : NULL;
    *out = args ? PyTuple_Type.tp_new((PyTypeObject *)self->parsed_type, args, NULL) : NULL;
    Py_XDECREF(fp);
    Py_XDECREF(items);
    Py_XDECREF(args);
    result = *out == NULL ? -1 : 0;
done:
    Py_XDECREF(path);
    Py_XDECREF(url);
    Py_XDECREF(host_auth);
    Py_XDECREF(owned);
    Py_XDECREF(dir);
    return result;
}

/* PyCore.resolve. */
static PyObject *Core_resolve(Core *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyUnicode_Check(args[0]) || !PyUnicode_Check(args[1]) ||
        !PyUnicode_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "resolve(href, base, authority) takes three str");
        return NULL;
    }
    PyObject *h = args[0], *base = args[1], *authority = args[2];
    PyObject *key0, *key = NULL, *parsed = NULL, *owned_key0 = NULL;
    Py_INCREF(h);
    if (PyUnicode_GET_LENGTH(h) > 0 && at(h, 0) == '#') {
        /* A fragment only names the base, and no rule level keeps fragments. */
        Py_ssize_t n = PyUnicode_GET_LENGTH(base);
        Py_SETREF(h, PyUnicode_Substring(base, 0, find(base, '#', 0, n)));
        if (h == NULL)
            return NULL;
    }
    Py_ssize_t n = PyUnicode_GET_LENGTH(h);
    if (http_prefix(h) && find(h, '\t', 0, n) == n && find(h, '\n', 0, n) == n) {
        key0 = empty_str;
    } else if (starts_with(h, 0, "//")) {
        Py_ssize_t len = PyUnicode_GET_LENGTH(authority);
        key0 = owned_key0 = PyUnicode_Substring(authority, 0, find(authority, ':', 0, len));
    } else if (starts_with(h, 0, "/")) {
        key0 = authority;
    } else if (relative_path(h)) {
        key0 = directory_key(self, base, authority);
    } else {
        key0 = base;
    }
    if (key0 == NULL)
        goto fail;
    key = PyTuple_Pack(2, key0, h);
    if (key == NULL)
        goto fail;
    parsed = PyDict_GetItemWithError(self->cache, key);
    if (parsed != NULL) {
        Py_INCREF(parsed);
        goto out;
    }
    if (PyErr_Occurred())
        goto fail;
    int plain = fast(self, h, base, authority, &parsed);
    if (plain < 0)
        goto fail;
    if (plain == NOT_PLAIN) {
        parsed = PyObject_CallFunctionObjArgs(self->parse, h, base, NULL);
        if (parsed == NULL)
            goto fail;
    }
    Py_ssize_t cost = ENTRY_BYTES + 2 * (PyUnicode_GET_LENGTH(key0) + n);
    if (parsed != Py_None) {
        PyObject *url = PyTuple_Check(parsed) && PyTuple_GET_SIZE(parsed) > 0
                            ? PyTuple_GET_ITEM(parsed, 0)
                            : NULL;
        if (url == NULL || !PyUnicode_Check(url)) {
            PyErr_SetString(PyExc_TypeError, "parse must give a ParsedURL or None");
            goto fail;
        }
        cost += PyUnicode_GET_LENGTH(url);
    }
    if (PyDict_GET_SIZE(self->cache) >= self->max_entries || self->bytes + cost > self->max_bytes) {
        PyDict_Clear(self->cache);
        PyDict_Clear(self->authorities);
        self->bytes = 0;
    }
    if (PyDict_SetItem(self->cache, key, parsed) < 0)
        goto fail;
    self->bytes += cost;
out:
    Py_DECREF(h);
    Py_XDECREF(key);
    Py_XDECREF(owned_key0);
    return parsed;
fail:
    Py_XDECREF(parsed);
    parsed = NULL;
    goto out;
}

static int Core_init(Core *self, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"cache", "authorities", "parse", "query_part", "host_site",
                            "fingerprint", "parsed_type", "max_entries", "max_bytes", NULL};
    PyObject *cache, *authorities, *parse, *query_part, *host_site_, *fingerprint, *parsed_type;
    Py_ssize_t max_entries, max_bytes;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!O!OOOOO!nn:Core", names, &PyDict_Type,
                                     &cache, &PyDict_Type, &authorities, &parse, &query_part,
                                     &host_site_, &fingerprint, &PyType_Type, &parsed_type,
                                     &max_entries, &max_bytes))
        return -1;
    if (!PyType_IsSubtype((PyTypeObject *)parsed_type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "parsed_type must be a tuple subclass");
        return -1;
    }
    PyObject *objects[] = {cache, authorities, parse, query_part, host_site_, fingerprint,
                           parsed_type};
    PyObject **slots[] = {&self->cache, &self->authorities, &self->parse, &self->query_part,
                          &self->host_site, &self->fingerprint, &self->parsed_type};
    for (int i = 0; i < 7; i++) {
        Py_INCREF(objects[i]);
        Py_XSETREF(*slots[i], objects[i]);
    }
    self->max_entries = max_entries;
    self->max_bytes = max_bytes;
    self->bytes = 0;
    Py_CLEAR(self->key_base);
    Py_CLEAR(self->key_dir);
    return 0;
}

static int Core_traverse(Core *self, visitproc visit, void *arg) {
    Py_VISIT(self->cache);
    Py_VISIT(self->authorities);
    Py_VISIT(self->parse);
    Py_VISIT(self->query_part);
    Py_VISIT(self->host_site);
    Py_VISIT(self->fingerprint);
    Py_VISIT(self->parsed_type);
    return 0;
}

static int Core_clear(Core *self) {
    Py_CLEAR(self->cache);
    Py_CLEAR(self->authorities);
    Py_CLEAR(self->parse);
    Py_CLEAR(self->query_part);
    Py_CLEAR(self->host_site);
    Py_CLEAR(self->fingerprint);
    Py_CLEAR(self->parsed_type);
    Py_CLEAR(self->key_base);
    Py_CLEAR(self->key_dir);
    return 0;
}

static void Core_dealloc(Core *self) {
    PyObject_GC_UnTrack(self);
    Core_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef Core_methods[] = {
    {"resolve", (PyCFunction)(void (*)(void))Core_resolve, METH_FASTCALL,
     "resolve(href, base, authority) -> ParsedURL | None (PyCore.resolve)."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef Core_members[] = {
    {"bytes", T_PYSSIZET, offsetof(Core, bytes), 0, "estimated bytes of the entries"},
    {"max_bytes", T_PYSSIZET, offsetof(Core, max_bytes), 0, "the estimate's bound"},
    {"max_entries", T_PYSSIZET, offsetof(Core, max_entries), 0, "the entries' bound"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject CoreType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "crawlkit.html._speedups.Core",
    .tp_basicsize = sizeof(Core),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Core(cache, authorities, parse, query_part, host_site, fingerprint, "
              "parsed_type, max_entries, max_bytes): resolve.py's PyCore in C.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Core_init,
    .tp_dealloc = (destructor)Core_dealloc,
    .tp_traverse = (traverseproc)Core_traverse,
    .tp_clear = (inquiry)Core_clear,
    .tp_methods = Core_methods,
    .tp_members = Core_members,
};

/* requisite_markers(data) -> (css, background): whether the ASCII-lowercased bytes hold
 * "url(" or "@import", and whether they match background\s*= (a bytes pattern's \s:
 * space, tab, LF, VT, FF, CR). links.py lowercased the whole page and searched it three
 * times, ~68 us for a testweb page's 30 KB; here memchr jumps to each "(", "@" and "="
 * and looks around it. */
static inline unsigned char ascii_lower(unsigned char c) {
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c | 0x20) : c;
}

static int lower_equals(const unsigned char *p, const char *word, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++)
        if (ascii_lower(p[i]) != (unsigned char)word[i])
            return 0;
    return 1;
}

static inline int bytes_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* Each place of byte c in [start, end), with the loop's body as a statement. */
#define EACH(p, c, start, end)                                              \
    for (const unsigned char *p = memchr((start), (c), (size_t)((end) - (start))); p != NULL; \
         p = p + 1 < (end) ? memchr(p + 1, (c), (size_t)((end) - (p + 1))) : NULL)

static PyObject *requisite_markers(PyObject *module, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *data = view.buf, *end = data + view.len;
    int css = 0, background = 0;
    if (view.len > 0) {
        EACH(p, '(', data, end) {
            if (p - data >= 3 && lower_equals(p - 3, "url", 3)) {
                css = 1;
                break;
            }
        }
        if (!css) {
            EACH(p, '@', data, end) {
                if (end - p >= 7 && lower_equals(p + 1, "import", 6)) {
                    css = 1;
                    break;
                }
            }
        }
        EACH(p, '=', data, end) {
            const unsigned char *q = p;
            while (q > data && bytes_space(q[-1]))
                q--;
            if (q - data >= 10 && lower_equals(q - 10, "background", 10)) {
                background = 1;
                break;
            }
        }
    }
    PyBuffer_Release(&view);
    return Py_BuildValue("(OO)", css ? Py_True : Py_False, background ? Py_True : Py_False);
}

static PyMethodDef module_methods[] = {
    {"requisite_markers", requisite_markers, METH_O,
     "requisite_markers(data) -> (css, background): links.py's requisite_markers_py."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "crawlkit.html._speedups",
    "crawlkit.html's per-page work in C (see crawlkit/html/_speedups.c).", -1, module_methods,
};

static void set_class(const char *chars, int cls) {
    for (const char *c = chars; *c; c++)
        classes[(unsigned char)*c] |= cls;
}

PyMODINIT_FUNC PyInit__speedups(void) {
    const char *letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    const char *digits = "0123456789";
    set_class(letters, PATH_OK | QUERY_OK | REL_START | SCHEME_OK);
    set_class(digits, PATH_OK | QUERY_OK | REL_START | SCHEME_OK | NAME_OK);
    set_class("abcdefghijklmnopqrstuvwxyz-", NAME_OK);
    set_class("-._~", PATH_OK | QUERY_OK | REL_START);
    set_class("/", PATH_OK);
    set_class("=&+", QUERY_OK);
    set_class("%", REL_START);
    set_class("+.-", SCHEME_OK);
    if (PyType_Ready(&CoreType) < 0)
        return NULL;
    empty_str = PyUnicode_New(0, 0);
    if (empty_str == NULL)
        return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL)
        return NULL;
    Py_INCREF(&CoreType);
    if (PyModule_AddObject(module, "Core", (PyObject *)&CoreType) < 0) {
        Py_DECREF(&CoreType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
