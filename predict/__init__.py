"""Private predictors built on the accounting core: Private-kNN and Ind-KNN, their neighbour search and budgets.

* :class:`PrivateKNNClassifier` (``predict/private_knn.py``): Private-kNN (Poisson subsampling, noisy
  screening, Gaussian noisy argmax), accounted by an RDP accountant inside.
* :class:`IndKNNClassifier` (``predict/ind_knn.py``): kernelized nearest neighbours with an individual Renyi
  filter (the per-query budget loop is ``IndKNNClassifier._answer``), prediction reuse and LSH search.
* ``predict/neighbours.py``: exact blocked kernel search with canonical kernel values; ``predict/lsh.py``: LSH;
  ``predict/datasets.py``: offline image data sets; ``predict/text_data.py``: Rotten Tomatoes reviews as
  all-MiniLM-L6-v2 embeddings (optional data).

Torch is used here (and only here) for blocked distance and kernel computations. Both classifiers take an
explicit ``random_state``; numpy's generator is not cryptographically secure.
"""

import importlib as _importlib

for _extra in ("torch", "sklearn"):  # torch first: scikit-learn probes torch itself
    try:
        _importlib.import_module(_extra)
    except ImportError as _missing:  # exercised in tests/packaging without the extra
        raise ImportError(
            f"dpledger.predict needs the 'predict' extra ({_extra} is missing): pip install 'dpledger[predict]'"
        ) from _missing

from dpledger.predict._common import ABSTAIN
from dpledger.predict.ind_knn import IndKNNClassifier
from dpledger.predict.lsh import LSHSearch
from dpledger.predict.neighbours import ExactSearch
from dpledger.predict.private_knn import PrivateKNNClassifier

__all__ = ["ABSTAIN", "IndKNNClassifier", "PrivateKNNClassifier", "ExactSearch", "LSHSearch"]
