"""Where a compile's time went: one CompileProfile per compile.

    gm = torchtrt_c.compile(model, inputs=[x])
    prof = gm._torchtrt_c_profile            # or torchtrt_c.dynamo.last_compile_profile()
    print(prof)                              # a table: phases, lowering passes, engines
    prof.as_dict()                           # plain data (bench/ records it)

Phases are timed in order (capture, decompositions, import, lowering, partitioning, engines,
stitching; a re-decomposition after lowering shows as "decompositions (again)" etc.). Each
engine records how it was obtained (engine cache hit, or a build) and, for builds, the C
builder's own steps (conversion, fusion, tuning, codegen, program build) with its kernel,
program and tuning counts. `programs` is the process-wide OpenCL program build counters
(_C.program_stats) over this compile: programs compiled from source, on-disk binary cache
hits, builds from stored (engine blob) binaries.

The summary is logged at INFO on logger "torchtrt_c" at the end of every compile; with
debug=True the whole table is printed too.
"""
from __future__ import annotations

import time

_last = None

BUILD_STEPS = ("convert_s", "fuse_s", "tune_s", "codegen_s", "program_s", "consts_s")


def _program_stats() -> dict:
    try:
        from torchtrt_c import _C
        return dict(_C.program_stats())
    except Exception:  # no extension (docs builds): the profile simply has no program counts
        return {}


class CompileProfile:
    def __init__(self):
        self.t0 = time.perf_counter()
        self.total_s = None
        self.phases = []      # [name, seconds]
        self.passes = []      # [name, seconds, changed] over every lowering run
        self.engines = []     # dicts, see engine()
        self._prog0 = _program_stats()
        self.programs = {}
        self.dryrun = False
        # the whole-module cache (dynamo/_module_cache.py): key, key_s, weights_hash_s, result
        # ("hit", "miss", "stored", "rejected: why", "off: why"), load_s on a hit
        self.module_cache = {}

    def add_passes(self, passes) -> None:
        for p in passes:
            self.passes.append([p[0], float(p[1]), bool(p[2])])

    def engine(self, name: str) -> dict:
        """A record for one engine; the factory fills it (see _compiler._EngineFactory.build)."""
        # source: "built", "engine cache" (deserialised from engine_cache_dir) or "engine cache
        # (live)" (the same engine compiled earlier in this process, still loaded), "module cache"
        # / "module cache (live)" (a whole-module cache hit: see _module_cache.py) or "build
        # failed" (with "failed": the error; the segment runs in torch)
        rec = {"name": name, "source": "", "seconds": {}, "build": None}
        self.engines.append(rec)
        return rec

    def build_failures(self) -> dict:
        """engine name -> why its build failed (those segments run in torch instead)."""
        return {e["name"]: e["failed"] for e in self.engines if e.get("failed")}

    def finish(self) -> "CompileProfile":
        global _last
        self.total_s = time.perf_counter() - self.t0
        now = _program_stats()
        self.programs = {k: now[k] - self._prog0.get(k, 0) for k in now}
        _last = self
        return self

    # ---- summaries
    def phase_seconds(self) -> dict:
        return {n: s for n, s in self.phases}

    def engine_totals(self) -> dict:
        tot = {k: 0.0 for k in BUILD_STEPS}
        cnt = {"engines": len(self.engines), "cache_hits": 0, "built": 0, "kernels": 0, "unique_kernels": 0,
               "programs_compiled": 0, "programs_cached": 0, "program_parts": 0, "gemms": 0, "tune_timed": 0,
               "tune_candidates": 0, "tune_cached": 0, "tune_capped": 0}
        for e in self.engines:
            if e["source"].startswith(("engine cache", "module cache")):
                cnt["cache_hits"] += 1
            b = e.get("build")
            if not b:
                continue
            cnt["built"] += e["source"] == "built"
            for k in BUILD_STEPS:
                tot[k] += b.get(k, 0.0)
            for k in ("kernels", "unique_kernels", "gemms", "tune_timed", "tune_candidates", "tune_cached",
                      "tune_capped"):
                cnt[k] += b.get(k, 0)
            origin = b.get("program_origin")
            cnt["programs_compiled"] += origin == "compiled"
            cnt["programs_cached"] += origin in ("cache", "blob")
            cnt["program_parts"] += b.get("programs", 1)
        return {**tot, **cnt}

    def as_dict(self) -> dict:
        return {"total_s": self.total_s, "phases": [list(p) for p in self.phases],
                "passes": [list(p) for p in self.passes], "engines": [dict(e) for e in self.engines],
                "engine_totals": self.engine_totals(), "programs": dict(self.programs), "dryrun": self.dryrun,
                "module_cache": dict(self.module_cache)}

    def summary(self) -> str:
        """One line: total and the phases."""
        tot = self.total_s if self.total_s is not None else time.perf_counter() - self.t0
        return f"compile {tot:.2f}s: " + ", ".join(f"{n} {s:.2f}s" for n, s in self.phases)

    def __str__(self) -> str:
        tot = self.total_s if self.total_s is not None else time.perf_counter() - self.t0
        L = [f"torchtrt_c compile profile: {tot:.2f}s" + (" (dry run)" if self.dryrun else "")]
        for n, s in self.phases:
            L.append(f"  {n:<28s} {s:8.3f}s")
        if self.passes:
            ps = {}
            for n, s, ch in self.passes:
                v = ps.setdefault(n, [0.0, 0, False])
                v[0] += s
                v[1] += 1
                v[2] |= ch
            L.append("  lowering passes: " + ", ".join(
                f"{n} {v[0] * 1e3:.1f}ms{'*' if v[2] else ''}" for n, v in ps.items()) + "  (* changed)")
        for e in self.engines:
            sec = ", ".join(f"{k} {v:.3f}s" for k, v in e["seconds"].items())
            L.append(f"  {e['name']}: {e['source']}; {sec}")
            if e.get("failed"):
                L.append(f"    runs in torch instead: {e['failed']}")
            b = e.get("build")
            if b:
                L.append("    " + ", ".join(f"{k[:-2]} {b[k]:.3f}s" for k in BUILD_STEPS)
                         + f"; kernels {b['kernels']} ({b['unique_kernels']} unique), source {b['source_bytes']} B,"
                         f" program {b['program_origin']}"
                         + (f" ({b['programs']} parts built in parallel)" if b.get("programs", 1) > 1 else "")
                         + f"; GEMMs {b['gemms']}: {b['tune_cached']} from the tuning"
                         f" cache, {b['tune_timed']} timed ({b['tune_candidates']} candidates)"
                         + (f", {b['tune_capped']} shapes left to the heuristic (TORCHTRT_C_TUNE_MAX)"
                            if b.get("tune_capped") else ""))
        mc = self.module_cache
        if mc:
            L.append(f"  module cache: {mc.get('result', '')}" + (
                f"; key {mc['key_s']:.3f}s (weights hashed in {mc['weights_hash_s']:.3f}s)" if "key_s" in mc else "")
                + (f", loaded in {mc['load_s']:.3f}s" if "load_s" in mc else "")
                + (f"; {mc['preloaded_engines']} engine(s) preloaded while capture ran"
                   if mc.get("preloaded_engines") else "")
                + (" (engines deserialised in the background; a first call waits for them)"
                   if any(e["source"] == "module cache" for e in self.engines) else ""))
        if self.programs:
            p = self.programs
            L.append(f"  OpenCL programs: {p.get('compiled', 0)} compiled ({p.get('compile_s', 0):.2f}s), "
                     f"{p.get('cache_hits', 0)} from the binary cache ({p.get('cache_s', 0):.2f}s), "
                     f"{p.get('from_binary', 0)} from engine blobs ({p.get('binary_s', 0):.2f}s)"
                     " (tuning's candidate programs included)")
        return "\n".join(L)


def last_compile_profile():
    """The CompileProfile of the latest finished compile in this process (None before any)."""
    return _last
