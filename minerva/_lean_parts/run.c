/* Part of minerva._lean (minerva/_lean.c includes every part, in order, into one
 * translation unit: the parts share its static state). */

/* ---- the lean op, run: one round of the engine lock ------------------------------- */

/* `BLAS.try_hold(device.threads)` (minerva.device.cpu.blas) in C where the count is
 * process-wide and already the device's, no kernel waits and the guard is free at once:
 * 1 held, 0 for the Python method to decide, -1 on error. */
static int
blas_hold_now(LeanOp *L)
{
    Py_ssize_t threads, count, users;
    int shared = attr_true(Blas, s_process_wide);
    if (shared <= 0)
        return shared;
    if (attr_ssize(L->device, s_threads, &threads) < 0)
        return -1;
    PyObject *got = PyObject_CallMethodOneArg(BlasLock, s_acquire, Py_False);
    if (got == NULL)
        return -1;
    int held = PyObject_IsTrue(got), rc = 0;
    Py_DECREF(got);
    if (held <= 0)
        return held;
    PyObject *value = PyObject_GetAttr(Blas, s__count);
    count = value == NULL ? -2 : value == Py_None ? -1 : PyLong_AsSsize_t(value);
    Py_XDECREF(value);
    if (count == -2 || attr_ssize(Blas, s__users, &users) < 0)
        rc = -1;
    else if (count == threads && PyObject_Length(BlasQueue) == 0)
        rc = attr_add(Blas, s__users, 1) < 0 ? -1 : 1;
    PyObject *r = PyObject_CallMethodNoArgs(BlasLock, s_release);
    Py_XDECREF(r);
    return r == NULL || PyErr_Occurred() ? -1 : rc;
}

/* The device's BLAS thread count held for a kernel that calls BLAS
 * (`device.try_hold_blas()`, never waited for): 1 held, 0 not (the Python path), -1. */
static int
blas_hold(LeanOp *L)
{
    int now = blas_hold_now(L);
    if (now != 0)
        return now;
    PyObject *held = PyObject_CallMethodNoArgs(L->device, s_try_hold_blas);
    if (held == NULL)
        return -1;
    int rc = PyObject_IsTrue(held);
    Py_DECREF(held);
    return rc;
}

/* `BLAS.release()` in C where the count is process-wide and no kernel waits for a turn
 * (else `device.release_blas()`); 0, or -1 on error. */
static int
blas_release(LeanOp *L)
{
    int shared = attr_true(Blas, s_process_wide);
    if (shared <= 0)
        return shared;
    PyObject *r = PyObject_CallMethodNoArgs(BlasLock, s_acquire);   /* as `with _cond` */
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    Py_ssize_t users;
    int rc = attr_ssize(Blas, s__users, &users) < 0 ? -1 : attr_add(Blas, s__users, -1);
    if (rc == 0 && users == 1 && PyObject_Length(BlasQueue) > 0) {   /* the next in line */
        r = PyObject_CallMethodNoArgs(BlasCond, s_notify_all);
        rc = r == NULL ? -1 : 0;
        Py_XDECREF(r);
    }
    Held held;
    HOLD(held);
    r = PyObject_CallMethodNoArgs(BlasLock, s_release);
    if (HELD(held))
        RESTORE(held);
    Py_XDECREF(r);
    return r == NULL ? -1 : rc;
}

/* `store.free(block)` while an exception is pending, which stays (the first wins). */
static void
free_held(PyObject *store, PyObject *block)
{
    Held held;
    HOLD(held);
    PyObject *r = PyObject_CallMethodObjArgs(store, s_free, block, NULL);
    Py_XDECREF(r);
    if (HELD(held))
        RESTORE(held);
}

/* Under the lock, its inputs ready: the output's target (the handed-over `block`, a new
 * reference, consumed), the kernel, the output value inserted; as `lean_locked` returns. */
static PyObject *lean_body(LeanOp *L, PyObject *block, PyObject *errstate,
                           PyObject *const *operands, int n_operands);

/* Under the lock: run the op; the output value (new reference), Py_None when it must
 * take the DAG path, NULL on an error of the runtime itself. */
static PyObject *
lean_locked(LeanOp *L, PyObject *errstate, PyObject *const *operands, int n_operands,
            PyObject **later)
{
    PyObject *block;
    if (lean_reap(L, &block, later) < 0) {
        Py_XDECREF(block);
        return NULL;
    }
    int ready = lean_ready(L);
    int cancelled = ready > 0 ? truth_of(DEVICE_ATTR(L->device, DV_CANCELLED, s_cancelled)) : 0;
    if (ready > 0 && cancelled == 0 && L->blas)
        ready = blas_hold(L);
    if (ready <= 0 || cancelled != 0) {
        if (block != Py_None) {   /* the Python path takes it from here */
            PyObject *r = PyObject_CallMethodObjArgs(L->store, s_free, block, NULL);
            Py_XDECREF(r);
            if (r == NULL)
                ready = -1;
        }
        Py_DECREF(block);
        if (ready < 0 || cancelled < 0)
            return NULL;
        Py_RETURN_NONE;
    }
    PyObject *out = lean_body(L, block, errstate, operands, n_operands);
    if (L->blas) {
        Held held;
        HOLD(held);
        int rc = blas_release(L);
        if (HELD(held))
            RESTORE(held);
        if (rc < 0)
            Py_CLEAR(out);
    }
    return out;
}

/* The elements a write reaches in the current value's `array` (new reference): the
 * array itself, or seen through `x`'s view and indexed by the write's basic index. */
static PyObject *
write_target(LeanOp *L, PyObject *array)
{
    PyObject *target = L->write_view == NULL ? Py_NewRef(array) :
        view_array(array, L->write_view);
    if (target != NULL && L->write_key != NULL)
        Py_SETREF(target, PyObject_GetItem(target, L->write_key));
    return target;
}

static PyObject *
lean_body(LeanOp *L, PyObject *block, PyObject *errstate, PyObject *const *operands,
          int n_operands)
{
    PyObject *target = NULL, *out = NULL;
    PyObject *taken = NULL, *base = NULL;
    int got;
    if (L->written != NULL) {   /* a write: into the current value's own buffer */
        Py_DECREF(block);
        base = SLOT(L->written, StorageOff[S_CURRENT]);
        got = SLOT(L->written, StorageOff[S_ENGINE]) == L->engine ? writable_now(L, base) : 0;
        if (got > 0) {
            target = write_target(L, SLOT(base, DataOff[D_ARRAY]));
            if (target == NULL)
                return NULL;
            taken = Py_NewRef(Py_None);
        }
    } else {
        got = lean_target(L, block, &taken, &target);
    }
    if (got <= 0)
        return got < 0 ? NULL : Py_NewRef(Py_None);
    /* operands: the inputs' arrays, the scalar where there is one */
    PyObject *args[LEAN_OPERANDS];
    for (int i = 0, j = 0; i < n_operands; i++)   /* NULL: the next input's array */
        args[i] = operands[i] != NULL ? operands[i] : L->call_args[j++];
    if (L->record != NULL)
        L->started = now_ns();
    if (run_kernel(L, errstate, target, args, n_operands) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_Exception) ||
                (errstate == NULL && PyErr_ExceptionMatches(PyExc_Warning))) {
            /* KeyboardInterrupt and the like; or NumPy's own warning raised as an error
               (a warnings filter), at the user's line as NumPy raises it */
            if (taken != Py_None)
                free_held(L->store, taken);
            Py_DECREF(taken); Py_DECREF(target);
            return NULL;
        }
        Held held;
        HOLD(held);
        PyErr_NormalizeException(&held.type, &held.value, &held.tb);
        PyObject *exc = held.value;
        Py_XDECREF(held.type);
        Py_XDECREF(held.tb);
        PyList_SetSlice(DirectRecords, 0, PY_SSIZE_T_MAX, NULL);
        if (exc == NULL)
            out = NULL;
        else if (L->written != NULL)
            out = PyObject_CallFunctionObjArgs(FailedWrite, L->engine, L->op, L->written,
                                               L->device, exc, NULL);
        else
            out = PyObject_CallFunctionObjArgs(Failed, L->engine, L->op, L->spec, L->device,
                                               taken, target, exc, NULL);
        L->exc = exc;   /* the record's error */
    } else if (L->written != NULL) {
        out = settled_write(L, base);
        if (out != NULL)
            set_slot(L->written, StorageOff[S_CURRENT], out);
    } else {
        PyObject *dag = L->engine == Parts.engine ? Py_NewRef(Parts.dag) :
            ENGINE_ATTR(L->engine, E_DAG, s_dag);
        out = dag == NULL ? NULL : settled_value(dag, L->spec, L->device_id);
        Py_XDECREF(dag);
        if (out != NULL) {
            set_slot(taken, BlockOff[B_LABEL], out);
            set_slot(out, DataOff[D_BLOCK], taken);
            set_slot(out, DataOff[D_ARRAY], target);
        }
    }
    Py_DECREF(taken);
    Py_DECREF(target);
    return out;
}

/* The error state the kernel runs under (a new reference): NULL with no error when the
 * user's line called (NumPy's own state, as it is; NumPy reports there itself), else the
 * caller's decoded state (`fp_errors.caller_state`), its reports made after the kernel. */
static PyObject *
kernel_state(int *failed)
{
    int by_user = called_by_user();
    *failed = by_user < 0;
    if (by_user != 0)
        return NULL;
    PyObject *errstate = caller_state();
    if (errstate != NULL)
        return Py_NewRef(errstate);
    errstate = PyObject_CallNoArgs(CallerState);   /* not decoded yet: decoded now */
    *failed = errstate == NULL;
    return errstate;
}

/* The lean op of `L` with `operands` (NULL where an input's array goes); the result
 * handle (new reference), Py_None for the Python path (nothing done), NULL on error. */
static PyObject *
lean_run(LeanOp *L, PyObject *const *operands, int n_operands)
{
    int failed;
    PyObject *errstate = kernel_state(&failed);
    if (failed)
        return NULL;
    PyObject *later = NULL, *out = NULL;
    PyObject *r = lock_acquire(L->lock);
    if (r == NULL) {
        Py_XDECREF(errstate);
        return NULL;
    }
    Py_DECREF(r);
    out = lean_locked(L, errstate, operands, n_operands, &later);
    if (lock_release(L->lock) < 0)
        Py_CLEAR(out);
    if (later != NULL && later != Py_None) {   /* also after an error: none is lost */
        Held held;
        HOLD(held);
        r = PyObject_CallMethodObjArgs(L->engine, s_free_blocks, later, NULL);
        if (HELD(held))
            RESTORE(held);
        else if (r == NULL)
            Py_CLEAR(out);
        Py_XDECREF(r);
    }
    Py_XDECREF(later);
    if (out == NULL || out == Py_None) {
        Py_XDECREF(errstate);
        return out;
    }
    if (L->record != NULL && trace_record(L, out) < 0) {
        Py_XDECREF(errstate);
        Py_DECREF(out);
        return NULL;
    }
    if (errstate != NULL && PyList_GET_SIZE(DirectRecords)) {   /* at the user's line */
        r = PyObject_CallFunctionObjArgs(Reported, errstate, L->op, NULL);
        if (r == NULL) {
            Py_DECREF(errstate);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(r);
    }
    Py_XDECREF(errstate);
    if (L->written != NULL) {   /* `x += y` gives `x` back */
        Py_DECREF(out);
        return Py_NewRef(L->target_handle);
    }
    PyObject *storage = new_storage(out, L->engine);
    Py_DECREF(out);
    if (storage == NULL)
        return NULL;
    /* a 0-d result of an op NumPy answers with a scalar is marked one (`build`) */
    int numpy_scalar = PyTuple_GET_SIZE(SLOT(L->spec, SpecOff[P_SHAPE])) == 0 ?
        PySet_Contains(ScalarResultOps, L->name) : 0;
    if (numpy_scalar < 0) {
        Py_DECREF(storage);
        return NULL;
    }
    PyObject *handle = new_handle(storage, L->spec, numpy_scalar);
    Py_DECREF(storage);
    return handle;
}
