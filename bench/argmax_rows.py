"""Greedy decoding's argmax over the vocabulary, torch.argmax against a two-stage form (the row
as G groups: each group's max and its index, then the argmax of the G maxima), by device time
(CUDA events over 200 calls, medians of 5), for a decode step's logits [B, V].

    python bench/argmax_rows.py
"""
import statistics

import torch


def two_stage(x: torch.Tensor, g: int) -> torch.Tensor:
    B, V = x.shape
    m, i = x.view(B, g, V // g).max(-1)
    j = m.argmax(-1)
    return j * (V // g) + i.gather(1, j[:, None])[:, 0]


def timed(fn, reps=200):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(5):
        fn()
        s.record()
        for _ in range(reps):
            fn()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e) / reps * 1e3)
    return statistics.median(ts)


def main():
    dev = torch.device("cuda")
    print(f"# argmax over [B, V] on {torch.cuda.get_device_name(dev)}: us a call")
    for V in (128256, 32000, 151936):
        for B in (1, 8):
            for dt in (torch.float16, torch.float32):
                x = torch.randn(B, V, device=dev, dtype=dt)
                ref = x.argmax(-1)
                row = [f"B={B} V={V} {str(dt)[6:]}: argmax {timed(lambda: x.argmax(-1)):.1f}"]
                for g in (128, 256, 512, 1024):
                    if V % g:
                        continue
                    assert torch.equal(two_stage(x, g), ref)
                    row.append(f"G={g} {timed(lambda: two_stage(x, g)):.1f}")
                print(", ".join(row), flush=True)


if __name__ == "__main__":
    main()
