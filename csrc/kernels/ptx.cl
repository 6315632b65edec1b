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
#endif /* TTC_PTX */

#endif /* TTC_PTX_CL */
