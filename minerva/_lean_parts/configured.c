/* Part of minerva._lean (minerva/_lean.c includes every part, in order, into one
 * translation unit: the parts share its static state). */

/* ---- what `configure` hands over ------------------------------------------------- */

static PyTypeObject *NArrayType, *StorageType, *DataNodeType, *SpecType, *BlockType;
static PyObject *Runtime;          /* minerva.current.Runtime (its `system`) */
static PyObject *Seam;             /* minerva.builder.SEAM (its `hooks`, per thread) */
static PyObject *SeamListening;    /* Seam.listening: [hooks listening on every thread] */
static PyObject *HostRefusing;     /* HostGuard.refusing: [threads refusing host reads] */
static PyObject *NewNodeId;        /* minerva.dag.nodes.new_node_id */
static PyObject *NodeCounter;      /* ... the `itertools.count` it is the `__next__` of */
static PyObject *ExtObj;           /* NumPy's error-state context variable */
static PyObject *Decoded;          /* fp_errors._DECODED: captured -> (ErrState, captured) */
static PyObject *CallerState;      /* fp_errors.caller_state, which decodes a new state */
static PyObject *DirectRecords;    /* fp_errors.DIRECT_RECORDS (a list) */
static PyObject *Numpy;            /* the numpy module (a CPU device's xp) */
static PyObject *Failed;           /* lean.failed(engine, op_def, spec, device, block, target, exc) */
static PyObject *FailedWrite;      /* lean.failed_write(engine, op_def, written, device, exc) */
static PyObject *Reported;         /* lean.reported(errstate, op_def) */
static PyObject *NumericKinds;     /* "biufc" */
static PyObject *FloatScalars;     /* NumPy's float and complex scalar types (a tuple) */
static PyObject *IntScalars;       /* NumPy's integer scalar types (a tuple) */
static PyObject *NdarrayType;      /* numpy.ndarray, which views a buffer */
static long Completed;             /* the COMPLETED state */
static Py_ssize_t AheadBytes, ElideBytes;
static PyObject *Zero, *One, *CompletedObj, *KwOut, *KwReduce;
static PyObject *PackageDir;       /* callsite.PACKAGE_DIR: a frame inside is not the user's */
static PyObject *Blas;             /* minerva.device.cpu.blas.BLAS, the process's count */
static PyObject *BlasCond, *BlasLock, *BlasQueue;   /* its `_cond`, `_cond`'s lock, `_queue` */
static PyObject *ScalarResultOps;  /* builder.SCALAR_RESULT_OPS: 0-d results are scalars */
static PyObject *FinishedTag;      /* recorder.FINISHED, the first field of an op's record */

/* slot offsets, read off the classes' member descriptors */
enum { A_STORAGE, A_VIEW, A_SPEC, A_GRAD, A_READONLY, A_OWNDATA, A_SCALAR, A_BASE, A_N };
static const char *ArraySlots[A_N] = {"_storage", "_view", "_spec", "_grad_info",
                                      "_readonly", "_owndata", "_numpy_scalar", "_base"};
enum { S_CURRENT, S_ENGINE, S_N };
static const char *StorageSlots[S_N] = {"current", "engine"};
enum { D_NODE_ID, D_SPEC, D_DEVICE_ID, D_PRODUCER, D_STATE, D_RC, D_EXTERN_RC,
       D_WAITING, D_COPIES, D_COPY_OF, D_BASE, D_WRITER, D_WRITER_REFS, D_STORAGE_ID,
       D_VERSION, D_BLOCK, D_ARRAY, D_ERROR, D_WAITER, D_DEAD, D_CREATED_AT, D_N };
static const char *DataSlots[D_N] = {
    "node_id", "spec", "device_id", "producer", "state", "rc", "extern_rc", "waiting_ops",
    "copies", "copy_of", "base", "writer", "writer_refs", "storage_id", "version", "block",
    "array", "error", "waiter", "dead", "created_at"};
enum { P_SHAPE, P_DTYPE, P_NBYTES, P_N };
static const char *SpecSlots[P_N] = {"shape", "dtype", "nbytes"};
enum { B_NBYTES, B_LABEL, B_VIEW_KEY, B_VIEW, B_SIZE, B_STREAM, B_CHUNK, B_OFFSET, B_N };
static const char *BlockSlots[B_N] = {"nbytes", "label", "view_key", "view", "size", "stream",
                                      "chunk", "offset"};

enum { O_TINY_INLINE, O_BLAS, O_ROW_SPLIT, O_NAME, O_IMPL, O_ELEMENTWISE, O_INFER, O_N };
static const char *OpSlots[O_N] = {"tiny_inline", "blas", "row_split", "name", "impl",
                                   "elementwise", "infer"};
static PyTypeObject *OpDefType;    /* minerva.ops.registry.OpDef (its slots, read here) */

/* The engine's and the DAG's slots the lean path reads (`Engine`, `PhysicalDag`) */
enum { E_DAG, E_DEVICES, E_MAX_PENDING, E_N_INFLIGHT, E_CLOSED, E_RELEASES,
       E_RELEASE_POSTED, E_N };
static const char *EngineSlots[E_N] = {"dag", "devices", "max_pending", "n_inflight",
                                       "closed", "_releases", "_release_posted"};
static PyTypeObject *EngineType;
enum { G_DATA, G_N_COMPLETED, G_N };
static const char *DagSlots[G_N] = {"data", "n_completed_total"};
static PyTypeObject *DagType;
enum { DV_STORE, DV_CALLER_TRACK, DV_CANCELLED, DV_INLINE_LIMIT, DV_N };
static const char *DeviceSlots[DV_N] = {"store", "caller_track", "cancelled", "inline_limit"};
static PyTypeObject *DeviceType;   /* device.base.Device (its slots) */
static PyTypeObject *HookBusType;  /* common.hooks.HookBus (its `lean_trace` slot) */
static const char *LeanTraceSlot[1] = {"lean_trace"};

/* The parts of the running system every lean op reads, found once per system
 * (`system_parts`): its per-thread device (`_local`), engine, device table, engine hooks,
 * lock, release queue, DAG and the DAG's data nodes. A system sets them when it starts
 * and never rebinds them, so they are borrowed while it lives; the weak reference to it
 * tells a new system, even one made at the same address. */
static struct {
    PyObject *ref;   /* weakref to the system, or NULL */
    PyObject *local, *engine, *table, *hooks, *lock, *releases, *dag, *data;   /* borrowed */
    PyObject *chosen;   /* its `_chosen`: [whether any thread ever chose a device] */
} Parts;

static Py_ssize_t ArrayOff[A_N], StorageOff[S_N], DataOff[D_N], SpecOff[P_N], BlockOff[B_N],
    OpOff[O_N], EngineOff[E_N], DagOff[G_N], DeviceOff[DV_N], LeanTraceOff;

#define SLOT(obj, off) (*(PyObject **)((char *)(obj) + (off)))

/* Whether a shared count list (`SeamListening`, `HostRefusing`) says none, so the
 * per-thread state it counts need not be read. */
static inline int
none_counted(PyObject *counts)
{
    return PyList_GET_ITEM(counts, 0) == Zero;
}

/* `new_node_id()` (new reference): the next of its counter, without a method call. */
static inline PyObject *
next_node_id(void)
{
    if (NodeCounter != NULL)
        return Py_TYPE(NodeCounter)->tp_iternext(NodeCounter);
    return PyObject_CallNoArgs(NewNodeId);
}

/* interned attribute names */
static PyObject *s_system, *s_hooks, *s_engine, *s_local, *s_device, *s_devices, *s_table,
    *s_tiny_inline, *s_blas, *s_inline_limit, *s_store, *s_xp,
    *s_lock, *s_releases, *s_closed, *s_n_inflight, *s_max_pending, *s_recycles,
    *s_reap_locked, *s_delete_locked, *s_popleft, *s_appendleft, *s_append,
    *s_kicks_releases, *s_release_posted, *s_kick_releases, *s_free, *s_cancelled, *s_alloc_array, *s_array, *s_n_recycled,
    *s_dag, *s_data, *s_n_completed_total, *s_free_blocks, *s_quiet, *s_direct, *s_infer,
    *s_acquire, *s_release, *s_scalar, *s_reverse, *s_kind,
    *s_caller_track, *s_name, *s_lean_trace, *s_dtype, *s_row_split, *s_whole_limit,
    *s_try_hold_blas, *s_process_wide, *s_threads, *s_itemsize, *s__count, *s__users, *s_notify_all, *s__chosen, *s_locked;

/* Set `*obj` to the slot at `off`, or fail when the slot is empty. */
static int
slot_offsets(PyTypeObject *type, const char **names, Py_ssize_t *offsets, int n)
{
    for (int i = 0; i < n; i++) {
        PyObject *descr = PyDict_GetItemString(type->tp_dict, names[i]);
        if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
            PyErr_Format(PyExc_TypeError, "%s.%s is not a slot", type->tp_name, names[i]);
            return -1;
        }
        PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
        if (member->type != T_OBJECT_EX) {
            PyErr_Format(PyExc_TypeError, "%s.%s is not an object slot", type->tp_name,
                         names[i]);
            return -1;
        }
        offsets[i] = member->offset;
    }
    return 0;
}

/* The kind and item size of the dtypes met first, by identity (a dtype's are fixed; the
 * table holds each dtype, so its address is never another's). */
#define N_DTYPE_FACTS 16
static struct { PyObject *dtype, *kind; Py_ssize_t itemsize; } DtypeFacts[N_DTYPE_FACTS];
static int NDtypeFacts;

/* `dtype.kind` (new reference) and, where `itemsize` is not NULL, `dtype.itemsize`;
 * -1 on error. */
static int
dtype_facts(PyObject *dtype, PyObject **kind, Py_ssize_t *itemsize)
{
    for (int i = 0; i < NDtypeFacts; i++)
        if (DtypeFacts[i].dtype == dtype) {
            *kind = Py_NewRef(DtypeFacts[i].kind);
            if (itemsize != NULL)
                *itemsize = DtypeFacts[i].itemsize;
            return 0;
        }
    *kind = PyObject_GetAttr(dtype, s_kind);
    PyObject *size = *kind == NULL ? NULL : PyObject_GetAttr(dtype, s_itemsize);
    Py_ssize_t n = size == NULL ? -1 : PyLong_AsSsize_t(size);
    Py_XDECREF(size);
    if (n == -1 && (size == NULL || PyErr_Occurred())) {
        Py_CLEAR(*kind);
        return -1;
    }
    if (itemsize != NULL)
        *itemsize = n;
    if (NDtypeFacts < N_DTYPE_FACTS) {
        DtypeFacts[NDtypeFacts].dtype = Py_NewRef(dtype);
        DtypeFacts[NDtypeFacts].kind = Py_NewRef(*kind);
        DtypeFacts[NDtypeFacts++].itemsize = n;
    }
    return 0;
}

/* `dtype.kind` (new reference), NULL on error. */
static inline PyObject *
dtype_kind(PyObject *dtype)
{
    PyObject *kind;
    return dtype_facts(dtype, &kind, NULL) < 0 ? NULL : kind;
}
