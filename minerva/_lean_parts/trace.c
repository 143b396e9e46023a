/* Part of minerva._lean (minerva/_lean.c includes every part, in order, into one
 * translation unit: the parts share its static state). */

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

/* Code object -> whether its file lies inside the package (direct-mapped; entries hold
 * their code objects, so an address is never reused while cached). */
#define CODE_CACHE 64
typedef struct { PyObject *code; int inside; } CodeEntry;
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
    return e;
}

/* (code object, instruction offset) -> its line, as an int object: the line table is
 * read once per offset met, not at every op of a long function whose lines take turns
 * (direct-mapped; entries hold their code objects and lines). A new reference, NULL on
 * error. */
#define LINE_CACHE 512
typedef struct { PyObject *code; int lasti; PyObject *line; } LineEntry;
static LineEntry LineCache[LINE_CACHE];

static PyObject *
frame_line(PyFrameObject *frame, PyCodeObject *code)
{
    int lasti = PyFrame_GetLasti(frame);
    size_t slot = (((size_t)code >> 4) * 31u + (size_t)(unsigned)lasti) % LINE_CACHE;
    LineEntry *e = &LineCache[slot];
    if (e->code != (PyObject *)code || e->lasti != lasti || e->line == NULL) {
        PyObject *line = PyLong_FromLong(PyFrame_GetLineNumber(frame));
        if (line == NULL)
            return NULL;
        Py_XSETREF(e->line, line);
        Py_XSETREF(e->code, Py_NewRef((PyObject *)code));
        e->lasti = lasti;
    }
    return Py_NewRef(e->line);
}

/* Whether the innermost Python frame is the user's, outside the package (a NumPy
 * operator of the user's line calls this path with no frame of ours between): 1, 0 (a
 * frame of the package's, or none), -1 on error. */
static int
called_by_user(void)
{
    PyFrameObject *frame = PyEval_GetFrame();   /* borrowed */
    if (frame == NULL)
        return 0;
    PyCodeObject *code = PyFrame_GetCode(frame);
    CodeEntry *e = code_entry(code);
    Py_DECREF(code);
    return e == NULL ? -1 : !e->inside;
}

/* The user's line (`callsite.user_callsite`): the file and line (new references) of the
 * innermost frame outside the package; ("<minerva>", 0) when there is none. */
static int
user_line(PyObject **file, PyObject **line)
{
    PyFrameObject *frame = PyEval_GetFrame();
    Py_XINCREF(frame);
    while (frame != NULL) {
        PyCodeObject *code = PyFrame_GetCode(frame);
        CodeEntry *e = code_entry(code);
        int inside = e == NULL ? -1 : e->inside;
        if (inside == 0) {
            *line = frame_line(frame, code);
            *file = *line == NULL ? NULL : Py_NewRef(code->co_filename);
            if (*line == NULL)
                inside = -1;
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
    *file = PyUnicode_FromString("<minerva>");
    *line = *file == NULL ? NULL : PyLong_FromLong(0);
    if (*line == NULL)
        Py_CLEAR(*file);
    return *file == NULL ? -1 : 0;
}

/* Whether the op may run here with the engine's `hooks` as they are (1), or must take
 * the Python path (0: `hooks.lean_trace` is None). While the Recorder records, its
 * append and the caller's track go into `L`. */
static int
trace_prepare(LeanOp *L, PyObject *hooks)
{
    PyObject *trace = slot_attr(hooks, HookBusType, LeanTraceOff, s_lean_trace);
    if (trace == NULL || trace == Py_False || trace == Py_None) {
        int rc = trace == NULL ? -1 : trace == Py_False;
        Py_XDECREF(trace);
        return rc;
    }
    L->record = trace;
    L->track = DEVICE_ATTR(L->device, DV_CALLER_TRACK, s_caller_track);
    return L->track == NULL ? -1 : 1;
}

/* A record: a tuple's fields in an object the garbage collector does not count (a
 * tuple per op would bring its collections on more often, and the trace's cost is the
 * collector's more than the record's); `Recorder.snapshot` makes it a tuple. */
typedef struct {
    PyObject_VAR_HEAD
    long long started, ended;   /* items T_CREATED, T_START (started) and T_END: read as ints */
    PyObject *items[1];
} Record;

enum { T_CREATED = 5, T_START = 6, T_END = 7 };   /* the times' places in the record */

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
    if (i == T_CREATED || i == T_START || i == T_END)
        return PyLong_FromLongLong(i == T_END ? self->ended : self->started);
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

/* A memory event `(tag, device_id, in_use, t_ns)` with its numbers kept as C numbers:
 * one small object an event (a Record of four would add two ints); read as a sequence,
 * it makes them ints (`Recorder.snapshot`). */
typedef struct {
    PyObject_HEAD
    PyObject *tag, *device_id;
    Py_ssize_t in_use;
    long long t_ns;
} MemRecord;

static void
mem_record_dealloc(MemRecord *self)
{
    Py_XDECREF(self->tag);
    Py_XDECREF(self->device_id);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static Py_ssize_t
mem_record_length(MemRecord *self)
{
    return 4;
}

static PyObject *
mem_record_item(MemRecord *self, Py_ssize_t i)
{
    switch (i) {
    case 0: return Py_NewRef(self->tag);
    case 1: return Py_NewRef(self->device_id);
    case 2: return PyLong_FromSsize_t(self->in_use);
    case 3: return PyLong_FromLongLong(self->t_ns);
    }
    PyErr_SetString(PyExc_IndexError, "record index out of range");
    return NULL;
}

static PySequenceMethods mem_record_sequence = {
    .sq_length = (lenfunc)mem_record_length,
    .sq_item = (ssizeargfunc)mem_record_item,
};

static PyTypeObject MemRecordType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "minerva._lean.MemRecord",
    .tp_doc = "A store's memory event on the C path: (tag, device_id, in_use, t_ns).",
    .tp_basicsize = sizeof(MemRecord),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)mem_record_dealloc,
    .tp_free = PyObject_Free,
    .tp_as_sequence = &mem_record_sequence,
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
    PyObject *file, *line;
    if (user_line(&file, &line) < 0)
        return -1;
    long long ended = now_ns();
    PyObject *spec = SLOT(out, DataOff[D_SPEC]);
    PyObject *shape = SLOT(spec, SpecOff[P_SHAPE]);
    Py_ssize_t ndim = PyTuple_GET_SIZE(shape), i = 0;
    Py_ssize_t n = 12 + L->n_inputs + 5 + ndim;
    Record *record = PyObject_NewVar(Record, &RecordType, n);
    PyObject *op_id = record == NULL ? NULL : next_node_id();
    if (op_id == NULL) {
        Py_XDECREF(record);
        Py_DECREF(file);
        Py_DECREF(line);
        return -1;
    }
    memset(record->items, 0, n * sizeof(PyObject *));
    record->started = L->started;
    record->ended = ended;
    put(record, &i, Py_NewRef(FinishedTag));
    put(record, &i, op_id);
    put(record, &i, Py_NewRef(L->name));
    put(record, &i, Py_NewRef(L->device_id));
    put(record, &i, Py_NewRef(L->track));
    put(record, &i, Py_NewRef(Py_None));   /* T_CREATED, T_START, T_END: the C numbers */
    put(record, &i, Py_NewRef(Py_None));
    put(record, &i, Py_NewRef(Py_None));
    put(record, &i, Py_NewRef(L->exc != NULL ? L->exc : Py_None));
    put(record, &i, file);
    put(record, &i, line);
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
    if (record->items[11] == NULL || record->items[i - ndim - 1] == NULL) {
        Py_DECREF(record);   /* the two counts: the only calls above that can fail */
        return -1;
    }
    PyObject *r = PyObject_CallOneArg(L->record, (PyObject *)record);
    Py_DECREF(record);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}
