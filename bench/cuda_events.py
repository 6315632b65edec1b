"""CUDA-event timing shared by the GPU benchmarks and probes."""
import torch


def events_ms(fn, runs=30, warm=0):
    """Mean milliseconds per call of fn over `runs` calls between two CUDA events on torch's current
    stream, after `warm` untimed calls (then synchronised)."""
    for _ in range(warm):
        fn()
    if warm:
        torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(runs):
        fn()
    e.record()
    torch.cuda.synchronize()
    return s.elapsed_time(e) / runs
