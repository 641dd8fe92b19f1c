"""``python -m hookviz [--check]``: the environment check of :mod:`hookviz.doctor` (READY or numbered fixes)."""

import sys

from hookviz.doctor import main

sys.exit(main())
