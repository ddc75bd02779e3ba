/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Umbrella for railnet's own transcription of the NCCL net plugin ABI, versions v6 … v12
 * (shared/reference/nccl-net-api.md §1). Only src/plugin.c, the ABI tests and the loader
 * check include it; the core speaks struct rn_props and -errno (include/railnet/net.h).
 * Layouts are x86-64 LP64 facts, each checked by a _Static_assert in the version header.
 */
#ifndef RN_NCCL_NET_H
#define RN_NCCL_NET_H

#include "net_common.h"
#include "net_v6.h"
#include "net_v7.h"
#include "net_v8.h"
#include "net_v9.h"
#include "net_v10.h"
#include "net_v11.h"
#include "net_v12.h"

/* The newest version railnet implements; older tables are adapters onto it. */
#define RN_NCCL_NET_NEWEST 12
#define RN_NCCL_NET_OLDEST 6

#endif /* RN_NCCL_NET_H */
