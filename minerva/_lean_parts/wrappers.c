/* Part of minerva._lean (minerva/_lean.c includes every part, in order, into one
 * translation unit: the parts share its static state). */

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
