"""``python -m controller.cli``: the ``tablectl`` console script."""

import sys

from controller.cli.tablectl import main

sys.exit(main())
