"""Merges bench/run.py JSON results into Markdown tables and a PNG chart of the ratios.

    python bench/report.py bench/out/gpu/part1.json bench/out/gpu/part2.json --md gpu.md --png gpu.png
    python bench/report.py bench/out/cpu/results.json --md cpu.md --png cpu.png

Files from the same OpenCL device and torch device (e.g. the two parts of a GPU run) become one
table; rows keep the zoo's order (model, precision, batch). Ratios are torchtrt_c's median over
the other's: below 1 means torchtrt_c is faster.
"""
from __future__ import annotations

import argparse
import json
import pathlib

MODEL_ORDER = ["resnet18", "resnet50", "mobilenet_v2", "vit_b16", "bert_base", "gpt2"]


def _ms(d):
    return f"{d['median_ms']:.2f} ({d['p10_ms']:.2f}-{d['p90_ms']:.2f})" if d else "-"


def _f(v, fmt="{:.2f}"):
    return fmt.format(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else "-"


def _mb(v):
    return f"{v / 2**20:.0f}" if isinstance(v, (int, float)) and v else "-"


def _device_key(res):
    m = res["meta"]
    return (m["opencl_device"].get("name", "?"), m["torch_device"], m.get("torch_device_name", ""))


def merge(results_list):
    """One result per (OpenCL device, torch device): models, kernels and partition rows merged,
    meta of the first file plus every file's command."""
    merged = {}
    for res in results_list:
        key = _device_key(res)
        if key not in merged:
            merged[key] = {"meta": dict(res["meta"]), "models": [], "kernels": {}, "partition": None,
                           "commands": []}
        m = merged[key]
        m["commands"].append((res["meta"].get("tag", ""), res["meta"]["command"], res["meta"].get("elapsed_s")))
        m["models"] += res.get("models") or []
        for k, rows in (res.get("kernels") or {}).items():
            m["kernels"].setdefault(k, []).extend(rows)
        if res.get("partition"):
            m["partition"] = res["partition"]
    for m in merged.values():
        # one row per configuration: a measured row wins over one skipped/failed elsewhere
        best = {}
        for r in m["models"]:
            key = (r["model"], r["precision"], r["batch"])
            ok = "error" not in r and "ttc_error" not in r
            if key not in best or ok or not ("error" not in best[key] and "ttc_error" not in best[key]):
                best[key] = r
        m["models"] = list(best.values())
        order = {n: i for i, n in enumerate(MODEL_ORDER)}
        prec = {"fp32": 0, "fp16": 1}
        m["models"].sort(key=lambda r: (order.get(r["model"], 99), r["model"], prec.get(r["precision"], 9), r["batch"]))
    return list(merged.values())


def _model_rows(rows):
    out = ["| model | batch | prec | eager ms | inductor ms | ttc end-to-end ms | ttc resident ms | "
           "e2e/eager | e2e/inductor | resident/eager | resident/inductor | engines | torch segs | "
           "ttc compile cold/warm s | inductor compile s | max rel err | ttc peak MB | eager peak MB |",
           "|" + "---|" * 18]
    for r in rows:
        head = f"| {r['model']} | {r['batch']} | {r['precision']} |"
        if "error" in r or "ttc_error" in r:
            err = (r.get("error") or r.get("ttc_error")).replace("|", "/").replace("\n", " ")
            what = err if err.startswith("skipped") else "failed: " + err
            out.append(f"{head} {_ms(r.get('eager'))} | {_ms(r.get('inductor'))} | {what[:150]} |" + " |" * 12)
            continue
        ind = _ms(r.get("inductor")) if "inductor" in r else (r.get("inductor_error", "-")[:60].replace("|", "/"))
        res = _ms(r.get("ttc_resident")) if "ttc_resident" in r else r.get("ttc_resident_error", "-")[:60]
        out.append(
            f"{head} {_ms(r['eager'])} | {ind} | {_ms(r['ttc_end_to_end'])} | {res} | "
            f"{_f(r.get('ratio_ttc_over_eager'))} | {_f(r.get('ratio_ttc_over_inductor'))} | "
            f"{_f(r.get('ratio_resident_over_eager'))} | {_f(r.get('ratio_resident_over_inductor'))} | "
            f"{r.get('ttc_engines')} | {r.get('ttc_torch_segments')} | "
            f"{_f(r.get('ttc_compile_cold_s'), '{:.1f}')}/{_f(r.get('ttc_compile_warm_s'), '{:.1f}')} | "
            f"{_f(r.get('inductor_compile_s'), '{:.1f}')} | {_f(r.get('ttc_max_rel_err'), '{:.1e}')} | "
            f"{_mb(r.get('ttc_peak_bytes'))} | {_mb(r.get('eager_peak_bytes', (r['eager'] or {}).get('peak_bytes')))} |")
    return out


def _generic_rows(rows):
    keys = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    out = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    for r in rows:
        cells = []
        for k in keys:
            v = r.get(k, "")
            cells.append(_f(v, "{:.3g}" if isinstance(v, float) and abs(v) < 0.01 else "{:.2f}")
                         if isinstance(v, float) else str(v).replace("|", "/"))
        out.append("| " + " | ".join(cells) + " |")
    return out


def markdown(results_list) -> str:
    out = []
    for res in merge(results_list):
        m = res["meta"]
        dev = m["opencl_device"]
        out.append(f"### {dev.get('name', '?')} (OpenCL, {dev.get('platform', '?')}) vs torch on {m['torch_device']} "
                   f"({m.get('torch_device_name', '')}), {m['date']}")
        out.append(f"torch {m['torch']}, Python {m['python']}, torchtrt_c {m['torchtrt_c']}, "
                   f"{m['cpu_count']} CPUs, torch threads {m['torch_threads']}.")
        for tag, cmd, el in res.get("commands", [(m.get("tag", ""), m["command"], m.get("elapsed_s"))]):
            out.append(f"- {tag + ': ' if tag else ''}`{cmd}`" + (f" ({el:.0f} s)" if el else ""))
        out.append("")
        if res.get("models"):
            out += _model_rows(res["models"])
            out.append("")
            gpu = m["torch_device"].startswith("cuda")
            out.append("Median (p10-p90) ms. Ratios: torchtrt_c median / the other's median (below 1: torchtrt_c "
                       "faster). End to end: compiled module called with tensors on the torch device"
                       + (" (CUDA tensors: the engines' PTX on torch's stream through the CUDA driver on "
                          "NVIDIA, else on memory shared with OpenCL where the driver allows it, else "
                          "through host copies; each row's cuda_path in the JSON says which)"
                          if gpu else "") + ". Resident: engines' kernels with inputs already in OpenCL buffers "
                       "(plus torch fallback segments)" + ("" if gpu else "; on a CPU OpenCL device engines use host "
                                                            "memory directly, so resident is end to end minus Python/op "
                                                            "overhead") + ". Peak: ttc = engines' device memory "
                       "(constants + arena); eager = " + ("torch.cuda.max_memory_allocated over one call (weights "
                                                          "included)." if gpu else "peak RSS growth during one call "
                                                          "(weights excluded)."))
            out.append("")
        host = [r for r in res.get("models", []) if "ttc_from_host" in r]
        if host:
            out.append("#### from host tensors (input on the host, output back to the host, both sides)")
            out.append("| model | batch | prec | eager ms | ttc ms | ttc/eager |")
            out.append("|" + "---|" * 6)
            for r in host:
                out.append(f"| {r['model']} | {r['batch']} | {r['precision']} | {_ms(r['eager_from_host'])} | "
                           f"{_ms(r['ttc_from_host'])} | {_f(r.get('ratio_from_host'))} |")
            out.append("")
        for kind, rows in (res.get("kernels") or {}).items():
            if rows:
                out.append(f"#### kernels: {kind}")
                out += _generic_rows(rows)
                out.append("")
        if res.get("partition"):
            out.append("#### partitioner scale (bench/bench_partition.py: g.partition() on random DAGs)")
            out += _generic_rows(res["partition"])
            out.append("")
    return "\n".join(out) + "\n"


SERIES = [("ratio_ttc_over_eager", "end to end / eager"), ("ratio_ttc_over_inductor", "end to end / Inductor"),
          ("ratio_resident_over_eager", "resident / eager"), ("ratio_resident_over_inductor", "resident / Inductor")]


def chart(results_list, path):
    """One panel per device: four bars per row (end-to-end and resident over eager and
    Inductor), log scale, a line at 1."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = []
    for res in merge(results_list):
        rows = [r for r in res["models"] if "ratio_ttc_over_eager" in r]
        if rows:
            panels.append((res, rows))
    if not panels:
        return False
    width = max(8, 0.55 * max(len(rows) for _, rows in panels))
    fig, axes = plt.subplots(len(panels), 1, figsize=(width, 4.8 * len(panels)), squeeze=False)
    for ax, (res, rows) in zip(axes[:, 0], panels):
        xs = list(range(len(rows)))
        w = 0.8 / len(SERIES)
        for i, (key, label) in enumerate(SERIES):
            ax.bar([x - 0.4 + w * (i + 0.5) for x in xs], [r.get(key, float("nan")) for r in rows], w, label=label)
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_yscale("log")
        m = res["meta"]
        ax.set_title(f"{m['opencl_device'].get('name', '?')} (OpenCL) vs torch {m['torch_device']}, {m['date']}",
                     fontsize=10)
        ax.set_ylabel("torchtrt_c / other (below 1: faster)")
        ax.set_xticks(xs)
        ax.set_xticklabels([f"{r['model']} b{r['batch']} {r['precision']}" for r in rows], rotation=60, ha="right",
                           fontsize=7)
        ax.legend(fontsize=7, ncol=4)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", nargs="+")
    ap.add_argument("--md", default=None, help="write the tables here (also printed)")
    ap.add_argument("--png", default=None, help="write the ratio chart here (needs matplotlib)")
    a = ap.parse_args(argv)
    rs = [json.loads(pathlib.Path(p).read_text()) for p in a.json]
    md = markdown(rs)
    print(md)
    if a.md:
        pathlib.Path(a.md).write_text(md)
    if a.png:
        chart(rs, a.png)


if __name__ == "__main__":
    main()
