"""Run every ``benchmarks/bench_*.py`` and regenerate ``benchmarks/RESULTS.md``.

Usage, from the repository root::

    python -m benchmarks.run_all

Two kinds of benchmark live here. The accounting benchmarks (:data:`FIRST`) expose ``run()``, which returns a
list of :class:`_common.Section`; this script collects them and adds a summary of every goal and flag. The
prediction and interoperability benchmarks (:data:`SCRIPTS`) are command-line scripts that write their own
markdown under ``benchmarks/results/``; this script runs each in a fresh interpreter (so one cannot disturb
another's timings or memory) and includes its file. ``RESULTS.md`` gets the command, the date, the machine and
all of it, and last the main job (``dpledger demo``) with its report and plots. ``--only NAME ...`` reruns
some benchmarks (the others' sections are then taken from their last results files, and the accounting sections
are left out unless named). The peers (dp_accounting, Opacus, prv_accountant, autodp) are optional: install
them with ``pip install -e '.[bench]'``; without them their columns are empty and the goals that need them
are marked as not met.
"""

import argparse
import datetime
import importlib
import pathlib
import subprocess
import sys
import time
import traceback

from benchmarks._common import (
    INSTALL_HINT,
    Section,
    format_seconds,
    load_average,
    machine_description,
    markdown_table,
)

HERE = pathlib.Path(__file__).resolve().parent

RESULTS = HERE / "RESULTS.md"
COMMAND = "python -m benchmarks.run_all"


#: Modules run first, in this order (correctness before speed); any other bench_*.py follows alphabetically.
FIRST = ("bench_rdp_tightness", "bench_rdp_speed", "bench_fourier")

#: Script benchmarks, in the order they run, with the results file each one (re)writes under ``results/``.
SCRIPTS = (
    ("bench_soundness", "soundness.md"),
    ("bench_private_knn_figures", "private_knn_figures.md"),
    ("bench_private_knn_accuracy", "private_knn_accuracy.md"),
    ("bench_ind_knn_speed", "ind_knn.md"),
    ("bench_ind_knn_accuracy", "ind_knn.md"),
    ("bench_ind_knn_text", "ind_knn_text.md"),
    ("bench_opacus_baseline", "adapters.md"),
)
RESULTS_DIR = HERE / "results"
#: Exit status of a script whose optional data set is not installed (it prints the ``pip install`` line).
OPTIONAL_DATA_MISSING = 2
#: The main job, run last: ``dpledger demo`` writes its report and plots here, and RESULTS.md shows them.
DEMO_DIR = RESULTS_DIR / "demo"
DEMO = "dpledger_demo"


def bench_modules():
    """Names of the section modules next to this file: those in :data:`FIRST`, then any other ``bench_*.py``
    that is not a script of :data:`SCRIPTS`, sorted."""
    scripts = {name for name, _ in SCRIPTS}
    found = sorted(p.stem for p in HERE.glob("bench_*.py") if p.stem not in scripts)
    return [m for m in FIRST if m in found] + [m for m in found if m not in FIRST]


def run_script(name):
    """Run script benchmark ``name`` in a fresh interpreter from the repository root.

    Returns
    -------
    (list of Section, float)
        No section when it succeeded (its results file carries its figures), else one flagged section with
        the end of its output; and its wall time in seconds.
    """
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", f"benchmarks.{name}"], cwd=HERE.parent, capture_output=True, text=True, check=False
    )
    sections = []
    if done.returncode == OPTIONAL_DATA_MISSING and "pip install" in done.stdout + done.stderr:
        sections.append(Section(
            title=f"{name}: skipped, optional data not installed",
            body="Its last committed results (with their own date and command) are included below.\n\n```\n"
                 + (done.stdout + done.stderr)[-2000:] + "\n```",
        ))
    elif done.returncode != 0:
        tail = (done.stdout + done.stderr)[-4000:]
        sections.append(
            Section(
                title=f"{name}: FAILED (exit {done.returncode})",
                body="```\n" + tail + "\n```",
                flags=(f"{name} exited with {done.returncode}; see its section.",),
            )
        )
    return sections, time.perf_counter() - start


def run_demo(name=DEMO):
    """Run ``python -m dpledger demo --output-dir benchmarks/results/demo`` (the main job, with its plots)."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "dpledger", "demo", "--output-dir", str(DEMO_DIR)],
        cwd=HERE.parent, capture_output=True, text=True, check=False,
    )
    sections = []
    if done.returncode != 0:
        sections.append(
            Section(
                title=f"{name}: FAILED (exit {done.returncode})",
                body="```\n" + (done.stdout + done.stderr)[-4000:] + "\n```",
                flags=(f"dpledger demo exited with {done.returncode}; see its section.",),
            )
        )
    return sections, time.perf_counter() - start


def demo_section():
    """Markdown: the demo's text report and its plots (accuracy against epsilon; individual privacy spend)."""
    report = DEMO_DIR / "report.txt"
    if not report.exists():
        return "## Main job (`dpledger demo`): missing\n\nRun `python -m benchmarks.run_all --only dpledger_demo`.\n"
    return "\n".join([
        "## Main job: `dpledger demo` (Ind-KNN, Private-kNN and non-private kNN across epsilon)",
        "",
        "Command: `python -m dpledger demo --output-dir benchmarks/results/demo` (what the README's main-job command "
        "runs, with the output directory moved here).",
        "",
        "```",
        report.read_text(encoding="utf-8").rstrip(),
        "```",
        "",
        "![accuracy against epsilon](results/demo/accuracy_vs_epsilon.png)",
        "",
        "![individual privacy spend](results/demo/individual_privacy.png)",
        "",
    ])


def included_results(names):
    """Markdown of the results files of the script benchmarks ``names`` (each file once), headings demoted."""
    parts = []
    for filename in dict.fromkeys(f for n, f in SCRIPTS if n in names):
        path = RESULTS_DIR / filename
        if not path.exists():
            parts.append(f"## {filename}: missing\n\nRun its benchmark to create `benchmarks/results/{filename}`.\n")
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        parts.append("\n".join("#" + line if line.startswith("#") else line for line in lines) + "\n")
    return parts


def run_module(name):
    """Import bench module ``name`` and run it.

    Returns
    -------
    (list of Section, float)
        Its sections (one section with a flag if it raised) and its wall time in seconds.
    """
    start = time.perf_counter()
    try:
        sections = list(importlib.import_module(f"benchmarks.{name}").run())
    except Exception:  # noqa: BLE001 - one broken benchmark must not hide the others' results
        sections = [
            Section(
                title=f"{name}: FAILED",
                body="```\n" + traceback.format_exc() + "```",
                flags=(f"{name}.run() raised; see its section.",),
            )
        ]
    return sections, time.perf_counter() - start


def summary(sections):
    """Markdown: every goal with its status, then every flag (or a line saying there is none)."""
    goals = [g for s in sections for g in s.goals]
    rows = [(g.name, g.target, g.measured, g.status()) for g in goals]
    parts = ["## Summary", "", "### Goals", ""]
    parts.append(markdown_table(["goal", "target", "measured", "status"], rows, ["l", "l", "r", "l"]))
    met = sum(g.met for g in goals)
    parts += ["", f"{met} of {len(goals)} goals met.", "", "### Flags", ""]
    flags = [f for s in sections for f in s.flags]
    if flags:
        parts += [f"- **FLAG:** {f}" for f in flags]
    else:
        parts.append("None: dpledger was never looser than a peer, never below an exact value, and nothing failed.")
    return "\n".join(parts) + "\n"


def header(started, elapsed, timings, load_at_start, load_at_end):
    """Markdown: title, command, date, runtime per module and the machine."""
    machine = machine_description()
    machine = [(k, load_at_start if k.startswith("load average") else v) for k, v in machine]
    machine.append(("load average (1, 5, 15 min) at end", load_at_end))
    lines = [
        "# dpledger benchmarks",
        "",
        "Generated by the command below; do not edit by hand (rerun it instead).",
        "",
        "```bash",
        COMMAND,
        "```",
        "",
        f"- date: {started.strftime('%Y-%m-%d %H:%M:%S %Z')}",
        f"- total runtime: {format_seconds(elapsed)} ("
        + ", ".join(f"`{name}` {format_seconds(t)}" for name, t in timings)
        + ")",
        f"- peers are optional extras: `{INSTALL_HINT}`",
        "- every ratio compares numbers measured in this same run on this machine. Wall times suffer from any "
        "other process on the same cores (see the load averages); CPU times (`time.process_time`) are shown "
        "beside them and are less sensitive to that.",
        "",
        "## Machine",
        "",
        markdown_table(["what", "value"], machine, ["l", "l"]),
        "",
    ]
    return "\n".join(lines)


def main(argv=None):
    """Run the benchmarks, write RESULTS.md and print its summary."""
    parser = argparse.ArgumentParser(description="Run the benchmarks and regenerate benchmarks/RESULTS.md.")
    every = bench_modules() + [name for name, _ in SCRIPTS] + [DEMO]
    parser.add_argument("--only", nargs="+", choices=every, metavar="NAME", help=f"run only these: {every}")
    args = parser.parse_args(argv)
    chosen = set(args.only or every)
    started = datetime.datetime.now(datetime.timezone.utc)
    load_at_start = load_average()
    begin = time.perf_counter()
    sections, timings = [], []
    jobs = [(name, run_module) for name in bench_modules()] + [(name, run_script) for name, _ in SCRIPTS]
    jobs.append((DEMO, run_demo))
    for name, runner in jobs:
        if name not in chosen:
            continue
        print(f"running {name} ...", flush=True)
        secs, elapsed = runner(name)
        print(f"  done in {format_seconds(elapsed)}", flush=True)
        sections += secs
        timings.append((name, elapsed))
    elapsed = time.perf_counter() - begin
    text = "\n".join(
        [header(started, elapsed, timings, load_at_start, load_average()), summary(sections)]
        + [s.markdown() for s in sections]
        + included_results([name for name, _ in SCRIPTS])
        + [demo_section()]
    )
    RESULTS.write_text(text, encoding="utf-8")
    print(summary(sections))
    print(f"wrote {RESULTS} in {format_seconds(elapsed)}")


if __name__ == "__main__":
    main()
