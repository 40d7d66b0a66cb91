"""`python -m evalkit.review`: the command's name; its code is evalkit.cli.review."""

import sys

from evalkit.cli.main import deprecated
from evalkit.cli.review import main

if __name__ == "__main__":
    deprecated("evalkit.review")
    sys.exit(main())
