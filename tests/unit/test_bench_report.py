"""bench/report.py: results of several runs merged per device (one row per configuration, a
measured row beating a skipped one, zoo order), Markdown tables and the ratio chart."""
import importlib.util
import json
import pathlib

import pytest

# loaded by path under its own name: putting bench/ on sys.path would shadow module names
_spec = importlib.util.spec_from_file_location(
    "ttc_bench_report", pathlib.Path(__file__).resolve().parents[2] / "bench" / "report.py")
report = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(report)


def _t(ms):
    return {"median_ms": ms, "p10_ms": ms * 0.9, "p90_ms": ms * 1.1, "runs": 5}


def _row(model, batch, prec, eager, ttc, resident=None):
    r = {"model": model, "batch": batch, "precision": prec, "eager": _t(eager), "inductor": _t(eager * 0.8),
         "ttc_end_to_end": _t(ttc), "ratio_ttc_over_eager": ttc / eager, "ratio_ttc_over_inductor": ttc / (eager * 0.8),
         "ttc_engines": 1, "ttc_torch_segments": 0, "ttc_compile_cold_s": 3.0, "ttc_compile_warm_s": 1.0,
         "ttc_max_rel_err": 1e-6, "ttc_peak_bytes": 3 << 20, "eager_peak_bytes": 5 << 20}
    if resident is not None:
        r["ttc_resident"] = _t(resident)
        r["ratio_resident_over_eager"] = resident / eager
    return r


def _result(device, tdev, rows, **extra):
    meta = {"date": "2026-11-21", "opencl_device": {"name": device, "platform": "P"}, "torch_device": tdev,
            "torch_device_name": "X", "torch": "2", "python": "3", "torchtrt_c": "0.1", "cpu_count": 2,
            "torch_threads": 2, "command": "bench/run.py ...", "tag": extra.pop("tag", "")}
    return {"meta": meta, "models": rows, "kernels": extra.pop("kernels", {}), "partition": extra.pop("partition", None)}


def test_merge_keeps_one_row_per_configuration_in_zoo_order():
    skipped = {"model": "gpt2", "batch": 8, "precision": "fp32", "error": "skipped: --deadline 400 s reached"}
    a = _result("H200", "cuda", [_row("gpt2", 1, "fp32", 3.0, 20.0), skipped, _row("resnet18", 32, "fp16", 1, 2)],
                tag="part 1")
    b = _result("H200", "cuda", [_row("gpt2", 8, "fp32", 10.0, 50.0, resident=40.0), _row("resnet18", 1, "fp32", 1, 1.5)],
                tag="part 3")
    cpu = _result("PoCL", "cpu", [_row("bert_base", 1, "fp32", 50, 60)])
    merged = report.merge([a, cpu, b])
    assert len(merged) == 2
    gpu = next(m for m in merged if m["meta"]["torch_device"] == "cuda")
    keys = [(r["model"], r["precision"], r["batch"]) for r in gpu["models"]]
    assert keys == [("resnet18", "fp32", 1), ("resnet18", "fp16", 32), ("gpt2", "fp32", 1), ("gpt2", "fp32", 8)]
    assert "error" not in gpu["models"][-1]
    assert [c[0] for c in gpu["commands"]] == ["part 1", "part 3"]


def test_markdown_tables():
    host = _row("resnet50", 1, "fp32", 2.0, 2.2, resident=1.6)
    host.update(eager_from_host=_t(2.4), ttc_from_host=_t(2.0), ratio_from_host=2.0 / 2.4)
    res = _result("H200", "cuda", [host, {"model": "gpt2", "batch": 8, "precision": "fp16",
                                          "error": "skipped: --deadline 400 s reached"}],
                  kernels={"elementwise": [{"kernel": "relu", "ttc_GBs": 100.0, "opencl_copy_GBs": 200.0}]},
                  partition=[{"nodes": 1000, "strategy": "fast", "seconds": 0.001}])
    md = report.markdown([res])
    lines = md.splitlines()
    head = next(l for l in lines if l.startswith("| model | batch"))
    row = next(l for l in lines if l.startswith("| resnet50 | 1 | fp32 |"))
    assert row.count("|") == head.count("|"), (head, row)
    assert "| 0.80 |" in row  # resident / eager
    skipped = next(l for l in lines if l.startswith("| gpt2 | 8 | fp16 |"))
    assert "skipped: --deadline" in skipped and "failed" not in skipped
    assert skipped.count("|") == head.count("|"), skipped
    assert "from host tensors" in md and "| 0.83 |" in md
    assert "#### kernels: elementwise" in md and "#### partitioner scale" in md


def test_chart_and_cli(tmp_path):
    pytest.importorskip("matplotlib")
    res = _result("H200", "cuda", [_row("resnet18", 1, "fp32", 1.0, 2.0, resident=0.8)])
    p = tmp_path / "r.json"
    p.write_text(json.dumps(res))
    report.main([str(p), "--md", str(tmp_path / "r.md"), "--png", str(tmp_path / "r.png")])
    assert (tmp_path / "r.png").stat().st_size > 1000
    assert "resnet18" in (tmp_path / "r.md").read_text()
