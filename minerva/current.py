"""The process's one runtime, as the op-building seam finds it: ``Runtime.system`` (the
running ``System``, None until first use; hot paths read it directly), ``running()`` and
``get_system()``, which starts one from the environment on first use.

Starting a runtime is ``minerva.system``'s work (it wires the DAG, the engine and the
devices): ``minerva.system`` fills ``Runtime.start`` when it is imported, as the package
``minerva`` does first thing. So this module, which every op reads, imports nothing of the
devices and the scheduler below it, and the seam (``minerva.builder``) stays low in the
import graph.
"""
from __future__ import annotations

import threading

from minerva.common.errors import MinervaError


class Runtime:
    """The process's one System (``system``, None until first use), started on first use
    by ``start`` (``minerva.system.start``); ``lock`` guards its start and stop."""

    system = None
    lock = threading.Lock()
    start = None


def get_system():
    """The running System, started from the environment on first use."""
    system = Runtime.system
    if system is None:
        if Runtime.start is None:
            raise MinervaError("minerva.system is not imported: import minerva first")
        system = Runtime.start()
    return system


def running():
    """The running System, or None."""
    return Runtime.system
