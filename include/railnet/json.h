/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one JSON string writer of railnet's outputs (RAILNET_STATS, railnet-doctor --json,
 * railnet-preflight --json): s quoted, '"' and '\\' escaped, control bytes as \u00XX; other
 * bytes as they are (the texts are ASCII or UTF-8). NULL writes "".
 */
#ifndef RAILNET_JSON_H
#define RAILNET_JSON_H

#include <stdio.h>

void rn_json_str(FILE *o, const char *s);

#endif /* RAILNET_JSON_H */
