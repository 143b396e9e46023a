"""Libraries that take NumPy arrays, given NArrays: each test runs the same client code on
NumPy arrays and on NArrays and compares the results (doc/numpy/clients.md)."""
