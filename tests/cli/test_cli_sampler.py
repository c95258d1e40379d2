"""``--sampler``: fixed-size batches without replacement on the command line and in JSON specs; the samplers with
no proven amplified bound are refused with the reason."""

import json
import math
import re

import pytest

from dpledger.accountants import FourierAccountant, RDPAccountant
from dpledger.cli import main
from dpledger.mechanisms import (
    GaussianMechanism,
    RandomAllocation,
    SampledWithoutReplacement,
    SampledWithReplacement,
)

WOR = ("--mechanism", "gaussian", "--sigma", "1.1", "--sensitivity", "2", "--sampler", "without-replacement",
       "--batch-size", "256", "--dataset-size", "60000")


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_without_replacement_from_flags_is_the_combinator(capsys):
    code, out, err = run(capsys, "epsilon", *WOR, "--epochs", "2", "--delta", "1e-5", "--json",
                         "--accountant", "both")
    assert code == 0, err
    data = json.loads(out)
    (entry,) = data["mechanisms"]
    assert entry["sampler"] == "without-replacement" and entry["batch_size"] == 256
    assert entry["dataset_size"] == 60000 and "sampling_probability" not in entry
    count = math.ceil(2 * 60000 / 256)
    assert entry["count"] == count
    m = SampledWithoutReplacement(GaussianMechanism(sigma=1.1, sensitivity=2.0), batch_size=256,
                                  dataset_size=60000)
    by_accountant = {r["accountant"]: r["epsilon"] for r in data["results"]}
    assert by_accountant["RDP"] == RDPAccountant().compose(m, count=count).get_epsilon(1e-5)
    assert by_accountant["Fourier"] == pytest.approx(FourierAccountant().compose(m, count=count).get_epsilon(1e-5),
                                                     rel=1e-6)


def test_json_spec_round_trip(tmp_path, capsys):
    spec = {"mechanisms": [{"mechanism": "gaussian", "sigma": 1.1, "sensitivity": 2, "sampler": "without-replacement",
                            "batch_size": 100, "dataset_size": 10000, "count": 500}]}
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    code, out, err = run(capsys, "epsilon", "--spec", str(path), "--delta", "1e-5", "--json")
    assert code == 0, err
    data = json.loads(out)
    path.write_text(out)  # a --json report is a spec
    code, out2, err = run(capsys, "epsilon", "--spec", str(path), "--delta", "1e-5", "--json")
    assert code == 0, err
    assert json.loads(out2)["results"] == data["results"]
    m = SampledWithoutReplacement(GaussianMechanism(sigma=1.1, sensitivity=2.0), batch_size=100, dataset_size=10000)
    assert data["results"][0]["epsilon"] == RDPAccountant().compose(m, count=500).get_epsilon(1e-5)


def test_calibration_with_fixed_size_batches_meets_the_target(capsys):
    code, out, err = run(capsys, "calibrate", "--mechanism", "gaussian", "--sensitivity", "2", "--sampler",
                         "without-replacement", "--batch-size", "100", "--dataset-size", "10000", "--count", "1000",
                         "--epsilon", "2", "--delta", "1e-5", "--json")
    assert code == 0, err
    sigma = json.loads(out)["value"]
    m = SampledWithoutReplacement(GaussianMechanism(sigma=sigma, sensitivity=2.0), batch_size=100,
                                  dataset_size=10000)
    eps = RDPAccountant().compose(m, count=1000).get_epsilon(1e-5)
    assert eps <= 2.0 and eps > 1.99  # meets the target, and not by a wide margin (q = b/n was used)


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (("--mechanism", "gaussian", "--sigma", "1.1", "--sampler", "without-replacement", "--batch-size", "10",
          "--dataset-size", "100"), "needs --sensitivity given explicitly"),
        (("--mechanism", "gaussian", "--sigma", "1.1", "--sensitivity", "2", "--sampler", "without-replacement",
          "--count", "10"), "needs --batch-size and --dataset-size"),
        (("--mechanism", "gaussian", "--sigma", "1.1", "--sampler", "with-replacement", "--batch-size", "10",
          "--dataset-size", "100"), "with-replacement .* needs --sensitivity"),
        (("--mechanism", "gaussian", "--sigma", "1.1", "--sampler", "random-allocation", "--batch-size", "10",
          "--dataset-size", "100", "--epochs", "2.5"), "whole number of epochs"),
        (("--mechanism", "gaussian", "--sigma", "1.1", "--sampler", "random-allocation", "--count", "3"),
         "random-allocation .* needs --batch-size"),
        (("--mechanism", "gaussian", "--sigma", "1.1", "--sensitivity", "2", "--sampler", "without-replacement",
          "--batch-size", "101", "--dataset-size", "100"), "at most"),
    ],
)
def test_bad_sampler_requests_are_refused_with_the_reason(capsys, argv, match):
    code, out, err = run(capsys, "epsilon", *argv, "--delta", "1e-5")
    assert code == 2 and out == ""
    assert re.search(match, err), err


def test_random_allocation_from_flags(capsys):
    code, out, err = run(capsys, "epsilon", "--mechanism", "gaussian", "--sigma", "1.1", "--sampler",
                         "random-allocation", "--batch-size", "6000", "--dataset-size", "60000", "--epochs", "10",
                         "--delta", "1e-5", "--json", "--accountant", "both")
    assert code == 0, err
    data = json.loads(out)
    (entry,) = data["mechanisms"]
    assert entry["sampler"] == "random-allocation" and entry["count"] == 10
    by = {r["accountant"]: r for r in data["results"]}
    m = RandomAllocation(GaussianMechanism(sigma=1.1), steps=10)
    assert by["RDP"]["epsilon"] == RDPAccountant().compose(m, count=10).get_epsilon(1e-5)
    # Fourier: the amplified pair's proven loss buckets (AllocationPair), and says so
    assert by["Fourier"]["epsilon"] < 5.23 < by["RDP"]["epsilon"] < 5.73
    assert "AllocationPair" in by["Fourier"]["method"]


def test_with_replacement_from_flags_uses_the_rdp_bound(capsys):
    code, out, err = run(capsys, "epsilon", "--mechanism", "gaussian", "--sigma", "4", "--sensitivity", "2",
                         "--sampler", "with-replacement", "--batch-size", "10", "--dataset-size", "1000",
                         "--count", "100", "--delta", "1e-5", "--json")
    assert code == 0, err
    data = json.loads(out)
    m = SampledWithReplacement(GaussianMechanism(sigma=4.0, sensitivity=2.0), batch_size=10, dataset_size=1000)
    assert data["results"][0]["epsilon"] == RDPAccountant().compose(m, count=100).get_epsilon(1e-5)
    assert data["mechanisms"][0]["sampler"] == "with-replacement"


def test_with_replacement_goes_through_the_fourier_accountant(capsys):
    code, out, err = run(capsys, "epsilon", "--mechanism", "gaussian", "--sigma", "4", "--sensitivity", "2",
                         "--sampler", "with-replacement", "--batch-size", "10", "--dataset-size", "1000",
                         "--count", "100", "--delta", "1e-5", "--accountant", "fourier", "--json")
    assert code == 0, err
    data = json.loads(out)
    m = SampledWithReplacement(GaussianMechanism(sigma=4.0, sensitivity=2.0), batch_size=10, dataset_size=1000)
    fourier = FourierAccountant().compose(m, count=100).get_epsilon(1e-5)
    assert data["results"][0]["epsilon"] == pytest.approx(fourier, rel=1e-9)
    assert fourier < RDPAccountant().compose(m, count=100).get_epsilon(1e-5)


def test_poisson_is_the_default_and_can_be_named(capsys):
    a = run(capsys, "epsilon", "--mechanism", "gaussian", "--sigma", "1.1", "--batch-size", "256",
            "--dataset-size", "60000", "--count", "100", "--delta", "1e-5", "--json")[1]
    b = run(capsys, "epsilon", "--mechanism", "gaussian", "--sigma", "1.1", "--sampler", "poisson", "--batch-size",
            "256", "--dataset-size", "60000", "--count", "100", "--delta", "1e-5", "--json")[1]
    assert json.loads(a)["results"] == json.loads(b)["results"]
