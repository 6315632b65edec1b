"""ctypes pieces the CUDA/OpenCL probes share (dynsmem_probe, ptx_envreg_probe, wgmma_probe): the
two drivers (the OpenCL calls that return handles typed so), a checked call, the first OpenCL GPU
device, and PTX text loaded into the CUDA driver with its error log."""
import ctypes as C

cu = C.CDLL("libcuda.so.1")
cl = C.CDLL("libOpenCL.so.1")
for _f in ("clCreateContext", "clCreateCommandQueue", "clCreateProgramWithSource", "clCreateProgramWithBinary",
           "clCreateKernel", "clCreateBuffer"):
    getattr(cl, _f).restype = C.c_void_p


def ck(r, what):
    if r != 0:
        raise RuntimeError(f"{what} -> {r}")


def cl_gpu():
    """the first OpenCL GPU device (CL_DEVICE_TYPE_GPU) of the first platform that has one"""
    np_ = C.c_uint(); cl.clGetPlatformIDs(0, None, C.byref(np_))
    ps = (C.c_void_p * np_.value)(); cl.clGetPlatformIDs(np_, ps, None)
    dev = C.c_void_p()
    for p in ps:
        if cl.clGetDeviceIDs(C.c_void_p(p), 4, 1, C.byref(dev), None) == 0:
            break
    return dev


def cu_load(text, tag, log_chars=600):
    """the CUDA module of PTX text; None, with the JIT's log printed (its first log_chars), where
    the driver refuses it"""
    m = C.c_void_p()
    logbuf = C.create_string_buffer(8192)
    opts = (C.c_int * 2)(5, 6); vals = (C.c_void_p * 2)(C.cast(logbuf, C.c_void_p), C.c_void_p(8192))
    r = cu.cuModuleLoadDataEx(C.byref(m), C.c_char_p(text.encode() + b"\0"), 2, opts, vals)
    if r:
        print(f"  load {tag}: error {r}: {logbuf.value.decode(errors='replace')[:log_chars]}")
        return None
    return m
