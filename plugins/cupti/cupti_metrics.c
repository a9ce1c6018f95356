/* SPDX-License-Identifier: MIT */
/*
 * actrace-cupti-metrics: PM sampling metrics of an NVIDIA chip, from
 * CUPTI's profiler host API, which needs no GPU.
 *
 *   actrace-cupti-metrics --chip GH100              list base metrics
 *   actrace-cupti-metrics --chip GH100 --check M,M  validate a metric set
 *   actrace-cupti-metrics --chips                   chips this CUPTI knows
 *
 * --check answers what PM_COUNTER_METRICS would get: unknown names with
 * the chip's list, sets that need more than one pass with the names to
 * drop, else the units. Exit status: 0 fine, 1 refused, 2 usage or no
 * libcupti.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cupti_api.h"
#include "cupti_pm.h"

static void print_metric(void *u, const char *name, const char *desc,
                         const char *unit)
{
    (void)u;
    printf("%-60s %-14s %s\n", name, *unit ? unit : "-", desc);
}

static int usage(void)
{
    fprintf(stderr, "usage: actrace-cupti-metrics --chip CHIP [--check "
                    "METRIC[,METRIC...]]\n"
                    "       actrace-cupti-metrics --chips\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *chip = NULL, *check = NULL;
    int chips = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--chip") && i + 1 < argc)
            chip = argv[++i];
        else if (!strcmp(argv[i], "--check") && i + 1 < argc)
            check = argv[++i];
        else if (!strcmp(argv[i], "--chips"))
            chips = 1;
        else
            return usage();
    }
    if (!chip && !chips)
        return usage();
    cu_cupti api;
    char why[512];
    if (cu_cupti_load(&api, why, sizeof why) != 0) {
        fprintf(stderr, "actrace-cupti-metrics: no CUPTI library (%s)\n", why);
        return 2;
    }
    if (chips) {
        CUpti_Profiler_Host_GetSupportedChips_Params p;
        memset(&p, 0, sizeof p);
        p.structSize = CUpti_Profiler_Host_GetSupportedChips_Params_STRUCT_SIZE;
        if (!api.ProfilerHostGetSupportedChips ||
            api.ProfilerHostGetSupportedChips(&p) != CUPTI_SUCCESS) {
            fprintf(stderr, "actrace-cupti-metrics: cannot list chips\n");
            return 2;
        }
        for (size_t i = 0; i < p.numChips; i++)
            printf("%s\n", p.ppChipNames[i]);
        return 0;
    }
    char msg[70000];
    if (check) {
        if (cp_pm_check(&api, chip, check, NULL, NULL, NULL, msg,
                        sizeof msg) != 0) {
            fprintf(stderr, "actrace-cupti-metrics: %s\n", msg);
            return 1;
        }
        printf("%s: %s\n", chip, msg);
        char list[4096];
        snprintf(list, sizeof list, "%s", check);
        for (char *save = NULL, *t = strtok_r(list, ", ", &save); t;
             t = strtok_r(NULL, ", ", &save)) {
            char unit[64];
            if (cp_pm_unit(&api, chip, t, unit, sizeof unit) != 0)
                snprintf(unit, sizeof unit, "?");
            printf("%-60s %s\n", t, *unit ? unit : "-");
        }
        return 0;
    }
    int n = cp_pm_list(&api, chip, print_metric, NULL, msg, sizeof msg);
    if (n < 0) {
        fprintf(stderr, "actrace-cupti-metrics: %s\n", msg);
        return 1;
    }
    return 0;
}
