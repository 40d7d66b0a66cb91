"""`python -m evalkit.new`: the command's name; its code is evalkit.cli.new."""

import sys

from evalkit.cli.main import deprecated
from evalkit.cli.new import main

if __name__ == "__main__":
    deprecated("evalkit.new")
    sys.exit(main())
