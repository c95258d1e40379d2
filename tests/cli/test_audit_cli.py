"""``dpledger audit`` in-process: JSON fields, lower bounds below the proven upper bounds, the one-run row, the
DP-SGD row (with Opacus) and its clear message without Opacus, the PNG, bad arguments exit 2 with one line, no
progress output when stderr is not a terminal. Few runs: these check the command, the benchmark measures."""

import json

import pytest

from dpledger.cli import main

FAST = ["--runs", "30", "--random-state", "0"]


def run(capsys, *argv):
    code = main(["audit", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *argv):
    code, out, err = run(capsys, *argv, "--json", "--quiet")
    assert code == 0, err
    return json.loads(out)


def test_json_fields_and_bounds(capsys):
    data = run_json(capsys, "--predictors", "ind-knn", "private-knn", "--one-run", "--canaries", "200", *FAST)
    assert data["delta"] == 1e-5 and data["confidence"] == 0.95 and data["random_state"] == 0
    assert "lower bound" in data["labels"]["lower"] and "estimate" in data["labels"]["gdp_epsilon_estimate"]
    rows = data["audits"]
    assert [(r["predictor"], r["audit"]) for r in rows] == [("Ind-KNN", "black-box"), ("Ind-KNN", "one-run"),
                                                          ("Private-kNN", "black-box")]
    for r in rows:
        assert 0.0 <= r["lower"] <= r["proven_epsilon"] < float("inf")
        assert r["seconds"] > 0 and r["delta"] == 1e-5
    assert rows[0]["runs"] == 30 and rows[0]["bound_runs"] + rows[0]["holdout_runs"] == 30
    assert rows[0]["proven_epsilon"] == pytest.approx(4.0, rel=1e-9)  # --epsilon default: the Ind-KNN budget
    assert rows[1]["runs"] == 1 and rows[1]["canaries"] == 200 and rows[1]["guesses"] == 20
    assert rows[2]["gdp_mu_lower"] >= 0.0


def test_reproducible_with_a_seed(capsys):
    a = run_json(capsys, "--predictors", "ind-knn", *FAST)["audits"][0]
    b = run_json(capsys, "--predictors", "ind-knn", *FAST)["audits"][0]
    assert {k: v for k, v in a.items() if k != "seconds"} == {k: v for k, v in b.items() if k != "seconds"}


def test_all_designs(capsys):
    rows = run_json(capsys, "--predictors", "ind-knn", "--all-designs", "--runs", "9", "--random-state", "1")["audits"]
    assert len(rows) == 6 and len({r["design"] for r in rows}) == 6
    assert all(r["lower"] <= r["proven_epsilon"] for r in rows)


def test_text_report_and_png(capsys, tmp_path):
    path = tmp_path / "tradeoff.png"
    code, out, err = run(capsys, "--predictors", "ind-knn", *FAST, "--plot", str(path))
    assert code == 0, err
    assert "proven eps" in out and "lower eps" in out and "Ind-KNN" in out and str(path) in out
    assert "estimate" in out and "lower bound" in out
    assert err == ""  # stderr is not a terminal here: no progress bar
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000


def test_dp_sgd_row(capsys):
    pytest.importorskip("opacus")
    data = run_json(capsys, "--predictors", "dp-sgd", "--runs", "12", "--random-state", "0")
    (row,) = data["audits"]
    assert row["predictor"] == "DP-SGD (Opacus)" and 0.0 <= row["lower"] <= row["proven_epsilon"]


def test_without_opacus(capsys, monkeypatch):
    import importlib.util
    import sys

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "opacus" else real(name, *a))
    for name in [n for n in sys.modules if n == "opacus" or n.startswith("opacus.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "opacus", None)
    code, out, err = run(capsys, "--predictors", "dp-sgd", *FAST, "--quiet")
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and "pip install opacus" in err
    data = run_json(capsys, "--predictors", "ind-knn", *FAST)  # the default set notes the skip instead
    assert data["notes"] == [] and len(data["audits"]) == 1
    code, out, _ = run(capsys, "--runs", "6", "--random-state", "0", "--quiet", "--json")
    assert code == 0 and any("Opacus is not installed" in n for n in json.loads(out)["notes"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--runs", "2"], "--runs must be at least 3; got 2."),
        (["--confidence", "1.5"], "--confidence must be in (0, 1); got 1.5."),
        (["--delta", "0"], "--delta must be in (0, 1); got 0.0."),
        (["--epsilon", "-1"], "--epsilon must be a positive finite number; got -1.0."),
        (["--canaries", "3", "--one-run"], "--canaries must be at least 10; got 3."),
        (["--random-state", "-4"], "--random-state must be a non-negative integer; got -4."),
        (["--plot", "out.jpg"], "--plot must name a .png file; got out.jpg."),
    ],
)
def test_bad_arguments_one_line_exit_2(capsys, argv, message):
    code, out, err = run(capsys, "--predictors", "ind-knn", *argv)
    assert code == 2 and out == ""
    assert err == f"dpledger audit: error: {message}\n"


def test_unknown_predictor_is_an_argparse_error(capsys):
    code, _, err = run(capsys, "--predictors", "pate")
    assert code == 2 and "invalid choice" in err
