"""`python -m evalkit.compare BASELINE CANDIDATE`: the command's name; its code is evalkit.cli.compare."""

import sys

from evalkit.cli.compare import main

if __name__ == "__main__":
    sys.exit(main())
