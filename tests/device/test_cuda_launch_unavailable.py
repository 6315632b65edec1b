"""Without libcuda (or with an OpenCL device that is not a CUDA GPU, e.g. PoCL), loading an
engine's program into CUDA is refused with a reason, and nothing else changes."""
import numpy as np
import pytest

import torchtrt_c._C as C


def _engine():
    g = C.Graph()
    x = g.add_input("x", ("tensor", "float32", [3]))
    (y,) = g.add_node("aten.relu.default", [x], [("tensor", "float32", [3])])
    g.set_outputs([y])
    return C.Engine.build(g, cache_dir="")


def test_refused_with_a_reason(monkeypatch):
    monkeypatch.delenv("TORCHTRT_C_CUDA_LAUNCH", raising=False)
    e = _engine()
    ok, why_driver = C.cuda_driver()
    assert isinstance(ok, bool) and isinstance(why_driver, str)
    cap, why = C.cuda_launch_new(e, 0)
    if cap is not None:
        pytest.skip("this machine launches engines through the CUDA driver (tests/gpu covers it)")
    if not ok:
        assert why == why_driver and "libcuda" in why, (why, why_driver)
    else:  # a CUDA driver, but the engine's device is not that GPU (PoCL) or has no UUID
        assert "UUID" in why or "CUDA device" in why or "not PTX" in why, why
    # the engine itself is unaffected
    out = np.empty(3, np.float32)
    e.execute([np.array([-1, 0, 2], np.float32)], [out])
    assert out.tolist() == [0, 0, 2]


def test_knob_refuses_first(monkeypatch):
    monkeypatch.setenv("TORCHTRT_C_CUDA_LAUNCH", "0")
    e = _engine()  # the knob is read into the engine's target when it is made
    cap, why = C.cuda_launch_new(e, 0)
    assert cap is None and why == "TORCHTRT_C_CUDA_LAUNCH=0", why


def test_bad_arguments_raise():
    e = _engine()
    with pytest.raises(TypeError, match="Engine"):
        C.cuda_launch_new(object(), 0)
    with pytest.raises(TypeError, match="CUDA engine"):
        C.cuda_launch_run(object(), [0], [(3,)], [0], 0, 0, 0)
    with pytest.raises(TypeError, match="CUDA engine"):
        C.cuda_launch_arena(e, [(3,)])
    with pytest.raises(TypeError, match="7 arguments"):
        C.cuda_launch_run(object())
