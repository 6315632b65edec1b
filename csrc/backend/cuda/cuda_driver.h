/*
 * The CUDA driver as a launch backend for programs NVIDIA's OpenCL compiled: their binaries
 * are PTX text, which the CUDA driver loads (cuModuleLoadDataEx) into torch's own context and
 * launches on torch's stream, so an engine called with CUDA tensors runs with no switch to
 * OpenCL's context (about 0.3 ms per call on an H100, bench/RESULTS.md).
 *
 *   char why[256];
 *   if (ttc_cuda_available(why, sizeof why)) {
 *       ttc_cuda_scope sc;
 *       TTC_TRY(ttc_cuda_enter(ordinal, &sc));          // torch's (primary) context current
 *       char *ptx;
 *       TTC_TRY(ttc_cuda_ptx_prepare(bin, len, &ptx));  // TTC_ERR_UNSUPPORTED: kernel forms
 *       void *mod, *fn;
 *       TTC_TRY(ttc_cuda_module_load(ptx, &mod));
 *       TTC_TRY(ttc_cuda_function(mod, "k0", &fn, &max_threads));
 *       TTC_TRY(ttc_cuda_launch(fn, grid, block, stream, params));
 *       ttc_cuda_leave(&sc);
 *   }
 *
 * libcuda.so.1 is dlopen'd on first use, never linked, and the few driver types are declared
 * by layout here: the library builds and imports on machines without CUDA, where
 * ttc_cuda_available says why this path is not there.
 *
 * What a CUDA launch does not give an OpenCL kernel (found by bench/probe/ptx_envreg_probe.py
 * on an H100, driver 580): NVIDIA's OpenCL PTX reads its launch environment from %envreg
 * registers, which a CUDA launch leaves holding other values (%envreg0 held 58995400, so
 * get_group_id(0) = %ctaid.x + %envreg0 pointed far outside every buffer: the "static __local
 * array and barriers" kernel's illegal address). The registers are: envreg0..2 the group
 * offsets, envreg3..5 the global offsets (both 0 for us: launches are never split and take no
 * global offset), envreg6..8 the group counts (%nctaid), envreg9 the work dimension.
 * ttc_cuda_ptx_prepare rewrites the first nine and refuses any other.
 *
 * __local kernel arguments (bench/probe/dynsmem_probe.py): NVIDIA's OpenCL declares each as a
 * ".param .u64 .ptr .shared" parameter. ttc_cuda_ptx_prepare makes it a byte offset into the
 * block's dynamic shared memory (an ".extern .shared" array): the launch passes offsets and the
 * dynamic size (ttc_cuda_launch's shared_bytes), above 48 KiB after ttc_cuda_set_dynamic_shared.
 * A `__global const ulong16 *` parameter (".param .u64 .ptr .global .align 128") becomes a
 * 128-byte by-value parameter that the launch fills with a CUtensorMap (ttc_cuda_tensor_map),
 * and its loads its generic address (the tensor copies' operand).
 */
#ifndef TTC_BACKEND_CUDA_DRIVER_H
#define TTC_BACKEND_CUDA_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../common/status.h"

/* The first of names (sonames) already in the process (torch's own: two copies of one CUDA
 * library would each keep their own state), else the first the loader finds; NULL if none. */
void *ttc_cuda_dlopen_first(const char *const *names, size_t n);
/* Whether libcuda.so.1 loads, has what this path needs and initialises; why (if given) says
 * what is missing. Never fails; the answer is kept for the process. */
bool ttc_cuda_available(char *why, size_t why_len);
/* The UUID of CUDA device ordinal (to match it with an OpenCL device). */
ttc_status ttc_cuda_device_uuid(int32_t ordinal, unsigned char uuid[16]);

/* Makes the primary context of ordinal (the one torch uses) current on this thread, unless
 * it already is; ttc_cuda_leave restores the previous one. */
typedef struct ttc_cuda_scope { bool pushed; } ttc_cuda_scope;
ttc_status ttc_cuda_enter(int32_t ordinal, ttc_cuda_scope *sc);
void ttc_cuda_leave(ttc_cuda_scope *sc);

/* NVIDIA OpenCL's PTX made launchable by the CUDA driver (see above): *out is malloc'd,
 * NUL-terminated. TTC_ERR_UNSUPPORTED (the reason in the message) for PTX that reads launch
 * state a CUDA launch cannot give, or uses a __local argument other than by loading it. Pure
 * text: no driver. */
ttc_status ttc_cuda_ptx_prepare(const char *ptx, size_t len, char **out);

/* The block size entry point name requires (".reqntid", from OpenCL's reqd_work_group_size):
 * OpenCL launches such a kernel with that local size when given none, CUDA refuses any other.
 * req[d] = 0 when the entry declares none. Pure text. */
void ttc_cuda_ptx_reqntid(const char *ptx, const char *name, uint32_t req[3]);
/* How many 128-byte (tensor-map) parameters entry `name` of prepared PTX declares. */
int32_t ttc_cuda_ptx_maps(const char *ptx, const char *name);
/* A CUtensorMap (128 bytes at map, 64-byte aligned) of the row-major half matrix at device
 * address base, rows x inner, in boxes of box_rows x box_inner with the 128-byte swizzle
 * (what the warpgroup MMA's descriptors read: kernels/ptx.cl); out-of-bounds elements read as
 * zeros. TTC_ERR_UNSUPPORTED, saying why, where the start is not 16-byte aligned, inner is not
 * a multiple of 8 or the driver has no tensor maps. */
ttc_status ttc_cuda_tensor_map(void *map, uint64_t base, uint64_t inner, uint64_t rows, uint32_t box_inner,
                               uint32_t box_rows);

/* In the current context. */
ttc_status ttc_cuda_module_load(const char *ptx, void **mod);
void ttc_cuda_module_unload(void *mod);
/* fn: the entry point; max_threads: the most threads a block of it may have. */
ttc_status ttc_cuda_function(void *mod, const char *name, void **fn, int32_t *max_threads);
/* fn's static shared memory, and the most shared memory a block of ordinal may have (static
 * + dynamic, after ttc_cuda_set_dynamic_shared). */
ttc_status ttc_cuda_shared_limits(int32_t ordinal, void *fn, size_t *static_bytes, size_t *max_block);
/* Allows launches of fn with up to bytes of dynamic shared memory (beyond the default 48 KiB). */
ttc_status ttc_cuda_set_dynamic_shared(void *fn, size_t bytes);
/* params: one pointer per kernel parameter, to its value (cuLaunchKernel's kernelParams);
 * shared_bytes: the block's dynamic shared memory (the kernels' __local arguments). */
ttc_status ttc_cuda_launch(void *fn, const uint32_t grid[3], const uint32_t block[3], size_t shared_bytes,
                           uint64_t stream, void **params);
ttc_status ttc_cuda_alloc(size_t n, uint64_t *ptr);
void ttc_cuda_free(uint64_t ptr);           /* waits for the context's work first */
/* What the library holds in CUDA now: ttc_cuda_alloc allocations and their bytes (as the
 * driver sizes them), loaded modules, instantiated graphs (leak checks: memory_stats()). */
typedef struct ttc_cuda_stats { int64_t allocs, bytes, modules, graphs; } ttc_cuda_stats;
ttc_cuda_stats ttc_cuda_stats_get(void);
ttc_status ttc_cuda_upload(uint64_t dst, const void *src, size_t n);          /* synchronous */
ttc_status ttc_cuda_memset32(uint64_t dst, uint32_t v, size_t count, uint64_t stream);
/* Copies n bytes to the host after the stream's work and waits for it. */
ttc_status ttc_cuda_download(void *dst, uint64_t src, size_t n, uint64_t stream);

/* Graphs: a call's launches recorded once on a private stream and replayed as one launch.
 * ttc_cuda_graphs_available: the driver has the graph API (CUDA 11.4+). stream_new: a
 * non-blocking stream for recording (never run on). record_begin/record_end bracket the
 * launches to record on that stream (relaxed mode: other threads are not policed); record_end
 * with keep=false only ends the recording (after a failed launch); with keep=true *exec is an
 * instantiated graph for ttc_cuda_graph_launch on any stream (its launches are ordered behind
 * that stream's work and behind earlier launches of the same graph). stream_capturing: a
 * stream that is being recorded (e.g. by torch.cuda.graph): launch plainly there. */
bool ttc_cuda_graphs_available(void);
ttc_status ttc_cuda_stream_new(uint64_t *stream);
void ttc_cuda_stream_free(uint64_t stream);
bool ttc_cuda_stream_capturing(uint64_t stream);
ttc_status ttc_cuda_record_begin(uint64_t stream);
ttc_status ttc_cuda_record_end(uint64_t stream, bool keep, void **exec);
ttc_status ttc_cuda_graph_launch(void *exec, uint64_t stream);
void ttc_cuda_graph_free(void *exec);

/* Events, for timing work on a stream (optional in the driver: ttc_cuda_events_available).
 * ttc_cuda_event_ms waits for `to` and gives the milliseconds between the two records. */
bool ttc_cuda_events_available(void);
ttc_status ttc_cuda_event_new(void **ev);
void ttc_cuda_event_free(void *ev);
ttc_status ttc_cuda_event_record(void *ev, uint64_t stream);
ttc_status ttc_cuda_event_ms(void *from, void *to, float *ms);

#endif
