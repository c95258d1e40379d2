"""Shared helpers of the benchmark scripts: machine description, timing, optional peers, markdown output.

Nothing here is a test. The peers (dp_accounting, Opacus, prv_accountant, autodp) are optional extras: they
are imported lazily through :func:`optional_import`, and a missing one is reported with the command that
installs it instead of crashing the benchmark.
"""

import contextlib
import dataclasses
import importlib
import importlib.metadata
import logging
import os
import platform
import statistics
import sys
import time
import warnings

__all__ = [
    "INSTALL_HINT",
    "Goal",
    "Section",
    "Timing",
    "format_float",
    "format_seconds",
    "load_average",
    "machine_description",
    "machine_line",
    "markdown_table",
    "missing_peer_note",
    "optional_import",
    "quiet",
    "render_sections",
    "time_call",
]

#: How to install every optional peer used by the benchmarks (from the repository root).
INSTALL_HINT = "pip install -e '.[bench]'"

#: Distribution names of the peers, as importlib.metadata knows them, with their import names.
PEERS = {
    "dp-accounting": "dp_accounting",
    "opacus": "opacus",
    "prv-accountant": "prv_accountant",
    "autodp": "autodp",
}

_LIBRARIES = ("numpy", "scipy", "mpmath", "torch")


# --------------------------------------------------------------------------------------------- optional peers
def optional_import(name):
    """Import module ``name`` if it is installed.

    Parameters
    ----------
    name : str
        Dotted module name, e.g. ``"dp_accounting"`` or ``"opacus.accountants"``.

    Returns
    -------
    module or None
        The module, or None if it (or one of its dependencies) cannot be imported.
    """
    try:
        with quiet():
            return importlib.import_module(name)
    except Exception:  # noqa: BLE001 - a broken optional install must not stop the benchmark
        return None


def missing_peer_note(name):
    """Markdown sentence saying that peer ``name`` is missing and how to install it."""
    return f"_{name} is not installed, so it is left out here: install the peers with `{INSTALL_HINT}`._"


@contextlib.contextmanager
def quiet():
    """Silence Python warnings and log records below ERROR (peers log each order they skip)."""
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(previous)


# ------------------------------------------------------------------------------------------------- machine
def _cpu_model():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _ram_gib():
    try:
        with open("/proc/meminfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) / 1024.0**2
    except OSError:
        pass
    return float("nan")


def _usable_cores():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count()


def _version(distribution):
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def load_average():
    """The 1, 5 and 15 minute load averages as a string (other processes compete for the same cores)."""
    try:
        return ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def machine_description():
    """The machine and software the numbers were measured on.

    Returns
    -------
    list of (str, str)
        ``(what, value)`` pairs: CPU model, cores, RAM, load average, OS, Python, numpy, scipy, mpmath, torch,
        dpledger and each peer's version (``"not installed"`` when missing). Peers are not imported.
    """
    rows = [
        ("CPU", _cpu_model()),
        ("cores (usable / total)", f"{_usable_cores()} / {os.cpu_count()}"),
        ("RAM", f"{_ram_gib():.1f} GiB"),
        ("load average (1, 5, 15 min) at start", load_average()),
        ("OS", platform.platform()),
        ("Python", sys.version.split()[0]),
    ]
    for lib in _LIBRARIES:
        rows.append((lib, _version(lib) or "not installed"))
    rows.append(("dpledger", _version("dpledger") or "not installed"))
    for dist in PEERS:
        rows.append((dist, _version(dist) or f"not installed (`{INSTALL_HINT}`)"))
    return rows


def machine_line():
    """``"Machine: what value; ..."``: :func:`machine_description` on one line, as the sections end."""
    return "Machine: " + "; ".join(f"{what} {value}" for what, value in machine_description())


# -------------------------------------------------------------------------------------------------- timing
@dataclasses.dataclass(frozen=True)
class Timing:
    """Wall times and CPU times (seconds, ``time.perf_counter`` and ``time.process_time``) of repeated calls,
    and the value the last call returned. CPU time is shown beside wall time because other processes on a
    shared machine inflate wall time but hardly this process's CPU time."""

    runs: tuple
    result: object
    cpu_runs: tuple = ()

    @property
    def best(self):
        """Fastest run."""
        return min(self.runs)

    @property
    def median(self):
        """Median run."""
        return statistics.median(self.runs)

    @property
    def cpu_median(self):
        """Median CPU time of this process (all its threads) per run."""
        return statistics.median(self.cpu_runs) if self.cpu_runs else float("nan")

    @property
    def repeat(self):
        """Number of timed runs."""
        return len(self.runs)


def time_call(fn, repeat=5, warmup=None):
    """Time ``fn()``: one warm-up call first (not timed), then ``repeat`` timed calls with ``time.perf_counter``.

    Parameters
    ----------
    fn : callable
        Called with no arguments; it should do the whole measured job (e.g. build a fresh accountant).
    repeat : int
        Number of timed calls (at least 1).
    warmup : callable, optional
        Called once instead of ``fn`` for the warm-up, e.g. a smaller instance of a job that takes many
        seconds (it still imports modules and fills caches). Default: ``fn`` itself.

    Returns
    -------
    Timing
        The wall and CPU time of every timed call, and the result of the last one.
    """
    (warmup or fn)()
    runs, cpu_runs = [], []
    result = None
    for _ in range(max(int(repeat), 1)):
        cpu_start = time.process_time()
        start = time.perf_counter()
        result = fn()
        runs.append(time.perf_counter() - start)
        cpu_runs.append(time.process_time() - cpu_start)
    return Timing(runs=tuple(runs), result=result, cpu_runs=tuple(cpu_runs))


# ---------------------------------------------------------------------------------------------- formatting
def format_seconds(seconds):
    """Human-readable duration: ``"0.84 ms"``, ``"12.3 ms"``, ``"4.56 s"``; ``"-"`` for None."""
    if seconds is None:
        return "-"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} us"
    if seconds < 1.0:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds:.3g} s"


def format_float(value, digits=6):
    """``value`` with ``digits`` significant digits; ``"-"`` for None, ``"inf"``/``"nan"`` as such."""
    if value is None:
        return "-"
    return f"{value:.{digits}g}"


def markdown_table(headers, rows, align=None):
    """A GitHub-flavoured markdown table.

    Parameters
    ----------
    headers : sequence of str
        Column titles.
    rows : iterable of sequences
        Cells, converted with ``str``; ``|`` inside a cell is escaped.
    align : sequence of {"l", "r", "c"}, optional
        Alignment per column (default: first column left, the rest right).

    Returns
    -------
    str
        The table, one line per row, without a trailing newline.
    """
    headers = [str(h) for h in headers]
    if align is None:
        align = ["l"] + ["r"] * (len(headers) - 1)
    rule = {"l": ":---", "r": "---:", "c": ":---:"}

    def line(cells):
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    out = [line(headers), "|" + "|".join(rule[a] for a in align) + "|"]
    out.extend(line(row) for row in rows)
    return "\n".join(out)


# ------------------------------------------------------------------------------------------------ sections
@dataclasses.dataclass(frozen=True)
class Goal:
    """A target stated in the brief, with the figure measured against it."""

    name: str
    target: str
    measured: str
    met: bool

    def status(self):
        """``"met"`` or ``"NOT MET"``."""
        return "met" if self.met else "NOT MET"


@dataclasses.dataclass(frozen=True)
class Section:
    """One markdown section of the results: a title, a body, the goals it checks and the problems it found.

    ``flags`` are loud warnings (dpledger looser than a peer, below an exact value, a failed run); they are
    repeated in the summary at the top of ``RESULTS.md``.
    """

    title: str
    body: str
    goals: tuple = ()
    flags: tuple = ()

    def markdown(self, level=2):
        """The section as markdown, with a heading of the given level."""
        parts = [f"{'#' * level} {self.title}", "", self.body.strip()]
        if self.goals:
            rows = [(g.name, g.target, g.measured, g.status()) for g in self.goals]
            parts += ["", markdown_table(["goal", "target", "measured", "status"], rows, ["l", "l", "r", "l"])]
        if self.flags:
            parts += [""] + [f"> **FLAG:** {f}" for f in self.flags]
        return "\n".join(parts) + "\n"

    def __str__(self):
        return self.markdown()


def render_sections(sections):
    """Markdown of several sections, separated by blank lines (what a bench script prints when run alone)."""
    return "\n".join(s.markdown() for s in sections)
