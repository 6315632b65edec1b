"""Without CUDA/OpenCL shared memory (no libcuda, or an OpenCL device without
cl_khr_external_memory, e.g. PoCL) the runtime says why and keeps the host path."""
import numpy as np
import pytest

import torchtrt_c._C as C
from torchtrt_c import runtime
from torchtrt_c.runtime import _cuda_interop


def _engine():
    g = C.Graph()
    x = g.add_input("x", ("tensor", "float32", [3]))
    (y,) = g.add_node("aten.relu.default", [x], [("tensor", "float32", [3])])
    g.set_outputs([y])
    return C.Engine.build(g, cache_dir="")


def test_interop_answers_with_a_reason():
    e = _engine()
    ok, why = C.cuda_interop(e, 0)
    if ok:
        pytest.skip("this machine shares memory between CUDA and OpenCL (tests/gpu covers it)")
    assert why and ("libcuda" in why or "does not advertise" in why or "CUDA device" in why
                    or "UUID" in why or "loader" in why), why
    with pytest.raises(C.Error, match="shared memory unavailable"):
        C.shared_alloc(e, 0, 1024)
    # the engine itself is unaffected
    out = np.empty(3, np.float32)
    e.execute([np.array([-1, 0, 2], np.float32)], [out])
    assert out.tolist() == [0, 0, 2]


def test_bad_arguments_raise():
    e = _engine()
    live = C.shared_stats()["live"]
    with pytest.raises(TypeError, match="Engine"):
        C.cuda_interop(object(), 0)
    with pytest.raises(TypeError, match="shared buffer"):
        C.execute_shared(e, [(object(), (3,), 12)], [(None, 12)], None, 1)
    with pytest.raises(TypeError, match="shared buffer"):
        C.shared_stream_wait(object(), 0, 1)
    with pytest.raises(ValueError, match="rank 2, the engine expects rank 1"):
        C.execute_shared(e, [(None, (3, 1), 0)], [(None, 12)], None, 1)
    with pytest.raises(ValueError, match="12 bytes but no buffer"):
        C.execute_shared(e, [(None, (3,), 12)], [(None, 12)], None, 1)
    with pytest.raises(TypeError, match="expected \\(buffer, shape, nbytes\\)"):
        C.execute_shared(e, [5], [(None, 12)], None, 1)
    with pytest.raises(C.InputError, match="takes 1 inputs"):
        C.execute_shared(e, [], [], None, 1)
    assert C.shared_stats()["live"] == live


def test_status_api():
    st = runtime.cuda_path()
    assert set(st) == {"path", "reason"}
    assert isinstance(_cuda_interop.ENABLED, bool)
