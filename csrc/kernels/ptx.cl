/* The PTX prelude: tensor-core multiply-accumulate, ldmatrix, async copies and warp shuffles
 * for the NVIDIA kernel families, each also written as a portable emulation with the same
 * per-lane semantics (the PTX ISA's fragment layouts), so that a kernel written against it runs
 * and is tested on any OpenCL device (PoCL in CI) and only its speed needs the GPU.
 *
 * Codegen emits it before a kernel template, with TTC_PTX defined where the real instructions
 * are wanted (NVIDIA targets). A work-group is a whole number of warps of 32 work-items (local
 * ids linearised x fastest). Declare the emulation's scratch at kernel scope and pass it along:
 *
 *   TTC_PTX_SCRATCH(scr, NWARPS);
 *   ttc_ldsm_x4(a, As, row_off, scr);   ttc_ldsm_x2_trans(b, Bs, k_off, scr);
 *   ttc_mma_f16(acc, a, b, scr);
 *
 * Emulated calls that take `scr` hold work-group barriers: every work-item of the work-group
 * must make them, from uniform control flow, as real warps-synchronous code does anyway. With
 * TTC_PTX they hold none, so a kernel's own barriers must still order its local memory exactly
 * as the hardware needs. Halves travel as raw bits (low half first in a uint): no cl_khr_fp16.
 *
 * Layouts (PTX ISA; g = lane / 4, t = lane % 4):
 *   m16n8k16 f16  A (row, k): a0 (g, 2t..2t+1), a1 (g+8, 2t..), a2 (g, 2t+8..), a3 (g+8, 2t+8..)
 *                 B (k, n):   b0 (2t..2t+1, g), b1 (2t+8..2t+9, g)
 *   m16n8k8 tf32  A: a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4); B: b0 (t, g), b1 (t+4, g)
 *   C / D (both): c0 (g, 2t), c1 (g, 2t+1), c2 (g+8, 2t), c3 (g+8, 2t+1)
 *   ldmatrix m8n8 .b16: lanes 8i..8i+7 give the row addresses of matrix i; r[i] holds row g,
 *   halves 2t and 2t+1 of matrix i (.trans: column g, rows 2t and 2t+1). */
#ifndef TTC_PTX_CL
#define TTC_PTX_CL

/* always inlined: PoCL 3.1 runs the emulation's barriers wrongly inside a function that is
 * called from several places and left out of line (values written before a barrier were
 * not seen after it) */
#define TTC_INL static inline __attribute__((always_inline))

TTC_INL int ttc_lid(void) {
    return (int)(get_local_id(0) + get_local_size(0) * (get_local_id(1) + get_local_size(1) * get_local_id(2)));
}
TTC_INL int ttc_lane(void) { return ttc_lid() & 31; }
TTC_INL int ttc_warp(void) { return ttc_lid() >> 5; }

/* a __local pointer as a .shared address: OpenCL's local address space is PTX's shared window */
#define TTC_SMEM(p) ((uint)(size_t)(p))
#define TTC_PTX_EMU_WORDS 384   /* per warp: a 16x16 A tile and a 16x8 B tile as floats */

/* the low half of bits as a float */
TTC_INL float ttc_h2f(uint bits) {
    ushort h = (ushort)(bits & 0xffffu);
    return vload_half(0, (const __private half *)&h);
}
/* what a tf32 operand holds: the top 19 bits */
TTC_INL float ttc_tf32_val(uint u) { return as_float(u & 0xffffe000u); }   /* the bits it reads */

#ifdef TTC_PTX
#define TTC_PTX_SCRATCH(name, nwarps) __local uint name[1]

TTC_INL uint ttc_f2h2(float lo, float hi) {
    uint r;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

TTC_INL uint ttc_tf32(float x) {
    uint r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return r;
}

TTC_INL void ttc_mma_f16(float *acc, const uint *a, const uint *b, __local uint *scr) {
    float d0, d1, d2, d3;
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%10,%11,%12,%13};"
                 : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(acc[0]), "f"(acc[1]),
                   "f"(acc[2]), "f"(acc[3]));
    acc[0] = d0; acc[1] = d1; acc[2] = d2; acc[3] = d3;
}

TTC_INL void ttc_mma_tf32(float *acc, const uint *a, const uint *b, __local uint *scr) {
    float d0, d1, d2, d3;
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%10,%11,%12,%13};"
                 : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(acc[0]), "f"(acc[1]),
                   "f"(acc[2]), "f"(acc[3]));
    acc[0] = d0; acc[1] = d1; acc[2] = d2; acc[3] = d3;
}

/* int8 x int8 -> int32 (m16n8k32): a[4], b[2] hold 4 k-consecutive bytes each; A (row, k):
 * a0 (g, 4t..4t+3), a1 (g+8, 4t..), a2 (g, 16+4t..), a3 (g+8, 16+4t..); B (k, col): b0 (4t..4t+3,
 * g), b1 (16+4t.., g); acc as the f16 form's (exact: int32 sums) */
TTC_INL void ttc_mma_s8(int *acc, const uint *a, const uint *b, __local uint *scr) {
    int d0, d1, d2, d3;
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%10,%11,%12,%13};"
                 : "=r"(d0), "=r"(d1), "=r"(d2), "=r"(d3)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(acc[0]), "r"(acc[1]),
                   "r"(acc[2]), "r"(acc[3]));
    acc[0] = d0; acc[1] = d1; acc[2] = d2; acc[3] = d3;
}

/* memory operands: volatile with a memory clobber, so that the compiler keeps them between
 * the kernel's barriers */
TTC_INL void ttc_ldsm_x4(uint *r, __local const ushort *base, int off, __local uint *scr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(TTC_SMEM(base + off)) : "memory");
}
TTC_INL void ttc_ldsm_x4_trans(uint *r, __local const ushort *base, int off, __local uint *scr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(TTC_SMEM(base + off)) : "memory");
}
TTC_INL void ttc_ldsm_x2(uint *r, __local const ushort *base, int off, __local uint *scr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];"
                 : "=r"(r[0]), "=r"(r[1]) : "r"(TTC_SMEM(base + off)) : "memory");
}
TTC_INL void ttc_ldsm_x2_trans(uint *r, __local const ushort *base, int off, __local uint *scr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];"
                 : "=r"(r[0]), "=r"(r[1]) : "r"(TTC_SMEM(base + off)) : "memory");
}

TTC_INL void ttc_cp_async16(__local void *dst, __global const void *src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(TTC_SMEM(dst)), "l"(src) : "memory");
}
/* the first valid_bytes (0..16) come from src, the rest is zero; src must still be a valid
 * address (pass the tensor's base where nothing is valid) */
TTC_INL void ttc_cp_async16_zfill(__local void *dst, __global const void *src, int valid_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(TTC_SMEM(dst)), "l"(src), "r"(valid_bytes)
                 : "memory");
}
/* the same through L1 (.ca) */
TTC_INL void ttc_cp_async16_zfill_ca(__local void *dst, __global const void *src, int valid_bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;" ::"r"(TTC_SMEM(dst)), "l"(src), "r"(valid_bytes)
                 : "memory");
}
TTC_INL void ttc_cp_async_commit(void) { asm volatile("cp.async.commit_group;" ::: "memory"); }
#define TTC_CP_ASYNC_WAIT(n) asm volatile("cp.async.wait_group " #n ";" ::: "memory")

/* orders a warp's local-memory writes before its lanes' reads of them (independent thread
 * scheduling: a warp's lanes need not run in step) */
TTC_INL void ttc_warp_sync(__local uint *scr) { asm volatile("bar.warp.sync -1;" ::: "memory"); }

TTC_INL float ttc_shfl_xor(float v, int mask, __local uint *scr) {
    float r;
    asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(r) : "f"(v), "r"(mask));
    return r;
}

/* Warpgroup MMA (sm_90a's wgmma.mma_async), for kernels compiled with TTC_SM90A (codegen: NVIDIA
 * devices of compute capability 9.0). A warpgroup is 4 consecutive warps (128 work-items); its
 * m64nNk16 product reads A (64 rows x 16 k) and B (N rows x 16 k) from local memory through
 * descriptors and accumulates into N / 2 floats per work-item, in the mma C layout of the
 * warp's 16 rows (warp w % 4 of the group: rows 16 (w % 4) + g, + 8; acc[4j + r] is column
 * 8j + 2t + (r & 1), row + 8 (r >> 1)). Both operands are K-major in the 128-byte swizzle:
 * rows of 64 halves (128 bytes), row r's 16-byte chunk c stored at chunk c ^ (r % 8), groups
 * of 8 rows 1024 bytes apart, the region 1024-byte aligned; a step of 16 in k starts 32 bytes on.
 * (This file never holds a token like a kernel's name, k<digits>: deduplication reads those as
 * the name of the kernel whose program includes it, and that kernel's copies stopped matching.)
 * NVIDIA's OpenCL compiles for sm_90, where these instructions do not exist: they travel
 * through its build as PTX comments (TTC_90A) and the CUDA launch path's PTX preparation
 * (ttc_cuda_ptx_prepare) un-comments them and targets sm_90a. A kernel that holds them must
 * never be launched by OpenCL on NVIDIA (codegen gives it more local memory than OpenCL allows
 * there, and the OpenCL launch refuses it by name). The emulation (below) computes the same
 * products from the same swizzled bytes, so layouts and descriptors are tested on any device. */
#ifdef TTC_SM90A
#define TTC_90A "//@ttc90a "
#define TTC_WGF4(a, i) "+f"(a[i]), "+f"(a[(i) + 1]), "+f"(a[(i) + 2]), "+f"(a[(i) + 3])
#define TTC_WGF16(a, i) TTC_WGF4(a, i), TTC_WGF4(a, (i) + 4), TTC_WGF4(a, (i) + 8), TTC_WGF4(a, (i) + 12)
#define TTC_WGF32(a, i) TTC_WGF16(a, i), TTC_WGF16(a, (i) + 16)
#define TTC_WGF64(a, i) TTC_WGF32(a, i), TTC_WGF32(a, (i) + 32)
#define TTC_WGF128(a, i) TTC_WGF64(a, i), TTC_WGF64(a, (i) + 64)
#define TTC_WGS32 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define TTC_WGS64 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define TTC_WGS128 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"
/* the descriptor of a K-major 128-byte-swizzled operand starting at shared address addr:
 * start >> 4, leading offset 1 (unused by this layout), 8-row groups 1024 bytes apart, mode 1 */
TTC_INL ulong ttc_wg_desc(uint addr) {
    return (ulong)((addr & 0x3FFFFu) >> 4) | ((ulong)1 << 16) | ((ulong)(1024 >> 4) << 32) | ((ulong)1 << 62);
}
/* acc[i] for i < n, pinned around the asynchronous products: the compiler must neither read
 * nor move them between a product and the wait that completes it */
#define TTC_WG_PIN(asmtxt, acc, n) TTC_WG_PIN_(asmtxt, acc, n)
#define TTC_WG_PIN_(asmtxt, acc, n) asm volatile(TTC_90A asmtxt : TTC_WGF##n(acc, 0) :: "memory")
/* A at byte a_off, B at byte b_off of the 1024-aligned local region base */
#define TTC_WG_MMA_F16(acc, n, base, a_off, b_off, scr) TTC_WG_MMA_F16_(acc, n, base, a_off, b_off)
#define TTC_WG_MMA_F16_(acc, n, base, a_off, b_off)                                                          \
    asm volatile(TTC_90A "{ .reg .pred p; setp.ne.b32 p, %" TTC_WG_IDX##n(2) ", 0; wgmma.mma_async.sync.aligned.m64n" \
                 TTC_WG_N##n "k" "16.f32.f16.f16 " TTC_WGS##n ", %" TTC_WG_IDX##n(0) ", %" TTC_WG_IDX##n(1)      \
                 ", p, 1, 1, 0, 0; }"                                                                          \
                 : TTC_WGF##n(acc, 0)                                                                          \
                 : "l"(ttc_wg_desc(TTC_SMEM(base) + (uint)(a_off))), "l"(ttc_wg_desc(TTC_SMEM(base) + (uint)(b_off))), \
                   "r"(1)                                                                                      \
                 : "memory")
#define TTC_WG_N32 "64"
#define TTC_WG_N64 "128"
#define TTC_WG_N128 "256"
#define TTC_WG_IDX32(i) TTC_WG_IDX32_##i
#define TTC_WG_IDX32_0 "32"
#define TTC_WG_IDX32_1 "33"
#define TTC_WG_IDX32_2 "34"
#define TTC_WG_IDX64(i) TTC_WG_IDX64_##i
#define TTC_WG_IDX64_0 "64"
#define TTC_WG_IDX64_1 "65"
#define TTC_WG_IDX64_2 "66"
#define TTC_WG_IDX128(i) TTC_WG_IDX128_##i
#define TTC_WG_IDX128_0 "128"
#define TTC_WG_IDX128_1 "129"
#define TTC_WG_IDX128_2 "130"
#define TTC_WG_FENCE(acc, n) TTC_WG_PIN("wgmma.fence.sync.aligned;", acc, n)
#define TTC_WG_COMMIT() asm volatile(TTC_90A "wgmma.commit_group.sync.aligned;" ::: "memory")
#define TTC_WG_WAIT1(acc, n) TTC_WG_PIN("wgmma.wait_group.sync.aligned 1;", acc, n)
#define TTC_WG_WAIT0(acc, n) TTC_WG_PIN("wgmma.wait_group.sync.aligned 0;", acc, n)
/* orders this work-item's local-memory writes (copies, stores) before the products' reads */
TTC_INL void ttc_fence_proxy_async(void) { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
/* Hopper's tensor copy engine (plain sm_90 instructions; gemm_tc.cl FL & 16): 2-D boxes copied
 * from global to local memory by cp.async.bulk.tensor, described by a CUtensorMap that the
 * CUDA launch passes by value (ttc_cuda_ptx_prepare turns each `__global const ulong16 *`
 * parameter into a 128-byte one, exec_cuda.c encodes the map), each completing on an
 * mbarrier in local memory that expects the box's bytes. Local addresses are TTC_SMEM's. */
TTC_INL void ttc_mbar_init(uint bar, uint count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}
/* makes the initialised mbarriers visible to the copy engine */
TTC_INL void ttc_mbar_init_fence(void) { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
/* this work-item's arrival, and `bytes` more for the barrier's phase to wait for */
TTC_INL void ttc_mbar_expect(uint bar, uint bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}
/* until the phase of the given parity has completed */
TTC_INL void ttc_mbar_wait(uint bar, uint parity) {
    uint done;
    do {
        asm volatile("{ .reg .pred P; mbarrier.try_wait.parity.shared::cta.b64 P, [%1], %2; selp.u32 %0, 1, 0, P; }"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    } while (!done);
}
/* the box at (c0 innermost, c1) of the map into local address dst, completing on bar */
TTC_INL void ttc_tma_load2(uint dst, __global const ulong16 *map, int c0, int c1, uint bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(bar) : "memory");
}
#endif

#else /* the emulation */
#define TTC_PTX_SCRATCH(name, nwarps) __local uint name[(nwarps) * TTC_PTX_EMU_WORDS]

TTC_INL uint ttc_f2h2(float lo, float hi) {
    ushort h[2];
    vstore_half_rte(lo, 0, (__private half *)h);
    vstore_half_rte(hi, 1, (__private half *)h);
    return (uint)h[0] | ((uint)h[1] << 16);
}

TTC_INL uint ttc_tf32(float x) {
    uint u = as_uint(x);
    if ((u & 0x7f800000u) == 0x7f800000u) return u;   /* inf, nan */
    return (u + 0x1000u) & 0xffffe000u;                  /* nearest, ties away (magnitude) */
}

/* one uint array for every use (floats stored as their bits): no type punning through pointers */
TTC_INL __local uint *ttc_emu_warp(__local uint *scr) { return scr + ttc_warp() * TTC_PTX_EMU_WORDS; }

TTC_INL void ttc_mma_f16(float *acc, const uint *a, const uint *b, __local uint *scr) {
    int l = ttc_lane(), g = l >> 2, t = l & 3;
    __local uint *A = ttc_emu_warp(scr), *B = A + 256;   /* A 16x16 (row, k), B 16x8 (k, n) */
    for (int i = 0; i < 4; i++) {
        int row = g + (i & 1) * 8, k = 2 * t + (i >> 1) * 8;
        A[row * 16 + k] = as_uint(ttc_h2f(a[i]));
        A[row * 16 + k + 1] = as_uint(ttc_h2f(a[i] >> 16));
    }
    for (int i = 0; i < 2; i++) {
        int k = 2 * t + i * 8;
        B[k * 8 + g] = as_uint(ttc_h2f(b[i]));
        B[(k + 1) * 8 + g] = as_uint(ttc_h2f(b[i] >> 16));
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int i = 0; i < 4; i++) {
        int row = g + (i >> 1) * 8, col = 2 * t + (i & 1);
        float s = 0.0f;
        for (int k = 0; k < 16; k++) s += as_float(A[row * 16 + k]) * as_float(B[k * 8 + col]);
        acc[i] += s;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

TTC_INL void ttc_mma_tf32(float *acc, const uint *a, const uint *b, __local uint *scr) {
    int l = ttc_lane(), g = l >> 2, t = l & 3;
    __local uint *A = ttc_emu_warp(scr), *B = A + 128;   /* A 16x8 (row, k), B 8x8 (k, n) */
    for (int i = 0; i < 4; i++) A[(g + (i & 1) * 8) * 8 + t + (i >> 1) * 4] = a[i] & 0xffffe000u;
    for (int i = 0; i < 2; i++) B[(t + i * 4) * 8 + g] = b[i] & 0xffffe000u;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int i = 0; i < 4; i++) {
        int row = g + (i >> 1) * 8, col = 2 * t + (i & 1);
        float s = 0.0f;
        for (int k = 0; k < 8; k++) s += as_float(A[row * 8 + k]) * as_float(B[k * 8 + col]);
        acc[i] += s;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

TTC_INL void ttc_mma_s8(int *acc, const uint *a, const uint *b, __local uint *scr) {
    int l = ttc_lane(), g = l >> 2, t = l & 3;
    __local uint *A = ttc_emu_warp(scr), *B = A + 128;   /* A 16x32 bytes (row, k), B 8x32 (col, k), as words */
    for (int i = 0; i < 4; i++) A[(g + (i & 1) * 8) * 8 + t + (i >> 1) * 4] = a[i];
    for (int i = 0; i < 2; i++) B[g * 8 + t + i * 4] = b[i];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int i = 0; i < 4; i++) {
        int row = g + (i >> 1) * 8, col = 2 * t + (i & 1);
        int s = 0;
        for (int w = 0; w < 8; w++) {
            uint x = A[row * 8 + w], y = B[col * 8 + w];
            for (int j = 0; j < 4; j++) s += (int)(char)(x >> (8 * j)) * (int)(char)(y >> (8 * j));
        }
        acc[i] += s;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* every lane publishes its row offset; each then reads its pairs of halves */
TTC_INL void ttc_ldsm_emu(uint *r, int n, bool trans, __local const ushort *base, int off,
                                __local uint *scr) {
    int l = ttc_lane(), g = l >> 2, t = l & 3;
    __local uint *S = ttc_emu_warp(scr);
    S[l] = (uint)off;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int i = 0; i < n; i++) {
        if (!trans) {
            int row = (int)S[i * 8 + g];
            r[i] = (uint)base[row + 2 * t] | ((uint)base[row + 2 * t + 1] << 16);
        } else {
            int r0 = (int)S[i * 8 + 2 * t], r1 = (int)S[i * 8 + 2 * t + 1];
            r[i] = (uint)base[r0 + g] | ((uint)base[r1 + g] << 16);
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}
TTC_INL void ttc_ldsm_x4(uint *r, __local const ushort *base, int off, __local uint *scr) {
    ttc_ldsm_emu(r, 4, false, base, off, scr);
}
TTC_INL void ttc_ldsm_x4_trans(uint *r, __local const ushort *base, int off, __local uint *scr) {
    ttc_ldsm_emu(r, 4, true, base, off, scr);
}
TTC_INL void ttc_ldsm_x2(uint *r, __local const ushort *base, int off, __local uint *scr) {
    ttc_ldsm_emu(r, 2, false, base, off, scr);
}
TTC_INL void ttc_ldsm_x2_trans(uint *r, __local const ushort *base, int off, __local uint *scr) {
    ttc_ldsm_emu(r, 2, true, base, off, scr);
}

TTC_INL void ttc_cp_async16(__local void *dst, __global const void *src) {
    *(__local uint4 *)dst = *(__global const uint4 *)src;
}
TTC_INL void ttc_cp_async16_zfill(__local void *dst, __global const void *src, int valid_bytes) {
    __local uchar *d = (__local uchar *)dst;
    __global const uchar *s = (__global const uchar *)src;
    for (int i = 0; i < 16; i++) d[i] = i < valid_bytes ? s[i] : (uchar)0;
}
TTC_INL void ttc_cp_async16_zfill_ca(__local void *dst, __global const void *src, int valid_bytes) {
    ttc_cp_async16_zfill(dst, src, valid_bytes);
}
TTC_INL void ttc_cp_async_commit(void) {}
#define TTC_CP_ASYNC_WAIT(n) ((void)0)

/* a work-group barrier: the emulation's work-items run between barriers in any order */
TTC_INL void ttc_warp_sync(__local uint *scr) { barrier(CLK_LOCAL_MEM_FENCE); }

TTC_INL float ttc_shfl_xor(float v, int mask, __local uint *scr) {
    int l = ttc_lane();
    __local uint *S = ttc_emu_warp(scr);
    S[l] = as_uint(v);
    barrier(CLK_LOCAL_MEM_FENCE);
    float r = as_float(S[l ^ (mask & 31)]);
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}
/* warpgroup MMA (see the PTX side): work-item (warp w, lane g * 4 + t) adds its N / 2 outputs
 * from the swizzled bytes, reading each half where the hardware's address (start + 1024 (r / 8)
 * + 128 (r % 8) + byte of k, chunk bits XOR-ed with row bits 7..9) puts it. Reads local memory
 * only (the kernel's barrier made it whole): no barriers, no scratch. n = N / 2. */
TTC_INL float ttc_wg_emu_ld(__local const uchar *base, int start, int r, int kb) {
    int a = start + (r >> 3) * 1024 + (r & 7) * 128 + kb;
    a ^= ((a >> 7) & 7) << 4;
    return vload_half(0, (__local const half *)(base + a));
}
TTC_INL void ttc_wg_mma_emu(float *acc, int n, __local const uchar *base, int a_off, int b_off) {
    int l = ttc_lane(), g = l >> 2, t = l & 3, r0 = (ttc_warp() & 3) * 16 + g;
    for (int j = 0; j < n / 4; j++)
        for (int r = 0; r < 4; r++) {
            int row = r0 + (r >> 1) * 8, col = j * 8 + 2 * t + (r & 1);
            float s = 0.0f;
            for (int k = 0; k < 16; k++) s += ttc_wg_emu_ld(base, a_off, row, 2 * k) * ttc_wg_emu_ld(base, b_off, col, 2 * k);
            acc[j * 4 + r] += s;
        }
}
#define TTC_WG_MMA_F16(acc, n, base, a_off, b_off, scr) ttc_wg_mma_emu(acc, n, base, a_off, b_off)
#define TTC_WG_FENCE(acc, n) ((void)0)
#define TTC_WG_COMMIT() ((void)0)
#define TTC_WG_WAIT1(acc, n) ((void)0)
#define TTC_WG_WAIT0(acc, n) ((void)0)
TTC_INL void ttc_fence_proxy_async(void) {}
#endif /* TTC_PTX */

#endif /* TTC_PTX_CL */
