"""How NVIDIA's OpenCL compiler lowers a __local KERNEL ARGUMENT, and what a CUDA launch of that
PTX must pass for it (issue 12 item 2: GEMM tiles with more than 48 KiB of shared memory through
dynamic shared memory in the CUDA launch path). Findings in bench/RESULTS.md.

Builds small kernels with __local arguments (one, two, plus a static __local array), prints their
PTX header and parameter lists, runs them through OpenCL (what the pointer value and
%dynamic_smem_size / %total_smem_size read there), then loads the same PTX into the CUDA driver
and launches it with sharedMemBytes set, passing several candidate values for the .shared
pointer parameter and a rewrite that points it at an `.extern .shared` array, with sizes below
and above 48 KiB (cuFuncSetAttribute MAX_DYNAMIC_SHARED_SIZE_BYTES). ctypes only; PTX under
$OUT/ptx. Usage: python3 bench/probe/dynsmem_probe.py"""
import ctypes as C
import os
import re

import torch

from probe_cl import cl, cl_gpu, ck, cu, cu_load

OUT = os.environ.get("OUT", "/tmp/dynprobe")
os.makedirs(f"{OUT}/ptx", exist_ok=True)


torch.zeros(1, device="cuda")
stream = C.c_void_p(torch.cuda.current_stream().cuda_stream)
cdev = C.c_int(); ck(cu.cuDeviceGet(C.byref(cdev), 0), "dev")
for name, attr in (("MAX_SHARED_MEMORY_PER_BLOCK", 8), ("MAX_SHARED_MEMORY_PER_MULTIPROCESSOR", 81),
                   ("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", 97), ("RESERVED_SHARED_MEMORY_PER_BLOCK", 111),
                   ("MAX_REGISTERS_PER_MULTIPROCESSOR", 82), ("MULTIPROCESSOR_COUNT", 16)):
    v = C.c_int(-1)
    r = cu.cuDeviceGetAttribute(C.byref(v), attr, cdev)
    print(f"CUDA {name} = {v.value} (r={r})")

dev = cl_gpu()
lm = C.c_uint64(); cl.clGetDeviceInfo(dev, 0x1023, 8, C.byref(lm), None)
print("OpenCL CL_DEVICE_LOCAL_MEM_SIZE =", lm.value)
err = C.c_int()
clctx = C.c_void_p(cl.clCreateContext(None, 1, C.byref(dev), None, None, C.byref(err))); ck(err.value, "ctx")
q = C.c_void_p(cl.clCreateCommandQueue(clctx, dev, 0, C.byref(err))); ck(err.value, "queue")

SRC = rb"""
#define SMEM_INFO(o) { uint d, t; asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(d)); \
    asm("mov.u32 %0, %%total_smem_size;" : "=r"(t)); o[2] = d; o[3] = t; }
/* out[0]: checksum of buf written and read back reversed; out[1]: (uint)buf; out[2..3] smem sizes */
__kernel void one(__global uint *out, __local uint *buf, int n) {
    int t = get_local_id(0), ls = get_local_size(0);
    for (int i = t; i < n; i += ls) buf[i] = (uint)i * 3u + 1u;
    barrier(CLK_LOCAL_MEM_FENCE);
    uint s = 0;
    for (int i = t; i < n; i += ls) s += buf[n - 1 - i] * (uint)(i + 1);
    atomic_add(out, s);
    if (t == 0) { out[1] = (uint)(size_t)buf; SMEM_INFO(out) }
}
__kernel void two(__global uint *out, __local uint *a, int n, __local uint4 *b) {
    int t = get_local_id(0), ls = get_local_size(0);
    for (int i = t; i < n; i += ls) { a[i] = (uint)i; b[i] = (uint4)((uint)i * 7u, 0, 0, 0); }
    barrier(CLK_LOCAL_MEM_FENCE);
    uint s = 0;
    for (int i = t; i < n; i += ls) s += a[n - 1 - i] + b[i ^ 1].x;
    atomic_add(out, s);
    if (t == 0) { out[1] = (uint)(size_t)a; out[4] = (uint)(size_t)b; SMEM_INFO(out) }
}
__kernel void withstatic(__global uint *out, __local uint *buf, int n) {
    __local uint st[1000];
    int t = get_local_id(0), ls = get_local_size(0);
    for (int i = t; i < 1000; i += ls) st[i] = (uint)i;
    for (int i = t; i < n; i += ls) buf[i] = (uint)i * 3u + 1u;
    barrier(CLK_LOCAL_MEM_FENCE);
    uint s = 0;
    for (int i = t; i < n; i += ls) s += buf[n - 1 - i] * (uint)(i + 1) + st[i % 1000];
    atomic_add(out, s);
    if (t == 0) { out[1] = (uint)(size_t)buf; out[4] = (uint)(size_t)st; SMEM_INFO(out) }
}
"""


def build(src):
    prog = C.c_void_p(cl.clCreateProgramWithSource(clctx, 1, C.byref(C.c_char_p(src)), None, C.byref(err)))
    r = cl.clBuildProgram(prog, 1, C.byref(dev), b"-cl-std=CL1.2", None, None)
    log = C.create_string_buffer(1 << 16)
    cl.clGetProgramBuildInfo(prog, dev, 0x1183, 1 << 16, log, None)
    if r:
        raise RuntimeError(log.value.decode())
    if log.value.strip():
        print("build log:", log.value.decode()[:400])
    bsz = C.c_size_t(); cl.clGetProgramInfo(prog, 0x1165, 8, C.byref(bsz), None)
    b = C.create_string_buffer(bsz.value + 1); pb = C.c_void_p(C.addressof(b))
    cl.clGetProgramInfo(prog, 0x1166, 8, C.byref(pb), None)
    return prog, b.raw[: bsz.value].rstrip(b"\0").decode()


prog, ptx = build(SRC)
open(f"{OUT}/ptx/dyn.ptx", "w").write(ptx)
print("PTX header:", " | ".join(l for l in ptx.splitlines()[:30] if l.startswith(".")))
for m in re.finditer(r"\.entry\s+(\w+)\s*\((.*?)\)", ptx, re.S):
    print(f"entry {m.group(1)} params:", [p.strip() for p in m.group(2).split(",")])
print("shared decls:", re.findall(r"^[^\n]*\.shared[^\n;]*;", ptx, re.M)[:10])
print("param loads of .shared params:", re.findall(r"ld\.param[^;]*;", ptx)[:12])
print("uses of dynamic_smem:", re.findall(r"[^\n]*smem_size[^\n]*", ptx)[:4])


def expect(kind, n):
    if kind == "one":
        return sum((n - 1 - i) * 3 + 1 for i in range(n)) * 1 if False else sum(((n - 1 - i) * 3 + 1) * (i + 1) for i in range(n)) % (1 << 32)
    if kind == "two":
        return sum((n - 1 - i) + (i ^ 1) * 7 for i in range(n)) % (1 << 32)
    return sum(((n - 1 - i) * 3 + 1) * (i + 1) + (i % 1000) for i in range(n)) % (1 << 32)


def cl_run(kind, n):
    k = C.c_void_p(cl.clCreateKernel(prog, kind.encode(), C.byref(err))); ck(err.value, "kernel")
    buf = C.c_void_p(cl.clCreateBuffer(clctx, 1, 64, None, C.byref(err)))
    z = (C.c_uint * 16)(); ck(cl.clEnqueueWriteBuffer(q, buf, 1, 0, 64, z, 0, None, None), "write")
    cl.clSetKernelArg(k, 0, 8, C.byref(buf))
    ck(cl.clSetKernelArg(k, 1, 4 * n, None), "local arg")
    nn = C.c_int(n); cl.clSetKernelArg(k, 2, 4, C.byref(nn))
    if kind == "two":
        ck(cl.clSetKernelArg(k, 3, 16 * n, None), "local arg 2")
    g = (C.c_size_t * 1)(256); l = (C.c_size_t * 1)(256)
    r = cl.clEnqueueNDRangeKernel(q, k, 1, None, g, l, 0, None, None)
    h = (C.c_uint * 16)(); cl.clEnqueueReadBuffer(q, buf, 1, 0, 64, h, 0, None, None)
    print(f"OpenCL {kind} n={n} ({4 * n} B local arg): enqueue {r}, sum ok {h[0] == expect(kind, n)}, "
          f"ptr {h[1]}, ptr2 {h[4]}, dynamic_smem_size {h[2]}, total_smem_size {h[3]}")


for kind, n in (("one", 1000), ("one", 12000), ("two", 500), ("withstatic", 1000)):
    try:
        cl_run(kind, n)
    except Exception as e:
        print("OpenCL", kind, n, "failed", e)


def rewrite_env(t):
    def sub(m):
        n = int(m.group(2))
        if n <= 5:
            return f"{m.group(1)}0"
        if n <= 8:
            return "mov.u32" + m.group(1)[7:] + "%nctaid." + "xyz"[n - 6]
        return m.group(0)
    return re.sub(r"(mov\.[bu]32\s+%r\d+,\s*)%envreg(\d+)", sub, t)


def load(text, tag):
    return cu_load(text, tag, log_chars=400)


def extern_rewrite(t):
    """.ptr .shared params become plain .u64 (ignored) and their loads a mov of an .extern .shared
    array's address (+ the param's value as a byte offset)"""
    t = re.sub(r"(\.address_size 64\s*\n)", r"\1.extern .shared .align 16 .b8 ttc_dsmem[];\n", t, count=1)
    names = re.findall(r"\.param \.u64 \.ptr \.shared \.align \d+ (\w+)", t)
    t = re.sub(r"\.param \.u64 \.ptr \.shared \.align \d+ (\w+)", r".param .u64 \1", t)
    for nm in names:
        t = re.sub(r"ld\.param\.u64\s+(%rd\d+),\s*\[" + nm + r"\];",
                   lambda m: f"ld.param.u64 {m.group(1)}, [{nm}]; {{ .reg .u64 %ttcb; mov.u64 %ttcb, ttc_dsmem; "
                             f"add.u64 {m.group(1)}, {m.group(1)}, %ttcb; }}", t)
    return t


envptx = rewrite_env(ptx)
variants = {"as-is": envptx, "extern": extern_rewrite(envptx)}
open(f"{OUT}/ptx/dyn_extern.ptx", "w").write(variants["extern"])
mods = {k: load(v, k) for k, v in variants.items()}


def cu_run(variant, kind, n, pvals, dyn):
    m = mods[variant]
    if m is None:
        return
    f = C.c_void_p(); ck(cu.cuModuleGetFunction(C.byref(f), m, kind.encode()), "fn")
    # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8, SHARED_SIZE_BYTES = 1
    r0 = cu.cuFuncSetAttribute(f, 8, dyn) if dyn > 48 * 1024 else 0
    st = C.c_int(); cu.cuFuncGetAttribute(C.byref(st), 1, f)
    out = torch.zeros(16, dtype=torch.int32, device="cuda")
    a = [C.c_uint64(out.data_ptr()), C.c_uint64(pvals[0]), C.c_int(n)]
    if kind == "two":
        a.append(C.c_uint64(pvals[1]))
    args = (C.c_void_p * len(a))(*[C.cast(C.byref(v), C.c_void_p) for v in a])
    r = cu.cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, dyn, stream, args, None)
    try:
        torch.cuda.synchronize()
        h = [v & 0xffffffff for v in out.tolist()]
        print(f"CUDA {variant} {kind} n={n} params {pvals} dyn {dyn} (setattr {r0}, static {st.value}): launch {r}, "
              f"sum ok {h[0] == expect(kind, n)}, ptr {h[1]}, ptr2 {h[4]}, dynamic_smem_size {h[2]}, total {h[3]}")
        return True
    except Exception as e:
        print(f"CUDA {variant} {kind} n={n} params {pvals} dyn {dyn}: launch {r}, FAILED {e}")
        return False


# value 0 first (the extern rewrite adds it as an offset), then the as-is PTX with offsets 0
# (an illegal address there may kill the context: the as-is launches come last)
ok = True
for kind, n, pv, dyn in (("one", 1000, (0,), 4000), ("one", 40000, (0,), 160000), ("two", 500, (0, 2048), 2048 + 8000),
                         ("withstatic", 1000, (0,), 4000), ("one", 56000, (0,), 224000)):
    cu_run("extern", kind, n, pv, dyn)
for kind, n, pv, dyn in (("one", 1000, (0,), 4000), ("one", 40000, (0,), 160000), ("withstatic", 1000, (0,), 4000),
                         ("withstatic", 1000, (4000,), 8000)):
    if not cu_run("as-is", kind, n, pv, dyn):
        break
print("PROBE DONE")
