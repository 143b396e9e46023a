"""Errors of ``minerva.distributed``. A failed collective fails its op: the error below is
the ``__cause__`` of the :class:`~minerva.OpError` raised at the next wait that depends
on it, on every rank the failure concerns."""
from __future__ import annotations

from minerva.common.errors import MinervaError


class DistributedError(MinervaError):
    """A collective could not run, or ``minerva.distributed`` was used wrongly (not
    initialized, bad launcher setup)."""


class CollectiveMismatchError(DistributedError):
    """The ranks issued different collectives at the same place in their order (another
    kind, op, root, shape or dtype). Raised on every rank; the ranks stay usable."""


class PeerInputError(DistributedError):
    """Another rank could not take part in a collective because its own input had failed
    (or was cancelled); this rank's copy of the collective fails too."""


class CommunicationLost(DistributedError):
    """The ranks stopped answering (a rank exited, crashed or hung past
    ``MINERVA_DIST_TIMEOUT``), or Ctrl-C interrupted communication. The communicator is
    broken from then on: every later collective fails at once with this error."""
