"""LLM generation with the KV cache in engines: compile_llm, load_llm (docs/llm.md)."""
from torchtrt_c.llm._generator import compile_llm  # noqa: F401
from torchtrt_c.llm._model import CompiledCausalLM, load_llm  # noqa: F401
