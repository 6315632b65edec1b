"""Python-side lowering: the decomposition registry and tables (see _decompositions.py)."""
from torchtrt_c.dynamo.lowering._decompositions import (  # noqa: F401
    NATIVE_OPS,
    TORCHTRT_C_DECOMPOSITIONS,
    get_decompositions,
    register_decomposition,
    torch_disabled_decompositions,
    torch_enabled_decompositions,
)
