/* The partitioner's support hook backed by the converter registry (py_registry_support.c). */
#ifndef TTC_PY_REGISTRY_SUPPORT_H
#define TTC_PY_REGISTRY_SUPPORT_H

#include "../partition/partition.h"

bool ttc_partition_registry_support(const ttc_graph *g, const ttc_node *n, const ttc_partition_settings *s,
                                    char **why_not, bool *dynamic_ok);

#endif
