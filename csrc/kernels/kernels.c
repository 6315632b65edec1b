/* Lookup of embedded kernel templates by name. */
#include "kernels.h"

#include <string.h>

const char *ttc_kernel_source_get(const char *name) {
    for (int i = 0; i < ttc_kernel_source_count; i++)
        if (!strcmp(ttc_kernel_sources[i].name, name)) return ttc_kernel_sources[i].source;
    return NULL;
}
