"""Where the time of a CUDA call on shared memory goes: torch-only work, OpenCL-only work, and
the two alternating (each switch between torch's CUDA context and the OpenCL driver's own)."""
import statistics, sys, time
import torch
import torchtrt_c
from torchtrt_c import _C
from torchtrt_c.runtime import _cuda_interop, _execute

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
ins = [(b_in.cap, (1, 16), 64)]
outs = [(b_out.cap, 64)]
stream = torch.cuda.current_stream()
v_in = b_in.view((1, 16), torch.float32)
o = torch.empty(1, 16, device="cuda")

def torch_only():
    v_in.copy_(xc); stream.synchronize()

def cl_only():
    _C.execute_shared(p.engine, ins, outs, None, 0)

def cl_flag():
    st.value += 1
    _C.execute_shared(p.engine, ins, outs, st.flag.cap, st.value)
    _C.shared_stream_wait(st.flag.cap, stream.cuda_stream, st.value)
    stream.synchronize()

def alternate():
    torch_only(); cl_only()

def alternate_flag():
    torch_only(); cl_flag()

def full():
    trt(xc); stream.synchronize()

def torch_kernel_only():
    o.copy_(v_in); v_in.copy_(xc); stream.synchronize()

rows = [("torch copy+sync", torch_only), ("torch 2 copies+sync", torch_kernel_only), ("OpenCL engine+finish", cl_only),
        ("OpenCL engine+flag, stream waits, sync", cl_flag),
        ("torch copy+sync, then OpenCL engine+finish", alternate),
        ("torch copy+sync, then engine+flag+stream wait+sync", alternate_flag), ("module call + sync", full)]
for name, fn in rows:
    for _ in range(50): fn()
    ts = []
    for _ in range(500):
        t0 = time.perf_counter_ns(); fn(); ts.append((time.perf_counter_ns() - t0) / 1e3)
    ts.sort()
    print(f"{name:55s} median {statistics.median(ts):8.1f} us  p10 {ts[50]:8.1f}  p90 {ts[450]:8.1f}")
