"""`python -m evalkit.bless`: the command's name; its code is evalkit.cli.bless."""

import sys

from evalkit.cli.bless import main

if __name__ == "__main__":
    sys.exit(main())
