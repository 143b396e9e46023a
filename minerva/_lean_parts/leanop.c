/* Part of minerva._lean (minerva/_lean.c includes every part, in order, into one
 * translation unit: the parts share its static state). */

/* ---- the lean op ------------------------------------------------------------------- */

#define LEAN_INPUTS 4   /* at most so many array inputs */
#define LEAN_KW 8       /* ... and keyword arguments before `out` */
#define LEAN_OPERANDS (LEAN_INPUTS + 1)   /* the inputs' arrays, and xp or a scalar */

/* What one lean op needs, gathered before the engine lock. */
typedef struct {
    PyObject *engine, *device, *device_id, *store, *lock, *releases;
    PyObject *op, *name, *ufunc, *spec;    /* borrowed */
    PyObject *inputs[LEAN_INPUTS];         /* storages, borrowed */
    int n_inputs;
    PyObject *call_args[LEAN_INPUTS];      /* the inputs' arrays (borrowed, or `viewed`) */
    Py_ssize_t nbytes, total;
    PyObject *record, *track;              /* while a trace records: its append, the track */
    PyObject *exc;                         /* the kernel's exception, for the record */
    long long started;                     /* when the kernel began (ns), for the record */
    PyObject *written;                     /* a write's storage (`x += y`), borrowed; or NULL */
    PyObject *target_handle;               /* the written handle (`x`), borrowed */
    PyObject *views[LEAN_INPUTS];          /* the inputs' views (NULL: whole), borrowed */
    PyObject *specs[LEAN_INPUTS];          /* their handles' specs, borrowed */
    PyObject *viewed[LEAN_INPUTS];         /* the arrays seen through the views (new) */
    int blas;                              /* the kernel calls BLAS: the device's count held */
    PyObject *kw[LEAN_KW];                 /* keyword arguments before `out` (borrowed) */
    PyObject *kwnames;                     /* their names and "out"; NULL: `out` alone */
    int n_kw;
    int out_first;                         /* kernel(target, operands..., **kw): a write */
    PyObject *write_view;                  /* a write through `x`'s view (borrowed), or NULL */
    PyObject *write_key;                   /* ... and its basic index (new), or NULL */
} LeanOp;

static void
lean_clear(LeanOp *L)
{
    Py_CLEAR(L->engine); Py_CLEAR(L->device); Py_CLEAR(L->device_id); Py_CLEAR(L->store);
    Py_CLEAR(L->lock); Py_CLEAR(L->releases); Py_CLEAR(L->record); Py_CLEAR(L->track);
    Py_CLEAR(L->exc); Py_CLEAR(L->write_key);
    for (int i = 0; i < LEAN_INPUTS; i++)
        Py_CLEAR(L->viewed[i]);
}

/* The ufunc into `target` (its keywords `L->kw` before `out`), under the caller's error
 * state `errstate` (`run_kernel`), or under NumPy's own state as it is (`errstate`
 * NULL: the user's line called, NumPy reports its errors there itself); 0, or -1 with
 * the kernel's exception set. */
static int
run_kernel(LeanOp *L, PyObject *errstate, PyObject *target, PyObject *const *operands,
           int n_operands)
{
    PyObject *args[1 + LEAN_OPERANDS + LEAN_KW + 1];
    int k = 0;
    if (L->out_first)   /* `target.fill(value)`, `copyto(target, x, casting=...)` */
        args[k++] = target;
    for (int i = 0; i < n_operands; i++)
        args[k++] = operands[i];
    for (int i = 0; i < L->n_kw; i++)
        args[k++] = L->kw[i];
    if (!L->out_first)
        args[k++] = target;
    PyObject *direct = NULL, *token = NULL;
    int quiet = errstate == NULL ? 1 : attr_true(errstate, s_quiet);
    if (quiet < 0)
        return -1;
    if (!quiet) {
        direct = PyObject_GetAttr(errstate, s_direct);
        if (direct == NULL)
            return -1;
        token = PyContextVar_Set(ExtObj, direct);
        Py_DECREF(direct);
        if (token == NULL)
            return -1;
    }
    PyObject *result = L->out_first ?
        PyObject_Vectorcall(L->ufunc, args, 1 + n_operands, L->kwnames) :
        PyObject_Vectorcall(L->ufunc, args, n_operands, L->kwnames != NULL ? L->kwnames : KwOut);
    if (token != NULL) {
        Held held;
        HOLD(held);
        int rc = PyContextVar_Reset(ExtObj, token);
        Py_DECREF(token);
        if (HELD(held))
            RESTORE(held);
        else if (rc < 0) {
            Py_XDECREF(result);
            return -1;
        }
    }
    if (result == NULL)
        return -1;
    Py_DECREF(result);
    return 0;
}

/* The calling thread's decoded error state (`fp_errors.caller_state`), borrowed from the
 * cache of decoded states; NULL (no error) when it is not decoded yet. */
static PyObject *
caller_state(void)
{
    PyObject *captured;
    if (PyContextVar_Get(ExtObj, NULL, &captured) < 0 || captured == NULL) {
        PyErr_Clear();
        return NULL;
    }
    PyObject *known = PyDict_GetItemWithError(Decoded, captured);
    Py_DECREF(captured);
    if (known == NULL || !PyTuple_Check(known) || PyTuple_GET_SIZE(known) < 1) {
        PyErr_Clear();
        return NULL;
    }
    return PyTuple_GET_ITEM(known, 0);
}
