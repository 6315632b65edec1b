/*
 * OpenCL C kernel templates, embedded at build time from csrc/kernels/ (*.cl files).
 * Templates are specialised with -D defines or by the code generator.
 *
 *   const char *src = ttc_kernel_source_get("gemm");   // NULL if there is none
 */
#ifndef TTC_KERNELS_H
#define TTC_KERNELS_H

typedef struct ttc_kernel_source {
    const char *name;   /* file stem: "gemm" for gemm.cl */
    const char *source;
} ttc_kernel_source;

extern const ttc_kernel_source ttc_kernel_sources[];
extern const int ttc_kernel_source_count;

const char *ttc_kernel_source_get(const char *name);

#endif
