/* A small WARC record as one gzip member, made while holding the interpreter lock.
 *
 * The twin of the zlib-ng path of crawlkit.warc.write.gzip_member (the same format,
 * other bytes: this is the system's zlib). zlib and zlib-ng's Python bindings let go
 * of the interpreter lock for every call, however small the input. In a crawl the
 * WARC thread shares the lock with the event loop, which always wants it: each
 * let-go hands it over, and taking it back costs a futex wait and a context switch,
 * more than deflating a 500-byte request record takes. bench/bench_warc_write.py
 * --contend (a lock-hungry thread beside the writer): 249 against 139 us of the
 * writer's CPU a capture, with the larger file buffer of write.py; in a crawl the
 * WARC thread's CPU went from 253 to 227 us a capture (medians of four runs; much of
 * the rest is Python code run slower beside the event loop). So small records are made
 * here without letting go; large bodies still go through zlib-ng, which lets the lock
 * go while it works. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <zlib.h>

static PyObject *
gzip_member(PyObject *self, PyObject *args)
{
    Py_buffer raw;
    int level, wbits, mem_level;
    if (!PyArg_ParseTuple(args, "y*iii", &raw, &level, &wbits, &mem_level))
        return NULL;
    PyObject *out = NULL;
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (raw.len > 1 << 24) {  /* far past what this is for; avail_in is 32 bits */
        PyErr_SetString(PyExc_ValueError, "record too large for gzip_member");
        goto done;
    }
    int err = deflateInit2(&zs, level, Z_DEFLATED, 16 + wbits, mem_level, Z_DEFAULT_STRATEGY);
    if (err != Z_OK) {
        PyErr_Format(PyExc_ValueError, "deflateInit2 failed (%d)", err);
        goto done;
    }
    uLong bound = deflateBound(&zs, (uLong)raw.len);
    out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)bound);
    if (out == NULL) {
        deflateEnd(&zs);
        goto done;
    }
    zs.next_in = (Bytef *)raw.buf;
    zs.avail_in = (uInt)raw.len;
    zs.next_out = (Bytef *)PyBytes_AS_STRING(out);
    zs.avail_out = (uInt)bound;
    err = deflate(&zs, Z_FINISH);
    uLong written = zs.total_out;
    deflateEnd(&zs);
    if (err != Z_STREAM_END) {  /* deflateBound is an upper bound: not expected */
        Py_CLEAR(out);
        PyErr_Format(PyExc_ValueError, "deflate did not finish (%d)", err);
        goto done;
    }
    if (_PyBytes_Resize(&out, (Py_ssize_t)written) < 0)
        out = NULL;
done:
    PyBuffer_Release(&raw);
    return out;
}

static PyMethodDef methods[] = {
    {"gzip_member", gzip_member, METH_VARARGS,
     "gzip_member(raw, level, wbits, mem_level) -> bytes: raw as one gzip member "
     "(window of 2**wbits), made without letting go of the interpreter lock."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_gzip", "Small gzip members, made holding the lock.", -1, methods,
};

PyMODINIT_FUNC
PyInit__gzip(void)
{
    return PyModule_Create(&module);
}
