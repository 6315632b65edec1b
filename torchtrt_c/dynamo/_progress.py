"""Progress and debug output for compiles, through logging.getLogger("torchtrt_c").

    p = Progress(debug=False)
    p.phase("capture"); ...; p.engine(1, 3, "_run_on_acc_0"); ...; p.done()
    p.profile                 # the CompileProfile (torchtrt_c/dynamo/_profile.py)

Every step is logged at INFO. Long compiles (past `SHOW_AFTER_S`, or always with debug=True)
also get a plain text line per step on stderr: whole lines, flushed, no carriage returns or
terminal codes, so they show the same in a terminal, a log file and a Jupyter cell (ipykernel
forwards sys.stderr). While one step runs long (an engine build in C, which releases the
GIL), a line saying it is still running follows every `HEARTBEAT_S`.

Each phase() ends the previous phase and starts the next in the compile profile, so the
profile's phases are exactly the steps the progress shows.
"""
from __future__ import annotations

import logging
import sys
import threading
import time

from torchtrt_c.dynamo._profile import CompileProfile

log = logging.getLogger("torchtrt_c")
SHOW_AFTER_S = 3.0
HEARTBEAT_S = 10.0


class Progress:
    def __init__(self, debug: bool = False, stream=None):
        self.t0 = time.perf_counter()
        self.debug = debug
        self.stream = stream
        self.current = None
        self.shown = False
        self.profile = CompileProfile()
        self._phase_t = None
        self._step = None        # (message, start) of the step in progress, for the heartbeat
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._beat = None

    def _elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def _print(self, msg: str) -> None:
        out = self.stream or sys.stderr
        try:
            print(f"[torchtrt_c {self._elapsed():6.1f}s] {msg}", file=out, flush=True)
        except (ValueError, OSError):  # a closed stream (a notebook torn down): progress is optional
            pass
        self.shown = True

    def _emit(self, msg: str) -> None:
        log.info(msg)
        if self.debug or self._elapsed() >= SHOW_AFTER_S:
            self._print(msg)
        with self._lock:
            self._step = (msg, time.perf_counter())

    def _heartbeat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S / 2):
            with self._lock:
                step = self._step
            if step is None:
                continue
            running = time.perf_counter() - step[1]
            if running >= HEARTBEAT_S:
                with self._lock:
                    if self._step is step:  # one line per HEARTBEAT_S of the same step
                        self._step = (step[0], time.perf_counter())
                    else:
                        continue
                self._print(f"... still at: {step[0]}")

    def _start_heartbeat(self) -> None:
        if self._beat is None:
            self._beat = threading.Thread(target=self._heartbeat, name="torchtrt_c-progress", daemon=True)
            self._beat.start()

    def _close_phase(self) -> None:
        if self.current is not None:
            self.profile.phases.append([self.current, time.perf_counter() - self._phase_t])

    def phase(self, name: str) -> None:
        self._close_phase()
        names = {p[0] for p in self.profile.phases}
        while name in names:  # a phase run again (re-decomposition) keeps its own row
            name = f"{name} (again)"
        self.current = name
        self._phase_t = time.perf_counter()
        self._start_heartbeat()
        self._emit(f"phase: {name}")

    def engine(self, i: int, n: int, name: str) -> None:
        self._emit(f"building engine {i} of {n} ({name})")

    def done(self) -> CompileProfile:
        self._close_phase()
        self.current = None
        self._stop.set()
        self.profile.finish()
        self._emit(f"done in {time.perf_counter() - self.t0:.2f}s")
        with self._lock:
            self._step = None
        log.info("%s", self.profile.summary())
        if self.debug:
            text = str(self.profile)
            log.debug("%s", text)
            self._print(text)
        return self.profile

    def close(self) -> None:
        """Stops the heartbeat without finishing the profile (a compile that raised)."""
        self._stop.set()
        with self._lock:
            self._step = None

    def dump(self, what: str, text) -> None:
        """text: a str, or a callable making it (big graphs print slowly: only with debug)."""
        if self.debug:
            log.debug("---- %s ----\n%s", what, text() if callable(text) else text)
