/* Part of minerva._lean (minerva/_lean.c includes every part, in order, into one
 * translation unit: the parts share its static state). */

/* ---- small helpers ----------------------------------------------------------------- */

/* A spec's bytes; -1, no error set, when they are not a Python int (a shape of NumPy
 * ints gives a NumPy int: the Python path takes such an op). */
static inline Py_ssize_t
spec_nbytes(PyObject *spec)
{
    PyObject *n = SLOT(spec, SpecOff[P_NBYTES]);
    if (n == NULL || !PyLong_CheckExact(n))
        return -1;
    Py_ssize_t nbytes = PyLong_AsSsize_t(n);
    if (nbytes < 0)
        PyErr_Clear();
    return nbytes;
}

/* A `threading.Lock` as CPython 3.11 and 3.12 lay it out (Modules/_threadmodule.c);
 * `configure` checks the layout on a lock of its own (`lock_layout_holds`) before the
 * lock helpers below take a free lock without a method call (`FastLocks`). */
typedef struct {
    PyObject_HEAD
    PyThread_type_lock lock_lock;
    PyObject *in_weakreflist;
    char locked;
} ThreadLock;

static PyTypeObject *ThreadLockType;   /* type(threading.Lock()) */
static PyObject *ThreadLockMaker;      /* threading.Lock */
static int FastLocks;

/* Whether `lock` (a fresh, free `threading.Lock`) behaves as `ThreadLock` says, both
 * ways: taken by its method, it is taken here; taken here, its method says so. */
static int
lock_layout_holds(PyObject *lock)
{
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030D0000
    ThreadLock *t = (ThreadLock *)lock;
    if (Py_TYPE(lock)->tp_basicsize != sizeof(ThreadLock) || t->locked)
        return 0;
    PyObject *r = PyObject_CallMethodNoArgs(lock, s_acquire);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    int holds = t->locked == 1 &&
        PyThread_acquire_lock_timed(t->lock_lock, 0, 0) == PY_LOCK_FAILURE;
    r = PyObject_CallMethodNoArgs(lock, s_release);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    if (!holds || t->locked != 0 ||
            PyThread_acquire_lock_timed(t->lock_lock, 0, 0) != PY_LOCK_ACQUIRED)
        return 0;
    t->locked = 1;
    r = PyObject_CallMethodNoArgs(lock, s_locked);
    holds = r == Py_True;
    Py_XDECREF(r);
    t->locked = 0;
    PyThread_release_lock(t->lock_lock);
    return r == NULL ? -1 : holds;
#else
    return 0;
#endif
}

/* `lock.acquire()`, refused (NULL) while an exception is pending: a pending one would
 * fail the call after the lock was taken, and the lock would stay taken. A free
 * `threading.Lock` is taken at once here, as its method's first, non-blocking try does;
 * a held one by the method, which waits without the GIL. */
static PyObject *
lock_acquire(PyObject *lock)
{
    if (PyErr_Occurred())
        return NULL;
    if (FastLocks && Py_IS_TYPE(lock, ThreadLockType)) {
        ThreadLock *t = (ThreadLock *)lock;
        if (PyThread_acquire_lock_timed(t->lock_lock, 0, 0) == PY_LOCK_ACQUIRED) {
            t->locked = 1;
            Py_RETURN_TRUE;
        }
    }
    return PyObject_CallMethodNoArgs(lock, s_acquire);
}

/* `lock.release()`, keeping the exception pending before it (the caller's, restored
 * after); -1 when there was none and the release failed (its error set), else 0. */
static int
lock_release(PyObject *lock)
{
    if (FastLocks && Py_IS_TYPE(lock, ThreadLockType) && ((ThreadLock *)lock)->locked) {
        ThreadLock *t = (ThreadLock *)lock;   /* as its method, less the call */
        t->locked = 0;
        PyThread_release_lock(t->lock_lock);
        return 0;
    }
    Held held;
    HOLD(held);
    PyObject *r = PyObject_CallMethodNoArgs(lock, s_release);
    if (HELD(held)) {
        Py_XDECREF(r);
        RESTORE(held);   /* the first error wins */
        return 0;
    }
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

/* Whether a hook listens at the op-building seam on this thread (1), not (0), -1 on
 * error: the per-thread `SEAM.hooks` is read only while some thread listens. */
static int
seam_listened(void)
{
    if (none_counted(SeamListening))
        return 0;
    PyObject *hooks = PyObject_GetAttr(Seam, s_hooks);
    int listened = hooks == NULL ? -1 : PyObject_IsTrue(hooks);
    Py_XDECREF(hooks);
    return listened;
}

/* Whether `obj` is a NumPy integer scalar (`IntScalars`). */
static inline int
int_scalar(PyObject *obj)
{
    if (PyLong_CheckExact(obj) || PySlice_Check(obj))
        return 0;
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(IntScalars); j++)
        if (PyTuple_GET_ITEM(IntScalars, j) == (PyObject *)Py_TYPE(obj))
            return 1;
    return 0;
}

static inline PyObject *
int_item(PyObject *item)
{
    return int_scalar(item) ? PyNumber_Index(item) : Py_NewRef(item);
}

/* `key` with every NumPy integer scalar in it (`x[ix]`, `x[i, ix]` with `ix` from NumPy)
 * made the Python int NumPy reads it as (new reference; `key` itself when it holds
 * none); NULL on error. */
static PyObject *
int_key(PyObject *key)
{
    if (!PyTuple_CheckExact(key))
        return int_item(key);
    Py_ssize_t n = PyTuple_GET_SIZE(key), i = 0;
    while (i < n && !int_scalar(PyTuple_GET_ITEM(key, i)))
        i++;
    if (i == n)
        return Py_NewRef(key);
    PyObject *ints = PyTuple_New(n);
    for (i = 0; ints != NULL && i < n; i++) {
        PyObject *item = int_item(PyTuple_GET_ITEM(key, i));
        if (item == NULL)
            Py_CLEAR(ints);
        else
            PyTuple_SET_ITEM(ints, i, item);
    }
    return ints;
}

/* A value (consumed) as a C truth value, or as an int; -1 on error. */
static int
truth_of(PyObject *value)
{
    if (value == NULL)
        return -1;
    int truth = PyObject_IsTrue(value);
    Py_DECREF(value);
    return truth;
}

static int
ssize_of(PyObject *value, Py_ssize_t *out)
{
    if (value == NULL)
        return -1;
    *out = PyLong_AsSsize_t(value);
    Py_DECREF(value);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

/* `getattr(obj, name)` as a C truth value, or as an int; -1 on error. */
static inline int
attr_true(PyObject *obj, PyObject *name)
{
    return truth_of(PyObject_GetAttr(obj, name));
}

static inline int
attr_ssize(PyObject *obj, PyObject *name, Py_ssize_t *out)
{
    return ssize_of(PyObject_GetAttr(obj, name), out);
}

/* `op.<name>` (new reference), read off the slot `slot` of an OpDef (a twin is one
 * too), by name for any other op object. */
static PyObject *
op_attr(PyObject *op, int slot, PyObject *name)
{
    if (OpDefType != NULL && Py_IS_TYPE(op, OpDefType)) {
        PyObject *value = SLOT(op, OpOff[slot]);
        if (value != NULL)
            return Py_NewRef(value);
    }
    return PyObject_GetAttr(op, name);
}

/* `op.<name>` as a C truth value (`op_attr`); -1 on error. */
static inline int
op_true(PyObject *op, int slot, PyObject *name)
{
    return truth_of(op_attr(op, slot, name));
}

/* `obj.<name>` (new reference): its slot at `off` when `obj` is a `type` and the slot
 * is set, else by name. */
static inline PyObject *
slot_attr(PyObject *obj, PyTypeObject *type, Py_ssize_t off, PyObject *name)
{
    PyTypeObject *own = Py_TYPE(obj);
    for (int up = 0; up < 3 && own != NULL && own != type; up++)
        own = own->tp_base;   /* the engine's classes: type, or a class or two below it */
    if (type != NULL && (own == type || PyType_IsSubtype(Py_TYPE(obj), type))) {
        PyObject *value = SLOT(obj, off);
        if (value != NULL)
            return Py_NewRef(value);
    }
    return PyObject_GetAttr(obj, name);
}

#define ENGINE_ATTR(engine, i, name) slot_attr(engine, EngineType, EngineOff[i], name)
#define DAG_ATTR(dag, i, name) slot_attr(dag, DagType, DagOff[i], name)
#define DEVICE_ATTR(device, i, name) slot_attr(device, DeviceType, DeviceOff[i], name)

/* `obj.<slot at off> += delta` for an int slot that is set: its new value, or -1 with
 * an error set. */
static Py_ssize_t
slot_add(PyObject *obj, Py_ssize_t off, Py_ssize_t delta)
{
    PyObject *value = SLOT(obj, off);
    Py_ssize_t n = value != NULL && PyLong_CheckExact(value) ? PyLong_AsSsize_t(value) :
        value != NULL ? PyNumber_AsSsize_t(value, PyExc_OverflowError) : -1;
    if (value == NULL)
        PyErr_SetString(PyExc_AttributeError, "an int slot is unset");
    if (n == -1 && PyErr_Occurred())
        return -1;
    PyObject *sum = PyLong_FromSsize_t(n + delta);
    if (sum == NULL)
        return -1;
    Py_SETREF(SLOT(obj, off), sum);
    return n + delta;
}

/* Add `delta` to the int attribute `name` of `obj`. */
static int
attr_add(PyObject *obj, PyObject *name, long delta)
{
    PyObject *value = PyObject_GetAttr(obj, name);
    if (value == NULL)
        return -1;
    PyObject *d = PyLong_FromLong(delta);
    PyObject *sum = d == NULL ? NULL : PyNumber_Add(value, d);
    Py_DECREF(value);
    Py_XDECREF(d);
    if (sum == NULL)
        return -1;
    int rc = PyObject_SetAttr(obj, name, sum);
    Py_DECREF(sum);
    return rc;
}

/* One more op completed in `dag`'s running total. */
static int
dag_completed(PyObject *dag)
{
    if (DagType != NULL && Py_IS_TYPE(dag, DagType) && SLOT(dag, DagOff[G_N_COMPLETED]) != NULL)
        return slot_add(dag, DagOff[G_N_COMPLETED], 1) < 0 ? -1 : 0;
    return attr_add(dag, s_n_completed_total, 1);
}

static inline void
set_slot(PyObject *obj, Py_ssize_t off, PyObject *value)
{
    Py_INCREF(value);
    Py_XSETREF(SLOT(obj, off), value);
}

/* A new computed value of `spec` on `device_id`, in the DAG (as
 * `state.settled_value`): its buffer is set by the caller. */
static PyObject *
settled_value(PyObject *dag, PyObject *spec, PyObject *device_id)
{
    PyObject *node_id = next_node_id();
    if (node_id == NULL)
        return NULL;
    PyObject *out = DataNodeType->tp_alloc(DataNodeType, 0);
    if (out == NULL) {
        Py_DECREF(node_id);
        return NULL;
    }
    PyObject *values[D_N] = {
        node_id, spec, device_id, Py_None, CompletedObj, Zero, One, Py_None, Py_None,
        Py_None, Py_None, Py_None, Zero, node_id, Zero, Py_None, Py_None, Py_None,
        Py_None, Py_False, Py_None};
    for (int i = 0; i < D_N; i++)
        set_slot(out, DataOff[i], values[i]);
    Py_DECREF(node_id);
    PyObject *data = dag == Parts.dag ? Py_NewRef(Parts.data) : DAG_ATTR(dag, G_DATA, s_data);
    if (data == NULL || PyDict_SetItem(data, SLOT(out, DataOff[D_NODE_ID]), out) < 0 ||
            dag_completed(dag) < 0) {
        Py_XDECREF(data);
        Py_DECREF(out);
        return NULL;
    }
    Py_DECREF(data);
    return out;
}

/* A new handle of `storage`, whole, of `spec` (as `NArray(storage, None, spec)`). */
static PyObject *
new_handle(PyObject *storage, PyObject *spec, int numpy_scalar)
{
    PyObject *x = NArrayType->tp_alloc(NArrayType, 0);
    if (x == NULL)
        return NULL;
    PyObject *values[A_N] = {storage, Py_None, spec, Py_None, Py_False, Py_True,
                             numpy_scalar ? Py_True : Py_False, Py_None};
    for (int i = 0; i < A_N; i++)
        set_slot(x, ArrayOff[i], values[i]);
    return x;
}

static PyObject *
new_storage(PyObject *current, PyObject *engine)
{
    PyObject *s = StorageType->tp_alloc(StorageType, 0);
    if (s == NULL)
        return NULL;
    set_slot(s, StorageOff[S_CURRENT], current);
    set_slot(s, StorageOff[S_ENGINE], engine);
    return s;
}
