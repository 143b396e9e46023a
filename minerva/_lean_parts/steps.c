/* Part of minerva._lean (minerva/_lean.c includes every part, in order, into one
 * translation unit: the parts share its static state). */

/* ---- the lean op, step by step --------------------------------------------------- */

/* `Parts` (configured.c) for `system`; 0, or -1 on error (the caller's error set). */
static int
system_parts(PyObject *system)
{
    if (Parts.ref != NULL && PyWeakref_GET_OBJECT(Parts.ref) == system)
        return 0;
    Py_CLEAR(Parts.ref);
    PyObject *ref = PyWeakref_NewRef(system, NULL);
    if (ref == NULL)
        return -1;
    PyObject *local = PyObject_GetAttr(system, s_local);
    PyObject *engine = local == NULL ? NULL : PyObject_GetAttr(system, s_engine);
    PyObject *devices = engine == NULL ? NULL : PyObject_GetAttr(engine, s_devices);
    PyObject *table = devices == NULL ? NULL : PyObject_GetAttr(devices, s_table);
    PyObject *hooks = table == NULL ? NULL : PyObject_GetAttr(engine, s_hooks);
    PyObject *lock = hooks == NULL ? NULL : PyObject_GetAttr(engine, s_lock);
    PyObject *releases = lock == NULL ? NULL : PyObject_GetAttr(engine, s_releases);
    PyObject *dag = releases == NULL ? NULL : PyObject_GetAttr(engine, s_dag);
    PyObject *data = dag == NULL ? NULL : PyObject_GetAttr(dag, s_data);
    PyObject *chosen = data == NULL ? NULL : PyObject_GetAttr(system, s__chosen);
    int rc = chosen == NULL ? -1 : PyList_CheckExact(chosen) && PyList_GET_SIZE(chosen) == 1 ? 0 : -1;
    if (rc < 0 && chosen != NULL)
        PyErr_SetString(PyExc_TypeError, "System._chosen is not a list of one flag");
    if (rc == 0) {   /* the system holds each of them */
        Parts.ref = ref;
        Parts.local = local; Parts.engine = engine; Parts.table = table;
        Parts.hooks = hooks; Parts.lock = lock; Parts.releases = releases;
        Parts.dag = dag; Parts.data = data; Parts.chosen = chosen;
    } else {
        Py_DECREF(ref);
    }
    Py_XDECREF(local); Py_XDECREF(engine); Py_XDECREF(devices); Py_XDECREF(table);
    Py_XDECREF(hooks); Py_XDECREF(lock); Py_XDECREF(releases); Py_XDECREF(dag);
    Py_XDECREF(data); Py_XDECREF(chosen);
    return rc;
}

/* What the lean path reads of the last device it met, which a device never changes once
 * made: whether its `xp` is NumPy, its `whole_limit`. The entry holds the device weakly
 * (a dead one is no match; a device that takes no weak reference is read every time). */
static struct { PyObject *ref; int numpy; Py_ssize_t whole_limit; } Known;

static int
device_facts(PyObject *device)
{
    if (Known.ref != NULL && PyWeakref_GET_OBJECT(Known.ref) == device)
        return 0;
    PyObject *xp = PyObject_GetAttr(device, s_xp);
    if (xp == NULL)
        return -1;
    Py_DECREF(xp);
    Py_ssize_t whole;
    if (attr_ssize(device, s_whole_limit, &whole) < 0)
        return -1;
    Py_CLEAR(Known.ref);
    Known.ref = PyWeakref_NewRef(device, NULL);
    if (Known.ref == NULL)
        PyErr_Clear();
    Known.numpy = xp == Numpy;
    Known.whole_limit = whole;
    return 0;
}

/* Gather the engine, device and store for `L`; 1 when the op may take the lean path,
 * 0 when not (nothing changed), -1 on error. */
static int
lean_prepare(LeanOp *L, PyObject *system)
{
    if (system_parts(system) < 0)
        return -1;
    /* the thread's choice, read only once some thread has chosen a device */
    L->device_id = PyList_GET_ITEM(Parts.chosen, 0) == Py_False ? Py_NewRef(Py_None) :
        PyObject_GetAttr(Parts.local, s_device);
    if (L->device_id == NULL)
        return -1;
    L->engine = Py_NewRef(Parts.engine);
    PyObject *table = Py_NewRef(Parts.table);
    if (L->device_id == Py_None && PyList_CheckExact(table) && PyList_GET_SIZE(table))
        Py_SETREF(L->device_id, Py_NewRef(Zero));   /* as System.current_device */
    if (!PyLong_CheckExact(L->device_id)) {
        Py_DECREF(table);
        return 0;   /* no device yet: the Python path makes one */
    }
    L->device = PyObject_GetItem(table, L->device_id);
    Py_DECREF(table);
    if (L->device == NULL)
        return -1;
    int flag = op_true(L->op, O_TINY_INLINE, s_tiny_inline);
    if (flag <= 0)
        return flag;
    L->blas = op_true(L->op, O_BLAS, s_blas);
    if (L->blas < 0)
        return -1;
    int traced = trace_prepare(L, Parts.hooks);
    if (traced <= 0)
        return traced;
    if (device_facts(L->device) < 0)
        return -1;
    if (!Known.numpy)
        return 0;
    Py_ssize_t limit;
    if (ssize_of(DEVICE_ATTR(L->device, DV_INLINE_LIMIT, s_inline_limit), &limit) < 0)
        return -1;
    L->total = L->nbytes;
    for (int i = 0; i < L->n_inputs; i++) {
        PyObject *current = SLOT(L->inputs[i], StorageOff[S_CURRENT]);
        if (current == NULL || !Py_IS_TYPE(current, DataNodeType))
            return 0;
        /* a view's bytes are its elements' (`input_bytes`): its handle's spec */
        Py_ssize_t n = spec_nbytes(L->views[i] != NULL ? L->specs[i] :
                                   SLOT(current, DataOff[D_SPEC]));
        if (n < 0)
            return 0;
        L->total += n;
    }
    if (limit <= 0 || L->total > limit)
        return 0;
    PyObject *split = op_attr(L->op, O_ROW_SPLIT, s_row_split);   /* never cut: whole only */
    if (split == NULL)
        return -1;
    Py_DECREF(split);
    if (split != Py_None && L->total > Known.whole_limit)
        return 0;
    L->store = DEVICE_ATTR(L->device, DV_STORE, s_store);
    if (L->store == NULL)
        return -1;
    L->lock = Py_NewRef(Parts.lock);
    L->releases = Py_NewRef(Parts.releases);
    return 1;
}

/* `Device.view(array, view)` of a view the C path takes (`plain_view`): NumPy's
 * `ndarray(shape, array.dtype, array, offset, strides)`, a new reference. */
static PyObject *
view_array(PyObject *array, PyObject *view)
{
    PyObject *dtype = PyObject_GetAttr(array, s_dtype);
    if (dtype == NULL)
        return NULL;
    PyObject *args[5] = {PyTuple_GET_ITEM(view, 0), dtype, array, PyTuple_GET_ITEM(view, 2),
                         PyTuple_GET_ITEM(view, 1)};
    PyObject *viewed = PyObject_Vectorcall(NdarrayType, args, 5, NULL);
    Py_DECREF(dtype);
    return viewed;
}

/* Under the engine lock: whether the runtime has room and every input is a computed
 * value on the op's device with no writer (its arrays into L->call_args). */
static int
lean_ready(LeanOp *L)
{
    int closed = truth_of(ENGINE_ATTR(L->engine, E_CLOSED, s_closed));
    if (closed != 0)
        return closed < 0 ? -1 : 0;
    Py_ssize_t inflight, max_pending;
    if (ssize_of(ENGINE_ATTR(L->engine, E_N_INFLIGHT, s_n_inflight), &inflight) < 0 ||
            ssize_of(ENGINE_ATTR(L->engine, E_MAX_PENDING, s_max_pending), &max_pending) < 0)
        return -1;
    if (inflight >= max_pending || (L->total > AheadBytes && inflight && L->written == NULL))
        return 0;
    for (int i = 0; i < L->n_inputs; i++) {
        PyObject *storage = L->inputs[i];
        PyObject *data = SLOT(storage, StorageOff[S_CURRENT]);
        PyObject *state = SLOT(data, DataOff[D_STATE]);
        if (state == NULL || PyLong_AsLong(state) != Completed ||
                SLOT(data, DataOff[D_WRITER]) != Py_None ||
                SLOT(storage, StorageOff[S_ENGINE]) != L->engine)
            return 0;
        int same = PyObject_RichCompareBool(SLOT(data, DataOff[D_DEVICE_ID]), L->device_id,
                                            Py_EQ);
        if (same <= 0)
            return same;
        PyObject *array = SLOT(data, DataOff[D_ARRAY]);
        if (array == NULL || array == Py_None)
            return 0;
        if (L->views[i] != NULL) {   /* `device.view(array, view)` */
            L->viewed[i] = view_array(array, L->views[i]);
            if (L->viewed[i] == NULL)
                return -1;
            array = L->viewed[i];
        }
        L->call_args[i] = array;
    }
    return 1;
}

/* `block` (a new reference, consumed) viewed as the output into `*target` (its last
 * view when that fits, else `store.array`); 1, or -1 on error. */
static int
view_block(LeanOp *L, PyObject *block, PyObject **block_out, PyObject **target)
{
    PyObject *shape = SLOT(L->spec, SpecOff[P_SHAPE]), *dtype = SLOT(L->spec, SpecOff[P_DTYPE]);
    PyObject *key = SLOT(block, BlockOff[B_VIEW_KEY]);
    int same = 0;
    if (key != NULL && PyTuple_CheckExact(key) && PyTuple_GET_SIZE(key) == 2) {
        same = PyObject_RichCompareBool(PyTuple_GET_ITEM(key, 0), shape, Py_EQ);
        if (same > 0)
            same = PyObject_RichCompareBool(PyTuple_GET_ITEM(key, 1), dtype, Py_EQ);
    }
    if (same < 0) {
        Py_DECREF(block);
        return -1;
    }
    if (same) {
        *target = Py_NewRef(SLOT(block, BlockOff[B_VIEW]));
    } else {
        *target = block_view(L->store, block, shape, dtype);
        if (*target == NULL) {
            Py_DECREF(block);
            return -1;
        }
    }
    *block_out = block;
    return 1;
}

/* The output's block and array, under the lock: the handed-over `block` (a new
 * reference, consumed) viewed as the output, else one taken from the store without the
 * out-of-memory ladder. 1 with both set, 0 when the store has none (the DAG path). */
static int
lean_target(LeanOp *L, PyObject *block, PyObject **block_out, PyObject **target)
{
    if (block != Py_None) {
        if (store_recycled(L->store) < 0) {
            Py_DECREF(block);
            return -1;
        }
        return view_block(L, block, block_out, target);
    }
    Py_DECREF(block);
    block = store_take(L->store, L->nbytes);   /* the store's fast path, in C */
    if (block == NULL)
        return -1;
    if (block != Py_None)
        return view_block(L, block, block_out, target);
    Py_DECREF(block);
    PyObject *shape = SLOT(L->spec, SpecOff[P_SHAPE]), *dtype = SLOT(L->spec, SpecOff[P_DTYPE]);
    PyObject *nbytes = PyLong_FromSsize_t(L->nbytes);
    if (nbytes == NULL)
        return -1;
    PyObject *got = PyObject_CallMethodObjArgs(L->store, s_alloc_array, nbytes, shape, dtype,
                                               Py_False, NULL);
    Py_DECREF(nbytes);
    if (got == NULL)
        return -1;
    if (!PyTuple_CheckExact(got) || PyTuple_GET_SIZE(got) != 2 ||
            PyTuple_GET_ITEM(got, 0) == Py_None) {
        Py_DECREF(got);
        return 0;
    }
    *block_out = PyTuple_GET_ITEM(got, 0);
    *target = PyTuple_GET_ITEM(got, 1);
    Py_INCREF(*block_out);
    Py_INCREF(*target);
    Py_DECREF(got);
    return 1;
}

/* Python's `_reap_locked` for what is left in the queue (a release that is not a value). */
static int
reap_in_python(LeanOp *L, Py_ssize_t nbytes, PyObject **block, PyObject **later)
{
    PyObject *size = PyLong_FromSsize_t(*block == Py_None ? nbytes : -1);
    if (size == NULL)
        return -1;
    PyObject *got = PyObject_CallMethodObjArgs(L->engine, s_reap_locked, L->device_id, size,
                                               NULL);
    Py_DECREF(size);
    if (got == NULL)
        return -1;
    if (!PyTuple_CheckExact(got) || PyTuple_GET_SIZE(got) != 2) {
        Py_DECREF(got);
        PyErr_SetString(PyExc_TypeError, "_reap_locked returned no pair");
        return -1;
    }
    if (*block == Py_None)
        Py_SETREF(*block, Py_NewRef(PyTuple_GET_ITEM(got, 0)));
    PyObject *more = PyTuple_GET_ITEM(got, 1);
    int rc = 0;
    if (more != Py_None) {
        if (*later == Py_None)
            Py_SETREF(*later, Py_NewRef(more));
        else
            rc = PyList_SetSlice(*later, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, more);
    }
    Py_DECREF(got);
    return rc;
}

/* One queued release of value `data` applied (under the lock): 1 when it died with a
 * block that is now free of it (`*dead_block`, a new reference), 0 when it lives on or
 * was put in `dead` (a value with cached copies or no block), -1 on error. */
static int
reap_one(PyObject *data, PyObject *values, PyObject **dead, PyObject **dead_block)
{
    PyObject *count = SLOT(data, DataOff[D_EXTERN_RC]);
    long extern_rc = count == NULL ? -1 : PyLong_AsLong(count) - 1;
    if (extern_rc < 0 && PyErr_Occurred())
        return -1;
    PyObject *n = PyLong_FromLong(extern_rc);
    if (n == NULL)
        return -1;
    Py_XSETREF(SLOT(data, DataOff[D_EXTERN_RC]), n);
    PyObject *rc = SLOT(data, DataOff[D_RC]), *st = SLOT(data, DataOff[D_STATE]);
    int alive = extern_rc != 0 || rc == NULL || PyObject_IsTrue(rc) || st == NULL ||
                PyLong_AsLong(st) < Completed || SLOT(data, DataOff[D_DEAD]) == Py_True;
    if (alive)
        return PyErr_Occurred() ? -1 : 0;
    set_slot(data, DataOff[D_DEAD], Py_True);
    PyObject *block = SLOT(data, DataOff[D_BLOCK]);
    if (SLOT(data, DataOff[D_COPIES]) != Py_None || block == NULL || block == Py_None) {
        if (*dead == NULL && (*dead = PyList_New(0)) == NULL)
            return -1;
        return PyList_Append(*dead, data) < 0 ? -1 : 0;
    }
    if (PyDict_DelItem(values, SLOT(data, DataOff[D_NODE_ID])) < 0)
        return -1;
    *dead_block = Py_NewRef(block);
    set_slot(data, DataOff[D_BLOCK], Py_None);
    set_slot(data, DataOff[D_ARRAY], Py_None);
    return 1;
}

/* A dead value's `block` (consumed) kept for the output when it has the output's size
 * and device and none is kept yet, else freed to its device. */
static int
reap_block(LeanOp *L, PyObject *data, PyObject *block, Py_ssize_t nbytes, PyObject *table,
           PyObject **kept)
{
    if (*kept == Py_None && nbytes >= 0) {
        PyObject *size = SLOT(block, BlockOff[B_NBYTES]);
        int same = size != NULL && PyLong_AsSsize_t(size) == nbytes;
        if (same)
            same = PyObject_RichCompareBool(SLOT(data, DataOff[D_DEVICE_ID]), L->device_id,
                                            Py_EQ);
        if (same < 0) {
            Py_DECREF(block);
            return -1;
        }
        if (same) {
            Py_SETREF(*kept, block);
            return 0;
        }
    }
    PyObject *device = PyObject_GetItem(table, SLOT(data, DataOff[D_DEVICE_ID]));
    int done = device == NULL ? -1 : store_free(device, block);   /* in C where it can */
    PyObject *r = done != 0 ? NULL : PyObject_CallMethodOneArg(device, s_free, block);
    Py_XDECREF(device);
    Py_DECREF(block);
    Py_XDECREF(r);
    return done > 0 || r != NULL ? 0 : -1;
}

/* The queued releases applied in one pass (`Releasing._reap_locked`): the block handed
 * over (or None) and the blocks to free after the lock (or None), as new references. */
static int
lean_reap(LeanOp *L, PyObject **block, PyObject **later)
{
    *block = Py_NewRef(Py_None);
    *later = Py_NewRef(Py_None);
    Py_ssize_t n = PyObject_Length(L->releases);
    if (n <= 0)
        return n < 0 ? -1 : 0;
    int recycles = truth_of(slot_attr(L->store, PooledType, PoolOff[PS_RECYCLES], s_recycles));
    if (recycles < 0)
        return -1;
    Py_ssize_t nbytes = recycles && L->written == NULL ? L->nbytes : -1;   /* no hand-over */
    PyObject *dag = ENGINE_ATTR(L->engine, E_DAG, s_dag);
    PyObject *values = dag == NULL ? NULL : DAG_ATTR(dag, G_DATA, s_data);
    Py_XDECREF(dag);
    PyObject *devices = values == NULL ? NULL : ENGINE_ATTR(L->engine, E_DEVICES, s_devices);
    PyObject *table = devices == NULL ? NULL : PyObject_GetAttr(devices, s_table);
    Py_XDECREF(devices);
    PyObject *dead = NULL;
    int rc = table == NULL ? -1 : 0, other = 0;
    while (rc == 0 && (n = PyObject_Length(L->releases)) > 0) {
        PyObject *data = PyObject_CallMethodNoArgs(L->releases, s_popleft);
        if (data == NULL) {
            rc = -1;
            break;
        }
        if (!Py_IS_TYPE(data, DataNodeType)) {   /* Python's loop takes it from here */
            PyObject *r = PyObject_CallMethodOneArg(L->releases, s_appendleft, data);
            Py_DECREF(data);
            Py_XDECREF(r);
            rc = r == NULL ? -1 : 0;
            other = 1;
            break;
        }
        PyObject *freed = NULL;
        rc = reap_one(data, values, &dead, &freed);
        if (rc == 1)
            rc = reap_block(L, data, freed, nbytes, table, block);
        Py_DECREF(data);
    }
    if (n < 0)
        rc = -1;
    Py_XDECREF(values);
    Py_XDECREF(table);
    if (rc == 0 && dead != NULL) {
        PyObject *blocks = PyObject_CallMethodOneArg(L->engine, s_delete_locked, dead);
        if (blocks == NULL)
            rc = -1;
        else
            Py_SETREF(*later, blocks);
    }
    Py_XDECREF(dead);
    if (rc == 0 && other)
        rc = reap_in_python(L, nbytes, block, later);
    return rc;
}
