"""CPU devices: ``device`` (:class:`CpuDevice`, its worker thread), ``split`` (its big
kernels as row ranges on its helper threads), ``blas`` (the BLAS thread count each kernel
holds)."""
