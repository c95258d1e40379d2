"""The command line speaks DP-SGD: batch size, dataset size and epochs, fractions and 1e4 counts, --json read back
as --spec, and help text on every option."""

import argparse
import json
import math

import pytest

from dpledger.accountants import RDPAccountant
from dpledger.cli import build_parser, main
from dpledger.mechanisms import GaussianMechanism, PoissonSubsampled


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def epsilon_of(capsys, *argv):
    code, out, err = run(capsys, "epsilon", *argv, "--delta", "1e-5", "--json")
    assert code == 0, err
    return json.loads(out)


def test_batch_size_dataset_size_and_epochs_are_the_sampling_probability_and_the_step_count(capsys):
    data = epsilon_of(capsys, "--mechanism", "gaussian", "--sigma", "1.1", "--batch-size", "256",
                      "--dataset-size", "60000", "--epochs", "60")
    (entry,) = data["mechanisms"]
    assert entry["sampling_probability"] == 256 / 60000
    assert entry["count"] == math.ceil(60 * 60000 / 256) == 14063  # a partial last epoch counts as a step
    direct = RDPAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=1.1), 256 / 60000), 14063)
    assert data["results"][0]["epsilon"] == direct.get_epsilon(1e-5)


def test_fractions_and_float_spelled_counts(capsys):
    fraction = epsilon_of(capsys, "--mechanism", "gaussian", "--sigma", "1.1", "--sampling-probability",
                          "256/60000", "--count", "1.4063e4")
    training = epsilon_of(capsys, "--mechanism", "gaussian", "--sigma", "1.1", "--batch-size", "256",
                          "--dataset-size", "6e4", "--epochs", "60")
    assert fraction["mechanisms"] == training["mechanisms"] and fraction["results"] == training["results"]


@pytest.mark.parametrize("argv, message", [
    (["--batch-size", "256", "--epochs", "3"], "needs both --batch-size and --dataset-size"),
    (["--epochs", "3"], "--epochs of mechanism #1 (gaussian) needs --batch-size"),
    (["--batch-size", "256", "--dataset-size", "100"], "must be at most --dataset-size"),
    (["--batch-size", "256", "--dataset-size", "6e4", "--sampling-probability", "0.1"], "not both"),
    (["--batch-size", "256", "--dataset-size", "6e4", "--epochs", "2", "--count", "5"], "not both"),
    (["--batch-size", "256", "--dataset-size", "6e4", "--epochs", "0"], "positive number"),
    (["--count", "2.5"], "invalid integer value"),
    (["--sampling-probability", "1/0"], "invalid number value"),
])
def test_inconsistent_training_options_are_refused_with_the_flags_named(capsys, argv, message):
    code, out, err = run(capsys, "epsilon", "--mechanism", "gaussian", "--sigma", "1.1", *argv, "--delta", "1e-5")
    assert code != 0 and message in err and out == ""


def test_json_output_reads_back_as_a_spec(capsys, tmp_path):
    first = epsilon_of(capsys, "--mechanism", "gaussian", "--sigma", "1.1", "--batch-size", "256",
                       "--dataset-size", "60000", "--epochs", "2", "--mechanism", "laplace", "--scale", "20")
    path = tmp_path / "report.json"
    path.write_text(json.dumps(first))
    again = epsilon_of(capsys, "--spec", str(path))
    assert again["mechanisms"] == first["mechanisms"] and again["results"] == first["results"]
    # a spec with an unknown key is still refused (a typo must not be ignored)
    path.write_text(json.dumps({"mechanisms": first["mechanisms"], "resluts": []}))
    code, _, err = run(capsys, "epsilon", "--spec", str(path), "--delta", "1e-5")
    assert code != 0 and "resluts" in err


def test_every_option_of_every_command_has_help_text():
    parser = build_parser()
    missing = []

    def walk(p, path):
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, path + [name])
            elif not isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
                if not (action.help or "").strip():
                    missing.append(" ".join(path + [action.option_strings[0] if action.option_strings
                                                    else action.dest]))

    walk(parser, ["dpledger"])
    assert missing == []


def test_curve_writes_epsilon_against_steps_and_the_profile_as_csv_and_png(capsys, tmp_path):
    code, out, err = run(capsys, "curve", "--mechanism", "gaussian", "--sigma", "1.1", "--batch-size", "256",
                         "--dataset-size", "60000", "--epochs", "2", "--delta", "1e-5", "--points", "12",
                         "--output-dir", str(tmp_path), "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["bound"] == "upper bound" and data["plots"] == "written"
    steps = [p["steps"] for p in data["epsilon_vs_steps"]]
    assert steps[0] == 1 and steps[-1] == math.ceil(2 * 60000 / 256) and steps == sorted(set(steps))
    for point in data["epsilon_vs_steps"][::4]:
        direct = RDPAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=1.1), 256 / 60000), point["steps"])
        assert point["epsilon"] == direct.get_epsilon(1e-5)
    epsilons = [p["epsilon"] for p in data["epsilon_vs_steps"]]
    assert epsilons == sorted(epsilons)  # more steps never cost less
    rows = (tmp_path / "privacy_profile.csv").read_text().splitlines()
    assert rows[0] == "epsilon,delta,bound" and len(rows) == 13
    deltas = [float(r.split(",")[1]) for r in rows[1:]]
    assert deltas == sorted(deltas, reverse=True)
    for name in ("epsilon_vs_steps.png", "privacy_profile.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    code, _, err = run(capsys, "curve", "--mechanism", "gaussian", "--sigma", "1", "--delta", "1e-5", "--points", "1",
                       "--output-dir", str(tmp_path))
    assert code != 0 and "--points must be in [2, 10000]" in err
