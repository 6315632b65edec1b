/*
 * torchtrt_c public C API.
 *
 * The core never includes Python.h and never aborts: every fallible call returns a
 * ttc_status and records a message retrievable with ttc_last_error() (thread-local).
 *
 *   ttc_graph *g = NULL;
 *   if (ttc_graph_parse("graph(%x : Float(2, 3)):\n"
 *                       "  %y : Float(2, 3) = aten.relu.default(%x)\n"
 *                       "  return (%y)\n", &g) != TTC_OK)
 *       fprintf(stderr, "%s\n", ttc_last_error());
 *   ttc_graph_free(g);
 */
#ifndef TORCHTRT_C_H
#define TORCHTRT_C_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ttc_status {
    TTC_OK = 0,
    TTC_ERR_INVALID_ARG,     /* bad argument from the caller */
    TTC_ERR_NOMEM,
    TTC_ERR_PARSE,           /* IR text did not parse (message names line:col) */
    TTC_ERR_VERIFY,          /* graph failed verification */
    TTC_ERR_UNSUPPORTED,     /* an op/feature the caller asked for is not supported */
    TTC_ERR_DEVICE,          /* a device (backend) call failed; ttc_last_device_error() names it */
    TTC_ERR_BUILD,           /* program build failed; message holds the build log */
    TTC_ERR_SERIALIZATION,   /* corrupt/foreign/truncated engine blob */
    TTC_ERR_INPUT,           /* engine inputs do not match the bindings */
    TTC_ERR_PARTITION,       /* require_full_compilation violated etc. */
    TTC_ERR_INTERNAL,
    TTC_ERR_NO_DEVICE,       /* a device setting names no device there is (message lists them) */
    TTC_STATUS_COUNT
} ttc_status;

/* Last error message of this thread ("" when none). */
const char *ttc_last_error(void);
/* The backend's own code of the last TTC_ERR_DEVICE on this thread (0 when none), and its
 * name with the backend's, e.g. "OpenCL CL_OUT_OF_RESOURCES (-5)" ("" when none). */
int32_t ttc_last_device_code(void);
const char *ttc_last_device_error(void);
const char *ttc_status_name(ttc_status s);

typedef enum ttc_dtype {
    TTC_DTYPE_FLOAT32 = 0,
    TTC_DTYPE_FLOAT16,
    TTC_DTYPE_BFLOAT16,
    TTC_DTYPE_FLOAT64,
    TTC_DTYPE_INT64,
    TTC_DTYPE_INT32,
    TTC_DTYPE_INT8,
    TTC_DTYPE_UINT8,
    TTC_DTYPE_BOOL,
    TTC_DTYPE_COUNT
} ttc_dtype;

/* "float32", ... and the IR text names "Float", "Half", "BFloat16", "Double", "Long",
 * "Int", "Char", "Byte", "Bool". */
const char *ttc_dtype_name(ttc_dtype d);
const char *ttc_dtype_ir_name(ttc_dtype d);
size_t ttc_dtype_size(ttc_dtype d);
bool ttc_dtype_from_name(const char *name, ttc_dtype *out); /* accepts both spellings */

typedef struct ttc_graph ttc_graph;

ttc_status ttc_graph_parse(const char *text, ttc_graph **out);
void ttc_graph_free(ttc_graph *g);

#ifdef __cplusplus
}
#endif
#endif
