/* Part of minerva._lean (minerva/_lean.c includes every part, in order, into one
 * translation unit: the parts share its static state). */

/* ---- the storage finalizer ---------------------------------------------------------- */

static PyObject *EngineRelease;    /* Releasing.release, which `release_now` stands for */

/* `engine.release(data)` as `Releasing.release` does it: queue the release; post a
 * RELEASE task when no op is in flight to apply it. */
static int
release_now(PyObject *engine, PyObject *data)
{
    int closed = truth_of(ENGINE_ATTR(engine, E_CLOSED, s_closed));
    if (closed != 0)
        return closed;
    PyObject *releases = ENGINE_ATTR(engine, E_RELEASES, s_releases);
    PyObject *r = releases == NULL ? NULL : PyObject_CallMethodOneArg(releases, s_append, data);
    Py_XDECREF(releases);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    Py_ssize_t inflight;
    if (ssize_of(ENGINE_ATTR(engine, E_N_INFLIGHT, s_n_inflight), &inflight) < 0)
        return -1;
    if (inflight)
        return 0;
    PyObject *kick = _PyType_Lookup(Py_TYPE(engine), s_kicks_releases);   /* a class's */
    int kicks = kick != NULL ? PyObject_IsTrue(kick) : attr_true(engine, s_kicks_releases);
    int posted = kicks > 0 ? truth_of(ENGINE_ATTR(engine, E_RELEASE_POSTED,
                                                  s_release_posted)) : 1;
    if (kicks < 0 || posted < 0)
        return -1;
    if (posted)
        return 0;
    r = PyObject_CallMethodNoArgs(engine, s_kick_releases);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

typedef Wrapper Finalizer;   /* in front of the Python finalizer */

/* A storage's `__del__`: its current version released to its engine; errors are
 * swallowed, as the Python finalizer swallows them (interpreter shutdown). */
static PyObject *
finalizer_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                     PyObject *kwnames)
{
    Finalizer *self = (Finalizer *)callable;
    if (PyVectorcall_NARGS(nargsf) != 1 || kwnames != NULL || StorageType == NULL ||
            !Py_IS_TYPE(args[0], StorageType))
        return PyObject_Vectorcall(self->python, args, nargsf, kwnames);
    PyObject *engine = SLOT(args[0], StorageOff[S_ENGINE]);
    PyObject *data = SLOT(args[0], StorageOff[S_CURRENT]);
    if (engine == NULL || data == NULL)
        Py_RETURN_NONE;
    PyObject *release = _PyType_Lookup(Py_TYPE(engine), s_release);
    int rc;
    if (release == EngineRelease) {
        rc = release_now(engine, data);
    } else {
        PyObject *r = PyObject_CallMethodOneArg(engine, s_release, data);
        rc = r == NULL ? -1 : 0;
        Py_XDECREF(r);
    }
    if (rc < 0)
        PyErr_Clear();
    Py_RETURN_NONE;
}

static PyObject *
finalizer_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    return wrapper_new(type, args, kwargs, finalizer_vectorcall);
}

static PyTypeObject FinalizerType = WRAPPER_TYPE(
    "Finalizer", "A storage's finalizer in C, in front of its Python twin.", Finalizer,
    finalizer_new);
