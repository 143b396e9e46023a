"""NumPy's indexing routines beyond ``x[key]`` (``minerva.api.core.indexing``): ``select``
(``take``, ``take_along_axis``, ``put``, ``put_along_axis``, ``diagonal``, ``trace``) and
``generate`` (``indices``, ``ix_``, ``r_``, ``c_``, ``s_``, ``index_exp``). Each file's
``__all__`` is part of the namespace."""
