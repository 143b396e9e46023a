"""The pieces of ``minerva.manipulation`` (NumPy's array-manipulation functions), one
file per family; ``minerva.manipulation`` gathers and exports them."""
