"""An eager NumPy twin of the minerva API the MNIST apps use, for baselines: the same model
code (``apps/layers.py``) runs the same registered kernels, called at once on host arrays,
with no runtime in between."""
from __future__ import annotations

import contextlib
from types import SimpleNamespace
from unittest import mock

import numpy as np

import minerva.nn
from minerva.ops import registry


def eager_apply(op_def, inputs, attrs=None, out=None, **more):
    """Run ``op_def``'s kernel now with NumPy on host arrays; its result(s). Called as
    ``builder.build`` is (``attrs`` a dict) or with keyword attributes."""
    attrs = dict(attrs or {}, **more)
    specs = [registry.spec(a.shape, a.dtype) for a in inputs]
    outs = [np.empty(s.shape, s.dtype) for s in op_def.infer(*specs, **attrs)]
    op_def.impl(np, *inputs, out=outs[0] if len(outs) == 1 else tuple(outs), **attrs)
    return outs[0] if len(outs) == 1 else tuple(outs)


def _matmul(a, b, transpose_a=False, transpose_b=False):
    return np.matmul(a.swapaxes(-1, -2) if transpose_a else a,
                     b.swapaxes(-1, -2) if transpose_b else b)


EAGER_MV = SimpleNamespace(
    relu=lambda x: eager_apply(registry.get("relu"), [x]), matmul=_matmul,
    argmax=np.argmax, nn=minerva.nn, array=np.asarray)


@contextlib.contextmanager
def eager_numpy():
    """Inside: ``apps.layers`` (and ``mv.nn``) compute eagerly with NumPy on host arrays."""
    from apps import layers
    with mock.patch.object(layers, "mv", EAGER_MV), \
            mock.patch.object(minerva.nn, "build", eager_apply), \
            mock.patch.object(minerva.nn, "to_narray", lambda x, *_: np.asarray(x)):
        yield
