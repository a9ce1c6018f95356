/* SPDX-License-Identifier: MIT */
/*
 * dynolog's IPC fabric, the local protocol between the dynolog daemon and
 * the processes it traces on demand, as dynolog (dynolog/src/ipcfabric)
 * and Kineto (libkineto/src/IpcFabricConfigClient.cpp) speak it. Written
 * from their description; used by the library's poller (ondemand.c) and by
 * `actrace trigger --serve`, which plays the daemon (compiled into both).
 *
 * Transport: UNIX datagram sockets. Each side binds a name of its own: the
 * daemon "dynolog", each client a unique one (Kineto: "dynoconfigclient"
 * and a UUID). Names are abstract (sun_path[0] = '\0') and the address
 * length counts one more '\0' after the name: "\0dynolog\0", length
 * sizeof(sa_family_t) + 7 + 2 = 11. An address of another length is another
 * name, and a reply sent to it never arrives. With KINETO_IPC_SOCKET_DIR
 * set, names are files in that directory instead ("DIR/dynolog").
 *
 * Message: a 40-byte header {uint64 size; char type[32]} (native byte
 * order: a host-local protocol) and `size` bytes of payload, in one
 * datagram.
 *
 * Poll (client -> daemon), type "req": {int32 config type; int32 n;
 * int64 job id; int32 pids[n]}, 16 + 4n bytes. The config type is a bit
 * set: 1 event profiler, 2 activity profiler; Kineto sends 0 for
 * activities while its own trace runs, so that the daemon keeps a pending
 * request instead of handing it over. The job id is SLURM_JOB_ID, else 0.
 * pids: the process, then its ancestors while they are > 1, at most 10.
 * The first poll registers the process with the daemon; the daemon forgets
 * one silent for 60 s. Kineto polls every 5 s.
 *
 * Reply (daemon -> client), type "req": the config text (Kineto's
 * KEY=VALUE lines), or an empty payload when there is nothing to do.
 */
#ifndef ACT_ONDEMAND_DYNO_IPC_H
#define ACT_ONDEMAND_DYNO_IPC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#define ACT__DYNO_TYPE_LEN 32
#define ACT__DYNO_HDR_LEN 40
#define ACT__DYNO_DAEMON "dynolog"
#define ACT__DYNO_REQ "req"
#define ACT__DYNO_CFG_EVENTS 1
#define ACT__DYNO_CFG_ACTIVITIES 2
#define ACT__DYNO_MAX_PIDS 11           /* the process and 10 ancestors */
#define ACT__DYNO_MAX_MSG (1u << 20)    /* larger datagrams are dropped */
#define ACT__DYNO_POLL_LEN(n) (16 + 4 * (size_t)(n))

/** One received message. */
typedef struct act__dyno_msg {
    char type[ACT__DYNO_TYPE_LEN + 1];
    char *data;    /**< malloc'd payload with a '\0' after it */
    size_t len;    /**< payload bytes */
    char src[108]; /**< the sender's name ("" when it had none) */
    int has_cred;  /**< uid/pid below are the kernel's word */
    uid_t uid;
    pid_t pid;
} act__dyno_msg;

/** The address of endpoint @p name; 0, or -ENAMETOOLONG. */
int act__dyno_addr(const char *name, struct sockaddr_un *addr, socklen_t *len);

/** A datagram socket bound to @p name (close-on-exec, non-blocking, with
 *  the senders' credentials on every message). fd, or -errno. */
int act__dyno_bind(const char *name);

/** Close @p fd; in the directory mode also remove its file. */
void act__dyno_unbind(int fd, const char *name);

/** Send one message to endpoint @p dest. 0, or -errno (ECONNREFUSED or
 *  ENOENT: nobody is bound there). */
int act__dyno_send(int fd, const char *dest, const char *type, const void *payload, size_t len);

/**
 * Wait up to @p timeout_ms (0: do not wait) for one message.
 * @return 1 with @p m filled (free it with act__dyno_msg_free), 0 if none
 *         came, -EBADMSG for a datagram whose header does not match its
 *         length, -EMSGSIZE for one over ACT__DYNO_MAX_MSG (both consumed),
 *         or another -errno.
 */
int act__dyno_recv(int fd, int timeout_ms, act__dyno_msg *m);
void act__dyno_msg_free(act__dyno_msg *m);

/** Encode a poll payload into @p buf (ACT__DYNO_POLL_LEN(n) bytes). */
size_t act__dyno_poll_encode(unsigned char *buf, int32_t type, int64_t job, const int32_t *pids,
                             int n);

/** Decode a poll payload; @p pids has room for ACT__DYNO_MAX_PIDS (more
 *  are not kept; *npids is the count kept). 0, or -EBADMSG. */
int act__dyno_poll_decode(const void *payload, size_t len, int32_t *type, int64_t *job,
                          int32_t *pids, int *npids);

#endif
