"""What kernels share: calling the array module's function of NumPy's name."""
from __future__ import annotations

import numpy as np


def call(xp, name: str, *args, **kwargs):
    """``xp.<name>(*args, **kwargs)``; NumPy's function on host copies where another array
    module lacks the function or one of its arguments (its result moved back to the
    device)."""
    function = getattr(xp, name, None)
    if xp is np:
        return function(*args, **kwargs)
    if function is not None:
        try:
            return function(*args, **kwargs)
        except (TypeError, NotImplementedError):
            pass
    host = [a.get() if hasattr(a, "get") else a for a in args]
    kwargs = {k: v.get() if hasattr(v, "get") else v for k, v in kwargs.items()}
    result = getattr(np, name)(*host, **kwargs)
    if isinstance(result, tuple):
        return tuple(xp.asarray(r) for r in result)
    return xp.asarray(result)
