"""Engine blob costs of one model (issue 15): serialise, deserialise, and wrap the blob in an
EngineModule, each timed three times on the engine a compile built.

    PYTHONPATH=$PWD python3 bench/serialize_time.py [ROOT] [--model hf_bert]

ROOT (default: this checkout) is the tree whose tests/ and bench/ helpers are used, so that an
older build (PYTHONPATH=/tmp/before) can be timed with the same models.
"""
import argparse
import os
import sys
import time
from scratch_dirs import scratch_dir  # noqa: E402  (bench/: removed at exit)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("root", nargs="?", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--model", default="hf_bert")
    args = ap.parse_args()
    sys.path[:0] = [os.path.join(args.root, "tests"), os.path.join(args.root, "bench")]
    import torchtrt_c
    import torchtrt_c._C as C
    from torchtrt_c.runtime import ENGINES
    from torchtrt_c.runtime._module import EngineModule
    from hf_models import build_hf
    m, make = build_hf(args.model, "full")
    m = m.eval()
    x = make(1)
    gm = torchtrt_c.compile(m, inputs=[x], min_block_size=1, engine_cache_dir=scratch_dir())
    em = [c for _, c in gm.named_children() if isinstance(c, EngineModule)][0]
    e, _ = ENGINES.get(em.engine_meta.id, em.engine)
    for _ in range(3):
        t = time.perf_counter()
        b = e.serialize()
        t1 = time.perf_counter() - t
        t = time.perf_counter()
        C.Engine.deserialize(b)
        t2 = time.perf_counter() - t
        t = time.perf_counter()
        EngineModule(b, em.engine_meta)
        t3 = time.perf_counter() - t
        print(f"{torchtrt_c.__file__}: serialize {t1:.2f}s ({len(b) / 1e6:.0f} MB), deserialize {t2:.2f}s, "
              f"EngineModule(bytes) {t3:.2f}s", flush=True)


if __name__ == "__main__":
    main()
