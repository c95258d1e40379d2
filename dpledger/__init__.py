"""The ``dpledger`` command line: it sits on top of ``mechanisms``, ``accountants`` and ``predict``."""
