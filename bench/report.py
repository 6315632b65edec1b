"""Turns bench/run.py JSON results into a Markdown table and a PNG chart of ratios.

    python bench/report.py bench/out/cpu-*/results.json bench/out/gpu-*/results.json --png ratios.png
"""
from __future__ import annotations

import argparse
import json
import pathlib


def _ms(d):
    return f"{d['median_ms']:.2f} ({d['p10_ms']:.2f}-{d['p90_ms']:.2f})" if d else "-"


def _f(v, fmt="{:.2f}"):
    return fmt.format(v) if isinstance(v, (int, float)) else "-"


def markdown(results_list) -> str:
    out = []
    for res in results_list:
        m = res["meta"]
        dev = m["opencl_device"]
        out.append(f"### {dev.get('name', '?')} (OpenCL) vs torch on {m['torch_device']} "
                   f"({m.get('torch_device_name', '')}), {m['date']}")
        out.append(f"torch {m['torch']}, Python {m['python']}, torchtrt_c {m['torchtrt_c']}, "
                   f"{m['cpu_count']} CPUs, torch threads {m['torch_threads']}. Command: `{m['command']}`")
        out.append("")
        if res.get("models"):
            out.append("| model | batch | prec | eager ms | inductor ms | torchtrt_c ms (end to end) | "
                       "resident ms | ttc/eager | ttc/inductor | engines | torch segs | compile cold/warm s | "
                       "max rel err | ttc peak MB | eager peak MB |")
            out.append("|" + "---|" * 15)
            for r in res["models"]:
                if "error" in r or "ttc_error" in r:
                    err = r.get("error") or r.get("ttc_error")
                    out.append(f"| {r['model']} | {r['batch']} | {r['precision']} | {_ms(r.get('eager'))} | "
                               f"{_ms(r.get('inductor'))} | failed: {err[:120]} |" + " |" * 9)
                    continue
                res_ms = _ms(r.get("ttc_resident"))
                out.append(
                    f"| {r['model']} | {r['batch']} | {r['precision']} | {_ms(r['eager'])} | "
                    f"{_ms(r.get('inductor'))} | {_ms(r['ttc_end_to_end'])} | {res_ms} | "
                    f"{_f(r.get('ratio_ttc_over_eager'))} | {_f(r.get('ratio_ttc_over_inductor'))} | "
                    f"{r.get('ttc_engines')} | {r.get('ttc_torch_segments')} | "
                    f"{_f(r.get('ttc_compile_cold_s'), '{:.1f}')}/{_f(r.get('ttc_compile_warm_s'), '{:.1f}')} | "
                    f"{_f(r.get('ttc_max_rel_err'), '{:.1e}')} | "
                    f"{_f((r.get('ttc_peak_bytes') or 0) / 2**20, '{:.0f}') if r.get('ttc_peak_bytes') else '-'} | "
                    f"{_f(r['eager'].get('peak_bytes', 0) / 2**20, '{:.0f}') if r['eager'].get('peak_bytes') else '-'} |")
            out.append("")
            out.append("Ratios are torchtrt_c end-to-end median / the other's median: below 1 means torchtrt_c is faster.")
            out.append("")
        for kind, rows in (res.get("kernels") or {}).items():
            if not rows:
                continue
            out.append(f"#### kernels: {kind}")
            keys = list(rows[0].keys())
            out.append("| " + " | ".join(keys) + " |")
            out.append("|" + "---|" * len(keys))
            for r in rows:
                out.append("| " + " | ".join(_f(r[k]) if isinstance(r[k], float) else str(r[k]) for k in keys) + " |")
            out.append("")
        if res.get("partition"):
            out.append("#### partitioner scale")
            rows = res["partition"]
            keys = list(rows[0].keys())
            out.append("| " + " | ".join(keys) + " |")
            out.append("|" + "---|" * len(keys))
            for r in rows:
                out.append("| " + " | ".join(str(r[k]) for k in keys) + " |")
            out.append("")
    return "\n".join(out) + "\n"


def chart(results_list, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels, eager, ind = [], [], []
    for res in results_list:
        tag = "GPU" if "cuda" in res["meta"]["torch_device"] else "CPU"
        for r in res.get("models", []):
            if "ratio_ttc_over_eager" not in r:
                continue
            labels.append(f"{tag} {r['model']} b{r['batch']} {r['precision']}")
            eager.append(r["ratio_ttc_over_eager"])
            ind.append(r.get("ratio_ttc_over_inductor", float("nan")))
    if not labels:
        return
    fig, ax = plt.subplots(figsize=(max(6, 0.45 * len(labels)), 4.5))
    xs = range(len(labels))
    ax.bar([x - 0.2 for x in xs], eager, 0.4, label="torchtrt_c / eager")
    ax.bar([x + 0.2 for x in xs], ind, 0.4, label="torchtrt_c / Inductor")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_yscale("log")
    ax.set_ylabel("latency ratio (below 1: torchtrt_c faster)")
    ax.set_xticks(list(xs))
    ax.set_xticklabels(labels, rotation=60, ha="right", fontsize=7)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("json", nargs="+")
    ap.add_argument("--png", default=None)
    a = ap.parse_args()
    rs = [json.loads(pathlib.Path(p).read_text()) for p in a.json]
    print(markdown(rs))
    if a.png:
        chart(rs, a.png)
