"""NumPy's array-manipulation functions beyond the basics (``minerva.api.core.manipulation``:
reshape, transpose, concatenate, stack, flip, broadcast ...), under NumPy's names and
signatures, one file per family: ``shaping`` (``pad``, ``repeat``, ``resize``, ``roll``,
``tile``, ``copyto``), ``joins`` (``hstack``, ``vstack``, ``dstack``, ``column_stack``,
``row_stack``, ``append``, ``insert``, ``delete``) and ``views`` (``fliplr``, ``flipud``,
``rot90``, ``atleast_1d``/``2d``/``3d``, the split family, ``unstack``). Each file's
``__all__`` is part of the namespace.

Views where NumPy gives views (``fliplr``, ``flipud``, ``rot90``, ``atleast_Nd``, the split
family, ``unstack``); new arrays elsewhere. See doc/numpy/manipulation.md.
"""
