"""`python -m evalkit.compare BASELINE CANDIDATE`: the command's name; its code is evalkit.cli.compare."""

import sys

from evalkit.cli.compare import main
from evalkit.cli.main import deprecated

if __name__ == "__main__":
    deprecated("evalkit.compare")
    sys.exit(main())
