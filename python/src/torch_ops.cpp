// SPDX-License-Identifier: MIT
//
// actrace.torch.record_ops(): PyTorch's operators as actrace spans, through
// RecordFunction's global callback (at::addGlobalCallback). A thin shim: it
// translates each RecordFunction into libactrace calls and holds no logic
// of its own. Built on first use against the installed torch (actrace/
// torch.py compiles it into a cache) and loaded with ctypes: the functions
// below are plain C.
//
// Per op: start takes the time, a correlation id (pushed with
// act_correlation_push, so device work launched by the op links to it) and,
// with shapes, the inputs' dims and types; end records one cpu_op span
// (user_annotation for record_function regions) with act_span_record_id
// while the id is still pushed ("External id"), then its args, then pops.
// Names are interned once per thread-local cache slot; the per-op context
// comes from a thread-local free list, so the steady state allocates
// nothing. While torch.profiler is active on the thread the callback does
// nothing (never recorded twice) and counts what it skipped.
//
// libactrace is linked by its SONAME: under `actrace record` the preloaded
// copy is the one this binds to.
#include <ATen/record_function.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

constexpr size_t kDims = 512;
constexpr size_t kTypes = 256;

std::atomic<uint64_t> g_next_corr{1};
std::atomic<uint64_t> g_ops{0};
std::atomic<uint64_t> g_paused{0};
std::atomic<int> g_paused_said{0};
bool g_shapes = false;
bool g_floor = false; // bench only: callbacks that record nothing
bool g_on = false;
at::CallbackHandle g_handle = 0;

struct Ctx final : at::ObserverContext {
    int64_t t0 = 0;
    int64_t seq = -1;
    act_name_id id = 0;
    const char *name = nullptr; // when not interned: copied by act_span_record
    int type = ACT_CPU_OP;
    bool pushed = false;
    bool shapes = false;
    char dims[kDims];
    char types[kTypes];
    Ctx *next_free = nullptr;

    static void *operator new(size_t n);
    static void operator delete(void *p);
};

// Free list of contexts, per thread: new/delete of one per op would be a
// malloc per op. A context freed on another thread joins that one's list.
thread_local Ctx *t_free = nullptr;

void *Ctx::operator new(size_t n)
{
    if (Ctx *c = t_free) {
        t_free = c->next_free;
        return c;
    }
    void *p = std::malloc(n);
    if (!p)
        throw std::bad_alloc();
    return p;
}

void Ctx::operator delete(void *p)
{
    Ctx *c = static_cast<Ctx *>(p);
    c->next_free = t_free;
    t_free = c;
}

// Interned names: a small direct-mapped cache per thread, keyed by the
// name's bytes (record_function names live in the RecordFunction, so their
// address is not stable; aten names are).
struct Slot {
    uint64_t hash;
    const char *ptr; // the name as last seen at this address
    char *copy;
    act_name_id id;
};
constexpr size_t kSlots = 1024;
thread_local Slot t_names[kSlots];

act_name_id intern(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    size_t n = 0;
    for (; s[n]; n++)
        h = (h ^ (unsigned char)s[n]) * 1099511628211ull;
    Slot &sl = t_names[h & (kSlots - 1)];
    if (sl.id && sl.hash == h && (sl.ptr == s || std::strcmp(sl.copy, s) == 0)) {
        sl.ptr = s;
        return sl.id;
    }
    act_name_id id = act_name(s);
    if (!id)
        return 0;
    char *c = static_cast<char *>(std::malloc(n + 1));
    if (!c)
        return id;
    std::memcpy(c, s, n + 1);
    std::free(sl.copy);
    sl = Slot{h, s, c, id};
    return id;
}

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
        // By hand: snprintf per dimension was most of the shapes' cost.
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

const char *type_of(const c10::IValue &v)
{
    if (v.isTensor())
        return nullptr; // the caller writes the dtype's name (a view, not NUL-ended)
    if (v.isScalar() || v.isInt() || v.isDouble() || v.isBool())
        return "Scalar";
    if (v.isTensorList())
        return "TensorList";
    if (v.isIntList() || v.isDoubleList() || v.isBoolList())
        return "ScalarList";
    if (v.isList())
        return "GenericList";
    if (v.isString())
        return "String";
    if (v.isDevice())
        return "Device";
    return "";
}

// Kineto's layout of the two args, as text: [[2, 3], [3]] and
// ["float", "Scalar"].
void shapes_of(const at::RecordFunction &fn, Ctx *c)
{
    Buf d{c->dims, c->dims + kDims};
    Buf t{c->types, c->types + kTypes};
    d.str("[");
    t.str("[");
    bool first = true;
    for (const c10::IValue &v : fn.inputs()) {
        if (!first) {
            d.str(", ");
            t.str(", ");
        }
        first = false;
        d.str("[");
        if (v.isTensor() && v.toTensor().defined()) {
            const at::Tensor &x = v.toTensor();
            if (!x.is_nested() && x.layout() == c10::kStrided) {
                bool f2 = true;
                for (int64_t s : x.sizes()) {
                    if (!f2)
                        d.str(", ");
                    f2 = false;
                    d.num(s);
                }
            }
        }
        d.str("]");
        t.str("\"");
        if (const char *ty = type_of(v)) {
            t.str(ty);
        } else if (v.toTensor().defined()) {
            auto n = v.toTensor().dtype().name();
            t.put(n.data(), n.size());
        }
        t.str("\"");
    }
    d.str("]");
    t.str("]");
    d.done();
    t.done();
}

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
    auto c = std::unique_ptr<Ctx>(new Ctx);
    const char *name = fn.name();
    c->id = intern(name);
    c->name = c->id ? nullptr : name;
    c->type = fn.scope() == at::RecordScope::USER_SCOPE ? ACT_USER_ANNOTATION : ACT_CPU_OP;
    c->seq = fn.seqNr();
    c->shapes = g_shapes && c->type == ACT_CPU_OP;
    if (c->shapes)
        shapes_of(fn, c.get());
    c->pushed = !fn.isAsync();
    if (c->pushed)
        act_correlation_push(g_next_corr.fetch_add(1, std::memory_order_relaxed));
    c->t0 = act_now_ns();
    return c;
}

void on_end(const at::RecordFunction &fn, at::ObserverContext *o)
{
    int64_t t1 = act_now_ns();
    Ctx *c = static_cast<Ctx *>(o);
    if (!c)
        return;
    if (c->id)
        act_span_record_id((act_activity_type)c->type, c->id, c->t0, t1);
    else
        act_span_record((act_activity_type)c->type, fn.name(), c->t0, t1);
    if (c->seq >= 0)
        act_arg_int("Sequence number", c->seq);
    if (c->shapes) {
        act_arg_str("Input Dims", c->dims);
        act_arg_str("Input type", c->types);
    }
    if (c->pushed)
        act_correlation_pop();
    g_ops.fetch_add(1, std::memory_order_relaxed);
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
    return g_ops.load(std::memory_order_relaxed);
}

__attribute__((visibility("default"))) uint64_t actrace_torch_paused(void)
{
    return g_paused.load(std::memory_order_relaxed);
}

} // extern "C"
