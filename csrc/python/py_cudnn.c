/* cuDNN convolutions (backend/cuda/cudnn.h) for tests and the A/B bench, on raw device
 * pointers (torch tensors' data_ptr()):
 *
 *   ok, why, version = _C.cudnn_available()
 *   conv = (dtype, tf32, nhwc, n, c, h, w, k, groups, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow)
 *   ws_bytes, info = _C.cudnn_conv_prepare(conv, ordinal, time_it)
 *                                # info: dict(timed, algo, math, us); raises on bad descriptors
 *   _C.cudnn_conv_run(conv, ordinal, x, w, y, ws, ws_bytes, stream)   # y = conv(x, w) on stream
 *
 * dtype: "float32", "float16" or "bfloat16". run finds the plan prepare made (cached for the
 * process) and raises if there is none.
 */
#include "binding.h"

#include "../backend/cuda/cudnn.h"
#include "../common/status.h"

static PyObject *py_cudnn_available(PyObject *mod, PyObject *unused) {
    char why[256] = {0};
    bool ok = ttc_cudnn_available(why, sizeof why);
    return Py_BuildValue("(OsK)", ok ? Py_True : Py_False, why, (unsigned long long)ttc_cudnn_version());
}

static int parse_conv(PyObject *t, ttc_cudnn_conv *d) {
    const char *dt;
    int tf32, nhwc;
    memset(d, 0, sizeof *d);
    if (!PyArg_ParseTuple(t, "sppiiiiiiiiiiiiiiii;conv: (dtype, tf32, nhwc, n, c, h, w, k, groups, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow)",
                          &dt, &tf32, &nhwc, &d->n, &d->c, &d->h, &d->w, &d->k, &d->groups, &d->kh, &d->kw, &d->stride[0],
                          &d->stride[1], &d->pad[0], &d->pad[1], &d->dil[0], &d->dil[1], &d->oh, &d->ow))
        return -1;
    if (!ttc_dtype_from_name(dt, &d->dtype)) {
        PyErr_Format(PyExc_ValueError, "unknown dtype %s", dt);
        return -1;
    }
    d->tf32 = tf32;
    d->nhwc = nhwc;
    return 0;
}

static PyObject *py_cudnn_conv_prepare(PyObject *mod, PyObject *args) {
    ttc_py_state *st = ttc_py_state_of_module(mod);
    PyObject *t;
    int ordinal, time_it;
    ttc_cudnn_conv d;
    if (!PyArg_ParseTuple(args, "O!ip:cudnn_conv_prepare", &PyTuple_Type, &t, &ordinal, &time_it) || parse_conv(t, &d))
        return NULL;
    ttc_cudnn_plan *p = NULL;
    size_t ws = 0;
    ttc_status s;
    Py_BEGIN_ALLOW_THREADS
    s = ttc_cudnn_conv_prepare(&d, ordinal, time_it, &p, &ws);
    Py_END_ALLOW_THREADS
    if (s != TTC_OK) return ttc_py_raise(st, s);
    bool timed;
    int32_t algo, math;
    double us;
    ttc_cudnn_plan_algo(p, &timed, &algo, &math, &us);
    return Py_BuildValue("(n{s:O,s:i,s:i,s:d})", (Py_ssize_t)ws, "timed", timed ? Py_True : Py_False, "algo", (int)algo,
                         "math", (int)math, "us", us);
}

static PyObject *py_cudnn_conv_run(PyObject *mod, PyObject *args) {
    ttc_py_state *st = ttc_py_state_of_module(mod);
    PyObject *t;
    int ordinal;
    unsigned long long x, w, y, ws, stream;
    Py_ssize_t ws_bytes;
    ttc_cudnn_conv d;
    if (!PyArg_ParseTuple(args, "O!iKKKKnK:cudnn_conv_run", &PyTuple_Type, &t, &ordinal, &x, &w, &y, &ws, &ws_bytes,
                          &stream) ||
        parse_conv(t, &d))
        return NULL;
    if (ws_bytes < 0) return PyErr_Format(PyExc_ValueError, "negative workspace size");
    ttc_cudnn_plan *p = NULL;
    size_t need = 0;
    /* without timing: a plan prepare made before is returned as it is */
    ttc_status s = ttc_cudnn_conv_prepare(&d, ordinal, false, &p, &need);
    if (s == TTC_OK) {
        Py_BEGIN_ALLOW_THREADS
        s = ttc_cudnn_conv_run(p, x, w, y, ws, (size_t)ws_bytes, stream);
        Py_END_ALLOW_THREADS
    }
    if (s != TTC_OK) return ttc_py_raise(st, s);
    Py_RETURN_NONE;
}

static PyMethodDef cudnn_methods[] = {
    {"cudnn_available", py_cudnn_available, METH_NOARGS,
     "cudnn_available() -> (bool, reason, version): cuDNN and the CUDA driver load"},
    {"cudnn_conv_prepare", py_cudnn_conv_prepare, METH_VARARGS,
     "cudnn_conv_prepare(conv, ordinal, time_it) -> (workspace_bytes, dict(timed, algo, math))"},
    {"cudnn_conv_run", py_cudnn_conv_run, METH_VARARGS,
     "cudnn_conv_run(conv, ordinal, x, w, y, ws, ws_bytes, stream): y = conv(x, w) on stream (pointers)"},
    {NULL, NULL, 0, NULL},
};

int ttc_py_init_cudnn(PyObject *m, ttc_py_state *st) {
    (void)st;
    return PyModule_AddFunctions(m, cudnn_methods);
}
