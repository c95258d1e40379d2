"""``dpledger epsilon`` with the sparse vector technique (gaussian-svt, laplace-svt), in flags and in JSON."""

import json

import pytest

from dpledger.accountants import RDPAccountant
from dpledger.cli import main
from dpledger.ledger_spec import SpecError, entries_from_json
from dpledger.mechanisms import GaussianMechanism, LaplaceMechanism, SparseVector


def _json(capsys, *argv):
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def test_gaussian_svt_flags_equal_the_api(capsys):
    report = _json(capsys, "epsilon", "--delta", "1e-6", "--mechanism", "gaussian-svt", "--sigma-threshold", "210",
                   "--sigma-queries", "420", "--max-length", "1000", "--cutoff", "10", "--count", "3")
    svt = SparseVector(threshold=GaussianMechanism(sigma=210.0), queries=GaussianMechanism(sigma=420.0), cutoff=10,
                       max_length=1000)
    expected = RDPAccountant().compose(svt, 3).get_epsilon(1e-6)
    assert report["results"][0]["epsilon"] == expected


def test_gaussian_svt_with_a_margin_in_flags_and_json_equals_the_api(capsys, tmp_path):
    """Non-negative queries below a public margin: no length cap needed (issue 16)."""
    report = _json(capsys, "epsilon", "--delta", "1e-6", "--mechanism", "gaussian-svt-margin", "--sigma-threshold",
                   "210", "--sigma-queries", "420", "--margin", "1000", "--count", "2")
    svt = SparseVector(threshold=GaussianMechanism(sigma=210.0), queries=GaussianMechanism(sigma=420.0),
                       nonnegative_queries=True, margin=1000.0)
    assert report["results"][0]["epsilon"] == RDPAccountant().compose(svt, 2).get_epsilon(1e-6)
    spec = tmp_path / "svt.json"
    spec.write_text(json.dumps(report))
    again = _json(capsys, "epsilon", "--delta", "1e-6", "--spec", str(spec))
    assert again["results"][0]["epsilon"] == report["results"][0]["epsilon"]
    assert entries_from_json(json.dumps(report))[0].build() == svt


def test_laplace_svt_json_spec_equals_lemma_7_1_3(capsys, tmp_path):
    spec = tmp_path / "svt.json"
    spec.write_text(json.dumps({"mechanisms": [
        {"mechanism": "laplace-svt", "scale_threshold": 2, "scale_queries": 4, "cutoff": 3}]}))
    report = _json(capsys, "epsilon", "--delta", "1e-6", "--spec", str(spec))
    svt = SparseVector(threshold=LaplaceMechanism(scale=2.0), queries=LaplaceMechanism(scale=4.0), cutoff=3)
    assert report["results"][0]["epsilon"] == RDPAccountant().compose(svt).get_epsilon(1e-6)
    assert 1.99 < report["results"][0]["epsilon"] <= 2.0  # (eps1 + c eps2) = 0.5 + 3 * 0.5
    # the report reads back as a spec
    assert entries_from_json(json.dumps(report))[0].build() == svt


@pytest.mark.parametrize("item", [
    {"mechanism": "gaussian-svt", "sigma_threshold": 2, "sigma_queries": 4},  # no max_length
    {"mechanism": "gaussian-svt", "sigma_threshold": 2, "sigma_queries": 4, "max_length": 10, "cutoff": 1.5},
    {"mechanism": "laplace-svt", "scale_threshold": 2, "scale_queries": 4, "max_length": 10},
    {"mechanism": "laplace-svt", "scale_threshold": -2, "scale_queries": 4},
    {"mechanism": "gaussian-svt-margin", "sigma_threshold": 2, "sigma_queries": 4},  # no margin
    {"mechanism": "gaussian-svt-margin", "sigma_threshold": 2, "sigma_queries": 4, "margin": "inf"},
    {"mechanism": "gaussian-svt-margin", "sigma_threshold": 4, "sigma_queries": 2, "margin": 10},  # s2 <= s1
])
def test_bad_specs_are_clear_errors(item):
    with pytest.raises((SpecError, ValueError)):
        entries_from_json(json.dumps([item]))
