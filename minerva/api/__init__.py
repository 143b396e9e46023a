"""The NumPy face of minerva, one module (or folder) per chapter of NumPy's "Routines"
page, over ``minerva.api.core``: ``creation``, ``indexing``, ``manipulation``,
``sorting``, ``sets``, ``logic``, ``statistics``, ``dtypes``, ``errors``, ``interop`` and
``missing``; ``methods`` is the one table of NArray's operators and methods; ``fallback``
runs every other NumPy name on the host (NumPy's own code on host copies).

``minerva/__init__.py`` makes the namespace of every name in each chapter's ``__all__``.
A chapter imports ``minerva.api.core``, the seam (``minerva.builder``,
``minerva.narray``, ``minerva.seeding``), ``minerva.ops`` and ``minerva.common``, never
another chapter (see doc/design.md).
"""
