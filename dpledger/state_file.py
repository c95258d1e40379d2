"""Ind-KNN budgets kept between runs of ``dpledger predict --state FILE`` (DESIGN.md rule 8: restarting a
predictor must not refresh anyone's budget).

The file is a ``.npz`` archive read with ``allow_pickle=False``: every array of
:meth:`predict.ind_knn.IndKNNClassifier.state_dict` is an entry, everything else (numbers, strings, the
generator's state) is one JSON entry, together with a SHA-256 fingerprint of the private records and labels, so a
state file cannot be resumed on other data by mistake. Writes go to a temporary file that replaces the old one
in one step, so an interrupted write never loses the previous budgets.

Examples
--------
>>> import tempfile, pathlib
>>> state = {"format": "x", "a": np.arange(3.0), "nested": {"b": np.ones((2, 2), dtype=np.float32), "n": 5}}
>>> path = pathlib.Path(tempfile.mkdtemp()) / "state.npz"
>>> save(path, state, fingerprint="abc")
>>> back, fp = load(path)
>>> fp, back["nested"]["n"], back["nested"]["b"].dtype.name, back["a"].tolist()
('abc', 5, 'float32', [0.0, 1.0, 2.0])
"""

import hashlib
import json
import os
import pathlib
import tempfile

import numpy as np

__all__ = ["save", "load", "fingerprint", "FORMAT"]

FORMAT = "dpledger.cli.ind-knn-state"
_META = "__meta__"


def fingerprint(X, y):
    """SHA-256 of the private records (float32, C order) and labels (int64), with their shapes."""
    h = hashlib.sha256()
    X = np.ascontiguousarray(X, dtype=np.float32)
    y = np.ascontiguousarray(y, dtype=np.int64)
    h.update(repr((X.shape, y.shape)).encode())
    h.update(X.tobytes())
    h.update(y.tobytes())
    return h.hexdigest()


def _split(value, prefix, arrays):
    if isinstance(value, dict):
        return {"dict": {k: _split(v, f"{prefix}/{k}", arrays) for k, v in value.items()}}
    if isinstance(value, np.ndarray):
        arrays[prefix] = value
        return {"array": prefix}
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        value = value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"value": value}
    raise TypeError(f"state of type {type(value).__name__} at {prefix!r} cannot be saved.")


def _join(node, arrays):
    if "dict" in node:
        return {k: _join(v, arrays) for k, v in node["dict"].items()}
    if "array" in node:
        return arrays[node["array"]]
    return node["value"]


def save(path, state, *, fingerprint):
    """Write ``state`` (nested dicts of arrays and plain values) to ``path`` atomically."""
    path = pathlib.Path(path)
    arrays = {}
    tree = _split(state, "s", arrays)
    meta = json.dumps({"format": FORMAT, "fingerprint": fingerprint, "tree": tree})
    directory = path.parent if str(path.parent) else pathlib.Path(".")
    fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp.npz", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            np.savez(handle, **{_META: np.array(meta)}, **arrays)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load(path):
    """``(state, fingerprint)`` from a file written by :func:`save`."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            if _META not in archive.files:
                raise ValueError(f"--state {path} is not a dpledger state file.")
            meta = json.loads(str(archive[_META]))
            arrays = {name: archive[name] for name in archive.files if name != _META}
    except (OSError, json.JSONDecodeError) as err:
        raise ValueError(f"--state {path} cannot be read: {err}.") from None
    if meta.get("format") != FORMAT:
        raise ValueError(f"--state {path} is not a dpledger Ind-KNN state file (format {meta.get('format')!r}).")
    return _join(meta["tree"], arrays), meta["fingerprint"]
