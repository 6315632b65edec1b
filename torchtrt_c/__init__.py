"""torchtrt_c: compile PyTorch models into OpenCL engines (a vendor-neutral Torch-TensorRT)."""
from torchtrt_c._C import (  # noqa: F401
    BuildError,
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
