/* SPDX-License-Identifier: MIT */
/*
 * dynolog's IPC fabric: addresses, one message out, one message in, the
 * poll payload (dyno_ipc.h has the protocol).
 */
#include "ondemand/dyno_ipc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

static const char *socket_dir(void)
{
    const char *d = secure_getenv("KINETO_IPC_SOCKET_DIR");
    return d && *d ? d : NULL;
}

int act__dyno_addr(const char *name, struct sockaddr_un *addr, socklen_t *len)
{
    memset(addr, 0, sizeof *addr);
    addr->sun_family = AF_UNIX;
    size_t n = strlen(name);
    const char *dir = socket_dir();
    if (dir) {
        size_t dn = strlen(dir);
        if (dn + 1 + n + 1 > sizeof addr->sun_path)
            return -ENAMETOOLONG;
        memcpy(addr->sun_path, dir, dn);
        addr->sun_path[dn] = '/';
        memcpy(addr->sun_path + dn + 1, name, n + 1);
        *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + dn + 1 + n + 1);
        return 0;
    }
    /* "\0name\0": the length counts both NULs, as dynolog's endpoints do. */
    if (n + 2 > sizeof addr->sun_path)
        return -ENAMETOOLONG;
    memcpy(addr->sun_path + 1, name, n);
    *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 2);
    return 0;
}

int act__dyno_bind(const char *name)
{
    struct sockaddr_un a;
    socklen_t alen;
    int rc = act__dyno_addr(name, &a, &alen);
    if (rc)
        return rc;
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -errno;
    int on = 1;
    setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof on);
    if (a.sun_path[0])
        unlink(a.sun_path); /* a stale file of an endpoint that died */
    if (bind(fd, (struct sockaddr *)&a, alen) != 0) {
        rc = -errno;
        close(fd);
        return rc;
    }
    return fd;
}

void act__dyno_unbind(int fd, const char *name)
{
    if (fd < 0)
        return;
    close(fd);
    struct sockaddr_un a;
    socklen_t alen;
    if (act__dyno_addr(name, &a, &alen) == 0 && a.sun_path[0])
        unlink(a.sun_path);
}

int act__dyno_send(int fd, const char *dest, const char *type, const void *payload, size_t len)
{
    struct sockaddr_un a;
    socklen_t alen;
    int rc = act__dyno_addr(dest, &a, &alen);
    if (rc)
        return rc;
    unsigned char hdr[ACT__DYNO_HDR_LEN];
    memset(hdr, 0, sizeof hdr);
    uint64_t size = len;
    memcpy(hdr, &size, 8);
    size_t tn = strlen(type);
    memcpy(hdr + 8, type, tn < ACT__DYNO_TYPE_LEN - 1 ? tn : ACT__DYNO_TYPE_LEN - 1);
    struct iovec iov[2] = {{hdr, sizeof hdr}, {(void *)payload, len}};
    struct msghdr mh;
    memset(&mh, 0, sizeof mh);
    mh.msg_name = &a;
    mh.msg_namelen = alen;
    mh.msg_iov = iov;
    mh.msg_iovlen = len ? 2 : 1;
    ssize_t w;
    do
        w = sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
    while (w < 0 && errno == EINTR);
    return w < 0 ? -errno : 0;
}

void act__dyno_msg_free(act__dyno_msg *m)
{
    if (m) {
        free(m->data);
        m->data = NULL;
    }
}

/* The endpoint name of a sender's address ("" for an unnamed socket). */
static void sender_name(const struct sockaddr_un *a, socklen_t alen, char *out, size_t cap)
{
    out[0] = '\0';
    size_t off = offsetof(struct sockaddr_un, sun_path);
    if (alen <= off)
        return;
    size_t n = alen - off;
    const char *p = a->sun_path;
    if (p[0] == '\0') {
        p++;
        n--;
    } else {
        n = strnlen(p, n);
        const char *dir = socket_dir();
        size_t dn = dir ? strlen(dir) : 0;
        if (dir && n > dn && strncmp(p, dir, dn) == 0 && p[dn] == '/') {
            p += dn + 1;
            n -= dn + 1;
        }
    }
    while (n > 0 && p[n - 1] == '\0')
        n--;
    if (n >= cap)
        n = cap - 1;
    memcpy(out, p, n);
    out[n] = '\0';
}

int act__dyno_recv(int fd, int timeout_ms, act__dyno_msg *m)
{
    memset(m, 0, sizeof *m);
    struct pollfd pfd = {fd, POLLIN, 0};
    int pr;
    do
        pr = poll(&pfd, 1, timeout_ms);
    while (pr < 0 && errno == EINTR);
    if (pr < 0)
        return -errno;
    if (pr == 0)
        return 0;
    ssize_t full;
    do
        full = recv(fd, NULL, 0, MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);
    while (full < 0 && errno == EINTR);
    if (full < 0)
        return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
    size_t cap = (size_t)full;
    if (cap > ACT__DYNO_HDR_LEN + ACT__DYNO_MAX_MSG)
        cap = 0; /* read nothing of it: it is dropped below */
    unsigned char *buf = malloc(cap + 1);
    if (!buf) {
        recv(fd, NULL, 0, MSG_DONTWAIT); /* drop it: never stay readable */
        return -ENOMEM;
    }
    struct sockaddr_un a;
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(sizeof(struct ucred))];
    } ctl;
    struct iovec iov = {buf, cap};
    struct msghdr mh;
    memset(&mh, 0, sizeof mh);
    mh.msg_name = &a;
    mh.msg_namelen = sizeof a;
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctl.b;
    mh.msg_controllen = sizeof ctl.b;
    ssize_t n;
    do
        n = recvmsg(fd, &mh, MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        int e = errno;
        free(buf);
        return e == EAGAIN || e == EWOULDBLOCK ? 0 : -e;
    }
    if (cap == 0 && full > 0) {
        free(buf);
        return -EMSGSIZE;
    }
    uint64_t size;
    if ((size_t)n < ACT__DYNO_HDR_LEN || (mh.msg_flags & MSG_TRUNC) ||
        (memcpy(&size, buf, 8), size != (uint64_t)n - ACT__DYNO_HDR_LEN)) {
        free(buf);
        return -EBADMSG;
    }
    memcpy(m->type, buf + 8, ACT__DYNO_TYPE_LEN);
    m->type[ACT__DYNO_TYPE_LEN] = '\0';
    m->len = (size_t)size;
    memmove(buf, buf + ACT__DYNO_HDR_LEN, m->len);
    buf[m->len] = '\0';
    m->data = (char *)buf;
    sender_name(&a, mh.msg_namelen, m->src, sizeof m->src);
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS &&
            c->cmsg_len >= CMSG_LEN(sizeof(struct ucred))) {
            struct ucred cr;
            memcpy(&cr, CMSG_DATA(c), sizeof cr);
            m->has_cred = 1;
            m->uid = cr.uid;
            m->pid = cr.pid;
        }
    }
    return 1;
}

size_t act__dyno_poll_encode(unsigned char *buf, int32_t type, int64_t job, const int32_t *pids,
                             int n)
{
    int32_t n32 = n;
    memcpy(buf, &type, 4);
    memcpy(buf + 4, &n32, 4);
    memcpy(buf + 8, &job, 8);
    memcpy(buf + 16, pids, 4 * (size_t)n);
    return ACT__DYNO_POLL_LEN(n);
}

int act__dyno_poll_decode(const void *payload, size_t len, int32_t *type, int64_t *job,
                          int32_t *pids, int *npids)
{
    const unsigned char *p = payload;
    int32_t n;
    if (len < 16)
        return -EBADMSG;
    memcpy(type, p, 4);
    memcpy(&n, p + 4, 4);
    memcpy(job, p + 8, 8);
    if (n < 1 || (size_t)n > (len - 16) / 4 || ACT__DYNO_POLL_LEN(n) != len)
        return -EBADMSG;
    int keep = n < ACT__DYNO_MAX_PIDS ? n : ACT__DYNO_MAX_PIDS;
    memcpy(pids, p + 16, 4 * (size_t)keep);
    *npids = keep;
    return 0;
}
