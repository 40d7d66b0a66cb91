"""`python -m evalkit.gate BASELINE CANDIDATE`: the command's name; its code is evalkit.cli.gate."""

import sys

from evalkit.cli.gate import main
from evalkit.cli.main import deprecated

deprecated("evalkit.gate")
sys.exit(main())
