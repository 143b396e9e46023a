"""Devices: where kernels run (CPU worker threads, CUDA streams), each with its own store."""
