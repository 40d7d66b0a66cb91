"""`python -m evalkit.bless`: the command's name; its code is evalkit.cli.bless."""

import sys

from evalkit.cli.bless import main
from evalkit.cli.main import deprecated

if __name__ == "__main__":
    deprecated("evalkit.bless")
    sys.exit(main())
