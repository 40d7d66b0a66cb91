"""`python -m evalkit.adapt SOURCE BASELINE CANDIDATE`: the command's name; its code is evalkit.cli.adapt."""

import sys

from evalkit.cli.adapt import main
from evalkit.cli.main import deprecated

deprecated("evalkit.adapt")
sys.exit(main())
