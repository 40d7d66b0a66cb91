"""`python -m evalkit.history [RUNS...]`: the command's name; its code is evalkit.cli.history."""

import sys

from evalkit.cli.history import main

if __name__ == "__main__":
    sys.exit(main())
