"""The Python calls a piece of code makes, counted with cProfile."""
from __future__ import annotations

import cProfile
import pstats


def python_calls(run) -> dict:
    """Python function name -> the calls made while ``run()`` ran."""
    profile = cProfile.Profile()
    profile.enable()
    run()
    profile.disable()
    return {key[2]: row[1] for key, row in pstats.Stats(profile).stats.items()}
