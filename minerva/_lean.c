/* minerva._lean: the lean direct path of a tiny operator in C (optional).
 *
 * An NArray operator (`x + 1.0`, `x * y`) whose operands are computed, whole (no view),
 * on a CPU device, small enough to run on the calling thread, while nothing listens at
 * the op-building seam, runs here from the operator's slot to the result handle: the
 * shape rule from a cache, one round of the engine lock (queued releases applied, a dead
 * value's block handed over, else one taken from the store's recent blocks), the NumPy
 * ufunc called into the output block, the output value inserted computed, the handle
 * made; while a trace records, the op's record appended as the Recorder makes it. It is
 * the Python lean path (`minerva.scheduler.direct.DirectPath.run_lean` called from
 * `minerva.builder.build`) step for step; whatever it does not cover it hands to the
 * Python operator it wraps, before it has changed anything. Beside it, in front of their
 * Python twins too: a storage's finalizer, a pooled store's O(1) `free` and
 * `alloc_array`, and `x[i]` of a computed value. `minerva.api.core.lean` configures it
 * with the runtime's classes and constants; MINERVA_ACCEL=0 turns it off.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <time.h>

/* an exception held aside (Python 3.11 has no PyErr_GetRaisedException) */
typedef struct { PyObject *type, *value, *tb; } Held;
#define HOLD(h) PyErr_Fetch(&(h).type, &(h).value, &(h).tb)
#define HELD(h) ((h).type != NULL)
#define RESTORE(h) PyErr_Restore((h).type, (h).value, (h).tb)

#include "_lean_parts/configured.c"
#include "_lean_parts/cache.c"
#include "_lean_parts/helpers.c"
#include "_lean_parts/leanop.c"
#include "_lean_parts/trace.c"
#include "_lean_parts/store.c"
#include "_lean_parts/steps.c"
#include "_lean_parts/write.c"
#include "_lean_parts/run.c"
#include "_lean_parts/twin.c"
#include "_lean_parts/basic_view.c"
#include "_lean_parts/operator.c"
#include "_lean_parts/reduction.c"
#include "_lean_parts/any_op.c"
#include "_lean_parts/build.c"
#include "_lean_parts/filled.c"
#include "_lean_parts/new_array.c"
#include "_lean_parts/setitem.c"
#include "_lean_parts/array_ufunc.c"
#include "_lean_parts/store_methods.c"
#include "_lean_parts/element.c"
#include "_lean_parts/convert.c"
#include "_lean_parts/finalizer.c"

/* ---- configure ---------------------------------------------------------------------- */

static int
take_type(PyObject *kwargs, const char *name, PyTypeObject **out)
{
    PyObject *value = PyDict_GetItemString(kwargs, name);
    if (value == NULL || !PyType_Check(value)) {
        PyErr_Format(PyExc_TypeError, "configure: %s must be a class", name);
        return -1;
    }
    Py_XSETREF(*out, (PyTypeObject *)Py_NewRef(value));
    return 0;
}

static int
take(PyObject *kwargs, const char *name, PyObject **out)
{
    PyObject *value = PyDict_GetItemString(kwargs, name);
    if (value == NULL) {
        PyErr_Format(PyExc_TypeError, "configure: %s is missing", name);
        return -1;
    }
    Py_XSETREF(*out, Py_NewRef(value));
    return 0;
}

static PyObject *
configure(PyObject *module, PyObject *args, PyObject *kwargs)
{
    if (kwargs == NULL || PyTuple_GET_SIZE(args)) {
        PyErr_SetString(PyExc_TypeError, "configure takes keyword arguments only");
        return NULL;
    }
    PyObject *completed = NULL, *ahead = NULL, *elide = NULL, *granule = NULL;
    if (take_type(kwargs, "NArray", &NArrayType) < 0 ||
            take_type(kwargs, "Storage", &StorageType) < 0 ||
            take_type(kwargs, "DataNode", &DataNodeType) < 0 ||
            take_type(kwargs, "ArraySpec", &SpecType) < 0 ||
            take_type(kwargs, "Block", &BlockType) < 0 ||
            take_type(kwargs, "OpDef", &OpDefType) < 0 ||
            take_type(kwargs, "BaseLink", &BaseLinkType) < 0 ||
            take(kwargs, "Runtime", &Runtime) < 0 || take(kwargs, "SEAM", &Seam) < 0 ||
            take(kwargs, "new_node_id", &NewNodeId) < 0 ||
            take(kwargs, "extobj", &ExtObj) < 0 || take(kwargs, "decoded", &Decoded) < 0 ||
            take(kwargs, "caller_state", &CallerState) < 0 ||
            take(kwargs, "direct_records", &DirectRecords) < 0 ||
            take(kwargs, "numpy", &Numpy) < 0 || take(kwargs, "failed", &Failed) < 0 ||
            take(kwargs, "reported", &Reported) < 0 ||
            take(kwargs, "failed_write", &FailedWrite) < 0 ||
            take(kwargs, "numeric_kinds", &NumericKinds) < 0 ||
            take(kwargs, "float_scalars", &FloatScalars) < 0 ||
            take(kwargs, "int_scalars", &IntScalars) < 0 ||
            take_type(kwargs, "dtype", &NumpyDtypeType) < 0 ||
            take(kwargs, "ndarray", &NdarrayType) < 0 ||
            take(kwargs, "release", &EngineRelease) < 0 ||
            take(kwargs, "COMPLETED", &completed) < 0 ||
            take(kwargs, "ahead_bytes", &ahead) < 0 ||
            take(kwargs, "elide_bytes", &elide) < 0 ||
            take(kwargs, "package_dir", &PackageDir) < 0 ||
            take(kwargs, "finished", &FinishedTag) < 0 ||
            take_type(kwargs, "PooledDataStore", &PooledType) < 0 ||
            take_type(kwargs, "Engine", &EngineType) < 0 ||
            take_type(kwargs, "PhysicalDag", &DagType) < 0 ||
            take_type(kwargs, "HookBus", &HookBusType) < 0 ||
            take_type(kwargs, "Device", &DeviceType) < 0 ||
            take_type(kwargs, "HostAllocator", &HostAllocatorType) < 0 ||
            take(kwargs, "round_granule", &RoundGranule) < 0 ||
            take(kwargs, "granule", &granule) < 0 ||
            take(kwargs, "device_free", &DeviceFree) < 0 ||
            take(kwargs, "alloc_tag", &AllocTag) < 0 || take(kwargs, "free_tag", &FreeTag) < 0 ||
            take(kwargs, "element_now", &ElementNow) < 0 ||
            take(kwargs, "host_reads", &HostReads) < 0 ||
            take(kwargs, "copied_scalars", &CopiedScalars) < 0 ||
            take(kwargs, "blas", &Blas) < 0 || take(kwargs, "blas_cond", &BlasCond) < 0 ||
            take(kwargs, "blas_lock", &BlasLock) < 0 ||
            take(kwargs, "blas_queue", &BlasQueue) < 0 ||
            take(kwargs, "scalar_result_ops", &ScalarResultOps) < 0 ||
            take(kwargs, "from_host", &FromHost) < 0 ||
            take(kwargs, "lock", &ThreadLockMaker) < 0 || take(kwargs, "asarray", &Asarray) < 0)
        goto fail;
    if (!PyContextVar_CheckExact(ExtObj) || !PyDict_Check(Decoded) ||
            !PyList_Check(DirectRecords) || !PyUnicode_Check(PackageDir) ||
            !PyTuple_Check(FloatScalars) || !PyTuple_Check(IntScalars) ||
            !PyAnySet_Check(ScalarResultOps)) {
        PyErr_SetString(PyExc_TypeError, "configure: extobj, decoded, direct_records or package_dir");
        goto fail;
    }
    Py_XSETREF(SeamListening, PyObject_GetAttrString(Seam, "listening"));
    Py_XSETREF(HostRefusing, PyObject_GetAttrString(HostReads, "refusing"));
    if (SeamListening == NULL || HostRefusing == NULL)
        goto fail;
    if (!PyType_Check(Runtime) || !PyList_CheckExact(SeamListening) ||
            PyList_GET_SIZE(SeamListening) != 1 || !PyList_CheckExact(HostRefusing) ||
            PyList_GET_SIZE(HostRefusing) != 1) {
        PyErr_SetString(PyExc_TypeError, "configure: Runtime, SEAM.listening or host_reads.refusing");
        goto fail;
    }
    PyObject *probe = PyObject_CallNoArgs(ThreadLockMaker);
    int fast = probe == NULL ? -1 : lock_layout_holds(probe);
    if (probe != NULL) {
        Py_XSETREF(ThreadLockType, (PyTypeObject *)Py_NewRef(Py_TYPE(probe)));
        Py_DECREF(probe);
    }
    if (fast < 0)
        goto fail;
    FastLocks = fast;
    /* `new_node_id` is `itertools.count(1).__next__`: its counter is stepped directly */
    Py_CLEAR(NodeCounter);
    PyObject *counter = PyObject_GetAttrString(NewNodeId, "__self__");
    if (counter != NULL && Py_TYPE(counter)->tp_iternext != NULL &&
            strcmp(Py_TYPE(counter)->tp_name, "itertools.count") == 0)
        NodeCounter = counter;
    else
        Py_XDECREF(counter);
    PyErr_Clear();
    Completed = PyLong_AsLong(completed);
    AheadBytes = PyLong_AsSsize_t(ahead);
    ElideBytes = PyLong_AsSsize_t(elide);
    Granule = PyLong_AsSsize_t(granule);
    if (PyErr_Occurred())
        goto fail;
    Py_XSETREF(CompletedObj, Py_NewRef(completed));
    if (slot_offsets(NArrayType, ArraySlots, ArrayOff, A_N) < 0 ||
            slot_offsets(StorageType, StorageSlots, StorageOff, S_N) < 0 ||
            slot_offsets(DataNodeType, DataSlots, DataOff, D_N) < 0 ||
            slot_offsets(SpecType, SpecSlots, SpecOff, P_N) < 0 ||
            slot_offsets(BlockType, BlockSlots, BlockOff, B_N) < 0 ||
            slot_offsets(OpDefType, OpSlots, OpOff, O_N) < 0 ||
            slot_offsets(BaseLinkType, LinkSlots, LinkOff, L_N) < 0 ||
            slot_offsets(PooledType, PoolSlots, PoolOff, PS_N) < 0 ||
            slot_offsets(EngineType, EngineSlots, EngineOff, E_N) < 0 ||
            slot_offsets(DagType, DagSlots, DagOff, G_N) < 0 ||
            slot_offsets(HookBusType, LeanTraceSlot, &LeanTraceOff, 1) < 0 ||
            slot_offsets(DeviceType, DeviceSlots, DeviceOff, DV_N) < 0)
        goto fail;
    cache_clear(module, NULL);
    Py_DECREF(completed); Py_DECREF(ahead); Py_DECREF(elide); Py_DECREF(granule);
    Py_RETURN_NONE;
fail:
    Py_XDECREF(completed); Py_XDECREF(ahead); Py_XDECREF(elide); Py_XDECREF(granule);
    return NULL;
}

static PyObject *
fast_locks(PyObject *module, PyObject *unused)
{
    return PyBool_FromLong(FastLocks);
}

static PyMethodDef methods[] = {
    {"configure", (PyCFunction)(void (*)(void))configure, METH_VARARGS | METH_KEYWORDS,
     "Hand over the runtime's classes and constants (minerva.api.core.lean)."},
    {"clear_cache", cache_clear, METH_NOARGS, "Forget the cached shape rules."},
    {"fast_locks", fast_locks, METH_NOARGS,
     "Whether free threading.Locks are taken without a method call (configure probed "
     "their layout)."},
    {"build_op", (PyCFunction)(void (*)(void))build_op, METH_FASTCALL,
     "build_op(op_def, inputs, attrs): `builder.build` of a one-output op at once, the "
     "shape rule's answer from its memo (the result handle), or None for the Python build."},
    {"run_op", (PyCFunction)(void (*)(void))run_op, METH_FASTCALL,
     "run_op(op_def, attrs, inputs, spec): the lean path of one op `builder.build` builds "
     "(its result handle), or None for the Python path."},
    {"copy_into", (PyCFunction)(void (*)(void))copy_into, METH_FASTCALL | METH_KEYWORDS,
     "copy_into(xp, *, out, data): `out[...] = data`, the kernel of `from_host` for "
     "`NewArray`."},
    {"run_write", (PyCFunction)(void (*)(void))run_write, METH_FASTCALL,
     "run_write(op_def, attrs, inputs, out): the lean path of one op written into NArray "
     "`out` (`out`), or None for the Python path."},
    {NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "minerva._lean",
    "The lean direct path of tiny NArray operators, in C (optional).", -1, methods};

#define INTERN(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL

PyMODINIT_FUNC
PyInit__lean(void)
{
    INTERN(s_system, "system"); INTERN(s_hooks, "hooks"); INTERN(s_engine, "engine");
    INTERN(s_local, "_local"); INTERN(s_device, "device"); INTERN(s_devices, "devices");
    INTERN(s_table, "table"); INTERN(s_tiny_inline, "tiny_inline"); INTERN(s_blas, "blas");
    INTERN(s_inline_limit, "inline_limit"); INTERN(s_store, "store"); INTERN(s_xp, "xp");
    INTERN(s_lock, "_lock"); INTERN(s_releases, "_releases"); INTERN(s_closed, "closed");
    INTERN(s_n_inflight, "n_inflight"); INTERN(s_max_pending, "max_pending");
    INTERN(s_recycles, "recycles"); INTERN(s_reap_locked, "_reap_locked");
    INTERN(s_delete_locked, "_delete_locked"); INTERN(s_popleft, "popleft");
    INTERN(s_appendleft, "appendleft"); INTERN(s_append, "append");
    INTERN(s_kicks_releases, "kicks_releases"); INTERN(s_release_posted, "_release_posted");
    INTERN(s_kick_releases, "_kick_releases");
    INTERN(s_free, "free"); INTERN(s_cancelled, "cancelled");
    INTERN(s_alloc_array, "alloc_array"); INTERN(s_array, "array");
    INTERN(s_n_recycled, "n_recycled"); INTERN(s_dag, "dag"); INTERN(s_data, "data");
    INTERN(s_n_completed_total, "n_completed_total"); INTERN(s_free_blocks, "_free_blocks");
    INTERN(s_quiet, "quiet"); INTERN(s_direct, "direct"); INTERN(s_infer, "infer");
    INTERN(s_acquire, "acquire"); INTERN(s_release, "release"); INTERN(s_scalar, "scalar");
    INTERN(s_reverse, "reverse"); INTERN(s_kind, "kind");
    INTERN(s_caller_track, "caller_track");
    INTERN(s_name, "name"); INTERN(s_lean_trace, "lean_trace"); INTERN(s_dtype, "dtype");
    INTERN(s_element_now, "element_now"); INTERN(s_refuse, "refuse"); INTERN(s_cpu, "cpu");
    INTERN(s_row_split, "row_split"); INTERN(s_whole_limit, "whole_limit");
    INTERN(s_try_hold_blas, "try_hold_blas"); INTERN(s_process_wide, "process_wide");
    INTERN(s_threads, "threads"); INTERN(s_itemsize, "itemsize");
    INTERN(s__count, "_count"); INTERN(s__users, "_users");
    INTERN(s_notify_all, "notify_all"); INTERN(s__chosen, "_chosen"); INTERN(s_memo, "memo");
    INTERN(s_config, "config"); INTERN(s_default_dtype, "default_dtype");
    INTERN(s_value, "value");
    INTERN(s_locked, "locked"); INTERN(s___call__, "__call__");
    INTERN(s_shape, "shape"); INTERN(s_nbytes, "nbytes");
    INTERN(s_impl, "impl"); INTERN(s_elementwise, "elementwise"); INTERN(s_out, "out");
    INTERN(s_label, "label"); INTERN(s_empty, "");
    Zero = PyLong_FromLong(0);
    One = PyLong_FromLong(1);
    KwOut = Py_BuildValue("(s)", "out");
    KwReduce = Py_BuildValue("(sss)", "axis", "keepdims", "out");
    KwCasting = Py_BuildValue("(s)", "casting");
    Unsafe = PyUnicode_InternFromString("unsafe");
    if (Zero == NULL || One == NULL || KwOut == NULL || KwReduce == NULL || KwCasting == NULL ||
            Unsafe == NULL)
        return NULL;
    if (PyType_Ready(&OperatorType) < 0 || PyType_Ready(&FinalizerType) < 0 ||
            PyType_Ready(&RecordType) < 0 || PyType_Ready(&MemRecordType) < 0 ||
            PyType_Ready(&StoreMethodType) < 0 ||
            PyType_Ready(&ElementType) < 0 || PyType_Ready(&FilledType) < 0 || PyType_Ready(&ToFloatType) < 0 ||
            PyType_Ready(&ToIntType) < 0 || PyType_Ready(&ToBoolType) < 0 ||
            PyType_Ready(&ToIndexType) < 0 || PyType_Ready(&ReductionType) < 0 ||
            PyType_Ready(&SetItemType) < 0 || PyType_Ready(&ArrayUfuncType) < 0 ||
            PyType_Ready(&TransposedType) < 0 || PyType_Ready(&NewArrayType) < 0)
        return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL)
        return NULL;
    if (PyModule_AddObjectRef(module, "Operator", (PyObject *)&OperatorType) < 0 ||
            PyModule_AddObjectRef(module, "Finalizer", (PyObject *)&FinalizerType) < 0 ||
            PyModule_AddObjectRef(module, "Record", (PyObject *)&RecordType) < 0 ||
            PyModule_AddObjectRef(module, "StoreMethod", (PyObject *)&StoreMethodType) < 0 ||
            PyModule_AddObjectRef(module, "Element", (PyObject *)&ElementType) < 0 ||
            PyModule_AddObjectRef(module, "Filled", (PyObject *)&FilledType) < 0 ||
            PyModule_AddObjectRef(module, "ToFloat", (PyObject *)&ToFloatType) < 0 ||
            PyModule_AddObjectRef(module, "ToInt", (PyObject *)&ToIntType) < 0 ||
            PyModule_AddObjectRef(module, "ToBool", (PyObject *)&ToBoolType) < 0 ||
            PyModule_AddObjectRef(module, "ToIndex", (PyObject *)&ToIndexType) < 0 ||
            PyModule_AddObjectRef(module, "Reduction", (PyObject *)&ReductionType) < 0 ||
            PyModule_AddObjectRef(module, "SetItem", (PyObject *)&SetItemType) < 0 ||
            PyModule_AddObjectRef(module, "ArrayUfunc", (PyObject *)&ArrayUfuncType) < 0 ||
            PyModule_AddObjectRef(module, "Transposed", (PyObject *)&TransposedType) < 0 ||
            PyModule_AddObjectRef(module, "NewArray", (PyObject *)&NewArrayType) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
