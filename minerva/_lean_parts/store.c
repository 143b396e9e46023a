/* Part of minerva._lean (minerva/_lean.c includes every part, in order, into one
 * translation unit: the parts share its static state). */

/* ---- the store's fast paths ------------------------------------------------------- */

/* A pooled store's two O(1) paths (`PooledDataStore.alloc_array` taking the newest
 * freed block of the size, `Device.free` → `PooledDataStore.free` putting a block on its
 * stack), step for step, on the store's own attributes under its own lock; with the
 * memory event a trace records. Only for a store of exactly that class whose strategy
 * rounds to granules and caches, and whose hooks leave it to C (`lean_trace` not None);
 * anything else — a miss, another store, another listener — calls the Python method. */

static PyTypeObject *PooledType;   /* minerva.storage.pooled.PooledDataStore */
static PyTypeObject *HostAllocatorType;   /* minerva.storage.host.HostAllocator */
static PyObject *RoundGranule;     /* strategies.round_granule */
static Py_ssize_t Granule;
static PyObject *DeviceFree;       /* Device.free, which `store_free` stands for */
static PyObject *AllocTag, *FreeTag;   /* recorder.ALLOC, recorder.FREE */
static PyObject *s_label, *s_empty;

/* The pooled store's slots the fast paths read and write (by offset, as the class's
 * member descriptors give them) */
enum { PS_ROUND, PS_CACHES, PS_LOCK, PS_RECENT, PS_RECENT_BYTES, PS_N_HITS, PS_LIVE,
       PS_N_ALLOCS, PS_IN_USE, PS_PEAK, PS_N_FREES, PS_DEVICE_ID, PS_HOOKS, PS_ALLOCATOR,
       PS_N_RECYCLED, PS_RECYCLES, PS_N };
static const char *PoolSlots[PS_N] = {
    "_round", "_caches", "_lock", "_recent", "_recent_bytes", "_n_hits", "_live",
    "_n_allocs", "_in_use", "_peak", "_n_frees", "device_id", "hooks", "allocator",
    "n_recycled", "recycles"};
static Py_ssize_t PoolOff[PS_N];

#define POOL(store, i) SLOT(store, PoolOff[i])

/* Whether the fast paths may run in C on `store` (1; 0 when not, -1 on error): the
 * memory event's append into `*record` (a new reference; NULL when no trace records). */
static int
store_ready(PyObject *store, PyObject **record)
{
    *record = NULL;
    if (!Py_IS_TYPE(store, PooledType) || POOL(store, PS_ROUND) != RoundGranule ||
            POOL(store, PS_CACHES) != Py_True || POOL(store, PS_HOOKS) == NULL)
        return 0;
    for (int i = PS_LOCK; i < PS_N; i++)
        if (POOL(store, i) == NULL)
            return 0;
    PyObject *trace = slot_attr(POOL(store, PS_HOOKS), HookBusType, LeanTraceOff,
                                s_lean_trace);
    if (trace == NULL || trace == Py_None) {
        Py_XDECREF(trace);
        return trace == NULL ? -1 : 0;
    }
    if (trace == Py_False)
        Py_DECREF(trace);
    else
        *record = trace;
    return 1;
}

/* `store.array(block, shape, dtype)` (new reference) for a block whose last view does
 * not fit: a pooled store over host memory views it here, as `PooledDataStore.array`
 * does through `HostAllocator.view` (NumPy's `ndarray(shape, dtype, chunk, offset)`,
 * kept as the block's view); any other store by its method. */
static PyObject *
block_view(PyObject *store, PyObject *block, PyObject *shape, PyObject *dtype)
{
    if (Py_IS_TYPE(store, PooledType) && HostAllocatorType != NULL) {
        PyObject *allocator = POOL(store, PS_ALLOCATOR);
        PyObject *chunk = SLOT(block, BlockOff[B_CHUNK]);
        PyObject *offset = SLOT(block, BlockOff[B_OFFSET]);
        if (allocator != NULL && Py_IS_TYPE(allocator, HostAllocatorType) && chunk != NULL &&
                offset != NULL) {
            PyObject *args[4] = {shape, dtype, chunk, offset};
            PyObject *view = PyObject_Vectorcall(NdarrayType, args, 4, NULL);
            PyObject *key = view == NULL ? NULL : PyTuple_Pack(2, shape, dtype);
            if (key == NULL) {
                Py_XDECREF(view);
                return NULL;
            }
            set_slot(block, BlockOff[B_VIEW], view);
            Py_XSETREF(SLOT(block, BlockOff[B_VIEW_KEY]), key);
            return view;
        }
    }
    return PyObject_CallMethodObjArgs(store, s_array, block, shape, dtype, NULL);
}

/* An int slot's value; -1 with an error set when it is not one that fits. */
static inline Py_ssize_t
slot_ssize(PyObject *value)
{
    if (value != NULL && PyLong_CheckExact(value))
        return PyLong_AsSsize_t(value);
    if (value == NULL)
        PyErr_SetString(PyExc_AttributeError, "a store counter is unset");
    return value == NULL ? -1 : PyNumber_AsSsize_t(value, PyExc_OverflowError);
}

/* `store.<counter i> += delta`; its new value, or -1 with an error set. */
static inline Py_ssize_t
count(PyObject *store, int i, Py_ssize_t delta)
{
    return slot_add(store, PoolOff[i], delta);
}

/* A block handed straight from a dead value to a new one: counted in the store's
 * `n_recycled` (0; -1 on error). */
static int
store_recycled(PyObject *store)
{
    if (Py_IS_TYPE(store, PooledType) && POOL(store, PS_N_RECYCLED) != NULL)
        return count(store, PS_N_RECYCLED, 1) < 0 ? -1 : 0;
    return attr_add(store, s_n_recycled, 1);
}

/* The store's lock taken (0; -1 on error, or while an exception is pending, as
 * `lock_acquire`), and given back keeping a pending exception (`lock_release`). */
static int
store_lock(PyObject *store)
{
    PyObject *r = lock_acquire(POOL(store, PS_LOCK));
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

static int
store_unlock(PyObject *store)
{
    return lock_release(POOL(store, PS_LOCK));
}

/* A memory event `(tag, device_id, in_use, t_ns)` appended with `record` (consumed). */
static int
memory_record(PyObject *record, PyObject *tag, PyObject *store, Py_ssize_t in_use)
{
    MemRecord *event = PyObject_New(MemRecord, &MemRecordType);
    PyObject *device_id = POOL(store, PS_DEVICE_ID);
    if (event == NULL || device_id == NULL) {
        if (event != NULL) {
            event->tag = event->device_id = NULL;
            Py_DECREF(event);
        }
        Py_DECREF(record);
        return -1;
    }
    event->tag = Py_NewRef(tag);
    event->device_id = Py_NewRef(device_id);
    event->in_use = in_use;
    event->t_ns = now_ns();
    PyObject *r = PyObject_CallOneArg(record, (PyObject *)event);
    Py_DECREF(event);
    Py_DECREF(record);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

/* Under the store's lock: the newest freed block of `size` bytes (new reference) made
 * live for `nbytes`, its in-use total into `*in_use`; Py_None when there is none. */
static PyObject *
take_recent(PyObject *store, Py_ssize_t size, Py_ssize_t nbytes, Py_ssize_t *in_use)
{
    PyObject *recent = POOL(store, PS_RECENT);
    PyObject *key = PyLong_FromSsize_t(size);   /* `recent_key(None, size)` */
    PyObject *stack = key == NULL || !PyDict_CheckExact(recent) ? NULL :
        PyDict_GetItemWithError(recent, key);
    Py_XDECREF(key);
    if (stack == NULL || !PyList_CheckExact(stack) || PyList_GET_SIZE(stack) == 0)
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    Py_ssize_t last = PyList_GET_SIZE(stack) - 1;
    PyObject *block = Py_NewRef(PyList_GET_ITEM(stack, last));
    PyObject *n = PyLong_FromSsize_t(nbytes);
    if (n == NULL || PyList_SetSlice(stack, last, last + 1, NULL) < 0 ||
            count(store, PS_RECENT_BYTES, -size) < 0 || count(store, PS_N_HITS, 1) < 0 ||
            PySet_Add(POOL(store, PS_LIVE), block) < 0 ||
            count(store, PS_N_ALLOCS, 1) < 0 ||
            (*in_use = count(store, PS_IN_USE, nbytes)) < 0) {
        Py_XDECREF(n);
        Py_DECREF(block);
        return NULL;
    }
    Py_XSETREF(SLOT(block, BlockOff[B_NBYTES]), n);
    Py_ssize_t before = slot_ssize(POOL(store, PS_PEAK));
    if (before < 0 || (*in_use > before && count(store, PS_PEAK, *in_use - before) < 0)) {
        Py_DECREF(block);
        return NULL;
    }
    return block;
}

/* `store.alloc_array(nbytes, ...)`'s block from the recent stack of its size, in C: the
 * block (new reference), Py_None when the Python method must run (a miss, or a store
 * C does not know), NULL on error. */
static PyObject *
store_take(PyObject *store, Py_ssize_t nbytes)
{
    PyObject *record;
    int ready = store_ready(store, &record);
    if (ready <= 0)
        return ready < 0 ? NULL : Py_NewRef(Py_None);
    Py_ssize_t size = nbytes <= Granule ? Granule : (nbytes + Granule - 1) / Granule * Granule;
    Py_ssize_t in_use = 0;
    PyObject *block = NULL;
    if (store_lock(store) == 0) {
        block = take_recent(store, size, nbytes, &in_use);
        if (store_unlock(store) < 0)
            Py_CLEAR(block);
    }
    if (block != NULL && block != Py_None && record != NULL) {
        if (memory_record(record, AllocTag, store, in_use) < 0)
            Py_CLEAR(block);
        record = NULL;
    }
    Py_XDECREF(record);
    return block;
}

/* Under the store's lock: the live `block` (of `n` bytes, `size` rounded) put on the
 * recent stack of its stream and size; its in-use total into `*in_use`. */
static int
give_recent(PyObject *store, PyObject *block, Py_ssize_t n, Py_ssize_t *in_use)
{
    PyObject *recent = POOL(store, PS_RECENT);
    PyObject *size = SLOT(block, BlockOff[B_SIZE]), *stream = SLOT(block, BlockOff[B_STREAM]);
    PyObject *key = !PyDict_CheckExact(recent) ? NULL :   /* `recent_key(stream, size)` */
        stream == Py_None ? Py_NewRef(size) : PyTuple_Pack(2, stream, size);
    PyObject *stack = key == NULL ? NULL : PyDict_GetItemWithError(recent, key);
    Py_ssize_t sz = slot_ssize(size);
    int rc = 0;
    if (key == NULL || sz < 0 || PySet_Discard(POOL(store, PS_LIVE), block) < 0 ||
            (*in_use = count(store, PS_IN_USE, -n)) < 0 || count(store, PS_N_FREES, 1) < 0)
        rc = -1;
    else if (stack != NULL)
        rc = PyList_Append(stack, block);
    else if (!PyErr_Occurred()) {
        PyObject *fresh = PyList_New(1);
        if (fresh != NULL)
            PyList_SET_ITEM(fresh, 0, Py_NewRef(block));
        rc = fresh == NULL ? -1 : PyDict_SetItem(recent, key, fresh);
        Py_XDECREF(fresh);
    } else
        rc = -1;
    Py_XDECREF(key);
    if (rc == 0 && count(store, PS_RECENT_BYTES, sz) < 0)
        rc = -1;
    return rc;
}

/* `store.free(block)` in C where the store is pooled: 1 when done, 0 when the Python
 * method must run, -1 on error. */
static int
pooled_free(PyObject *store, PyObject *block)
{
    PyObject *record = NULL;
    int ready = PyObject_TypeCheck(block, BlockType) ? store_ready(store, &record) : 0;
    if (ready <= 0)
        return ready;
    PyObject *live = POOL(store, PS_LIVE);
    PyObject *size = SLOT(block, BlockOff[B_SIZE]), *stream = SLOT(block, BlockOff[B_STREAM]);
    PyObject *nbytes = SLOT(block, BlockOff[B_NBYTES]);
    int known = size != NULL && stream != NULL && nbytes != NULL && PyAnySet_Check(live) ?
        PySet_Contains(live, block) : 0;
    if (known <= 0) {   /* the Python method raises */
        Py_XDECREF(record);
        return known;
    }
    /* (a block the Python path made may count its bytes in NumPy ints) */
    Py_ssize_t in_use = -1, n = slot_ssize(nbytes);
    int rc = PyErr_Occurred() ? -1 : store_lock(store);
    if (rc == 0) {
        rc = give_recent(store, block, n, &in_use);
        if (store_unlock(store) < 0)
            rc = -1;
    }
    if (rc == 0 && record != NULL) {
        rc = memory_record(record, FreeTag, store, in_use);
        record = NULL;
    }
    Py_XDECREF(record);
    return rc < 0 ? -1 : 1;
}

/* `device.free(block)` in C where the device is a plain one and its store pooled: 1 when
 * done, 0 when the Python method must run, -1 on error. */
static int
store_free(PyObject *device, PyObject *block)
{
    if (_PyType_Lookup(Py_TYPE(device), s_free) != DeviceFree ||
            !PyObject_TypeCheck(block, BlockType))
        return 0;
    PyObject *store = DEVICE_ATTR(device, DV_STORE, s_store);
    if (store == NULL)
        return -1;
    set_slot(block, BlockOff[B_LABEL], s_empty);
    int rc = pooled_free(store, block);
    Py_DECREF(store);
    return rc;
}

/* `store.alloc_array(nbytes, shape, dtype[, ladder])` from the recent stack in C: the
 * `(block, array)` pair, Py_None when the Python method must run, NULL on error. */
static PyObject *
pooled_alloc_array(PyObject *store, PyObject *const *args, Py_ssize_t n)
{
    if (n < 3 || n > 4 || !PyLong_CheckExact(args[0]))
        Py_RETURN_NONE;
    Py_ssize_t nbytes = PyLong_AsSsize_t(args[0]);
    if (nbytes < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    PyObject *block = store_take(store, nbytes);
    if (block == NULL || block == Py_None)
        return block;
    PyObject *key = SLOT(block, BlockOff[B_VIEW_KEY]), *view;
    int same = key != NULL && PyTuple_CheckExact(key) && PyTuple_GET_SIZE(key) == 2;
    if (same)
        same = PyObject_RichCompareBool(PyTuple_GET_ITEM(key, 0), args[1], Py_EQ);
    if (same > 0)
        same = PyObject_RichCompareBool(PyTuple_GET_ITEM(key, 1), args[2], Py_EQ);
    if (same < 0) {
        Py_DECREF(block);
        return NULL;
    }
    view = same ? Py_NewRef(SLOT(block, BlockOff[B_VIEW])) :
        block_view(store, block, args[1], args[2]);
    PyObject *pair = view == NULL ? NULL : PyTuple_Pack(2, block, view);
    Py_DECREF(block);
    Py_XDECREF(view);
    return pair;
}
