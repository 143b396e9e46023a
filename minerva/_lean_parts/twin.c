/* Part of minerva._lean (minerva/_lean.c includes every part, in order, into one
 * translation unit: the parts share its static state). */

/* ---- types in front of a Python twin ------------------------------------------------ */

/* Every such type starts so; the types with more fields add only object references after
 * `python` (the Operator, with its flags, has its own), which the functions below visit
 * and clear, up to the type's size. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *python;      /* the Python function it stands in front of */
} Wrapper;

#define WRAPPER_REFS(self) ((PyObject **)&((Wrapper *)(self))->python)
#define WRAPPER_N_REFS(self) ((Py_TYPE(self)->tp_basicsize - \
    (Py_ssize_t)offsetof(Wrapper, python)) / (Py_ssize_t)sizeof(PyObject *))

static int
wrapper_traverse(PyObject *self, visitproc visit, void *arg)
{
    for (Py_ssize_t i = 0; i < WRAPPER_N_REFS(self); i++)
        Py_VISIT(WRAPPER_REFS(self)[i]);
    return 0;
}

static int
wrapper_clear(PyObject *self)
{
    for (Py_ssize_t i = 0; i < WRAPPER_N_REFS(self); i++)
        Py_CLEAR(WRAPPER_REFS(self)[i]);
    return 0;
}

static void
wrapper_dealloc(PyObject *self)
{
    PyObject_GC_UnTrack(self);
    wrapper_clear(self);
    Py_TYPE(self)->tp_free(self);
}

/* `x.__add__` is a bound method, as the Python twin's would be. */
static PyObject *
wrapper_get(PyObject *self, PyObject *obj, PyObject *type)
{
    if (obj == NULL || obj == Py_None)
        return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

static PyObject *
wrapper_getattro(PyObject *self, PyObject *name)
{
    /* the Python twin's name and docstring (not the type's) */
    if (PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, "__doc__") == 0)
        return PyObject_GetAttr(((Wrapper *)self)->python, name);
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
    .tp_descr_get = wrapper_get,  .tp_getattro = wrapper_getattro,                      \
    .tp_call = PyVectorcall_Call, .tp_vectorcall_offset = offsetof(STRUCT, vectorcall), \
    .tp_members = wrapper_members}

/* A wrapper of `type` around the Python function `python` (its one argument), whose C
 * path is `vectorcall`. */
static PyObject *
wrapper_new(PyTypeObject *type, PyObject *args, PyObject *kwargs, vectorcallfunc vectorcall)
{
    PyObject *python;
    static char *names[] = {"python", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O", names, &python))
        return NULL;
    Wrapper *self = (Wrapper *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->vectorcall = vectorcall;
    self->python = Py_NewRef(python);
    return (PyObject *)self;
}
