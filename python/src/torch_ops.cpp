// SPDX-License-Identifier: MIT
//
// actrace.torch.record_ops(): PyTorch's operators as actrace spans, through
// RecordFunction's global callback (at::addGlobalCallback). A thin shim: it
// translates each RecordFunction into libactrace calls and holds no logic
// of its own. Built on first use against the installed torch (actrace/
// torch.py compiles it into a cache) and loaded with ctypes: the functions
// at the end are plain C.
//
// Per op: start takes a correlation id and pushes it and takes the time
// in one call (act_op_begin; device work launched by the op links to the
// id), with shapes the inputs' dims and types first; end records one
// cpu_op span (user_annotation for record_function regions) carrying the
// id ("External id") with its "Sequence number" and pops the id, again in
// one call (act_op_end), then the shape args.
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

#include <pthread.h>

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
constexpr size_t kFrames = 256;   // nested ops per thread kept without a context
constexpr size_t kPtrSlots = 512; // names cached by address
constexpr size_t kPtrBytes = 32;  // ... up to this many bytes with the NUL

std::atomic<uint64_t> g_next_corr{1};
std::atomic<uint64_t> g_paused{0};
std::atomic<uint64_t> g_moved{0}; // ops that ended on another thread than they began
std::atomic<int> g_paused_said{0};
// Ops (cpu_op, not record_function regions) shorter than this are counted
// in g_short, not recorded (record_ops(min_ns=...)): HTA rounds every
// span in to whole microseconds, and a span inside one microsecond gets a
// duration of -1 that stops its call-stack analyses where it meets a 0.
// torch.profiler's own ops start about a microsecond apart (its callbacks'
// cost), so two such ops rarely meet; this shim's are 0.3 us apart at
// the 1st percentile, and a small training loop gave 1-3 such pairs per
// run. A span of 1 us or more never rounds below 0.
std::atomic<int64_t> g_min_ns{1000};
std::atomic<uint64_t> g_short{0};
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

// A name by its address: the bytes up to and including the NUL, zero
// padded, and a mask of those bytes, so a hit is one masked compare of
// the words at that address (which hold the same bytes, the NUL
// included). Longer names are not kept by address: those seen (backward
// nodes' names, built per op) live at a new address each time.
struct PtrSlot {
    const char *ptr;
    uint64_t w[kPtrBytes / 8];
    uint64_t m[kPtrBytes / 8];
    act_name_id id;
};

// One running op of this thread that records: what its end needs. Ops of
// FUNCTION and BACKWARD_FUNCTION scope (RecordFunction guards on the
// stack, so they end in reverse order on their thread) keep this on a
// per-thread stack instead of a context torch allocates, stores and
// destroys per op; on_end finds its frame by the RecordFunction's address.
struct Frame {
    const at::RecordFunction *fn;
    int64_t t0;
    int64_t seq;
    Shape *shape; // cached (pinned) or, if !cached, owned
    act_name_id id;
    bool cached;
};

struct Ctx;

// Everything per thread, reached through one thread_local pointer.
struct Thr {
    Ctx *free = nullptr;
    uint64_t corr_next = 0, corr_end = 0;
    std::atomic<uint64_t> ops{0}; // written by this thread only
    uint32_t depth = 0;           // frames in use
    Thr *prev = nullptr, *next = nullptr;
    Frame frames[kFrames] = {};
    PtrSlot ptrs[kPtrSlots] = {};
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

// A fork while another thread holds g_thr_mu (a thread starting or
// ending, ops_recorded()) would leave it locked forever in the child, whose
// first new thread to record an op (a DataLoader worker's) would hang in
// thr_make. The forking thread takes it around the fork instead.
struct ForkGuard {
    ForkGuard()
    {
        pthread_atfork([] { g_thr_mu.lock(); }, [] { g_thr_mu.unlock(); },
                       [] { g_thr_mu.unlock(); });
    }
} g_fork_guard;

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
    // Frames left by ops that never ended here (the thread exits inside
    // one): their pins go, their owned shapes are freed.
    for (uint32_t i = 0; i < t->depth && i < kFrames; i++) {
        Frame &f = t->frames[i];
        if (f.shape && f.cached)
            f.shape->pins--;
        else
            shape_free(f.shape);
    }
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

inline act_name_id intern_bytes(Thr *t, const char *s, size_t n)
{
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

// Remembers @p s (@p n bytes with the NUL, at most kPtrBytes) in address
// slot @p p.
__attribute__((noinline)) act_name_id intern_ptr_put(PtrSlot &p, const char *s, size_t n,
                                                     act_name_id id)
{
    p.ptr = nullptr;
    if (!id)
        return id;
    unsigned char b[kPtrBytes] = {}, m[kPtrBytes] = {};
    std::memcpy(b, s, n);
    std::memset(m, 0xff, n);
    std::memcpy(p.w, b, sizeof b);
    std::memcpy(p.m, m, sizeof m);
    p.id = id;
    p.ptr = s;
    return id;
}

inline size_t ptr_slot(const char *s)
{
    uintptr_t a = (uintptr_t)s;
    return (size_t)((a >> 3 ^ a >> 12) & (kPtrSlots - 1));
}

// A miss by address: by bytes, then remembered by address.
__attribute__((noinline)) act_name_id intern_slow(Thr *t, PtrSlot &p, const char *s)
{
    size_t n = std::strlen(s);
    act_name_id id = intern_bytes(t, s, n);
    return n < kPtrBytes ? intern_ptr_put(p, s, n + 1, id) : id;
}

__attribute__((always_inline)) inline act_name_id intern(Thr *t, const char *s)
{
    // By address first: names of aten ops live in their schema, so the
    // same op passes the same pointer; the bytes there are checked, so a
    // reused address with other bytes misses. Read as kPtrBytes bytes at
    // once where that stays inside s's page.
    PtrSlot &p = t->ptrs[ptr_slot(s)];
    if (p.ptr == s && ((uintptr_t)s & 4095) <= 4096 - kPtrBytes) {
        uint64_t d = 0;
        for (size_t i = 0; i < kPtrBytes / 8; i++)
            d |= (ld8(s + 8 * i) ^ p.w[i]) & p.m[i];
        if (!d)
            return p.id;
    }
    return intern_slow(t, p, s);
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

// The shape texts of @p fn's inputs into *@p out: a pinned cache entry
// (*@p cached), or one the caller owns (a key too long to cache, or its
// slot held by a running op).
void shapes_of(const at::RecordFunction &fn, Thr *t, Shape **out, bool *cached)
{
    *cached = false;
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
        *out = sl;
        *cached = true;
        return;
    }
    Shape *s = shape_format(k.w, k.n, h);
    if (!s)
        return;
    if (cacheable && (!sl || !sl->pins)) {
        shape_free(sl);
        sl = s;
        s->pins = 1;
        *cached = true;
    }
    *out = s;
}

// ---- the callbacks ----------------------------------------------------------

inline uint64_t next_corr(Thr *t)
{
    if (t->corr_next == t->corr_end) {
        t->corr_next = g_next_corr.fetch_add(kCorrBlock, std::memory_order_relaxed);
        t->corr_end = t->corr_next + kCorrBlock;
    }
    return t->corr_next++;
}

// The shapes of an op that ends: unpinned (by the thread that pinned it;
// async ops, which may end elsewhere, are never cached) or freed.
inline void shape_done(Shape *s, bool cached, Thr *t, Thr *owner)
{
    if (!s)
        return;
    if (!cached)
        shape_free(s);
    else if (t == owner)
        s->pins--;
}

inline void ops_count(Thr *t)
{
    if (t)
        t->ops.store(t->ops.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

__attribute__((noinline)) bool paused()
{
    if (!torch::profiler::impl::profilerEnabled())
        return false;
    g_paused.fetch_add(1, std::memory_order_relaxed);
    if (!g_paused_said.exchange(1, std::memory_order_relaxed))
        act_log(ACT_LOG_WARN, "actrace.torch: torch.profiler is active: record_ops() "
                              "pauses while it runs (nothing is recorded twice)");
    return true;
}

// record_function regions (their RecordFunction may end out of order, as
// a Python generator's region can), TorchScript functions (the
// interpreter may resume them on another thread), async ops and ops
// nested deeper than kFrames: a context of their own.
__attribute__((noinline)) std::unique_ptr<at::ObserverContext> start_ctx(const at::RecordFunction &fn,
                                                                         Thr *t, bool user)
{
    auto c = std::unique_ptr<Ctx>(new Ctx);
    c->owner = t;
    const char *name = fn.name();
    c->id = intern(t, name);
    c->name = c->id ? nullptr : name;
    c->type = user ? ACT_USER_ANNOTATION : ACT_CPU_OP;
    c->seq = fn.seqNr();
    if (g_shapes && !user)
        shapes_of(fn, t, &c->shape, &c->cached);
    // A TorchScript function's correlation id is not pushed: the
    // interpreter may finish it on another thread, which could not pop it.
    c->pushed = !fn.isAsync() && fn.scope() != at::RecordScope::TORCHSCRIPT_FUNCTION;
    c->t0 = c->pushed ? act_op_begin(next_corr(t)) : act_now_ns();
    return c;
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction &fn)
{
    if (g_floor)
        return nullptr;
    Thr *t = thr();
    if (!t)
        return nullptr;
    // torch.profiler is asked at the thread's outermost op only: inside an
    // op this thread records, it cannot have started (Python starts it
    // between ops, or inside a record_function region, which keeps no
    // frame).
    if (!t->depth && paused())
        return nullptr;
    at::RecordScope sc = fn.scope();
    bool user = sc == at::RecordScope::USER_SCOPE;
    if ((sc != at::RecordScope::FUNCTION && sc != at::RecordScope::BACKWARD_FUNCTION) ||
        t->depth == kFrames || fn.isAsync())
        return start_ctx(fn, t, user);
    Frame &f = t->frames[t->depth++];
    f.fn = &fn;
    f.id = intern(t, fn.name());
    f.seq = fn.seqNr();
    f.shape = nullptr;
    if (g_shapes)
        shapes_of(fn, t, &f.shape, &f.cached);
    f.t0 = act_op_begin(next_corr(t));
    return nullptr;
}

inline void seq_arg(int64_t seq)
{
    if (seq < 0)
        return;
    if (g_key_seq)
        act_arg_int_k(g_key_seq, seq);
    else
        act_arg_int("Sequence number", seq);
}

// The span of an op whose correlation id is pushed (act_op_begin), with
// its sequence number, then the id popped: one call where the name and
// the key are interned (they are, but for a full string table).
// False: an op shorter than g_min_ns, counted and not recorded (its
// correlation id popped all the same).
inline bool op_end(const at::RecordFunction &fn, int type, act_name_id id, int64_t t0,
                   int64_t seq)
{
    int64_t t1 = act_now_ns();
    if (type == ACT_CPU_OP && t1 - t0 < g_min_ns.load(std::memory_order_relaxed)) {
        act_correlation_pop();
        g_short.fetch_add(1, std::memory_order_relaxed);
        return false;
    }
    if (id && g_key_seq) {
        act_op_end((act_activity_type)type, id, t0, t1, seq >= 0 ? g_key_seq : 0, seq);
        return true;
    }
    if (id)
        act_span_record_id((act_activity_type)type, id, t0, t1);
    else
        act_span_record((act_activity_type)type, fn.name(), t0, t1);
    seq_arg(seq);
    act_correlation_pop();
    return true;
}

// Its shape args, after the span (act_arg_* attach to the thread's last
// event).
inline void shape_args(const Shape *s)
{
    if (!s)
        return;
    // JSON arrays, as Kineto writes them; a text cut short ("...]")
    // is no JSON and goes as a string.
    if (g_key_dims && g_key_types) {
        (s->djson ? act_arg_jsonn_k : act_arg_strn_k)(g_key_dims, s->dims, s->dlen);
        (s->tjson ? act_arg_jsonn_k : act_arg_strn_k)(g_key_types, s->types, s->tlen);
    } else {
        (s->djson ? act_arg_jsonn : act_arg_strn)("Input Dims", s->dims, s->dlen);
        (s->tjson ? act_arg_jsonn : act_arg_strn)("Input type", s->types, s->tlen);
    }
}

// The top frame is not @p fn's: an op above it never ended on this
// thread (none should; this keeps the stack sound if one does). Drops the
// frames above @p fn's, with their correlation ids and shapes, and
// returns true; false (nothing changed) when @p fn has no frame.
__attribute__((noinline)) bool frames_unwind(Thr *t, const at::RecordFunction *fn)
{
    uint32_t i = t->depth;
    while (i && t->frames[i - 1].fn != fn)
        i--;
    if (!i)
        return false;
    while (t->depth > i) {
        Frame &f = t->frames[--t->depth];
        shape_done(f.shape, f.cached, t, t);
        act_correlation_pop();
    }
    return true;
}

__attribute__((noinline)) void end_ctx(const at::RecordFunction &fn, Ctx *c)
{
    Thr *t = t_thr;
    if (t != c->owner && !fn.isAsync()) {
        // Begun on another thread and ended here (a TorchScript function
        // the interpreter resumed elsewhere): its span would overlap this
        // thread's spans partly, and its correlation id is the other
        // thread's. Not recorded; counted.
        g_moved.fetch_add(1, std::memory_order_relaxed);
        shape_done(c->shape, c->cached, t, c->owner);
        c->shape = nullptr;
        return;
    }
    if (c->pushed) {
        if (!op_end(fn, c->type, c->id, c->t0, c->seq)) {
            shape_done(c->shape, c->cached, t, c->owner);
            c->shape = nullptr;
            return;
        }
    } else {
        int64_t t1 = act_now_ns();
        if (c->id)
            act_span_record_id((act_activity_type)c->type, c->id, c->t0, t1);
        else
            act_span_record((act_activity_type)c->type, fn.name(), c->t0, t1);
        seq_arg(c->seq);
    }
    shape_args(c->shape);
    shape_done(c->shape, c->cached, t, c->owner);
    c->shape = nullptr;
    ops_count(t);
}

void on_end(const at::RecordFunction &fn, at::ObserverContext *o)
{
    if (o)
        return end_ctx(fn, static_cast<Ctx *>(o));
    // An op with a frame: the thread's top one, for this RecordFunction.
    // Anything else (paused, or started before record_ops) has none.
    Thr *t = t_thr;
    if (!t || !t->depth)
        return;
    if (t->frames[t->depth - 1].fn != &fn && !frames_unwind(t, &fn))
        return;
    Frame &f = t->frames[--t->depth];
    bool kept = op_end(fn, ACT_CPU_OP, f.id, f.t0, f.seq);
    if (f.shape) {
        if (kept)
            shape_args(f.shape);
        shape_done(f.shape, f.cached, t, t);
    }
    if (kept)
        ops_count(t);
}

} // namespace

extern "C" {

// shapes: bit 0 "Input Dims"/"Input type"; bit 8 (bench only) registers
// the callbacks but records nothing, to measure RecordFunction's own cost;
// bit 9 (bench only, with bit 8) registers them as the calling thread's
// callbacks (addThreadLocalCallback), as torch.profiler does, for a like
// for like floor. 0 on; 1 already on (shapes as first asked); -1 torch
// refused.
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
        auto cb = at::RecordFunctionCallback(on_start, on_end)
                      .needsInputs(g_shapes)
                      .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION,
                               at::RecordScope::TORCHSCRIPT_FUNCTION,
                               at::RecordScope::USER_SCOPE});
        g_handle = g_floor && (shapes & 0x200) ? at::addThreadLocalCallback(cb)
                                               : at::addGlobalCallback(cb);
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

__attribute__((visibility("default"))) uint64_t actrace_torch_moved(void)
{
    return g_moved.load(std::memory_order_relaxed);
}

__attribute__((visibility("default"))) uint64_t actrace_torch_paused(void)
{
    return g_paused.load(std::memory_order_relaxed);
}

// Ops shorter than @p ns are counted, not recorded (0: every op).
__attribute__((visibility("default"))) void actrace_torch_set_min_ns(int64_t ns)
{
    g_min_ns.store(ns < 0 ? 0 : ns, std::memory_order_relaxed);
}

__attribute__((visibility("default"))) uint64_t actrace_torch_short(void)
{
    return g_short.load(std::memory_order_relaxed);
}

} // extern "C"
