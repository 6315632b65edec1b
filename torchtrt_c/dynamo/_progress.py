"""Progress and debug output for compiles, through logging.getLogger("torchtrt_c").

    p = Progress(debug=False)
    p.phase("capture"); ...; p.engine(1, 3, "_run_on_acc_0"); ...; p.done()

Every step is logged at INFO. Long compiles (past `SHOW_AFTER_S`, or always with debug=True)
also get a plain text line per step on stderr, which shows in a terminal and in Jupyter.
"""
from __future__ import annotations

import logging
import sys
import time

log = logging.getLogger("torchtrt_c")
SHOW_AFTER_S = 3.0


class Progress:
    def __init__(self, debug: bool = False, stream=None):
        self.t0 = time.perf_counter()
        self.debug = debug
        self.stream = stream
        self.current = None
        self.shown = False

    def _emit(self, msg: str) -> None:
        log.info(msg)
        elapsed = time.perf_counter() - self.t0
        if self.debug or elapsed >= SHOW_AFTER_S:
            out = self.stream or sys.stderr
            print(f"[torchtrt_c {elapsed:6.1f}s] {msg}", file=out, flush=True)
            self.shown = True

    def phase(self, name: str) -> None:
        self.current = name
        self._emit(f"phase: {name}")

    def engine(self, i: int, n: int, name: str) -> None:
        self._emit(f"building engine {i} of {n} ({name})")

    def done(self) -> None:
        self._emit(f"done in {time.perf_counter() - self.t0:.2f}s")

    def dump(self, what: str, text) -> None:
        """text: a str, or a callable making it (big graphs print slowly: only with debug)."""
        if self.debug:
            log.debug("---- %s ----\n%s", what, text() if callable(text) else text)
