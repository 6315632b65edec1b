"""The TF32 policy's settings: allow_tf32_matmul / allow_tf32_conv follow torch's switches by
default (read when the settings are made), force either way, disable_tf32 turns both off, and
the resolved policy is part of the engine cache key and the module cache key. No device."""
import pytest
import torch

from torchtrt_c._settings import CompilationSettings
from torchtrt_c.dynamo._module_cache import _settings_text


@pytest.fixture
def switches():
    """Restores torch's two switches after the test."""
    mm, cv = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = mm, cv


@pytest.mark.parametrize("mm, cv", [(False, True), (True, False), (True, True), (False, False)])
def test_default_follows_torch_switches(switches, mm, cv):
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = mm, cv
    s = CompilationSettings.from_kwargs()
    assert s.allow_tf32_matmul is None and s.allow_tf32_conv is None and s.disable_tf32 is False
    assert s.tf32_policy() == {"matmul": mm, "conv": cv}


def test_policy_is_read_once_at_compile_time(switches):
    torch.backends.cuda.matmul.allow_tf32 = False
    s = CompilationSettings.from_kwargs()
    torch.backends.cuda.matmul.allow_tf32 = True   # flipped mid-compile: the compile keeps its answer
    assert s.tf32_policy()["matmul"] is False
    assert CompilationSettings.from_kwargs().tf32_policy()["matmul"] is True


def test_set_float32_matmul_precision_counts(switches):
    old = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("high")
        assert CompilationSettings.from_kwargs().tf32_policy()["matmul"] is True
        torch.set_float32_matmul_precision("highest")
        assert CompilationSettings.from_kwargs().tf32_policy()["matmul"] is False
    finally:
        torch.set_float32_matmul_precision(old)


def test_settings_force_either_way(switches):
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = False, True
    s = CompilationSettings.from_kwargs(allow_tf32_matmul=True, allow_tf32_conv=False)
    assert s.tf32_policy() == {"matmul": True, "conv": False}
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = True, False
    s = CompilationSettings.from_kwargs(allow_tf32_matmul=False, allow_tf32_conv=True)
    assert s.tf32_policy() == {"matmul": False, "conv": True}


def test_disable_tf32_turns_both_off(switches):
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = True, True
    assert CompilationSettings.from_kwargs(disable_tf32=True).tf32_policy() == {"matmul": False, "conv": False}
    # an explicit False alongside is consistent
    s = CompilationSettings.from_kwargs(disable_tf32=True, allow_tf32_conv=False)
    assert s.tf32_policy() == {"matmul": False, "conv": False}


@pytest.mark.parametrize("kw, err, msg", [
    ({"allow_tf32_matmul": 1}, TypeError, "allow_tf32_matmul"),
    ({"allow_tf32_conv": "yes"}, TypeError, "allow_tf32_conv"),
    ({"disable_tf32": None}, TypeError, "disable_tf32"),
    ({"disable_tf32": True, "allow_tf32_matmul": True}, ValueError, "contradict"),
    ({"disable_tf32": True, "allow_tf32_conv": True}, ValueError, "contradict"),
])
def test_bad_tf32_settings_raise(kw, err, msg):
    with pytest.raises(err, match=msg):
        CompilationSettings.from_kwargs(**kw)


def test_cache_keys_differ_by_resolved_policy(switches):
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = False, True
    base = CompilationSettings.from_kwargs()
    forced = {
        "mm on": CompilationSettings.from_kwargs(allow_tf32_matmul=True),
        "conv off": CompilationSettings.from_kwargs(allow_tf32_conv=False),
        "both off": CompilationSettings.from_kwargs(disable_tf32=True),
    }
    for what, s in forced.items():
        assert s.engine_key_fields() != base.engine_key_fields(), what
        assert _settings_text(s) != _settings_text(base), what
    # same settings (None), torch's switch flipped: the keys follow the switch
    torch.backends.cuda.matmul.allow_tf32 = True
    flipped = CompilationSettings.from_kwargs()
    assert flipped.engine_key_fields() != base.engine_key_fields()
    assert _settings_text(flipped) != _settings_text(base)
    # and the forced setting that resolves to the same policy as the switch: same engine key
    assert flipped.engine_key_fields() == forced["mm on"].engine_key_fields()
    assert base.engine_key_fields()["tf32_matmul"] is False and base.engine_key_fields()["tf32_conv"] is True
