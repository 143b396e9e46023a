/* Part of minerva._lean (minerva/_lean.c includes every part, in order, into one
 * translation unit: the parts share its static state). */

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
    PyObject *file, *line, *created_at = NULL, *node_id = NULL, *version = NULL, *dag = NULL;
    if (user_line(&file, &line) < 0)
        return NULL;
    created_at = Py_BuildValue("(NN)", file, line);
    long before = long_slot(base, DataOff[D_VERSION]);
    node_id = created_at == NULL || before < 0 ? NULL : next_node_id();
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
        dag = ENGINE_ATTR(L->engine, E_DAG, s_dag);
        PyObject *data = dag == NULL ? NULL : DAG_ATTR(dag, G_DATA, s_data);
        if (data == NULL || PyDict_DelItem(data, SLOT(base, DataOff[D_NODE_ID])) < 0 ||
                PyDict_SetItem(data, node_id, out) < 0 || dag_completed(dag) < 0)
            Py_CLEAR(out);
        Py_XDECREF(data);
    }
    Py_XDECREF(created_at); Py_XDECREF(node_id); Py_XDECREF(version); Py_XDECREF(dag);
    return out;
}
