/* SPDX-License-Identifier: GPL-2.0 */
/* What flight.bpf.c shares with user space (crates/trace/src/bpf/flight.rs reads these
 * layouts by offset). */
#ifndef LATLAB_FLIGHT_H
#define LATLAB_FLIGHT_H

#define DATA 80     /* bytes of a tracepoint's record kept */
#define NAME_AT 64  /* where irq_handler_entry's name is copied (a power of two) */
#define MAX_CPUS 4096
#define MAX_EVENTS 32 /* tracepoints traced at most: one program each */

/* One event: `seq` is 0 while the slot is written, then the event's number + 1 (its index
 * in its CPU's sequence); `data` the tracepoint's record from its common header on. */
struct slot {
	__u64 seq;
	__u64 ts;
	__u8 data[DATA];
	__u8 pad[128 - 16 - DATA]; /* a slot is two whole cache lines: a short event writes one */
};

/* A CPU's count of events written, alone on its cache line. */
struct head {
	__u64 head;
	__u64 pad[7];
};

struct config {
	__u32 ring;      /* slots per CPU, a power of two */
	__u32 irq_entry; /* the program attached to irq_handler_entry + 1 (0: none) */
	__u32 name_loc;  /* offset of its name's __data_loc */
	__u32 pad;
	__u32 types[MAX_EVENTS]; /* by program: its tracepoint's event id (common_type) */
	__u32 lens[MAX_EVENTS];  /* and the bytes of its record to copy (<= DATA) */
};

#endif
