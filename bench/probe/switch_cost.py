"""Is the cost of alternating torch (CUDA) work with OpenCL work a host-thread effect (each API
making its own context current) or a GPU context switch? And what does launching the OpenCL
compiler's PTX on torch's own context cost? One process, µs per round, median of 500."""
import ctypes as C, queue, statistics, threading, time
import torch
import torchtrt_c
from torchtrt_c import _C
from torchtrt_c.runtime import _execute

m = torch.nn.Linear(16, 16).eval()
x = torch.randn(1, 16)
trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1).to("cuda")
xc = x.cuda()
trt(xc)
(acc,) = [mod for n, mod in trt.named_children() if n.startswith("_run_on_acc_")]
p = _execute._plan(acc.meta, acc.engine)
st = p.interop
assert st, p.interop_reason
b_in, b_out = st.bufs[("in", 0)], st.bufs[("out", 0)]
ins, outs = [(b_in.cap, (1, 16), 64)], [(b_out.cap, 64)]
stream = torch.cuda.current_stream()
v_in = b_in.view((1, 16), torch.float32)
cu = C.CDLL("libcuda.so.1")

def cur():
    c = C.c_void_p(); cu.cuCtxGetCurrent(C.byref(c)); return c.value

def torch_only():
    v_in.copy_(xc); stream.synchronize()

def cl_only():
    _C.execute_shared(p.engine, ins, outs, None, 0)

jobs, done = queue.Queue(), queue.Queue()
def worker():
    while True:
        f = jobs.get()
        if f is None: return
        f(); done.put(1)
th = threading.Thread(target=worker, daemon=True); th.start()
def on_worker(f):
    def g():
        jobs.put(f); done.get()
    return g

print("current context: torch's", hex(cur() or 0))
torch_only(); c_t = cur(); cl_only(); c_cl = cur()
print(f"after torch call {hex(c_t or 0)}, after an OpenCL call {hex(c_cl or 0)}:",
      "OpenCL leaves its own context current" if c_cl != c_t else "unchanged")

rows = [("torch copy+sync", torch_only), ("OpenCL engine+finish", cl_only),
        ("alternating, one thread", lambda: (torch_only(), cl_only())),
        ("worker-thread hand-off of a no-op", on_worker(lambda: None)),
        ("OpenCL on a worker thread, alone", on_worker(cl_only)),
        ("alternating, OpenCL on a worker thread", lambda: (torch_only(), on_worker(cl_only)()))]

# the same kind of kernel as PTX on torch's context and stream
cl = C.CDLL("libOpenCL.so.1")
dev_id = C.c_void_p(); plat = C.c_void_p()
np_ = C.c_uint(); cl.clGetPlatformIDs(0, None, C.byref(np_)); ps = (C.c_void_p * np_.value)(); cl.clGetPlatformIDs(np_, ps, None)
for pl in ps:
    if cl.clGetDeviceIDs(C.c_void_p(pl), 4, 1, C.byref(dev_id), None) == 0: break
err = C.c_int()
cl.clCreateContext.restype = C.c_void_p; cl.clCreateProgramWithSource.restype = C.c_void_p
ctx = C.c_void_p(cl.clCreateContext(None, 1, C.byref(dev_id), None, None, C.byref(err)))
src = b"kernel void k(global float *a, int n){ int i = get_global_id(0); if (i < n) a[i] = a[i] * 2.0f; }"
prog = C.c_void_p(cl.clCreateProgramWithSource(ctx, 1, C.byref(C.c_char_p(src)), None, C.byref(err)))
assert cl.clBuildProgram(prog, 1, C.byref(dev_id), b"", None, None) == 0
bsz = C.c_size_t(); cl.clGetProgramInfo(prog, 0x1165, 8, C.byref(bsz), None)
bin_ = C.create_string_buffer(bsz.value + 1); pb = C.c_void_p(C.addressof(bin_)); cl.clGetProgramInfo(prog, 0x1166, 8, C.byref(pb), None)
prim = C.c_void_p(); dev = C.c_int(); cu.cuDeviceGet(C.byref(dev), 0); cu.cuDevicePrimaryCtxRetain(C.byref(prim), dev)
assert cu.cuCtxPushCurrent_v2(prim) == 0
mod = C.c_void_p(); assert cu.cuModuleLoadData(C.byref(mod), bin_) == 0
fn = C.c_void_p(); assert cu.cuModuleGetFunction(C.byref(fn), mod, b"k") == 0
y = torch.randn(1024, device="cuda")
a0 = C.c_ulonglong(y.data_ptr()); a1 = C.c_int(1024)
args = (C.c_void_p * 2)(C.cast(C.byref(a0), C.c_void_p), C.cast(C.byref(a1), C.c_void_p))
def ptx():
    r = cu.cuLaunchKernel(fn, 4, 1, 1, 256, 1, 1, 0, C.c_void_p(stream.cuda_stream), args, None)
    assert r == 0, r
def ptx_round():
    v_in.copy_(xc); ptx(); stream.synchronize()
c0 = C.c_void_p(); cu.cuCtxPopCurrent_v2(C.byref(c0))
rows += [("torch copy + PTX launch (torch's context) + sync", ptx_round)]
y0 = y.clone(); ptx(); stream.synchronize()
print("PTX kernel on torch memory correct:", bool(torch.equal(y, y0 * 2)))

for name, fn_ in rows:
    for _ in range(50): fn_()
    ts = []
    for _ in range(500):
        t0 = time.perf_counter_ns(); fn_(); ts.append((time.perf_counter_ns() - t0) / 1e3)
    ts.sort()
    print(f"{name:55s} median {statistics.median(ts):8.1f} us  p10 {ts[50]:8.1f}  p90 {ts[450]:8.1f}")
jobs.put(None)
