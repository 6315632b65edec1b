"""Progress and debug output for compiles, through logging.getLogger("torchtrt_c").

    p = Progress(debug=False)
    p.phase("capture (torch.export)"); ...; p.engine(1, 3, "_run_on_acc_0"); ...; p.done()
    p.profile                 # the CompileProfile (torchtrt_c/dynamo/_profile.py)

Every step is logged at INFO. Long compiles (past `SHOW_AFTER_S`, or always with debug=True)
also show their progress, where the "torchtrt_c" logger lets a warning through: so
`logging.getLogger("torchtrt_c").setLevel(logging.ERROR)` or `logging.disable()` silences it,
like the library's warnings. In a Jupyter kernel the progress is one output line that each step
rewrites (an IPython display updated in place). Elsewhere (a terminal, a log file) it is a plain
text line per step on stderr: whole lines, flushed, no carriage returns or terminal codes. While
one step runs long (an engine build in C, which releases the GIL), a line saying it is still
running follows every `HEARTBEAT_S`.

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


def progress_enabled() -> bool:
    """Progress shows at the level of a warning: silencing the logger's warnings silences it."""
    return log.isEnabledFor(logging.WARNING)


def in_notebook() -> bool:
    """True in a Jupyter kernel (an IPython shell with a kernel; not a terminal IPython).
    Looks only at an IPython that is already imported: a script never imports it."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    try:
        shell = ipython.get_ipython()
    except Exception:  # an IPython too old or half torn down: treat as no notebook
        return False
    return shell is not None and getattr(shell, "kernel", None) is not None


class _Lines:
    """A text line per step on a stream (stderr unless given)."""

    def __init__(self, stream=None):
        self.stream = stream

    def show(self, line: str) -> None:
        print(line, file=self.stream or sys.stderr, flush=True)


class _NotebookLine:
    """One output line in the running cell, rewritten by each step."""

    def __init__(self):
        self.handle = None

    def show(self, line: str) -> None:
        from IPython.display import display
        data = {"text/plain": line}
        if self.handle is None:
            self.handle = display(data, raw=True, display_id=True)
        else:
            self.handle.update(data, raw=True)


class Progress:
    def __init__(self, debug: bool = False, stream=None):
        self.t0 = time.perf_counter()
        self.debug = debug
        self.stream = stream
        # a stream given by the caller gets lines; otherwise the notebook's line where there is one
        self._display = _NotebookLine() if stream is None and in_notebook() else _Lines(stream)
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

    def _print(self, text: str) -> None:
        """Text asked for with debug=True (the profile table): plain lines on the stream."""
        try:
            print(text, file=self.stream or sys.stderr, flush=True)
        except (ValueError, OSError):  # a closed stream (a notebook torn down): output is optional
            pass

    def _show(self, msg: str) -> None:
        if not progress_enabled():
            return
        try:
            self._display.show(f"[torchtrt_c {self._elapsed():6.1f}s] {msg}")
        except (ValueError, OSError):  # a closed stream (a notebook torn down): progress is optional
            return
        self.shown = True

    def _emit(self, msg: str) -> None:
        log.info(msg)
        if self.debug or self._elapsed() >= SHOW_AFTER_S:
            self._show(msg)
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
                self._show(f"... still at: {step[0]}")

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
