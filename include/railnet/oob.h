/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Out-of-band TCP: choosing the bootstrap interface, listening on it, and the non-blocking
 * handshake of wire.h (HELLO both ways, then READY) that connect and accept drive. Nothing
 * here blocks: every call does what the sockets allow and returns -EAGAIN to be called again,
 * so one thread may drive a connector and an acceptor alternately. Nothing here reads the
 * environment: callers pass NCCL_SOCKET_IFNAME and RAILNET_CONNECT_TIMEOUT from rn_config.
 * Objects are not thread-safe; each is driven by one thread at a time (NCCL's proxy thread).
 *
 * Every error is returned as -errno after one WARN naming the peer and the reason; all fds
 * are closed on every failure path, and destroy is valid in every state.
 */
#ifndef RAILNET_OOB_H
#define RAILNET_OOB_H

#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "railnet/wire.h"

/* One address of one interface, as getifaddrs reports it (input of the pure selection). */
struct rn_oob_if {
	char name[IF_NAMESIZE];
	int family;	  /* AF_INET or AF_INET6 */
	uint8_t addr[16]; /* network order; IPv4 in the first 4 bytes */
	uint32_t scope_id;
	bool up;
	bool loopback;
};

/*
 * Pure interface choice over ifs[0..n). spec is NCCL_SOCKET_IFNAME ("" or NULL: unset):
 * comma-separated name prefixes, exact names after a leading '=', excluded after a leading
 * '^' (a ":port" suffix of an entry is ignored). route_if (NULL or "": none) names the default
 * route's interface. Only up interfaces count; IPv6 link-local addresses are skipped.
 * With a spec: the first matching address, IPv4 before IPv6 (loopback allowed if it matches).
 * Without: the default route's interface, else the first non-loopback interface, else
 * loopback. Returns 0 and the index, or -ENODEV with a reason that names what is there.
 */
int rn_oob_if_select(const struct rn_oob_if *ifs, size_t n, const char *spec, const char *route_if,
		     size_t *idx, char *why, size_t why_len);

/*
 * Name of the interface of the lowest-metric default route in a /proc/net/route
 * (ipv6 = false) or /proc/net/ipv6_route (ipv6 = true) file. Returns 0; -ENOENT when the
 * file has no up default route; -errno when it cannot be read.
 */
int rn_oob_route_if(const char *path, bool ipv6, char name[IF_NAMESIZE]);

/* getifaddrs + the default route + rn_oob_if_select. WARNs once and returns -ENODEV. */
int rn_oob_if_find(const char *spec, struct rn_oob_if *out);
/* The same without a WARN: the reason goes to why (the doctor's bootstrap check). */
int rn_oob_if_find_why(const char *spec, struct rn_oob_if *out, char *why, size_t why_len);

struct rn_oob_listener;

/*
 * Listen on an ephemeral TCP port bound to iface's address and write the handle
 * (RN_WIRE_HANDLE_BUF bytes: the encoded rn_wire_handle, then zeros) into handle.
 * The listener serves any number of accepts (rn_oob_accept_create), one at a time; the
 * connections it accepts wait in its lobby until they have sent a whole valid HELLO.
 */
int rn_oob_listen(const struct rn_oob_if *iface, void *handle, struct rn_oob_listener **out);
/* The same, announcing the listening device's port count (0..RN_WIRE_MAX_PORTS) in the
 * handle, so the connector can size its QPs by both ends. */
int rn_oob_listen_ports(const struct rn_oob_if *iface, int nports, void *handle,
			struct rn_oob_listener **out);
/* Connections this listener dropped as strays, in all. */
unsigned long rn_oob_listener_strays(const struct rn_oob_listener *l);
/*
 * Close the listening socket and the lobby's connections, and free. NULL is fine. Must outlive
 * an acceptor that has not reached RN_OOB_RECV_HELLO yet (it takes its peer from the lobby).
 */
void rn_oob_listener_destroy(struct rn_oob_listener *l);

enum rn_oob_state {
	/* connector */
	RN_OOB_CONNECTING, /* TCP connect in progress */
	RN_OOB_SEND_HELLO, /* our HELLO, partially written */
	RN_OOB_RECV_HELLO, /* the peer's HELLO, partially read (both roles) */
	RN_OOB_SEND_READY, /* connector: READY, partially written */
	/* acceptor */
	RN_OOB_ACCEPTING,   /* no connection yet */
	RN_OOB_REPLY_HELLO, /* acceptor: our HELLO, partially written */
	RN_OOB_RECV_READY,  /* acceptor: the connector's READY, partially read */
	RN_OOB_DONE,
	RN_OOB_FAILED,
};

/*
 * Called once, when the peer's HELLO has arrived and been validated (nonce included).
 * The acceptor fills `local` (its reply: QPs created for the peer's ports); the connector
 * may only inspect (its HELLO is already sent) and bring its QPs to RTS before READY goes.
 * Returns 0; -EAGAIN to be called again at the next progress; another -errno fails the
 * handshake, with a reason in why that the WARN carries.
 */
typedef int (*rn_oob_peer_hello_fn)(void *arg, const struct rn_hello *peer, struct rn_hello *local,
				    char *why, size_t why_len);

struct rn_oob_params {
	long timeout_ms;		 /* > 0: RAILNET_CONNECT_TIMEOUT x 1000; tests pass less */
	rn_oob_peer_hello_fn peer_hello; /* NULL: accept the peer as it is */
	void *arg;
	int sockbuf; /* > 0: SO_SNDBUF/SO_RCVBUF of the connection (a test seam to force
		      * partial reads and writes); 0: the kernel's default */
};

struct rn_oob_conn;

/*
 * Start a connector to the handle's listener (handle_len bytes, at least the encoded
 * handle; the rest of NCCL's buffer is ignored). local is copied; its nonce is overwritten
 * with the handle's. The deadline starts now. Returns 0 (and the first progress is left to
 * the caller); -EPROTO/-EBADMSG for a bad handle; -EINVAL; -ENOMEM; -errno from socket()
 * or from a connect() that fails at once (-ECONNREFUSED on loopback). *out is set only on 0.
 */
int rn_oob_connect_create(const void *handle, size_t handle_len, const struct rn_hello *local,
			  const struct rn_oob_params *params, struct rn_oob_conn **out);
/*
 * Start the acceptor of l. local is copied (the peer_hello hook may still change it); its
 * nonce is set to the listener's. The deadline (params->timeout_ms) starts now, at the first
 * accept call: a listener nobody connects to fails with -ETIMEDOUT then. A connection whose
 * first message is not a HELLO with the listener's nonce, or that sends none within 2 s, is a
 * stray: it is closed, counted in one WARN per listener per 10 s (which never shows a nonce),
 * and accepting resumes. Once a valid HELLO arrived the rest of the handshake has a full
 * timeout_ms.
 */
int rn_oob_accept_create(struct rn_oob_listener *l, const struct rn_hello *local,
			 const struct rn_oob_params *params, struct rn_oob_conn **out);

/*
 * Advance as far as the socket allows. Returns 0 once DONE (the socket stays open until
 * rn_oob_conn_take_fd or destroy: the comm keeps it to notice the peer's death), -EAGAIN
 * when it must be called again, or -errno when FAILED
 * (-ETIMEDOUT after the deadline, -ECONNREFUSED, -ECONNRESET, -EPROTO, -EBADMSG, ...); the
 * socket is closed and later calls return the same error.
 */
int rn_oob_conn_progress(struct rn_oob_conn *c);
enum rn_oob_state rn_oob_conn_state(const struct rn_oob_conn *c);
/* The peer's HELLO: valid once the state is past RN_OOB_RECV_HELLO (and at DONE). */
const struct rn_hello *rn_oob_conn_peer(const struct rn_oob_conn *c);
/*
 * Hand over the socket of a DONE handshake (the caller closes it): nothing more is sent on it,
 * and its EOF or reset says the peer process is gone. -1 when not DONE or already taken.
 */
int rn_oob_conn_take_fd(struct rn_oob_conn *c);
/* Close the socket if open and free. NULL is fine. */
void rn_oob_conn_destroy(struct rn_oob_conn *c);

#endif /* RAILNET_OOB_H */
