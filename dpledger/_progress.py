"""A progress indication on stderr: a redrawn bar on a terminal, a few plain lines otherwise (logs, pipes).

Examples
--------
>>> import io
>>> stream = io.StringIO()
>>> bar = Progress("demo", stream=stream, tty=False)
>>> for i in range(1, 11):
...     bar(i, 10)
>>> bar.done()
>>> print(stream.getvalue().splitlines()[-1].split(" (")[0])
demo: 10/10 100%
"""

import sys
import time

__all__ = ["Progress"]

_WIDTH = 24


class Progress:
    """Callable ``progress(done, total)``; ``label`` names the work, ``set_label`` changes it between steps."""

    def __init__(self, label, *, enabled=True, stream=None, tty=None):
        self.label = label
        self.enabled = enabled
        self.stream = sys.stderr if stream is None else stream
        self.tty = (hasattr(self.stream, "isatty") and self.stream.isatty()) if tty is None else tty
        self.start = time.perf_counter()
        self._last_decile = -1
        self._drawn = False

    def set_label(self, label):
        self.label = label
        self._last_decile = -1

    def __call__(self, done, total):
        if not self.enabled:
            return
        frac = 1.0 if total <= 0 else min(max(done / total, 0.0), 1.0)
        elapsed = time.perf_counter() - self.start
        if self.tty:
            filled = int(round(frac * _WIDTH))
            bar = "#" * filled + "-" * (_WIDTH - filled)
            self.stream.write(f"\r{self.label} [{bar}] {done}/{total} {elapsed:6.1f} s\x1b[K")
            self._drawn = True
        else:
            decile = int(frac * 10)
            if decile == self._last_decile:
                return
            self._last_decile = decile
            self.stream.write(f"{self.label}: {done}/{total} {100 * frac:.0f}% ({elapsed:.1f} s)\n")
        self.stream.flush()

    def note(self, text):
        """A line of its own (finishes a bar being drawn)."""
        if not self.enabled:
            return
        self.done()
        self.stream.write(text + "\n")
        self.stream.flush()

    def done(self):
        if self.enabled and self.tty and self._drawn:
            self.stream.write("\n")
            self.stream.flush()
        self._drawn = False
