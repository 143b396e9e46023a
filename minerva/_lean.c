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

/* ---- what `configure` hands over ------------------------------------------------- */

static PyTypeObject *NArrayType, *StorageType, *DataNodeType, *SpecType, *BlockType;
static PyObject *Runtime;          /* minerva.current.Runtime (its `system`) */
static PyObject *Seam;             /* minerva.builder.SEAM (its `hooks`, per thread) */
static PyObject *NewNodeId;        /* minerva.dag.nodes.new_node_id */
static PyObject *ExtObj;           /* NumPy's error-state context variable */
static PyObject *Decoded;          /* fp_errors._DECODED: captured -> (ErrState, captured) */
static PyObject *DirectRecords;    /* fp_errors.DIRECT_RECORDS (a list) */
static PyObject *Numpy;            /* the numpy module (a CPU device's xp) */
static PyObject *Failed;           /* lean.failed(engine, op_def, spec, device, block, target, exc) */
static PyObject *FailedWrite;      /* lean.failed_write(engine, op_def, written, device, exc) */
static PyObject *Reported;         /* lean.reported(errstate, op_def) */
static PyObject *NumericKinds;     /* "biufc" */
static PyObject *FloatScalars;     /* NumPy's float and complex scalar types (a tuple) */
static PyObject *NdarrayType;      /* numpy.ndarray, which views a buffer */
static long Completed;             /* the COMPLETED state */
static Py_ssize_t AheadBytes, ElideBytes;
static PyObject *Zero, *One, *CompletedObj, *KwOut;
static PyObject *PackageDir;       /* callsite.PACKAGE_DIR: a frame inside is not the user's */
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
enum { B_NBYTES, B_LABEL, B_VIEW_KEY, B_VIEW, B_SIZE, B_STREAM, B_N };
static const char *BlockSlots[B_N] = {"nbytes", "label", "view_key", "view", "size", "stream"};

static Py_ssize_t ArrayOff[A_N], StorageOff[S_N], DataOff[D_N], SpecOff[P_N], BlockOff[B_N];

#define SLOT(obj, off) (*(PyObject **)((char *)(obj) + (off)))

/* interned attribute names */
static PyObject *s_system, *s_hooks, *s_engine, *s_local, *s_device, *s_devices, *s_table,
    *s_tiny_inline, *s_blas, *s_inline_limit, *s_store, *s_xp,
    *s_lock, *s_releases, *s_closed, *s_n_inflight, *s_max_pending, *s_recycles,
    *s_reap_locked, *s_delete_locked, *s_popleft, *s_appendleft, *s_append,
    *s_kicks_releases, *s_release_posted, *s_kick_releases, *s_free, *s_cancelled, *s_alloc_array, *s_array, *s_n_recycled,
    *s_dag, *s_data, *s_n_completed_total, *s_free_blocks, *s_quiet, *s_direct, *s_infer,
    *s_acquire, *s_release, *s_scalar, *s_reverse, *s_kind,
    *s_caller_track, *s_name, *s_lean_trace, *s_dtype;

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

/* ---- the shape rule's cache ------------------------------------------------------ */

/* Direct-mapped: (op, input spec, second spec or scalar type) -> output spec. Entries
 * hold their keys, so an identity can not be reused while it is cached. */
#define CACHE_SIZE 512
typedef struct {
    PyObject *op, *spec, *other, *out;
    int reverse;
} CacheEntry;
static CacheEntry Cache[CACHE_SIZE];

static inline Py_ssize_t
cache_slot(PyObject *op, PyObject *spec, PyObject *other)
{
    size_t h = ((size_t)op >> 4) * 31u + ((size_t)spec >> 4) * 17u + ((size_t)other >> 4);
    return (Py_ssize_t)(h % CACHE_SIZE);
}

static void
cache_put(Py_ssize_t i, PyObject *op, PyObject *spec, PyObject *other, PyObject *out,
          int reverse)
{
    CacheEntry *e = &Cache[i];
    e->reverse = reverse;
    Py_INCREF(op); Py_INCREF(spec); Py_INCREF(other); Py_INCREF(out);
    Py_XSETREF(e->op, op);
    Py_XSETREF(e->spec, spec);
    Py_XSETREF(e->other, other);
    Py_XSETREF(e->out, out);
}

static PyObject *
cache_clear(PyObject *module, PyObject *unused)
{
    for (int i = 0; i < CACHE_SIZE; i++) {
        Py_CLEAR(Cache[i].op); Py_CLEAR(Cache[i].spec);
        Py_CLEAR(Cache[i].other); Py_CLEAR(Cache[i].out);
    }
    Py_RETURN_NONE;
}

/* Whether a spec's dtype is one every device holds. */
static int
numeric_spec(PyObject *spec)
{
    PyObject *kind = PyObject_GetAttr(SLOT(spec, SpecOff[P_DTYPE]), s_kind);
    if (kind == NULL)
        return -1;
    int found = PySequence_Contains(NumericKinds, kind);
    Py_DECREF(kind);
    return found;
}

/* The output spec of `op` over `spec` and `other` (a second spec, a Python scalar, on
 * the left when `reverse`, or NULL for a one-operand op);
 * new reference, NULL without an error set when the op must take the Python path (the
 * shape rule raises there, at the user's line), or an output that is not one numeric,
 * non-0-d array. */
static PyObject *
out_spec(PyObject *op, PyObject *spec, PyObject *other, int scalar, int reverse)
{
    /* other NULL: a one-operand op, keyed by None */
    PyObject *key = other == NULL ? Py_None : scalar ? (PyObject *)Py_TYPE(other) : other;
    Py_ssize_t i = (cache_slot(op, spec, key) + reverse) % CACHE_SIZE;
    CacheEntry *e = &Cache[i];
    if (e->op == op && e->spec == spec && e->other == key && e->reverse == reverse) {
        Py_INCREF(e->out);
        return e->out;
    }
    PyObject *infer = PyObject_GetAttr(op, s_infer), *specs = NULL;
    if (infer == NULL)
        goto python_path;
    if (scalar) {
        PyObject *kwargs = Py_BuildValue("{OOOO}", s_scalar, other, s_reverse,
                                         reverse ? Py_True : Py_False);
        PyObject *args = PyTuple_Pack(1, spec);
        if (kwargs != NULL && args != NULL)
            specs = PyObject_Call(infer, args, kwargs);
        Py_XDECREF(kwargs);
        Py_XDECREF(args);
    } else {
        specs = PyObject_CallFunctionObjArgs(infer, spec, other, NULL);   /* other NULL: one */
    }
    Py_DECREF(infer);
    if (specs == NULL || !PyTuple_CheckExact(specs) || PyTuple_GET_SIZE(specs) != 1)
        goto python_path;
    PyObject *out = PyTuple_GET_ITEM(specs, 0);
    if (!Py_IS_TYPE(out, SpecType))
        goto python_path;
    PyObject *shape = SLOT(out, SpecOff[P_SHAPE]);
    if (shape == NULL || !PyTuple_Check(shape) || PyTuple_GET_SIZE(shape) == 0)
        goto python_path;
    int numeric = numeric_spec(out);
    if (numeric <= 0)
        goto python_path;
    /* a scalar's value matters to the rule for integer arrays (it must fit; no negative
     * integer powers): those results are not cached */
    int cacheable = 1;
    if (scalar && PyLong_CheckExact(other)) {
        PyObject *kind = PyObject_GetAttr(SLOT(spec, SpecOff[P_DTYPE]), s_kind);
        if (kind == NULL)
            goto python_path;
        cacheable = PyUnicode_CompareWithASCIIString(kind, "f") == 0 ||
                    PyUnicode_CompareWithASCIIString(kind, "c") == 0;
        Py_DECREF(kind);
    }
    if (cacheable)
        cache_put(i, op, spec, key, out, reverse);
    Py_INCREF(out);
    Py_DECREF(specs);
    return out;
python_path:
    Py_XDECREF(specs);
    PyErr_Clear();
    return NULL;
}

/* ---- small helpers ----------------------------------------------------------------- */

static inline Py_ssize_t
spec_nbytes(PyObject *spec)
{
    PyObject *n = SLOT(spec, SpecOff[P_NBYTES]);
    return n == NULL ? -1 : PyLong_AsSsize_t(n);
}

/* `getattr(obj, name)` as a C truth value; -1 on error. */
static int
attr_true(PyObject *obj, PyObject *name)
{
    PyObject *value = PyObject_GetAttr(obj, name);
    if (value == NULL)
        return -1;
    int truth = PyObject_IsTrue(value);
    Py_DECREF(value);
    return truth;
}

static int
attr_ssize(PyObject *obj, PyObject *name, Py_ssize_t *out)
{
    PyObject *value = PyObject_GetAttr(obj, name);
    if (value == NULL)
        return -1;
    *out = PyLong_AsSsize_t(value);
    Py_DECREF(value);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
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
    PyObject *node_id = PyObject_CallNoArgs(NewNodeId);
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
    PyObject *data = PyObject_GetAttr(dag, s_data);
    if (data == NULL || PyDict_SetItem(data, SLOT(out, DataOff[D_NODE_ID]), out) < 0 ||
            attr_add(dag, s_n_completed_total, 1) < 0) {
        Py_XDECREF(data);
        Py_DECREF(out);
        return NULL;
    }
    Py_DECREF(data);
    return out;
}

/* A new handle of `storage`, whole, of `spec` (as `NArray(storage, None, spec)`). */
static PyObject *
new_handle(PyObject *storage, PyObject *spec)
{
    PyObject *x = NArrayType->tp_alloc(NArrayType, 0);
    if (x == NULL)
        return NULL;
    PyObject *values[A_N] = {storage, Py_None, spec, Py_None, Py_False, Py_True, Py_False,
                             Py_None};
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

/* ---- the lean op ------------------------------------------------------------------- */

/* What one lean op needs, gathered before the engine lock. */
typedef struct {
    PyObject *engine, *device, *device_id, *store, *lock, *releases;
    PyObject *op, *name, *ufunc, *spec;    /* borrowed */
    PyObject *inputs[2];                   /* storages, borrowed */
    int n_inputs;
    PyObject *call_args[3];                /* the ufunc's operands and out */
    Py_ssize_t nbytes, total;
    PyObject *record, *track;              /* while a trace records: its append, the track */
    PyObject *exc;                         /* the kernel's exception, for the record */
    long long started;                     /* when the kernel began (ns), for the record */
    PyObject *written;                     /* a write's storage (`x += y`), borrowed; or NULL */
    PyObject *target_handle;               /* the written handle (`x`), borrowed */
    PyObject *views[2], *specs[2];         /* the inputs' views (NULL: whole), specs: borrowed */
    PyObject *viewed[2];                   /* the arrays seen through the views (new) */
} LeanOp;

static void
lean_clear(LeanOp *L)
{
    Py_CLEAR(L->engine); Py_CLEAR(L->device); Py_CLEAR(L->device_id); Py_CLEAR(L->store);
    Py_CLEAR(L->lock); Py_CLEAR(L->releases); Py_CLEAR(L->record); Py_CLEAR(L->track);
    Py_CLEAR(L->exc); Py_CLEAR(L->viewed[0]); Py_CLEAR(L->viewed[1]);
}

/* The ufunc into `target`, under the caller's error state (`run_kernel`); 0, or -1 with
 * the kernel's exception set. */
static int
run_kernel(LeanOp *L, PyObject *errstate, PyObject *target, PyObject *const *operands,
           int n_operands)
{
    PyObject *args[4];
    for (int i = 0; i < n_operands; i++)
        args[i] = operands[i];
    args[n_operands] = target;
    PyObject *direct = NULL, *token = NULL;
    int quiet = attr_true(errstate, s_quiet);
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
    PyObject *result = PyObject_Vectorcall(L->ufunc, args, n_operands, KwOut);
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

/* ---- the trace record -------------------------------------------------------------- */

/* While a trace records, a lean op appends its record itself: the same flat tuple the
 * Recorder's `op_finished` makes of a Python lean op (`DirectPath._announce_lean`), the
 * user's line found by a walk out of the package's frames, times read off the clock
 * `time.perf_counter_ns` reads. Only where the Recorder is the one listener and follows
 * no nodes (`HookBus.append_finished`); any other listener takes the Python path. */

static inline long long
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);   /* time.perf_counter_ns's clock on Linux */
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Code object -> whether its file lies inside the package, and the line of the last
 * instruction offset asked for (direct-mapped; entries hold their code objects, so an
 * address is never reused while cached). */
#define CODE_CACHE 64
typedef struct { PyObject *code; int inside, lasti, line; } CodeEntry;
static CodeEntry CodeCache[CODE_CACHE];

static CodeEntry *
code_entry(PyCodeObject *code)
{
    CodeEntry *e = &CodeCache[((size_t)code >> 4) % CODE_CACHE];
    if (e->code == (PyObject *)code)
        return e;
    int inside = (int)PyUnicode_Tailmatch(code->co_filename, PackageDir, 0, PY_SSIZE_T_MAX,
                                          -1);
    if (inside < 0)
        return NULL;
    Py_XSETREF(e->code, Py_NewRef((PyObject *)code));
    e->inside = inside;
    e->lasti = -1;
    return e;
}

/* The user's line (`callsite.user_callsite`): the file (new reference) and line of the
 * innermost frame outside the package; ("<minerva>", 0) when there is none. */
static int
user_line(PyObject **file, int *line)
{
    PyFrameObject *frame = PyEval_GetFrame();
    Py_XINCREF(frame);
    while (frame != NULL) {
        PyCodeObject *code = PyFrame_GetCode(frame);
        CodeEntry *e = code_entry(code);
        int inside = e == NULL ? -1 : e->inside;
        if (inside == 0) {
            *file = Py_NewRef(code->co_filename);
            int lasti = PyFrame_GetLasti(frame);   /* the line table is read once per offset */
            if (e->lasti != lasti) {
                e->line = PyFrame_GetLineNumber(frame);
                e->lasti = lasti;
            }
            *line = e->line;
        }
        Py_DECREF(code);
        if (inside <= 0) {
            Py_DECREF(frame);
            return inside;
        }
        PyFrameObject *back = PyFrame_GetBack(frame);
        Py_DECREF(frame);
        frame = back;
    }
    *line = 0;
    *file = PyUnicode_FromString("<minerva>");
    return *file == NULL ? -1 : 0;
}

/* Whether the op may run here with the engine's `hooks` as they are (1), or must take
 * the Python path (0: `hooks.lean_trace` is None). While the Recorder records, its
 * append and the caller's track go into `L`. */
static int
trace_prepare(LeanOp *L, PyObject *hooks)
{
    PyObject *trace = PyObject_GetAttr(hooks, s_lean_trace);
    if (trace == NULL || trace == Py_False || trace == Py_None) {
        int rc = trace == NULL ? -1 : trace == Py_False;
        Py_XDECREF(trace);
        return rc;
    }
    L->record = trace;
    L->track = PyObject_GetAttr(L->device, s_caller_track);
    return L->track == NULL ? -1 : 1;
}

/* A record: a tuple's fields in an object the garbage collector does not count (a
 * tuple per op would bring its collections on more often, and the trace's cost is the
 * collector's more than the record's); `Recorder.snapshot` makes it a tuple. */
typedef struct {
    PyObject_VAR_HEAD
    PyObject *items[1];
} Record;

static void
record_dealloc(Record *self)
{
    for (Py_ssize_t i = 0; i < Py_SIZE(self); i++)
        Py_XDECREF(self->items[i]);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static Py_ssize_t
record_length(Record *self)
{
    return Py_SIZE(self);
}

static PyObject *
record_item(Record *self, Py_ssize_t i)
{
    if (i < 0 || i >= Py_SIZE(self)) {
        PyErr_SetString(PyExc_IndexError, "record index out of range");
        return NULL;
    }
    return Py_NewRef(self->items[i]);
}

static PySequenceMethods record_sequence = {
    .sq_length = (lenfunc)record_length,
    .sq_item = (ssizeargfunc)record_item,
};

static PyTypeObject RecordType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "minerva._lean.Record",
    .tp_doc = "A lean op's trace record: a tuple's fields, outside the collector's count.",
    .tp_basicsize = offsetof(Record, items),
    .tp_itemsize = sizeof(PyObject *),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)record_dealloc,
    .tp_free = PyObject_Free,
    .tp_as_sequence = &record_sequence,
};

static inline void
put(Record *record, Py_ssize_t *i, PyObject *item)   /* steals `item` (NULL: failed) */
{
    record->items[(*i)++] = item;
}

/* The record of the lean op `L` that made value `out`: `(FINISHED, op_id, name,
 * device_id, track, t_created, t_start, t_end, error, file, line, n_inputs, *input_ids,
 * node_id, storage_id, version, dtype, ndim, *shape)`, appended. */
static int
trace_record(LeanOp *L, PyObject *out)
{
    PyObject *file;
    int line;
    if (user_line(&file, &line) < 0)
        return -1;
    long long ended = now_ns();
    PyObject *spec = SLOT(out, DataOff[D_SPEC]);
    PyObject *shape = SLOT(spec, SpecOff[P_SHAPE]);
    Py_ssize_t ndim = PyTuple_GET_SIZE(shape), i = 0;
    Py_ssize_t n = 12 + L->n_inputs + 5 + ndim;
    Record *record = PyObject_NewVar(Record, &RecordType, n);
    if (record == NULL) {
        Py_DECREF(file);
        return -1;
    }
    memset(record->items, 0, n * sizeof(PyObject *));
    PyObject *started = PyLong_FromLongLong(L->started);
    put(record, &i, Py_NewRef(FinishedTag));
    put(record, &i, PyObject_CallNoArgs(NewNodeId));
    put(record, &i, Py_NewRef(L->name));
    put(record, &i, Py_NewRef(L->device_id));
    put(record, &i, Py_NewRef(L->track));
    put(record, &i, Py_XNewRef(started));
    put(record, &i, started);
    put(record, &i, PyLong_FromLongLong(ended));
    put(record, &i, Py_NewRef(L->exc != NULL ? L->exc : Py_None));
    put(record, &i, file);
    put(record, &i, PyLong_FromLong(line));
    put(record, &i, PyLong_FromLong(L->n_inputs));
    for (int k = 0; k < L->n_inputs; k++)
        put(record, &i, Py_NewRef(SLOT(SLOT(L->inputs[k], StorageOff[S_CURRENT]),
                                       DataOff[D_NODE_ID])));
    put(record, &i, Py_NewRef(SLOT(out, DataOff[D_NODE_ID])));
    put(record, &i, Py_NewRef(SLOT(out, DataOff[D_STORAGE_ID])));
    put(record, &i, Py_NewRef(SLOT(out, DataOff[D_VERSION])));
    put(record, &i, Py_NewRef(SLOT(spec, SpecOff[P_DTYPE])));
    put(record, &i, PyLong_FromSsize_t(ndim));
    for (Py_ssize_t k = 0; k < ndim; k++)
        put(record, &i, Py_NewRef(PyTuple_GET_ITEM(shape, k)));
    for (Py_ssize_t k = 0; k < i; k++) {
        if (record->items[k] == NULL) {   /* a failed call above */
            Py_DECREF(record);
            return -1;
        }
    }
    PyObject *r = PyObject_CallOneArg(L->record, (PyObject *)record);
    Py_DECREF(record);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

/* ---- the store's fast paths ------------------------------------------------------- */

/* A pooled store's two O(1) paths (`PooledDataStore.alloc_array` taking the newest
 * freed block of the size, `Device.free` → `PooledDataStore.free` putting a block on its
 * stack), step for step, on the store's own attributes under its own lock; with the
 * memory event a trace records. Only for a store of exactly that class whose strategy
 * rounds to granules and caches, and whose hooks leave it to C (`lean_trace` not None);
 * anything else — a miss, another store, another listener — calls the Python method. */

static PyTypeObject *PooledType;   /* minerva.storage.pooled.PooledDataStore */
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

/* `d[name] += delta` for an int counter; its new value, or -1 with an error set. */
static Py_ssize_t
count(PyObject *d, PyObject *name, Py_ssize_t delta)
{
    PyObject *value = PyDict_GetItemWithError(d, name);
    Py_ssize_t n = value == NULL ? -1 : PyLong_AsSsize_t(value);
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

static int
lock_call(PyObject *d, PyObject *method)
{
    PyObject *lock = PyDict_GetItemWithError(d, s__lock);
    PyObject *r = lock == NULL ? NULL : PyObject_CallMethodNoArgs(lock, method);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

/* A memory event `(tag, device_id, in_use, t_ns)` appended with `record` (consumed). */
static int
memory_record(PyObject *record, PyObject *tag, PyObject *d, Py_ssize_t in_use)
{
    Record *event = PyObject_NewVar(Record, &RecordType, 4);
    PyObject *device_id = PyDict_GetItemWithError(d, s_device_id);
    if (event == NULL || device_id == NULL) {
        Py_XDECREF(event);
        Py_DECREF(record);
        return -1;
    }
    event->items[0] = Py_NewRef(tag);
    event->items[1] = Py_NewRef(device_id);
    event->items[2] = PyLong_FromSsize_t(in_use);
    event->items[3] = PyLong_FromLongLong(now_ns());
    PyObject *r = event->items[2] == NULL || event->items[3] == NULL ? NULL :
        PyObject_CallOneArg(record, (PyObject *)event);
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
    Py_ssize_t before = peak == NULL ? -1 : PyLong_AsSsize_t(peak);
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
    if (lock_call(d, s_acquire) == 0) {
        block = take_recent(d, size, nbytes, &in_use);
        Held held;
        HOLD(held);
        int rc = lock_call(d, s_release);
        if (HELD(held))
            RESTORE(held);
        else if (rc < 0)
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
    Py_ssize_t in_use = -1, n = PyLong_AsSsize_t(nbytes), sz = PyLong_AsSsize_t(size);
    int rc = PyErr_Occurred() ? -1 : lock_call(d, s_acquire);
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
        Held held;
        HOLD(held);
        int released = lock_call(d, s_release);
        if (HELD(held))
            RESTORE(held);
        else if (released < 0)
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
        PyObject_CallMethodObjArgs(store, s_array, block, args[1], args[2], NULL);
    PyObject *pair = view == NULL ? NULL : PyTuple_Pack(2, block, view);
    Py_DECREF(block);
    Py_XDECREF(view);
    return pair;
}

/* ---- the lean op, step by step --------------------------------------------------- */

/* Gather the engine, device and store for `L`; 1 when the op may take the lean path,
 * 0 when not (nothing changed), -1 on error. */
static int
lean_prepare(LeanOp *L, PyObject *system)
{
    PyObject *local = PyObject_GetAttr(system, s_local);
    if (local == NULL)
        return -1;
    L->device_id = PyObject_GetAttr(local, s_device);
    Py_DECREF(local);
    if (L->device_id == NULL)
        return -1;
    L->engine = PyObject_GetAttr(system, s_engine);
    if (L->engine == NULL)
        return -1;
    PyObject *devices = PyObject_GetAttr(L->engine, s_devices);
    if (devices == NULL)
        return -1;
    PyObject *table = PyObject_GetAttr(devices, s_table);
    Py_DECREF(devices);
    if (table == NULL)
        return -1;
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
    int flag = attr_true(L->op, s_tiny_inline);
    if (flag <= 0)
        return flag;
    flag = attr_true(L->op, s_blas);
    if (flag != 0)
        return flag < 0 ? -1 : 0;
    PyObject *hooks = PyObject_GetAttr(L->engine, s_hooks);
    if (hooks == NULL)
        return -1;
    int traced = trace_prepare(L, hooks);
    Py_DECREF(hooks);
    if (traced <= 0)
        return traced;
    PyObject *xp = PyObject_GetAttr(L->device, s_xp);
    if (xp == NULL)
        return -1;
    Py_DECREF(xp);
    if (xp != Numpy)
        return 0;
    Py_ssize_t limit;
    if (attr_ssize(L->device, s_inline_limit, &limit) < 0)
        return -1;
    L->total = L->nbytes;
    for (int i = 0; i < L->n_inputs; i++) {
        PyObject *current = SLOT(L->inputs[i], StorageOff[S_CURRENT]);
        if (current == NULL || !Py_IS_TYPE(current, DataNodeType))
            return 0;
        /* a view's bytes are its elements' (`input_bytes`): its handle's spec */
        L->total += spec_nbytes(L->views[i] != NULL ? L->specs[i] :
                                SLOT(current, DataOff[D_SPEC]));
    }
    if (limit <= 0 || L->total > limit)
        return 0;
    L->store = PyObject_GetAttr(L->device, s_store);
    L->lock = L->store == NULL ? NULL : PyObject_GetAttr(L->engine, s_lock);
    L->releases = L->lock == NULL ? NULL : PyObject_GetAttr(L->engine, s_releases);
    return L->releases == NULL ? -1 : 1;
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
    int closed = attr_true(L->engine, s_closed);
    if (closed != 0)
        return closed < 0 ? -1 : 0;
    Py_ssize_t inflight, max_pending;
    if (attr_ssize(L->engine, s_n_inflight, &inflight) < 0 ||
            attr_ssize(L->engine, s_max_pending, &max_pending) < 0)
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
        *target = PyObject_CallMethodObjArgs(L->store, s_array, block, shape, dtype, NULL);
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
        if (attr_add(L->store, s_n_recycled, 1) < 0) {
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
    int recycles = attr_true(L->store, s_recycles);
    if (recycles < 0)
        return -1;
    Py_ssize_t nbytes = recycles && L->written == NULL ? L->nbytes : -1;   /* no hand-over */
    PyObject *dag = PyObject_GetAttr(L->engine, s_dag);
    PyObject *values = dag == NULL ? NULL : PyObject_GetAttr(dag, s_data);
    Py_XDECREF(dag);
    PyObject *devices = values == NULL ? NULL : PyObject_GetAttr(L->engine, s_devices);
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

/* ---- a write in place: x += y ------------------------------------------------------ */

static inline long
long_slot(PyObject *obj, Py_ssize_t off)
{
    PyObject *value = SLOT(obj, off);
    return value == NULL || !PyLong_Check(value) ? -1 : PyLong_AsLong(value);
}

/* `state.writable_now(base, device_id)`: `base` computed on the op's device, read by
 * nothing pending, held by one storage alone, with no cached copies. */
static int
writable_now(LeanOp *L, PyObject *base)
{
    if (long_slot(base, DataOff[D_STATE]) != Completed || long_slot(base, DataOff[D_RC]) != 0 ||
            SLOT(base, DataOff[D_WRITER]) != Py_None ||
            long_slot(base, DataOff[D_EXTERN_RC]) != 1 ||
            SLOT(base, DataOff[D_COPIES]) != Py_None)
        return PyErr_Occurred() ? -1 : 0;
    return PyObject_RichCompareBool(SLOT(base, DataOff[D_DEVICE_ID]), L->device_id, Py_EQ);
}

/* `state.settled_write(dag, base, False, created_at)`: the next version of `base`'s
 * storage, computed, owning its buffer (new reference); `base` leaves the DAG. */
static PyObject *
settled_write(LeanOp *L, PyObject *base)
{
    PyObject *file, *created_at = NULL, *node_id = NULL, *version = NULL, *dag = NULL;
    int line;
    if (user_line(&file, &line) < 0)
        return NULL;
    created_at = Py_BuildValue("(Ni)", file, line);
    long before = long_slot(base, DataOff[D_VERSION]);
    node_id = created_at == NULL || before < 0 ? NULL : PyObject_CallNoArgs(NewNodeId);
    version = node_id == NULL ? NULL : PyLong_FromLong(before + 1);
    PyObject *out = version == NULL ? NULL : DataNodeType->tp_alloc(DataNodeType, 0);
    if (out != NULL) {
        PyObject *block = SLOT(base, DataOff[D_BLOCK]), *array = SLOT(base, DataOff[D_ARRAY]);
        PyObject *values[D_N] = {
            node_id, SLOT(base, DataOff[D_SPEC]), SLOT(base, DataOff[D_DEVICE_ID]), Py_None,
            CompletedObj, Zero, One, Py_None, Py_None, Py_None, Py_None, Py_None, Zero,
            SLOT(base, DataOff[D_STORAGE_ID]), version, block, array, Py_None, Py_None,
            Py_False, created_at};
        for (int i = 0; i < D_N; i++)
            set_slot(out, DataOff[i], values[i]);
        set_slot(base, DataOff[D_EXTERN_RC], Zero);
        set_slot(base, DataOff[D_BLOCK], Py_None);
        set_slot(base, DataOff[D_ARRAY], Py_None);
        set_slot(base, DataOff[D_DEAD], Py_True);
        if (block != Py_None)
            set_slot(SLOT(out, DataOff[D_BLOCK]), BlockOff[B_LABEL], out);
        dag = PyObject_GetAttr(L->engine, s_dag);
        PyObject *data = dag == NULL ? NULL : PyObject_GetAttr(dag, s_data);
        if (data == NULL || PyDict_DelItem(data, SLOT(base, DataOff[D_NODE_ID])) < 0 ||
                PyDict_SetItem(data, node_id, out) < 0 ||
                attr_add(dag, s_n_completed_total, 1) < 0)
            Py_CLEAR(out);
        Py_XDECREF(data);
    }
    Py_XDECREF(created_at); Py_XDECREF(node_id); Py_XDECREF(version); Py_XDECREF(dag);
    return out;
}

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
    PyObject *r = PyObject_CallMethodNoArgs(L->lock, s_acquire);
    if (r == NULL) {
        Py_DECREF(errstate);
        return NULL;
    }
    Py_DECREF(r);
    out = lean_locked(L, errstate, operands, n_operands, &later);
    Held held;
    HOLD(held);
    r = PyObject_CallMethodNoArgs(L->lock, s_release);
    if (HELD(held)) {
        Py_XDECREF(r);
        RESTORE(held);
    } else if (r == NULL) {
        Py_CLEAR(out);
    } else {
        Py_DECREF(r);
    }
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

/* ---- the operator type -------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *python;      /* the Python operator it stands in front of */
    PyObject *op;          /* the array-array op */
    PyObject *scalar_op;   /* the array-scalar op */
    PyObject *ufunc;       /* NumPy's ufunc for both */
    PyObject *names[2];    /* the two ops' names (a trace record's): op, scalar_op */
    int elides;            /* whether Python may elide a temporary operand */
    int reverse;           /* a reflected operator (`1.0 - x`): scalars only, on the left */
    int unary;             /* a one-operand op (`-x`, `np.exp(x)`): `op` alone */
    int in_place;          /* an in-place operator (`x += y`): written into `x` */
    int compares;          /* a comparison (`x < y`): numeric operands only, as in Python */
} Operator;

/* Whether an operand's `view` (Py_None: whole) is one the C path reads: `(shape,
 * strides, offset)` with plain int strides (no `ReadAs`), no empty axis, and — for an
 * operand of the result's shape — its strides largest first, so that NumPy's
 * `order='K'` result is C-ordered as the C path makes it (`builder._keep_order`). */
static int
plain_view(PyObject *view, PyObject *spec, PyObject *out)
{
    if (view == Py_None)
        return 1;
    if (!PyTuple_CheckExact(view) || PyTuple_GET_SIZE(view) != 3)
        return 0;
    PyObject *shape = PyTuple_GET_ITEM(view, 0), *strides = PyTuple_GET_ITEM(view, 1);
    if (!PyTuple_CheckExact(shape) || !PyTuple_CheckExact(strides) ||
            PyTuple_GET_SIZE(shape) != PyTuple_GET_SIZE(strides) ||
            !PyLong_CheckExact(PyTuple_GET_ITEM(view, 2)))
        return 0;
    Py_ssize_t n = PyTuple_GET_SIZE(shape);
    long previous = -1;
    int full = PyObject_RichCompareBool(shape, SLOT(out, SpecOff[P_SHAPE]), Py_EQ);
    if (full < 0) {
        PyErr_Clear();
        return 0;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *extent = PyTuple_GET_ITEM(shape, i), *stride = PyTuple_GET_ITEM(strides, i);
        if (!PyLong_CheckExact(extent) || !PyLong_CheckExact(stride) ||
                PyLong_AsLong(extent) == 0)
            return 0;
        long size = labs(PyLong_AsLong(stride));
        if (full && previous >= 0 && size > previous)
            return 0;
        previous = size;
    }
    return !PyErr_Occurred();
}

/* Whether `b` is a scalar operand the C path takes: a Python float or int, or a NumPy
 * float or complex scalar (whose value never matters to a shape rule). */
static inline int
scalar_operand(PyObject *b)
{
    if (PyFloat_CheckExact(b) || PyLong_CheckExact(b))
        return 1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(FloatScalars); i++)
        if ((PyObject *)Py_TYPE(b) == PyTuple_GET_ITEM(FloatScalars, i))
            return 1;
    return 0;
}

/* Whether a comparison of an array of `spec` with `scalar` (or an array: NULL) is one
 * `comparison_method` builds: a numeric array, and a Python int only where any int fits
 * its dtype (a float one; for an integer one Python checks the value). */
static int
compared(PyObject *spec, PyObject *scalar)
{
    PyObject *kind = PyObject_GetAttr(SLOT(spec, SpecOff[P_DTYPE]), s_kind);
    if (kind == NULL)
        return -1;
    int numeric = PySequence_Contains(NumericKinds, kind);
    if (numeric > 0 && scalar != NULL && PyLong_CheckExact(scalar))
        numeric = PyUnicode_CompareWithASCIIString(kind, "i") != 0 &&
                  PyUnicode_CompareWithASCIIString(kind, "u") != 0;
    Py_DECREF(kind);
    return numeric;
}

/* `a <op> b` on the lean path: a new handle, Py_None for the Python path, NULL on error. */
static PyObject *
operator_lean(Operator *self, PyObject *a, PyObject *b)
{
    int scalar;
    if (b == NULL)   /* a one-operand op */
        scalar = 0;
    else if (scalar_operand(b))
        scalar = 1;
    else if (Py_IS_TYPE(b, NArrayType) && !self->reverse)
        scalar = 0;
    else
        Py_RETURN_NONE;
    int binary = b != NULL && !scalar;
    PyObject *view_a = SLOT(a, ArrayOff[A_VIEW]), *view_b = binary ? SLOT(b, ArrayOff[A_VIEW]) :
        Py_None;
    if (view_a == NULL || view_b == NULL || (self->in_place && (view_a != Py_None ||
            (view_b != Py_None && SLOT(b, ArrayOff[A_STORAGE]) == SLOT(a, ArrayOff[A_STORAGE])))))
        Py_RETURN_NONE;   /* a write through a view, or of a view of itself: Python's */
    if (self->in_place && (SLOT(a, ArrayOff[A_READONLY]) != Py_False ||
                           SLOT(a, ArrayOff[A_SCALAR]) != Py_False))
        Py_RETURN_NONE;   /* read-only, or a NumPy scalar (rebound): the Python path */
    PyObject *spec = SLOT(a, ArrayOff[A_SPEC]);
    PyObject *other = b == NULL ? NULL : scalar ? b : SLOT(b, ArrayOff[A_SPEC]);
    if (spec == NULL || (b != NULL && other == NULL) || !Py_IS_TYPE(spec, SpecType))
        Py_RETURN_NONE;
    if (self->compares) {   /* `comparison_method`'s own cases: else NumPy's loops decide */
        int numeric = compared(spec, scalar ? b : NULL);
        if (numeric > 0 && binary)
            numeric = numeric_spec(other);
        if (numeric <= 0)
            return numeric < 0 ? NULL : Py_NewRef(Py_None);
    }
    if (self->elides && (spec_nbytes(spec) >= ElideBytes ||
                         (binary && spec_nbytes(other) >= ElideBytes)))
        Py_RETURN_NONE;   /* a temporary may be elided: Python's `_dying` decides */
    PyObject *system = PyObject_GetAttr(Runtime, s_system);
    if (system == NULL)
        return NULL;
    PyObject *hooks = system == Py_None ? NULL : PyObject_GetAttr(Seam, s_hooks);
    int listened = hooks == NULL ? 1 : PyObject_IsTrue(hooks);
    Py_XDECREF(hooks);
    if (listened != 0) {
        Py_DECREF(system);
        if (listened < 0 && hooks != NULL)
            return NULL;
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    PyObject *op = scalar ? self->scalar_op : self->op;
    PyObject *result = Py_None;
    LeanOp L = {0};
    L.op = op;
    L.name = self->names[scalar];
    L.ufunc = self->ufunc;
    L.spec = out_spec(op, spec, other, scalar, self->reverse);
    if (L.spec == NULL) {
        Py_DECREF(system);
        Py_RETURN_NONE;
    }
    if (!plain_view(view_a, spec, L.spec) ||
            (binary && !plain_view(view_b, other, L.spec))) {
        Py_DECREF(system);
        Py_DECREF(L.spec);
        Py_RETURN_NONE;   /* a view C does not read, or a result NumPy lays out otherwise */
    }
    L.views[0] = view_a == Py_None ? NULL : view_a;
    L.specs[0] = spec;
    if (binary) {
        L.views[1] = view_b == Py_None ? NULL : view_b;
        L.specs[1] = other;
    }
    if (self->in_place) {   /* written only where the result is the target's spec */
        if (L.spec != spec) {
            Py_DECREF(system);
            Py_DECREF(L.spec);
            Py_RETURN_NONE;
        }
        L.written = SLOT(a, ArrayOff[A_STORAGE]);
        L.target_handle = a;
    }
    L.nbytes = spec_nbytes(L.spec);
    L.inputs[0] = SLOT(a, ArrayOff[A_STORAGE]);
    if (binary)
        L.inputs[1] = SLOT(b, ArrayOff[A_STORAGE]);
    L.n_inputs = binary ? 2 : 1;
    int ok = 1;
    for (int i = 0; i < L.n_inputs; i++)
        ok &= L.inputs[i] != NULL && Py_IS_TYPE(L.inputs[i], StorageType);
    int prepared = ok ? lean_prepare(&L, system) : 0;
    Py_DECREF(system);
    if (prepared > 0) {
        PyObject *operands[2] = {NULL, scalar ? b : NULL};
        if (self->reverse) {
            operands[0] = b;
            operands[1] = NULL;
        }
        result = lean_run(&L, operands, b == NULL ? 1 : 2);
    } else if (prepared == 0) {
        Py_INCREF(Py_None);
    } else {
        result = NULL;
    }
    lean_clear(&L);
    Py_DECREF(L.spec);
    return result;
}

static PyObject *
operator_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                    PyObject *kwnames)
{
    Operator *self = (Operator *)callable;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if (n == 2 - self->unary && kwnames == NULL && Py_IS_TYPE(args[0], NArrayType)) {
        PyObject *result = operator_lean(self, args[0], self->unary ? NULL : args[1]);
        if (result != Py_None)
            return result;
        Py_DECREF(result);
    }
    return PyObject_Vectorcall(self->python, args, nargsf, kwnames);
}

static PyObject *
operator_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *python, *op, *scalar_op, *ufunc;
    int elides, reverse = 0, unary = 0, in_place = 0, compares = 0;
    static char *names[] = {"python", "op", "scalar_op", "ufunc", "elides", "reverse",
                            "unary", "in_place", "compares", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOp|pppp", names, &python, &op,
                                     &scalar_op, &ufunc, &elides, &reverse, &unary,
                                     &in_place, &compares))
        return NULL;
    Operator *self = (Operator *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->vectorcall = operator_vectorcall;
    self->python = Py_NewRef(python);
    self->op = Py_NewRef(op);
    self->scalar_op = Py_NewRef(scalar_op);
    self->ufunc = Py_NewRef(ufunc);
    self->names[0] = PyObject_GetAttr(op, s_name);
    self->names[1] = PyObject_GetAttr(scalar_op, s_name);
    if (self->names[0] == NULL || self->names[1] == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    self->elides = elides;
    self->reverse = reverse;
    self->unary = unary;
    self->in_place = in_place;
    self->compares = compares;
    return (PyObject *)self;
}

static int
operator_traverse(Operator *self, visitproc visit, void *arg)
{
    Py_VISIT(self->python); Py_VISIT(self->op); Py_VISIT(self->scalar_op);
    Py_VISIT(self->ufunc); Py_VISIT(self->names[0]); Py_VISIT(self->names[1]);
    return 0;
}

static int
operator_clear(Operator *self)
{
    Py_CLEAR(self->python); Py_CLEAR(self->op); Py_CLEAR(self->scalar_op);
    Py_CLEAR(self->ufunc); Py_CLEAR(self->names[0]); Py_CLEAR(self->names[1]);
    return 0;
}

static void
operator_dealloc(Operator *self)
{
    PyObject_GC_UnTrack(self);
    operator_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* `x.__add__` is a bound method, as the Python operator's would be. */
static PyObject *
operator_get(PyObject *self, PyObject *obj, PyObject *type)
{
    if (obj == NULL || obj == Py_None)
        return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

static PyObject *
operator_getattro(PyObject *self, PyObject *name)
{
    /* the Python operator's name and docstring */
    PyObject *found = PyObject_GenericGetAttr(self, name);
    if (found != NULL || !PyErr_ExceptionMatches(PyExc_AttributeError))
        return found;
    PyErr_Clear();
    return PyObject_GetAttr(((Operator *)self)->python, name);
}

static PyMemberDef operator_members[] = {
    {"python", T_OBJECT, offsetof(Operator, python), READONLY,
     "the Python operator it stands in front of"},
    {NULL}};

static PyTypeObject OperatorType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "minerva._lean.Operator",
    .tp_doc = "An NArray operator whose lean path runs in C, in front of its Python twin.",
    .tp_basicsize = sizeof(Operator),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_new = operator_new,
    .tp_traverse = (traverseproc)operator_traverse,
    .tp_clear = (inquiry)operator_clear,
    .tp_dealloc = (destructor)operator_dealloc,
    .tp_descr_get = operator_get,
    .tp_getattro = operator_getattro,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Operator, vectorcall),
    .tp_members = operator_members,
};

/* ---- types in front of a Python twin ------------------------------------------------ */

/* Every such type but the Operator starts so: its C path, else the Python twin. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *python;      /* the Python function it stands in front of */
} Wrapper;

static int
wrapper_traverse(Wrapper *self, visitproc visit, void *arg)
{
    Py_VISIT(self->python);
    return 0;
}

static int
wrapper_clear(Wrapper *self)
{
    Py_CLEAR(self->python);
    return 0;
}

static void
wrapper_dealloc(Wrapper *self)
{
    PyObject_GC_UnTrack(self);
    wrapper_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
wrapper_getattro(PyObject *self, PyObject *name)
{
    /* the Python twin's name and docstring */
    PyObject *found = PyObject_GenericGetAttr(self, name);
    if (found != NULL || !PyErr_ExceptionMatches(PyExc_AttributeError))
        return found;
    PyErr_Clear();
    return PyObject_GetAttr(((Wrapper *)self)->python, name);
}

static PyMemberDef wrapper_members[] = {
    {"python", T_OBJECT, offsetof(Wrapper, python), READONLY,
     "the Python function it stands in front of"},
    {NULL}};

/* The type of a wrapper struct (its first fields those of Wrapper). */
#define WRAPPER_TYPE(NAME, DOC, STRUCT, NEW) {                                          \
    PyVarObject_HEAD_INIT(NULL, 0)                                                      \
    .tp_name = "minerva._lean." NAME, .tp_doc = DOC, .tp_basicsize = sizeof(STRUCT),    \
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |  \
                Py_TPFLAGS_METHOD_DESCRIPTOR,                                           \
    .tp_new = NEW, .tp_traverse = (traverseproc)wrapper_traverse,                       \
    .tp_clear = (inquiry)wrapper_clear, .tp_dealloc = (destructor)wrapper_dealloc,      \
    .tp_descr_get = operator_get, .tp_getattro = wrapper_getattro,                      \
    .tp_call = PyVectorcall_Call, .tp_vectorcall_offset = offsetof(STRUCT, vectorcall), \
    .tp_members = wrapper_members}

/* ---- the store's methods, in front of their Python twins ---------------------------- */

enum { M_FREE, M_ALLOC_ARRAY };

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *python;      /* the Python method it stands in front of */
    int kind;              /* M_FREE or M_ALLOC_ARRAY */
} StoreMethod;

static PyObject *
store_method_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                        PyObject *kwnames)
{
    StoreMethod *self = (StoreMethod *)callable;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if (kwnames == NULL && n >= 1 && PooledType != NULL && Py_IS_TYPE(args[0], PooledType)) {
        if (self->kind == M_FREE && n == 2) {
            int done = pooled_free(args[0], args[1]);
            if (done != 0)
                return done < 0 ? NULL : Py_NewRef(Py_None);
        } else if (self->kind == M_ALLOC_ARRAY) {
            PyObject *pair = pooled_alloc_array(args[0], args + 1, n - 1);
            if (pair != Py_None)
                return pair;
            Py_DECREF(pair);
        }
    }
    return PyObject_Vectorcall(self->python, args, nargsf, kwnames);
}

static PyObject *
store_method_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *python;
    const char *kind;
    static char *names[] = {"python", "kind", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Os", names, &python, &kind))
        return NULL;
    int k = strcmp(kind, "free") == 0 ? M_FREE :
            strcmp(kind, "alloc_array") == 0 ? M_ALLOC_ARRAY : -1;
    if (k < 0) {
        PyErr_Format(PyExc_ValueError, "no C path for store method %s", kind);
        return NULL;
    }
    StoreMethod *self = (StoreMethod *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->vectorcall = store_method_vectorcall;
    self->python = Py_NewRef(python);
    self->kind = k;
    return (PyObject *)self;
}

static PyTypeObject StoreMethodType = WRAPPER_TYPE(
    "StoreMethod", "A pooled store's free or alloc_array with its O(1) path in C, in front "
    "of its Python twin.", StoreMethod, store_method_new);

/* ---- one element at once: x[i] ------------------------------------------------------ */

/* `x[i]` (or `x[i, j, ...]`, one int per axis) of a whole value computed on a CPU device
 * with no write pending, while nothing records at the seam and host reads are allowed:
 * NumPy's own scalar, read under the engine lock (`indexing.getitem` →
 * `DirectPath.element_now`); NumPy's IndexError out of bounds. Anything else goes to
 * the Python `__getitem__` it stands in front of. */

static PyObject *ElementNow;       /* DirectPath.element_now, which the C read stands for */
static PyObject *HostReads;        /* narray.HOST_READS (its `refuse`, per thread) */
static PyObject *CopiedScalars;    /* indexing._COPIED_SCALARS: kinds read at once */
static PyObject *s_element_now, *s_refuse, *s_cpu;

/* Whether `key` picks one element of a value of `ndim` axes by ints alone. */
static int
element_key(PyObject *key, Py_ssize_t ndim)
{
    if (PyLong_CheckExact(key))
        return ndim == 1;
    if (!PyTuple_CheckExact(key) || PyTuple_GET_SIZE(key) != ndim || ndim == 0)
        return 0;
    for (Py_ssize_t i = 0; i < ndim; i++)
        if (!PyLong_CheckExact(PyTuple_GET_ITEM(key, i)))
            return 0;
    return 1;
}

/* Whether nothing stops a read at once: the seam is quiet, host reads are allowed and
 * the dtype's scalars are copies (1); 0 when something does; -1 on error. */
static int
element_allowed(PyObject *spec)
{
    PyObject *hooks = PyObject_GetAttr(Seam, s_hooks);
    int listened = hooks == NULL ? -1 : PyObject_IsTrue(hooks);
    Py_XDECREF(hooks);
    if (listened != 0)
        return listened < 0 ? -1 : 0;
    PyObject *refuse = PyObject_GetAttr(HostReads, s_refuse);
    if (refuse == NULL)
        return -1;
    Py_DECREF(refuse);
    if (refuse != Py_None)
        return 0;
    PyObject *kind = PyObject_GetAttr(SLOT(spec, SpecOff[P_DTYPE]), s_kind);
    int copied = kind == NULL ? -1 : PySequence_Contains(CopiedScalars, kind);
    Py_XDECREF(kind);
    return copied;
}

/* Under the engine lock: the element, Py_None when the value is not readable at once. */
static PyObject *
element_locked(PyObject *engine, PyObject *storage, PyObject *key)
{
    PyObject *data = SLOT(storage, StorageOff[S_CURRENT]);
    PyObject *state = data == NULL ? NULL : SLOT(data, DataOff[D_STATE]);
    if (state == NULL || PyLong_AsLong(state) != Completed ||
            SLOT(data, DataOff[D_WRITER]) != Py_None)
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    int closed = attr_true(engine, s_closed);
    if (closed != 0)
        return closed < 0 ? NULL : Py_NewRef(Py_None);
    PyObject *devices = PyObject_GetAttr(engine, s_devices);
    PyObject *table = devices == NULL ? NULL : PyObject_GetAttr(devices, s_table);
    Py_XDECREF(devices);
    PyObject *device = table == NULL ? NULL :
        PyObject_GetItem(table, SLOT(data, DataOff[D_DEVICE_ID]));
    Py_XDECREF(table);
    PyObject *kind = device == NULL ? NULL : PyObject_GetAttr(device, s_kind);
    Py_XDECREF(device);
    if (kind == NULL)
        return NULL;
    int cpu = PyUnicode_Check(kind) && PyUnicode_Compare(kind, s_cpu) == 0;
    Py_DECREF(kind);
    PyObject *array = SLOT(data, DataOff[D_ARRAY]);
    if (!cpu || array == NULL || array == Py_None)
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    return PyObject_GetItem(array, key);
}

/* `x[key]` at once: the element (new reference), Py_None for the Python path, NULL on
 * error (NumPy's IndexError among them). */
static PyObject *
element_lean(PyObject *x, PyObject *key)
{
    PyObject *spec = SLOT(x, ArrayOff[A_SPEC]), *storage = SLOT(x, ArrayOff[A_STORAGE]);
    if (SLOT(x, ArrayOff[A_VIEW]) != Py_None || spec == NULL || !Py_IS_TYPE(spec, SpecType) ||
            storage == NULL || !Py_IS_TYPE(storage, StorageType))
        Py_RETURN_NONE;
    PyObject *shape = SLOT(spec, SpecOff[P_SHAPE]);
    if (shape == NULL || !PyTuple_Check(shape) || !element_key(key, PyTuple_GET_SIZE(shape)))
        Py_RETURN_NONE;
    int allowed = element_allowed(spec);
    if (allowed <= 0)
        return allowed < 0 ? NULL : Py_NewRef(Py_None);
    PyObject *engine = SLOT(storage, StorageOff[S_ENGINE]);
    if (engine == NULL || _PyType_Lookup(Py_TYPE(engine), s_element_now) != ElementNow)
        Py_RETURN_NONE;
    PyObject *lock = PyObject_GetAttr(engine, s_lock);
    PyObject *r = lock == NULL ? NULL : PyObject_CallMethodNoArgs(lock, s_acquire);
    if (r == NULL) {
        Py_XDECREF(lock);
        return NULL;
    }
    Py_DECREF(r);
    PyObject *element = element_locked(engine, storage, key);
    Held held;
    HOLD(held);
    r = PyObject_CallMethodNoArgs(lock, s_release);
    Py_DECREF(lock);
    if (HELD(held)) {
        Py_XDECREF(r);
        RESTORE(held);
    } else if (r == NULL) {
        Py_CLEAR(element);
    } else {
        Py_DECREF(r);
    }
    return element;
}

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *python;      /* the Python `__getitem__` it stands in front of */
} Element;

static PyObject *
element_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                   PyObject *kwnames)
{
    Element *self = (Element *)callable;
    if (PyVectorcall_NARGS(nargsf) == 2 && kwnames == NULL && NArrayType != NULL &&
            Py_IS_TYPE(args[0], NArrayType)) {
        PyObject *element = element_lean(args[0], args[1]);
        if (element != Py_None)
            return element;
        Py_DECREF(element);
    }
    return PyObject_Vectorcall(self->python, args, nargsf, kwnames);
}

static PyObject *
element_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *python;
    static char *names[] = {"python", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O", names, &python))
        return NULL;
    Element *self = (Element *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->vectorcall = element_vectorcall;
    self->python = Py_NewRef(python);
    return (PyObject *)self;
}

static PyTypeObject ElementType = WRAPPER_TYPE(
    "Element", "NArray's __getitem__ reading one element at once in C, in front of its "
    "Python twin.", Element, element_new);

/* ---- the storage finalizer ---------------------------------------------------------- */

static PyObject *EngineRelease;    /* Releasing.release, which `release_now` stands for */

/* `engine.release(data)` as `Releasing.release` does it: queue the release; post a
 * RELEASE task when no op is in flight to apply it. */
static int
release_now(PyObject *engine, PyObject *data)
{
    int closed = attr_true(engine, s_closed);
    if (closed != 0)
        return closed;
    PyObject *releases = PyObject_GetAttr(engine, s_releases);
    PyObject *r = releases == NULL ? NULL : PyObject_CallMethodOneArg(releases, s_append, data);
    Py_XDECREF(releases);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    Py_ssize_t inflight;
    if (attr_ssize(engine, s_n_inflight, &inflight) < 0)
        return -1;
    if (inflight)
        return 0;
    int kicks = attr_true(engine, s_kicks_releases);
    int posted = kicks > 0 ? attr_true(engine, s_release_posted) : 1;
    if (kicks < 0 || posted < 0)
        return -1;
    if (posted)
        return 0;
    r = PyObject_CallMethodNoArgs(engine, s_kick_releases);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *python;      /* the Python finalizer it stands in front of */
} Finalizer;

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
    PyObject *python;
    static char *names[] = {"python", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O", names, &python))
        return NULL;
    Finalizer *self = (Finalizer *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->vectorcall = finalizer_vectorcall;
    self->python = Py_NewRef(python);
    return (PyObject *)self;
}

static PyTypeObject FinalizerType = WRAPPER_TYPE(
    "Finalizer", "A storage's finalizer in C, in front of its Python twin.", Finalizer,
    finalizer_new);

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
            take(kwargs, "Runtime", &Runtime) < 0 || take(kwargs, "SEAM", &Seam) < 0 ||
            take(kwargs, "new_node_id", &NewNodeId) < 0 ||
            take(kwargs, "extobj", &ExtObj) < 0 || take(kwargs, "decoded", &Decoded) < 0 ||
            take(kwargs, "direct_records", &DirectRecords) < 0 ||
            take(kwargs, "numpy", &Numpy) < 0 || take(kwargs, "failed", &Failed) < 0 ||
            take(kwargs, "reported", &Reported) < 0 ||
            take(kwargs, "failed_write", &FailedWrite) < 0 ||
            take(kwargs, "numeric_kinds", &NumericKinds) < 0 ||
            take(kwargs, "float_scalars", &FloatScalars) < 0 ||
            take(kwargs, "ndarray", &NdarrayType) < 0 ||
            take(kwargs, "release", &EngineRelease) < 0 ||
            take(kwargs, "COMPLETED", &completed) < 0 ||
            take(kwargs, "ahead_bytes", &ahead) < 0 ||
            take(kwargs, "elide_bytes", &elide) < 0 ||
            take(kwargs, "package_dir", &PackageDir) < 0 ||
            take(kwargs, "finished", &FinishedTag) < 0 ||
            take_type(kwargs, "PooledDataStore", &PooledType) < 0 ||
            take(kwargs, "round_granule", &RoundGranule) < 0 ||
            take(kwargs, "granule", &granule) < 0 ||
            take(kwargs, "device_free", &DeviceFree) < 0 ||
            take(kwargs, "alloc_tag", &AllocTag) < 0 || take(kwargs, "free_tag", &FreeTag) < 0 ||
            take(kwargs, "element_now", &ElementNow) < 0 ||
            take(kwargs, "host_reads", &HostReads) < 0 ||
            take(kwargs, "copied_scalars", &CopiedScalars) < 0)
        goto fail;
    if (!PyContextVar_CheckExact(ExtObj) || !PyDict_Check(Decoded) ||
            !PyList_Check(DirectRecords) || !PyUnicode_Check(PackageDir) ||
            !PyTuple_Check(FloatScalars)) {
        PyErr_SetString(PyExc_TypeError, "configure: extobj, decoded, direct_records or package_dir");
        goto fail;
    }
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
            slot_offsets(BlockType, BlockSlots, BlockOff, B_N) < 0)
        goto fail;
    cache_clear(module, NULL);
    Py_DECREF(completed); Py_DECREF(ahead); Py_DECREF(elide); Py_DECREF(granule);
    Py_RETURN_NONE;
fail:
    Py_XDECREF(completed); Py_XDECREF(ahead); Py_XDECREF(elide); Py_XDECREF(granule);
    return NULL;
}

static PyMethodDef methods[] = {
    {"configure", (PyCFunction)(void (*)(void))configure, METH_VARARGS | METH_KEYWORDS,
     "Hand over the runtime's classes and constants (minerva.api.core.lean)."},
    {"clear_cache", cache_clear, METH_NOARGS, "Forget the cached shape rules."},
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
    INTERN(s__round, "_round"); INTERN(s__caches, "_caches"); INTERN(s__lock, "_lock");
    INTERN(s__recent, "_recent"); INTERN(s__recent_bytes, "_recent_bytes");
    INTERN(s__n_hits, "_n_hits"); INTERN(s__live, "_live"); INTERN(s__n_allocs, "_n_allocs");
    INTERN(s__in_use, "_in_use"); INTERN(s__peak, "_peak"); INTERN(s__n_frees, "_n_frees");
    INTERN(s_element_now, "element_now"); INTERN(s_refuse, "refuse"); INTERN(s_cpu, "cpu");
    INTERN(s_device_id, "device_id"); INTERN(s_label, "label"); INTERN(s_empty, "");
    Zero = PyLong_FromLong(0);
    One = PyLong_FromLong(1);
    KwOut = Py_BuildValue("(s)", "out");
    if (Zero == NULL || One == NULL || KwOut == NULL)
        return NULL;
    if (PyType_Ready(&OperatorType) < 0 || PyType_Ready(&FinalizerType) < 0 ||
            PyType_Ready(&RecordType) < 0 || PyType_Ready(&StoreMethodType) < 0 ||
            PyType_Ready(&ElementType) < 0)
        return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL)
        return NULL;
    if (PyModule_AddObjectRef(module, "Operator", (PyObject *)&OperatorType) < 0 ||
            PyModule_AddObjectRef(module, "Finalizer", (PyObject *)&FinalizerType) < 0 ||
            PyModule_AddObjectRef(module, "Record", (PyObject *)&RecordType) < 0 ||
            PyModule_AddObjectRef(module, "StoreMethod", (PyObject *)&StoreMethodType) < 0 ||
            PyModule_AddObjectRef(module, "Element", (PyObject *)&ElementType) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
