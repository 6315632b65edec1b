"""Probe (ctypes, no build): CUDA exportable memory imported into NVIDIA OpenCL, semaphores
between a torch stream and an OpenCL queue, and launch cost of OpenCL vs the same PTX via CUDA."""
import ctypes as C, os, time, sys
import torch

cu = C.CDLL("libcuda.so.1")
cl = C.CDLL("libOpenCL.so.1")
def ck(r, what):
    if r != 0:
        raise RuntimeError(f"{what} -> {r}")
torch.zeros(1, device="cuda")
dev = C.c_int(); ck(cu.cuDeviceGet(C.byref(dev), 0), "cuDeviceGet")
uuid = (C.c_ubyte * 16)()
ck(cu.cuDeviceGetUuid_v2(uuid, dev), "uuid")
print("cuda uuid", bytes(uuid).hex())
ctx = C.c_void_p(); ck(cu.cuCtxGetCurrent(C.byref(ctx)), "ctx"); print("ctx", ctx.value)

# OpenCL device by uuid
nplat = C.c_uint(); cl.clGetPlatformIDs(0, None, C.byref(nplat))
plats = (C.c_void_p * nplat.value)(); cl.clGetPlatformIDs(nplat, plats, None)
cldev = None; plat = None
for p in plats:
    nd = C.c_uint()
    if cl.clGetDeviceIDs(C.c_void_p(p), 0xFFFFFFFF, 0, None, C.byref(nd)) != 0: continue
    ds = (C.c_void_p * nd.value)(); cl.clGetDeviceIDs(C.c_void_p(p), 0xFFFFFFFF, nd, ds, None)
    for d in ds:
        u = (C.c_ubyte * 16)()
        r = cl.clGetDeviceInfo(C.c_void_p(d), 0x106A, 16, u, None)
        ext = C.create_string_buffer(8192); cl.clGetDeviceInfo(C.c_void_p(d), 0x1030, 8192, ext, None)
        print("cl device uuid", r, bytes(u).hex(), [e for e in ext.value.decode().split() if "extern" in e or "sema" in e or "uuid" in e])
        if r == 0 and bytes(u) == bytes(uuid): cldev, plat = C.c_void_p(d), C.c_void_p(p)
assert cldev is not None, "no OpenCL device matches the CUDA uuid"
ht = (C.c_uint * 8)(); sz = C.c_size_t()
print("import handle types", cl.clGetDeviceInfo(cldev, 0x204F, C.sizeof(ht), ht, C.byref(sz)), list(ht)[: sz.value // 4])
print("sem import", cl.clGetDeviceInfo(cldev, 0x204D, C.sizeof(ht), ht, C.byref(sz)), [hex(x) for x in list(ht)[: sz.value // 4]])
print("sem export", cl.clGetDeviceInfo(cldev, 0x204E, C.sizeof(ht), ht, C.byref(sz)), [hex(x) for x in list(ht)[: sz.value // 4]])
err = C.c_int()
cl.clCreateContext.restype = C.c_void_p
clctx = C.c_void_p(cl.clCreateContext(None, 1, C.byref(cldev), None, None, C.byref(err))); ck(err.value, "ctx")
cl.clCreateCommandQueue.restype = C.c_void_p
q = C.c_void_p(cl.clCreateCommandQueue(clctx, cldev, 0, C.byref(err))); ck(err.value, "queue")

class Loc(C.Structure): _fields_ = [("type", C.c_int), ("id", C.c_int)]
class Prop(C.Structure):
    _fields_ = [("type", C.c_int), ("htypes", C.c_int), ("loc", Loc), ("win32", C.c_void_p), ("flags", C.c_ubyte * 8)]
class Access(C.Structure): _fields_ = [("loc", Loc), ("flags", C.c_int)]
prop = Prop(1, 1, Loc(1, 0))
gran = C.c_size_t(); ck(cu.cuMemGetAllocationGranularity(C.byref(gran), C.byref(prop), 0), "gran"); print("granularity", gran.value)
N = 1 << 20
size = (N * 4 + gran.value - 1) // gran.value * gran.value
h = C.c_ulonglong(); ck(cu.cuMemCreate(C.byref(h), C.c_size_t(size), C.byref(prop), C.c_ulonglong(0)), "cuMemCreate")
fd = C.c_int(); ck(cu.cuMemExportToShareableHandle(C.byref(fd), h, 1, C.c_ulonglong(0)), "export"); print("fd", fd.value)
ptr = C.c_ulonglong(); ck(cu.cuMemAddressReserve(C.byref(ptr), C.c_size_t(size), C.c_size_t(0), C.c_ulonglong(0), C.c_ulonglong(0)), "reserve")
ck(cu.cuMemMap(ptr, C.c_size_t(size), C.c_size_t(0), h, C.c_ulonglong(0)), "map")
acc = Access(Loc(1, 0), 3); ck(cu.cuMemSetAccess(ptr, C.c_size_t(size), C.byref(acc), C.c_size_t(1)), "access")
props = (C.c_uint64 * 5)(0x2060, fd.value, 0x2051, cldev.value, 0)
props = (C.c_uint64 * 3)(0x2060, fd.value, 0)
cl.clCreateBufferWithProperties.restype = C.c_void_p
t0 = time.perf_counter()
mem = C.c_void_p(cl.clCreateBufferWithProperties(clctx, props, C.c_uint64(1), C.c_size_t(size), None, C.byref(err)))
print("import", err.value, mem.value, f"{(time.perf_counter()-t0)*1e3:.2f} ms")
ck(err.value, "clCreateBufferWithProperties")
try:
    os.fstat(fd.value); print("fd still open after import (caller owns it)")
except OSError as e:
    print("fd closed by import", e)

class CAI:
    def __init__(self, p, n, typestr="<f4"):
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": typestr, "data": (p, False), "version": 3, "stream": None}
view = torch.as_tensor(CAI(ptr.value, N), device="cuda")
print("view", view.device, view.dtype, view.shape, view.data_ptr() == ptr.value)

src = b"""kernel void k(global float *a, int n){ int i = get_global_id(0); if (i < n) a[i] = a[i] * 2.0f + (float)i; }"""
cl.clCreateProgramWithSource.restype = C.c_void_p
prog = C.c_void_p(cl.clCreateProgramWithSource(clctx, 1, C.byref(C.c_char_p(src)), None, C.byref(err))); ck(err.value, "prog")
ck(cl.clBuildProgram(prog, 1, C.byref(cldev), b"", None, None), "build")
cl.clCreateKernel.restype = C.c_void_p
kern = C.c_void_p(cl.clCreateKernel(prog, b"k", C.byref(err))); ck(err.value, "kernel")
# acquire/release entry points
cl.clGetExtensionFunctionAddressForPlatform.restype = C.c_void_p
def ext(name):
    a = cl.clGetExtensionFunctionAddressForPlatform(plat, name.encode())
    print("ext", name, bool(a)); return a
acq_a = ext("clEnqueueAcquireExternalMemObjectsKHR"); rel_a = ext("clEnqueueReleaseExternalMemObjectsKHR")
FN = C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_uint, C.POINTER(C.c_void_p), C.c_uint, C.c_void_p, C.c_void_p)
acq = FN(acq_a) if acq_a else None; rel = FN(rel_a) if rel_a else None

x = torch.randn(N, device="cuda")
view.copy_(x); torch.cuda.current_stream().synchronize()
nn = C.c_int(N)
ck(cl.clSetKernelArg(kern, 0, 8, C.byref(mem)), "arg0"); ck(cl.clSetKernelArg(kern, 1, 4, C.byref(nn)), "arg1")
gws = (C.c_size_t * 1)(N)
if acq: ck(acq(q, 1, C.byref(mem), 0, None, None), "acquire")
ck(cl.clEnqueueNDRangeKernel(q, kern, 1, None, gws, None, 0, None, None), "launch")
if rel: ck(rel(q, 1, C.byref(mem), 0, None, None), "release")
ck(cl.clFinish(q), "finish")
ref = x * 2 + torch.arange(N, device="cuda", dtype=torch.float32)
print("CUDA->CL->CUDA max diff", (view - ref).abs().max().item())

# semaphores: CL-created exportable binary semaphores imported into CUDA
def sem_test():
    cs = ext("clCreateSemaphoreWithPropertiesKHR"); ws = ext("clEnqueueWaitSemaphoresKHR"); ss = ext("clEnqueueSignalSemaphoresKHR")
    gh = ext("clGetSemaphoreHandleForTypeKHR")
    if not (cs and ws and ss and gh): return None
    CS = C.CFUNCTYPE(C.c_void_p, C.c_void_p, C.POINTER(C.c_uint64), C.POINTER(C.c_int))(cs)
    WS = C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_uint, C.POINTER(C.c_void_p), C.c_void_p, C.c_uint, C.c_void_p, C.c_void_p)(ws)
    SS = C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_uint, C.POINTER(C.c_void_p), C.c_void_p, C.c_uint, C.c_void_p, C.c_void_p)(ss)
    GH = C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_void_p, C.c_uint, C.c_size_t, C.c_void_p, C.POINTER(C.c_size_t))(gh)
    sems, csems = [], []
    for _ in range(2):
        pr = (C.c_uint64 * 8)(0x203D, 1, 0x2051, cldev.value, 0, 0x203F, 0x2055, 0)
        pr[7] = 0; pr = (C.c_uint64 * 9)(0x203D, 1, 0x2051, cldev.value, 0, 0x203F, 0x2055, 0, 0)
        s = CS(clctx, pr, C.byref(err)); ck(err.value, "create semaphore")
        f = C.c_int(-1); ck(GH(C.c_void_p(s), cldev, 0x2055, 4, C.byref(f), None), "sem handle")
        desc = (C.c_ubyte * 128)(); C.memmove(desc, C.byref(C.c_int(1)), 4); C.memmove(C.addressof(desc) + 8, C.byref(f), 4)
        es = C.c_void_p(); ck(cu.cuImportExternalSemaphore(C.byref(es), desc), "cuImportExternalSemaphore")
        sems.append(C.c_void_p(s)); csems.append(es)
    params = (C.c_ubyte * 256)()
    stream = C.c_void_p(torch.cuda.current_stream().cuda_stream)
    def one(xin):
        view.copy_(xin)
        ck(cu.cuSignalExternalSemaphoresAsync(C.byref(csems[0]), params, 1, stream), "cuSignal")
        ck(WS(q, 1, C.byref(sems[0]), None, 0, None, None), "clWait")
        if acq: ck(acq(q, 1, C.byref(mem), 0, None, None), "acquire")
        ck(cl.clEnqueueNDRangeKernel(q, kern, 1, None, gws, None, 0, None, None), "launch")
        if rel: ck(rel(q, 1, C.byref(mem), 0, None, None), "release")
        ck(SS(q, 1, C.byref(sems[1]), None, 0, None, None), "clSignal")
        ck(cl.clFlush(q), "flush")
        ck(cu.cuWaitExternalSemaphoresAsync(C.byref(csems[1]), params, 1, stream), "cuWait")
        return view.clone()
    bad = 0
    for it in range(50):
        xin = torch.randn(N, device="cuda")
        out = one(xin)
        bad += int((out - (xin * 2 + torch.arange(N, device="cuda", dtype=torch.float32))).abs().max().item() > 1e-4)
    print("semaphore path: mismatches in 50 calls:", bad)
    torch.cuda.synchronize()
    xin = torch.randn(N, device="cuda")
    for mode in ("sem", "sync"):
        t0 = time.perf_counter()
        for it in range(200):
            if mode == "sem":
                one(xin)
            else:
                view.copy_(xin); torch.cuda.current_stream().synchronize()
                ck(cl.clEnqueueNDRangeKernel(q, kern, 1, None, gws, None, 0, None, None), "launch")
                ck(cl.clFinish(q), "finish"); view.clone()
        torch.cuda.current_stream().synchronize()
        print(f"per call ({mode}): {(time.perf_counter()-t0)/200*1e6:.1f} us")
try:
    sem_test()
except Exception as e:
    print("semaphores failed:", e)

# launch cost: OpenCL enqueue vs the program's PTX via cuLaunchKernel vs a torch op
M = 1024; gws2 = (C.c_size_t * 1)(M); nm = C.c_int(M)
ck(cl.clSetKernelArg(kern, 1, 4, C.byref(nm)), "arg1")
for rep in range(2):
    t0 = time.perf_counter()
    for _ in range(2000): cl.clEnqueueNDRangeKernel(q, kern, 1, None, gws2, None, 0, None, None)
    cl.clFinish(q); tcl = (time.perf_counter() - t0) / 2000
bsz = C.c_size_t(); ck(cl.clGetProgramInfo(prog, 0x1165, 8, C.byref(bsz), None), "binsize")
bin_ = C.create_string_buffer(bsz.value + 1); pb = C.c_void_p(C.addressof(bin_))
ck(cl.clGetProgramInfo(prog, 0x1166, 8, C.byref(pb), None), "bin")
print("binary head:", bin_.raw[:120])
mod = C.c_void_p(); r = cu.cuModuleLoadData(C.byref(mod), bin_)
print("cuModuleLoadData", r)
if r == 0:
    fn = C.c_void_p(); ck(cu.cuModuleGetFunction(C.byref(fn), mod, b"k"), "getfn")
    a0 = C.c_ulonglong(ptr.value); a1 = C.c_int(M)
    args = (C.c_void_p * 2)(C.cast(C.byref(a0), C.c_void_p), C.cast(C.byref(a1), C.c_void_p))
    stream = C.c_void_p(torch.cuda.current_stream().cuda_stream)
    for rep in range(2):
        t0 = time.perf_counter()
        for _ in range(2000): cu.cuLaunchKernel(fn, 4, 1, 1, 256, 1, 1, 0, stream, args, None)
        torch.cuda.current_stream().synchronize(); tcu = (time.perf_counter() - t0) / 2000
    print(f"launch: OpenCL {tcl*1e6:.2f} us, CUDA driver (same PTX) {tcu*1e6:.2f} us")
    # the cost that matters: alternating with torch's own work on its stream
    x1 = torch.randn(M, device="cuda"); v1 = view[:M]
    st_ = torch.cuda.current_stream()
    def alt_cl():
        v1.copy_(x1); st_.synchronize()
        cl.clEnqueueNDRangeKernel(q, kern, 1, None, gws2, None, 0, None, None); cl.clFinish(q)
    def alt_cu():
        v1.copy_(x1); cu.cuLaunchKernel(fn, 4, 1, 1, 256, 1, 1, 0, stream, args, None); st_.synchronize()
    for name, f in (("torch copy + OpenCL kernel (2 contexts)", alt_cl), ("torch copy + same PTX on torch's stream", alt_cu)):
        for _ in range(50): f()
        t0 = time.perf_counter()
        for _ in range(500): f()
        print(f"alternating, {name}: {(time.perf_counter() - t0) / 500 * 1e6:.1f} us per round")
y = torch.randn(M, device="cuda")
for rep in range(2):
    t0 = time.perf_counter()
    for _ in range(2000): y.mul_(1.0)
    torch.cuda.synchronize(); tt = (time.perf_counter() - t0) / 2000
print(f"torch mul_ launch {tt*1e6:.2f} us")
print("PROBE DONE")
