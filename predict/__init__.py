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

from predict._common import ABSTAIN
from predict.ind_knn import IndKNNClassifier
from predict.lsh import LSHSearch
from predict.neighbours import ExactSearch
from predict.private_knn import PrivateKNNClassifier

__all__ = ["ABSTAIN", "IndKNNClassifier", "PrivateKNNClassifier", "ExactSearch", "LSHSearch"]
