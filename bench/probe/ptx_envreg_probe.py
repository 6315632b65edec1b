"""Why do some OpenCL-compiled PTX kernels fail when launched through the CUDA driver?
(issue 13 item 3; findings in bench/RESULTS.md and csrc/backend/cuda/cuda_driver.h). Dumps what NVIDIA's OpenCL PTX reads from %envreg registers for each
work-item function, what a CUDA launch leaves in those registers, and tries a static-__local
reduction with barriers launched both ways; then scans the PTX of real engine programs.
ctypes only; writes PTX files under $OUT/ptx. Usage: python3 bench/probe/ptx_envreg_probe.py"""
import ctypes as C, glob, os, re, struct, sys
import torch

from probe_cl import cl, cl_gpu, ck, cu

OUT = os.environ.get("OUT", "/tmp/ptxprobe")
os.makedirs(f"{OUT}/ptx", exist_ok=True)


torch.zeros(1, device="cuda")
ctx = C.c_void_p(); ck(cu.cuCtxGetCurrent(C.byref(ctx)), "ctx")
stream = C.c_void_p(torch.cuda.current_stream().cuda_stream)
dev = cl_gpu()
err = C.c_int()
clctx = C.c_void_p(cl.clCreateContext(None, 1, C.byref(dev), None, None, C.byref(err))); ck(err.value, "ctx")
q = C.c_void_p(cl.clCreateCommandQueue(clctx, dev, 0, C.byref(err))); ck(err.value, "queue")


def build(src: bytes):
    prog = C.c_void_p(cl.clCreateProgramWithSource(clctx, 1, C.byref(C.c_char_p(src)), None, C.byref(err)))
    r = cl.clBuildProgram(prog, 1, C.byref(dev), b"-cl-std=CL1.2", None, None)
    if r:
        log = C.create_string_buffer(1 << 16)
        cl.clGetProgramBuildInfo(prog, dev, 0x1183, 1 << 16, log, None)
        raise RuntimeError(log.value.decode())
    bsz = C.c_size_t(); cl.clGetProgramInfo(prog, 0x1165, 8, C.byref(bsz), None)
    b = C.create_string_buffer(bsz.value + 1); pb = C.c_void_p(C.addressof(b))
    cl.clGetProgramInfo(prog, 0x1166, 8, C.byref(pb), None)
    return prog, b.raw[: bsz.value].rstrip(b"\0").decode()


def entries(ptx):
    """entry name -> body text"""
    out = {}
    for m in re.finditer(r"\.entry\s+(\w+)\s*\((.*?)\n\}", ptx, re.S):
        out[m.group(1)] = m.group(0)
    return out


# A. which envreg each work-item function reads
fns = []
src = []
for fn in ("get_global_id", "get_group_id", "get_num_groups", "get_global_size", "get_global_offset",
           "get_local_size", "get_local_id"):
    for d in range(3):
        name = f"f_{fn}_{d}"
        fns.append((name, fn, d))
        src.append(f"__kernel void {name}(__global int *o) {{ o[get_local_id(0)] = (int){fn}({d}); }}")
src.append("__kernel void f_work_dim(__global int *o) { o[0] = (int)get_work_dim(); }")
prog, ptx = build("\n".join(src).encode())
open(f"{OUT}/ptx/workitem.ptx", "w").write(ptx)
print("PTX header:", " | ".join(l for l in ptx.splitlines()[:40] if l.startswith(".")))
ents = entries(ptx)
for name, body in ents.items():
    regs = sorted(set(re.findall(r"%envreg\d+", body)))
    sregs = sorted(set(re.findall(r"%(?:n?ctaid|n?tid)\.[xyz]", body)))
    print(f"  {name:26s} envregs {regs}  special {sregs}")
params = re.findall(r"\.param[^,\n)]*", ptx)
print("param forms:", sorted(set(re.sub(r"\w+_param_\d+", "P", p) for p in params))[:10])

# B. what a CUDA launch leaves in the envregs
lines = [".version 7.0", ".target sm_80", ".address_size 64", ".visible .entry envdump(.param .u64 out) {",
         ".reg .b32 %r<40>;", ".reg .b64 %rd<4>;", "ld.param.u64 %rd1, [out];", "cvta.to.global.u64 %rd2, %rd1;"]
for i in range(32):
    lines += [f"mov.b32 %r{i}, %envreg{i};", f"st.global.u32 [%rd2+{4 * i}], %r{i};"]
lines += ["ret;", "}"]
envptx = "\n".join(lines).encode() + b"\0"
mod = C.c_void_p(); r = cu.cuModuleLoadData(C.byref(mod), C.c_char_p(envptx))
print("envdump PTX load:", r)
if r == 0:
    fn = C.c_void_p(); ck(cu.cuModuleGetFunction(C.byref(fn), mod, b"envdump"), "fn")
    for grid, block in (((1, 1, 1), (1, 1, 1)), ((5, 3, 2), (4, 2, 1))):
        t = torch.full((32,), -7, dtype=torch.int32, device="cuda")
        a0 = C.c_uint64(t.data_ptr()); args = (C.c_void_p * 1)(C.cast(C.byref(a0), C.c_void_p))
        ck(cu.cuLaunchKernel(fn, *grid, *block, 0, stream, args, None), "launch envdump")
        torch.cuda.synchronize()
        print(f"  CUDA launch grid {grid} block {block}: envreg0..31 =", t.tolist())


def load(ptx_text, tag):
    m = C.c_void_p()
    data = ptx_text.encode() + b"\0"
    logbuf = C.create_string_buffer(8192)
    # CU_JIT_ERROR_LOG_BUFFER = 5, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6
    opts = (C.c_int * 2)(5, 6); vals = (C.c_void_p * 2)(C.cast(logbuf, C.c_void_p), C.c_void_p(8192))
    r = cu.cuModuleLoadDataEx(C.byref(m), C.c_char_p(data), 2, opts, vals)
    if r:
        print(f"  load {tag}: error {r}: {logbuf.value.decode(errors='replace')[:400]}")
        return None
    return m


def rewrite(ptx_text):
    """envreg0..5 -> 0 (offsets), envreg6..8 -> nctaid (a guess checked by A/B above)"""
    def sub(m):
        n = int(m.group(2))
        if n <= 5:
            return f"{m.group(1)}0"
        if n <= 8:
            return "mov.u32" + m.group(1)[7:] + "%nctaid." + "xyz"[n - 6]
        return m.group(0)
    return re.sub(r"(mov\.[bu]32\s+%r\d+,\s*)%envreg(\d+)", sub, ptx_text)


# A2. the work-item functions launched both ways. Element 0 is written by every work-item with
#     local id 0, so answers that differ per group (group/global ids in dims 1-2) race: the
#     three mismatches left after the rewrite on the H100 were that, not the rewrite.
gws, lws = (8, 4, 2), (4, 2, 1)
for variant in ("as-is", "rewritten"):
    m = load(ptx if variant == "as-is" else rewrite(ptx), f"workitem {variant}")
    if m is None:
        continue
    bad = []
    for name, fnm, d in fns:
        f = C.c_void_p(); ck(cu.cuModuleGetFunction(C.byref(f), m, name.encode()), name)
        t = torch.full((8,), -7, dtype=torch.int32, device="cuda")
        a0 = C.c_uint64(t.data_ptr()); args = (C.c_void_p * 1)(C.cast(C.byref(a0), C.c_void_p))
        grid = tuple(g // l for g, l in zip(gws, lws))
        r = cu.cuLaunchKernel(f, *grid, *lws, 0, stream, args, None)
        torch.cuda.synchronize()
        # OpenCL's answer
        k = C.c_void_p(cl.clCreateKernel(prog, name.encode(), C.byref(err)))
        buf = C.c_void_p(cl.clCreateBuffer(clctx, 1, 32, None, C.byref(err)))
        cl.clSetKernelArg(k, 0, 8, C.byref(buf))
        g = (C.c_size_t * 3)(*gws); l = (C.c_size_t * 3)(*lws)
        cl.clEnqueueNDRangeKernel(q, k, 3, None, g, l, 0, None, None)
        h = (C.c_int * 8)(); cl.clEnqueueReadBuffer(q, buf, 1, 0, 32, h, 0, None, None)
        want = list(h)[:1]; got = t.tolist()[:1]
        if r or want != got:
            bad.append(f"{name}: CUDA {got} (launch {r}) vs OpenCL {want}")
    print(f"work-item functions via CUDA ({variant}): {'all match' if not bad else bad}")

# D. real engine programs
os.environ["TORCHTRT_C_CACHE_DIR"] = f"{OUT}/cache"
os.environ.setdefault("TORCHTRT_C_DEVICE", "gpu")
sys.path.insert(0, "tests")
import torchtrt_c, zoo  # noqa: E402
for name, fp16 in (("resnet18", False), ("bert_base", True), ("gpt2", True), ("resnet18", True)):
    m, make = zoo.build(name)
    xx = make(2)
    kw = {"enabled_precisions": {torch.float16}} if fp16 else {}
    try:
        torchtrt_c.compile(m, inputs=[xx], min_block_size=1, **kw)
    except Exception as e:
        print("compile", name, fp16, "failed", e)
files = glob.glob(f"{OUT}/cache/**/*", recursive=True)
allregs, n_prog = {}, 0
for fpath in files:
    if not os.path.isfile(fpath):
        continue
    raw = open(fpath, "rb").read()
    if not raw.startswith(b"TTCPBIN1"):
        continue
    blen = struct.unpack("<Q", raw[24:32])[0]
    text = raw[40:40 + blen].rstrip(b"\0").decode(errors="replace")
    n_prog += 1
    open(f"{OUT}/ptx/engine_{n_prog}.ptx", "w").write(text)
    ents = entries(text)
    for en, body in ents.items():
        for rg in set(re.findall(r"%envreg\d+", body)):
            allregs[rg] = allregs.get(rg, 0) + 1
    print(f"engine program {n_prog}: {len(ents)} entries, {len(text)} chars, "
          f"shared decls {len(re.findall(r'[.]shared', text))}, .ptr.shared params {text.count('.ptr .shared')}, "
          f".extern {text.count('.extern')}, .local {len(re.findall(r'[.]local', text))}, "
          f"envregs {sorted(set(re.findall(r'%envreg[0-9]+', text)))}, "
          f"reqntid {text.count('.reqntid')}, maxntid {text.count('.maxntid')}")
    for variant in ("as-is", "rewritten"):
        mm = load(text if variant == "as-is" else rewrite(text), f"engine {n_prog} {variant}")
        print(f"   load {variant}: {'ok' if mm else 'failed'}")
print("envreg use across engine kernels:", allregs)
# C. static __local + barriers (last: the as-is launch hits an illegal address, which leaves
#    the CUDA context unusable for the rest of the process)
red_src = b"""__kernel void red(__global const float *x, __global float *y, int n) {
  __local float sh[256];
  int r = get_group_id(0), t = get_local_id(0), ls = get_local_size(0);
  float s = 0.0f; for (int i = t; i < n; i += ls) s += x[r * n + i];
  sh[t] = s; barrier(CLK_LOCAL_MEM_FENCE);
  for (int k = ls / 2; k > 0; k >>= 1) { if (t < k) sh[t] += sh[t + k]; barrier(CLK_LOCAL_MEM_FENCE); }
  if (t == 0) y[r] = sh[0];
}"""
_, rptx = build(red_src)
open(f"{OUT}/ptx/red.ptx", "w").write(rptx)
print("red: envregs", sorted(set(re.findall(r"%envreg\d+", rptx))), "shared decls",
      re.findall(r"\.shared[^;]*;", rptx))
rows, n = 37, 1000
x = torch.randn(rows, n, device="cuda")
for variant in ("as-is", "rewritten"):
    m = load(rptx if variant == "as-is" else rewrite(rptx), f"red {variant}")
    if m is None:
        continue
    f = C.c_void_p(); ck(cu.cuModuleGetFunction(C.byref(f), m, b"red"), "red")
    y = torch.zeros(rows, device="cuda")
    a = [C.c_uint64(x.data_ptr()), C.c_uint64(y.data_ptr()), C.c_int(n)]
    args = (C.c_void_p * 3)(*[C.cast(C.byref(v), C.c_void_p) for v in a])
    r = cu.cuLaunchKernel(f, rows, 1, 1, 256, 1, 1, 0, stream, args, None)
    try:
        torch.cuda.synchronize()
        print(f"red via CUDA ({variant}): launch {r}, max err {(y - x.sum(1)).abs().max().item():.3g}")
    except Exception as e:
        print(f"red via CUDA ({variant}): launch {r}, FAILED {e}")
        break

print("PROBE DONE")
