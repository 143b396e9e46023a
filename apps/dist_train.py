"""Data-parallel training over MPI ranks for the MNIST apps (``minerva.distributed``).

Every rank holds the whole model and sees the same sequence of global batches (the same
seed shuffles the same way everywhere); each takes its shard of every batch — and, with
several devices per rank, cuts the shard again over them, as ``mnist_cnn_2gpu.py`` does.
Each device's gradients are of (summed loss / *global* batch size), so adding them up
over devices and ranks gives exactly the gradient of the whole batch: the devices' are
added onto the first device, then :class:`minerva.distributed.GradientReducer` sums
them over the ranks, bucket by bucket, while the backward pass still computes, and every
rank takes the same optimizer step. Nothing waits but the loss reports.

Rank 0 prints and writes ``--json``/``--plot``; the others are quiet (``--trace`` gets
one file per rank: ``trace.json``, ``trace.rank1.json``, ...).
"""
from __future__ import annotations

import os
import sys

import numpy as np

import minerva as mv
import minerva.distributed as dist
from minerva.datasets import DatasetError
from apps import common, mnist_cnn_2gpu, report, train

LOCAL_RANK_VARS = ("MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK",
                   "MV2_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID")


def local_rank() -> int:
    """This rank's number among the ranks of its machine (the launcher says; else the
    global rank)."""
    for var in LOCAL_RANK_VARS:
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return dist.rank()


def shard(array: np.ndarray, rank: int, size: int) -> np.ndarray:
    """Rank ``rank``'s part of a global batch (near-equal contiguous parts)."""
    return np.array_split(array, size)[rank]


class DistStep(mnist_cnn_2gpu.DataParallelStep):
    """One data-parallel step of this rank over its ``devices``: its shard of the global
    batch, split over the devices, gradients tree-summed onto the first device, summed
    over the ranks in place, then the optimizer step. Returns the batch's summed loss over
    every rank (a 0-d NArray, not waited for). It runs eagerly (``jit`` is ignored): its
    collectives are deferred ops, which a jit plan does not replay."""

    def __init__(self, app, devices, params: dict, opt, manual: bool = False,
                 jit: bool = False):
        super().__init__(app, devices, params, opt, manual)
        dist.sync_params(params)             # every rank starts from rank 0's weights
        self.reducer = dist.GradientReducer(params)

    def __call__(self, x, y):
        n_total = len(y)
        xs = shard(x, dist.rank(), dist.size())
        ys = shard(y, dist.rank(), dist.size())
        losses, grads = [], []
        for dev, xd, yd in zip(self.devices, common.split(xs, len(self.devices)),
                               common.split(ys, len(self.devices))):
            with mv.device(dev):
                variables = self.variables(dev)
                losses.append(train.backward_pass(self.app, variables, mv.array(xd),
                                                  mv.array(yd), n_total, self.manual))
            grads.append({name: v.grad for name, v in variables.items()})
        used = self.devices[:len(grads)]
        with mv.autograd.pause():
            mnist_cnn_2gpu.tree_reduce(used, grads, in_place=True)
            self.reducer.reduce()            # sum over the ranks, into each .grad
            loss = self.total_loss(mnist_cnn_2gpu.tree_reduce(used, losses))
        with mv.device(self.devices[0]):
            self.opt.step()
        return loss

    def total_loss(self, loss):
        """The summed loss of the whole batch, from this rank's part (every rank's)."""
        return dist.allreduce(loss)


def rank_outputs(args) -> None:
    """Only rank 0 prints and writes results; each rank writes its own trace."""
    rank = dist.rank()
    if args.trace and rank:
        root, ext = os.path.splitext(args.trace)
        args.trace = f"{root}.rank{rank}{ext}"
    if rank:
        args.json = args.plot = None
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)          # stdout (log lines, summary); errors still show
        os.close(devnull)


def default_devices() -> str:
    """One GPU per rank (by local rank) when there are GPUs, else one CPU device."""
    n_gpus = mv.get_gpu_device_count()
    return f"gpu:{local_rank() % n_gpus}" if n_gpus else "cpu"


def main(app: common.App, argv=None, description: str | None = None) -> int:
    """``common.main`` for ranks: join the ranks, then parse, train and test ``app``."""
    dist.init()
    args = common.parse_args(app, argv, description)
    rank_outputs(args)   # (dist.init shared the host's cores among its ranks)
    try:
        report.check_extras(args)
        devices = common.create_devices(app, args.devices or default_devices())
        data = common.load_data(app, args)
        print(f"{common.describe(data, devices)}; ranks: {dist.size()}", flush=True)
        history = train.fit(app, args, devices, data)
        history.settings["ranks"] = dist.size()
        report.finish(args, history)
    except DatasetError as err:
        print(f"error: could not load MNIST.\n{err}", file=sys.stderr)
        return 1
    except common.AppError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    finally:
        mv.shutdown()
    return 0
