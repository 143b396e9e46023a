"""What every chapter of the NumPy face builds on (NumPy's names, each module's
``__all__`` a part of the namespace): ``manipulation`` (shapes, views, joins),
``indexing`` (``x[key]``, ``x[key] = v``), ``creation`` (new arrays, dtype and shape
checks), ``layout`` (memory orders), ``ufuncs`` (the element-wise functions, with
``ufunc_methods`` and ``comparisons``), ``elementwise`` (clip, where, astype, round, complex
parts, nan_to_num), ``reductions`` (sums, extremes, cumulative sums, diff) and
``arguments`` (checks of axes and indices).

A module here may touch NArray's private fields (it is part of NArray's door); a chapter
of ``minerva.api`` imports these modules and no other chapter.
"""
