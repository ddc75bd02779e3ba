/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one conversion of railnet's errors into NCCL's (src/plugin.c; the table of which errno
 * becomes which ncclResult_t is the comment above its definition, net.h lists who returns
 * what). This is the one header besides plugin.c that includes nccl_headers/, so that the
 * conversion can be tested as a table (test/unit/test_nccl_result.c); the plugin exports none
 * of it (hidden visibility, src/railnet.map).
 */
#ifndef RAILNET_NCCL_RESULT_H
#define RAILNET_NCCL_RESULT_H

#include "nccl_net.h"

/* rc: 0 or a negative errno from net.c. Pure; any thread. */
ncclResult_t rn_nccl_result(int rc);

#endif /* RAILNET_NCCL_RESULT_H */
