"""`python -m evalkit.calibrate`: the command's name; its code is evalkit.cli.calibrate."""

import sys

from evalkit.cli.calibrate import main
from evalkit.cli.main import deprecated

if __name__ == "__main__":
    deprecated("evalkit.calibrate")
    sys.exit(main())
