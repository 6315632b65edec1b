"""The dynamo (torch.export) frontend: compile, lowering, partitioning."""
from torchtrt_c.dynamo import lowering, partitioning  # noqa: F401
from torchtrt_c.dynamo._compiler import compile_module, wait_engine_cache_writes  # noqa: F401
from torchtrt_c.dynamo import _quant  # noqa: F401  (registers torch.ops.torchtrt_c.qconv2d / qlinear)
from torchtrt_c.dynamo._profile import CompileProfile, last_compile_profile  # noqa: F401
from torchtrt_c.dynamo.partitioning import get_graph_converter_support  # noqa: F401


def compile(module, inputs=None, arg_inputs=None, kwarg_inputs=None, **settings):
    """Same as torchtrt_c.compile(module, ir="dynamo", ...)."""
    from torchtrt_c._compile import compile as _compile
    return _compile(module, ir="dynamo", inputs=inputs, arg_inputs=arg_inputs,
                    kwarg_inputs=kwarg_inputs, **settings)
