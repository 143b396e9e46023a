"""Building collectives: validate on the user's thread, take a sequence number, build the
op through the op-building seam (``builder.build``) on the device of its arrays, and
tell the communication thread the collective exists.

A mistake the user can see (a bad op name, a dtype that cannot be reduced, a root out of
range, arrays on different devices) raises here, before a number is taken: a number is
given only to a collective that is then built (or reported as cancelled), so the ranks'
numbering stays in step.
"""
from __future__ import annotations

from minerva import builder
from minerva.common.errors import ShapeError
from minerva.distributed import session as sessions
from minerva.distributed.collective_ops import OP_DEFS, Collective, Place, check_reduction
from minerva.narray import NArray
from minerva.ops import registry
from minerva.ops.views import c_strides
from minerva.system import get_system

COPY = registry.get("copy")


def as_arrays(values, what: str) -> list[NArray]:
    """``values`` as NArrays (host values are uploaded to the current device)."""
    return [builder.to_narray(v, what) for v in values]


def build_collective(kind: str, arrays: list, op=None, root: int = 0):
    """Build one collective over ``arrays`` (all on one device, one dtype); its result:
    one NArray, or a tuple for several arrays."""
    session = sessions.current()
    system = get_system()
    device_id = arrays[0].device if arrays else system.current_device()
    _check(kind, arrays, op, root, session.size, device_id)
    with builder.on_device(device_id):
        arrays = [contiguous(x) for x in arrays]
        place = place_of(system, device_id)
        collective = Collective(session.next_seq(), kind, op, root, place, session)
        try:
            result = builder.build(OP_DEFS[kind], arrays, {"collective": collective})
        except BaseException as err:
            session.comm.cancel(collective, err)
            raise
    session.comm.issue(collective, result[0] if isinstance(result, tuple) else result)
    return result


def contiguous(x: NArray) -> NArray:
    """``x``, or a C-contiguous copy of it when it is a strided view (transfers read
    whole buffers)."""
    if not x.is_view or x.strides == c_strides(x.shape, x.itemsize):
        return x
    return builder.build(COPY, [x])




def place_of(system, device_id: int) -> Place:
    """Where arrays of device ``device_id`` live (a GPU's layer and compute stream)."""
    device = system.devices.get(device_id)
    if device.kind != "gpu":
        return Place(device_id)
    return Place(device_id, device.layer, device.physical,
                 device.streams[device.output_stream])


def _check(kind, arrays, op, root, size: int, device_id: int) -> None:
    if kind == "allreduce":
        check_reduction(op, arrays[0].dtype)
    if kind == "broadcast" and (isinstance(root, bool) or not isinstance(root, int)
                                or not 0 <= root < size):
        raise ValueError(f"broadcast: root must be a rank in 0..{size - 1}, got {root!r}")
    for x in arrays[1:]:
        if x.dtype != arrays[0].dtype:
            raise ShapeError(f"{kind}: the arrays of one bucket share a dtype; got "
                             f"{arrays[0].dtype} and {x.dtype}")
        if x.device != device_id:
            raise ShapeError(f"{kind}: the arrays of one bucket live on one device; got "
                             f"devices {device_id} and {x.device}")
