"""The pieces of ``minerva.linalg``, one file per family: products (``products``), solvers
and decompositions (``solvers``), norms and matrix functions (``norms``). ``minerva.linalg``
gathers them."""
