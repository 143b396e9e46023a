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
static PyObject *s_allocator;
static PyObject *RoundGranule;     /* strategies.round_granule */
static Py_ssize_t Granule;
static PyObject *DeviceFree;       /* Device.free, which `store_free` stands for */
static PyObject *AllocTag, *FreeTag;   /* recorder.ALLOC, recorder.FREE */
static PyObject *s__round, *s__caches, *s__lock, *s__recent, *s__recent_bytes, *s__n_hits,
    *s__live, *s__n_allocs, *s__in_use, *s__peak, *s__n_frees, *s_device_id, *s_label,
    *s_empty;

/* The store's attributes (its `__dict__`, borrowed), when its fast paths may run in C:
 * the memory event's append into `*record` (a new reference; NULL when no trace
 * records). NULL without an error when not. */
static PyObject *
store_dict(PyObject *store, PyObject **record)
{
    *record = NULL;
    if (!Py_IS_TYPE(store, PooledType))
        return NULL;
    PyObject *d = PyObject_GenericGetDict(store, NULL);
    Py_XDECREF(d);   /* held by the store */
    if (d == NULL || PyDict_GetItemWithError(d, s__round) != RoundGranule ||
            PyDict_GetItemWithError(d, s__caches) != Py_True)
        return NULL;
    PyObject *hooks = PyDict_GetItemWithError(d, s_hooks);
    PyObject *trace = hooks == NULL ? NULL : PyObject_GetAttr(hooks, s_lean_trace);
    if (trace == NULL || trace == Py_None) {
        Py_XDECREF(trace);
        return NULL;
    }
    if (trace == Py_False)
        Py_DECREF(trace);
    else
        *record = trace;
    return d;
}

/* `store.array(block, shape, dtype)` (new reference) for a block whose last view does
 * not fit: a pooled store over host memory views it here, as `PooledDataStore.array`
 * does through `HostAllocator.view` (NumPy's `ndarray(shape, dtype, chunk, offset)`,
 * kept as the block's view); any other store by its method. */
static PyObject *
block_view(PyObject *store, PyObject *block, PyObject *shape, PyObject *dtype)
{
    if (Py_IS_TYPE(store, PooledType) && HostAllocatorType != NULL) {
        PyObject *d = PyObject_GenericGetDict(store, NULL);
        Py_XDECREF(d);   /* held by the store */
        PyObject *allocator = d == NULL ? NULL : PyDict_GetItemWithError(d, s_allocator);
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
        if (PyErr_Occurred())
            return NULL;
    }
    return PyObject_CallMethodObjArgs(store, s_array, block, shape, dtype, NULL);
}

/* `d[name] += delta` for an int counter; its new value, or -1 with an error set. */
static Py_ssize_t
count(PyObject *d, PyObject *name, Py_ssize_t delta)
{
    PyObject *value = PyDict_GetItemWithError(d, name);
    Py_ssize_t n = value == NULL ? -1 : PyNumber_AsSsize_t(value, PyExc_OverflowError);
    if (n == -1 && (value == NULL || PyErr_Occurred())) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_AttributeError, "store has no %U", name);
        return -1;
    }
    PyObject *sum = PyLong_FromSsize_t(n + delta);
    int rc = sum == NULL ? -1 : PyDict_SetItem(d, name, sum);
    Py_XDECREF(sum);
    return rc < 0 ? -1 : n + delta;
}

/* The store's lock taken (0; -1 on error, or while an exception is pending, as
 * `lock_acquire`), and given back keeping a pending exception (`lock_release`). */
static int
store_lock(PyObject *d)
{
    PyObject *lock = PyDict_GetItemWithError(d, s__lock);
    PyObject *r = lock == NULL ? NULL : lock_acquire(lock);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

static int
store_unlock(PyObject *d)
{
    PyObject *lock = PyDict_GetItemWithError(d, s__lock);
    return lock == NULL ? -1 : lock_release(lock);
}

/* A memory event `(tag, device_id, in_use, t_ns)` appended with `record` (consumed). */
static int
memory_record(PyObject *record, PyObject *tag, PyObject *d, Py_ssize_t in_use)
{
    MemRecord *event = PyObject_New(MemRecord, &MemRecordType);
    PyObject *device_id = PyDict_GetItemWithError(d, s_device_id);
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
take_recent(PyObject *d, Py_ssize_t size, Py_ssize_t nbytes, Py_ssize_t *in_use)
{
    PyObject *recent = PyDict_GetItemWithError(d, s__recent);
    PyObject *key = recent == NULL ? NULL : Py_BuildValue("(On)", Py_None, size);
    PyObject *stack = key == NULL ? NULL : PyDict_GetItemWithError(recent, key);
    Py_XDECREF(key);
    if (stack == NULL || !PyList_CheckExact(stack) || PyList_GET_SIZE(stack) == 0)
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    Py_ssize_t last = PyList_GET_SIZE(stack) - 1;
    PyObject *block = Py_NewRef(PyList_GET_ITEM(stack, last));
    PyObject *n = PyLong_FromSsize_t(nbytes);
    if (n == NULL || PyList_SetSlice(stack, last, last + 1, NULL) < 0 ||
            count(d, s__recent_bytes, -size) < 0 || count(d, s__n_hits, 1) < 0 ||
            PySet_Add(PyDict_GetItemWithError(d, s__live), block) < 0 ||
            count(d, s__n_allocs, 1) < 0 || (*in_use = count(d, s__in_use, nbytes)) < 0) {
        Py_XDECREF(n);
        Py_DECREF(block);
        return NULL;
    }
    Py_XSETREF(SLOT(block, BlockOff[B_NBYTES]), n);
    PyObject *peak = PyDict_GetItemWithError(d, s__peak);
    Py_ssize_t before = peak == NULL ? -1 : PyNumber_AsSsize_t(peak, PyExc_OverflowError);
    if (before < 0 || (*in_use > before && count(d, s__peak, *in_use - before) < 0)) {
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
    PyObject *d = store_dict(store, &record);
    if (d == NULL)
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    Py_ssize_t size = nbytes <= Granule ? Granule : (nbytes + Granule - 1) / Granule * Granule;
    Py_ssize_t in_use = 0;
    PyObject *block = NULL;
    if (store_lock(d) == 0) {
        block = take_recent(d, size, nbytes, &in_use);
        if (store_unlock(d) < 0)
            Py_CLEAR(block);
    }
    if (block != NULL && block != Py_None && record != NULL) {
        if (memory_record(record, AllocTag, d, in_use) < 0)
            Py_CLEAR(block);
        record = NULL;
    }
    Py_XDECREF(record);
    return block;
}

/* `store.free(block)` in C where the store is pooled: 1 when done, 0 when the Python
 * method must run, -1 on error. */
static int
pooled_free(PyObject *store, PyObject *block)
{
    PyObject *record;
    PyObject *d = PyObject_TypeCheck(block, BlockType) ? store_dict(store, &record) : NULL;
    if (d == NULL)
        return PyErr_Occurred() ? -1 : 0;
    PyObject *live = PyDict_GetItemWithError(d, s__live);
    PyObject *size = SLOT(block, BlockOff[B_SIZE]), *stream = SLOT(block, BlockOff[B_STREAM]);
    PyObject *nbytes = SLOT(block, BlockOff[B_NBYTES]);
    if (live == NULL || size == NULL || stream == NULL || nbytes == NULL ||
            !PySet_Contains(live, block)) {   /* the Python method raises */
        Py_XDECREF(record);
        return PyErr_Occurred() ? -1 : 0;
    }
    /* (a block the Python path made may count its bytes in NumPy ints) */
    Py_ssize_t in_use = -1, n = PyNumber_AsSsize_t(nbytes, PyExc_OverflowError),
        sz = PyNumber_AsSsize_t(size, PyExc_OverflowError);
    int rc = PyErr_Occurred() ? -1 : store_lock(d);
    if (rc == 0) {
        PyObject *recent = PyDict_GetItemWithError(d, s__recent);
        PyObject *key = recent == NULL ? NULL : PyTuple_Pack(2, stream, size);
        PyObject *stack = key == NULL ? NULL : PyDict_GetItemWithError(recent, key);
        if (key == NULL || PySet_Discard(live, block) < 0 ||
                (in_use = count(d, s__in_use, -n)) < 0 || count(d, s__n_frees, 1) < 0)
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
        if (rc == 0 && count(d, s__recent_bytes, sz) < 0)
            rc = -1;
        Py_XDECREF(key);
        if (store_unlock(d) < 0)
            rc = -1;
    }
    if (rc == 0 && record != NULL) {
        rc = memory_record(record, FreeTag, d, in_use);
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
    PyObject *store = PyObject_GetAttr(device, s_store);
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
