"""What the communication thread does with one collective: send its header, check every
rank's, move the data (host, NCCL or staged), and complete the op.

A collective this rank cannot run (its input failed, or it was cancelled) still sends a
header marked failed, so the other ranks fail that collective at once instead of waiting
for the timeout. Once communication is lost (a timeout, Ctrl-C), the runner is *broken*:
every later collective fails at once with the same cause.
"""
from __future__ import annotations

import time

import numpy as np

from minerva.common.logging import get_logger
from minerva.distributed import header as headers
from minerva.distributed.errors import CommunicationLost
from minerva.distributed.gpu_runner import GpuRunner
from minerva.distributed.host_ops import Staging, run_host

log = get_logger("minerva.distributed")


class Runner:
    """Runs collectives over ``transport``, each bounded by ``timeout`` seconds. Used by
    the communication thread only (``broken`` is read elsewhere: one attribute)."""

    def __init__(self, transport, timeout: float, load_nccl):
        self.transport = transport
        self.timeout = timeout
        self.staging = Staging()
        self.gpu = GpuRunner(transport, timeout, load_nccl)
        self.broken: CommunicationLost | None = None

    def run(self, job) -> None:
        """Run ``job`` and complete its op (exactly once), with its error if it failed."""
        error = None
        try:
            self._run(job)
        except CommunicationLost as err:
            error = self._break(err, job.collective)
        except Exception as err:  # stored on the collective's outputs by the engine
            error = err
        try:
            job.done(error)
        except Exception:  # a completion bug must not stop the communication thread
            log.exception("dist_completion_failed", collective=repr(job.collective))

    def skip(self, collective, error: BaseException) -> None:
        """Tell the other ranks that this rank cannot run ``collective`` (its op already
        failed here with ``error``)."""
        log.info("dist_collective_skipped", collective=repr(collective), error=repr(error))
        if self.broken is not None:
            return
        header = headers.encode(collective.seq, collective.kind, collective.op,
                                collective.root, np.uint8, [], status=headers.FAILED)
        try:
            self.transport.exchange(header, time.monotonic() + self.timeout)
        except CommunicationLost as err:
            self._break(err, collective)

    def fail_all(self, reason: str) -> CommunicationLost:
        """Break the runner (shutdown with collectives pending); the error to fail with."""
        return self._break(CommunicationLost(reason), None)

    def close(self) -> None:
        """Release the GPU side (at exit)."""
        self.gpu.close(self.broken is None)

    # ---- one collective ----------------------------------------------------------------

    def _run(self, job) -> None:
        if self.broken is not None:
            raise CommunicationLost(f"communication was lost earlier ({self.broken}); "
                                    "no collective can run any more")
        deadline = time.monotonic() + self.timeout
        table = self.transport.exchange(self._header(job), deadline)
        headers.check(table, job.seq)
        if job.collective.place.is_gpu and job.collective.kind != "barrier":
            self.gpu.run(job, table, deadline)
        else:
            run_host(self.transport, job, deadline, self.staging)

    def _header(self, job) -> np.ndarray:
        collective = job.collective
        arrays = job.inputs if collective.kind != "allgather" else job.inputs[:1]
        dtype = arrays[0].dtype if arrays else np.dtype(np.uint8)
        place = collective.place
        gpu = place.is_gpu and collective.kind != "barrier"
        nccl = gpu and self.gpu.nccl_ok(collective.kind, collective.op, dtype,
                                        place.ordinal)
        return headers.encode(collective.seq, collective.kind, collective.op,
                              collective.root, dtype, [a.shape for a in arrays],
                              place=headers.GPU if gpu else headers.CPU, nccl=nccl,
                              ordinal=place.ordinal,
                              gpu_id=self.gpu.identity(place.ordinal) if nccl else 0)

    def _break(self, err: CommunicationLost, collective) -> CommunicationLost:
        if self.broken is None:
            self.broken = err
            log.error("dist_communication_lost", rank=self.transport.rank,
                      collective=repr(collective), error=str(err))
        return err
