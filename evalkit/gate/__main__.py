"""`python -m evalkit.gate BASELINE CANDIDATE`: the command's name; its code is evalkit.cli.gate."""

import sys

from evalkit.cli.gate import main

sys.exit(main())
