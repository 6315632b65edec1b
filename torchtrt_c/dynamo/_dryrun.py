"""The dry-run report: what would run where, and why, without building engines.

    gm = torchtrt_c.compile(model, inputs=[x], dryrun=True)   # or dryrun="report.txt"
    r = gm.dryrun_report
    print(r)            # text; in a notebook the cell shows r._repr_html_()

compile(dryrun=True) shows the report once: as text on stdout, or in a Jupyter kernel as the
HTML table (so a cell that also ends with the report shows it twice: end it with `;`).
    r.coverage, r.unsupported, r.engines, r.recommended_min_block_size

Ops are the nodes that compute (prim.* structure such as constants and lists is not counted).
"""
from __future__ import annotations

import html
import logging
import os
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from torchtrt_c.dynamo._progress import in_notebook
from torchtrt_c.dynamo._rebuild import node_key

log = logging.getLogger("torchtrt_c")


def _is_op(n) -> bool:
    return not n["op"].startswith("prim.")


@dataclass
class SegmentInfo:
    name: str
    target: str
    n_ops: int
    inputs: list      # [(value name, type str)]
    outputs: list
    ops: Counter = field(default_factory=Counter)


@dataclass
class DryRunReport:
    total_ops: int
    supported_ops: int
    unsupported: dict                 # op -> (count, sorted reasons)
    forced: dict                      # node -> reason
    engines: list                     # SegmentInfo for OpenCL segments
    torch_segments: list              # SegmentInfo for torch segments
    min_block_size: int
    recommended_min_block_size: int
    recommendation: str
    profile: object = None            # the CompileProfile up to the report (set by the compiler)
    # supported ops that still run in torch, by why (views only, a block under min_block_size,
    # a non-tensor value at a segment's edge): reason -> Counter of ops
    kept_in_torch: dict = field(default_factory=dict)

    @property
    def coverage(self) -> float:
        return self.supported_ops / self.total_ops if self.total_ops else 1.0

    # ---- building ----
    @classmethod
    def build(cls, imp, part, settings, forced) -> "DryRunReport":
        from torchtrt_c.dynamo._compiler import partition_settings
        g = imp.graph
        nodes = g.nodes()
        by_name = {node_key(n): n for n in nodes}
        pset = partition_settings(settings, forced)
        cov = g.coverage(pset)
        unsup = defaultdict(lambda: [0, set()])
        for node, reason in cov.get("reasons", {}).items():
            n = by_name.get(node)
            if n is None or not _is_op(n):
                continue
            e = unsup[n["op"]]
            e[0] += 1
            na = imp.non_affine.get(node)
            big = getattr(imp, "torch_only", {}).get(node)
            e[1].add(f"output {na}; it runs in torch" if na else f"{big}; it runs in torch" if big
                     else reason or "unsupported")
        forced_out = {}
        kept = defaultdict(Counter)
        unsupported_nodes = set(cov.get("reasons", {}))
        for name, info in part["nodes"].items():
            r = info.get("reason") or ""
            if name in forced or "torch_executed" in r:
                forced_out[name] = r or forced.get(name, "forced")
            elif info.get("target") == "torch" and name not in unsupported_nodes:
                n = by_name.get(name)
                if n is not None and _is_op(n):
                    kept[r or "runs in torch"][n["op"]] += 1

        def seg_info(s):
            prefix = "_run_on_acc_" if s["target"] == "opencl" else "_run_on_gpu_"
            ops = Counter(by_name[n]["op"] for n in s["nodes"] if n in by_name and _is_op(by_name[n]))

            def desc(v):
                try:
                    val = g.value(v)
                except Exception:
                    return "?"
                if val.get("kind") == "tensor":
                    return f"{val.get('dtype')}{tuple(val.get('shape') or ())}"
                return str(val.get("kind"))
            return SegmentInfo(prefix + str(s["index"]), s["target"], sum(ops.values()),
                               [(v, desc(v)) for v in s["inputs"]], [(v, desc(v)) for v in s["outputs"]], ops)
        segs = [seg_info(s) for s in part["segments"]]
        rec, why = _recommend(g, pset, by_name)
        total = sum(1 for n in nodes if _is_op(n))
        supported = total - sum(c for c, _ in unsup.values())
        return cls(total, supported,
                   {op: (c, sorted(r)) for op, (c, r) in sorted(unsup.items(), key=lambda kv: -kv[1][0])},
                   forced_out, [s for s in segs if s.target == "opencl"],
                   [s for s in segs if s.target != "opencl"], settings.min_block_size, rec, why,
                   kept_in_torch=dict(kept))

    # ---- output ----
    def __str__(self) -> str:
        L = ["torchtrt_c dry run",
             f"  ops: {self.total_ops} total, {self.supported_ops} supported "
             f"({100 * self.coverage:.1f}% coverage)"]
        if self.unsupported:
            L.append("  unsupported ops:")
            for op, (c, reasons) in self.unsupported.items():
                L.append(f"    {op} x{c}: {'; '.join(reasons)}")
        if self.forced:
            L.append("  nodes forced to torch:")
            for n, r in self.forced.items():
                L.append(f"    {n}: {r}")
        if self.kept_in_torch:
            L.append("  supported ops kept in torch:")
            for r, ops in self.kept_in_torch.items():
                L.append(f"    {r}: " + ", ".join(f"{op} x{c}" for op, c in ops.most_common()))
        L.append(f"  engines: {len(self.engines)}, torch segments: {len(self.torch_segments)}")
        for s in self.engines:
            L.append(f"    {s.name}: {s.n_ops} ops; inputs {_io(s.inputs)} -> outputs {_io(s.outputs)}")
        for s in self.torch_segments:
            L.append(f"    {s.name} (torch): {s.n_ops} ops: "
                     + ", ".join(f"{op} x{c}" for op, c in s.ops.most_common()))
        L.append(f"  min_block_size: {self.min_block_size}; recommended: "
                 f"{self.recommended_min_block_size} ({self.recommendation})")
        if self.profile is not None:
            L.append("  " + str(self.profile).replace("\n", "\n  "))
        return "\n".join(L)

    def _repr_html_(self) -> str:
        e = html.escape
        rows = "".join(f"<tr><td>{e(op)}</td><td>{c}</td><td>{e('; '.join(r))}</td></tr>"
                       for op, (c, r) in self.unsupported.items())
        forced = "".join(f"<tr><td>{e(n)}</td><td>{e(r)}</td></tr>" for n, r in self.forced.items())
        kept = "".join(f"<tr><td>{e(r)}</td><td>{e(', '.join(f'{op} x{c}' for op, c in ops.most_common()))}</td></tr>"
                       for r, ops in self.kept_in_torch.items())
        segs = "".join(
            f"<tr><td>{e(s.name)}</td><td>{e(s.target)}</td><td>{s.n_ops}</td>"
            f"<td>{e(_io(s.inputs))}</td><td>{e(_io(s.outputs))}</td></tr>"
            for s in self.engines + self.torch_segments)
        pct = 100 * self.coverage
        return (
            "<div><b>torchtrt_c dry run</b>"
            f"<p>{self.supported_ops} / {self.total_ops} ops supported ({pct:.1f}%)</p>"
            f"<div style='background:#ddd;width:300px'><div style='background:#4a4;width:{3 * pct:.0f}px;"
            "height:8px'></div></div>"
            + (f"<h4>Unsupported ops</h4><table><tr><th>op</th><th>count</th><th>reasons</th></tr>{rows}</table>"
               if rows else "")
            + (f"<h4>Nodes forced to torch</h4><table><tr><th>node</th><th>reason</th></tr>{forced}</table>"
               if forced else "")
            + (f"<h4>Supported ops kept in torch</h4><table><tr><th>why</th><th>ops</th></tr>{kept}</table>"
               if kept else "")
            + "<h4>Segments</h4><table><tr><th>module</th><th>target</th><th>ops</th><th>inputs</th>"
              f"<th>outputs</th></tr>{segs}</table>"
            f"<p>min_block_size {self.min_block_size}; recommended {self.recommended_min_block_size}: "
            f"{e(self.recommendation)}</p>"
            + (f"<h4>Compile profile</h4><pre>{e(str(self.profile))}</pre>" if self.profile is not None else "")
            + "</div>")

    def emit(self, dryrun) -> None:
        text = str(self)
        if in_notebook():
            from IPython.display import display
            display(self)   # the HTML table, in place of the text
        else:
            print(text)
        log.info("%s", text)
        if isinstance(dryrun, (str, os.PathLike)) and not isinstance(dryrun, bool):
            with open(dryrun, "w") as f:
                f.write(text + "\n")


def _io(items) -> str:
    return "(" + ", ".join(f"{n}: {t}" for n, t in items) + ")"


def _recommend(g, pset, by_name):
    """The largest min_block_size that still keeps >= 90% of the supported ops on OpenCL
    (bigger blocks mean fewer engine/torch switches)."""
    trial = dict(pset, min_block_size=1, require_full_compilation=False)
    try:
        p = g.clone().partition(trial)
    except Exception as ex:  # the report must not fail because of the recommendation
        return pset["min_block_size"], f"could not evaluate ({ex})"
    sizes = sorted((sum(1 for n in s["nodes"] if n in by_name and _is_op(by_name[n]))
                    for s in p["segments"] if s["target"] == "opencl"), reverse=True)
    sizes = [x for x in sizes if x > 0]
    total = sum(sizes)
    if not total:
        views = [n for n, info in p["nodes"].items() if n in by_name and _is_op(by_name[n])
                 and "views only" in (info.get("reason") or "")]
        if views:
            return pset["min_block_size"], ("the supported ops are views only, which torch runs as aliases of "
                                            "their inputs without a copy: no engine is needed")
        return pset["min_block_size"], "nothing is supported"
    acc, rec = 0, 1
    for x in sizes:
        acc += x
        rec = x
        if acc >= 0.9 * total:
            break
    return rec, (f"{len(sizes)} supported block(s) of sizes {sizes[:8]}{'...' if len(sizes) > 8 else ''}; "
                 f"blocks of {rec}+ ops hold {100 * acc / total:.0f}% of supported ops")
