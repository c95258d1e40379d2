"""The installed package: the dpledger namespace, a light core, and a clear message for the predict extra."""

import subprocess
import sys

import dpledger


def _run(code):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd="/")


def test_the_core_never_imports_torch_scikit_learn_matplotlib_or_mpmath():
    done = _run("import sys, dpledger, dpledger.accountants, dpledger.mechanisms, dpledger.cli\n"
                "from dpledger import FourierAccountant, GaussianMechanism, PoissonSubsampled\n"
                "m = PoissonSubsampled(GaussianMechanism(sigma=1.1), sampling_probability=0.01)\n"
                "FourierAccountant().compose(m, 100).get_epsilon(1e-5)\n"
                "print(sorted(n for n in ('torch', 'sklearn', 'matplotlib', 'mpmath') if n in sys.modules))")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_predict_extra_is_named_when_it_is_missing():
    done = _run("import sys; sys.modules['torch'] = None\nimport dpledger.predict")
    assert done.returncode != 0 and "pip install 'dpledger[predict]'" in done.stderr
    done = _run("import sys; sys.modules['torch'] = None\nimport dpledger\nprint(dpledger.RDPAccountant.__name__)")
    assert done.returncode == 0 and done.stdout.strip() == "RDPAccountant"


def test_no_generic_top_level_modules_and_the_main_names_at_the_top():
    for name in ("mechanisms", "accountants", "predict"):
        done = _run(f"import {name}")
        assert done.returncode != 0 and "ModuleNotFoundError" in done.stderr, name
    assert dpledger.__version__ != "unknown"
    assert dpledger.IndKNNClassifier.__module__ == "dpledger.predict.ind_knn"
    for name in dpledger.__all__:
        assert getattr(dpledger, name) is not None
