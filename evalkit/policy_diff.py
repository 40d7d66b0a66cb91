"""`python -m evalkit.policy_diff OLD NEW`: the command's name; its code is evalkit.cli.policy_diff."""

import sys

from evalkit.cli.main import deprecated
from evalkit.cli.policy_diff import main

if __name__ == "__main__":
    deprecated("evalkit.policy_diff")
    sys.exit(main())
