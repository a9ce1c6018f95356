// SPDX-License-Identifier: MIT
//
// actrace.torch.record_ops(): PyTorch's operators as actrace spans, through
// RecordFunction's global callback (at::addGlobalCallback). A thin shim: it
// translates each RecordFunction into libactrace calls and holds no logic
// of its own. Built on first use against the installed torch (actrace/
// torch.py compiles it into a cache) and loaded with ctypes: the functions
// at the end are plain C.
//
// Per op: start takes a correlation id (pushed with act_correlation_push,
// so device work launched by the op links to it), with shapes the inputs'
// dims and types, and the time; end records one cpu_op span
// (user_annotation for record_function regions) with act_span_record_id
// while the id is still pushed ("External id"), then its args, then pops.
// While torch.profiler is active the callback does nothing (never recorded
// twice) and counts what it skipped.
//
// What an op costs here is paid on top of RecordFunction's own cost (a
// global callback makes torch build a RecordFunction per op), so the path
// is kept short: all per-thread state sits behind one thread_local pointer
// (built with -mtls-dialect=gnu2 where the compiler has it, so reaching it
// is no __tls_get_addr call); op names are interned once per thread in a
// cache keyed by their length and three words, verified by memcmp;
// correlation ids come in blocks per thread and the op count is per
// thread (no atomic read-modify-write per op); contexts come from a
// per-thread free list (no allocation per op). With shapes, the inputs
// are read into a key of words (kind, dtype, rank, sizes), and the two
// texts are formatted once per distinct key and cached per thread; a
// cached entry stays while an op that uses it runs (pinned), so the texts
// handed to the library at the op's end are still there.
//
// libactrace is linked by its SONAME: under `actrace record` the preloaded
// copy is the one this binds to.
#include <ATen/record_function.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

#include "actrace/actrace.h"

namespace torch {
namespace profiler {
namespace impl {
TORCH_API bool profilerEnabled(); // torch/csrc/profiler/orchestration/observer.h
}
} // namespace profiler
} // namespace torch

namespace {

constexpr size_t kDims = 512;  // "Input Dims" text, cut with "...]" beyond
constexpr size_t kTypes = 256; // "Input type" text, likewise
constexpr size_t kNameSlots = 1024;
constexpr size_t kShapeSlots = 512;
constexpr size_t kKeyWords = 256; // shape keys longer than this are not cached
constexpr uint64_t kCorrBlock = 4096;

std::atomic<uint64_t> g_next_corr{1};
std::atomic<uint64_t> g_paused{0};
std::atomic<int> g_paused_said{0};
bool g_shapes = false;
bool g_floor = false; // bench only: callbacks that record nothing
bool g_on = false;
at::CallbackHandle g_handle = 0;
act_key_id g_key_seq, g_key_dims, g_key_types;

// The two texts of one shape key, cached per thread (or owned by one op's
// context when not cached).
struct Shape {
    uint64_t hash = 0;
    uint64_t *key = nullptr;
    uint32_t nkey = 0;
    uint32_t pins = 0; // ops of the owning thread running with it
    char *dims = nullptr;
    char *types = nullptr;
    uint32_t dlen = 0, tlen = 0;
    bool djson = false, tjson = false; // whole (not cut): JSON arrays
};

void shape_free(Shape *s)
{
    if (!s)
        return;
    std::free(s->key);
    std::free(s->dims);
    delete s;
}

struct NameSlot {
    uint64_t hash;
    char *copy;
    uint32_t len;
    act_name_id id;
};

struct Ctx;

// Everything per thread, reached through one thread_local pointer.
struct Thr {
    Ctx *free = nullptr;
    uint64_t corr_next = 0, corr_end = 0;
    std::atomic<uint64_t> ops{0}; // written by this thread only
    Thr *prev = nullptr, *next = nullptr;
    NameSlot names[kNameSlots] = {};
    Shape *shapes[kShapeSlots] = {};
};

thread_local Thr *t_thr = nullptr;
thread_local bool t_gone = false; // past this thread's exit cleanup

// Threads' states, for ops_recorded(); a thread that exits adds its count
// to g_ops_gone.
std::mutex g_thr_mu;
Thr *g_thrs = nullptr;
uint64_t g_ops_gone = 0;

struct Ctx final : at::ObserverContext {
    int64_t t0 = 0;
    int64_t seq = -1;
    Thr *owner = nullptr;
    Shape *shape = nullptr; // cached (pinned) or, if !cached, owned
    const char *name = nullptr; // when not interned: copied by act_span_record
    act_name_id id = 0;
    int type = ACT_CPU_OP;
    bool pushed = false;
    bool cached = false;
    Ctx *next_free = nullptr;

    ~Ctx() override
    {
        if (!cached)
            shape_free(shape);
    }
    static void *operator new(size_t n);
    static void operator delete(void *p);
};

// A context freed on another thread joins that thread's list (or is freed
// if that thread records nothing).
void *Ctx::operator new(size_t n)
{
    Thr *t = t_thr;
    if (t && t->free) {
        Ctx *c = t->free;
        t->free = c->next_free;
        return c;
    }
    void *p = std::malloc(n);
    if (!p)
        throw std::bad_alloc();
    return p;
}

void Ctx::operator delete(void *p)
{
    Thr *t = t_thr;
    if (!t) {
        std::free(p);
        return;
    }
    Ctx *c = static_cast<Ctx *>(p);
    c->next_free = t->free;
    t->free = c;
}

void thr_release(Thr *t)
{
    {
        std::lock_guard<std::mutex> g(g_thr_mu);
        g_ops_gone += t->ops.load(std::memory_order_relaxed);
        (t->prev ? t->prev->next : g_thrs) = t->next;
        if (t->next)
            t->next->prev = t->prev;
    }
    for (NameSlot &s : t->names)
        std::free(s.copy);
    for (Shape *s : t->shapes)
        if (s && !s->pins)
            shape_free(s); // a pinned one belongs to an op still running elsewhere
    for (Ctx *c = t->free; c;) {
        Ctx *n = c->next_free;
        std::free(c);
        c = n;
    }
    delete t;
}

// Frees the thread's state at its exit; touched only when it is made.
struct ThrGuard {
    ~ThrGuard()
    {
        if (Thr *t = t_thr) {
            t_thr = nullptr;
            thr_release(t);
        }
        t_gone = true;
    }
};
thread_local ThrGuard t_guard;

__attribute__((noinline)) Thr *thr_make()
{
    if (t_gone)
        return nullptr;
    Thr *t = new (std::nothrow) Thr;
    if (!t)
        return nullptr;
    (void)&t_guard; // registers the exit cleanup
    {
        std::lock_guard<std::mutex> g(g_thr_mu);
        t->next = g_thrs;
        if (g_thrs)
            g_thrs->prev = t;
        g_thrs = t;
    }
    t_thr = t;
    return t;
}

inline Thr *thr()
{
    Thr *t = t_thr;
    return t ? t : thr_make();
}

inline uint64_t ld8(const void *p)
{
    uint64_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

inline uint64_t mix(uint64_t h)
{
    h ^= h >> 31;
    h *= 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 29);
}

// Interned names: a direct-mapped cache per thread, keyed by the name's
// length and first, middle and last words (names of record_function
// regions and backward nodes live in the RecordFunction, so their address
// is not stable), verified by memcmp.
__attribute__((noinline)) act_name_id intern_miss(NameSlot &sl, uint64_t h, const char *s,
                                                  size_t n)
{
    act_name_id id = act_name(s);
    if (!id)
        return 0;
    char *c = static_cast<char *>(std::malloc(n + 1));
    if (!c)
        return id;
    std::memcpy(c, s, n + 1);
    std::free(sl.copy);
    sl = NameSlot{h, c, (uint32_t)n, id};
    return id;
}

inline act_name_id intern(Thr *t, const char *s)
{
    size_t n = std::strlen(s);
    uint64_t h;
    if (n >= 8) {
        h = mix(ld8(s) ^ mix(ld8(s + n - 8) + n) ^ (ld8(s + n / 2 - 4) << 1));
    } else {
        uint64_t w = 0;
        std::memcpy(&w, s, n);
        h = mix(w + n);
    }
    NameSlot &sl = t->names[h & (kNameSlots - 1)];
    if (sl.id && sl.hash == h && sl.len == n && std::memcmp(sl.copy, s, n) == 0)
        return sl.id;
    if (n > UINT32_MAX / 2)
        return act_name(s);
    return intern_miss(sl, h, s, n);
}

// ---- shapes -----------------------------------------------------------------

// Small appenders into a fixed buffer; the last bytes stay free for "...]".
struct Buf {
    char *p, *end;
    bool cut = false;
    void put(const char *s, size_t n)
    {
        if (cut || (size_t)(end - p) < n + 8) {
            cut = true;
            return;
        }
        std::memcpy(p, s, n);
        p += n;
    }
    void str(const char *s) { put(s, std::strlen(s)); }
    void num(int64_t v)
    {
        char tmp[24];
        char *e = tmp + sizeof tmp, *q = e;
        uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
        do {
            *--q = (char)('0' + u % 10);
            u /= 10;
        } while (u);
        if (v < 0)
            *--q = '-';
        put(q, (size_t)(e - q));
    }
    void done()
    {
        if (cut)
            std::memcpy(p, "...]", 4), p += 4;
        *p = '\0';
    }
};

// One word per input, then its sizes: kind in the low byte, a dtype (a
// ScalarType) or an IValue kind in the next, the rank above.
enum : uint64_t {
    K_UNDEF = 1,   // an undefined tensor: [] and ""
    K_STRIDED = 2, // dims and dtype
    K_OTHER = 3,   // a nested or non-strided tensor: [] and its dtype
    K_VALUE = 4,   // not a tensor: [] and the kind's name
    K_NAMED = 0xff, // dtype byte: the dtype's name follows (pointer, length)
};
const char *const kValueNames[] = {"", "Scalar", "TensorList", "ScalarList", "GenericList",
                                   "String", "Device"};

uint64_t value_kind(const c10::IValue &v)
{
    if (v.isNone())
        return 0;
    if (v.isScalar() || v.isInt() || v.isDouble() || v.isBool())
        return 1;
    if (v.isList()) {
        // The typed list checks are calls into torch, and each is false
        // for what is no list: asked only for lists.
        if (v.isTensorList())
            return 2;
        if (v.isIntList() || v.isDoubleList() || v.isBoolList())
            return 3;
        return 4;
    }
    if (v.isString())
        return 5;
    if (v.isDevice())
        return 6;
    return 0;
}

// A key's words: kKeyWords on the stack, then the heap.
struct Key {
    uint64_t stack[kKeyWords];
    uint64_t *w = stack;
    size_t n = 0, cap = kKeyWords;
    bool ok = true; // false: out of memory (the op gets no shapes)
    ~Key()
    {
        if (w != stack)
            std::free(w);
    }
    void grow()
    {
        size_t c = cap * 2;
        uint64_t *p = static_cast<uint64_t *>(std::malloc(c * sizeof *p));
        if (!p) {
            ok = false;
            n = 0;
            return;
        }
        std::memcpy(p, w, n * sizeof *p);
        if (w != stack)
            std::free(w);
        w = p;
        cap = c;
    }
    void add(uint64_t x)
    {
        if (n == cap)
            grow();
        if (ok)
            w[n++] = x;
    }
};

void key_of(const at::RecordFunction &fn, Key &k)
{
    for (const c10::IValue &v : fn.inputs()) {
        if (!v.isTensor()) {
            k.add(K_VALUE | value_kind(v) << 8);
            continue;
        }
        const at::Tensor &x = v.toTensor();
        if (!x.defined()) {
            k.add(K_UNDEF);
            continue;
        }
        // A dtype that is no ScalarType (none is, today) is kept by its
        // name: a pointer to static storage and a length, after the sizes.
        caffe2::TypeMeta m = x.dtype();
        uint64_t st = m.isScalarType() ? (uint64_t)(uint8_t)m.toScalarType() : K_NAMED;
        if (x.is_nested() || x.layout() != c10::kStrided) {
            k.add(K_OTHER | st << 8);
        } else {
            c10::IntArrayRef sz = x.sizes();
            k.add(K_STRIDED | st << 8 | (uint64_t)sz.size() << 16);
            for (int64_t s : sz)
                k.add((uint64_t)s);
        }
        if (st == K_NAMED) {
            k.add((uint64_t)(uintptr_t)m.name().data());
            k.add((uint64_t)m.name().size());
        }
    }
}

// Kineto's layout of the two args, as JSON texts (recorded with
// act_arg_json, so they are arrays in the trace): [[2, 3], [3]] and
// ["float", "Scalar"]. A text that does not fit is cut with "...]" and
// recorded as a string.
Shape *shape_format(const uint64_t *w, size_t n, uint64_t h)
{
    char dims[kDims], types[kTypes];
    Buf d{dims, dims + kDims};
    Buf t{types, types + kTypes};
    d.str("[");
    t.str("[");
    for (size_t i = 0; i < n;) {
        if (i) {
            d.str(", ");
            t.str(", ");
        }
        uint64_t tag = w[i++];
        d.str("[");
        t.str("\"");
        switch (tag & 0xff) {
        case K_STRIDED: {
            size_t rank = tag >> 16;
            for (size_t j = 0; j < rank && i < n; j++, i++) {
                if (j)
                    d.str(", ");
                d.num((int64_t)w[i]);
            }
        }
            [[fallthrough]];
        case K_OTHER: {
            uint64_t st = (tag >> 8) & 0xff;
            if (st != K_NAMED) {
                auto nm = c10::scalarTypeToTypeMeta((c10::ScalarType)st).name();
                t.put(nm.data(), nm.size());
            } else if (i + 2 <= n) {
                t.put(reinterpret_cast<const char *>((uintptr_t)w[i]), (size_t)w[i + 1]);
                i += 2;
            }
            break;
        }
        case K_VALUE: {
            size_t vk = (tag >> 8) & 0xff;
            t.str(vk < sizeof kValueNames / sizeof *kValueNames ? kValueNames[vk] : "");
            break;
        }
        default: break; // K_UNDEF
        }
        d.str("]");
        t.str("\"");
    }
    d.str("]");
    t.str("]");
    d.done();
    t.done();
    Shape *s = new (std::nothrow) Shape;
    if (!s)
        return nullptr;
    size_t dl = (size_t)(d.p - dims), tl = (size_t)(t.p - types);
    s->dims = static_cast<char *>(std::malloc(dl + tl + 2));
    s->key = static_cast<uint64_t *>(std::malloc((n ? n : 1) * sizeof *w));
    if (!s->dims || !s->key) {
        shape_free(s);
        return nullptr;
    }
    std::memcpy(s->dims, dims, dl + 1);
    s->types = s->dims + dl + 1;
    std::memcpy(s->types, types, tl + 1);
    s->dlen = (uint32_t)dl;
    s->tlen = (uint32_t)tl;
    s->djson = !d.cut;
    s->tjson = !t.cut;
    std::memcpy(s->key, w, n * sizeof *w);
    s->nkey = (uint32_t)n;
    s->hash = h;
    return s;
}

// The shape texts of @p fn's inputs, for context @p c: a pinned cache
// entry, or one the context owns (a key too long to cache, or its slot
// held by a running op).
void shapes_of(const at::RecordFunction &fn, Thr *t, Ctx *c)
{
    Key k;
    key_of(fn, k);
    if (!k.ok)
        return;
    uint64_t h = k.n;
    for (size_t i = 0; i < k.n; i++)
        h = mix(h ^ k.w[i]) + i;
    bool cacheable = k.n <= kKeyWords && !fn.isAsync();
    Shape *&sl = t->shapes[h & (kShapeSlots - 1)];
    if (cacheable && sl && sl->hash == h && sl->nkey == k.n &&
        std::memcmp(sl->key, k.w, k.n * sizeof *k.w) == 0) {
        sl->pins++;
        c->shape = sl;
        c->cached = true;
        return;
    }
    Shape *s = shape_format(k.w, k.n, h);
    if (!s)
        return;
    if (cacheable && (!sl || !sl->pins)) {
        shape_free(sl);
        sl = s;
        s->pins = 1;
        c->cached = true;
    }
    c->shape = s;
}

// ---- the callbacks ----------------------------------------------------------

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction &fn)
{
    if (g_floor)
        return nullptr;
    if (torch::profiler::impl::profilerEnabled()) {
        g_paused.fetch_add(1, std::memory_order_relaxed);
        if (!g_paused_said.exchange(1, std::memory_order_relaxed))
            act_log(ACT_LOG_WARN, "actrace.torch: torch.profiler is active: record_ops() "
                                  "pauses while it runs (nothing is recorded twice)");
        return nullptr;
    }
    Thr *t = thr();
    if (!t)
        return nullptr;
    auto c = std::unique_ptr<Ctx>(new Ctx);
    c->owner = t;
    const char *name = fn.name();
    c->id = intern(t, name);
    c->name = c->id ? nullptr : name;
    c->type = fn.scope() == at::RecordScope::USER_SCOPE ? ACT_USER_ANNOTATION : ACT_CPU_OP;
    c->seq = fn.seqNr();
    if (g_shapes && c->type == ACT_CPU_OP)
        shapes_of(fn, t, c.get());
    c->pushed = !fn.isAsync();
    if (c->pushed) {
        if (t->corr_next == t->corr_end) {
            t->corr_next = g_next_corr.fetch_add(kCorrBlock, std::memory_order_relaxed);
            t->corr_end = t->corr_next + kCorrBlock;
        }
        act_correlation_push(t->corr_next++);
    }
    c->t0 = act_now_ns();
    return c;
}

void on_end(const at::RecordFunction &fn, at::ObserverContext *o)
{
    Ctx *c = static_cast<Ctx *>(o);
    if (!c)
        return;
    int64_t t1 = act_now_ns();
    if (c->id)
        act_span_record_id((act_activity_type)c->type, c->id, c->t0, t1);
    else
        act_span_record((act_activity_type)c->type, fn.name(), c->t0, t1);
    if (c->seq >= 0) {
        if (g_key_seq)
            act_arg_int_k(g_key_seq, c->seq);
        else
            act_arg_int("Sequence number", c->seq);
    }
    Thr *t = t_thr;
    if (Shape *s = c->shape) {
        // JSON arrays, as Kineto writes them; a text cut short ("...]")
        // is no JSON and goes as a string.
        if (g_key_dims && g_key_types) {
            (s->djson ? act_arg_jsonn_k : act_arg_strn_k)(g_key_dims, s->dims, s->dlen);
            (s->tjson ? act_arg_jsonn_k : act_arg_strn_k)(g_key_types, s->types, s->tlen);
        } else {
            (s->djson ? act_arg_jsonn : act_arg_strn)("Input Dims", s->dims, s->dlen);
            (s->tjson ? act_arg_jsonn : act_arg_strn)("Input type", s->types, s->tlen);
        }
        // Unpinned by the thread that pinned it; another thread's end
        // leaves it pinned (never freed: async ops only, which are not
        // cached, so this does not happen).
        if (c->cached && t == c->owner)
            s->pins--;
    }
    if (c->pushed)
        act_correlation_pop();
    if (t)
        t->ops.store(t->ops.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

} // namespace

extern "C" {

// shapes: bit 0 "Input Dims"/"Input type"; bit 8 (bench only) registers
// the callbacks but records nothing, to measure RecordFunction's own cost.
// 0 on; 1 already on (shapes as first asked); -1 torch refused.
__attribute__((visibility("default"))) int actrace_torch_enable(int shapes)
{
    if (g_on)
        return 1;
    g_shapes = (shapes & 1) != 0;
    g_floor = (shapes & 0x100) != 0;
    if (!g_key_seq) {
        g_key_seq = act_key("Sequence number");
        g_key_dims = act_key("Input Dims");
        g_key_types = act_key("Input type");
    }
    try {
        g_handle = at::addGlobalCallback(
            at::RecordFunctionCallback(on_start, on_end)
                .needsInputs(g_shapes)
                .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION,
                         at::RecordScope::TORCHSCRIPT_FUNCTION, at::RecordScope::USER_SCOPE}));
    } catch (const std::exception &e) {
        act_log(ACT_LOG_ERROR, "actrace.torch: addGlobalCallback failed: %s", e.what());
        return -1;
    }
    g_on = true;
    return 0;
}

__attribute__((visibility("default"))) void actrace_torch_disable(void)
{
    if (!g_on)
        return;
    at::removeCallback(g_handle);
    g_on = false;
}

__attribute__((visibility("default"))) uint64_t actrace_torch_ops(void)
{
    std::lock_guard<std::mutex> g(g_thr_mu);
    uint64_t n = g_ops_gone;
    for (Thr *t = g_thrs; t; t = t->next)
        n += t->ops.load(std::memory_order_relaxed);
    return n;
}

__attribute__((visibility("default"))) uint64_t actrace_torch_paused(void)
{
    return g_paused.load(std::memory_order_relaxed);
}

} // extern "C"
