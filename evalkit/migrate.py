"""`python -m evalkit.migrate`: the command's name; its code is evalkit.cli.migrate."""

import sys

from evalkit.cli.main import deprecated
from evalkit.cli.migrate import main

if __name__ == "__main__":
    deprecated("evalkit.migrate")
    sys.exit(main())
