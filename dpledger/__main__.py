"""``python -m dpledger``: the same as the ``dpledger`` command."""

import sys

from dpledger.cli import main

if __name__ == "__main__":
    sys.exit(main())
