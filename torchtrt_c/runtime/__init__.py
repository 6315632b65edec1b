"""Runtime: the execute_engine op, the engine submodule, the engine cache."""
from torchtrt_c.runtime._execute import ENGINES, execute_engine  # noqa: F401
from torchtrt_c.runtime._cuda_interop import shared_stats, status as cuda_path  # noqa: F401
from torchtrt_c.runtime._module import EngineModule  # noqa: F401
from torchtrt_c.runtime._shapes import Dim, EngineMeta  # noqa: F401
from torchtrt_c.runtime._bench import benchmark_resident, profile_engines  # noqa: F401,E402
from torchtrt_c.runtime._memory import memory_stats  # noqa: F401,E402
