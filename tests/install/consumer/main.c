/* SPDX-License-Identifier: MIT */
/*
 * A program built against an installed actrace (tests/install): found with
 * find_package(actrace) or pkg-config. It checks that the headers and the
 * library it was linked with agree, and prints the version.
 */
#include <stdio.h>
#include <string.h>

#include <actrace/actrace.h>

int main(void)
{
    const char *v = act_version();
    if (strcmp(v, ACT_VERSION_STRING) != 0 ||
        act_version_hex() != (unsigned)ACT_VERSION_HEX) {
        fprintf(stderr, "consumer: headers say %s, library says %s\n",
                ACT_VERSION_STRING, v);
        return 1;
    }
    if (strcmp(act_err_name(ACT_EINVAL), "EINVAL") != 0) {
        fprintf(stderr, "consumer: act_err_name(ACT_EINVAL) = %s\n",
                act_err_name(ACT_EINVAL));
        return 1;
    }
    printf("consumer: actrace %s ok\n", v);
    return 0;
}
