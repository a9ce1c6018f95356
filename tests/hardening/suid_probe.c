/* SPDX-License-Identifier: MIT */
/*
 * A small program linked with libactrace for the setuid test
 * (test_setuid.c): it prints its effective uid, then creates, starts,
 * stops and destroys a session, which reads the config, the plugin list
 * and the log level from the environment unless the process runs in
 * secure mode (setuid): then those variables must be ignored.
 */
#include <stdio.h>
#include <unistd.h>

#include <actrace/actrace.h>

int main(void)
{
    printf("euid=%d uid=%d\n", (int)geteuid(), (int)getuid());
    fflush(stdout);
    act_session *s = NULL;
    if (act_session_create(NULL, &s) == 0) {
        act_session_start(s);
        act_session_stop(s);
        act_session_destroy(s);
    }
    return 0;
}
