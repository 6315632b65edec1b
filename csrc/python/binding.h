/*
 * The CPython binding: module state, exception mapping, and the per-feature init hooks.
 * Each py_*.c file adds its heap types/functions to the module from its init hook;
 * module.c calls the hooks in order (multi-phase init, no C globals holding objects).
 *
 *   ttc_status st = ttc_graph_verify(g);
 *   if (st != TTC_OK) return ttc_py_raise(state, st);   // sets the exception, returns NULL
 */
#ifndef TTC_BINDING_H
#define TTC_BINDING_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "../include/torchtrt_c.h"

typedef struct ttc_py_state {
    /* exception hierarchy: Error <- {UnsupportedOperatorError, OpenCLError, BuildError,
     * SerializationError, InputError, ParseError, VerifyError, PartitionError, DeviceNotFoundError} */
    PyObject *Error;
    PyObject *UnsupportedOperatorError;
    PyObject *OpenCLError;
    PyObject *BuildError;
    PyObject *SerializationError;
    PyObject *InputError;
    PyObject *ParseError;
    PyObject *VerifyError;
    PyObject *PartitionError;
    PyObject *DeviceNotFoundError;
    /* heap types (owned by the module) */
    PyObject *GraphType;
    PyObject *EngineType;
    PyObject *DeviceType;
    PyObject *extra[8];       /* room for feature files' own types */
} ttc_py_state;

ttc_py_state *ttc_py_state_of_module(PyObject *module);
/* For methods of heap types defined with PyType_FromModuleAndSpec. */
ttc_py_state *ttc_py_state_of_type(PyTypeObject *tp);

/* Sets the Python exception matching st with ttc_last_error() as the message (OpenCLError
 * gets .code, BuildError .log) and returns NULL. */
PyObject *ttc_py_raise(ttc_py_state *st, ttc_status s);
/* Same, returning -1 (for init/setters). */
int ttc_py_raise_int(ttc_py_state *st, ttc_status s);

/* Feature init hooks, called from module exec in this order. Each returns 0 or -1. */
int ttc_py_init_graph(PyObject *m, ttc_py_state *st);      /* py_graph.c: Graph */
int ttc_py_init_passes(PyObject *m, ttc_py_state *st);     /* py_passes.c: lowering */
int ttc_py_init_partition(PyObject *m, ttc_py_state *st);  /* py_partition.c */
int ttc_py_init_runtime(PyObject *m, ttc_py_state *st);    /* py_runtime.c: devices() */
int ttc_py_init_engine(PyObject *m, ttc_py_state *st);     /* py_engine.c: Engine */
int ttc_py_init_ops(PyObject *m, ttc_py_state *st);        /* py_ops.c: ops() */
int ttc_py_init_interop(PyObject *m, ttc_py_state *st);    /* py_interop.c: CUDA-shared memory */
int ttc_py_init_cuda_launch(PyObject *m, ttc_py_state *st); /* py_cuda_launch.c: PTX through the CUDA driver */
int ttc_py_init_fastcall(PyObject *m, ttc_py_state *st);   /* py_fastcall.c: FastCall (CPU tensors in place) */
int ttc_py_init_cudnn(PyObject *m, ttc_py_state *st);      /* py_cudnn.c: cuDNN convolutions on pointers */

/* Graph objects (py_graph.c). wrap takes ownership of g (freed on failure) and returns a
 * new reference or NULL; get returns the borrowed C graph, or NULL with TypeError set when
 * obj is not a Graph. */
struct ttc_graph;
PyObject *ttc_py_graph_wrap(ttc_py_state *st, struct ttc_graph *g);
struct ttc_graph *ttc_py_graph_get(PyObject *obj);
/* Graph methods defined by the feature files (py_passes.c, py_partition.c). */
/* The C engine behind an Engine object (py_engine.c), or NULL with TypeError set. */
struct ttc_engine;
struct ttc_engine *ttc_py_engine_get(ttc_py_state *st, PyObject *obj);
PyObject *ttc_py_graph_lower(PyObject *self, PyObject *args, PyObject *kw);
PyObject *ttc_py_graph_partition(PyObject *self, PyObject *args, PyObject *kw);
PyObject *ttc_py_graph_coverage(PyObject *self, PyObject *args, PyObject *kw);

#endif
