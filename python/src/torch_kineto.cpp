// SPDX-License-Identifier: MIT
//
// actrace.torch.enable(): actrace's plugins inside torch.profiler, as a
// Kineto child profiler (libkineto::api().registerProfilerFactory). A thin
// shim: the plugins run in an ordinary libactrace session (libactrace's
// loader, validation, limits and config); at stop the session is read back
// with act_session_visit (actrace/visit.h) and each record becomes a
// libkineto::GenericTraceActivity. No host logic of actrace lives here.
//
// Built on first use against the installed torch's headers
// (torch/include/kineto) by actrace/torch.py, which keys the cache by the
// torch version and this file's hash; Kineto's classes change layout
// between torch minors, so actrace_kineto_enable() refuses a torch other
// than the one it was built for (ACTRACE_TORCH_BUILT_FOR).
//
// What Kineto does with a child (checked against the torch 2.15 headers and
// Kineto's GenericActivityProfiler): it configures every registered child
// on every torch.profiler session, CPU-only ones included, passing the
// requested activity types (it never looks at availableActivities());
// start()/stop() come right after it takes the window's start and end
// times; getMetadata() and getDeviceProperties() are read before
// processTrace(logger, linked, start, end); errors() is never read; the
// session object is destroyed when the profiler resets, before the user
// exports, so activities are handed to the logger (which copies them) and
// never referenced afterwards. Times are Unix-epoch ns.
//
// Mapping:
//  - kernels, copies, memsets become device activities on actrace's
//    device pids (0x40000000 + device), streams as resources, device and
//    stream names through the logger's device and resource info; a device
//    span of a plugin's own type becomes MTIA_CCP_EVENTS (drawn as is),
//    with its type's name in "actrace type";
//  - runtime and driver spans become runtime/driver activities on their
//    thread; other host spans and instants (NVTX ranges, application
//    annotations) runtime activities too, their type in "actrace type":
//    torch claims the CPU types (cpu_op, user_annotation, instants) as its
//    own and renames strangers "unknown";
//  - a launch and its device work get one flow id from a private range
//    that never repeats in the process (Kineto's flow ids are 32-bit;
//    ours start at 0x60000000), written as "ac2g" flows, and both carry it
//    as "correlation"; each is linked to the torch op whose correlation id
//    was current when it ran ("External id"): torch pushes the op's id on
//    every op (pushCorrelationId), and the session passes it to
//    act_correlation_push, where actrace's plugins read it;
//  - counter samples become counter tracks (MTIA_COUNTERS with
//    addCounterValue, torch >= 2.13); on older torch they are dropped and
//    counted;
//  - args become metadata (JSON args, act_arg_json, as raw JSON); records outside the profiler's window are
//    dropped and counted;
//  - drops, refused plugins and plugin warnings go into the trace's
//    metadata ("actrace") and to stderr.
// Clocks: actrace records CLOCK_MONOTONIC; the offset to CLOCK_REALTIME is
// read at start and at stop (each a realtime read between two monotonic
// reads, the tightest of a few) and interpolated linearly in between.
#include <libkineto.h>
#include <output_base.h>
#include <time_since_epoch.h>
#include <torch/headeronly/version.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <strings.h>
#include <cstdlib>
#include <ctime>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "actrace/actrace.h"

#ifndef ACTRACE_TORCH_BUILT_FOR
#error "build with -DACTRACE_TORCH_BUILT_FOR=\"<torch.__version__>\" (actrace/torch.py does)"
#endif

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 13)
#define ACT_KINETO_COUNTERS 1
#else
#define ACT_KINETO_COUNTERS 0
#endif

namespace {

using libkineto::ActivityType;
using libkineto::GenericTraceActivity;

std::mutex g_mu;                 // guards the settings below
std::vector<std::string> g_plugins; // names or paths; empty: none
std::string g_config;            // enable(config=...) text
bool g_registered = false;
std::atomic<uint64_t> g_sessions{0};
std::atomic<uint32_t> g_next_flow{0x60000000u};

// Every activity needs a TraceSpan that outlives the trace.
const libkineto::TraceSpan &trace_span()
{
    static const libkineto::TraceSpan s(0, 0, "actrace");
    return s;
}

int64_t clock_of(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// One paired read: (monotonic, realtime - monotonic).
struct Pair {
    int64_t mono = 0, off = 0;
};

Pair paired_read()
{
    Pair best;
    int64_t gap = INT64_MAX;
    for (int i = 0; i < 5; i++) {
        int64_t a = clock_of(CLOCK_MONOTONIC);
        int64_t r = clock_of(CLOCK_REALTIME);
        int64_t b = clock_of(CLOCK_MONOTONIC);
        if (b - a < gap) {
            gap = b - a;
            best.mono = a + (b - a) / 2;
            best.off = r - best.mono;
        }
    }
    return best;
}

// A string for Kineto's trace: Kineto writes string metadata between
// quotes without escaping it (torch 2.15: a '"' in an arg broke the JSON),
// and turns backslashes into '/' on the way. So: '"' becomes '\'', a
// backslash '/', control bytes a space, invalid UTF-8 U+FFFD.
std::string kineto_safe(const char *p, size_t n)
{
    std::string o;
    o.reserve(n);
    const unsigned char *s = (const unsigned char *)p;
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        if (c < 0x80) {
            o += c == '"' ? '\'' : c == '\\' ? '/' : c < 0x20 || c == 0x7f ? ' ' : (char)c;
            i++;
            continue;
        }
        // A well-formed UTF-8 sequence (RFC 3629: no overlongs, no
        // surrogates, at most U+10FFFF) is copied; anything else is U+FFFD.
        size_t len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
        bool ok = len && i + len <= n;
        for (size_t k = 1; ok && k < len; k++)
            ok = (s[i + k] & 0xc0) == 0x80;
        if (ok && len == 3)
            ok = !(c == 0xe0 && s[i + 1] < 0xa0) && !(c == 0xed && s[i + 1] >= 0xa0);
        if (ok && len == 4)
            ok = !(c == 0xf0 && s[i + 1] < 0x90) && !(c == 0xf4 && s[i + 1] >= 0x90);
        if (ok) {
            o.append(p + i, len);
            i += len;
        } else {
            o += "\xef\xbf\xbd";
            i++;
        }
    }
    return o;
}

// A JSON string for the metadata values (Kineto writes them raw), from
// kineto_safe's text.
std::string jstr(const std::string &raw)
{
    std::string s = kineto_safe(raw.data(), raw.size());
    std::string o = "\"";
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') {
            o += '\\';
            o += (char)c;
        } else if (c < 0x20) {
            char b[8];
            std::snprintf(b, sizeof b, "\\u%04x", c);
            o += b;
        } else {
            o += (char)c;
        }
    }
    return o + "\"";
}

// Messages libactrace logs while the shim creates, starts and stops its
// session: delivered as before (to the application's callback, or the
// default's stderr), and kept for the trace's metadata. The shim's
// callback is installed once per process and forwards to the one it
// found, so an application's act_log_set() survives every profile (the
// old capture was a stack object set process-wide and reset to the
// default at its end; other threads' messages reached it unlocked). A
// plugin that declines because its runtime is absent (cupti without a
// CUDA driver) says so once per process, and only with ACTRACE_LOG=info
// or debug; the trace's notes keep it every time.
std::mutex g_log_mu;
std::vector<std::string> *g_log_into = nullptr; // the capturing session's notes
act_log_fn g_log_prev = nullptr;
void *g_log_prev_user = nullptr;
std::set<std::string> g_declines_said;

bool log_verbose()
{
    const char *e = std::getenv("ACTRACE_LOG");
    return e && (strcasecmp(e, "info") == 0 || strcasecmp(e, "debug") == 0);
}

void log_fn(void *, act_log_level level, const char *msg)
{
    act_log_fn prev;
    void *prev_user;
    {
        std::lock_guard<std::mutex> lk(g_log_mu);
        if (g_log_into && level >= ACT_LOG_WARN && g_log_into->size() < 64)
            g_log_into->push_back(msg);
        if (std::strstr(msg, ": refused: init declined") &&
            (!log_verbose() || !g_declines_said.insert(msg).second))
            return;
        prev = g_log_prev;
        prev_user = g_log_prev_user;
    }
    if (prev)
        prev(prev_user, level, msg);
    else
        std::fprintf(stderr, "actrace: %s\n", msg);
}

struct LogCapture {
    std::vector<std::string> *saved;
    explicit LogCapture(std::vector<std::string> *v)
    {
        static std::once_flag once;
        std::call_once(once, [] {
            act_log_fn f = nullptr;
            void *u = nullptr;
            act_log_get(&f, &u);
            {
                std::lock_guard<std::mutex> lk(g_log_mu);
                g_log_prev = f;
                g_log_prev_user = u;
            }
            act_log_set(log_fn, nullptr);
        });
        std::lock_guard<std::mutex> lk(g_log_mu);
        saved = g_log_into;
        g_log_into = v;
    }
    ~LogCapture()
    {
        std::lock_guard<std::mutex> lk(g_log_mu);
        g_log_into = saved;
    }
};

// Device activity requested: torch asks for these with ProfilerActivity.CUDA
// (and for other devices), never for CPU alone, whose set has CUDA_RUNTIME
// and CUDA_DRIVER in it.
bool wants_cuda(const std::set<ActivityType> &types)
{
    return types.count(ActivityType::CONCURRENT_KERNEL) || types.count(ActivityType::GPU_MEMCPY) ||
           types.count(ActivityType::GPU_MEMSET);
}

bool is_cupti(const std::string &p)
{
    size_t s = p.rfind('/');
    std::string base = s == std::string::npos ? p : p.substr(s + 1);
    return base == "cupti" || base == "cupti.so";
}

ActivityType runtime_type(const std::string &backend, bool driver)
{
    if (backend == "cupti")
        return driver ? ActivityType::CUDA_DRIVER : ActivityType::CUDA_RUNTIME;
    return driver ? ActivityType::PRIVATEUSE1_DRIVER : ActivityType::PRIVATEUSE1_RUNTIME;
}

class Session final : public libkineto::IActivityProfilerSession {
  public:
    Session(const std::set<ActivityType> &types, const libkineto::Config &cfg)
    {
        g_sessions.fetch_add(1, std::memory_order_relaxed);
        std::vector<std::string> plugins;
        std::string text;
        {
            std::lock_guard<std::mutex> lk(g_mu);
            plugins = g_plugins;
            text = g_config;
        }
        // Kineto's CUSTOM_CONFIG (torch fills it from
        // experimental_config.custom_profiler_config on the paths that pass
        // it; torch 2.15 left it empty for CPU and CUDA profiles in our
        // tests), when set, is added after enable()'s config.
        const std::string &custom = cfg.getCustomConfig();
        if (!custom.empty())
            text += "\n" + custom + "\n";
        // No double CUPTI: when torch.profiler itself asks for CUDA
        // activity, torch's CUPTI is on; actrace's cupti plugin stays out.
        if (wants_cuda(types)) {
            for (auto it = plugins.begin(); it != plugins.end();)
                if (is_cupti(*it)) {
                    notes_.push_back("cupti plugin not started: torch.profiler traces CUDA "
                                     "itself (CUDA activity requested), and CUPTI serves one "
                                     "tracer at a time; the other plugins run");
                    std::fprintf(stderr, "actrace: %s\n", notes_.back().c_str());
                    it = plugins.erase(it);
                } else {
                    ++it;
                }
        }
        // Another owner's session (actrace record's, the program's own):
        // one per process, so this one opens a window on it instead
        // (docs/architecture.md, "Who owns the process's session"): at
        // stop it reads that session's events of the profile's time, from
        // the owner's plugins (already running; enable()'s plugin list and
        // config do not apply). The owner's trace keeps everything.
        if (act_session_active() || std::getenv("ACTRACE_RECORD_DIR")) {
            window_ = true;
            notes_.push_back("a window on another actrace session (actrace record, or the "
                             "program's own): its plugins' events of this profile's time; "
                             "enable()'s plugins and config are not used");
            return;
        }
        std::vector<const char *> names;
        for (const auto &p : plugins)
            names.push_back(p.c_str());
        act_session_opts o;
        act_session_opts_init(&o);
        o.plugins = names.data();
        o.plugin_count = names.size();
        o.config_text = text.c_str();
        o.config_text_len = text.size();
        o.trace_name = "torch.profiler";
        LogCapture cap(&notes_);
        int rc = act_session_create(&o, &s_);
        if (rc) {
            s_ = nullptr;
            notes_.push_back(std::string("cannot create the actrace session: ") + act_strerror(rc));
            std::fprintf(stderr, "actrace: %s\n", notes_.back().c_str());
        }
    }

    ~Session() override
    {
        act_window_free(w_);
        act_session_destroy(s_);
    }

    void start() override
    {
        if (window_) {
            LogCapture cap(&notes_);
            t0_ = paired_read();
            int rc = act_window_open(&w_);
            if (rc) {
                // The owner's session ended meanwhile (or never started):
                // torch's events only, said in the trace's notes.
                w_ = nullptr;
                notes_.push_back(std::string("cannot open a window on the active actrace "
                                             "session: ") + act_strerror(rc));
                return;
            }
            started_ = true;
            status_ = libkineto::TraceStatus::RECORDING;
            return;
        }
        if (!s_)
            return;
        LogCapture cap(&notes_);
        t0_ = paired_read();
        int rc = act_session_start(s_);
        if (rc) {
            notes_.push_back(std::string("cannot start the actrace session: ") + act_strerror(rc) +
                             (rc == ACT_EBUSY ? " (another actrace session is active in this process)" : ""));
            std::fprintf(stderr, "actrace: %s\n", notes_.back().c_str());
            return;
        }
        started_ = true;
        status_ = libkineto::TraceStatus::RECORDING;
    }

    void stop() override
    {
        if (!started_)
            return;
        int64_t stop_mono = clock_of(CLOCK_MONOTONIC);
        {
            LogCapture cap(&notes_);
            if (w_)
                act_window_close(w_);
            else
                act_session_stop(s_);
        }
        t1_ = paired_read();
        started_ = false;
        collect(stop_mono);
        status_ = libkineto::TraceStatus::PROCESSING;
    }

    std::vector<std::string> errors() override { return notes_; }

    void processTrace(libkineto::ActivityLogger &logger) override
    {
        emit(logger, nullptr, INT64_MIN, INT64_MAX);
    }

    void processTrace(libkineto::ActivityLogger &logger, libkineto::getLinkedActivityCallback linked,
                      int64_t start, int64_t end) override
    {
        emit(logger, &linked, start, end);
    }

    std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override { return nullptr; }
    std::vector<libkineto::ResourceInfo> getResourceInfos() override { return {}; }
    std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override { return nullptr; }

    // Called by Kineto on every op, on the op's thread: the cheapest path.
    void pushCorrelationId(uint64_t id) override { act_correlation_push(id); }
    void popCorrelationId() override { act_correlation_pop(); }
    // record_function regions push a "user" id instead: the same stack
    // here, so the innermost region or op is the current one.
    void pushUserCorrelationId(uint64_t id) override { act_correlation_push(id); }
    void popUserCorrelationId() override { act_correlation_pop(); }

    std::unordered_map<std::string, std::string> getMetadata() override
    {
        std::string m = "{\"version\": " + jstr(act_version());
        m += ", \"recorded\": " + std::to_string(recorded_);
        m += ", \"dropped\": " + std::to_string(dropped_);
        m += ", \"dropped_by_reason\": {";
        bool first = true;
        for (const auto &kv : drop_reasons_) {
            m += (first ? "" : ", ") + jstr(kv.first) + ": " + std::to_string(kv.second);
            first = false;
        }
        m += "}, \"outside_window\": " + std::to_string(outside_);
        m += ", \"counter_samples_dropped\": " + std::to_string(counters_dropped_);
        m += ", \"clock_offset_ns\": [" + std::to_string(t0_.off) + ", " + std::to_string(t1_.off) + "]";
        m += ", \"plugins\": [";
        first = true;
        for (const auto &p : plugins_) {
            m += first ? "" : ", ";
            first = false;
            m += p;
        }
        m += "], \"notes\": [";
        first = true;
        for (const auto &n : notes_) {
            m += (first ? "" : ", ") + jstr(n);
            first = false;
        }
        m += "]}";
        return {{"actrace", m}};
    }

  private:
    struct Pending {
        uint64_t ext = 0;
    };

    int64_t to_epoch(int64_t mono) const
    {
        if (t1_.mono <= t0_.mono)
            return mono + t0_.off;
        // Linear between the two paired reads (and beyond them).
        long double f = (long double)(mono - t0_.mono) / (long double)(t1_.mono - t0_.mono);
        return mono + t0_.off + (int64_t)((long double)(t1_.off - t0_.off) * f);
    }

    uint32_t kineto_flow(uint64_t f)
    {
        auto it = flows_.find(f);
        if (it != flows_.end())
            return it->second;
        uint32_t k = g_next_flow.fetch_add(1, std::memory_order_relaxed);
        if (k == 0)
            k = g_next_flow.fetch_add(1, std::memory_order_relaxed);
        flows_.emplace(f, k);
        return k;
    }

    static void args_to_metadata(const act_visit_event *e, GenericTraceActivity &a)
    {
        act_visit_arg args[32];
        for (auto &x : args) {
            std::memset(&x, 0, sizeof x);
            x.struct_size = sizeof x;
        }
        size_t n = act_visit_event_args(e, args, 32);
        for (size_t i = 0; i < n && i < 32; i++) {
            std::string key = kineto_safe(args[i].key, args[i].key_len);
            if (key.empty() || key == "External id" || key == "correlation")
                continue;
            switch (args[i].kind) {
            case ACT_VISIT_ARG_INT: a.addTypedMetadata(key, libkineto::TypedValue{(int64_t)args[i].v.i}); break;
            case ACT_VISIT_ARG_UINT: a.addTypedMetadata(key, libkineto::TypedValue{(uint64_t)args[i].v.u}); break;
            case ACT_VISIT_ARG_DOUBLE: a.addTypedMetadata(key, libkineto::TypedValue{args[i].v.d}); break;
            case ACT_VISIT_ARG_BOOL: a.addTypedMetadata(key, libkineto::TypedValue{args[i].v.b != 0}); break;
            // Valid JSON (libactrace checked it, as its writers do): raw,
            // as Kineto writes its own "Input Dims".
            case ACT_VISIT_ARG_JSON:
                a.addTypedMetadata(key, libkineto::TypedValue{libkineto::RawJson{
                                            std::string(args[i].v.s.ptr, args[i].v.s.len)}});
                break;
            default: a.addMetadataQuoted(key, kineto_safe(args[i].v.s.ptr, args[i].v.s.len)); break;
            }
        }
    }

    // Visitor callbacks.
    static void on_begin(void *ctx, const act_visit_info *in) { static_cast<Session *>(ctx)->pid_ = in->pid; }

    static void on_device(void *ctx, const act_visit_device *d)
    {
        auto *self = static_cast<Session *>(ctx);
        self->dev_label_[d->pid] = *d->vendor ? d->vendor : d->backend;
    }

    static void on_track(void *ctx, const act_visit_track *t)
    {
        auto *self = static_cast<Session *>(ctx);
        if (t->tid < 0 && t->device != ACT_VISIT_HOST) {
            std::string label = self->dev_label_.count(t->pid) ? self->dev_label_[t->pid] : "";
            self->devices_.push_back(libkineto::DeviceInfo{
                t->pid, libkineto::kExceedMaxPid + (int64_t)t->device,
                kineto_safe(t->name, std::strlen(t->name)), kineto_safe(label.data(), label.size())});
        } else if (t->tid >= 0) {
            self->resources_.push_back(libkineto::ResourceInfo{
                t->tid, t->tid, t->pid, kineto_safe(t->name, std::strlen(t->name)),
                t->is_stream ? libkineto::ResourceType::UNKNOWN : libkineto::ResourceType::HOST_THREAD});
        }
    }

    static void on_event(void *ctx, const act_visit_event *e)
    {
        auto *self = static_cast<Session *>(ctx);
        int64_t t0 = self->to_epoch(e->start_ns);
        int64_t t1 = self->to_epoch(e->end_ns);
        // The window: records that started before start() or ended after
        // stop() was called are outside the profiler's.
        if (e->start_ns < self->t0_.mono || e->end_ns > self->stop_mono_) {
            self->outside_++;
            return;
        }
        std::string name = kineto_safe(e->name, e->name_len);
        bool device = e->device != ACT_VISIT_HOST;
        ActivityType ty;
        // Host side, only runtime and driver types: torch claims CPU_OP,
        // CPU_INSTANT_EVENT, USER_ANNOTATION and PYTHON_FUNCTION activities
        // as its own (collection.cpp looks each up among the events it
        // recorded, renames a stranger "unknown" and leaves it out of
        // key_averages), so a host span or instant of any other type (an
        // NVTX range, an application annotation) is a runtime activity of
        // zero or more duration, its actrace type in "actrace type".
        bool host_other = false;
        if (device && e->kind != ACT_VISIT_INSTANT) {
            switch (e->type) {
            case ACT_CONCURRENT_KERNEL: ty = ActivityType::CONCURRENT_KERNEL; break;
            case ACT_GPU_MEMCPY: ty = ActivityType::GPU_MEMCPY; break;
            case ACT_GPU_MEMSET: ty = ActivityType::GPU_MEMSET; break;
            case ACT_CUDA_SYNC: ty = ActivityType::CUDA_SYNC; break;
            case ACT_GPU_USER_ANNOTATION: ty = ActivityType::GPU_USER_ANNOTATION; break;
            // A device span of any other type (a plugin's own type): a
            // plain device activity on its stream, its actrace type kept.
            // MTIA_CCP_EVENTS is the one Kineto draws as is on a device
            // track (actrace's retired code 13, an alias of kernel); a GPU
            // user annotation would be widened by Kineto (1 ns each side)
            // into its stream's neighbours.
            default: ty = ActivityType::MTIA_CCP_EVENTS; break;
            }
        } else if (e->kind != ACT_VISIT_INSTANT && e->type == ACT_DRIVER) {
            ty = runtime_type(e->backend, true);
        } else {
            ty = runtime_type(e->backend, false);
            host_other = e->kind == ACT_VISIT_INSTANT || e->type != ACT_RUNTIME;
        }
        self->acts_.emplace_back(trace_span(), ty, name);
        GenericTraceActivity &a = self->acts_.back();
        a.startTime = t0;
        a.endTime = t1;
        a.device = e->pid;
        a.resource = e->tid;
        a.threadId = (int32_t)e->tid;
        if (e->flow_dir != ACT_VISIT_FLOW_NONE) {
            uint32_t f = self->kineto_flow(e->flow);
            a.id = (int32_t)f;
            a.flow.id = f;
            a.flow.type = libkineto::kLinkAsyncCpuGpu;
            a.flow.start = e->flow_dir == ACT_VISIT_FLOW_START;
            a.addTypedMetadata("correlation", libkineto::TypedValue{(int64_t)f});
        }
        if (e->from_plugin && *e->backend)
            a.addMetadataQuoted("backend", e->backend);
        if (ty == ActivityType::MTIA_CCP_EVENTS || host_other)
            a.addMetadataQuoted("actrace type", e->category);
        if (device) {
            a.addTypedMetadata("device", libkineto::TypedValue{(int64_t)e->device});
            a.addTypedMetadata("stream", libkineto::TypedValue{(uint64_t)e->stream});
        } else if (e->from_plugin) {
            self->host_tids_.insert(e->tid); // its thread's name is handed over
        }
        if (e->nargs_hint)
            args_to_metadata(e, a);
        self->ext_.push_back(e->external_id);
    }

    static void on_counter(void *ctx, const act_visit_counter_track *ct, const act_visit_sample *cs)
    {
        auto *self = static_cast<Session *>(ctx);
        if (cs->ts_ns < self->t0_.mono || cs->ts_ns > self->stop_mono_) {
            self->outside_++;
            return;
        }
#if ACT_KINETO_COUNTERS
        self->acts_.emplace_back(trace_span(), ActivityType::MTIA_COUNTERS,
                                 kineto_safe(ct->name, std::strlen(ct->name)));
        GenericTraceActivity &a = self->acts_.back();
        a.startTime = a.endTime = self->to_epoch(cs->ts_ns);
        a.device = ct->pid;
        a.resource = 0;
        // Every series of the track at every time: a stable set of keys.
        for (size_t i = 0; i < ct->nseries; i++) {
            std::string key = *ct->series[i] ? ct->series[i] : ct->name;
            if (*ct->units[i])
                key += std::string(" (") + ct->units[i] + ")";
            a.addCounterValue(kineto_safe(key.data(), key.size()), cs->current[i]);
        }
        self->ext_.push_back(0);
#else
        (void)ct;
        self->counters_dropped_++;
#endif
    }

    static void on_end(void *ctx, const act_visit_stats *st)
    {
        auto *self = static_cast<Session *>(ctx);
        self->recorded_ = st->recorded;
        self->dropped_ = st->dropped;
        for (size_t i = 0; i < st->nreasons; i++)
            if (st->by_reason[i])
                self->drop_reasons_[st->reason_names[i]] = st->by_reason[i];
        for (size_t i = 0; i < st->nplugins; i++) {
            const act_visit_plugin *p = st->plugins[i];
            std::string j = "{\"name\": " + jstr(p->name) + ", \"path\": " + jstr(p->path) +
                            ", \"rejected\": " + std::to_string(p->rejected) +
                            ", \"dropped\": " + std::to_string(p->dropped) + ", \"warnings\": [";
            for (size_t k = 0; k < p->nwarnings; k++) {
                j += (k ? ", " : "") + jstr(p->warnings[k]);
                if (!self->window_) // the owner's plugins: the owner reports them
                    std::fprintf(stderr, "actrace: plugin %s: %s\n", p->name, p->warnings[k]);
            }
            self->plugins_.push_back(j + "]}");
        }
    }

    void collect(int64_t stop_mono)
    {
        stop_mono_ = stop_mono;
        act_visitor v;
        act_visitor_init(&v);
        v.ctx = this;
        v.begin = on_begin;
        v.device = on_device;
        v.track = on_track;
        v.event = on_event;
        v.counter = on_counter;
        v.end = on_end;
        int rc = w_ ? act_window_visit(w_, &v) : act_session_visit(s_, &v);
        if (rc)
            notes_.push_back(std::string("reading the actrace session back: ") + act_strerror(rc));
        act_window_free(w_);
        w_ = nullptr;
        // Losses go to stderr; records outside the window (a sample at
        // stop, device work that finished after it) only to the metadata.
        // A window's totals are its owner's, who reports them itself.
        if (!window_ && (dropped_ || counters_dropped_))
            std::fprintf(stderr,
                         "actrace: torch.profiler bridge: %llu records dropped by actrace (see "
                         "\"actrace\" in the trace's metadata), %llu counter samples dropped "
                         "(counter tracks need torch >= 2.13)\n",
                         (unsigned long long)dropped_, (unsigned long long)counters_dropped_);
        // The session's memory is not needed any more.
        act_session_destroy(s_);
        s_ = nullptr;
    }

    // Device work back to back on one stream (one span's end the next
    // one's start, as pocl's CPU device reports it): Kineto writes ts and
    // dur in microseconds with three decimals, and viewers add the two as
    // doubles, which can land an ulp (about 1 ns at these magnitudes) past
    // the next start, so the two overlap (Perfetto moves one to an
    // overflow track). The earlier span ends 2 ns before the next instead;
    // spans that really overlap or nest are left as they are.
    void part_touching()
    {
        const int64_t kGap = 2;
        std::map<std::pair<int64_t, int64_t>, std::vector<size_t>> by_stream;
        for (size_t i = 0; i < acts_.size(); i++) {
            const GenericTraceActivity &a = acts_[i];
            if (a.device != pid_ && a.activityType != ActivityType::MTIA_COUNTERS &&
                a.endTime > a.startTime)
                by_stream[{a.device, a.resource}].push_back(i);
        }
        for (auto &kv : by_stream) {
            std::vector<size_t> &v = kv.second;
            std::sort(v.begin(), v.end(),
                      [this](size_t x, size_t y) { return acts_[x].startTime < acts_[y].startTime; });
            for (size_t k = 0; k + 1 < v.size(); k++) {
                GenericTraceActivity &a = acts_[v[k]];
                int64_t next = acts_[v[k + 1]].startTime;
                if (a.endTime <= next && a.endTime > next - kGap && next - kGap > a.startTime)
                    a.endTime = next - kGap;
            }
        }
    }

    void emit(libkineto::ActivityLogger &logger, libkineto::getLinkedActivityCallback *linked,
              int64_t start, int64_t end)
    {
        for (const auto &d : devices_)
            logger.handleDeviceInfo(d, start == INT64_MIN ? 0 : start);
        for (const auto &r : resources_)
            if (r.deviceId != pid_ || host_tids_.count(r.id))
                logger.handleResourceInfo(r, start == INT64_MIN ? 0 : start);
        part_touching();
        size_t late = 0;
        for (size_t i = 0; i < acts_.size(); i++) {
            GenericTraceActivity &a = acts_[i];
            if (a.startTime < start || a.endTime > end) {
                late++; // Kineto's window is a little wider than ours
                continue;
            }
            if (linked && ext_[i] && *linked)
                a.linked = (*linked)((int32_t)ext_[i]);
            logger.handleGenericActivity(a);
        }
        if (late)
            std::fprintf(stderr, "actrace: torch.profiler bridge: %zu records outside Kineto's window dropped\n", late);
        acts_.clear();
        ext_.clear();
    }

    act_session *s_ = nullptr;
    act_window *w_ = nullptr; // a window on another owner's session
    bool window_ = false;
    bool started_ = false;
    Pair t0_, t1_;
    int64_t stop_mono_ = 0;
    int32_t pid_ = 0;
    std::deque<GenericTraceActivity> acts_;
    std::vector<uint64_t> ext_;
    std::deque<libkineto::DeviceInfo> devices_;
    std::deque<libkineto::ResourceInfo> resources_;
    std::map<int32_t, std::string> dev_label_;
    std::unordered_set<int64_t> host_tids_;
    std::unordered_map<uint64_t, uint32_t> flows_;
    std::vector<std::string> notes_;
    std::vector<std::string> plugins_;
    std::map<std::string, uint64_t> drop_reasons_;
    uint64_t recorded_ = 0, dropped_ = 0, outside_ = 0, counters_dropped_ = 0;
};

class Profiler final : public libkineto::IActivityProfiler {
  public:
    const std::string &name() const override { return name_; }

    const std::set<ActivityType> &availableActivities() const override { return types_; }

    std::unique_ptr<libkineto::IActivityProfilerSession> configure(const std::set<ActivityType> &types,
                                                                   const libkineto::Config &config) override
    {
        return std::make_unique<Session>(types, config);
    }

    std::unique_ptr<libkineto::IActivityProfilerSession> configure(int64_t, int64_t,
                                                                   const std::set<ActivityType> &types,
                                                                   const libkineto::Config &config) override
    {
        return std::make_unique<Session>(types, config);
    }

  private:
    std::string name_ = "actrace";
    std::set<ActivityType> types_ = {
        ActivityType::CONCURRENT_KERNEL, ActivityType::GPU_MEMCPY,         ActivityType::GPU_MEMSET,
        ActivityType::PRIVATEUSE1_RUNTIME, ActivityType::PRIVATEUSE1_DRIVER,
#if ACT_KINETO_COUNTERS
        ActivityType::MTIA_COUNTERS,
#endif
    };
};

} // namespace

extern "C" {

// The torch version this shim was compiled against.
__attribute__((visibility("default"))) const char *actrace_kineto_built_for(void)
{
    return ACTRACE_TORCH_BUILT_FOR;
}

// Register the child profiler (once; later calls change nothing and return
// 1). @p torch_version: the running torch's torch.__version__; another than
// the one this shim was built for is refused (-1, message in @p err).
// @p plugins: names or paths separated by '\n'. @p config: config text.
__attribute__((visibility("default"))) int actrace_kineto_enable(const char *torch_version, const char *plugins,
                                                                 const char *config, char *err, size_t errcap)
{
    if (!torch_version || std::strcmp(torch_version, ACTRACE_TORCH_BUILT_FOR) != 0) {
        std::snprintf(err, errcap,
                      "actrace.torch: this Kineto shim was built for torch %s, but torch %s is "
                      "running; Kineto's classes change between torch releases, so it is refused "
                      "(remove it to rebuild against this torch)",
                      ACTRACE_TORCH_BUILT_FOR, torch_version ? torch_version : "(unknown)");
        return -1;
    }
    std::lock_guard<std::mutex> lk(g_mu);
    if (g_registered)
        return 1;
    g_plugins.clear();
    for (const char *p = plugins ? plugins : ""; *p;) {
        const char *e = std::strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : std::strlen(p);
        if (n)
            g_plugins.emplace_back(p, n);
        p += n + (e ? 1 : 0);
    }
    g_config = config ? config : "";
    try {
        libkineto::api().registerProfilerFactory([] { return std::make_unique<Profiler>(); });
    } catch (const std::exception &e) {
        std::snprintf(err, errcap, "actrace.torch: Kineto refused the child profiler: %s", e.what());
        return -2;
    }
    g_registered = true;
    return 0;
}

// How many torch.profiler sessions the child profiler served.
__attribute__((visibility("default"))) uint64_t actrace_kineto_sessions(void)
{
    return g_sessions.load(std::memory_order_relaxed);
}

} // extern "C"
