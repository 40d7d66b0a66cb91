"""`python -m evalkit.calibrate`: the command's name; its code is evalkit.cli.calibrate."""

import sys

from evalkit.cli.calibrate import main

if __name__ == "__main__":
    sys.exit(main())
