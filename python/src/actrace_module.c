/* SPDX-License-Identifier: MIT */
/*
 * actrace._actrace: the Python module's C side, a thin layer over the
 * public C API (the headers in include/actrace). Nothing here records on its own: it
 * translates Python calls into act_* calls.
 *
 * Spans are recorded with caller-supplied times (act_span_record_id with
 * act_now_ns() taken at enter), never with the library's begin/end stack,
 * so an exception, a generator that never resumes or an early return can
 * never unbalance anything: a span that did not end is simply not there.
 *
 * annotate is a C type: constructing it (vectorcall), __enter__ and
 * __exit__ are C, and so is the call path of a decorated function (the
 * `annotated` type). Names are interned once (act_name) and cached in a
 * dict, so a `with actrace.annotate("x"):` in a loop costs a dict lookup,
 * two clock reads and one record.
 *
 * The library is linked by its SONAME (libactrace.so.0). Under `actrace
 * record` it is LD_PRELOADed, and the dynamic linker binds this module to
 * that same instance: one library, one session per process.
 *
 * ACTRACE_DISABLE=1 (read once, at import) makes every call a no-op:
 * annotate returns one shared inert object, the decorator returns the
 * function itself, sessions write nothing.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "actrace/actrace.h"

static int g_disabled;
/* Thread names follow threading's: a thread re-reads its name when the
 * generation moved (a Thread.name was set) or it never did. */
static unsigned g_name_gen = 1;
static _Thread_local unsigned t_name_gen;
static PyObject *g_current_thread; /* threading.current_thread */
static PyObject *g_gen_wrapper;    /* Python helper for generator functions */
static PyObject *g_name_cache;     /* str -> int (act_name_id) */
#define NAME_CACHE_MAX 65536

static act_session *g_session; /* the session this module started */
static pid_t g_session_pid;    /* the process that started it: only it stops,
                                * writes or destroys it (a forked child
                                * holds a copy it never touches) */
static int g_attached;         /* using a session someone else started */
/* Serialises everything that uses g_session: _write runs the library's
 * write with the GIL released, and a start(), stop() or _discard() on
 * another thread meanwhile would destroy the session under it. Always
 * taken with the GIL released (lock order: g_mu, then the GIL). A forked
 * child starts with it unlocked (atfork). */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t g_step_mark;    /* start of the current ProfilerStep */
static int64_t g_step_num;

/* ---- helpers -------------------------------------------------------------- */

static void session_lock(void)
{
    if (pthread_mutex_trylock(&g_mu) == 0)
        return;
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&g_mu);
    Py_END_ALLOW_THREADS
}

static void session_unlock(void)
{
    pthread_mutex_unlock(&g_mu);
}

static void atfork_child(void)
{
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    g_mu = fresh;
}

/* g_session, when this process started it (not a forked copy). */
static act_session *own_session(void)
{
    return g_session && g_session_pid == getpid() ? g_session : NULL;
}

static void name_thread_now(void)
{
    t_name_gen = g_name_gen;
    if (!g_current_thread)
        return;
    PyObject *exc_t, *exc_v, *exc_tb;
    PyErr_Fetch(&exc_t, &exc_v, &exc_tb);
    PyObject *th = PyObject_CallNoArgs(g_current_thread);
    PyObject *name = th ? PyObject_GetAttrString(th, "name") : NULL;
    const char *s = name && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
    if (s)
        act_thread_name(s);
    Py_XDECREF(name);
    Py_XDECREF(th);
    PyErr_Clear();
    PyErr_Restore(exc_t, exc_v, exc_tb);
}

static inline void name_thread(void)
{
    if (t_name_gen != g_name_gen)
        name_thread_now();
}

/* The interned id of @p name, or 0 when it is not to be interned (the
 * cache is full, the string table is full): the caller then passes the
 * string, which the library copies. */
/* In front of the dict: the last names seen, by object identity (a literal
 * in a loop is the same object each time). Entries hold a reference. */
#define IDCACHE 64
static struct {
    PyObject *name;
    act_name_id id;
} g_idcache[IDCACHE];

static act_name_id intern_slow(PyObject *name);

static inline act_name_id intern(PyObject *name)
{
    size_t h = ((uintptr_t)name >> 4) & (IDCACHE - 1);
    if (g_idcache[h].name == name)
        return g_idcache[h].id;
    act_name_id id = intern_slow(name);
    if (id) {
        Py_INCREF(name);
        Py_XSETREF(g_idcache[h].name, name);
        g_idcache[h].id = id;
    }
    return id;
}

static act_name_id intern_slow(PyObject *name)
{
    PyObject *v = PyDict_GetItemWithError(g_name_cache, name);
    if (v)
        return (act_name_id)PyLong_AsUnsignedLong(v);
    if (PyErr_Occurred())
        return 0;
    if (PyDict_GET_SIZE(g_name_cache) >= NAME_CACHE_MAX)
        return 0;
    const char *s = PyUnicode_AsUTF8(name);
    if (!s) {
        PyErr_Clear();
        return 0;
    }
    act_name_id id = act_name(s);
    if (!id)
        return 0;
    PyObject *o = PyLong_FromUnsignedLong(id);
    if (!o || PyDict_SetItem(g_name_cache, name, o) < 0)
        PyErr_Clear();
    Py_XDECREF(o);
    return id;
}

/* Args, converted once (when the annotation is made) into what the
 * act_arg_* calls take. refs keeps the key and string objects alive. */
enum { ARG_INT, ARG_UINT, ARG_DOUBLE, ARG_BOOL, ARG_STR, ARG_JSON };
typedef struct {
    const char *key;
    int kind;
    union {
        int64_t i;
        uint64_t u;
        double d;
        const char *s;
    } v;
    Py_ssize_t len;
} arg_t;

typedef struct {
    arg_t *items;
    Py_ssize_t n;
    PyObject *refs; /* list */
} args_t;

static void args_clear(args_t *a)
{
    PyMem_Free(a->items);
    a->items = NULL;
    a->n = 0;
    Py_CLEAR(a->refs);
}

/* json.dumps(@p val, allow_nan=False, ensure_ascii=False), or NULL with
 * the exception set. */
static PyObject *json_text(PyObject *val)
{
    static PyObject *dumps, *kw;
    if (!dumps) {
        PyObject *m = PyImport_ImportModule("json");
        if (!m)
            return NULL;
        dumps = PyObject_GetAttrString(m, "dumps");
        Py_DECREF(m);
        if (!dumps)
            return NULL;
        kw = Py_BuildValue("{s:O,s:O}", "allow_nan", Py_False, "ensure_ascii", Py_False);
        if (!kw) {
            Py_CLEAR(dumps);
            return NULL;
        }
    }
    PyObject *a = PyTuple_Pack(1, val);
    if (!a)
        return NULL;
    PyObject *r = PyObject_Call(dumps, a, kw);
    Py_DECREF(a);
    return r;
}

static int arg_convert(arg_t *out, PyObject *key, PyObject *val, PyObject *refs)
{
    if (!PyUnicode_Check(key)) {
        PyErr_SetString(PyExc_TypeError, "actrace: arg names must be str");
        return -1;
    }
    out->key = PyUnicode_AsUTF8(key);
    if (!out->key || PyList_Append(refs, key) < 0)
        return -1;
    if (PyBool_Check(val)) {
        out->kind = ARG_BOOL;
        out->v.i = val == Py_True;
        return 0;
    }
    if (PyLong_Check(val)) {
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(val, &overflow);
        if (!overflow) {
            if (x == -1 && PyErr_Occurred())
                return -1;
            out->kind = ARG_INT;
            out->v.i = x;
            return 0;
        }
        if (overflow > 0) {
            unsigned long long u = PyLong_AsUnsignedLongLong(val);
            if (!(u == (unsigned long long)-1 && PyErr_Occurred())) {
                out->kind = ARG_UINT;
                out->v.u = u;
                return 0;
            }
            PyErr_Clear();
        }
        /* Too big for 64 bits: written as its decimal text. */
    } else if (PyFloat_Check(val)) {
        out->kind = ARG_DOUBLE;
        out->v.d = PyFloat_AS_DOUBLE(val);
        return 0;
    }
    PyObject *s = NULL;
    out->kind = ARG_STR;
    if (PyList_Check(val) || PyTuple_Check(val) || PyDict_Check(val)) {
        /* Lists, tuples and dicts as JSON (act_arg_json), as Kineto writes
         * "Input Dims"; what json.dumps refuses (no JSON form, NaN) as
         * its str(). */
        s = json_text(val);
        if (s)
            out->kind = ARG_JSON;
        else if (PyErr_ExceptionMatches(PyExc_TypeError) || PyErr_ExceptionMatches(PyExc_ValueError))
            PyErr_Clear();
        else
            return -1;
    }
    if (!s)
        s = PyUnicode_Check(val) ? (Py_INCREF(val), val) : PyObject_Str(val);
    if (!s)
        return -1;
    Py_ssize_t len;
    out->v.s = PyUnicode_AsUTF8AndSize(s, &len);
    out->len = len;
    int rc = out->v.s && PyList_Append(refs, s) == 0 ? 0 : -1;
    Py_DECREF(s);
    return rc;
}

/* kwargs given as a dict (keyword names and values). */
static int args_from_dict(args_t *a, PyObject *kw)
{
    a->items = NULL;
    a->n = 0;
    a->refs = NULL;
    if (!kw || PyDict_GET_SIZE(kw) == 0)
        return 0;
    a->refs = PyList_New(0);
    a->items = PyMem_Calloc((size_t)PyDict_GET_SIZE(kw), sizeof(arg_t));
    if (!a->refs || !a->items) {
        args_clear(a);
        PyErr_NoMemory();
        return -1;
    }
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(kw, &pos, &k, &v)) {
        if (arg_convert(&a->items[a->n], k, v, a->refs) < 0) {
            args_clear(a);
            return -1;
        }
        a->n++;
    }
    return 0;
}

/* @p dst shares @p src's converted args (their objects stay referenced). */
static int args_share(args_t *dst, const args_t *src)
{
    if (!src->n)
        return 0;
    dst->items = PyMem_Calloc((size_t)src->n, sizeof(arg_t));
    if (!dst->items) {
        PyErr_NoMemory();
        return -1;
    }
    memcpy(dst->items, src->items, (size_t)src->n * sizeof(arg_t));
    dst->n = src->n;
    Py_INCREF(src->refs);
    dst->refs = src->refs;
    return 0;
}

static void args_emit(const args_t *a)
{
    for (Py_ssize_t i = 0; i < a->n; i++) {
        const arg_t *x = &a->items[i];
        switch (x->kind) {
        case ARG_INT: act_arg_int(x->key, x->v.i); break;
        case ARG_UINT: act_arg_uint(x->key, x->v.u); break;
        case ARG_DOUBLE: act_arg_double(x->key, x->v.d); break;
        case ARG_BOOL: act_arg_bool(x->key, (int)x->v.i); break;
        case ARG_JSON: act_arg_jsonn(x->key, x->v.s, (size_t)x->len); break;
        default: act_arg_strn(x->key, x->v.s, (size_t)x->len); break;
        }
    }
}

static int parse_type(PyObject *t, int *out)
{
    if (!t || t == Py_None) {
        *out = ACT_USER_ANNOTATION;
        return 0;
    }
    if (PyLong_Check(t)) {
        act_activity_type c;
        long v = PyLong_AsLong(t);
        if (v == -1 && PyErr_Occurred())
            return -1;
        if (v < 0 || v > INT32_MAX || act_activity_type_canonical((int)v, &c) != 0) {
            PyErr_Format(PyExc_ValueError, "actrace: unknown activity type code %ld", v);
            return -1;
        }
        *out = (int)c;
        return 0;
    }
    Py_ssize_t len;
    const char *s = PyUnicode_Check(t) ? PyUnicode_AsUTF8AndSize(t, &len) : NULL;
    if (!s) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "actrace: type must be a str (an activity type name)");
        return -1;
    }
    act_activity_type c;
    if (act_activity_type_parse(s, (size_t)len, &c) != 0) {
        PyErr_Format(PyExc_ValueError,
                     "actrace: unknown activity type %R (see `actrace types`)", t);
        return -1;
    }
    *out = (int)c;
    return 0;
}

static inline void record(int type, act_name_id id, PyObject *name,
                          int64_t t0, int64_t t1, const args_t *args)
{
    name_thread();
    if (id) {
        act_span_record_id((act_activity_type)type, id, t0, t1);
    } else {
        const char *s = PyUnicode_AsUTF8(name);
        if (!s) {
            PyErr_Clear();
            s = "";
        }
        act_span_record((act_activity_type)type, s, t0, t1);
    }
    args_emit(args);
}

/* ---- annotate --------------------------------------------------------------- */

#define SLOTS 4
typedef struct {
    PyObject_HEAD
    PyObject *name; /* str or None (decorator: the function's name) */
    act_name_id id;
    int type;
    args_t args;
    /* Open uses as a context manager: (thread, start) pairs, so one object
     * may be entered again, recursively or from several threads. The
     * first SLOTS live in the object; more (many threads in one `with`
     * of a shared object, deep recursion) grow a heap array, so every use
     * is recorded and none leaves a stale slot. All under the GIL. */
    int nopen; /* uses open */
    int cap;   /* slots: SLOTS inline, or the heap array's size */
    unsigned long *tid;
    int64_t *t0;
    unsigned long tid_in[SLOTS];
    int64_t t0_in[SLOTS];
    vectorcallfunc vectorcall; /* calls of the object itself: see below */
} AnnotateObject;

typedef struct {
    PyObject_HEAD
    PyObject *fn;
    PyObject *name;
    act_name_id id;
    int type;
    args_t args;
    PyObject *dict;
    vectorcallfunc vectorcall;
} AnnotatedObject;

static PyTypeObject AnnotateType;
static PyTypeObject AnnotatedType;
static AnnotateObject *g_inert; /* what annotate() returns when disabled */

/* Freed annotate objects, reused: `with annotate("x"):` makes one per span. */
#define FREELIST 16
static AnnotateObject *g_free[FREELIST];
static int g_nfree;

static PyObject *annotate_self_call(PyObject *o, PyObject *const *argv, size_t nargsf,
                                    PyObject *kwnames);

static AnnotateObject *annotate_alloc(PyTypeObject *tp)
{
    AnnotateObject *o;
    if (tp == &AnnotateType && g_nfree > 0) {
        o = g_free[--g_nfree];
        memset((char *)o + sizeof(PyObject), 0, sizeof *o - sizeof(PyObject));
        Py_SET_REFCNT(o, 1); /* a static, non-GC type: nothing else to reset */
    } else {
        o = (AnnotateObject *)tp->tp_alloc(tp, 0);
    }
    if (o) {
        o->vectorcall = annotate_self_call;
        o->cap = SLOTS;
        o->tid = o->tid_in;
        o->t0 = o->t0_in;
    }
    return o;
}

static void annotate_free_slots(AnnotateObject *o)
{
    if (o->tid && o->tid != o->tid_in) {
        PyMem_Free(o->tid);
        PyMem_Free(o->t0);
    }
    o->tid = o->tid_in;
    o->t0 = o->t0_in;
    o->cap = SLOTS;
}

static int annotate_grow(AnnotateObject *o)
{
    if (o->cap > INT32_MAX / 4) {
        PyErr_NoMemory();
        return -1;
    }
    int cap = o->cap * 2;
    unsigned long *tid = PyMem_Malloc((size_t)cap * sizeof *tid);
    int64_t *t0 = PyMem_Malloc((size_t)cap * sizeof *t0);
    if (!tid || !t0) {
        PyMem_Free(tid);
        PyMem_Free(t0);
        PyErr_NoMemory();
        return -1;
    }
    memcpy(tid, o->tid, (size_t)o->nopen * sizeof *tid);
    memcpy(t0, o->t0, (size_t)o->nopen * sizeof *t0);
    if (o->tid != o->tid_in) {
        PyMem_Free(o->tid);
        PyMem_Free(o->t0);
    }
    o->tid = tid;
    o->t0 = t0;
    o->cap = cap;
    return 0;
}

static PyObject *annotate_make(PyTypeObject *tp, PyObject *name, PyObject *type,
                               PyObject *kw)
{
    if (g_disabled && g_inert) {
        Py_INCREF(g_inert);
        return (PyObject *)g_inert;
    }
    if (name && name != Py_None && !PyUnicode_Check(name)) {
        PyErr_SetString(PyExc_TypeError, "actrace.annotate: name must be a str or None");
        return NULL;
    }
    AnnotateObject *self = annotate_alloc(tp);
    if (!self)
        return NULL;
    if (parse_type(type, &self->type) < 0 || args_from_dict(&self->args, kw) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    if (name && name != Py_None) {
        Py_INCREF(name);
        self->name = name;
        self->id = intern(name);
    }
    return (PyObject *)self;
}

static PyObject *annotate_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
    PyObject *name = NULL, *type = NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (n > 2) {
        PyErr_SetString(PyExc_TypeError, "actrace.annotate(name=None, type='user_annotation', **args)");
        return NULL;
    }
    if (n > 0)
        name = PyTuple_GET_ITEM(args, 0);
    if (n > 1)
        type = PyTuple_GET_ITEM(args, 1);
    PyObject *rest = NULL;
    if (kw && PyDict_GET_SIZE(kw)) {
        rest = PyDict_Copy(kw);
        if (!rest)
            return NULL;
        PyObject *v = PyDict_GetItemString(rest, "name");
        if (v) {
            if (name) {
                Py_DECREF(rest);
                PyErr_SetString(PyExc_TypeError, "actrace.annotate: name given twice");
                return NULL;
            }
            name = v;
        }
        v = PyDict_GetItemString(rest, "type");
        if (v) {
            if (type) {
                Py_DECREF(rest);
                PyErr_SetString(PyExc_TypeError, "actrace.annotate: type given twice");
                return NULL;
            }
            type = v;
        }
        Py_XINCREF(name);
        Py_XINCREF(type);
        PyDict_DelItemString(rest, "name");
        PyDict_DelItemString(rest, "type");
        PyErr_Clear();
    } else {
        Py_XINCREF(name);
        Py_XINCREF(type);
    }
    PyObject *r = annotate_make(tp, name, type, rest);
    Py_XDECREF(name);
    Py_XDECREF(type);
    Py_XDECREF(rest);
    return r;
}

/* The common case, annotate("name"), without a tuple or a dict. */
static PyObject *annotate_vectorcall(PyObject *tp, PyObject *const *argv,
                                     size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if (!kwnames && n <= 2)
        return annotate_make((PyTypeObject *)tp, n > 0 ? argv[0] : NULL,
                             n > 1 ? argv[1] : NULL, NULL);
    if (g_disabled && g_inert) {
        Py_INCREF(g_inert);
        return (PyObject *)g_inert;
    }
    PyObject *args = PyTuple_New(n);
    if (!args)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_INCREF(argv[i]);
        PyTuple_SET_ITEM(args, i, argv[i]);
    }
    PyObject *kw = kwnames ? PyDict_New() : NULL;
    if (kwnames) {
        for (Py_ssize_t i = 0; kw && i < PyTuple_GET_SIZE(kwnames); i++)
            if (PyDict_SetItem(kw, PyTuple_GET_ITEM(kwnames, i), argv[n + i]) < 0)
                Py_CLEAR(kw);
        if (!kw) {
            Py_DECREF(args);
            return NULL;
        }
    }
    PyObject *r = annotate_new((PyTypeObject *)tp, args, kw);
    Py_DECREF(args);
    Py_XDECREF(kw);
    return r;
}

static void annotate_dealloc(AnnotateObject *self)
{
    Py_XDECREF(self->name);
    args_clear(&self->args);
    annotate_free_slots(self);
    if (Py_TYPE(self) == &AnnotateType && g_nfree < FREELIST) {
        g_free[g_nfree++] = self;
        return;
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *annotate_enter(AnnotateObject *self, PyObject *unused)
{
    Py_INCREF(self);
    if (g_disabled)
        return (PyObject *)self;
    if (!self->name) {
        Py_DECREF(self);
        PyErr_SetString(PyExc_TypeError,
                        "actrace.annotate: a context manager needs a name");
        return NULL;
    }
    if (self->nopen == self->cap && annotate_grow(self) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    self->tid[self->nopen] = PyThread_get_thread_ident();
    self->t0[self->nopen] = act_now_ns();
    self->nopen++;
    return (PyObject *)self;
}

static PyObject *annotate_exit(AnnotateObject *self, PyObject *const *args, Py_ssize_t n)
{
    if (g_disabled)
        Py_RETURN_FALSE;
    int64_t t1 = act_now_ns();
    unsigned long me = PyThread_get_thread_ident();
    /* This thread's innermost open use. */
    for (int i = self->nopen - 1; i >= 0; i--) {
        if (self->tid[i] != me)
            continue;
        int64_t t0 = self->t0[i];
        for (int j = i; j + 1 < self->nopen; j++) {
            self->tid[j] = self->tid[j + 1];
            self->t0[j] = self->t0[j + 1];
        }
        self->nopen--;
        record(self->type, self->id, self->name, t0, t1, &self->args);
        Py_RETURN_FALSE;
    }
    /* An __exit__ without this thread's __enter__ (misuse): nothing. */
    Py_RETURN_FALSE;
}

static PyObject *annotated_new_for(AnnotateObject *a, PyObject *fn);

/* annotate(...)(fn): the decorator. */
static PyObject *annotate_decorate(AnnotateObject *self, PyObject *fn)
{
    if (!PyCallable_Check(fn)) {
        PyErr_SetString(PyExc_TypeError, "actrace.annotate(...) decorates one callable");
        return NULL;
    }
    if (g_disabled) {
        Py_INCREF(fn);
        return fn;
    }
    return annotated_new_for(self, fn);
}

/*
 * __enter__ and __exit__ without a bound method per use. The `with`
 * statement looks both up on the type and binds them (descriptor get),
 * which for ordinary C methods makes two GC-tracked method objects per
 * span: a quarter of a span's cost. Here the type's __enter__ and
 * __exit__ are descriptors that bind to the object itself, and a call of
 * the object dispatches on its arguments: none is __enter__ (a `with`
 * calls it so), three are __exit__ (exc_type, exc, tb), one is the
 * decorator. Looked up on the type (annotate.__enter__, as ExitStack
 * does), they are the descriptors, callable with the object first.
 */
static PyObject *annotate_self_call(PyObject *o, PyObject *const *argv, size_t nargsf,
                                    PyObject *kwnames)
{
    AnnotateObject *self = (AnnotateObject *)o;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if (!kwnames || PyTuple_GET_SIZE(kwnames) == 0) {
        if (n == 0)
            return annotate_enter(self, NULL);
        if (n == 3)
            return annotate_exit(self, argv, n);
        if (n == 1)
            return annotate_decorate(self, argv[0]);
    }
    PyErr_SetString(PyExc_TypeError, "actrace.annotate(...) decorates one callable");
    return NULL;
}

typedef struct {
    PyObject_HEAD
    int exit; /* 0: __enter__, 1: __exit__ */
    vectorcallfunc vectorcall;
} SelfMethodObject;

static PyTypeObject SelfMethodType;

static PyObject *selfmethod_get(PyObject *d, PyObject *obj, PyObject *type)
{
    (void)type;
    PyObject *r = obj && Py_TYPE(obj) == &AnnotateType ? obj : d;
    Py_INCREF(r);
    return r;
}

static PyObject *selfmethod_call(PyObject *d, PyObject *const *argv, size_t nargsf,
                                 PyObject *kwnames)
{
    SelfMethodObject *m = (SelfMethodObject *)d;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if (kwnames && PyTuple_GET_SIZE(kwnames)) {
        PyErr_SetString(PyExc_TypeError, "actrace.annotate: no keyword arguments here");
        return NULL;
    }
    if (n < 1 || Py_TYPE(argv[0]) != &AnnotateType) {
        PyErr_Format(PyExc_TypeError, "actrace.annotate.%s needs an annotate object",
                     m->exit ? "__exit__" : "__enter__");
        return NULL;
    }
    if (!m->exit) {
        if (n != 1) {
            PyErr_SetString(PyExc_TypeError, "actrace.annotate.__enter__() takes no arguments");
            return NULL;
        }
        return annotate_enter((AnnotateObject *)argv[0], NULL);
    }
    return annotate_exit((AnnotateObject *)argv[0], argv + 1, n - 1);
}

static PyObject *selfmethod_name(SelfMethodObject *m, void *unused)
{
    (void)unused;
    return PyUnicode_FromString(m->exit ? "__exit__" : "__enter__");
}

static PyGetSetDef selfmethod_getset[] = {
    {"__name__", (getter)selfmethod_name, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject SelfMethodType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "actrace._annotate_method",
    .tp_basicsize = sizeof(SelfMethodObject),
    .tp_vectorcall_offset = offsetof(SelfMethodObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_descr_get = selfmethod_get,
    .tp_getset = selfmethod_getset,
};

/* Adds __enter__ and __exit__ to annotate's dict (after PyType_Ready). */
static int annotate_add_methods(void)
{
    for (int i = 0; i < 2; i++) {
        SelfMethodObject *m = PyObject_New(SelfMethodObject, &SelfMethodType);
        if (!m)
            return -1;
        m->exit = i;
        m->vectorcall = selfmethod_call;
        int rc = PyDict_SetItemString(AnnotateType.tp_dict, i ? "__exit__" : "__enter__",
                                      (PyObject *)m);
        Py_DECREF(m);
        if (rc < 0)
            return -1;
    }
    PyType_Modified(&AnnotateType);
    return 0;
}

static PyMemberDef annotate_members[] = {
    {"name", T_OBJECT, offsetof(AnnotateObject, name), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject AnnotateType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "actrace.annotate",
    .tp_basicsize = sizeof(AnnotateObject),
    .tp_dealloc = (destructor)annotate_dealloc,
    .tp_vectorcall_offset = offsetof(AnnotateObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "annotate(name=None, type='user_annotation', **args)\n\n"
              "A span on the calling thread, as a context manager (with a name)\n"
              "or a decorator (the name defaults to the function's qualified name).",
    .tp_members = annotate_members,
    .tp_new = annotate_new,
};

/* ---- annotated (a decorated function) ---------------------------------------- */

static PyObject *annotated_vectorcall(PyObject *o, PyObject *const *argv,
                                      size_t nargsf, PyObject *kwnames)
{
    AnnotatedObject *self = (AnnotatedObject *)o;
    int64_t t0 = act_now_ns();
    PyObject *r = PyObject_Vectorcall(self->fn, argv, nargsf, kwnames);
    int64_t t1 = act_now_ns();
    record(self->type, self->id, self->name, t0, t1, &self->args);
    return r;
}

static PyObject *annotated_new_for(AnnotateObject *a, PyObject *fn)
{
    PyObject *name = a->name;
    PyObject *own = NULL;
    if (!name) {
        own = PyObject_GetAttrString(fn, "__qualname__");
        if (!own) {
            PyErr_Clear();
            own = PyObject_GetAttrString(fn, "__name__");
        }
        if (!own || !PyUnicode_Check(own)) {
            PyErr_Clear();
            Py_XDECREF(own);
            own = PyObject_Repr(fn);
            if (!own)
                return NULL;
        }
        name = own;
    }
    /* Generator and coroutine functions: each resumption is a span (the
     * Python helper drives them); a plain call would time only creation. */
    PyObject *code = PyObject_GetAttrString(fn, "__code__");
    if (!code)
        PyErr_Clear();
    long flags = 0;
    if (code) {
        PyObject *f = PyObject_GetAttrString(code, "co_flags");
        flags = f ? PyLong_AsLong(f) : 0;
        Py_XDECREF(f);
        PyErr_Clear();
        Py_DECREF(code);
    }
    if ((flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR)) && g_gen_wrapper) {
        PyObject *inner = PyObject_CallFunction((PyObject *)&AnnotateType, "Os", name,
                                                act_activity_type_name(
                                                    (act_activity_type)a->type));
        PyObject *r = NULL;
        /* Same args as the decorator's. */
        if (inner && args_share(&((AnnotateObject *)inner)->args, &a->args) == 0)
            r = PyObject_CallFunctionObjArgs(g_gen_wrapper, fn, inner, NULL);
        Py_XDECREF(inner);
        Py_XDECREF(own);
        return r;
    }
    AnnotatedObject *self = PyObject_GC_New(AnnotatedObject, &AnnotatedType);
    if (!self) {
        Py_XDECREF(own);
        return NULL;
    }
    Py_INCREF(fn);
    self->fn = fn;
    Py_INCREF(name);
    self->name = name;
    self->id = a->name ? a->id : intern(name);
    self->type = a->type;
    self->args.n = 0;
    self->args.items = NULL;
    self->args.refs = NULL;
    self->dict = NULL;
    self->vectorcall = annotated_vectorcall;
    Py_XDECREF(own);
    PyObject_GC_Track(self);
    if (args_share(&self->args, &a->args) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    /* functools.update_wrapper: __name__, __qualname__, __doc__,
     * __module__, __wrapped__ and the function's __dict__. */
    PyObject *ft = PyImport_ImportModule("functools");
    PyObject *r = ft ? PyObject_CallMethod(ft, "update_wrapper", "OO", self, fn) : NULL;
    Py_XDECREF(ft);
    if (!r) {
        Py_DECREF(self);
        return NULL;
    }
    Py_DECREF(r);
    return (PyObject *)self;
}

static int annotated_traverse(AnnotatedObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->fn);
    Py_VISIT(self->dict);
    return 0;
}

static int annotated_clear(AnnotatedObject *self)
{
    Py_CLEAR(self->fn);
    Py_CLEAR(self->dict);
    return 0;
}

static void annotated_dealloc(AnnotatedObject *self)
{
    PyObject_GC_UnTrack(self);
    annotated_clear(self);
    Py_XDECREF(self->name);
    args_clear(&self->args);
    PyObject_GC_Del(self);
}

/* Methods: bind like a function does. */
static PyObject *annotated_get(PyObject *self, PyObject *obj, PyObject *type)
{
    if (!obj || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj);
}

static PyGetSetDef annotated_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject AnnotatedType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "actrace.annotated",
    .tp_basicsize = sizeof(AnnotatedObject),
    .tp_dealloc = (destructor)annotated_dealloc,
    .tp_vectorcall_offset = offsetof(AnnotatedObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "A function decorated with actrace.annotate: each call is a span.",
    .tp_traverse = (traverseproc)annotated_traverse,
    .tp_clear = (inquiry)annotated_clear,
    .tp_getset = annotated_getset,
    .tp_descr_get = annotated_get,
    .tp_dictoffset = offsetof(AnnotatedObject, dict),
};

/* ---- correlation ---------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    uint64_t id;
    int pushed;
} CorrelationObject;

static PyObject *corr_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"id", NULL};
    unsigned long long id;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "K", kwlist, &id))
        return NULL;
    if (id == 0) {
        PyErr_SetString(PyExc_ValueError, "actrace.correlation: id 0 means none; use a non-zero id");
        return NULL;
    }
    CorrelationObject *self = (CorrelationObject *)tp->tp_alloc(tp, 0);
    if (self)
        self->id = id;
    return (PyObject *)self;
}

static PyObject *corr_enter(CorrelationObject *self, PyObject *unused)
{
    if (!g_disabled) {
        act_correlation_push(self->id);
        self->pushed++;
    }
    Py_INCREF(self);
    return (PyObject *)self;
}

static PyObject *corr_exit(CorrelationObject *self, PyObject *const *args, Py_ssize_t n)
{
    if (self->pushed > 0) {
        self->pushed--;
        act_correlation_pop();
    }
    Py_RETURN_FALSE;
}

static PyMethodDef corr_methods[] = {
    {"__enter__", (PyCFunction)corr_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)(void (*)(void))corr_exit, METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef corr_members[] = {
    {"id", T_ULONGLONG, offsetof(CorrelationObject, id), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject CorrelationType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "actrace.correlation",
    .tp_basicsize = sizeof(CorrelationObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "correlation(id): spans begun and device work launched inside carry\n"
              "this external correlation id (\"External id\").",
    .tp_methods = corr_methods,
    .tp_members = corr_members,
    .tp_new = corr_new,
};

/* ---- module functions ------------------------------------------------------------ */

static PyObject *m_instant(PyObject *m, PyObject *args, PyObject *kw)
{
    if (g_disabled)
        Py_RETURN_NONE;
    PyObject *name;
    if (!PyArg_ParseTuple(args, "U:instant", &name))
        return NULL;
    args_t a;
    if (args_from_dict(&a, kw) < 0)
        return NULL;
    name_thread();
    act_name_id id = intern(name);
    if (id) {
        act_instant_id(ACT_CPU_INSTANT_EVENT, id);
    } else {
        const char *s = PyUnicode_AsUTF8(name);
        if (!s) {
            args_clear(&a);
            return NULL;
        }
        act_instant(ACT_CPU_INSTANT_EVENT, s);
    }
    args_emit(&a);
    args_clear(&a);
    Py_RETURN_NONE;
}

static PyObject *m_counter(PyObject *m, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"track", "series", "value", "unit", NULL};
    const char *track, *series, *unit = NULL;
    double value;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "ssd|z:counter", kwlist, &track, &series,
                                     &value, &unit))
        return NULL;
    if (g_disabled)
        Py_RETURN_NONE;
    name_thread();
    if (unit)
        act_counter_unit(track, series, unit, value);
    else
        act_counter(track, series, value);
    Py_RETURN_NONE;
}

static PyObject *m_step(PyObject *m, PyObject *unused)
{
    if (g_disabled)
        Py_RETURN_NONE;
    int64_t now = act_now_ns();
    act_step();
    char name[48];
    snprintf(name, sizeof name, "ProfilerStep#%lld", (long long)g_step_num);
    name_thread();
    act_span_record(ACT_USER_ANNOTATION, name, g_step_mark, now);
    g_step_mark = now;
    return PyLong_FromLongLong(g_step_num++);
}

static int log_file_visit(void *user, const char *key, const char *value)
{
    if (strcmp(key, "ACTIVITIES_LOG_FILE") == 0)
        *(const char **)user = value;
    return 0;
}

/* _start(config_text=None) -> 0 (own session), 1 (attached to the active
 * one, e.g. under `actrace record`), 2 (disabled). */
static PyObject *start_locked(const char *text, Py_ssize_t len);

static PyObject *m_start(PyObject *m, PyObject *args)
{
    const char *text = NULL;
    Py_ssize_t len = 0;
    if (!PyArg_ParseTuple(args, "|z#:_start", &text, &len))
        return NULL;
    if (g_disabled)
        return PyLong_FromLong(2);
    session_lock();
    PyObject *r = start_locked(text, len);
    session_unlock();
    return r;
}

static PyObject *start_locked(const char *text, Py_ssize_t len)
{
    if (g_session && g_session_pid != getpid()) {
        /* A forked child's copy of its parent's session: not ours to stop,
         * write or free (its plugins and buffers are the parent's). */
        g_session = NULL;
    }
    if (g_attached || (g_session && act_session_active() == g_session)) {
        PyErr_SetString(PyExc_RuntimeError, "actrace: a session is already running (stop() it first)");
        return NULL;
    }
    act_config *cfg = NULL;
    act_parse_error err;
    memset(&err, 0, sizeof err);
    /* Unknown keys: the session warns for those no loaded plugin reads. */
    act_config_parse_opts po;
    act_config_parse_opts_init(&po);
    po.flags = ACT_CONFIG_QUIET_UNKNOWN;
    if (text) {
        /* Validate first, so a bad config is an error here, naming the line. */
        act_config *probe = NULL;
        if (act_config_parse(text, (size_t)len, &po, &probe, &err) != 0) {
            PyErr_Format(PyExc_ValueError, "actrace: config line %d, column %d: %s",
                         err.line, err.column, err.message);
            return NULL;
        }
        act_config_destroy(probe);
    }
    if (act_session_active()) {
        g_attached = 1;
        g_step_mark = act_now_ns();
        t_name_gen = 0;
        if (text)
            act_log(ACT_LOG_INFO, "actrace: a session is already active (actrace record?): "
                                  "the config given to start() is not applied");
        return PyLong_FromLong(1);
    }
    act_session_destroy(g_session);
    g_session = NULL;
    if (act_config_load_env(&po, &cfg, &err) != 0) {
        PyErr_Format(PyExc_ValueError, "actrace: $ACTRACE_CONFIG: %s", err.message);
        act_config_destroy(cfg);
        return NULL;
    }
    if (text && act_config_parse(text, (size_t)len, &po, &cfg, &err) != 0) {
        act_config_destroy(cfg);
        PyErr_Format(PyExc_ValueError, "actrace: config line %d: %s", err.line, err.message);
        return NULL;
    }
    act_session_opts o;
    act_session_opts_init(&o);
    o.config = cfg;
    act_session *s = NULL;
    int rc = act_session_create(&o, &s);
    act_config_destroy(cfg);
    if (rc != 0) {
        PyErr_Format(PyExc_RuntimeError, "actrace: cannot create a session: %s", act_strerror(rc));
        return NULL;
    }
    rc = act_session_start(s);
    if (rc != 0) {
        PyErr_Format(PyExc_RuntimeError, "actrace: cannot start the session: %s (%s)",
                     act_strerror(rc), act_session_errmsg(s));
        act_session_destroy(s);
        return NULL;
    }
    g_session = s;
    g_session_pid = getpid();
    g_step_mark = act_now_ns();
    t_name_gen = 0; /* name this thread in the new session */
    return PyLong_FromLong(0);
}

static PyObject *m_stop(PyObject *m, PyObject *unused)
{
    if (g_attached) {
        g_attached = 0;
        Py_RETURN_NONE;
    }
    session_lock();
    act_session *s = own_session();
    if (s && act_session_active() == s)
        act_session_stop(s);
    session_unlock();
    Py_RETURN_NONE;
}

/* _write(path) -> True if written, False when there is nothing of ours. */
static PyObject *m_write(PyObject *m, PyObject *args)
{
    PyObject *pathobj;
    if (!PyArg_ParseTuple(args, "O&:_write", PyUnicode_FSConverter, &pathobj))
        return NULL;
    if (g_disabled) {
        Py_DECREF(pathobj);
        Py_RETURN_FALSE;
    }
    session_lock();
    act_session *s = own_session();
    if (!s) {
        session_unlock();
        Py_DECREF(pathobj);
        Py_RETURN_FALSE;
    }
    int rc;
    /* g_mu stays held: no other thread can stop, restart or free s. */
    Py_BEGIN_ALLOW_THREADS
    rc = act_session_write(s, PyBytes_AS_STRING(pathobj));
    Py_END_ALLOW_THREADS
    Py_DECREF(pathobj);
    if (rc != 0)
        PyErr_Format(PyExc_OSError, "actrace: %s", act_session_errmsg(s));
    session_unlock();
    if (rc != 0)
        return NULL;
    Py_RETURN_TRUE;
}

static PyObject *m_discard(PyObject *m, PyObject *unused)
{
    session_lock();
    act_session_destroy(own_session());
    g_session = NULL;
    session_unlock();
    Py_RETURN_NONE;
}

static PyObject *m_log_file(PyObject *m, PyObject *unused)
{
    const char *v = NULL;
    session_lock();
    if (g_session)
        act_config_foreach(act_session_config(g_session), log_file_visit, &v);
    PyObject *r = v ? PyUnicode_DecodeFSDefault(v) : (Py_INCREF(Py_None), Py_None);
    session_unlock();
    return r;
}

static PyObject *m_state(PyObject *m, PyObject *unused)
{
    const char *s = g_disabled ? "disabled"
                    : g_attached ? "attached"
                    : own_session() && act_session_active() == g_session ? "running"
                    : own_session() ? "stopped"
                    : act_session_active() ? "external" : "none";
    return PyUnicode_FromString(s);
}

static PyObject *m_names_changed(PyObject *m, PyObject *unused)
{
    if (++g_name_gen == 0)
        g_name_gen = 1;
    Py_RETURN_NONE;
}

static PyObject *m_set_gen_wrapper(PyObject *m, PyObject *fn)
{
    Py_INCREF(fn);
    Py_XSETREF(g_gen_wrapper, fn);
    Py_RETURN_NONE;
}

static PyObject *m_library(PyObject *m, PyObject *unused)
{
    return Py_BuildValue("(si)", act_version(), ACT_VERSION_HEX);
}

static PyMethodDef module_methods[] = {
    {"instant", (PyCFunction)(void (*)(void))m_instant, METH_VARARGS | METH_KEYWORDS,
     "instant(name, **args): an instant event on the calling thread."},
    {"counter", (PyCFunction)(void (*)(void))m_counter, METH_VARARGS | METH_KEYWORDS,
     "counter(track, series, value, unit=None): one sample on a host counter track."},
    {"step", m_step, METH_NOARGS,
     "step(): end of one iteration: act_step() and a ProfilerStep#N span; returns N."},
    {"_start", m_start, METH_VARARGS, NULL},
    {"_stop", m_stop, METH_NOARGS, NULL},
    {"_write", m_write, METH_VARARGS, NULL},
    {"_discard", m_discard, METH_NOARGS, NULL},
    {"_log_file", m_log_file, METH_NOARGS, NULL},
    {"_state", m_state, METH_NOARGS, NULL},
    {"_names_changed", m_names_changed, METH_NOARGS, NULL},
    {"_set_generator_wrapper", m_set_gen_wrapper, METH_O, NULL},
    {"_library", m_library, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "actrace._actrace",
    "The C side of the actrace module (use `import actrace`).", -1, module_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__actrace(void)
{
    const char *d = getenv("ACTRACE_DISABLE");
    g_disabled = d && strcmp(d, "1") == 0;
    pthread_atfork(NULL, NULL, atfork_child);
    AnnotateType.tp_vectorcall = annotate_vectorcall;
    if (PyType_Ready(&AnnotateType) < 0 || PyType_Ready(&SelfMethodType) < 0 ||
        annotate_add_methods() < 0 || PyType_Ready(&AnnotatedType) < 0 ||
        PyType_Ready(&CorrelationType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (!m)
        return NULL;
    g_name_cache = PyDict_New();
    PyObject *threading = PyImport_ImportModule("threading");
    if (threading) {
        g_current_thread = PyObject_GetAttrString(threading, "current_thread");
        Py_DECREF(threading);
    }
    if (!g_name_cache || !g_current_thread)
        goto fail;
    g_inert = (AnnotateObject *)AnnotateType.tp_alloc(&AnnotateType, 0);
    if (!g_inert)
        goto fail;
    g_inert->vectorcall = annotate_self_call;
    g_step_mark = act_now_ns();
    Py_INCREF(&AnnotateType);
    Py_INCREF(&CorrelationType);
    if (PyModule_AddObject(m, "annotate", (PyObject *)&AnnotateType) < 0 ||
        PyModule_AddObject(m, "correlation", (PyObject *)&CorrelationType) < 0 ||
        PyModule_AddIntConstant(m, "disabled", g_disabled) < 0)
        goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
