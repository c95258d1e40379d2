"""``dpledger predict`` and ``dpledger demo`` in-process: numbers equal the classifiers' own API, the file paths
work, --json parses, the demo writes its plots and report, bad arguments exit non-zero without a traceback."""

import json
import re

import numpy as np
import pytest

from dpledger.cli import main
from dpledger.data import Arrays
from dpledger.predict import datasets
from dpledger.predict.calibration import PRIVATE_KNN_RATIO, private_knn_noise
from dpledger.predict.ind_knn import IndKNNClassifier
from dpledger.predict.private_knn import PrivateKNNClassifier


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *argv):
    code, out, err = run(capsys, *argv, "--json", "--quiet")
    assert code == 0, err
    return json.loads(out)


@pytest.fixture(scope="module")
def digits():
    return datasets.load("digits")


@pytest.fixture()
def blobs(tmp_path):
    """Two well-separated classes on the unit circle, as files: private.npz, queries.npz, and .npy pairs."""
    rng = np.random.default_rng(1)
    angles = np.concatenate([rng.normal(0.0, 0.2, 150), rng.normal(np.pi / 2, 0.2, 150)])
    X = np.stack([np.cos(angles), np.sin(angles)], axis=1)
    y = np.repeat([0, 1], 150)
    q_angles = np.concatenate([rng.normal(0.0, 0.2, 20), rng.normal(np.pi / 2, 0.2, 20)])
    Q = np.stack([np.cos(q_angles), np.sin(q_angles)], axis=1)
    yq = np.repeat([0, 1], 20)
    np.savez(tmp_path / "private.npz", X=X, y=y)
    np.savez(tmp_path / "queries.npz", X=Q, y=yq)
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)
    np.save(tmp_path / "Q.npy", Q)
    return tmp_path, X, y, Q, yq


# --------------------------------------------------------------------------------------------------- predict
def test_ind_knn_on_digits_equals_the_classifier(capsys, digits):
    n = 300  # more than one chunk of 256: chunked answering must equal one call
    data = run_json(capsys, "predict", "--method", "ind-knn", "--data", "digits", "--n-queries", str(n),
                    "--epsilon", "4", "--tau", "0.85", "--random-state", "3", "--audit")
    clf = IndKNNClassifier(epsilon=4.0, delta=1e-5, tau=0.85, sigma_vote=1.0, n_queries=n, n_classes=10, random_state=3)
    pred = clf.fit(digits.X_private, digits.y_private).predict(digits.X_query[:n])
    assert data["accuracy"] == float(np.mean(pred == digits.y_query[:n]))
    assert data["n_queries"] == n and data["n_answered"] == clf.n_answered_
    assert data["guarantee"]["epsilon"] == clf.privacy_report(1e-5).epsilon <= 4.0
    assert data["guarantee"]["bound"] == "upper bound"
    audit = data["audit"]
    assert "not releasable" in audit["label"] and audit["n_retired"] == clf.n_retired_
    eps = clf.individual_epsilons(1e-5)
    assert audit["individual_epsilon_quantiles"]["0.5"] == pytest.approx(float(np.median(eps)), rel=1e-12)
    assert audit["individual_epsilon_quantiles"]["1"] <= data["guarantee"]["epsilon"] * (1 + 1e-9)


def test_ind_knn_text_report(capsys):
    code, out, err = run(capsys, "predict", "--method", "ind-knn", "--data", "digits", "--n-queries", "50",
                         "--epsilon", "2", "--tau", "0.85", "--audit")
    assert code == 0, err
    for needed in ("accuracy", "queries answered  50 of 50", "guarantee         (2", "upper bound",
                   "add or remove one record", "individual eps", "records retired", "not a guarantee",
                   "not releasable"):
        assert needed in out, needed
    assert "50/50 100%" in err  # progress on stderr


def test_data_dependent_statistics_only_with_audit(capsys):
    # Issue 13 item 9: per-record spends, retirement counts and the median history were printed by default.
    code, out, _ = run(capsys, "predict", "--method", "ind-knn", "--data", "digits", "--n-queries", "30",
                       "--epsilon", "2", "--tau", "0.85")
    assert code == 0 and "individual eps" not in out and "records retired" not in out
    data = run_json(capsys, "predict", "--method", "ind-knn", "--data", "digits", "--n-queries", "30",
                    "--epsilon", "2", "--tau", "0.85")
    assert not set(data) & {"audit", "n_retired", "individual_epsilon_quantiles", "median_epsilon_history"}
    data = run_json(capsys, "predict", "--method", "private-knn", "--data", "digits", "--n-queries", "30",
                    "--epsilon", "2", "--audit")
    assert data["audit"]["spent"]["bound"] == "odometer reading, not a guarantee"
    assert data["audit"]["spent"]["epsilon"] <= data["guarantee"]["epsilon"]


def test_runs_without_a_seed_draw_fresh_noise(capsys):
    # Issue 13 item 3: --random-state defaulted to 0, so two runs drew identical noise (audit: epsilon >= 3.28).
    argv = ["predict", "--method", "private-knn", "--data", "digits", "--n-queries", "200", "--sigma-vote", "3",
            "--screening", "off", "--k", "20"]
    first, second = run_json(capsys, *argv), run_json(capsys, *argv)
    assert first["hyperparameters"]["random_state"] is None
    assert first["accuracy"] != second["accuracy"] or first != second
    seeded = [run_json(capsys, *argv, "--random-state", "4") for _ in range(2)]
    assert seeded[0]["accuracy"] == seeded[1]["accuracy"]
    code, _, err = run(capsys, *argv, "--random-state", "-1")
    assert code != 0 and "non-negative" in err


def test_private_knn_with_given_noise_from_npz_files_equals_the_classifier(capsys, blobs):
    path, X, y, Q, yq = blobs
    data = run_json(capsys, "predict", "--method", "private-knn", "--private", str(path / "private.npz"),
                    "--queries", str(path / "queries.npz"), "--sigma-vote", "2", "--k", "20",
                    "--sampling-probability", "0.5", "--screening", "on", "--threshold", "12", "--random-state", "5",
                    "--n-classes", "2")
    clf = PrivateKNNClassifier(k=20, sampling_probability=0.5, threshold=12.0, sigma_screen=PRIVATE_KNN_RATIO * 2,
                               sigma_vote=2.0, n_classes=2, random_state=5).fit(X.astype(np.float32), y)
    pred = clf.predict(Q.astype(np.float32))
    assert data["accuracy"] == float(np.mean(pred == yq))
    assert data["n_answered"] == clf.n_answered_ == int((pred >= 0).sum())
    assert data["guarantee"]["epsilon"] == clf.privacy_report(1e-5).epsilon
    assert data["target"]["epsilon"] is None


def test_private_knn_calibrated_to_epsilon_meets_it(capsys, blobs):
    path, X, y, Q, yq = blobs
    data = run_json(capsys, "predict", "--method", "private-knn", "--private", str(path / "X.npy"),
                    str(path / "y.npy"), "--queries", str(path / "Q.npy"), "--epsilon", "3", "--k", "20",
                    "--screening", "on", "--n-classes", "2")
    assert data["accuracy"] is None  # queries without labels
    assert data["guarantee"]["epsilon"] <= 3.0 and data["guarantee"]["bound"] == "upper bound"
    h = data["hyperparameters"]
    kwargs = dict(epsilon=3.0, delta=1e-5, n_queries=40, k=20, sampling_probability=h["sampling_probability"],
                  threshold=h["threshold"], n_classes=2)
    assert h["sigma_vote"] == private_knn_noise(**kwargs)


def test_knn_reference_equals_scikit_learn(capsys, digits):
    from sklearn.neighbors import KNeighborsClassifier

    data = run_json(capsys, "predict", "--method", "knn", "--data", "digits", "--k", "3")
    clf = KNeighborsClassifier(n_neighbors=3, metric="cosine", algorithm="brute")
    pred = clf.fit(digits.X_private, digits.y_private).predict(digits.X_query)
    assert data["accuracy"] == float(np.mean(pred == digits.y_query))
    assert data["guarantee"] is None
    code, out, _ = run(capsys, "predict", "--method", "knn", "--data", "digits", "--quiet")
    assert code == 0 and "privacy           none" in out


BAD_PREDICT = [
    (["--method", "ind-knn", "--epsilon", "1"], "no data"),
    (["--method", "ind-knn", "--data", "digits"], "Ind-KNN needs --epsilon"),
    (["--method", "private-knn", "--data", "digits"], "exactly one of --epsilon"),
    (["--method", "private-knn", "--data", "digits", "--epsilon", "1", "--sigma-vote", "3"], "exactly one of"),
    (["--method", "knn", "--data", "digits", "--epsilon", "1"], "takes no --epsilon"),
    (["--method", "ind-knn", "--data", "digits", "--epsilon", "-1"], "positive finite"),
    (["--method", "ind-knn", "--data", "digits", "--epsilon", "1", "--delta", "1"], "must be in \\(0, 1\\)"),
    (["--method", "ind-knn", "--data", "digits", "--epsilon", "1", "--n-queries", "0"], "positive integer"),
    (["--method", "ind-knn", "--data", "cifar", "--epsilon", "1"], "invalid choice"),
    (["--method", "ind-knn", "--data", "digits", "--epsilon", "1", "--tau", "1.5"], "tau"),
]


@pytest.mark.parametrize("argv, match", BAD_PREDICT)
def test_bad_predict_arguments(capsys, argv, match):
    code, out, err = run(capsys, "predict", *argv, "--quiet")
    assert code == 2 and out == "" and "Traceback" not in err
    assert re.search(match, err), err


def test_bad_files(capsys, blobs):
    path, X, y, Q, yq = blobs
    np.save(path / "y_short.npy", y[:-1])
    np.save(path / "Q3.npy", np.ones((4, 3)))
    np.savez(path / "nolabels.npz", X=X)
    cases = [
        (["--private", str(path / "X.npy"), str(path / "y_short.npy"), "--queries", str(path / "Q.npy")],
         "one per record"),
        (["--private", str(path / "private.npz"), "--queries", str(path / "Q3.npy")], "columns"),
        (["--private", str(path / "nolabels.npz"), "--queries", str(path / "Q.npy")], "arrays named X and y"),
        (["--private", str(path / "missing.npz"), "--queries", str(path / "Q.npy")], "no such file"),
        (["--private", str(path / "X.npy"), "--queries", str(path / "Q.npy")], "needs labels"),
        (["--private", str(path / "private.npz"), "--queries", str(path / "Q.npy"), "--data", "digits"],
         "either --data or --private"),
    ]
    for argv, match in cases:
        code, out, err = run(capsys, "predict", "--method", "knn", *argv, "--n-classes", "2", "--quiet")
        assert code == 2 and "Traceback" not in err and re.search(match, err), (argv, err)
    # issue 13 item 5: the label domain of files is public input, never read off the private labels
    code, out, err = run(capsys, "predict", "--method", "private-knn", "--private", str(path / "private.npz"),
                         "--queries", str(path / "Q.npy"), "--sigma-vote", "2", "--quiet")
    assert code == 2 and "--n-classes C is required" in err


def test_a_missing_data_set_says_how_to_install_it(capsys, monkeypatch):
    monkeypatch.setattr(datasets, "available", lambda name: name == "digits")
    code, out, err = run(capsys, "predict", "--method", "knn", "--data", "fashion-mnist", "--quiet")
    assert code == 1 and out == "" and "Traceback" not in err
    assert "apt-get install dataset-fashion-mnist" in err


# ------------------------------------------------------------------------------------------------------ demo
def test_demo_on_digits_writes_plots_report_and_results(capsys, tmp_path):
    outdir = tmp_path / "demo"
    code, out, err = run(capsys, "demo", "--data", "digits", "--epsilons", "2", "8", "--max-queries", "60",
                         "--output-dir", str(outdir))
    assert code == 0, err
    for name in ("accuracy_vs_epsilon.png", "individual_privacy.png"):
        assert (outdir / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = (outdir / "report.txt").read_text()
    assert report.strip() in out
    assert "guarantee above the target" not in report
    assert re.search(r"^\s+2 \|", report, re.M) and re.search(r"^\s+8 \|", report, re.M)
    results = json.loads((outdir / "results.json").read_text())
    runs_ = results["datasets"]["digits"]["runs"]
    assert [r["method"] for r in runs_] == ["knn", "ind-knn", "private-knn", "ind-knn", "private-knn"]
    for r in runs_[1:]:
        assert r["n_queries"] == 60
        assert r["guarantee"]["bound"] == "upper bound"
        assert r["guarantee"]["epsilon"] <= r["target"]["epsilon"] * (1 + 1e-12)
    assert "[5/5] digits private-knn epsilon=8" in err  # progress on stderr


def test_choose_tau_uses_public_data_only_and_hits_the_expected_count(digits):
    from dpledger.demo import choose_tau

    tau = choose_tau(digits.X_public, 1000)
    P = digits.X_public.astype(np.float64)
    sims = P @ P.T
    np.fill_diagonal(sims, -np.inf)
    expected = np.median((sims >= tau).mean(axis=1)) * 1000
    assert 3 * np.sqrt(1000) / 2 <= expected <= 3 * np.sqrt(1000) * 2


def test_arrays_first_keeps_the_private_set():
    X = np.ones((5, 2), dtype=np.float32)
    a = Arrays(X, np.zeros(5, np.int64), X, np.arange(5), "toy", 5)
    b = a.first(2)
    assert b.n_private == 5 and b.n_queries == 2 and b.y_query.tolist() == [0, 1]
    assert a.first(None) is a and a.first(10) is a


# ----------------------------------------------------------------------------------------- kept budgets
def test_state_file_keeps_budgets_between_runs(capsys, digits, tmp_path):
    state = tmp_path / "budgets.db"
    argv = ["predict", "--method", "ind-knn", "--data", "digits", "--n-queries", "80", "--epsilon", "1",
            "--tau", "0.85", "--state", str(state), "--random-state", "0", "--audit"]
    first = run_json(capsys, *argv)
    second = run_json(capsys, *argv)
    assert first["state"]["resumed"] is False and second["state"]["resumed"] is True
    assert second["state"]["n_queries_total"] == 160 and second["n_queries"] == 80
    # the same as one classifier answering the queries twice: nothing was refreshed
    clf = IndKNNClassifier(epsilon=1.0, delta=1e-5, tau=0.85, n_queries=80, n_classes=10, random_state=0)
    clf.fit(digits.X_private, digits.y_private)
    Q, y = digits.X_query[:80], digits.y_query[:80]
    assert first["accuracy"] == float(np.mean(clf.predict(Q) == y))
    assert second["accuracy"] == float(np.mean(clf.predict(Q) == y))
    assert second["audit"]["n_retired"] == clf.n_retired_
    assert second["audit"]["individual_epsilon_quantiles"]["0.5"] == pytest.approx(
        float(np.median(clf.individual_epsilons(1e-5))), rel=1e-12)


def test_state_file_refuses_other_data_or_another_budget(capsys, tmp_path):
    state = tmp_path / "budgets.db"
    base = ["predict", "--method", "ind-knn", "--n-queries", "20", "--tau", "0.85", "--state", str(state), "--quiet"]
    assert run(capsys, *base, "--data", "digits", "--epsilon", "1")[0] == 0
    before = state.read_bytes()
    for extra, match in ((["--data", "digits", "--epsilon", "2"], "budgets for epsilon = 1.0"),
                         (["--data", "digits", "--features", "pca", "--epsilon", "1"], "other private records")):
        code, out, err = run(capsys, *base, *extra)
        assert code == 2 and "Traceback" not in err and match in err, err
    assert state.read_bytes() == before  # a refused run leaves the budgets untouched
    code, _, err = run(capsys, "predict", "--method", "knn", "--data", "digits", "--state", str(state), "--quiet")
    assert code == 2 and "needs --method ind-knn" in err


# --------------------------------------------------------------------- the state file (issue 13 items 4, 7)
STATE_ARGV = ["predict", "--method", "ind-knn", "--data", "digits", "--n-queries", "40", "--epsilon", "1",
              "--tau", "0.85", "--quiet"]


def _edit_state(path, edit):
    """Rewrite the stored state tree through ``edit(state)`` by hand (as a user with sqlite3 could)."""
    import io
    import sqlite3

    from dpledger import state_file

    conn = sqlite3.connect(path)
    rows = dict(conn.execute("SELECT key, value FROM meta"))
    meta = json.loads(rows.pop("__meta__"))
    arrays = {k: np.load(io.BytesIO(v)) for k, v in rows.items()}
    state = state_file._join(meta["tree"], arrays)
    edit(state)
    arrays = {}
    meta["tree"] = state_file._split(state, "s", arrays)
    conn.execute("DELETE FROM meta")
    conn.execute("INSERT INTO meta VALUES ('__meta__', ?)", (json.dumps(meta),))
    conn.executemany("INSERT INTO meta VALUES (?, ?)", [(k, state_file._npy(v)) for k, v in arrays.items()])
    conn.commit()
    conn.close()


def test_state_file_holds_no_private_records_unless_asked(capsys, tmp_path, digits):
    import sqlite3

    plain, kept = tmp_path / "plain.db", tmp_path / "kept.db"
    assert run(capsys, *STATE_ARGV, "--state", str(plain))[0] == 0
    assert run(capsys, *STATE_ARGV, "--state", str(kept), "--state-keep-records")[0] == 0
    keys = {k for (k,) in sqlite3.connect(plain).execute("SELECT key FROM meta")}
    assert not {"s/X", "s/y"} & keys and {"s/X", "s/y"} <= {k for (k,) in sqlite3.connect(kept).execute(
        "SELECT key FROM meta")}
    second = run_json(capsys, *STATE_ARGV, "--state", str(plain))  # resumed with the records given again
    assert second["state"]["resumed"] and second["state"]["n_queries_total"] == 80
    code, _, err = run(capsys, *STATE_ARGV, "--state", str(tmp_path / "x.db"), "--state-keep-records", "--json")
    assert code == 0
    code, _, err = run(capsys, "predict", "--method", "ind-knn", "--data", "digits", "--epsilon", "1",
                       "--state-keep-records", "--quiet")
    assert code == 2 and "needs --state" in err


def test_tampered_truncated_or_empty_state_files_are_one_line_errors_with_nothing_changed(capsys, tmp_path):
    # Measured on main: a hand-edited n_classes = 1 released labels without noise while reporting epsilon 1; zeroed
    # spends, a budget x100, sigma1 = -5, a replaced private matrix and missing keys were accepted; a truncated
    # or empty file ended in a traceback.
    state = tmp_path / "budgets.db"
    assert run(capsys, *STATE_ARGV, "--state", str(state), "--state-keep-records")[0] == 0
    pristine = state.read_bytes()
    edits = {
        "n_classes = 1": lambda s: (s["params"].update(n_classes=1), s.update(n_classes=1)),
        "zeroed spends": lambda s: s["filter"].update(spent=np.zeros_like(s["filter"]["spent"])),
        "budget x100": lambda s: s.update(budget=s["budget"] * 100),
        "sigma1 = -5": lambda s: (s["params"].update(sigma_count=-5.0), s.update(sigma_count=-5.0)),
        "replaced private matrix": lambda s: s.update(X=np.flip(s["X"], axis=0).copy()),
        "missing key": lambda s: s.pop("history"),
    }
    for name, edit in edits.items():
        state.write_bytes(pristine)
        _edit_state(state, edit)
        edited = state.read_bytes()
        code, out, err = run(capsys, *STATE_ARGV, "--state", str(state))
        assert code == 2 and out == "" and "Traceback" not in err and len(err.strip().splitlines()) == 1, (name, err)
        assert state.read_bytes() == edited, name  # nothing changed
    for name, content in (("truncated", pristine[: len(pristine) // 3]), ("empty", b""), ("text", b"hello")):
        state.write_bytes(content)
        code, out, err = run(capsys, *STATE_ARGV, "--state", str(state))
        assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, (name, err)
        assert state.read_bytes() == content, name


def test_concurrent_runs_are_serialised_and_the_charge_log_adds_up(tmp_path):
    # Measured on main: two concurrent --state runs recorded 150 queries instead of 300 (read-modify-write).
    import sqlite3
    import subprocess
    import sys

    state = tmp_path / "budgets.db"
    cmd = [sys.executable, "-m", "dpledger", *STATE_ARGV, "--state", str(state), "--json"]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    totals = sorted(json.loads(o[0])["state"]["n_queries_total"] for o in outs)
    assert totals == [40, 80, 120]
    conn = sqlite3.connect(state)
    assert conn.execute("SELECT COUNT(*), SUM(queries) FROM charges").fetchone() == (3, 120)


def test_label_domain_of_files(capsys, blobs):
    path, X, y, Q, yq = blobs
    files = ["--private", str(path / "private.npz"), "--queries", str(path / "queries.npz")]
    code, _, err = run(capsys, "predict", "--method", "ind-knn", *files, "--epsilon", "2", "--tau", "0.9")
    assert code == 2 and "--n-classes C is required" in err  # it was taken from the private labels
    given = run_json(capsys, "predict", "--method", "private-knn", *files, "--n-classes", "3", "--sigma-vote",
                     "2", "--k", "20")
    assert "assumed public" not in given["data"]
    code, _, err = run(capsys, "predict", "--method", "knn", *files, "--n-classes", "1", "--quiet")
    assert code == 2 and "labels go up to 1" in err
    code, _, err = run(capsys, "predict", "--method", "knn", "--data", "digits", "--n-classes", "10", "--quiet")
    assert code == 2 and "built-in data sets know theirs" in err


def test_output_writes_the_predictions_it_paid_for(capsys, digits, tmp_path):
    n = 40
    path = tmp_path / "predictions.csv"
    data = run_json(capsys, "predict", "--method", "ind-knn", "--data", "digits", "--n-queries", str(n),
                    "--epsilon", "4", "--tau", "0.85", "--random-state", "3", "--output", str(path))
    clf = IndKNNClassifier(epsilon=4.0, delta=1e-5, tau=0.85, sigma_vote=1.0, n_queries=n, n_classes=10, random_state=3)
    pred = clf.fit(digits.X_private, digits.y_private).predict(digits.X_query[:n])
    rows = path.read_text().splitlines()
    assert rows[0] == "query,prediction" and len(rows) == n + 1
    assert [int(r.split(",")[1]) for r in rows[1:]] == pred.tolist()
    assert data["accuracy"] == float(np.mean(pred == digits.y_query[:n]))
    code, _, err = run(capsys, "predict", "--method", "knn", "--data", "digits", "--quiet",
                       "--output", str(tmp_path / "missing" / "p.csv"))
    assert code != 0 and "cannot write --output" in err


def test_old_option_spellings_still_work_and_say_they_are_deprecated(capsys, blobs):
    path = blobs[0]
    files = ("--private", str(path / "private.npz"), "--queries", str(path / "queries.npz"))
    common = ("predict", "--method", "ind-knn", *files, "--epsilon", "3", "--tau", "0.8", "--random-state", "2")
    code, new, err = run(capsys, *common, "--n-classes", "2", "--sigma-vote", "0.5", "--sigma-count", "4",
                         "--json", "--quiet")
    assert code == 0 and "deprecated" not in err
    code, old, err = run(capsys, *common, "--num-classes", "2", "--sigma2", "0.5", "--sigma1", "4", "--json",
                         "--quiet")
    old, new = json.loads(old), json.loads(new)
    old.pop("seconds"), new.pop("seconds")
    assert code == 0 and old == new
    for option, replacement in (("--num-classes", "--n-classes"), ("--sigma2", "--sigma-vote"),
                                ("--sigma1", "--sigma-count")):
        assert f"{option} is deprecated and will be removed; use {replacement}." in err
    h = new["hyperparameters"]
    assert h["sigma_vote"] == 0.5 and h["sigma_count"] == 4.0
    code, out, _ = run(capsys, "predict", "--help")
    assert "--n-classes" in out and "--sigma-count" in out and "--num-classes" not in out and "--sigma2" not in out


def test_a_state_file_is_never_seen_without_its_tables(tmp_path, monkeypatch):
    """The race behind failures of the test above: a first run's ``sqlite3.connect`` created an empty file; a second
    run, taking the write lock first, could not tell it from a truncated state (``exists but holds no dpledger
    state``). The file is now made with its tables under a temporary name and linked into place: every connection to
    the path finds the tables, and a second run that loses the creation race continues the winner's file."""
    import os
    import sqlite3

    from dpledger import state_file
    from dpledger.state_file import StateStore

    path = tmp_path / "budgets.db"
    seen = []
    real_connect = sqlite3.connect

    def connect(target, *args, **kwargs):
        if str(target) == str(path):
            probe = real_connect(f"file:{path}?mode=ro", uri=True)
            seen.append({r[0] for r in probe.execute("SELECT name FROM sqlite_master WHERE type = 'table'")})
            probe.close()
        return real_connect(target, *args, **kwargs)

    monkeypatch.setattr(state_file.sqlite3, "connect", connect)
    with StateStore(path) as first:
        assert first.new
        first.save({"filter": {"spent": np.zeros(3)}}, "fp", queries=2, spend=0.0, keep_records=False)
    real_link = os.link

    def lose_the_race(src, dst):  # another run linked its file first
        raise FileExistsError(dst)

    monkeypatch.setattr(state_file.os, "link", lose_the_race)
    with StateStore(path) as second:
        assert not second.new and second.load("fp") is not None
    monkeypatch.setattr(state_file.os, "link", real_link)
    assert seen and all(tables == state_file._TABLES for tables in seen)
    assert [p.name for p in tmp_path.iterdir()] == ["budgets.db"]  # no temporary file left behind


def test_a_failed_first_run_leaves_a_new_state_and_an_emptied_log_is_refused(tmp_path):
    import sqlite3

    from dpledger.state_file import StateStore

    path = tmp_path / "budgets.db"
    with pytest.raises(RuntimeError), StateStore(path):
        raise RuntimeError("the run failed")
    with StateStore(path) as again:  # the file stays (a waiting run may hold it) and is still a new state
        assert again.new
        again.save({"filter": {"spent": np.ones(2)}}, "fp", queries=1, spend=2.0, keep_records=False)
    conn = sqlite3.connect(path)
    conn.execute("DELETE FROM meta")
    conn.execute("DELETE FROM charges")
    conn.commit()
    conn.close()
    with pytest.raises(ValueError, match="runs were charged to it"):
        with StateStore(path):
            pass
