"""cuBLASLt facts this project relies on, checked on the GPU (ctypes, torch's libcublasLt):
the enum values csrc/backend/cuda/cublaslt.c declares by layout (read from cublasLt.h where the
machine has it), and what the epilogues compute: D = act(A.B + beta*C + bias) with C a tensor
other than D, bias along D's rows (our output's innermost dim), GELU's form (tanh or erf), for
fp16 and fp32. Prints one line per check; exit 1 if any check fails."""
import ctypes, glob, os, re, sys
import torch

ok = True
def check(cond, what):
    global ok
    print(("ok   " if cond else "FAIL ") + what); ok = ok and bool(cond)

WANT = {"CUBLASLT_MATMUL_DESC_TRANSA": 3, "CUBLASLT_MATMUL_DESC_TRANSB": 4, "CUBLASLT_MATMUL_DESC_EPILOGUE": 7,
        "CUBLASLT_MATMUL_DESC_BIAS_POINTER": 8, "CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE": 26,
        "CUBLASLT_EPILOGUE_DEFAULT": 1, "CUBLASLT_EPILOGUE_RELU": 2, "CUBLASLT_EPILOGUE_BIAS": 4,
        "CUBLASLT_EPILOGUE_RELU_BIAS": 6, "CUBLASLT_EPILOGUE_GELU": 32, "CUBLASLT_EPILOGUE_GELU_BIAS": 36,
        "CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT": 5, "CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET": 6,
        "CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES": 1, "CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES": 5,
        "CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES": 6, "CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES": 7,
        "CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES": 8, "CUBLASLT_MATMUL_DESC_TRANSC": 5}
hdrs = [h for pat in ("/usr/local/cuda*/include/cublasLt.h", "/usr/include/cublasLt.h",
                      "/opt/torch/.venv/lib/python3*/site-packages/nvidia/cu*/include/cublasLt.h",
                      "/opt/torch/.venv/lib/python3*/site-packages/nvidia/cublas/include/cublasLt.h")
        for h in glob.glob(pat)]
if hdrs:
    txt = open(hdrs[0]).read()
    for name, v in WANT.items():
        m = re.search(name + r"\s*=\s*([^,\n]+)", txt)
        got = m.group(1).strip() if m else None
        try:
            got_v = eval(got.replace("UL", "").replace("U", ""), {}, {}) if got else None
        except Exception:
            got_v = None
        if got_v is None and got:   # composed of other names (RELU | BIAS)
            expr = got
            for n2, v2 in WANT.items():
                expr = expr.replace(n2, str(v2))
            try: got_v = eval(expr, {}, {})
            except Exception: pass
        check(got_v == v, f"{name} = {v} (header {hdrs[0]}: {got})")
else:
    print("note: no cublasLt.h found; enum values checked only by the results below")

torch.cuda.init()
lib = None
for nm in ("libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"):
    try:
        lib = ctypes.CDLL(nm, mode=os.RTLD_NOLOAD | ctypes.RTLD_GLOBAL); break
    except OSError:
        pass
if lib is None:
    for nm in ("libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"):
        try: lib = ctypes.CDLL(nm); break
        except OSError: pass
check(lib is not None, "libcublasLt loads")
vp, i32, u64, i64 = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64, ctypes.c_int64
h = vp(); check(lib.cublasLtCreate(ctypes.byref(h)) == 0, "cublasLtCreate")
ws = torch.empty(32 << 20, dtype=torch.uint8, device="cuda")

def matmul(A, B, bias=None, C=None, epi=1, tf32=False):
    """row-major D[m, n] = epi(A[m, k] . B[k, n] + C + bias[n]) as column-major D^T = B^T A^T"""
    m, k = A.shape; n = B.shape[1]
    dt = {torch.float16: 2, torch.float32: 0}[A.dtype]
    ct = 77 if (A.dtype == torch.float32 and tf32) else 68
    D = torch.empty(m, n, dtype=A.dtype, device="cuda")
    desc = vp(); assert lib.cublasLtMatmulDescCreate(ctypes.byref(desc), ct, 0) == 0
    e = i32(epi); assert lib.cublasLtMatmulDescSetAttribute(desc, 7, ctypes.byref(e), 4) == 0
    if bias is not None:
        bp = vp(bias.data_ptr()); assert lib.cublasLtMatmulDescSetAttribute(desc, 8, ctypes.byref(bp), 8) == 0
        bt = i32(dt); assert lib.cublasLtMatmulDescSetAttribute(desc, 26, ctypes.byref(bt), 4) == 0
    lay = lambda r, c, ld: (lambda L: (lib.cublasLtMatrixLayoutCreate(ctypes.byref(L), dt, u64(r), u64(c), i64(ld)), L)[1])(vp())
    la, lb, ld_ = lay(n, k, n), lay(k, m, k), lay(n, m, n)   # B^T: n x k ld n; A^T: k x m ld k; D^T: n x m ld n
    pref = vp(); lib.cublasLtMatmulPreferenceCreate(ctypes.byref(pref))
    wsb = u64(32 << 20); lib.cublasLtMatmulPreferenceSetAttribute(pref, 1, ctypes.byref(wsb), 8)
    res = (ctypes.c_char * 96)(); cnt = i32(0)
    r = lib.cublasLtMatmulAlgoGetHeuristic(h, desc, la, lb, ld_, ld_, pref, 1, res, ctypes.byref(cnt))
    if r != 0 or cnt.value == 0:
        return None, f"heuristic status {r}, {cnt.value} algos"
    one, beta = ctypes.c_float(1.0), ctypes.c_float(1.0 if C is not None else 0.0)
    Cp = C.data_ptr() if C is not None else D.data_ptr()
    r = lib.cublasLtMatmul(h, desc, ctypes.byref(one), vp(B.data_ptr()), la, vp(A.data_ptr()), lb, ctypes.byref(beta),
                           vp(Cp), ld_, vp(D.data_ptr()), ld_, res, vp(ws.data_ptr()), u64(32 << 20),
                           vp(torch.cuda.current_stream().cuda_stream))
    torch.cuda.synchronize()
    return (D if r == 0 else None), f"status {r}"

torch.manual_seed(0)
for dt, tol in ((torch.float16, 2e-3), (torch.float32, 1e-5)):
    for (m, k, n) in ((197 * 3, 768, 2304), (37, 48, 99), (64, 64, 72)):
        A = torch.randn(m, k, device="cuda").to(dt); B = (torch.randn(k, n, device="cuda") / k ** 0.5).to(dt)
        bias = torch.randn(n, device="cuda").to(dt); C = torch.randn(m, n, device="cuda").to(dt)
        ref = A.double() @ B.double()
        def rel(D, want):
            return ((D.double() - want).abs().max() / want.abs().max().clamp(min=1)).item() if D is not None else float("inf")
        tag = f"{dt} {m}x{k}x{n}"
        D, st = matmul(A, B, bias, C, epi=4); check(rel(D, ref + bias.double() + C.double()) < tol, f"BIAS + C (C != D) {tag}: {st}")
        D, st = matmul(A, B, None, C, epi=1); check(rel(D, ref + C.double()) < tol, f"C alone {tag}: {st}")
        D, st = matmul(A, B, bias, None, epi=6); check(rel(D, torch.relu(ref + bias.double())) < tol, f"RELU_BIAS {tag}: {st}")
        D, st = matmul(A, B, bias, C, epi=6); check(rel(D, torch.relu(ref + bias.double() + C.double())) < tol, f"RELU_BIAS + C {tag}: {st}")
        D, st = matmul(A, B, bias, None, epi=36)
        x = ref + bias.double()
        et, ee = rel(D, torch.nn.functional.gelu(x, approximate="tanh")), rel(D, torch.nn.functional.gelu(x))
        print(f"     GELU_BIAS {tag}: error vs tanh form {et:.3g}, vs erf form {ee:.3g} ({st})")
        check(et < tol, f"GELU_BIAS is the tanh form {tag}")
# NaN and inf through the epilogues (informational: torch's relu keeps NaN; the engines fuse
# no ReLU until this says cuBLASLt's does too)
A = torch.randn(64, 64, device="cuda"); B = torch.randn(64, 72, device="cuda") / 8
A[3, 5] = float("nan"); A[7, 1] = float("inf")
bias = torch.zeros(72, device="cuda")
for epi, nm in ((6, "RELU_BIAS"), (36, "GELU_BIAS"), (4, "BIAS")):
    D, st = matmul(A, B, bias, None, epi=epi)
    if D is not None:
        print(f"     {nm}: NaN row -> {int(torch.isnan(D[3]).sum())}/72 NaN; inf row -> "
              f"{int(torch.isnan(D[7]).sum())} NaN, {int(torch.isinf(D[7]).sum())} inf, {int((D[7] == 0).sum())} zeros")
print("ALL OK" if ok else "SOME FAILED")
sys.exit(0 if ok else 1)
