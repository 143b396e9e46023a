"""``minerva-trace`` without installing the package: ``python tools/minerva_trace.py
summary run.json`` (see ``minerva/tracing/cli.py``)."""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from minerva.tracing.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
