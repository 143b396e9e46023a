/* Part of minerva._lean (minerva/_lean.c includes every part, in order, into one
 * translation unit: the parts share its static state). */

/* ---- the lean op, run: one round of the engine lock ------------------------------- */

/* Under the lock: run the op; the output value (new reference), Py_None when it must
 * take the DAG path, NULL on an error of the runtime itself. */
static PyObject *
lean_locked(LeanOp *L, PyObject *errstate, PyObject *const *operands, int n_operands,
            PyObject **later)
{
    PyObject *block, *target = NULL, *out = NULL;
    if (lean_reap(L, &block, later) < 0) {
        Py_XDECREF(block);
        return NULL;
    }
    int ready = lean_ready(L);
    int cancelled = ready > 0 ? attr_true(L->device, s_cancelled) : 0;
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
    PyObject *taken = NULL, *base = NULL;
    int got;
    if (L->written != NULL) {   /* a write: into the current value's own buffer */
        Py_DECREF(block);
        base = SLOT(L->written, StorageOff[S_CURRENT]);
        got = SLOT(L->written, StorageOff[S_ENGINE]) == L->engine ? writable_now(L, base) : 0;
        if (got > 0) {
            target = Py_NewRef(SLOT(base, DataOff[D_ARRAY]));
            taken = Py_NewRef(Py_None);
        }
    } else {
        got = lean_target(L, block, &taken, &target);
    }
    if (got <= 0)
        return got < 0 ? NULL : Py_NewRef(Py_None);
    /* operands: the inputs' arrays, the scalar where there is one */
    PyObject *args[2];
    for (int i = 0, j = 0; i < n_operands; i++)   /* NULL: the next input's array */
        args[i] = operands[i] != NULL ? operands[i] : L->call_args[j++];
    if (L->record != NULL)
        L->started = now_ns();
    if (run_kernel(L, errstate, target, args, n_operands) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_Exception)) {
            Py_DECREF(taken); Py_DECREF(target);   /* KeyboardInterrupt and the like */
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
        PyObject *dag = PyObject_GetAttr(L->engine, s_dag);
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

/* The lean op of `L` with `operands` (NULL where an input's array goes); the result
 * handle (new reference), Py_None for the Python path (nothing done), NULL on error. */
static PyObject *
lean_run(LeanOp *L, PyObject *const *operands, int n_operands)
{
    PyObject *errstate = caller_state();
    if (errstate == NULL)
        Py_RETURN_NONE;   /* not decoded yet: the Python path decodes it */
    Py_INCREF(errstate);
    PyObject *later = NULL, *out = NULL;
    PyObject *r = lock_acquire(L->lock);
    if (r == NULL) {
        Py_DECREF(errstate);
        return NULL;
    }
    Py_DECREF(r);
    out = lean_locked(L, errstate, operands, n_operands, &later);
    if (lock_release(L->lock) < 0)
        Py_CLEAR(out);
    if (later != NULL && later != Py_None && out != NULL) {
        r = PyObject_CallMethodObjArgs(L->engine, s_free_blocks, later, NULL);
        if (r == NULL)
            Py_CLEAR(out);
        Py_XDECREF(r);
    }
    Py_XDECREF(later);
    if (out == NULL || out == Py_None) {
        Py_DECREF(errstate);
        return out;
    }
    if (L->record != NULL && trace_record(L, out) < 0) {
        Py_DECREF(errstate);
        Py_DECREF(out);
        return NULL;
    }
    if (PyList_GET_SIZE(DirectRecords)) {   /* floating-point errors: at the user's line */
        r = PyObject_CallFunctionObjArgs(Reported, errstate, L->op, NULL);
        if (r == NULL) {
            Py_DECREF(errstate);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(r);
    }
    Py_DECREF(errstate);
    if (L->written != NULL) {   /* `x += y` gives `x` back */
        Py_DECREF(out);
        return Py_NewRef(L->target_handle);
    }
    PyObject *storage = new_storage(out, L->engine);
    Py_DECREF(out);
    if (storage == NULL)
        return NULL;
    PyObject *handle = new_handle(storage, L->spec);
    Py_DECREF(storage);
    return handle;
}
