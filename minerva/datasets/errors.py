"""The error the dataset loaders raise."""
from __future__ import annotations

from minerva.common.errors import MinervaError


class DatasetError(MinervaError):
    """A data set could not be found, fetched, read or trusted; the message says what to do."""
