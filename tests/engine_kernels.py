"""The kernel descriptions ("k1 qgemm: ... (native)") of a compiled module's engines, for tests
that check which kernels a model became. A torch segment (a part left to torch on the GPU) fails
the calling test: these models must compile to engines only.

    ks = kernels(gm)
    assert any("(native)" in k for k in ks if " qconv2d:" in k)
"""
from torchtrt_c import _C


def kernels(gm):
    out = []
    for name, mod in gm.named_children():
        assert not name.startswith("_run_on_gpu_"), f"a torch segment: {name}"
        if name.startswith("_run_on_acc_"):
            out += _C.Engine.deserialize(bytes(mod.engine.numpy()), cache_dir="").info()["kernels"]
    return out
