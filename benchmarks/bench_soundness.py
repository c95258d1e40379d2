"""The soundness sweep (issue 12 item 5): the harness of ``tests/soundness`` in its long mode.

Runs ``python -m pytest tests/soundness --soundness-long`` (25 times the CI example budget of every family), with
a fresh hypothesis seed each run, counts the cases checked per family and writes
``benchmarks/results/soundness.md`` ("Soundness sweep": cases per family, violations found). A violation is a
failed test: its falsifying example is printed by pytest and the table says so. Run with::

    python -m benchmarks.bench_soundness
"""

import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "results" / "soundness.md"
COMMAND = "python -m benchmarks.bench_soundness"


def main():
    with tempfile.TemporaryDirectory() as tmp:
        counts_path = pathlib.Path(tmp) / "counts.json"
        env = dict(os.environ, DPLEDGER_SOUNDNESS_COUNTS=str(counts_path), HYPOTHESIS_PROFILE="dev")
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "tests/soundness", "--soundness-long", "-q", "-p", "no:cacheprovider",
             "-rf"],
            cwd=ROOT, env=env, capture_output=True, text=True,
        )
        seconds = time.perf_counter() - start
        counts = json.loads(counts_path.read_text()) if counts_path.exists() else {}
    failed = [line for line in proc.stdout.splitlines() if line.startswith("FAILED")]
    lines = [
        "## Soundness sweep (issue 12 item 5)",
        "",
        f"Command: `{COMMAND}` (the harness of `tests/soundness` with `--soundness-long`: 25 times the CI example "
        f"budget, hypothesis profile `dev`, not derandomized). {seconds:.0f} s. Every case is a hypothesis-generated "
        "ledger or curve checked against an exact mpmath oracle: an RDP epsilon whose exact delta exceeds delta, an "
        "RDP delta below the exact one, a Fourier interval that misses the exact value, a wrong bound label, a NaN or "
        "an error that is not a dpledger error is a violation.",
        "",
        "| family: check | cases |",
        "|---|---:|",
    ]
    lines += [f"| {name} | {n:,} |" for name, n in counts.items()]
    lines += [f"| **all** | **{sum(counts.values()):,}** |", ""]
    if proc.returncode == 0:
        lines.append("Violations found: **0**.")
    else:
        lines.append(f"Violations found: **{len(failed)} failing test(s)** (pytest exit {proc.returncode}):")
        lines += ["", "```", *failed, "```"]
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    if proc.returncode != 0:
        print(proc.stdout[-4000:], file=sys.stderr)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
