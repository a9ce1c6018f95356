/* SPDX-License-Identifier: MIT */
/*
 * Stand-in for a vendor plugin built out of tree with the installed
 * act_add_plugin(): it only needs the actrace headers on its include path
 * and must link with no undefined symbols. It does not implement the plugin
 * ABI; tests/install only checks how plugins are built and installed.
 */
#include <actrace/version.h>

__attribute__((visibility("default"))) unsigned consumer_plugin_abi(void);

unsigned consumer_plugin_abi(void) { return (unsigned)ACT_VERSION_HEX; }
