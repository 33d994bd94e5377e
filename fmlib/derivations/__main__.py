"""`python -m fmlib.derivations check` (the same command as `python -m fmlib derivations check`)."""

import sys

from .cli import main

sys.exit(main())
