/* Placeholder: replaced by the passes binding. */
#include "binding.h"
int ttc_py_init_passes(PyObject *m, ttc_py_state *st) { (void)m; (void)st; return 0; }
