"""A CPU device lowers the interpreter's switch interval (its worker takes the GIL back
from the user's thread sooner after each kernel) and never raises one set shorter."""
from __future__ import annotations

import sys

import numpy as np

import minerva as mv
from minerva.device.cpu import device


def test_a_cpu_device_lowers_the_interval_and_never_raises_it():
    before = sys.getswitchinterval()
    try:
        sys.setswitchinterval(0.005)
        mv.set_device(mv.create_cpu_device(threads=1))
        assert sys.getswitchinterval() == device.SWITCH_INTERVAL_S
        sys.setswitchinterval(device.SWITCH_INTERVAL_S / 4)
        device.shorten_switch_interval()
        assert sys.getswitchinterval() == device.SWITCH_INTERVAL_S / 4
        x = np.arange(300_000, dtype=np.float64)
        got = (mv.asarray(x) * 2.0 + 1.0).to_numpy()   # the worker's results as before
        np.testing.assert_array_equal(got, x * 2.0 + 1.0)
    finally:
        sys.setswitchinterval(before)
