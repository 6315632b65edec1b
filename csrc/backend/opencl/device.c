/* libOpenCL loading, OpenCL error names, device discovery, shared contexts. */
#include "cl.h"
#include "../../target/knobs.h"

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
        load_status = TTC_ERR_DEVICE;
        return;
    }
#define X(name)                                                                               \
    ttc_cl_fns.name = (__typeof__(ttc_cl_fns.name))dlsym(h, "cl" #name);                      \
    if (!ttc_cl_fns.name) {                                                                   \
        snprintf(load_msg, sizeof load_msg, "libOpenCL lacks cl" #name " (OpenCL 1.2 needed)"); \
        load_status = TTC_ERR_DEVICE;                                                         \
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
static ttc_device **device_ptrs;
static int32_t n_devices;

static void str_info_dev(cl_device_id d, cl_device_info what, char *buf, size_t cap) {
    buf[0] = 0;
    if (TTC_CL(GetDeviceInfo)(d, what, cap - 1, buf, NULL) != CL_SUCCESS) buf[0] = 0;
    buf[cap - 1] = 0;
}

/* The facts of device id of platform p (index: its place in the device list, -1 unlisted). */
static void fill_device(ttc_cl_device *d, cl_platform_id p, cl_device_id id, int32_t index) {
    memset(d, 0, sizeof *d);
    ttc_target *f = &d->base.facts;
    d->base.be = &ttc_opencl_backend;
    f->backend = ttc_opencl_backend.name;
    f->index = index;
    d->platform_id = p;
    d->id = id;
    if (TTC_CL(GetPlatformInfo)(p, CL_PLATFORM_NAME, sizeof f->platform - 1, f->platform, NULL))
        f->platform[0] = 0;
    str_info_dev(id, CL_DEVICE_NAME, f->name, sizeof f->name);
    str_info_dev(id, CL_DEVICE_VENDOR, f->vendor, sizeof f->vendor);
    str_info_dev(id, CL_DEVICE_VERSION, f->version, sizeof f->version);
    str_info_dev(id, CL_DRIVER_VERSION, f->driver, sizeof f->driver);
    cl_device_type t = 0;
    TTC_CL(GetDeviceInfo)(id, CL_DEVICE_TYPE, sizeof t, &t, NULL);
    f->is_gpu = (t & CL_DEVICE_TYPE_GPU) != 0;
    f->is_cpu = (t & CL_DEVICE_TYPE_CPU) != 0;
    f->kind = f->is_gpu ? TTC_DEVICE_GPU : f->is_cpu ? TTC_DEVICE_CPU : TTC_DEVICE_OTHER;
    f->nvidia = strstr(f->vendor, "NVIDIA") || strstr(f->platform, "NVIDIA");
    if (f->nvidia) {
        /* CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV / _MINOR_NV (cl_nv_device_attribute_query) */
        cl_uint ma = 0, mi = 0;
        if (TTC_CL(GetDeviceInfo)(id, 0x4000, sizeof ma, &ma, NULL) == CL_SUCCESS &&
            TTC_CL(GetDeviceInfo)(id, 0x4001, sizeof mi, &mi, NULL) == CL_SUCCESS && ma < 100 && mi < 10)
            f->nv_sm = (int32_t)(ma * 10 + mi);
    }
    /* CPU devices compute on host memory: buffers over the caller's memory copy nothing */
    f->host_memory = f->is_cpu;
    cl_uint cu = 0, align = 0;
    size_t wg = 0;
    cl_ulong lm = 0, gm = 0, ma = 0;
    TTC_CL(GetDeviceInfo)(id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
    TTC_CL(GetDeviceInfo)(id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
    TTC_CL(GetDeviceInfo)(id, CL_DEVICE_LOCAL_MEM_SIZE, sizeof lm, &lm, NULL);
    TTC_CL(GetDeviceInfo)(id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof gm, &gm, NULL);
    TTC_CL(GetDeviceInfo)(id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof ma, &ma, NULL);
    TTC_CL(GetDeviceInfo)(id, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align, &align, NULL);
    f->compute_units = cu;
    f->max_work_group = wg;
    f->local_mem = lm;
    f->global_mem = gm;
    f->max_alloc = ma;
    f->mem_align_bits = align;
    cl_device_exec_capabilities caps = 0;
    TTC_CL(GetDeviceInfo)(id, CL_DEVICE_EXECUTION_CAPABILITIES, sizeof caps, &caps, NULL);
    f->host_tasks = (caps & CL_EXEC_NATIVE_KERNEL) != 0;
    size_t elen = 0;
    TTC_CL(GetDeviceInfo)(id, CL_DEVICE_EXTENSIONS, 0, NULL, &elen);
    char *ext = calloc(elen + 1, 1);
    if (ext && TTC_CL(GetDeviceInfo)(id, CL_DEVICE_EXTENSIONS, elen, ext, NULL) == CL_SUCCESS)
        f->fp16 = f->fp16_advertised = strstr(ext, "cl_khr_fp16") != NULL;
    free(ext);
    /* NVIDIA's OpenCL computes in half without advertising cl_khr_fp16. */
    if (f->is_gpu && strstr(f->vendor, "NVIDIA")) f->fp16 = true;
    char cver[64];
    str_info_dev(id, CL_DEVICE_OPENCL_C_VERSION, cver, sizeof cver);
    f->lang2 = strstr(cver, "OpenCL C 2") || strstr(cver, "OpenCL C 3");
    pthread_mutex_init(&d->base.lock, NULL);
}

/* PoCL's pthread device runs every command on its worker threads: a 10-kernel engine of tiny
 * kernels spends 40-90 us handing commands between them (bench/RESULTS.md, issue 13 item 4).
 * Its basic device runs each launch on the thread that enqueues it, with no hand-over (10 such
 * kernels: 16 us). PoCL offers basic only when POCL_DEVICES names it, read once when PoCL
 * starts, so it is asked for here, before the first OpenCL call, unless the user chose
 * PoCL's devices or TORCHTRT_C_CALLER_THREAD=0. The basic device is then not listed: it
 * becomes the pthread device's caller-thread companion (ttc_device_caller_thread). */
static bool asked_pocl_basic;

static void ask_pocl_basic(void) {
    if (ttc_env_other("POCL_DEVICES") || ttc_knob_is(TTC_KNOB_CALLER_THREAD, "0")) return;
    asked_pocl_basic = setenv("POCL_DEVICES", "pthread basic", 0) == 0;
}

static bool is_pocl(const ttc_target *f) { return strstr(f->platform, "Portable Computing Language") != NULL; }

/* Pairs each listed PoCL pthread device with its platform's basic device (unlisted). */
static void pair_pocl_basic(cl_platform_id *ps, cl_uint np) {
    for (int32_t i = 0; i < n_devices; i++) {
        ttc_cl_device *d = &devices[i];
        if (!is_pocl(&d->base.facts) || strncmp(d->base.facts.name, "pthread", 7)) continue;
        for (cl_uint p = 0; p < np && !d->caller; p++) {
            if (ps[p] != d->platform_id) continue;
            cl_device_id ids[8];
            cl_uint nd = 0;
            if (TTC_CL(GetDeviceIDs)(ps[p], CL_DEVICE_TYPE_ALL, 8, ids, &nd) != CL_SUCCESS) continue;
            for (cl_uint k = 0; k < nd && k < 8 && !d->caller; k++) {
                char name[64];
                str_info_dev(ids[k], CL_DEVICE_NAME, name, sizeof name);
                if (strncmp(name, "basic", 5)) continue;
                ttc_cl_device *c = calloc(1, sizeof *c);
                if (!c) return;
                fill_device(c, ps[p], ids[k], -1);
                c->owner = d;
                d->caller = c;
            }
        }
    }
}

static void discover(void) {
    ask_pocl_basic();
    if (ttc_cl_load() != TTC_OK) {
        snprintf(discover_msg, sizeof discover_msg, "%s", ttc_last_error());
        discover_status = TTC_ERR_DEVICE;
        discover_code = CL_DEVICE_NOT_FOUND;
        return;
    }
    cl_uint np = 0;
    cl_int err = TTC_CL(GetPlatformIDs)(0, NULL, &np);
    if (err != CL_SUCCESS || np == 0) {
        snprintf(discover_msg, sizeof discover_msg,
                 "no OpenCL platform/ICD found (clGetPlatformIDs: %s); install a driver, e.g. "
                 "pocl-opencl-icd for the CPU", err == CL_SUCCESS ? "0 platforms" : ttc_cl_error_name(err));
        discover_status = TTC_ERR_DEVICE;
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
            fill_device(&devices[n_devices], ps[p], ds[i], n_devices);
            const ttc_target *f = &devices[n_devices].base.facts;
            /* the basic device we asked PoCL for is a companion, not a device of its own */
            if (asked_pocl_basic && is_pocl(f) && !strncmp(f->name, "basic", 5)) {
                pthread_mutex_destroy(&devices[n_devices].base.lock);
                continue;
            }
            n_devices++;
        }
        free(ds);
    }
    if (asked_pocl_basic) pair_pocl_basic(ps, np);
    /* PoCL has read it by now; child processes inherit the C environment, and one that did
     * not start through here would list the basic device as a device of its own */
    if (asked_pocl_basic) unsetenv("POCL_DEVICES");
    free(ps);
    device_ptrs = calloc((size_t)n_devices + 1, sizeof *device_ptrs);
    if (!device_ptrs) n_devices = 0;
    for (int32_t i = 0; i < n_devices; i++) device_ptrs[i] = &devices[i].base;
    if (n_devices == 0) {
        snprintf(discover_msg, sizeof discover_msg,
                 "OpenCL platforms found but no devices; install a driver, e.g. pocl-opencl-icd");
        discover_status = TTC_ERR_DEVICE;
        discover_code = CL_DEVICE_NOT_FOUND;
    }
}

ttc_status ttc_cl_devices(ttc_device *const **devs, int32_t *n) {
    pthread_once(&discover_once, discover);
    if (discover_status != TTC_OK) {
        *devs = NULL; *n = 0;
        if (discover_status == TTC_ERR_DEVICE) return ttc_fail_cl(discover_code, "%s", discover_msg);
        return ttc_fail(discover_status, "%s", discover_msg);
    }
    *devs = device_ptrs;
    *n = n_devices;
    return TTC_OK;
}

ttc_status ttc_cl_device_context(ttc_cl_device *d, cl_context *out) {
    if (d->owner) d = d->owner;   /* a caller-thread companion works in its owner's context */
    pthread_mutex_lock(&d->base.lock);
    if (!d->context) {
        cl_int err = CL_SUCCESS;
        cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)d->platform_id, 0};
        cl_device_id ids[2] = {d->id, d->caller ? d->caller->id : NULL};
        d->context = TTC_CL(CreateContext)(props, d->caller ? 2 : 1, ids, NULL, NULL, &err);
        if (!d->context || err != CL_SUCCESS) {
            d->context = NULL;
            pthread_mutex_unlock(&d->base.lock);
            return ttc_fail_cl(err, "clCreateContext(%s) failed: %s", d->base.facts.name, ttc_cl_error_name(err));
        }
    }
    *out = d->context;
    pthread_mutex_unlock(&d->base.lock);
    return TTC_OK;
}

bool ttc_cl_device_uuid(ttc_device *dev, unsigned char uuid[16]) {
    ttc_cl_device *d = ttc_cl_dev(dev);
    char exts[8192] = {0};
    if (TTC_CL(GetDeviceInfo)(d->id, CL_DEVICE_EXTENSIONS, sizeof exts - 1, exts, NULL) != CL_SUCCESS) return false;
    /* drivers without the extension may answer the query with anything */
    if (!strstr(exts, "cl_khr_device_uuid")) return false;
    return TTC_CL(GetDeviceInfo)(d->id, 0x106A /* CL_DEVICE_UUID_KHR */, 16, uuid, NULL) == CL_SUCCESS;
}

bool ttc_cl_device_pci(ttc_device *dev, ttc_pci_address *pci) {
    ttc_cl_device *d = ttc_cl_dev(dev);
    char exts[8192] = {0};
    if (TTC_CL(GetDeviceInfo)(d->id, CL_DEVICE_EXTENSIONS, sizeof exts - 1, exts, NULL) != CL_SUCCESS) return false;
    if (strstr(exts, "cl_khr_pci_bus_info")) {
        cl_uint v[4];   /* cl_device_pci_bus_info_khr: domain, bus, device, function */
        if (TTC_CL(GetDeviceInfo)(d->id, 0x410F /* CL_DEVICE_PCI_BUS_INFO_KHR */, sizeof v, v, NULL) == CL_SUCCESS) {
            *pci = (ttc_pci_address){v[0], v[1], v[2], v[3]};
            return true;
        }
    }
    if (strstr(exts, "cl_nv_device_attribute_query")) {
        cl_uint bus = 0, slot = 0, domain = 0;   /* slot: device << 3 | function */
        if (TTC_CL(GetDeviceInfo)(d->id, 0x4008 /* CL_DEVICE_PCI_BUS_ID_NV */, sizeof bus, &bus, NULL) == CL_SUCCESS &&
            TTC_CL(GetDeviceInfo)(d->id, 0x4009 /* CL_DEVICE_PCI_SLOT_ID_NV */, sizeof slot, &slot, NULL) == CL_SUCCESS) {
            if (TTC_CL(GetDeviceInfo)(d->id, 0x400A /* CL_DEVICE_PCI_DOMAIN_ID_NV */, sizeof domain, &domain, NULL) != CL_SUCCESS)
                domain = 0;
            *pci = (ttc_pci_address){domain, bus, slot >> 3, slot & 7};
            return true;
        }
    }
    return false;
}

ttc_device *ttc_cl_device_caller_thread(ttc_device *dev) {
    ttc_cl_device *d = ttc_cl_dev(dev);
    return d->caller ? &d->caller->base : d->owner ? dev : NULL;
}
