/* Placeholder: replaced by the partition binding. */
#include "binding.h"
int ttc_py_init_partition(PyObject *m, ttc_py_state *st) { (void)m; (void)st; return 0; }
