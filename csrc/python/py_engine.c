/* torchtrt_c._C.Engine: build from a Graph, execute on buffers, serialise. */
#include "binding.h"

#include "../common/status.h"
#include "../engine/bench.h"
#include "../engine/engine.h"

PyObject *ttc_py_device_dict(const ttc_target *d);

typedef struct {
    PyObject_HEAD
    ttc_engine *e;
} EngineObject;

static void engine_dealloc(PyObject *self) {
    PyTypeObject *tp = Py_TYPE(self);
    ttc_engine_free(((EngineObject *)self)->e);
    tp->tp_free(self);
    Py_DECREF(tp);
}

ttc_engine *ttc_py_engine_get(ttc_py_state *st, PyObject *obj) {
    if (!PyObject_TypeCheck(obj, (PyTypeObject *)st->EngineType)) {
        PyErr_Format(PyExc_TypeError, "expected an Engine, got %s", Py_TYPE(obj)->tp_name);
        return NULL;
    }
    return ((EngineObject *)obj)->e;
}

static PyObject *engine_wrap(ttc_py_state *st, ttc_engine *e) {
    PyTypeObject *tp = (PyTypeObject *)st->EngineType;
    EngineObject *self = (EngineObject *)tp->tp_alloc(tp, 0);
    if (!self) { ttc_engine_free(e); return NULL; }
    self->e = e;
    return (PyObject *)self;
}

static PyObject *dim_obj(ttc_dim d, const ttc_symbol *syms) {
    if (d.sym < 0) return PyLong_FromLongLong(d.add);
    const char *nm = syms[d.sym].name;
    if (d.mul == 1 && d.add == 0) return PyUnicode_FromString(nm);
    if (d.mul == 1) return PyUnicode_FromFormat("%s%c%lld", nm, d.add < 0 ? '-' : '+', (long long)(d.add < 0 ? -d.add : d.add));
    if (d.add == 0) return PyUnicode_FromFormat("%lld*%s", (long long)d.mul, nm);
    return PyUnicode_FromFormat("%lld*%s%c%lld", (long long)d.mul, nm, d.add < 0 ? '-' : '+',
                                (long long)(d.add < 0 ? -d.add : d.add));
}

static PyObject *bindings(ttc_engine *e, bool outputs) {
    int32_t n = outputs ? ttc_engine_n_outputs(e) : ttc_engine_n_inputs(e), ns;
    const ttc_symbol *syms = ttc_engine_symbols(e, &ns);
    PyObject *list = PyList_New(n);
    if (!list) return NULL;
    for (int32_t i = 0; i < n; i++) {
        const ttc_binding *b = outputs ? ttc_engine_output(e, i) : ttc_engine_input(e, i);
        PyObject *shape = PyTuple_New(b->rank), *mn = PyTuple_New(b->rank), *mx = PyTuple_New(b->rank);
        if (!shape || !mn || !mx) { Py_XDECREF(shape); Py_XDECREF(mn); Py_XDECREF(mx); Py_DECREF(list); return NULL; }
        for (int32_t d = 0; d < b->rank; d++) {
            ttc_dim dm = b->dims[d];
            PyTuple_SET_ITEM(shape, d, dim_obj(dm, syms));
            int64_t lo = dm.sym < 0 ? dm.add : dm.mul * syms[dm.sym].min + dm.add;
            int64_t hi = dm.sym < 0 ? dm.add : dm.mul * syms[dm.sym].max + dm.add;
            PyTuple_SET_ITEM(mn, d, PyLong_FromLongLong(lo < hi ? lo : hi));
            PyTuple_SET_ITEM(mx, d, PyLong_FromLongLong(lo < hi ? hi : lo));
        }
        PyObject *dct = Py_BuildValue("{s:s,s:s,s:N,s:N,s:N,s:O}", "name", b->name, "dtype", ttc_dtype_name(b->dtype),
                                      "shape", shape, "min_shape", mn, "max_shape", mx, "written",
                                      b->written ? Py_True : Py_False);
        if (!dct) { Py_DECREF(list); return NULL; }
        PyList_SET_ITEM(list, i, dct);
    }
    return list;
}

static PyObject *e_build(PyObject *cls, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"graph", "name", "device", "precision", "optimization_level", "cache_dir",
                             "tf32_matmul", "tf32_conv", "check_indices", NULL};
    PyObject *graph, *device = Py_None, *cache = Py_None;
    const char *name = "engine", *precision = "fp32";
    int level = 3, tf32_mm = 0, tf32_cv = 0, check = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|sOsiO$ppp:build", kwlist, &graph, &name, &device, &precision, &level,
                                     &cache, &tf32_mm, &tf32_cv, &check))
        return NULL;
    ttc_py_state *st = ttc_py_state_of_type((PyTypeObject *)cls);
    ttc_graph *g = ttc_py_graph_get(graph);
    if (!g) return NULL;
    ttc_engine_options o = ttc_engine_options_default();
    o.name = name;
    o.optimization_level = level;
    o.tf32_matmul = tf32_mm != 0;
    o.tf32_conv = tf32_cv != 0;
    o.check_indices = check != 0;
    if (!strcmp(precision, "fp16")) o.fp16 = true;
    else if (strcmp(precision, "fp32")) return PyErr_Format(PyExc_ValueError, "precision must be \"fp32\" or \"fp16\", got %s", precision);
    if (level < 0 || level > 5) return PyErr_Format(PyExc_ValueError, "optimization_level must be 0..5, got %d", level);
    PyObject *dev_str = NULL;
    if (device != Py_None) {
        dev_str = PyObject_Str(device);
        if (!dev_str) return NULL;
        o.device = PyUnicode_AsUTF8(dev_str);
        if (!o.device) { Py_DECREF(dev_str); return NULL; }
    }
    if (cache != Py_None) {
        o.cache_dir = PyUnicode_AsUTF8(cache);
        if (!o.cache_dir) { Py_XDECREF(dev_str); return NULL; }
    }
    ttc_engine *e = NULL;
    ttc_status s;
    Py_INCREF(graph);  /* the graph must outlive the build while the GIL is released */
    Py_BEGIN_ALLOW_THREADS
    s = ttc_engine_build(g, &o, &e);
    Py_END_ALLOW_THREADS
    Py_DECREF(graph);
    Py_XDECREF(dev_str);
    if (s != TTC_OK) return ttc_py_raise(st, s);
    return engine_wrap(st, e);
}

static bool format_ok(const Py_buffer *v, ttc_dtype dt) {
    const char *f = v->format ? v->format : "B";
    if (*f == '@' || *f == '=' || *f == '<') f++;
    if ((size_t)v->itemsize != ttc_dtype_size(dt)) return false;
    switch (dt) {
    case TTC_DTYPE_FLOAT32: return !strcmp(f, "f");
    case TTC_DTYPE_FLOAT16: return !strcmp(f, "e");
    /* bfloat16 has no buffer format: its bits come as 16-bit integers (a torch tensor's
     * .view(torch.int16)) */
    case TTC_DTYPE_BFLOAT16: return !strcmp(f, "h") || !strcmp(f, "H");
    case TTC_DTYPE_INT64: return !strcmp(f, "q") || !strcmp(f, "l");
    case TTC_DTYPE_INT32: return !strcmp(f, "i") || !strcmp(f, "l");
    case TTC_DTYPE_INT8: return !strcmp(f, "b");
    case TTC_DTYPE_UINT8: return !strcmp(f, "B");
    case TTC_DTYPE_BOOL: return !strcmp(f, "?") || !strcmp(f, "B");
    default: return false;
    }
}

static PyObject *input_error(ttc_py_state *st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    PyObject *msg = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    if (msg) { PyErr_SetObject(st->InputError, msg); Py_DECREF(msg); }
    return NULL;
}

/* Takes a buffer of every input in inf (count already checked) into bufs[*n_got...], checking
 * dtype and rank; fills the pointer, byte and shape arrays. -1 with InputError set. */
static int get_inputs(ttc_py_state *st, ttc_engine *e, PyObject *inf, Py_buffer *bufs, Py_ssize_t *n_got,
                      const void **in_ptr, size_t *in_bytes, int64_t (*shapes)[TTC_MAX_RANK]) {
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(inf); i++) {
        const ttc_binding *b = ttc_engine_input(e, (int32_t)i);
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(inf, i), &bufs[*n_got], PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
            PyErr_Clear();
            input_error(st, "input %s: expected a C-contiguous buffer (numpy array / memoryview), got %s", b->name,
                        Py_TYPE(PySequence_Fast_GET_ITEM(inf, i))->tp_name);
            return -1;
        }
        Py_buffer *v = &bufs[(*n_got)++];
        if (!format_ok(v, b->dtype)) {
            input_error(st, "input %s: dtype %s expected, buffer has format '%s' (itemsize %zd)", b->name,
                        ttc_dtype_name(b->dtype), v->format ? v->format : "B", v->itemsize);
            return -1;
        }
        if (v->ndim != b->rank) {
            input_error(st, "input %s: rank %d expected, got %d", b->name, b->rank, v->ndim);
            return -1;
        }
        for (int d = 0; d < v->ndim; d++) shapes[i][d] = v->shape ? v->shape[d] : v->len / v->itemsize;
        in_ptr[i] = v->buf;
        in_bytes[i] = (size_t)v->len;
    }
    return 0;
}

static PyObject *e_execute(PyObject *self, PyObject *args) {
    ttc_py_state *st = ttc_py_state_of_type(Py_TYPE(self));
    ttc_engine *e = ((EngineObject *)self)->e;
    PyObject *ins, *outs;
    if (!PyArg_ParseTuple(args, "OO:execute", &ins, &outs)) return NULL;
    PyObject *inf = PySequence_Fast(ins, "inputs must be a sequence"), *outf = NULL;
    if (!inf) return NULL;
    outf = PySequence_Fast(outs, "outputs must be a sequence");
    if (!outf) { Py_DECREF(inf); return NULL; }
    Py_ssize_t ni = PySequence_Fast_GET_SIZE(inf), no = PySequence_Fast_GET_SIZE(outf);
    int32_t en = ttc_engine_n_inputs(e), eo = ttc_engine_n_outputs(e);
    PyObject *ret = NULL;
    Py_buffer *bufs = NULL;
    Py_ssize_t n_got = 0;
    const void **in_ptr = NULL;
    size_t *in_bytes = NULL, *out_bytes = NULL;
    void **out_ptr = NULL;
    int64_t (*shapes)[TTC_MAX_RANK] = NULL, (*oshapes)[TTC_MAX_RANK] = NULL;
    if (ni != en) { input_error(st, "engine %s takes %d inputs, %zd given", ttc_engine_name(e), en, ni); goto done; }
    if (no != eo) { input_error(st, "engine %s has %d outputs, %zd output buffers given", ttc_engine_name(e), eo, no); goto done; }
    bufs = PyMem_Calloc((size_t)(ni + no + 1), sizeof(Py_buffer));
    in_ptr = PyMem_Calloc((size_t)ni + 1, sizeof(void *));
    in_bytes = PyMem_Calloc((size_t)ni + 1, sizeof(size_t));
    out_ptr = PyMem_Calloc((size_t)no + 1, sizeof(void *));
    out_bytes = PyMem_Calloc((size_t)no + 1, sizeof(size_t));
    shapes = PyMem_Calloc((size_t)ni + 1, sizeof *shapes);
    oshapes = PyMem_Calloc((size_t)no + 1, sizeof *oshapes);
    if (!bufs || !in_ptr || !in_bytes || !out_ptr || !out_bytes || !shapes || !oshapes) { PyErr_NoMemory(); goto done; }
    if (get_inputs(st, e, inf, bufs, &n_got, in_ptr, in_bytes, shapes) < 0) goto done;
    ttc_status s = ttc_engine_output_shapes(e, (const int64_t(*)[TTC_MAX_RANK])shapes, oshapes);
    if (s != TTC_OK) { ttc_py_raise(st, s); goto done; }
    for (Py_ssize_t i = 0; i < no; i++) {
        const ttc_binding *b = ttc_engine_output(e, (int32_t)i);
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(outf, i), &bufs[n_got], PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) < 0) {
            PyErr_Clear();
            input_error(st, "output %s: expected a writable C-contiguous buffer, got %s", b->name,
                        Py_TYPE(PySequence_Fast_GET_ITEM(outf, i))->tp_name);
            goto done;
        }
        Py_buffer *v = &bufs[n_got++];
        if (!format_ok(v, b->dtype)) {
            input_error(st, "output %s: dtype %s expected, buffer has format '%s'", b->name, ttc_dtype_name(b->dtype),
                        v->format ? v->format : "B");
            goto done;
        }
        int64_t numel = 1;
        for (int32_t d = 0; d < b->rank; d++) numel *= oshapes[i][d];
        if (v->len != (Py_ssize_t)(numel * (int64_t)ttc_dtype_size(b->dtype))) {
            input_error(st, "output %s: buffer has %zd bytes, its shape needs %lld", b->name, v->len,
                        (long long)(numel * (int64_t)ttc_dtype_size(b->dtype)));
            goto done;
        }
        out_ptr[i] = v->buf;
        out_bytes[i] = (size_t)v->len;
    }
    Py_BEGIN_ALLOW_THREADS
    s = ttc_engine_execute(e, in_ptr, in_bytes, (const int64_t(*)[TTC_MAX_RANK])shapes, out_ptr, out_bytes);
    Py_END_ALLOW_THREADS
    if (s != TTC_OK) { ttc_py_raise(st, s); goto done; }
    ret = Py_NewRef(Py_None);
done:
    for (Py_ssize_t i = 0; i < n_got; i++) PyBuffer_Release(&bufs[i]);
    PyMem_Free(bufs); PyMem_Free(in_ptr); PyMem_Free(in_bytes); PyMem_Free(out_ptr); PyMem_Free(out_bytes);
    PyMem_Free(shapes); PyMem_Free(oshapes);
    Py_DECREF(inf);
    Py_DECREF(outf);
    return ret;
}

/* benchmark(inputs, runs=20, warmup=3) -> list[float]: ms per run of the kernel sequence with
 * the inputs uploaded once (see csrc/engine/bench.h). Inputs are checked as in execute.
 * profile(inputs, runs=10, warmup=2) -> list[(kernel, ms)]: each kernel's device time. */
static PyObject *bench_common(PyObject *self, PyObject *args, PyObject *kw, bool profile) {
    static char *kwlist[] = {"inputs", "runs", "warmup", NULL};
    ttc_py_state *st = ttc_py_state_of_type(Py_TYPE(self));
    ttc_engine *e = ((EngineObject *)self)->e;
    PyObject *ins;
    int runs = profile ? 10 : 20, warmup = profile ? 2 : 3;
    if (!PyArg_ParseTupleAndKeywords(args, kw, profile ? "O|ii:profile" : "O|ii:benchmark", kwlist, &ins, &runs,
                                     &warmup))
        return NULL;
    if (runs < 1 || warmup < 0) return PyErr_Format(PyExc_ValueError, "runs must be >= 1 and warmup >= 0, got %d, %d", runs, warmup);
    PyObject *inf = PySequence_Fast(ins, "inputs must be a sequence");
    if (!inf) return NULL;
    Py_ssize_t ni = PySequence_Fast_GET_SIZE(inf), n_got = 0;
    int32_t en = ttc_engine_n_inputs(e);
    PyObject *ret = NULL;
    Py_buffer *bufs = NULL;
    const void **in_ptr = NULL;
    size_t *in_bytes = NULL;
    int64_t (*shapes)[TTC_MAX_RANK] = NULL;
    double *times = NULL;
    if (ni != en) { input_error(st, "engine %s takes %d inputs, %zd given", ttc_engine_name(e), en, ni); goto done; }
    bufs = PyMem_Calloc((size_t)ni + 1, sizeof(Py_buffer));
    in_ptr = PyMem_Calloc((size_t)ni + 1, sizeof(void *));
    in_bytes = PyMem_Calloc((size_t)ni + 1, sizeof(size_t));
    shapes = PyMem_Calloc((size_t)ni + 1, sizeof *shapes);
    int32_t nk = ttc_engine_n_kernels(e);
    times = PyMem_Calloc((size_t)(profile ? nk : runs) + 1, sizeof(double));
    if (!bufs || !in_ptr || !in_bytes || !shapes || !times) { PyErr_NoMemory(); goto done; }
    if (get_inputs(st, e, inf, bufs, &n_got, in_ptr, in_bytes, shapes) < 0) goto done;
    ttc_status s;
    Py_BEGIN_ALLOW_THREADS
    if (profile)
        s = ttc_engine_profile(e, in_ptr, in_bytes, (const int64_t(*)[TTC_MAX_RANK])shapes, runs, warmup, times);
    else
        s = ttc_engine_benchmark(e, in_ptr, in_bytes, (const int64_t(*)[TTC_MAX_RANK])shapes, runs, warmup, times);
    Py_END_ALLOW_THREADS
    if (s != TTC_OK) { ttc_py_raise(st, s); goto done; }
    int n_ret = profile ? nk : runs;
    ret = PyList_New(n_ret);
    for (int i = 0; ret && i < n_ret; i++) {
        PyObject *f = profile ? Py_BuildValue("(sd)", ttc_engine_kernel_desc(e, i), times[i])
                              : PyFloat_FromDouble(times[i]);
        if (!f) { Py_CLEAR(ret); break; }
        PyList_SET_ITEM(ret, i, f);
    }
done:
    for (Py_ssize_t i = 0; i < n_got; i++) PyBuffer_Release(&bufs[i]);
    PyMem_Free(bufs); PyMem_Free(in_ptr); PyMem_Free(in_bytes); PyMem_Free(shapes); PyMem_Free(times);
    Py_DECREF(inf);
    return ret;
}

static PyObject *e_benchmark(PyObject *self, PyObject *args, PyObject *kw) { return bench_common(self, args, kw, false); }
static PyObject *e_profile(PyObject *self, PyObject *args, PyObject *kw) { return bench_common(self, args, kw, true); }

/* Engine.benchmark_copy(nbytes, runs=20, warmup=3, device=None) -> list[float]: ms per
 * device-to-device clEnqueueCopyBuffer of nbytes, the bandwidth yardstick for bench/. */
static PyObject *e_benchmark_copy(PyObject *cls, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"nbytes", "runs", "warmup", "device", NULL};
    ttc_py_state *st = ttc_py_state_of_type((PyTypeObject *)cls);
    Py_ssize_t nbytes;
    int runs = 20, warmup = 3;
    PyObject *device = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "n|iiO:benchmark_copy", kwlist, &nbytes, &runs, &warmup, &device)) return NULL;
    if (nbytes < 1 || runs < 1 || warmup < 0)
        return PyErr_Format(PyExc_ValueError, "nbytes and runs must be >= 1 and warmup >= 0, got %zd, %d, %d", nbytes, runs, warmup);
    PyObject *dev_str = NULL;
    const char *dev = NULL;
    if (device != Py_None) {
        dev_str = PyObject_Str(device);
        if (!dev_str || !(dev = PyUnicode_AsUTF8(dev_str))) { Py_XDECREF(dev_str); return NULL; }
    }
    double *times = PyMem_Calloc((size_t)runs, sizeof(double));
    if (!times) { Py_XDECREF(dev_str); return PyErr_NoMemory(); }
    ttc_status s;
    Py_BEGIN_ALLOW_THREADS
    s = ttc_device_copy_benchmark(dev, (size_t)nbytes, runs, warmup, times);
    Py_END_ALLOW_THREADS
    Py_XDECREF(dev_str);
    PyObject *ret = NULL;
    if (s != TTC_OK) ttc_py_raise(st, s);
    else ret = PyList_New(runs);
    for (int i = 0; ret && i < runs; i++) {
        PyObject *f = PyFloat_FromDouble(times[i]);
        if (!f) { Py_CLEAR(ret); break; }
        PyList_SET_ITEM(ret, i, f);
    }
    PyMem_Free(times);
    return ret;
}

static PyObject *e_output_shapes(PyObject *self, PyObject *arg) {
    ttc_py_state *st = ttc_py_state_of_type(Py_TYPE(self));
    ttc_engine *e = ((EngineObject *)self)->e;
    PyObject *seq = PySequence_Fast(arg, "output_shapes takes a list of input shapes");
    if (!seq) return NULL;
    int32_t ni = ttc_engine_n_inputs(e), no = ttc_engine_n_outputs(e);
    int64_t shapes[64][TTC_MAX_RANK], oshapes[64][TTC_MAX_RANK];
    PyObject *ret = NULL;
    if (PySequence_Fast_GET_SIZE(seq) != ni || ni > 64 || no > 64) {
        input_error(st, "engine %s takes %d inputs, %zd shapes given", ttc_engine_name(e), ni, PySequence_Fast_GET_SIZE(seq));
        goto done;
    }
    for (int32_t i = 0; i < ni; i++) {
        const ttc_binding *b = ttc_engine_input(e, i);
        PyObject *sh = PySequence_Fast(PySequence_Fast_GET_ITEM(seq, i), "a shape must be a sequence of ints");
        if (!sh) goto done;
        if (PySequence_Fast_GET_SIZE(sh) != b->rank) {
            Py_DECREF(sh);
            input_error(st, "input %s: rank %d expected, got %zd", b->name, b->rank, PySequence_Fast_GET_SIZE(seq));
            goto done;
        }
        for (int32_t d = 0; d < b->rank; d++) {
            shapes[i][d] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(sh, d));
            if (shapes[i][d] == -1 && PyErr_Occurred()) { Py_DECREF(sh); goto done; }
        }
        Py_DECREF(sh);
    }
    ttc_status s = ttc_engine_output_shapes(e, (const int64_t(*)[TTC_MAX_RANK])shapes, oshapes);
    if (s != TTC_OK) { ttc_py_raise(st, s); goto done; }
    ret = PyList_New(no);
    if (!ret) goto done;
    for (int32_t i = 0; i < no; i++) {
        const ttc_binding *b = ttc_engine_output(e, i);
        PyObject *t = PyTuple_New(b->rank);
        if (!t) { Py_CLEAR(ret); goto done; }
        for (int32_t d = 0; d < b->rank; d++) PyTuple_SET_ITEM(t, d, PyLong_FromLongLong(oshapes[i][d]));
        PyList_SET_ITEM(ret, i, t);
    }
done:
    Py_DECREF(seq);
    return ret;
}

/* The blob is written straight into the bytes (or bytearray) object: no second copy of the
 * weights. The serialiser calls this without the GIL. */
typedef struct blob_obj { PyObject *obj; bool mutable_; } blob_obj;

static unsigned char *blob_obj_alloc(void *ctx, size_t n) {
    blob_obj *b = ctx;
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *o = NULL;
    if (n <= (size_t)PY_SSIZE_T_MAX)
        o = b->mutable_ ? PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)n) : PyBytes_FromStringAndSize(NULL, (Py_ssize_t)n);
    if (!o) PyErr_Clear();   /* reported as the serialiser's out-of-memory error */
    b->obj = o;
    unsigned char *p = !o ? NULL : b->mutable_ ? (unsigned char *)PyByteArray_AS_STRING(o) : (unsigned char *)PyBytes_AS_STRING(o);
    PyGILState_Release(g);
    return p;
}

static PyObject *e_serialize(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"mutable", NULL};
    int mut = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|p:serialize", kwlist, &mut)) return NULL;
    ttc_py_state *st = ttc_py_state_of_type(Py_TYPE(self));
    unsigned char *blob = NULL;
    size_t len = 0;
    blob_obj b = {NULL, mut != 0};
    ttc_status s;
    Py_BEGIN_ALLOW_THREADS
    s = ttc_engine_serialize_with(((EngineObject *)self)->e, blob_obj_alloc, &b, &blob, &len);
    Py_END_ALLOW_THREADS
    if (s != TTC_OK) { Py_XDECREF(b.obj); return ttc_py_raise(st, s); }
    return b.obj;
}

static PyObject *e_deserialize(PyObject *cls, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"blob", "device", "cache_dir", NULL};
    Py_buffer b;
    PyObject *device = Py_None, *cache = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "y*|OO:deserialize", kwlist, &b, &device, &cache)) return NULL;
    ttc_py_state *st = ttc_py_state_of_type((PyTypeObject *)cls);
    PyObject *dev_str = NULL;
    const char *dev = NULL, *cdir = NULL;
    if (device != Py_None) {
        dev_str = PyObject_Str(device);
        if (!dev_str || !(dev = PyUnicode_AsUTF8(dev_str))) { Py_XDECREF(dev_str); PyBuffer_Release(&b); return NULL; }
    }
    if (cache != Py_None && !(cdir = PyUnicode_AsUTF8(cache))) { Py_XDECREF(dev_str); PyBuffer_Release(&b); return NULL; }
    ttc_engine *e = NULL;
    ttc_status s;
    Py_BEGIN_ALLOW_THREADS
    s = ttc_engine_deserialize(b.buf, (size_t)b.len, dev, cdir, &e);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&b);
    Py_XDECREF(dev_str);
    if (s != TTC_OK) return ttc_py_raise(st, s);
    return engine_wrap(st, e);
}

static PyObject *e_info(PyObject *self, PyObject *unused) {
    ttc_engine *e = ((EngineObject *)self)->e;
    int32_t n = ttc_engine_n_kernels(e);
    PyObject *ks = PyList_New(n);
    if (!ks) return NULL;
    for (int32_t i = 0; i < n; i++) {
        PyObject *s = PyUnicode_FromString(ttc_engine_kernel_desc(e, i));
        if (!s) { Py_DECREF(ks); return NULL; }
        PyList_SET_ITEM(ks, i, s);
    }
    PyObject *tiles = PyDict_New();
    if (!tiles) { Py_DECREF(ks); return NULL; }
    for (int32_t i = 0; i < n; i++) {
        int32_t t = ttc_engine_kernel_tile(e, i);
        if (t < 0) continue;
        PyObject *v = PyLong_FromLong(t);
        if (!v || PyDict_SetItem(tiles, PyList_GET_ITEM(ks, i), v) < 0) { Py_XDECREF(v); Py_DECREF(ks); Py_DECREF(tiles); return NULL; }
        Py_DECREF(v);
    }
    bool tf32_mm, tf32_cv;
    int64_t items = -1;
    bool caller = ttc_engine_caller_thread(e, &items);
    ttc_engine_tf32(e, &tf32_mm, &tf32_cv);
    const ttc_target *tg = ttc_engine_target(e);
    /* tf32: the policy built with; tf32_active: what this device acts on (NVIDIA only) */
    PyObject *tf32 = Py_BuildValue("{s:O,s:O}", "matmul", tf32_mm ? Py_True : Py_False, "conv", tf32_cv ? Py_True : Py_False);
    PyObject *tf32a = Py_BuildValue("{s:O,s:O}", "matmul", tg->tf32_matmul ? Py_True : Py_False, "conv",
                                    tg->tf32_conv ? Py_True : Py_False);
    if (!tf32 || !tf32a) { Py_XDECREF(tf32); Py_XDECREF(tf32a); Py_DECREF(ks); Py_DECREF(tiles); return NULL; }
    return Py_BuildValue("{s:s,s:N,s:i,s:i,s:O,s:n,s:n,s:s,s:i,s:N,s:s,s:O,s:N,s:N,s:O,s:L,s:L}", "name", ttc_engine_name(e), "kernels", ks, "n_kernels", n,
                         "fused", ttc_engine_n_fused(e), "program_cached", ttc_engine_program_from_cache(e) ? Py_True : Py_False,
                         "peak_memory", (Py_ssize_t)ttc_engine_peak_memory(e),
                         "const_bytes", (Py_ssize_t)ttc_engine_const_bytes(e), "source", ttc_engine_source(e),
                         "tuned", ttc_engine_n_tuned(e), "tiles", tiles, "compute", ttc_engine_compute(e),
                         "gpu_kernels", ttc_engine_gpu_kernels(e) ? Py_True : Py_False, "tf32", tf32, "tf32_active", tf32a,
                         "caller_thread", caller ? Py_True : Py_False,
                         "launch_items", (long long)items, "gemv_launches", (long long)ttc_engine_gemv_launches(e));
}

static PyObject *e_build_profile(PyObject *self, PyObject *unused) {
    const ttc_build_profile *p = ttc_engine_build_profile(((EngineObject *)self)->e);
    return Py_BuildValue("{s:d,s:d,s:d,s:d,s:d,s:d,s:i,s:i,s:n,s:i,s:s,s:i,s:i,s:i,s:i,s:i}", "convert_s", p->convert_s,
                         "fuse_s", p->fuse_s, "tune_s", p->tune_s, "codegen_s", p->codegen_s, "program_s", p->program_s,
                         "consts_s", p->consts_s, "kernels", p->kernels, "unique_kernels", p->unique_kernels,
                         "source_bytes", (Py_ssize_t)p->source_bytes, "programs", p->programs,
                         "program_origin", p->program_origin ? p->program_origin : "", "gemms", p->gemms,
                         "tune_cached", p->tune_cached, "tune_timed", p->tune_timed, "tune_candidates", p->tune_candidates,
                         "tune_capped", p->tune_capped);
}

static PyObject *e_get_inputs(PyObject *self, void *c) { return bindings(((EngineObject *)self)->e, false); }
static PyObject *e_get_outputs(PyObject *self, void *c) { return bindings(((EngineObject *)self)->e, true); }
static PyObject *e_get_device(PyObject *self, void *c) { return ttc_py_device_dict(ttc_engine_target(((EngineObject *)self)->e)); }
static PyObject *e_get_built_for(PyObject *self, void *c) {
    const char *plat, *name, *driver;
    if (!ttc_engine_built_for(((EngineObject *)self)->e, &plat, &name, &driver)) Py_RETURN_NONE;
    return Py_BuildValue("{s:s,s:s,s:s}", "platform", plat, "name", name, "driver", driver);
}
static PyObject *e_get_name(PyObject *self, void *c) { return PyUnicode_FromString(ttc_engine_name(((EngineObject *)self)->e)); }
static PyObject *e_get_peak(PyObject *self, void *c) {
    size_t v;
    ttc_engine *e = ((EngineObject *)self)->e;
    Py_BEGIN_ALLOW_THREADS
    v = ttc_engine_peak_memory(e);
    Py_END_ALLOW_THREADS
    return PyLong_FromSize_t(v);
}

static PyMethodDef engine_methods[] = {
    {"build", (PyCFunction)(void (*)(void))e_build, METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "Engine.build(graph, name='engine', device=None, precision='fp32', optimization_level=3, cache_dir=None, *, "
     "tf32_matmul=False, tf32_conv=False)"},
    {"deserialize", (PyCFunction)(void (*)(void))e_deserialize, METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "Engine.deserialize(blob, device=None, cache_dir=None) -> Engine (rebuilt for this device when foreign)"},
    {"execute", e_execute, METH_VARARGS, "execute(inputs: list[buffer], outputs: list[writable buffer]) -> None"},
    {"benchmark", (PyCFunction)(void (*)(void))e_benchmark, METH_VARARGS | METH_KEYWORDS,
     "benchmark(inputs, runs=20, warmup=3) -> list[float]: ms per run, inputs resident on the device"},
    {"profile", (PyCFunction)(void (*)(void))e_profile, METH_VARARGS | METH_KEYWORDS,
     "profile(inputs, runs=10, warmup=2) -> list[(kernel, ms)]: each kernel's mean device time (profiling events)"},
    {"benchmark_copy", (PyCFunction)(void (*)(void))e_benchmark_copy, METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "Engine.benchmark_copy(nbytes, runs=20, warmup=3, device=None) -> list[float]: ms per device copy"},
    {"output_shapes", e_output_shapes, METH_O, "output_shapes(list[tuple[int]]) -> list[tuple[int]]"},
    {"serialize", (PyCFunction)(void (*)(void))e_serialize, METH_VARARGS | METH_KEYWORDS,
     "serialize(mutable=False) -> bytes (a bytearray when mutable: a tensor can share its memory)"},
    {"build_profile", e_build_profile, METH_NOARGS,
     "build_profile() -> dict: seconds per build step (convert_s, fuse_s, tune_s, codegen_s, program_s, consts_s), "
     "kernels / unique_kernels, source_bytes, programs, program_origin (compiled, cache, blob), gemms, tune_cached, "
     "tune_timed (GEMMs timed), tune_candidates (candidates timed), tune_capped (GEMM shapes left to the heuristic "
     "by TORCHTRT_C_TUNE_MAX)"},
    {"info", e_info, METH_NOARGS, "info() -> dict(kernels, n_kernels, fused, program_cached, peak_memory, const_bytes, source, tuned, tiles, compute, gpu_kernels, tf32, tf32_active)"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef engine_getset[] = {
    {"inputs", e_get_inputs, NULL, "list of dict(name, dtype, shape, min_shape, max_shape)", NULL},
    {"outputs", e_get_outputs, NULL, "list of dict(name, dtype, shape, min_shape, max_shape)", NULL},
    {"device", e_get_device, NULL, "the OpenCL device (dict as in devices())", NULL},
    {"built_for", e_get_built_for, NULL,
     "a deserialised engine: the device its blob was built for (dict: platform, name, driver; another device "
     "than `device` means the engine was rebuilt here from its IR); an engine built here: None", NULL},
    {"name", e_get_name, NULL, "engine name", NULL},
    {"peak_memory", e_get_peak, NULL, "device bytes (constants + intermediates) at the opt shapes", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyObject *engine_new_forbidden(PyTypeObject *tp, PyObject *a, PyObject *k) {
    PyErr_SetString(PyExc_TypeError, "use Engine.build(graph, ...) or Engine.deserialize(blob)");
    return NULL;
}

static PyType_Slot engine_slots[] = {
    {Py_tp_new, engine_new_forbidden},
    {Py_tp_dealloc, engine_dealloc},
    {Py_tp_methods, engine_methods},
    {Py_tp_getset, engine_getset},
    {Py_tp_doc, "An OpenCL engine built from a graph segment. See docs/binding_api.md."},
    {0, NULL},
};

static PyType_Spec engine_spec = {
    .name = "torchtrt_c._C.Engine",
    .basicsize = sizeof(EngineObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = engine_slots,
};

int ttc_py_init_engine(PyObject *m, ttc_py_state *st) {
    st->EngineType = PyType_FromModuleAndSpec(m, &engine_spec, NULL);
    if (!st->EngineType) return -1;
    return PyModule_AddObjectRef(m, "Engine", st->EngineType);
}
