"""On PYTHONPATH with ``CORE_RECORD_DIR`` set, any Python process (the bench's service) records its TableCore
calls (tests/support/core_recorder.py). Nothing in the product knows about it."""

from __future__ import annotations

import os
import sys

if os.environ.get("CORE_RECORD_DIR"):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    import core_recorder

    core_recorder.install()
