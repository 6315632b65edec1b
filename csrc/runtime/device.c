/* libOpenCL loading, OpenCL error names, device discovery/selection, shared contexts. */
#include "runtime.h"

#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <strings.h>
#include <stdlib.h>
#include <string.h>

ttc_cl_api ttc_cl_fns;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static ttc_status load_status = TTC_OK;
static char load_msg[512];

static void load_lib(void) {
    const char *names[] = {"libOpenCL.so.1", "libOpenCL.so"};
    void *h = NULL;
    for (size_t i = 0; i < 2 && !h; i++) h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(load_msg, sizeof load_msg,
                 "no OpenCL ICD loader found (libOpenCL.so.1: %s); install an OpenCL loader and a "
                 "driver, e.g. `apt install ocl-icd-libopencl1 pocl-opencl-icd`", e ? e : "not found");
        load_status = TTC_ERR_OPENCL;
        return;
    }
#define X(name)                                                                               \
    ttc_cl_fns.name = (__typeof__(ttc_cl_fns.name))dlsym(h, "cl" #name);                      \
    if (!ttc_cl_fns.name) {                                                                   \
        snprintf(load_msg, sizeof load_msg, "libOpenCL lacks cl" #name " (OpenCL 1.2 needed)"); \
        load_status = TTC_ERR_OPENCL;                                                         \
        return;                                                                               \
    }
    TTC_CL_FUNCS(X)
#undef X
    ttc_cl_memstats_install(&ttc_cl_fns);
}

ttc_status ttc_cl_load(void) {
    pthread_once(&load_once, load_lib);
    if (load_status != TTC_OK) return ttc_fail_cl(CL_DEVICE_NOT_FOUND, "%s", load_msg);
    return TTC_OK;
}

const char *ttc_cl_error_name(cl_int c) {
    switch (c) {
#define E(x) case x: return #x;
    E(CL_SUCCESS) E(CL_DEVICE_NOT_FOUND) E(CL_DEVICE_NOT_AVAILABLE) E(CL_COMPILER_NOT_AVAILABLE)
    E(CL_MEM_OBJECT_ALLOCATION_FAILURE) E(CL_OUT_OF_RESOURCES) E(CL_OUT_OF_HOST_MEMORY)
    E(CL_PROFILING_INFO_NOT_AVAILABLE) E(CL_MEM_COPY_OVERLAP) E(CL_IMAGE_FORMAT_MISMATCH)
    E(CL_IMAGE_FORMAT_NOT_SUPPORTED) E(CL_BUILD_PROGRAM_FAILURE) E(CL_MAP_FAILURE)
    E(CL_MISALIGNED_SUB_BUFFER_OFFSET) E(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    E(CL_COMPILE_PROGRAM_FAILURE) E(CL_LINKER_NOT_AVAILABLE) E(CL_LINK_PROGRAM_FAILURE)
    E(CL_DEVICE_PARTITION_FAILED) E(CL_KERNEL_ARG_INFO_NOT_AVAILABLE) E(CL_INVALID_VALUE)
    E(CL_INVALID_DEVICE_TYPE) E(CL_INVALID_PLATFORM) E(CL_INVALID_DEVICE) E(CL_INVALID_CONTEXT)
    E(CL_INVALID_QUEUE_PROPERTIES) E(CL_INVALID_COMMAND_QUEUE) E(CL_INVALID_HOST_PTR)
    E(CL_INVALID_MEM_OBJECT) E(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR) E(CL_INVALID_IMAGE_SIZE)
    E(CL_INVALID_SAMPLER) E(CL_INVALID_BINARY) E(CL_INVALID_BUILD_OPTIONS) E(CL_INVALID_PROGRAM)
    E(CL_INVALID_PROGRAM_EXECUTABLE) E(CL_INVALID_KERNEL_NAME) E(CL_INVALID_KERNEL_DEFINITION)
    E(CL_INVALID_KERNEL) E(CL_INVALID_ARG_INDEX) E(CL_INVALID_ARG_VALUE) E(CL_INVALID_ARG_SIZE)
    E(CL_INVALID_KERNEL_ARGS) E(CL_INVALID_WORK_DIMENSION) E(CL_INVALID_WORK_GROUP_SIZE)
    E(CL_INVALID_WORK_ITEM_SIZE) E(CL_INVALID_GLOBAL_OFFSET) E(CL_INVALID_EVENT_WAIT_LIST)
    E(CL_INVALID_EVENT) E(CL_INVALID_OPERATION) E(CL_INVALID_GL_OBJECT) E(CL_INVALID_BUFFER_SIZE)
    E(CL_INVALID_MIP_LEVEL) E(CL_INVALID_GLOBAL_WORK_SIZE) E(CL_INVALID_PROPERTY)
    E(CL_INVALID_IMAGE_DESCRIPTOR) E(CL_INVALID_COMPILER_OPTIONS) E(CL_INVALID_LINKER_OPTIONS)
    E(CL_INVALID_DEVICE_PARTITION_COUNT)
#undef E
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    default: return "CL_UNKNOWN_ERROR";
    }
}

static pthread_once_t discover_once = PTHREAD_ONCE_INIT;
static ttc_status discover_status;
static char discover_msg[512];
static cl_int discover_code;
static ttc_cl_device *devices;
static int32_t n_devices;

static void str_info_dev(cl_device_id d, cl_device_info what, char *buf, size_t cap) {
    buf[0] = 0;
    if (TTC_CL(GetDeviceInfo)(d, what, cap - 1, buf, NULL) != CL_SUCCESS) buf[0] = 0;
    buf[cap - 1] = 0;
}

static void discover(void) {
    if (ttc_cl_load() != TTC_OK) {
        snprintf(discover_msg, sizeof discover_msg, "%s", ttc_last_error());
        discover_status = TTC_ERR_OPENCL;
        discover_code = CL_DEVICE_NOT_FOUND;
        return;
    }
    cl_uint np = 0;
    cl_int err = TTC_CL(GetPlatformIDs)(0, NULL, &np);
    if (err != CL_SUCCESS || np == 0) {
        snprintf(discover_msg, sizeof discover_msg,
                 "no OpenCL platform/ICD found (clGetPlatformIDs: %s); install a driver, e.g. "
                 "pocl-opencl-icd for the CPU", err == CL_SUCCESS ? "0 platforms" : ttc_cl_error_name(err));
        discover_status = TTC_ERR_OPENCL;
        discover_code = err == CL_SUCCESS ? -1001 : err;
        return;
    }
    cl_platform_id *ps = calloc(np, sizeof *ps);
    if (!ps) { discover_status = TTC_ERR_NOMEM; snprintf(discover_msg, sizeof discover_msg, "out of memory"); return; }
    TTC_CL(GetPlatformIDs)(np, ps, NULL);
    for (cl_uint p = 0; p < np; p++) {
        cl_uint nd = 0;
        if (TTC_CL(GetDeviceIDs)(ps[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) != CL_SUCCESS || !nd) continue;
        cl_device_id *ds = calloc(nd, sizeof *ds);
        ttc_cl_device *grown = realloc(devices, sizeof *devices * (size_t)(n_devices + (int32_t)nd));
        if (!ds || !grown) { free(ds); if (grown) devices = grown; break; }
        devices = grown;
        TTC_CL(GetDeviceIDs)(ps[p], CL_DEVICE_TYPE_ALL, nd, ds, NULL);
        for (cl_uint i = 0; i < nd; i++) {
            ttc_cl_device *d = &devices[n_devices];
            memset(d, 0, sizeof *d);
            d->index = n_devices;
            d->platform_id = ps[p];
            d->id = ds[i];
            if (TTC_CL(GetPlatformInfo)(ps[p], CL_PLATFORM_NAME, sizeof d->platform - 1, d->platform, NULL))
                d->platform[0] = 0;
            str_info_dev(ds[i], CL_DEVICE_NAME, d->name, sizeof d->name);
            str_info_dev(ds[i], CL_DEVICE_VENDOR, d->vendor, sizeof d->vendor);
            str_info_dev(ds[i], CL_DEVICE_VERSION, d->version, sizeof d->version);
            str_info_dev(ds[i], CL_DRIVER_VERSION, d->driver, sizeof d->driver);
            cl_device_type t = 0;
            TTC_CL(GetDeviceInfo)(ds[i], CL_DEVICE_TYPE, sizeof t, &t, NULL);
            d->is_gpu = (t & CL_DEVICE_TYPE_GPU) != 0;
            d->is_cpu = (t & CL_DEVICE_TYPE_CPU) != 0;
            TTC_CL(GetDeviceInfo)(ds[i], CL_DEVICE_MAX_COMPUTE_UNITS, sizeof d->compute_units, &d->compute_units, NULL);
            TTC_CL(GetDeviceInfo)(ds[i], CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof d->max_work_group, &d->max_work_group, NULL);
            TTC_CL(GetDeviceInfo)(ds[i], CL_DEVICE_LOCAL_MEM_SIZE, sizeof d->local_mem, &d->local_mem, NULL);
            TTC_CL(GetDeviceInfo)(ds[i], CL_DEVICE_GLOBAL_MEM_SIZE, sizeof d->global_mem, &d->global_mem, NULL);
            TTC_CL(GetDeviceInfo)(ds[i], CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof d->max_alloc, &d->max_alloc, NULL);
            TTC_CL(GetDeviceInfo)(ds[i], CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof d->mem_align_bits, &d->mem_align_bits, NULL);
            size_t elen = 0;
            TTC_CL(GetDeviceInfo)(ds[i], CL_DEVICE_EXTENSIONS, 0, NULL, &elen);
            char *ext = calloc(elen + 1, 1);
            if (ext && TTC_CL(GetDeviceInfo)(ds[i], CL_DEVICE_EXTENSIONS, elen, ext, NULL) == CL_SUCCESS)
                d->fp16 = d->fp16_advertised = strstr(ext, "cl_khr_fp16") != NULL;
            free(ext);
            /* NVIDIA's OpenCL computes in half without advertising cl_khr_fp16. */
            if (d->is_gpu && strstr(d->vendor, "NVIDIA")) d->fp16 = true;
            char cver[64];
            str_info_dev(ds[i], CL_DEVICE_OPENCL_C_VERSION, cver, sizeof cver);
            d->opencl2 = strstr(cver, "OpenCL C 2") || strstr(cver, "OpenCL C 3");
            pthread_mutex_init(&d->lock, NULL);
            n_devices++;
        }
        free(ds);
    }
    free(ps);
    if (n_devices == 0) {
        snprintf(discover_msg, sizeof discover_msg,
                 "OpenCL platforms found but no devices; install a driver, e.g. pocl-opencl-icd");
        discover_status = TTC_ERR_OPENCL;
        discover_code = CL_DEVICE_NOT_FOUND;
    }
}

ttc_status ttc_cl_devices(ttc_cl_device **devs, int32_t *n) {
    pthread_once(&discover_once, discover);
    if (discover_status != TTC_OK) {
        *devs = NULL; *n = 0;
        if (discover_status == TTC_ERR_OPENCL) return ttc_fail_cl(discover_code, "%s", discover_msg);
        return ttc_fail(discover_status, "%s", discover_msg);
    }
    *devs = devices;
    *n = n_devices;
    return TTC_OK;
}

static bool contains_ci(const char *hay, const char *needle) {
    size_t nl = strlen(needle);
    for (const char *p = hay; *p; p++)
        if (strncasecmp(p, needle, nl) == 0) return true;
    return nl == 0;
}

ttc_status ttc_cl_device_select(const char *spec, ttc_cl_device **out) {
    ttc_cl_device *ds;
    int32_t n;
    TTC_TRY(ttc_cl_devices(&ds, &n));
    const char *from = "device";
    if (!spec || !*spec) {
        spec = getenv("TORCHTRT_C_DEVICE");
        from = "TORCHTRT_C_DEVICE";
    }
    if (!spec || !*spec) {
        for (int32_t i = 0; i < n; i++)
            if (ds[i].is_gpu) { *out = &ds[i]; return TTC_OK; }
        *out = &ds[0];
        return TTC_OK;
    }
    char *end = NULL;
    long idx = strtol(spec, &end, 10);
    if (end != spec && *end == 0) {
        if (idx < 0 || idx >= n)
            return ttc_fail(TTC_ERR_INVALID_ARG, "%s=%s: device index out of range (%d devices)", from, spec, n);
        *out = &ds[idx];
        return TTC_OK;
    }
    bool want_gpu = !strcasecmp(spec, "gpu"), want_cpu = !strcasecmp(spec, "cpu");
    for (int32_t i = 0; i < n; i++) {
        if ((want_gpu && ds[i].is_gpu) || (want_cpu && ds[i].is_cpu) ||
            (!want_gpu && !want_cpu && (contains_ci(ds[i].name, spec) || contains_ci(ds[i].platform, spec)))) {
            *out = &ds[i];
            return TTC_OK;
        }
    }
    ttc_sbuf b = {0};
    for (int32_t i = 0; i < n; i++) ttc_sbuf_printf(&b, "%s[%d] %s (%s)", i ? ", " : "", i, ds[i].name, ds[i].platform);
    ttc_status s = ttc_fail(TTC_ERR_INVALID_ARG, "%s=%s matches no OpenCL device; devices: %s", from, spec,
                            b.data ? b.data : "");
    ttc_sbuf_free(&b);
    return s;
}

int32_t ttc_cl_default_index(void) {
    ttc_cl_device *d;
    if (ttc_cl_device_select(NULL, &d) != TTC_OK) return -1;
    return d->index;
}

ttc_status ttc_cl_device_context(ttc_cl_device *d, cl_context *out) {
    pthread_mutex_lock(&d->lock);
    if (!d->context) {
        cl_int err = CL_SUCCESS;
        cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)d->platform_id, 0};
        d->context = TTC_CL(CreateContext)(props, 1, &d->id, NULL, NULL, &err);
        if (!d->context || err != CL_SUCCESS) {
            d->context = NULL;
            pthread_mutex_unlock(&d->lock);
            return ttc_fail_cl(err, "clCreateContext(%s) failed: %s", d->name, ttc_cl_error_name(err));
        }
    }
    *out = d->context;
    pthread_mutex_unlock(&d->lock);
    return TTC_OK;
}

ttc_status ttc_cl_queue_new(ttc_cl_device *d, bool profiling, cl_command_queue *out) {
    cl_context ctx;
    TTC_TRY(ttc_cl_device_context(d, &ctx));
    cl_int err = CL_SUCCESS;
    *out = TTC_CL(CreateCommandQueue)(ctx, d->id, profiling ? CL_QUEUE_PROFILING_ENABLE : 0, &err);
    if (!*out || err != CL_SUCCESS)
        return ttc_fail_cl(err, "clCreateCommandQueue(%s) failed: %s", d->name, ttc_cl_error_name(err));
    return TTC_OK;
}
