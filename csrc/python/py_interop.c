/* CUDA-shared memory for the runtime (torchtrt_c/runtime/_cuda_interop.py):
 *
 *   ok, why = _C.cuda_interop(engine, cuda_ordinal)
 *   cap, ptr, size = _C.shared_alloc(engine, cuda_ordinal, nbytes)    # cap frees it when dropped
 *   done = _C.execute_shared(engine, [(cap, shape, nbytes)], [(cap, nbytes)], flag_cap, value)
 *   _C.shared_stream_wait(flag_cap, torch_stream_handle, value)
 *   _C.shared_stats() -> dict(live, live_bytes, allocated, freed)
 */
#include "binding.h"

#include "../backend/xmem.h"
#include "../common/status.h"
#include "../engine/engine.h"

static const char CAP_NAME[] = "torchtrt_c.shared_buffer";

static void cap_free(PyObject *cap) {
    ttc_xmem *m = PyCapsule_GetPointer(cap, CAP_NAME);
    if (m) ttc_xmem_free(m);
    else PyErr_Clear();
}

static ttc_xmem *cap_get(PyObject *o, const char *what) {
    if (!PyCapsule_IsValid(o, CAP_NAME)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a shared buffer from shared_alloc, got %s", what, Py_TYPE(o)->tp_name);
        return NULL;
    }
    return PyCapsule_GetPointer(o, CAP_NAME);
}

static PyObject *py_cuda_interop(PyObject *mod, PyObject *args) {
    ttc_py_state *st = ttc_py_state_of_module(mod);
    PyObject *eng;
    int ordinal;
    if (!PyArg_ParseTuple(args, "Oi:cuda_interop", &eng, &ordinal)) return NULL;
    ttc_engine *e = ttc_py_engine_get(st, eng);
    if (!e) return NULL;
    char why[256] = {0};
    bool ok;
    Py_BEGIN_ALLOW_THREADS
    ok = ttc_xmem_supported(ttc_engine_device(e), ordinal, why, sizeof why);
    Py_END_ALLOW_THREADS
    return Py_BuildValue("(Os)", ok ? Py_True : Py_False, why);
}

static PyObject *py_shared_alloc(PyObject *mod, PyObject *args) {
    ttc_py_state *st = ttc_py_state_of_module(mod);
    PyObject *eng;
    int ordinal;
    Py_ssize_t nbytes;
    if (!PyArg_ParseTuple(args, "Oin:shared_alloc", &eng, &ordinal, &nbytes)) return NULL;
    ttc_engine *e = ttc_py_engine_get(st, eng);
    if (!e) return NULL;
    if (nbytes < 0) return PyErr_Format(PyExc_ValueError, "shared_alloc: negative size %zd", nbytes);
    ttc_xmem *m = NULL;
    ttc_status s;
    Py_BEGIN_ALLOW_THREADS
    s = ttc_xmem_alloc(ttc_engine_device(e), ordinal, (size_t)nbytes, &m);
    Py_END_ALLOW_THREADS
    if (s != TTC_OK) return ttc_py_raise(st, s);
    PyObject *cap = PyCapsule_New(m, CAP_NAME, cap_free);
    if (!cap) { ttc_xmem_free(m); return NULL; }
    return Py_BuildValue("(NKn)", cap, (unsigned long long)m->cuda_ptr, (Py_ssize_t)m->size);
}

static PyObject *py_shared_stream_wait(PyObject *mod, PyObject *args) {
    ttc_py_state *st = ttc_py_state_of_module(mod);
    PyObject *cap;
    unsigned long long stream;
    unsigned int value;
    if (!PyArg_ParseTuple(args, "OKI:shared_stream_wait", &cap, &stream, &value)) return NULL;
    ttc_xmem *m = cap_get(cap, "flag");
    if (!m) return NULL;
    ttc_status s = ttc_xmem_stream_wait(m, stream, value);
    if (s != TTC_OK) return ttc_py_raise(st, s);
    Py_RETURN_NONE;
}

static PyObject *py_shared_stats(PyObject *mod, PyObject *unused) {
    ttc_xmem_stats s = ttc_xmem_stats_get();
    return Py_BuildValue("{s:L,s:L,s:L,s:L}", "live", (long long)s.live, "live_bytes", (long long)s.live_bytes,
                         "allocated", (long long)s.allocated, "freed", (long long)s.freed);
}

/* One binding: (buffer or None, [shape,] nbytes); the buffer must hold nbytes. */
static int binding_arg(PyObject *item, bool with_shape, const char *what, Py_ssize_t i, ttc_buf **mem,
                       int64_t *shape, int32_t want_rank, size_t *nbytes) {
    PyObject *cap, *shp = NULL;
    Py_ssize_t n;
    if (!PyTuple_Check(item) ||
        !(with_shape ? PyArg_ParseTuple(item, "OOn", &cap, &shp, &n) : PyArg_ParseTuple(item, "On", &cap, &n))) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s %zd: expected (buffer, %snbytes)", what, i, with_shape ? "shape, " : "");
        return -1;
    }
    if (n < 0) { PyErr_Format(PyExc_ValueError, "%s %zd: negative size", what, i); return -1; }
    *mem = NULL;
    if (cap != Py_None) {
        ttc_xmem *m = cap_get(cap, what);
        if (!m) return -1;
        if ((size_t)n > m->size) {
            PyErr_Format(PyExc_ValueError, "%s %zd: %zd bytes do not fit its shared buffer (%zu bytes)", what, i, n, m->size);
            return -1;
        }
        *mem = m->buf;
    } else if (n) {
        PyErr_Format(PyExc_ValueError, "%s %zd: %zd bytes but no buffer", what, i, n);
        return -1;
    }
    *nbytes = (size_t)n;
    if (!with_shape) return 0;
    PyObject *f = PySequence_Fast(shp, "shape must be a sequence");
    if (!f) return -1;
    Py_ssize_t r = PySequence_Fast_GET_SIZE(f);
    if (r != want_rank) {
        Py_DECREF(f);
        PyErr_Format(PyExc_ValueError, "%s %zd: shape of rank %zd, the engine expects rank %d", what, i, r, (int)want_rank);
        return -1;
    }
    for (Py_ssize_t d = 0; d < r; d++) {
        shape[d] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(f, d));
        if (shape[d] == -1 && PyErr_Occurred()) { Py_DECREF(f); return -1; }
    }
    Py_DECREF(f);
    return 0;
}

static PyObject *py_execute_shared(PyObject *mod, PyObject *args) {
    ttc_py_state *st = ttc_py_state_of_module(mod);
    PyObject *eng, *ins, *outs, *flag;
    unsigned int value;
    if (!PyArg_ParseTuple(args, "OOOOI:execute_shared", &eng, &ins, &outs, &flag, &value)) return NULL;
    ttc_engine *e = ttc_py_engine_get(st, eng);
    if (!e) return NULL;
    ttc_xmem *fm = NULL;
    if (flag != Py_None && !(fm = cap_get(flag, "flag"))) return NULL;
    PyObject *inf = PySequence_Fast(ins, "inputs must be a sequence");
    if (!inf) return NULL;
    PyObject *outf = PySequence_Fast(outs, "outputs must be a sequence"), *ret = NULL;
    if (!outf) { Py_DECREF(inf); return NULL; }
    Py_ssize_t ni = PySequence_Fast_GET_SIZE(inf), no = PySequence_Fast_GET_SIZE(outf);
    ttc_buf **in_mem = NULL, **out_mem = NULL;
    size_t *in_bytes = NULL, *out_bytes = NULL;
    int64_t (*shapes)[TTC_MAX_RANK] = NULL;
    if (ni != ttc_engine_n_inputs(e) || no != ttc_engine_n_outputs(e)) {
        PyErr_Format(st->InputError, "engine %s takes %d inputs and %d outputs, %zd and %zd given", ttc_engine_name(e),
                     ttc_engine_n_inputs(e), ttc_engine_n_outputs(e), ni, no);
        goto done;
    }
    in_mem = PyMem_Calloc((size_t)ni + 1, sizeof *in_mem);
    out_mem = PyMem_Calloc((size_t)no + 1, sizeof *out_mem);
    in_bytes = PyMem_Calloc((size_t)ni + 1, sizeof *in_bytes);
    out_bytes = PyMem_Calloc((size_t)no + 1, sizeof *out_bytes);
    shapes = PyMem_Calloc((size_t)ni + 1, sizeof *shapes);
    if (!in_mem || !out_mem || !in_bytes || !out_bytes || !shapes) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t i = 0; i < ni; i++)
        if (binding_arg(PySequence_Fast_GET_ITEM(inf, i), true, "input", i, &in_mem[i], shapes[i],
                        ttc_engine_input(e, (int32_t)i)->rank, &in_bytes[i]) < 0) goto done;
    for (Py_ssize_t i = 0; i < no; i++)
        if (binding_arg(PySequence_Fast_GET_ITEM(outf, i), false, "output", i, &out_mem[i], NULL, 0, &out_bytes[i]) < 0) goto done;
    bool finished = true;
    ttc_status s;
    Py_BEGIN_ALLOW_THREADS
    s = ttc_engine_execute_buffers(e, in_mem, in_bytes, (const int64_t(*)[TTC_MAX_RANK])shapes, out_mem, out_bytes, fm ? fm->buf : NULL,
                                   value, &finished);
    Py_END_ALLOW_THREADS
    if (s != TTC_OK) { ttc_py_raise(st, s); goto done; }
    ret = Py_NewRef(finished ? Py_True : Py_False);
done:
    PyMem_Free(in_mem); PyMem_Free(out_mem); PyMem_Free(in_bytes); PyMem_Free(out_bytes); PyMem_Free(shapes);
    Py_DECREF(inf);
    Py_DECREF(outf);
    return ret;
}

static PyMethodDef interop_methods[] = {
    {"cuda_interop", py_cuda_interop, METH_VARARGS,
     "cuda_interop(engine, cuda_ordinal) -> (bool, reason): can the engine's device share memory with that CUDA device"},
    {"shared_alloc", py_shared_alloc, METH_VARARGS,
     "shared_alloc(engine, cuda_ordinal, nbytes) -> (buffer, cuda_ptr, size): CUDA memory imported into OpenCL"},
    {"shared_stream_wait", py_shared_stream_wait, METH_VARARGS,
     "shared_stream_wait(flag, stream, value): the CUDA stream waits until the flag holds >= value"},
    {"shared_stats", py_shared_stats, METH_NOARGS, "shared_stats() -> dict(live, live_bytes, allocated, freed)"},
    {"execute_shared", py_execute_shared, METH_VARARGS,
     "execute_shared(engine, [(buf, shape, nbytes)], [(buf, nbytes)], flag|None, value) -> finished: bool"},
    {NULL, NULL, 0, NULL},
};

int ttc_py_init_interop(PyObject *m, ttc_py_state *st) {
    (void)st;
    return PyModule_AddFunctions(m, interop_methods);
}
