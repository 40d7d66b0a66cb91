"""`python -m evalkit [overrides]`: compose -> run -> decide -> render -> exit code (evalkit.cli.run)."""

import sys

from evalkit.cli.run import main

if __name__ == "__main__":
    sys.exit(main())
