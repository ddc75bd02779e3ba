// SPDX-License-Identifier: Apache-2.0
/*
 * The required libibverbs names, all aliases of one empty function, in a library linked
 * without libc and without a version script: it has no version information at all (no
 * DT_VERSYM), the one case in which glibc's dlvsym accepts any version. verbs.c must still
 * refuse it. Nothing here is ever called.
 */
static void fake_bare(void)
{
}

void ibv_get_device_list(void) __attribute__((alias("fake_bare")));
void ibv_free_device_list(void) __attribute__((alias("fake_bare")));
void ibv_get_device_name(void) __attribute__((alias("fake_bare")));
void ibv_open_device(void) __attribute__((alias("fake_bare")));
void ibv_close_device(void) __attribute__((alias("fake_bare")));
void ibv_get_async_event(void) __attribute__((alias("fake_bare")));
void ibv_ack_async_event(void) __attribute__((alias("fake_bare")));
void ibv_query_device(void) __attribute__((alias("fake_bare")));
void ibv_query_port(void) __attribute__((alias("fake_bare")));
void ibv_query_gid(void) __attribute__((alias("fake_bare")));
void ibv_query_pkey(void) __attribute__((alias("fake_bare")));
void ibv_query_qp(void) __attribute__((alias("fake_bare")));
void ibv_alloc_pd(void) __attribute__((alias("fake_bare")));
void ibv_dealloc_pd(void) __attribute__((alias("fake_bare")));
void ibv_reg_mr(void) __attribute__((alias("fake_bare")));
void ibv_dereg_mr(void) __attribute__((alias("fake_bare")));
void ibv_create_cq(void) __attribute__((alias("fake_bare")));
void ibv_destroy_cq(void) __attribute__((alias("fake_bare")));
void ibv_create_qp(void) __attribute__((alias("fake_bare")));
void ibv_modify_qp(void) __attribute__((alias("fake_bare")));
void ibv_destroy_qp(void) __attribute__((alias("fake_bare")));
void ibv_fork_init(void) __attribute__((alias("fake_bare")));
void ibv_event_type_str(void) __attribute__((alias("fake_bare")));
void ibv_wc_status_str(void) __attribute__((alias("fake_bare")));
