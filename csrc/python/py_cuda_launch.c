/* Engines launched through the CUDA driver, for the runtime (torchtrt_c/runtime/_cuda_launch.py):
 *
 *   ok, why = _C.cuda_driver()                        # libcuda loads and initialises
 *   cap, why = _C.cuda_launch_new(engine, ordinal)    # cap None: refused, why says so
 *   nbytes = _C.cuda_launch_arena(cap, [shape, ...])
 *   why = _C.cuda_launch_run(cap, (in_ptr, ...), (shape, ...), (out_ptr, ...), arena_ptr, nbytes, stream)
 *                                                     # None: launched; a str: refused, nothing launched
 *   _C.cuda_launch_stats(cap) -> dict(calls, launches, flag_reads, const_bytes, graph_calls,
 *                                     graphs_recorded, graph_slots, dyn_shared_max,
 *                                     lib_kernels, lib_calls, lib_timed, lib_fused, wide_kernels, wide_calls, wide_timed,
 *                                     gemv_kernels, gemv_calls,
 *                                     lib_nhwc, nhwc_calls, nhwc_tensors)
 *
 * The capsule keeps its engine object alive (its context) and frees the CUDA side when dropped.
 */
#include "binding.h"

#include "../common/status.h"
#include "../engine/engine.h"
#include "../backend/cuda/exec_cuda.h"
#include "../backend/cuda/cuda_driver.h"

static const char CAP_NAME[] = "torchtrt_c.cuda_engine";

static void cap_free(PyObject *cap) {
    ttc_cuda_engine *c = PyCapsule_GetPointer(cap, CAP_NAME);
    PyObject *eng = PyCapsule_GetContext(cap);
    if (c) ttc_cuda_engine_free(c);
    PyErr_Clear();
    Py_XDECREF(eng);
}

static ttc_cuda_engine *cap_get(PyObject *o) {
    if (!PyCapsule_IsValid(o, CAP_NAME)) {
        PyErr_Format(PyExc_TypeError, "expected a CUDA engine from cuda_launch_new, got %s", Py_TYPE(o)->tp_name);
        return NULL;
    }
    return PyCapsule_GetPointer(o, CAP_NAME);
}

static PyObject *py_cuda_driver(PyObject *mod, PyObject *unused) {
    char why[256] = {0};
    bool ok = ttc_cuda_available(why, sizeof why);
    return Py_BuildValue("(Os)", ok ? Py_True : Py_False, why);
}

static PyObject *py_cuda_launch_new(PyObject *mod, PyObject *args) {
    ttc_py_state *st = ttc_py_state_of_module(mod);
    PyObject *eng;
    int ordinal;
    if (!PyArg_ParseTuple(args, "Oi:cuda_launch_new", &eng, &ordinal)) return NULL;
    ttc_engine *e = ttc_py_engine_get(st, eng);
    if (!e) return NULL;
    ttc_cuda_engine *c = NULL;
    ttc_status s;
    Py_BEGIN_ALLOW_THREADS
    s = ttc_cuda_engine_new(ttc_engine_view_get(e), ordinal, &c);
    Py_END_ALLOW_THREADS
    /* a refusal is an answer (the OpenCL path runs), anything else an error */
    if (s == TTC_ERR_UNSUPPORTED) return Py_BuildValue("(Os)", Py_None, ttc_last_error());
    if (s != TTC_OK) return ttc_py_raise(st, s);
    PyObject *cap = PyCapsule_New(c, CAP_NAME, cap_free);
    if (!cap) { ttc_cuda_engine_free(c); return NULL; }
    if (PyCapsule_SetContext(cap, Py_NewRef(eng))) { Py_DECREF(eng); Py_DECREF(cap); return NULL; }
    return Py_BuildValue("(Ns)", cap, "");
}

/* CUDA device ordinal's UUID from the driver (32 hex digits): what finds its OpenCL device
 * (torchtrt_c/_devices.py). None, with the reason, where there is no driver or no such device. */
static PyObject *py_cuda_device_uuid(PyObject *mod, PyObject *args) {
    int ordinal;
    if (!PyArg_ParseTuple(args, "i:cuda_device_uuid", &ordinal)) return NULL;
    unsigned char u[16];
    ttc_status s;
    Py_BEGIN_ALLOW_THREADS
    s = ttc_cuda_device_uuid(ordinal, u);
    Py_END_ALLOW_THREADS
    if (s != TTC_OK) return Py_BuildValue("(Os)", Py_None, ttc_last_error());
    char hex[33];
    for (int i = 0; i < 16; i++) snprintf(hex + 2 * i, 3, "%02x", u[i]);
    return Py_BuildValue("(ss)", hex, "");
}

/* Input shapes from a sequence of sequences (rank checked against the bindings). */
static int shapes_arg(ttc_engine *e, PyObject *o, int64_t (*shapes)[TTC_MAX_RANK]) {
    PyObject *f = PySequence_Fast(o, "shapes must be a sequence");
    if (!f) return -1;
    int rc = -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(f);
    if (n != ttc_engine_n_inputs(e)) {
        PyErr_Format(PyExc_ValueError, "engine %s takes %d inputs, %zd shapes given", ttc_engine_name(e),
                     ttc_engine_n_inputs(e), n);
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *s = PySequence_Fast(PySequence_Fast_GET_ITEM(f, i), "a shape must be a sequence");
        if (!s) goto done;
        Py_ssize_t r = PySequence_Fast_GET_SIZE(s);
        if (r != ttc_engine_input(e, (int32_t)i)->rank) {
            PyErr_Format(PyExc_ValueError, "input %zd: shape of rank %zd, the engine expects rank %d", i, r,
                         (int)ttc_engine_input(e, (int32_t)i)->rank);
            Py_DECREF(s);
            goto done;
        }
        for (Py_ssize_t d = 0; d < r; d++) {
            shapes[i][d] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(s, d));
            if (shapes[i][d] == -1 && PyErr_Occurred()) { Py_DECREF(s); goto done; }
        }
        Py_DECREF(s);
    }
    rc = 0;
done:
    Py_DECREF(f);
    return rc;
}

static int ptrs_arg(PyObject *o, Py_ssize_t want, const char *what, uint64_t *out) {
    PyObject *f = PySequence_Fast(o, "pointers must be a sequence");
    if (!f) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(f);
    int rc = 0;
    if (n != want) {
        PyErr_Format(PyExc_ValueError, "%zd %s pointers given, the engine has %zd", n, what, want);
        rc = -1;
    }
    for (Py_ssize_t i = 0; i < n && !rc; i++) {
        out[i] = PyLong_AsUnsignedLongLong(PySequence_Fast_GET_ITEM(f, i));
        if (out[i] == (uint64_t)-1 && PyErr_Occurred()) rc = -1;
    }
    Py_DECREF(f);
    return rc;
}

static PyObject *py_cuda_launch_arena(PyObject *mod, PyObject *args) {
    ttc_py_state *st = ttc_py_state_of_module(mod);
    PyObject *cap, *shp;
    if (!PyArg_ParseTuple(args, "OO:cuda_launch_arena", &cap, &shp)) return NULL;
    ttc_cuda_engine *c = cap_get(cap);
    if (!c) return NULL;
    ttc_engine *e = ttc_py_engine_get(st, PyCapsule_GetContext(cap));
    if (!e) return NULL;
    int64_t (*shapes)[TTC_MAX_RANK] = PyMem_Calloc((size_t)ttc_engine_n_inputs(e) + 1, sizeof *shapes);
    if (!shapes) return PyErr_NoMemory();
    PyObject *ret = NULL;
    size_t n = 0;
    if (shapes_arg(e, shp, shapes) == 0) {
        ttc_status s = ttc_cuda_engine_arena_bytes(c, (const int64_t(*)[TTC_MAX_RANK])shapes, &n);
        ret = s == TTC_OK ? PyLong_FromSize_t(n) : ttc_py_raise(st, s);
    }
    PyMem_Free(shapes);
    return ret;
}

static PyObject *py_cuda_launch_run(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    ttc_py_state *st = ttc_py_state_of_module(mod);
    if (nargs != 7) return PyErr_Format(PyExc_TypeError, "cuda_launch_run takes 7 arguments, %zd given", nargs);
    ttc_cuda_engine *c = cap_get(args[0]);
    if (!c) return NULL;
    ttc_engine *e = ttc_py_engine_get(st, PyCapsule_GetContext(args[0]));
    if (!e) return NULL;
    unsigned long long arena = PyLong_AsUnsignedLongLong(args[4]);
    Py_ssize_t nbytes = PyLong_AsSsize_t(args[5]);
    unsigned long long stream = PyLong_AsUnsignedLongLong(args[6]);
    if (PyErr_Occurred()) return NULL;
    if (nbytes < 0) return PyErr_Format(PyExc_ValueError, "cuda_launch_run: negative arena size");
    Py_ssize_t ni = ttc_engine_n_inputs(e), no = ttc_engine_n_outputs(e);
    /* small engines need no allocation per call */
    int64_t shapes_s[8][TTC_MAX_RANK];
    uint64_t in_s[8], out_s[8];
    int64_t (*shapes)[TTC_MAX_RANK] = ni <= 8 ? shapes_s : PyMem_Calloc((size_t)ni, sizeof *shapes);
    uint64_t *in = ni <= 8 ? in_s : PyMem_Calloc((size_t)ni, sizeof *in);
    uint64_t *out = no <= 8 ? out_s : PyMem_Calloc((size_t)no, sizeof *out);
    PyObject *ret = NULL;
    if (!shapes || !in || !out) { PyErr_NoMemory(); goto done; }
    if (ptrs_arg(args[1], ni, "input", in) || shapes_arg(e, args[2], shapes) || ptrs_arg(args[3], no, "output", out))
        goto done;
    ttc_status s;
    Py_BEGIN_ALLOW_THREADS
    s = ttc_cuda_engine_run(c, in, (const int64_t(*)[TTC_MAX_RANK])shapes, out, arena, (size_t)nbytes, stream);
    Py_END_ALLOW_THREADS
    /* a launch CUDA cannot make (checked before any is made): the caller takes the OpenCL path */
    if (s == TTC_ERR_UNSUPPORTED) ret = PyUnicode_FromString(ttc_last_error());
    else if (s != TTC_OK) ttc_py_raise(st, s);
    else ret = Py_NewRef(Py_None);
done:
    if (shapes != shapes_s) PyMem_Free(shapes);
    if (in != in_s) PyMem_Free(in);
    if (out != out_s) PyMem_Free(out);
    return ret;
}

static PyObject *py_cuda_launch_stats(PyObject *mod, PyObject *cap) {
    ttc_cuda_engine *c = cap_get(cap);
    if (!c) return NULL;
    ttc_cuda_engine_stats s = ttc_cuda_engine_stats_get(c);
    return Py_BuildValue("{s:L,s:L,s:L,s:n,s:L,s:L,s:i,s:n,s:i,s:L,s:L,s:L,s:L,s:L,s:i,s:i,s:L,s:L,s:i,s:L}", "calls", (long long)s.calls, "launches",
                         (long long)s.launches, "flag_reads", (long long)s.flag_reads, "const_bytes",
                         (Py_ssize_t)s.const_bytes, "graph_calls", (long long)s.graph_calls, "graphs_recorded",
                         (long long)s.graphs_recorded, "graph_slots", (int)s.graph_slots, "dyn_shared_max",
                         (Py_ssize_t)s.dyn_shared_max, "lib_kernels", (int)s.lib_kernels, "lib_calls",
                         (long long)s.lib_calls, "lib_timed", (long long)s.lib_timed, "lib_fused",
                         (long long)s.lib_fused, "lib_nhwc", (long long)s.lib_nhwc, "nhwc_calls",
                         (long long)s.nhwc_calls, "nhwc_tensors", (int)s.nhwc_tensors, "wide_kernels",
                         (int)s.wide_kernels, "wide_calls", (long long)s.wide_calls, "wide_timed", (long long)s.wide_timed,
                         "gemv_kernels", (int)s.gemv_kernels, "gemv_calls", (long long)s.gemv_calls);
}

static PyObject *py_cuda_ptx_prepare(PyObject *mod, PyObject *arg) {
    ttc_py_state *st = ttc_py_state_of_module(mod);
    Py_buffer b;
    if (PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE)) return NULL;
    char *out = NULL;
    ttc_status s = ttc_cuda_ptx_prepare(b.buf, (size_t)b.len, &out);
    PyBuffer_Release(&b);
    if (s == TTC_ERR_UNSUPPORTED) return Py_BuildValue("(Os)", Py_None, ttc_last_error());
    if (s != TTC_OK) return ttc_py_raise(st, s);
    PyObject *r = Py_BuildValue("(ys)", out, "");
    free(out);
    return r;
}

static PyMethodDef cuda_launch_methods[] = {
    {"cuda_driver", py_cuda_driver, METH_NOARGS, "cuda_driver() -> (bool, reason): libcuda loads and initialises"},
    {"cuda_device_uuid", py_cuda_device_uuid, METH_VARARGS,
     "cuda_device_uuid(ordinal) -> (uuid hex | None, reason): the CUDA driver's UUID of device ordinal"},
    {"cuda_launch_new", py_cuda_launch_new, METH_VARARGS,
     "cuda_launch_new(engine, cuda_ordinal) -> (cuda_engine | None, reason): the engine's PTX loaded into torch's context"},
    {"cuda_launch_arena", py_cuda_launch_arena, METH_VARARGS,
     "cuda_launch_arena(cuda_engine, shapes) -> bytes of intermediates a call with these input shapes needs"},
    {"cuda_launch_run", (PyCFunction)(void (*)(void))py_cuda_launch_run, METH_FASTCALL,
     "cuda_launch_run(cuda_engine, in_ptrs, shapes, out_ptrs, arena_ptr, arena_bytes, stream) -> None | reason: launches on stream"},
    {"cuda_launch_stats", py_cuda_launch_stats, METH_O, "cuda_launch_stats(cuda_engine) -> dict(calls, launches, flag_reads, const_bytes, dyn_shared_max)"},
    {"cuda_ptx_prepare", py_cuda_ptx_prepare, METH_O,
     "cuda_ptx_prepare(ptx: bytes) -> (bytes | None, reason): NVIDIA OpenCL PTX rewritten for a CUDA launch"},
    {NULL, NULL, 0, NULL},
};

int ttc_py_init_cuda_launch(PyObject *m, ttc_py_state *st) {
    (void)st;
    return PyModule_AddFunctions(m, cuda_launch_methods);
}
