/* Placeholder: replaced by the engine binding. */
#include "binding.h"
int ttc_py_init_engine(PyObject *m, ttc_py_state *st) { (void)m; (void)st; return 0; }
