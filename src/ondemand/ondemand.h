/* SPDX-License-Identifier: MIT */
/*
 * On-demand tracing (ondemand.c, docs/on-demand.md): the hooks the rest of
 * the library calls.
 */
#ifndef ACT_ONDEMAND_ONDEMAND_H
#define ACT_ONDEMAND_ONDEMAND_H

#include <stdint.h>

/* Called by every act_step(), first: counts the process's steps (an
 * iteration request counts its start from here, as Kineto does) and opens
 * or closes the window of an on-demand iteration request at that step
 * boundary. Costs an atomic add and a load when no such window waits. */
void act__ondemand_step(void);

#endif
