"""`python -m evalkit.history [RUNS...]`: the command's name; its code is evalkit.cli.history."""

import sys

from evalkit.cli.history import main
from evalkit.cli.main import deprecated

if __name__ == "__main__":
    deprecated("evalkit.history")
    sys.exit(main())
