"""The ``dpledger`` command: argument parsing and dispatch.

``main(argv)`` returns the exit code: 0 on success, 2 for bad arguments (a one-line message on stderr, never a
traceback), 1 when a valid request cannot be answered (for example a data set that is not installed, or an
accuracy the Fourier accountant cannot certify).

Examples
--------
>>> main(["epsilon", "--mechanism", "gaussian", "--sigma", "1.1", "--sampling-probability", "0.01",
...       "--count", "10000", "--delta", "1e-5"])  # doctest: +ELLIPSIS
epsilon of a composition of 1 mechanism at delta = 1e-05
...
  epsilon    5.63181  (proven upper bound; printed rounded up)
...
0
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from dpledger.ledger_spec import COMMON, KINDS, SAMPLERS, SpecError, flag, parse_integer, parse_number
from dpledger.mechanisms.errors import DPLedgerError


def number(text: str) -> float:
    """A number or a fraction ``a/b`` (:func:`dpledger.ledger_spec.parse_number`)."""
    return parse_number(text)


def integer(text: str) -> int:
    """An integer, also spelled ``1e4`` (:func:`dpledger.ledger_spec.parse_integer`)."""
    return parse_integer(text)

__all__ = ["main", "build_parser"]

PROG = "dpledger"

_SPEC_HELP = """\
describing a composition:
  Each --mechanism KIND starts a new entry; the options after it belong to that entry (options written
  before the first --mechanism belong to the first entry). Kinds and their parameters:
{kinds}
  Every entry also takes --sampling-probability Q (Poisson subsampling, default 1: none; fractions such as
  256/60000 are read exactly) and --count N (default 1; 1e4 is read as 10000), or, for training, --batch-size B
  --dataset-size N [--epochs E] (q = B / N, count = ceil(E * N / B)). Or give --spec FILE.json (- for stdin)
  with the same content, or the output of a --json run:
    {{"mechanisms": [{{"mechanism": "gaussian", "sigma": 1.1, "sampling_probability": 0.01, "count": 10000}},
                    {{"mechanism": "laplace", "scale": 20, "count": 50}}]}}
  All numbers are for the add-or-remove-one neighbouring relation.

example (DP-SGD: 10,000 steps, noise multiplier 1.1, sampling probability 0.01):
  dpledger epsilon --mechanism gaussian --sigma 1.1 --sampling-probability 0.01 --count 10000 --delta 1e-5
example (DP-SGD on 60,000 records, batches of 256, 60 epochs: 14,063 steps):
  dpledger epsilon --mechanism gaussian --sigma 1.1 --batch-size 256 --dataset-size 60000 --epochs 60 --delta 1e-5
example (the same with fixed-size batches drawn without replacement, gradients clipped to 1: sensitivity 2):
  dpledger epsilon --mechanism gaussian --sigma 1.1 --sensitivity 2 --sampler without-replacement \
    --batch-size 256 --dataset-size 60000 --epochs 60 --delta 1e-5
"""


def _kinds_help(calibrate=False):
    rows = []
    for kind in KINDS.values():
        params = " ".join(f"{flag(p)} X" for p in kind.required) + "".join(
            f" [{flag(p)} X (default {v:g})]" for p, v in kind.optional.items()
        )
        rows.append(f"    {kind.name:<20} {params}: {kind.help}")
    return "\n".join(rows)


class _EntryItem(argparse.Action):
    """Record ``(parameter, value)`` in command-line order; :mod:`dpledger.ledger_spec` groups them."""

    def __call__(self, parser, namespace, values, option_string=None):
        items = list(getattr(namespace, "entry_items", None) or [])
        items.append((self.dest, values))
        namespace.entry_items = items


def _version():
    from importlib import metadata

    try:
        return metadata.version("dpledger")
    except metadata.PackageNotFoundError:
        return "(not installed)"


def _add_composition_options(parser, *, calibrate=False):
    group = parser.add_argument_group(
        "composition (repeat --mechanism for several mechanisms)",
        "Each --mechanism starts a new entry; the options after it belong to it.",
    )
    group.add_argument(
        "--mechanism", dest="mechanism", action=_EntryItem, choices=list(KINDS), metavar="KIND",
        help=f"start a new entry: one of {', '.join(KINDS)}",
    )
    params = {}
    for kind in KINDS.values():
        for p in kind.params():
            params.setdefault(p, []).append(kind.name)
    for p, kinds in params.items():
        note = " (omit it on the entry to calibrate)" if calibrate and any(KINDS[k].noise == p for k in kinds) else ""
        whole = any(p in KINDS[k].integers for k in kinds)
        group.add_argument(flag(p), dest=p, action=_EntryItem, type=int if whole else float,
                           metavar="N" if whole else "X", help=f"{p} of {', '.join(kinds)}{note}")
    group.add_argument("--sampling-probability", dest="sampling_probability", action=_EntryItem,
                       type=number, metavar="Q",
                       help=f"Poisson sampling probability of the entry, a number or a fraction such as 256/60000 "
                       f"(default {COMMON['sampling_probability']:g})")
    group.add_argument("--batch-size", dest="batch_size", action=_EntryItem, type=integer, metavar="B",
                       help="expected batch size of Poisson sampling: with --dataset-size it sets the sampling "
                       "probability to B / N")
    group.add_argument("--dataset-size", dest="dataset_size", action=_EntryItem, type=integer, metavar="N",
                       help="number of records the batches are sampled from (with --batch-size)")
    group.add_argument("--epochs", dest="epochs", action=_EntryItem, type=number, metavar="E",
                       help="training epochs, with --batch-size and --dataset-size: the entry runs "
                       "ceil(E * N / B) times (instead of --count)")
    group.add_argument("--sampler", dest="sampler", action=_EntryItem, choices=SAMPLERS, metavar="KIND",
                       help="how the entry's batches are drawn, with --batch-size and --dataset-size: poisson "
                       "(default), without-replacement (fixed-size batches; needs --sensitivity under replace-one "
                       "of a batch record, 2 C for summed gradients clipped to C), random-allocation (each record in "
                       "exactly one of ceil(N / B) steps per epoch; --epochs or --count counts epochs; amplified for "
                       "the Gaussian in both accountants), with-replacement (both accountants for the Gaussian: "
                       "a proven dominating pair; RDP only for other bases; needs --sensitivity like "
                       "without-replacement)")
    group.add_argument("--count", dest="count", action=_EntryItem, type=integer, metavar="N",
                       help=f"how many times the entry runs (default {COMMON['count']})")
    group.add_argument("--spec", metavar="FILE", help="read the composition from a JSON file (- for stdin)")


def _add_output_options(parser):
    parser.add_argument("--json", action="store_true", help="print one JSON object (non-finite numbers as \"inf\")")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``dpledger`` with its sub-commands."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Differential-privacy accounting and private prediction. Every privacy number printed is a "
        "proven upper bound unless it is labelled an estimate.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    epilog = _SPEC_HELP.format(kinds=_kinds_help())
    formatter = argparse.RawDescriptionHelpFormatter
    accountant_help = (
        "rdp (default): Renyi DP, a proven upper bound for every mechanism, in milliseconds; fourier: "
        "characteristic functions, tighter, a proven upper bound when they are closed forms or proven enclosures "
        "(Gaussian, Laplace, randomized response, pure DP, and the Poisson-subsampled Gaussian, randomized "
        "response and pure DP) and an estimate otherwise (subsampled Laplace), can take seconds or fail to "
        "certify; both: print the two"
    )
    for name, given, target_help in (
        ("epsilon", "delta", "the smallest epsilon such that the composition is (epsilon, delta)-DP"),
        ("delta", "epsilon", "the smallest delta such that the composition is (epsilon, delta)-DP"),
    ):
        p = sub.add_parser(name, help=target_help, description=target_help[0].upper() + target_help[1:] + ".",
                           epilog=epilog, formatter_class=formatter)
        p.add_argument(f"--{given}", type=float, required=True, help=f"the {given} of the guarantee")
        p.add_argument("--accountant", choices=("rdp", "fourier", "both"), default="rdp", help=accountant_help)
        p.add_argument("--rtol", type=float, default=1e-6, help="relative accuracy of the Fourier accountant")
        p.add_argument("--risk", action="store_true",
                       help="also bound what any membership attacker can achieve: its largest true-positive rate "
                       "at each --fpr, and its advantage (TPR - FPR), from the same privacy curve")
        p.add_argument("--fpr", type=number, nargs="+", metavar="A", default=None,
                       help="false-positive rates for --risk (default 0.001 0.01 0.1)")
        _add_composition_options(p)
        _add_output_options(p)

    p = sub.add_parser(
        "calibrate",
        help="the smallest noise meeting a target (epsilon, delta) or a target attack risk",
        description="The smallest noise (largest p / rho / pure epsilon) of the one entry that omits it, such that "
        "the whole composition is (epsilon, delta)-DP by the chosen accountant (RDP by default; a proven upper "
        "bound), or such that no membership attacker's true-positive rate at --fpr exceeds --max-tpr.",
        epilog=epilog,
        formatter_class=formatter,
    )
    p.add_argument("--epsilon", type=float, help="target epsilon (with --delta)")
    p.add_argument("--delta", type=float, help="target delta (with --epsilon)")
    p.add_argument("--max-tpr", dest="max_tpr", type=number, metavar="T",
                   help="instead of --epsilon/--delta, target an attack risk: no membership attacker reaches a "
                   "true-positive rate above T at false-positive rate --fpr")
    p.add_argument("--fpr", type=number, metavar="A", help="the false-positive rate of --max-tpr")
    p.add_argument("--rtol", type=float, default=1e-6, help="relative width of the final search bracket")
    p.add_argument("--accountant", choices=("rdp", "fourier"), default="rdp",
                   help="rdp (default): noise whose RDP epsilon meets the target; fourier: noise whose "
                   "characteristic-function epsilon meets it (tighter: less noise, a few seconds)")
    _add_composition_options(p, calibrate=True)
    _add_output_options(p)

    p = sub.add_parser(
        "curve",
        help="epsilon as the composition progresses and its privacy profile, as CSV and PNG",
        description="Epsilon at --delta after each checkpoint of the composition (every entry having run "
        "ceil(f * count) times at fraction f of the run) and the privacy profile delta(epsilon) of the whole "
        "composition, written as CSV files and, with the plots extra, PNG plots.",
        epilog=epilog,
        formatter_class=formatter,
    )
    p.add_argument("--delta", type=float, required=True, help="the delta of the epsilon curve")
    p.add_argument("--accountant", choices=("rdp", "fourier"), default="rdp",
                   help="rdp (default, fast) or fourier (tighter; slower on long curves)")
    p.add_argument("--rtol", type=float, default=1e-6, help="relative accuracy of the Fourier accountant")
    p.add_argument("--points", type=integer, default=40, metavar="N",
                   help="checkpoints on the epsilon curve and points of the profile (default 40)")
    p.add_argument("--output-dir", default="dpledger-curve", metavar="DIR",
                   help="where to write the CSV and PNG files (default ./dpledger-curve)")
    _add_composition_options(p)
    _add_output_options(p)

    from dpledger import predict_cli  # the parsers only; torch and the classifiers load when the commands run

    predict_cli.add_parsers(sub)
    from dpledger import audit_cli

    audit_cli.add_parser(sub)
    return parser


def _entries(args, *, calibrate=False):
    from dpledger import ledger_spec

    items = getattr(args, "entry_items", None) or []
    if args.spec is not None:
        if items:
            raise SpecError("give the composition either with --spec or with --mechanism options, not both.")
        if args.spec == "-":
            text, source = sys.stdin.read(), "the JSON spec on stdin"
        else:
            try:
                with open(args.spec, encoding="utf-8") as handle:
                    text = handle.read()
            except (OSError, UnicodeDecodeError) as err:
                raise SpecError(f"cannot read --spec {args.spec}: {getattr(err, 'strerror', None) or err}.") from None
            source = f"--spec {args.spec}"
        return ledger_spec.entries_from_json(text, source=source, allow_missing_noise=calibrate)
    return ledger_spec.entries_from_items(items, allow_missing_noise=calibrate)


def _check_targets(args):
    """Check the targets here so messages name the flags (the library would name its own parameters)."""
    import math

    delta = getattr(args, "delta", None)
    if delta is not None and not 0.0 < delta < 1.0:
        raise ValueError(f"--delta must be in (0, 1); got {delta}.")
    epsilon = getattr(args, "epsilon", None)
    if epsilon is not None:
        low_ok = epsilon > 0.0 if args.command == "calibrate" else epsilon >= 0.0
        if not (low_ok and math.isfinite(epsilon)):
            what = "positive" if args.command == "calibrate" else "non-negative"
            raise ValueError(f"--epsilon must be a finite {what} number; got {epsilon}.")
    rtol = getattr(args, "rtol", None)
    if rtol is not None and not 0.0 < rtol < 1.0:
        raise ValueError(f"--rtol must be in (0, 1); got {rtol}.")


def _run_privacy(args):
    from dpledger import _format, accounting

    _check_targets(args)
    entries = _entries(args)
    risk = _risk_rates(args)
    if args.command == "epsilon":
        result = accounting.epsilon_result(entries, delta=args.delta, accountant=args.accountant, rtol=args.rtol,
                                           risk=risk)
    else:
        result = accounting.delta_result(entries, epsilon=args.epsilon, accountant=args.accountant, rtol=args.rtol,
                                         risk=risk)
    print(_format.to_json(result) if args.json else accounting.format_privacy(result))
    return 0


def _risk_rates(args):
    """The false-positive rates of ``--risk`` (None without it); ``--fpr`` alone is a mistake."""
    from dpledger.accountants.risk import DEFAULT_FALSE_POSITIVE_RATES

    if not args.risk:
        if args.fpr is not None:
            raise ValueError("--fpr needs --risk.")
        return None
    rates = DEFAULT_FALSE_POSITIVE_RATES if args.fpr is None else tuple(args.fpr)
    for a in rates:
        if not 0.0 <= a <= 1.0:
            raise ValueError(f"--fpr must be in [0, 1]; got {a}.")
    return rates


def _run_curve(args):
    from dpledger import _format, curve

    _check_targets(args)
    if not 2 <= args.points <= 10_000:
        raise ValueError(f"--points must be in [2, 10000]; got {args.points}.")
    entries = _entries(args)
    result = curve.curve_result(entries, delta=args.delta, accountant=args.accountant, points=args.points,
                                rtol=args.rtol, output_dir=args.output_dir)
    print(_format.to_json(result) if args.json else curve.format_curve(result))
    return 0


def _calibration_risk(args):
    """``(fpr, tpr)`` of ``--fpr``/``--max-tpr``, or None for an (epsilon, delta) target; exactly one kind."""
    privacy = args.epsilon is not None or args.delta is not None
    risk = args.max_tpr is not None or args.fpr is not None
    if privacy == risk:
        raise ValueError("dpledger calibrate needs one target: --epsilon and --delta, or --max-tpr and --fpr.")
    if privacy:
        if args.epsilon is None or args.delta is None:
            raise ValueError("--epsilon and --delta go together.")
        return None
    if args.max_tpr is None or args.fpr is None:
        raise ValueError("--max-tpr and --fpr go together.")
    if not 0.0 <= args.fpr < args.max_tpr <= 1.0:
        raise ValueError(f"--fpr and --max-tpr must satisfy 0 <= fpr < max-tpr <= 1 (a random guess already "
                         f"reaches TPR = FPR); got {args.fpr} and {args.max_tpr}.")
    return args.fpr, args.max_tpr


def _run_calibrate(args):
    from dpledger import _format, accounting

    _check_targets(args)
    risk = _calibration_risk(args)
    entries = _entries(args, calibrate=True)
    result = accounting.calibrate_result(entries, epsilon=args.epsilon, delta=args.delta, rtol=args.rtol,
                                         accountant=args.accountant, risk=risk)
    print(_format.to_json(result) if args.json else accounting.format_calibration(result))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``dpledger`` with ``argv`` (default ``sys.argv[1:]``) and return the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse printed usage and the message (or the help)
        return exit_.code if isinstance(exit_.code, int) else 2
    command = args.command
    runners = {"epsilon": _run_privacy, "delta": _run_privacy, "calibrate": _run_calibrate, "curve": _run_curve}
    try:
        if command in runners:
            return runners[command](args)
        if command == "audit":
            from dpledger import audit_cli

            return audit_cli.run(args)
        from dpledger import predict_cli

        return predict_cli.run(args)
    except (ValueError, TypeError) as err:  # bad values, from our checks or from the library's validation
        _error(command, err)
        return 2
    except BrokenPipeError:  # the reader went away (``dpledger ... | head``): stop quietly
        _silence_stdout()
        return 141
    except (DPLedgerError, OSError) as err:  # valid request that cannot be answered (accuracy, missing data)
        _error(command, err)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG} {command}: interrupted", file=sys.stderr)
        return 130


def _silence_stdout():
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no real file descriptor (e.g. captured output)
        pass


def _error(command, err):
    message = str(err) or type(err).__name__
    print(f"{PROG} {command}: error: {message}", file=sys.stderr)
