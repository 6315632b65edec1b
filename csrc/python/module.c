/* torchtrt_c._C: module definition, module state and the exception hierarchy. */
#include "binding.h"

#include "../common/status.h"

ttc_py_state *ttc_py_state_of_module(PyObject *module) {
    return (ttc_py_state *)PyModule_GetState(module);
}

ttc_py_state *ttc_py_state_of_type(PyTypeObject *tp) {
    return (ttc_py_state *)PyType_GetModuleState(tp);
}

PyObject *ttc_py_raise(ttc_py_state *st, ttc_status s) {
    const char *msg = ttc_last_error();
    if (!msg || !*msg) msg = ttc_status_name(s);
    PyObject *type = st->Error;
    switch (s) {
    case TTC_ERR_NOMEM: PyErr_SetString(PyExc_MemoryError, msg); return NULL;
    case TTC_ERR_UNSUPPORTED: type = st->UnsupportedOperatorError; break;
    case TTC_ERR_DEVICE: type = st->OpenCLError; break;
    case TTC_ERR_BUILD: type = st->BuildError; break;
    case TTC_ERR_SERIALIZATION: type = st->SerializationError; break;
    case TTC_ERR_INPUT: type = st->InputError; break;
    case TTC_ERR_PARSE: type = st->ParseError; break;
    case TTC_ERR_VERIFY: type = st->VerifyError; break;
    case TTC_ERR_PARTITION: type = st->PartitionError; break;
    case TTC_ERR_NO_DEVICE: type = st->DeviceNotFoundError; break;
    default: break;
    }
    PyObject *exc;
    PyObject *arg = PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg), "replace");
    if (!arg) return NULL;
    exc = PyObject_CallOneArg(type, arg);
    Py_DECREF(arg);
    if (!exc) return NULL;
    if (s == TTC_ERR_DEVICE) {
        /* code: the backend's own (an OpenCL CL_* value); device_error: "OpenCL CL_X (-5)" */
        PyObject *code = PyLong_FromLong(ttc_last_device_code());
        if (code) { PyObject_SetAttrString(exc, "code", code); Py_DECREF(code); }
        PyObject *name = PyUnicode_FromString(ttc_last_device_error());
        if (name) { PyObject_SetAttrString(exc, "device_error", name); Py_DECREF(name); }
    }
    if (s == TTC_ERR_BUILD) {
        PyObject *log = PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg), "replace");
        if (log) { PyObject_SetAttrString(exc, "log", log); Py_DECREF(log); }
    }
    PyErr_Clear();
    PyErr_SetObject(type, exc);
    Py_DECREF(exc);
    return NULL;
}

int ttc_py_raise_int(ttc_py_state *st, ttc_status s) {
    ttc_py_raise(st, s);
    return -1;
}

static int add_exc(PyObject *m, PyObject **slot, const char *name, PyObject *base, const char *doc) {
    char full[128];
    PyOS_snprintf(full, sizeof full, "torchtrt_c.%s", name);
    *slot = PyErr_NewExceptionWithDoc(full, doc, base, NULL);
    if (!*slot) return -1;
    return PyModule_AddObjectRef(m, name, *slot);
}

/* An exception with two bases (also a ValueError: a bad device value). */
static int add_exc2(PyObject *m, PyObject **slot, const char *name, PyObject *base, PyObject *base2, const char *doc) {
    PyObject *bases = PyTuple_Pack(2, base, base2);
    if (!bases) return -1;
    int r = add_exc(m, slot, name, bases, doc);
    Py_DECREF(bases);
    return r;
}

static int module_exec(PyObject *m) {
    ttc_py_state *st = ttc_py_state_of_module(m);
    if (add_exc(m, &st->Error, "Error", PyExc_RuntimeError, "Base class of torchtrt_c errors.") ||
        add_exc(m, &st->UnsupportedOperatorError, "UnsupportedOperatorError", st->Error,
                "An operator or feature is not supported.") ||
        add_exc(m, &st->OpenCLError, "OpenCLError", st->Error,
                "A device (backend) call failed; .code holds the backend's code (OpenCL: the CL error code), "
                ".device_error its name (\"OpenCL CL_OUT_OF_RESOURCES (-5)\"). Also named DeviceError.") ||
        PyModule_AddObjectRef(m, "DeviceError", st->OpenCLError) ||
        add_exc(m, &st->BuildError, "BuildError", st->Error, "An OpenCL program failed to build; .log holds the build log.") ||
        add_exc(m, &st->SerializationError, "SerializationError", st->Error,
                "An engine blob or saved file is corrupt, truncated or foreign.") ||
        add_exc(m, &st->InputError, "InputError", st->Error, "Inputs do not match an engine's bindings.") ||
        add_exc(m, &st->ParseError, "ParseError", st->Error, "IR text failed to parse.") ||
        add_exc(m, &st->VerifyError, "VerifyError", st->Error, "A graph failed verification.") ||
        add_exc(m, &st->PartitionError, "PartitionError", st->Error,
                "Partitioning failed, e.g. require_full_compilation with unsupported nodes.") ||
        add_exc2(m, &st->DeviceNotFoundError, "DeviceNotFoundError", st->Error, PyExc_ValueError,
                 "A device setting (compile(device=), Input(device=), TORCHTRT_C_DEVICE) names no device there "
                 "is, or a CUDA device without a matching OpenCL device; the message lists the devices."))
        return -1;
    if (ttc_py_init_graph(m, st) || ttc_py_init_passes(m, st) || ttc_py_init_partition(m, st) ||
        ttc_py_init_runtime(m, st) || ttc_py_init_engine(m, st) || ttc_py_init_ops(m, st) ||
        ttc_py_init_interop(m, st) || ttc_py_init_cuda_launch(m, st) || ttc_py_init_fastcall(m, st) ||
        ttc_py_init_cudnn(m, st))
        return -1;
    return 0;
}

static int module_traverse(PyObject *m, visitproc visit, void *arg) {
    ttc_py_state *st = ttc_py_state_of_module(m);
    if (!st) return 0;
    PyObject **objs = (PyObject **)st;
    for (size_t i = 0; i < sizeof(*st) / sizeof(PyObject *); i++) Py_VISIT(objs[i]);
    return 0;
}

static int module_clear(PyObject *m) {
    ttc_py_state *st = ttc_py_state_of_module(m);
    if (!st) return 0;
    PyObject **objs = (PyObject **)st;
    for (size_t i = 0; i < sizeof(*st) / sizeof(PyObject *); i++) Py_CLEAR(objs[i]);
    return 0;
}

static void module_free(void *m) { module_clear((PyObject *)m); }

static PyModuleDef_Slot module_slots[] = {
    {Py_mod_exec, module_exec},
#if PY_VERSION_HEX >= 0x030C0000
    {Py_mod_multiple_interpreters, Py_MOD_MULTIPLE_INTERPRETERS_NOT_SUPPORTED},
#endif
    {0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "torchtrt_c._C",
    .m_doc = "torchtrt_c C core: graph IR, passes, partitioner, engines on OpenCL.",
    .m_size = sizeof(ttc_py_state),
    .m_slots = module_slots,
    .m_traverse = module_traverse,
    .m_clear = module_clear,
    .m_free = module_free,
};

PyMODINIT_FUNC PyInit__C(void) { return PyModuleDef_Init(&module_def); }
