// SPDX-License-Identifier: GPL-2.0
/*
 * latlab's flight recorder, in kernel: the events `--trace` attributes spikes from, kept in
 * one overwrite ring per measured CPU that user space maps read-only. One program, attached
 * to every traced tracepoint, copies the tracepoint's record as the kernel laid it out (user
 * space decodes it with the format files, as it decodes tracefs pages) with a time stamp from
 * CLOCK_MONOTONIC (tracefs's `mono` clock). Events on CPUs not measured are not kept.
 *
 * Why not tracefs: an ftrace event costs about twice a BPF program's run on the measured
 * CPU's wake-up path (four events between a timer's expiry and its thread running), which
 * was most of `--trace`'s cost. Only the record's first DATA bytes are kept (the loader
 * refuses an event whose fields lie beyond them); irq_handler_entry's name, a string after
 * the record, is copied in at NAME_AT and its location rewritten to point there. The kernel
 * hands a tracepoint program its record with the first 8 bytes overwritten (a pointer to the
 * registers): the event's type and the task's pid are written back from what the loader
 * said program K is attached to and from the current task. One program per tracepoint, so
 * each knows its event (MAX_EVENTS copies of one body).
 * Built by scripts/build-bpf.sh; the object is committed beside the loader.
 */
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "flight.h"

/* 1 lets the event go on to the tracepoint's other perf events (see sched.bpf.c). */
#define PASS 1

#define barrier() asm volatile("" ::: "memory")

/* Slots of every measured CPU: CPU i's ring is [i * ring, (i + 1) * ring). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1); /* set by the loader */
	__type(key, __u32);
	__type(value, struct slot);
} slots SEC(".maps");

/* Each measured CPU's count of events written (the next slot is head % ring). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1); /* set by the loader */
	__type(key, __u32);
	__type(value, struct head);
} heads SEC(".maps");

/* By CPU number: its ring's index + 1, or 0 for a CPU not measured. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_CPUS);
	__type(key, __u32);
	__type(value, __u32);
} rings SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct config);
} settings SEC(".maps");

static __always_inline int record(void *ctx, __u32 k)
{
	__u32 cpu = bpf_get_smp_processor_id(), zero = 0;
	__u32 *ring = bpf_map_lookup_elem(&rings, &cpu);
	if (!ring || !*ring)
		return PASS;
	__u32 r = *ring - 1;
	struct config *c = bpf_map_lookup_elem(&settings, &zero);
	struct head *h = bpf_map_lookup_elem(&heads, &r);
	if (!c || !h || !c->ring)
		return PASS;
	/* Atomic: a program run from an interrupt on this CPU takes the next slot. The time is
	 * taken after: an interrupting event's slot comes later and its time may be earlier, but
	 * this slot stays unpublished until both are written, so the reader, which stops at the
	 * first unpublished slot, reads the two together and sorts them. */
	__u64 n = __sync_fetch_and_add(&h->head, 1);
	__u64 ts = bpf_ktime_get_ns();
	__u32 key = r * c->ring + (__u32)(n & (c->ring - 1));
	struct slot *s = bpf_map_lookup_elem(&slots, &key);
	if (!s)
		return PASS;
	/* A seqlock per slot: 0 while it is written, then its event's number + 1. */
	s->seq = 0;
	barrier();
	s->ts = ts;
	/* Only the record's own bytes: a short event writes a slot's first cache line alone. */
	__u32 len = c->lens[k & (MAX_EVENTS - 1)];
	if (len > DATA || len < 8)
		len = DATA;
	if (bpf_probe_read_kernel(s->data, len, ctx))
		__builtin_memset(s->data, 0, DATA);
	*(__u32 *)s->data = (__u16)c->types[k & (MAX_EVENTS - 1)];
	*(__u32 *)(s->data + 4) = (__u32)bpf_get_current_pid_tgid();
	if (k + 1 == c->irq_entry && c->name_loc < NAME_AT) {
		__u32 off = c->name_loc;
		__u32 loc = 0;
		bpf_probe_read_kernel(&loc, sizeof(loc), (char *)ctx + off);
		bpf_probe_read_kernel_str(s->data + NAME_AT, DATA - NAME_AT,
					  (char *)ctx + (loc & 0xffff));
		loc = ((__u32)(DATA - NAME_AT) << 16) | NAME_AT;
		if (off <= NAME_AT - sizeof(loc))
			__builtin_memcpy(s->data + (off & (NAME_AT - 1)), &loc, sizeof(loc));
	}
	barrier();
	s->seq = n + 1;
	return PASS;
}

#define PROGRAM(k) SEC("tracepoint") int latlab_fl_##k(void *ctx) { return record(ctx, k); }
PROGRAM(0) PROGRAM(1) PROGRAM(2) PROGRAM(3)
PROGRAM(4) PROGRAM(5) PROGRAM(6) PROGRAM(7)
PROGRAM(8) PROGRAM(9) PROGRAM(10) PROGRAM(11)
PROGRAM(12) PROGRAM(13) PROGRAM(14) PROGRAM(15)
PROGRAM(16) PROGRAM(17) PROGRAM(18) PROGRAM(19)
PROGRAM(20) PROGRAM(21) PROGRAM(22) PROGRAM(23)
PROGRAM(24) PROGRAM(25) PROGRAM(26) PROGRAM(27)
PROGRAM(28) PROGRAM(29) PROGRAM(30) PROGRAM(31)

char LICENSE[] SEC("license") = "GPL";
