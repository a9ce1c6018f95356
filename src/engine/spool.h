/* SPDX-License-Identifier: MIT */
/*
 * The spool: what `actrace record` rebuilds a process's trace from when the
 * process could not write it (_exit, abort, a crash, SIGKILL, exec).
 *
 * Under record, the auto-started session of each process keeps its chunk
 * memory in a shared mapping of BASE.spool, a file in record's private
 * directory, and appends everything else the writer needs to BASE.meta, a
 * log of small records written with one write(2) each: the session's
 * clocks, interned names, threads and the chunks each took (file offset,
 * in order), thread and process names, sources, devices, their properties
 * and streams, and counter series. Chunk contents (records, their strings,
 * the committed count) live in the shared mapping, so the kernel keeps
 * them when the process dies however it dies; the log is written before
 * the chunk is used. Both are rare events (a chunk is 64 KiB), so the log
 * costs nothing per event. Blocks are reserved with fallocate before they
 * are mapped: a full disk refuses a chunk (counted as a buffer-full drop,
 * one error in the log) instead of raising SIGBUS on a page fault.
 *
 * The chunk pool (thread.c) is part of BASE.spool too: a slot handed to a
 * thread is logged like any chunk (ACT__SP_CHUNK); the drain copies a
 * filled slot whole to archive memory (also in BASE.spool) and only then
 * logs ACT__SP_MOVED, before the slot is handed out again. The rebuild
 * applies the log in order: a chunk's latest place wins, and a reused
 * slot is announced again by its next ACT__SP_CHUNK. A crash between the
 * copy and the log leaves the slot, still whole, where the log says.
 *
 * When the process writes its trace itself, it removes both files. When
 * it did not, record calls act__spool_rebuild (session/rebuild.c: in a
 * child process of its own) to turn them into the trace the process would
 * have written: open spans end at the last moment the process is known to
 * have recorded, and the trace says it was rebuilt ("actraceRecovered").
 *
 * One spool per process: the auto-started session's. A forked child
 * closes its copy of the parent's files and starts its own.
 *
 * The files live in record's directory, checked once and then reached
 * only through its descriptor (act__spool_dir_open, act__spool_dir_check):
 * a directory re-created at the path by someone else is never written.
 */
#ifndef ACT_ENGINE_SPOOL_H
#define ACT_ENGINE_SPOOL_H

#include <stddef.h>
#include <stdint.h>
#include <stdatomic.h>

/* The flag of a process identity (act__proc_id, engine.h; a spool's START
 * record, the light log's) that is a pidfs inode number; without it the
 * identity is a start in clock ticks after boot. Traces carry the first as
 * "actraceProcessId", the second as "actraceProcessStart". */
#define ACT__PROC_ID_PIDFS (INT64_C(1) << 62)

struct act__arg;

/* Log record types in BASE.meta. Payload: u32 nints, u32 nstrs, nints
 * 64-bit integers, then nstrs strings as u32 length + bytes. */
enum {
    ACT__SP_START = 1,  /* pid, start_mono, mono_to_unix, anchor, generic, process
                           identity (act__proc_id)[, a light log's: parent pid, RSS KiB
                           (-1: not sampled), user and system CPU us]; trace name */
    ACT__SP_NAME = 2,   /* id; name */
    ACT__SP_THREAD = 3, /* serial, pid, tid, state offset, its size, layout; comm */
    ACT__SP_CHUNK = 4,  /* serial, offset, size */
    ACT__SP_TNAME = 5,  /* tid, serial, by_plugin; name */
    ACT__SP_PNAME = 6,  /* ; name */
    ACT__SP_SOURCE = 7, /* index, retired; name, backend */
    ACT__SP_DEVICE = 8, /* index, source; name, vendor */
    ACT__SP_PROP = 9,   /* device, kind, value bits; key, string value */
    ACT__SP_STREAM = 10, /* device, stream; name */
    ACT__SP_SERIES = 11, /* id, source, device, has_unit; track, series, unit */
    ACT__SP_STOP = 12,  /* stop_mono */
    ACT__SP_WRITTEN = 13, /* the process wrote its own trace */
    ACT__SP_EXIT = 14,   /* exit status, RSS KiB (-1: not sampled), user and system CPU us (the normal
                            exit of a process that recorded nothing: a light log) */
    ACT__SP_DIST = 15,   /* has rank, rank, has world size, world size, has local rank,
                            local rank; backend: the process's launcher variables at its
                            start (act__dist_env), its trace's distributedInfo */
    ACT__SP_MOVED = 16   /* serial, old offset, new offset: the thread's chunk at the old
                            offset (a pool slot) was copied whole to the new one (the
                            archive), which takes its place in the thread's list; logged
                            after the copy, before the slot is handed out again */
};

/* 1 while this process spools (set by act__spool_open). */
extern _Atomic int act__spooling;

/* Check the record directory @p dir once (absolute; a directory owned by
 * this euid, mode 0700) and hold it as a descriptor; every later use goes
 * through it (spool.c). 0, or -1 after logging why. */
int act__spool_dir_open(const char *dir);
/* The record directory's descriptor after checking that it is still the
 * directory act__spool_dir_open checked (re-opened if the program closed
 * or replaced it), or -1 when it is gone: spooling has then stopped, said
 * once, and nothing may be written there. */
int act__spool_dir_check(void);

/* The light spool of a process that has not recorded yet (lazy start,
 * session/autostart.c): a frame of record's shared light log or, where
 * there is none, BASE.meta, created (0600), with @p len bytes of records
 * already encoded by act__spool_encode, in one write. No chunk memory, no
 * spooling (act__spooling stays 0): act__spool_log appends to it, and a
 * later act__spool_open adds BASE.spool beside it. 0 or -1 (errno set). */
int act__spool_light_open(const char *base, const char *recs, size_t len);
/* Record's shared light log, ACT__LIGHT_LOG in the record directory
 * (created by record, 0600): where a process that has not started its
 * session logs, instead of a BASE.meta of its own. Each write is one
 * frame: u32 ACT__LIGHT_MAGIC, u32 frame length (header included), u32
 * base length, the base (the process's file name without ".meta"), then
 * records as in BASE.meta. O_APPEND keeps frames whole and in order. A
 * process whose session starts later creates BASE.meta with its frames'
 * records first; record reads a base's frames only where no BASE.meta,
 * BASE.spool or BASE.json exists. */
#define ACT__LIGHT_LOG "light.log"
#define ACT__LIGHT_MAGIC 0x4c544341u /* "ACTL" */
#define ACT__LIGHT_FRAME_HEAD 12u

/* Append records already encoded by act__spool_encode (@p len bytes), in
 * one write, to this process's log (BASE.meta or its light-log frame). */
void act__spool_append(const char *recs, size_t len);

/* Encode one log record into @p buf (@p cap bytes); its size, or 0 if it
 * does not fit. */
size_t act__spool_encode(char *buf, size_t cap, uint32_t type, const int64_t *ints,
                         uint32_t nints, const char *const *strs, const size_t *lens,
                         uint32_t nstrs);

/* Open BASE.spool and BASE.meta (created, 0600) in the record directory
 * for this process's session (@p base: a file name there, no '/'); names
 * interned so far are logged. 0 or -1 (errno set). */
int act__spool_open(const char *base);

/* Around a write of the library's own: no SIGXFSZ reaches the program
 * (RLIMIT_FSIZE); the write fails with EFBIG instead. */
#include <signal.h>
typedef struct act__xfsz_guard {
    sigset_t old;
    int active, was_pending;
} act__xfsz_guard;
void act__xfsz_block(act__xfsz_guard *g);
void act__xfsz_unblock(act__xfsz_guard *g);
/* 1 for the first session created after act__spool_open (the
 * auto-started one), 0 for any other: a program's own sessions never
 * spool. */
int act__spool_take(void);
/* Remove both files and stop spooling (the trace was written). */
void act__spool_remove(void);
/* In a forked child: forget the parent's spool without touching it. */
void act__spool_atfork_child(void);

/* @p size bytes of chunk memory backed by the spool file (MAP_SHARED) at
 * file offset *@p off, blocks reserved. NULL on failure (the disk is
 * full: logged once). */
void *act__spool_map(size_t size, uint64_t *off);
/* The same, mapped at @p addr (MAP_FIXED: a range the caller reserved,
 * such as the chunk pool's), or anywhere when @p addr is NULL. */
void *act__spool_map_at(void *addr, size_t size, uint64_t *off);

/* Start writing spool memory at file offset @p off (@p size bytes) to the
 * file, without waiting (the first half of a spill). */
void act__spool_writeback(uint64_t off, size_t size);
/* Write [@p p, @p p + @p size), spool memory at file offset @p off, to the
 * file (waiting for a writeback already started) and drop it from memory;
 * it reads back from the file when touched. 0, or -1 (left in memory). */
int act__spool_spill(void *p, uint64_t off, size_t size);

/* @p size bytes (zero) of spool memory for a small object the rebuild
 * reads (a thread's state: its drop counts), at file offset *@p off; NULL
 * if the spool cannot grow. */
void *act__spool_alloc(size_t size, uint64_t *off);

/* Append one record. Strings may contain any bytes. */
void act__spool_log(uint32_t type, const int64_t *ints, uint32_t nints,
                    const char *const *strs, const size_t *lens, uint32_t nstrs);

/* Shorthands. */
void act__spool_log_name(uint32_t id, const char *s, size_t n);
void act__spool_log_prop(uint32_t device, const struct act__arg *a);

/* act__spool_rebuild flags: write nothing, and return 1, when the process
 * recorded no event (counter samples aside: an image that exec'd before
 * it did anything), or (IDLE) neither an event nor a counter sample. */
#define ACT__SPOOL_SKIP_EMPTY 1u
#define ACT__SPOOL_SKIP_IDLE 2u

struct act_session;
/* A trace writer, as the rebuild calls it: 0, or a negative ACT_E* code
 * with a message in @p err. */
typedef int (*act__trace_writer)(struct act_session *s, const char *path, char *err,
                                 size_t errcap);

/* Build the session of the process that spooled to BASE.* and hand it to
 * @p write with @p out, in a process that records nothing (its thread and
 * process names are replaced by the dead process's). 0, 1 (skipped:
 * ACT__SPOOL_SKIP_EMPTY), 2 (the light log of a process that recorded
 * nothing and exited normally: written, not marked rebuilt), or -1 with a
 * message in @p err. act__spool_rebuild (session/rebuild.c) passes the
 * trace writer. */
int act__spool_read(const char *base, const char *out, unsigned flags, act__trace_writer write,
                    char *err, size_t errlen);

/* What record's merge needs of the light log of a process that recorded
 * nothing (BASE.meta and no BASE.spool; act__spool_light_open): read with
 * act__spool_life_read, with no session and no writer. */
typedef struct act__spool_life {
    int64_t pid, parent, proc_start;   /* proc_start: act__proc_id's, 0 unknown */
    int64_t start_mono, stop_mono, mono_to_unix;
    int64_t rss0_kib, user0_us, sys0_us; /* at the library's load; -1 unknown */
    int have_exit;                     /* ended normally: STOP and EXIT logged */
    int64_t status, rss1_kib, user1_us, sys1_us; /* at exit (have_exit) */
    char name[512];                    /* the process's name, NUL-terminated */
    size_t name_len;                   /* 0: none logged ("pid N" is shown) */
    int has_rank, has_world, has_local; /* distributedInfo, as the writer has it */
    int64_t rank, world, local;
    char backend[256];                 /* "": unknown (cut to 255 bytes, as the writer) */
} act__spool_life;

/* Reads BASE.meta of a light log into @p l, every record bounds-checked:
 * 0; 1 when BASE.spool exists (not a light log: rebuild it); -1 with a
 * message naming the file in @p err (unreadable, no start record, clocks
 * out of range). Exported for the CLI. */
#if defined(__GNUC__)
__attribute__((visibility("default")))
#endif
int act__spool_life_read(const char *base, act__spool_life *l, char *err, size_t errlen);
/* The same, of records already in memory (@p meta, @p mlen bytes: a
 * light-log base's frames, joined); @p label names them in messages. 0 or
 * -1. */
#if defined(__GNUC__)
__attribute__((visibility("default")))
#endif
int act__spool_life_parse(const char *meta, size_t mlen, const char *label, act__spool_life *l,
                          char *err, size_t errlen);

#endif
