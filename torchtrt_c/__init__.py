"""torchtrt_c: compile PyTorch models into OpenCL engines (a vendor-neutral Torch-TensorRT)."""
from torchtrt_c._C import (  # noqa: F401
    BuildError,
    DeviceError,
    DeviceNotFoundError,
    Error,
    InputError,
    OpenCLError,
    ParseError,
    PartitionError,
    SerializationError,
    UnsupportedOperatorError,
    VerifyError,
)

__version__ = "0.1.0"


def _register_build_worker() -> None:
    # Program builds missing from the binary cache run in worker processes on drivers that
    # compile one program at a time per process (csrc/backend/build_procs.c): each worker is
    # this interpreter loading only the extension module.
    import sys

    from torchtrt_c import _C

    if sys.executable and getattr(_C, "__file__", None):
        _C._set_build_worker(sys.executable, _C.__file__)


_register_build_worker()

from torchtrt_c._input import Input  # noqa: E402,F401
from torchtrt_c._settings import CompilationSettings  # noqa: E402,F401
from torchtrt_c import settings  # noqa: E402,F401  (TORCHTRT_C_* settings: docs/settings.md)
from torchtrt_c._devices import Device, default_device, devices  # noqa: E402,F401
from torchtrt_c import runtime  # noqa: E402,F401  (registers torch.ops.torchtrt_c.execute_engine)
from torchtrt_c._compile import compile, load, save  # noqa: E402,F401
from torchtrt_c import dynamo  # noqa: E402,F401
from torchtrt_c.dynamo.lowering import register_decomposition  # noqa: E402,F401
from torchtrt_c.dynamo.partitioning import get_graph_converter_support  # noqa: E402,F401
from torchtrt_c import backend  # noqa: E402,F401  (registers torch.compile backend "torchtrt_c")
from torchtrt_c.llm import CompiledCausalLM, compile_llm, load_llm  # noqa: E402,F401
