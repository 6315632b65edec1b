/* torchtrt_c._C.devices() / default_device(): the devices the backends see. */
#include "binding.h"

#include <string.h>
#include <time.h>

#include "../backend/backend.h"
#include "../backend/blas.h"
#include "../backend/cuda/cuda_driver.h"
#include "../backend/xmem.h"
#include "../engine/engine.h"
#include "../common/status.h"
#include "../backend/cpu/native_conv_dnnl.h"
#include "../backend/cpu/native_gemm_dnnl.h"
#include "../backend/cpu/native_gemv.h"
#include "../backend/cpu/native_math.h"
#include "../backend/cpu/native_qconv.h"
#include "../backend/cpu/native_qmm.h"
#include "../backend/cpu/native_wq.h"
#include "../backend/cpu/step_threads.h"
#include "../codegen/codegen.h"
#include "../target/knobs.h"

PyObject *ttc_py_device_dict(const ttc_target *d) {
    return Py_BuildValue("{s:i,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:I,s:K,s:K,s:n,s:O,s:O}",
                         "index", d->index, "backend", d->backend, "platform", d->platform, "name", d->name,
                         "type", d->is_gpu ? "gpu" : d->is_cpu ? "cpu" : "other", "vendor", d->vendor,
                         "version", d->version, "driver", d->driver, "compute_units", d->compute_units,
                         "global_mem", (unsigned long long)d->global_mem, "local_mem", (unsigned long long)d->local_mem,
                         "max_work_group", (Py_ssize_t)d->max_work_group, "fp16", d->fp16 ? Py_True : Py_False,
                         "opencl2", d->lang2 ? Py_True : Py_False);
}

/* What identifies the device across APIs (a CUDA device is matched to its OpenCL device by
 * these: torchtrt_c/_devices.py): uuid (32 hex digits) and pci_bus_id ("0000:65:00.0"), None
 * where the driver reports none. */
static int add_identity(PyObject *d, ttc_device *dev) {
    unsigned char u[16];
    ttc_pci_address pci;
    PyObject *uuid = Py_NewRef(Py_None), *bus = Py_NewRef(Py_None);
    if (ttc_device_uuid(dev, u)) {
        char hex[33];
        for (int i = 0; i < 16; i++) snprintf(hex + 2 * i, 3, "%02x", u[i]);
        Py_SETREF(uuid, PyUnicode_FromString(hex));
    }
    if (ttc_device_pci(dev, &pci)) {
        char txt[32];
        snprintf(txt, sizeof txt, "%04x:%02x:%02x.%x", (unsigned)pci.domain, (unsigned)pci.bus, (unsigned)pci.device,
                 (unsigned)pci.function);
        Py_SETREF(bus, PyUnicode_FromString(txt));
    }
    int r = !uuid || !bus || PyDict_SetItemString(d, "uuid", uuid) || PyDict_SetItemString(d, "pci_bus_id", bus) ? -1 : 0;
    Py_XDECREF(uuid);
    Py_XDECREF(bus);
    return r;
}

static PyObject *py_devices(PyObject *m, PyObject *unused) {
    ttc_device *const *ds;
    int32_t n;
    ttc_status s;
    Py_BEGIN_ALLOW_THREADS
    s = ttc_device_list(&ds, &n);
    Py_END_ALLOW_THREADS
    if (s != TTC_OK) return ttc_py_raise(ttc_py_state_of_module(m), s);
    PyObject *list = PyList_New(n);
    if (!list) return NULL;
    for (int32_t i = 0; i < n; i++) {
        PyObject *d = ttc_py_device_dict(ttc_device_facts(ds[i]));
        if (!d || add_identity(d, ds[i])) { Py_XDECREF(d); Py_DECREF(list); return NULL; }
        PyList_SET_ITEM(list, i, d);
    }
    return list;
}

static PyObject *py_default_device(PyObject *m, PyObject *unused) {
    ttc_device *d;
    ttc_status s;
    Py_BEGIN_ALLOW_THREADS
    s = ttc_device_select(NULL, &d);
    Py_END_ALLOW_THREADS
    if (s != TTC_OK) return ttc_py_raise(ttc_py_state_of_module(m), s);
    return PyLong_FromLong(ttc_device_facts(d)->index);
}

/* The settings table (target/knobs.def): its rows, a setting's value, code's value for one. */
static PyObject *py_knobs(PyObject *m, PyObject *unused) {
    PyObject *out = PyList_New(0);
    for (int k = 0; out && k < TTC_KNOB_COUNT; k++) {
        const ttc_knob_info *ki = &ttc_knobs[k];
        PyObject *row = Py_BuildValue("{s:s,s:s,s:s,s:s,s:s,s:s}", "name", ki->name, "type", ki->type_name,
                                      "values", ki->values, "default", ki->dflt, "doc", ki->doc,
                                      "level", ki->debug ? "debug" : "user");
        if (!row || PyList_Append(out, row) < 0) Py_CLEAR(out);
        Py_XDECREF(row);
    }
    return out;
}

static PyObject *py_knob_get(PyObject *m, PyObject *args) {
    const char *name;
    if (!PyArg_ParseTuple(args, "s", &name)) return NULL;
    ttc_knob_id k = ttc_knob_find(name);
    if (k == TTC_KNOB_COUNT)
        return PyErr_Format(PyExc_KeyError, "%s: not a torchtrt_c setting (docs/settings.md lists them)", name);
    const char *v = ttc_knob_raw(k);
    if (!v) Py_RETURN_NONE;
    return PyUnicode_FromString(v);
}

static PyObject *py_knob_set(PyObject *m, PyObject *args) {
    const char *name, *value;
    if (!PyArg_ParseTuple(args, "sz", &name, &value)) return NULL;
    if (ttc_knob_find(name) == TTC_KNOB_COUNT)
        return PyErr_Format(PyExc_KeyError, "%s: not a torchtrt_c setting (docs/settings.md lists them)", name);
    ttc_status s = ttc_knob_set(name, value);
    if (s != TTC_OK) return ttc_py_raise(ttc_py_state_of_module(m), s);
    Py_RETURN_NONE;
}

static PyObject *py_knob_clear(PyObject *m, PyObject *args) {
    const char *name;
    if (!PyArg_ParseTuple(args, "s", &name)) return NULL;
    if (ttc_knob_find(name) == TTC_KNOB_COUNT)
        return PyErr_Format(PyExc_KeyError, "%s: not a torchtrt_c setting (docs/settings.md lists them)", name);
    ttc_status s = ttc_knob_clear(name);
    if (s != TTC_OK) return ttc_py_raise(ttc_py_state_of_module(m), s);
    Py_RETURN_NONE;
}

static PyObject *py_knob_overrides(PyObject *m, PyObject *unused) {
    PyObject *out = PyDict_New();
    for (int k = 0; out && k < TTC_KNOB_COUNT; k++) {
        if (!ttc_knob_overridden((ttc_knob_id)k)) continue;
        const char *v = ttc_knob_raw((ttc_knob_id)k);
        PyObject *val = v ? PyUnicode_FromString(v) : Py_NewRef(Py_None);
        if (!val || PyDict_SetItemString(out, ttc_knobs[k].name, val) < 0) Py_CLEAR(out);
        Py_XDECREF(val);
    }
    return out;
}

/* Process-wide counters of what the library holds: live device buffers (csrc/backend/opencl/
 * memstats.c), engines, weights in host memory (tensor data), CUDA allocations, modules and
 * graphs (backend/cuda/cuda_driver.c), buffers shared with CUDA (external_memory.c). */
static PyObject *py_runtime_stats(PyObject *m, PyObject *unused) {
    ttc_memstats s = ttc_memstats_get();
    int64_t n_data = 0, data_bytes = 0;
    ttc_tensor_data_stats(&n_data, &data_bytes);
    ttc_cuda_stats cu = ttc_cuda_stats_get();
    ttc_xmem_stats x = ttc_xmem_stats_get();
    return Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L}", "live_buffers",
                         (long long)s.live_buffers, "live_bytes", (long long)s.live_bytes, "peak_bytes",
                         (long long)s.peak_bytes, "host_ptr_bytes", (long long)s.host_ptr_bytes, "buffers_created",
                         (long long)s.created, "buffers_released", (long long)s.released, "engines",
                         (long long)ttc_engine_live_count(), "tensor_data", (long long)n_data, "tensor_data_bytes",
                         (long long)data_bytes, "cuda_allocs", (long long)cu.allocs, "cuda_bytes", (long long)cu.bytes,
                         "cuda_modules", (long long)cu.modules, "cuda_graphs", (long long)cu.graphs, "shared_buffers",
                         (long long)x.live, "shared_bytes", (long long)x.live_bytes);
}

/* Whether engines on the default device run GEMM/convolution as native kernels (the target's
 * decision, knobs included), and with what. */
static PyObject *py_native_cpu(PyObject *m, PyObject *unused) {
    ttc_device *d;
    ttc_target t;
    ttc_status s;
    bool dnnl = false, gemm_dnnl = false, qconv = false, qmm = false;
    Py_BEGIN_ALLOW_THREADS
    s = ttc_device_select(NULL, &d);
    if (s == TTC_OK) s = ttc_target_make(d, &t);
    if (s == TTC_OK && t.native) dnnl = ttc_dnnl_available();
    if (s == TTC_OK && t.native) gemm_dnnl = t.native_gemm != TTC_NATIVE_GEMM_BLAS && ttc_dnnl_gemm_available();
    if (s == TTC_OK && t.native) qconv = t.native_qconv && ttc_qconv_available();
    if (s == TTC_OK && t.native) qmm = t.native_qmm && ttc_qmm_available();
    Py_END_ALLOW_THREADS
    if (s != TTC_OK) return ttc_py_raise(ttc_py_state_of_module(m), s);
    /* gemm: oneDNN's matmul for (auto: constant-weight) GEMMs, else OpenBLAS */
    return Py_BuildValue("{s:O,s:s,s:s,s:s,s:O,s:s,s:O,s:O,s:s,s:L,s:i,s:O,s:L,s:O,s:L,s:i,s:L,s:s,s:L,s:s,s:L,s:s,s:{s:L,s:L,s:L,s:L}}", "available", t.native ? Py_True : Py_False, "library",
                         ttc_blas_library(), "conv", !t.native ? "" : dnnl ? "onednn" : "blas", "conv_library",
                         ttc_dnnl_library(), "epi_math", t.native && t.native_epi_math ? Py_True : Py_False,
                         "math_isa", ttc_nm_isa(), "attention", t.native && t.native_attn ? Py_True : Py_False, "layer_norm",
                         t.native && t.native_norm ? Py_True : Py_False, "gemm",
                         !t.native ? "" : gemm_dnnl ? "onednn" : "blas", "gemm_onednn_calls",
                         (long long)ttc_dnnl_gemm_calls(), "step_threads", (int)t.step_threads, "conv_winograd",
                         t.native && t.conv_winograd ? Py_True : Py_False, "conv_winograd_primitives",
                         (long long)ttc_dnnl_wino_primitives(), "gemm_post",
                         t.native && t.native_gemm_post && gemm_dnnl ? Py_True : Py_False,
                         "gemm_onednn_post_calls", (long long)ttc_dnnl_gemm_post_calls(), "gemv_rows",
                         t.native ? (int)t.native_gemv : 0, "gemv_calls", (long long)ttc_native_gemv_calls(),
                         "int8", qconv ? "onednn" : "", "int8_onednn_calls", (long long)ttc_qconv_dnnl_calls(),
                         "int_mm", qmm ? "onednn" : "", "int_mm_onednn_calls", (long long)ttc_qmm_dnnl_calls(),
                         /* weight-only int8/int4: the decode GEMV's loop now, and the calls each loop took */
                         "wq_isa", ttc_native_wq_isa_name(ttc_native_wq_isa()), "wq_calls",
                         "generic", (long long)ttc_native_wq_calls(TTC_WQ_GENERIC), "avx2",
                         (long long)ttc_native_wq_calls(TTC_WQ_AVX2), "avx512", (long long)ttc_native_wq_calls(TTC_WQ_AVX512),
                         "vnni", (long long)ttc_native_wq_calls(TTC_WQ_VNNI));
}

/* Whether execute on the default device passes host memory in place (the target's
 * host_in_place: backend/opencl/hostmem_probe.c, TORCHTRT_C_HOST_IN_PLACE). */
static PyObject *py_host_in_place(PyObject *m, PyObject *unused) {
    ttc_device *d;
    ttc_target t;
    ttc_status s;
    Py_BEGIN_ALLOW_THREADS
    s = ttc_device_select(NULL, &d);
    if (s == TTC_OK) s = ttc_target_make(d, &t);
    Py_END_ALLOW_THREADS
    if (s != TTC_OK) return ttc_py_raise(ttc_py_state_of_module(m), s);
    return PyBool_FromLong(t.host_in_place);
}

/* Process-wide program build counters (csrc/backend/opencl/program.c). */
static PyObject *py_program_stats(PyObject *m, PyObject *unused) {
    ttc_program_stats s;
    ttc_program_stats_get(&s);
    return Py_BuildValue("{s:L,s:L,s:L,s:L,s:d,s:d,s:d,s:L,s:d,s:L}", "compiled", (long long)s.compiled,
                         "cache_hits", (long long)s.cache_hits, "from_binary", (long long)s.from_binary,
                         "failed", (long long)s.failed, "compile_s", s.compile_s, "cache_s", s.cache_s,
                         "binary_s", s.binary_s, "prebuilt", (long long)s.prebuilt, "prebuild_s", s.prebuild_s,
                         "prebuild_failed", (long long)s.prebuild_failed);
}

/* Build worker processes (csrc/backend/build_procs.c): the command that starts one, and the
 * worker's own entry point. */
static PyObject *py_set_build_worker(PyObject *m, PyObject *args) {
    const char *python, *module;
    if (!PyArg_ParseTuple(args, "ss", &python, &module)) return NULL;
    ttc_build_procs_set_worker(python, module);
    Py_RETURN_NONE;
}

static PyObject *py_build_worker_error(PyObject *m, PyObject *unused) {
    return PyUnicode_DecodeUTF8(ttc_build_procs_last_error(), (Py_ssize_t)strlen(ttc_build_procs_last_error()), "replace");
}

static PyObject *py_build_worker(PyObject *m, PyObject *args) {
    const char *job;
    if (!PyArg_ParseTuple(args, "s", &job)) return NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = ttc_build_procs_worker(job);
    Py_END_ALLOW_THREADS
    return PyLong_FromLong(rc);
}

/* The C core's 64-bit hash (cache keys, engine blob checksums), so that tests can forge a blob's
 * checksum and check the hash against its definition. */
static PyObject *py_hash64(PyObject *m, PyObject *args) {
    Py_buffer b;
    unsigned long long seed = 0;
    if (!PyArg_ParseTuple(args, "y*|K:hash64", &b, &seed)) return NULL;
    uint64_t h;
    Py_BEGIN_ALLOW_THREADS
    h = ttc_hash64(b.buf, (size_t)b.len, (uint64_t)seed);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&b);
    return PyLong_FromUnsignedLongLong((unsigned long long)h);
}

/* The GEMM candidate table (codegen.c: ttc_gemm_tiles), so that tests and tools read tile indices
 * and families instead of copying them. */
static PyObject *py_gemm_tiles(PyObject *m, PyObject *unused) {
    static const char *const family[] = {"cpu", "simt", "mma", "tc", "tf32"};
    PyObject *list = PyList_New(TTC_GEMM_TILES);
    if (!list) return NULL;
    for (int32_t i = 0; i < TTC_GEMM_TILES; i++) {
        const ttc_gemm_tile *t = &ttc_gemm_tiles[i];
        PyObject *d = Py_BuildValue("{s:i,s:s,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i}", "index", i, "family", family[t->family],
                                    "bm", t->bm, "bn", t->bn, "bk", t->bk, "tm", t->tm, "tn", t->tn, "kw", t->kw,
                                    "gm", t->gm, "fl", t->fl);
        if (!d) { Py_DECREF(list); return NULL; }
        PyList_SET_ITEM(list, i, d);
    }
    return list;
}

/* How many C steps of native calls ran on more than one thread (backend/cpu/step_threads.h). */
static PyObject *py_step_parallel_jobs(PyObject *m, PyObject *unused) {
    return PyLong_FromLongLong((long long)ttc_steps_parallel_jobs());
}

/* native_conv(x, w, b, y, stride, padding, dilation, groups, nhwc, runs): one float32
 * convolution through the engines' oneDNN path (backend/cpu/native_conv_dnnl.c, the primitive a native
 * convolution kernel builds, with x and y stored NHWC when nhwc, as between native convolutions),
 * run `runs` times after one warm-up call; the seconds of each call. For bench/cpu_conv.py's
 * table beside torch.conv2d: an engine of one convolution would add the NCHW reorders at its
 * boundary. Every call starts with fresh primitives (weights reordered in the warm-up). */
static int conv_buf(ttc_py_state *st, PyObject *o, Py_buffer *b, int ndim, bool writable, const char *what) {
    if (PyObject_GetBuffer(o, b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) < 0)
        return -1;
    if (b->ndim != ndim || b->itemsize != 4 || !b->format || strcmp(b->format, "f")) {
        PyErr_Format(st->InputError, "native_conv: %s must be a C-contiguous float32 array of rank %d", what, ndim);
        PyBuffer_Release(b);
        return -1;
    }
    return 0;
}

static PyObject *py_native_conv(PyObject *m, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"x", "w", "b", "y", "stride", "padding", "dilation", "groups", "nhwc", "runs", "winograd",
                             NULL};
    ttc_py_state *st = ttc_py_state_of_module(m);
    PyObject *ox, *ow, *ob, *oy;
    Py_ssize_t sh, sw, ph, pw, dh = 1, dw = 1, g = 1, runs = 1;
    int nhwc = 0, wino = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOO(nn)(nn)|(nn)npnp", kwlist, &ox, &ow, &ob, &oy, &sh, &sw, &ph, &pw,
                                     &dh, &dw, &g, &nhwc, &runs, &wino))
        return NULL;
    Py_buffer bx = {0}, bw = {0}, bb = {0}, by = {0};
    PyObject *res = NULL;
    bool has_b = ob != Py_None;
    if (conv_buf(st, ox, &bx, 4, false, "x") || conv_buf(st, ow, &bw, 4, false, "w") ||
        (has_b && conv_buf(st, ob, &bb, 1, false, "b")) || conv_buf(st, oy, &by, 4, true, "y"))
        goto fail;
    const Py_ssize_t *xs = bx.shape, *ws = bw.shape, *ys = by.shape;
    ttc_dnnl_conv_shape s = {xs[0], nhwc ? xs[3] : xs[1], nhwc ? xs[1] : xs[2], nhwc ? xs[2] : xs[3],
                             ws[0], nhwc ? ys[1] : ys[2], nhwc ? ys[2] : ys[3], g, ws[2], ws[3], sh, sw, ph, pw, dh, dw,
                             nhwc, nhwc, wino};
    int64_t ey[4] = {s.n, nhwc ? s.oh : s.oc, nhwc ? s.ow : s.oh, nhwc ? s.oc : s.ow};
    bool shapes_ok = g >= 1 && s.c % g == 0 && s.oc % g == 0 && ws[1] == s.c / g && runs >= 1 && sh >= 1 && sw >= 1 &&
                     dh >= 1 && dw >= 1 && s.oh == (s.h + 2 * ph - dh * (s.kh - 1) - 1) / sh + 1 &&
                     s.ow == (s.w + 2 * pw - dw * (s.kw - 1) - 1) / sw + 1 && (!has_b || bb.shape[0] == s.oc);
    for (int i = 0; i < 4; i++) shapes_ok = shapes_ok && ys[i] == ey[i];
    if (!shapes_ok) {
        PyErr_SetString(st->InputError, "native_conv: x, w, b, y, stride, padding, dilation and groups disagree");
        goto fail;
    }
    if (!ttc_dnnl_available()) {
        PyErr_Format(st->Error, "native_conv: oneDNN is not in use (%s)", ttc_dnnl_library());
        goto fail;
    }
    static char owner;   /* a key of its own in the primitive cache */
    ttc_dnnl_post post = {.bias = has_b};
    double *t = PyMem_Calloc((size_t)runs, sizeof *t);
    if (!t) {
        PyErr_NoMemory();
        goto fail;
    }
    bool ok = true, done = false;
    Py_BEGIN_ALLOW_THREADS
    ttc_dnnl_forget(&owner);
    for (Py_ssize_t i = -1; i < runs && ok; i++) {
        struct timespec a, z;
        clock_gettime(CLOCK_MONOTONIC, &a);
        ok = ttc_dnnl_conv_post(&owner, 0, &s, bx.buf, bw.buf, true, by.buf, has_b ? &post : NULL,
                                has_b ? bb.buf : NULL, &done) && (!has_b || done);
        clock_gettime(CLOCK_MONOTONIC, &z);
        if (i >= 0) t[i] = (double)(z.tv_sec - a.tv_sec) + 1e-9 * (double)(z.tv_nsec - a.tv_nsec);
    }
    ttc_dnnl_forget(&owner);
    Py_END_ALLOW_THREADS
    if (!ok) {
        PyErr_SetString(st->Error, "native_conv: oneDNN refused this convolution (or its bias post-op)");
    } else if ((res = PyList_New(runs)) != NULL) {
        for (Py_ssize_t i = 0; i < runs; i++) PyList_SET_ITEM(res, i, PyFloat_FromDouble(t[i]));
    }
    PyMem_Free(t);
fail:
    if (bx.obj) PyBuffer_Release(&bx);
    if (bw.obj) PyBuffer_Release(&bw);
    if (bb.obj) PyBuffer_Release(&bb);
    if (by.obj) PyBuffer_Release(&by);
    return res;
}

static PyMethodDef runtime_methods[] = {
    {"step_parallel_jobs", py_step_parallel_jobs, METH_NOARGS,
     "step_parallel_jobs() -> int: C steps of native calls (norms, epilogues, softmax, pooling) this process "
     "split among more than one thread so far (TORCHTRT_C_STEP_THREADS, backend/cpu/step_threads.h)."},
    {"native_conv", (PyCFunction)(void (*)(void))py_native_conv, METH_VARARGS | METH_KEYWORDS,
     "native_conv(x, w, b, y, stride, padding, dilation=(1, 1), groups=1, nhwc=False, runs=1, winograd=False) -> "
     "list[float]: "
     "one float32 convolution (+ bias b or None) through the engines' oneDNN path into y, x and y NCHW or, nhwc, "
     "NHWC arrays; seconds of each of `runs` calls after a warm-up (bench/cpu_conv.py). winograd: a 3x3 stride-1 "
     "convolution asks for oneDNN's Winograd kernel first, as engines do by default (TORCHTRT_C_CONV_WINOGRAD)."},
    {"native_cpu", py_native_cpu, METH_NOARGS,
     "native_cpu() -> dict: available (engines on the default device run float32 GEMM/convolution as native "
     "kernels through the CPU BLAS; TORCHTRT_C_NATIVE=0 turns it off), library (its description, or why not), "
     "conv (what runs native convolutions now: 'onednn', 'blas' = im2col + sgemm, '' = none; "
     "TORCHTRT_C_NATIVE_CONV=blas skips oneDNN), conv_library (oneDNN's version, or why not), epi_math (native "
     "epilogues take exp/erf/tanh/GELU/sigmoid/SiLU steps; TORCHTRT_C_NATIVE_EPI_MATH=0: those stay OpenCL), "
     "math_isa (the instruction set of those loops: avx512, avx2, baseline), attention (float32 attention runs "
     "as a native call: BLAS + C softmax; TORCHTRT_C_NATIVE_ATTN=0: the OpenCL kernel), layer_norm (float32 layer "
     "norm as a native call; TORCHTRT_C_NATIVE_NORM=0: the OpenCL kernel), step_threads (threads the C steps "
     "of native calls use where big enough; TORCHTRT_C_STEP_THREADS, default the online CPUs), conv_winograd (3x3 "
     "stride-1 convolutions ask oneDNN for its Winograd kernel first; TORCHTRT_C_CONV_WINOGRAD=0: direct only), "
     "conv_winograd_primitives (Winograd convolution primitives made in this process so far), int8 ('onednn': "
     "PT2E int8 convolutions/linears run as oneDNN int8 native steps; TORCHTRT_C_NATIVE_QCONV=0: the OpenCL int8 "
     "kernels), int8_onednn_calls (such calls so far), int_mm ('onednn': aten._int_mm, torchao's dynamic int8 "
     "linears, runs as a oneDNN int8 matmul native step; TORCHTRT_C_NATIVE_QMM=0: the OpenCL kernel), "
     "int_mm_onednn_calls (such calls so far)."},
    {"host_in_place", py_host_in_place, METH_NOARGS,
     "host_in_place() -> bool: the default device's host-pointer buffers are the host memory itself, so "
     "execute reads inputs and writes outputs in place with no map (probed once; TORCHTRT_C_HOST_IN_PLACE=0: no)."},
    {"program_stats", py_program_stats, METH_NOARGS,
     "program_stats() -> dict: OpenCL program builds in this process: compiled (from source), cache_hits "
     "(on-disk binary cache), from_binary (engine blobs), failed, and seconds each (compile_s, cache_s, binary_s); "
     "prebuilt: programs compiled by build worker processes, prebuild_s: seconds waited for them, "
     "prebuild_failed: workers that failed (build_worker_error() says why)."},
    {"_set_build_worker", py_set_build_worker, METH_VARARGS,
     "_set_build_worker(python, module_path): the interpreter and this module's file that program-build worker "
     "processes run (set at import; TORCHTRT_C_BUILD_PROCS)."},
    {"build_worker_error", py_build_worker_error, METH_NOARGS,
     "build_worker_error() -> str: the start of the last failed program-build worker's output ('' if none failed)."},
    {"_build_worker", py_build_worker, METH_VARARGS,
     "_build_worker(job_path) -> int: a build worker process's entry (builds a job's sources into the binary cache)."},
    {"devices", py_devices, METH_NOARGS,
     "devices() -> list[dict]: OpenCL devices (index, platform, name, type, vendor, version, driver, ..., uuid and "
     "pci_bus_id where the driver reports them, else None)."},
    {"knobs", py_knobs, METH_NOARGS,
     "knobs() -> list[dict]: the settings table (csrc/target/knobs.def), one dict per TORCHTRT_C_<name> setting: "
     "name, type, values, default, doc, level ('user' or 'debug'). torchtrt_c.settings reads it."},
    {"knob_get", py_knob_get, METH_VARARGS,
     "knob_get(name) -> str | None: a setting's value as the core reads it (code's, else the environment's); "
     "name with or without TORCHTRT_C_; KeyError for a name not in the table."},
    {"knob_set", py_knob_set, METH_VARARGS,
     "knob_set(name, value | None): sets a setting for this process from code, over the environment (None: "
     "unset); torchtrt_c.settings.override is the way to use it."},
    {"knob_clear", py_knob_clear, METH_VARARGS,
     "knob_clear(name): the setting's value is the environment's again."},
    {"knob_overrides", py_knob_overrides, METH_NOARGS,
     "knob_overrides() -> dict: the settings code has set (name without the prefix -> value, None: unset)."},
    {"default_device", py_default_device, METH_NOARGS,
     "default_device() -> int: TORCHTRT_C_DEVICE, else the first GPU, else the first device."},
    {"runtime_stats", py_runtime_stats, METH_NOARGS,
     "runtime_stats() -> dict, process-wide: live OpenCL buffers and bytes (live_buffers, live_bytes, peak_bytes, "
     "host_ptr_bytes, buffers_created, buffers_released), live engines (engines), weights held in host memory "
     "(tensor_data, tensor_data_bytes), CUDA memory, modules and graphs of the CUDA launch path (cuda_allocs, "
     "cuda_bytes, cuda_modules, cuda_graphs), buffers shared with CUDA (shared_buffers, shared_bytes)."},
    {"hash64", py_hash64, METH_VARARGS,
     "hash64(data, seed=0) -> int: the core's 64-bit hash of a bytes-like object (engine blob checksums, "
     "program cache keys)."},
    {"gemm_tiles", py_gemm_tiles, METH_NOARGS,
     "gemm_tiles() -> list[dict]: the GEMM kernel candidates TORCHTRT_C_GEMM_TILE indexes (index, family "
     "'cpu' / 'simt' / 'mma' (NVIDIA tensor cores) / 'tc' and 'tf32' (pipelined tensor cores through the PTX "
     "prelude: emulated off NVIDIA), bm, bn, bk, tm, tn, kw (k-split warps; stages for tc/tf32))."},
    {NULL, NULL, 0, NULL},
};

int ttc_py_init_runtime(PyObject *m, ttc_py_state *st) {
    return PyModule_AddFunctions(m, runtime_methods);
}
