// SPDX-License-Identifier: GPL-2.0
/*
 * latlab sched, in kernel: every task's wake-up latency (sched_waking -> switched in) and
 * preemption delay (switched out runnable -> back in), counted exactly, with log-linear
 * histograms, exact maxima, run time, CPUs and wakers, aggregated here so that user space
 * reads maps, not events. A task that exits leaves the table through the `exits` ring; a
 * delay at or over the threshold is sent through `spikes` with the tasks its CPU ran while
 * it waited (the CPU's last RING switches). Built by scripts/build-bpf.sh; the object is
 * committed beside the loader (crates/trace/src/bpf/).
 *
 * Only classic tracepoints whose layouts have not changed since 4.x are used
 * (sched_switch, sched_waking, sched_wakeup_new, sched_process_exit; irq_handler_entry and
 * _exit, softirq_entry and _exit, whose first field is the IRQ or the vector; hrtimer_expire_entry
 * and _exit, whose fields are not read): no BTF of the
 * kernel is needed, so the same object loads on 6.1 and 6.18.
 */
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "sched.h"

/* prev_state bits of a task's last switch-out (its exit_state, as the tracepoint reports it;
 * a preemption reports TASK_REPORT_MAX instead, a block on the way out its sleep state). */
#define EXIT_DEAD 0x10
#define EXIT_ZOMBIE 0x20

/* What every program returns: 1 lets the event go on to the tracepoint's other perf events
 * (perf record, another tool). 0 would drop it for all of them: the kernel submits a
 * tracepoint's event to perf only when its BPF programs return non-zero. */
#define PASS 1

/* Tracepoint records (the format files' layouts). Their common header is 8 bytes, or 12 on
 * PREEMPT_RT kernels (common_preempt_lazy_count, common_migrate_disable): built once for each
 * (HDR, by scripts/build-bpf.sh), the loader picks the one the running kernel's format files
 * match, field by field. */
#ifndef HDR
#define HDR 8
#endif
struct ev_switch {
	char common[HDR];
	char prev_comm[COMM]; __s32 prev_pid; __s32 prev_prio; __s64 prev_state;
	char next_comm[COMM]; __s32 next_pid; __s32 next_prio;
};
struct ev_task {
	char common[HDR];
	char comm[COMM]; __s32 pid; __s32 prio;
};

struct ev_irq {
	char common[HDR];
	__s32 irq; /* irq_handler_entry/exit's irq, softirq_entry/exit's vec */
};

/* The interrupt context a CPU is in (tracepoint programs cannot read the common fields,
 * which say so): the IRQ and softirq open, from their entry and exit tracepoints. */
struct in_irq {
	__u32 hard; __u32 hard_irq; __u32 soft; __u32 soft_vec; __u32 timer; __u32 pad;
};

/* Counters, per CPU: events, tasks not kept (table full), exits not sent (ring full),
 * spikes not sent, tids reused before their exit was collected, events not filed (their
 * task had no entry). */
enum { C_EVENTS, C_DROPPED, C_EXITS_LOST, C_SPIKES_LOST, C_REUSED, C_UNFILED, C_N };

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_TASKS);
	__type(key, __u32);
	__type(value, struct task);
} tasks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct task);
} zero SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ring);
} recent SEC(".maps");

/* The tids the table had no room for, each counted once (LRU: bounded, so a storm of more
 * than its size is counted at least once per tid it still holds). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u8);
} refused SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, C_N);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct config);
} settings SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct in_irq);
} irqs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} exits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} spikes SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &which);
	if (c)
		*c += 1;
}

static __always_inline __u32 bucket(__u64 v)
{
	__u32 e = 0;
	__u64 x = v;
	if (v < 8)
		return v;
	if (x >> 32) { e += 32; x >>= 32; }
	if (x >> 16) { e += 16; x >>= 16; }
	if (x >> 8) { e += 8; x >>= 8; }
	if (x >> 4) { e += 4; x >>= 4; }
	if (x >> 2) { e += 2; x >>= 2; }
	if (x >> 1) { e += 1; }
	__u32 b = 8 + (e - 3) * 8 + ((v >> (e - 3)) & 7);
	return b < NB ? b : NB - 1;
}

static __always_inline int measured(__u32 cpu)
{
	__u32 k = 0;
	struct config *c = bpf_map_lookup_elem(&settings, &k);
	if (!c)
		return 1;
	__u32 w = cpu >> 6;
	barrier_var(w);
	if (w >= MASK_WORDS)
		return 0;
	return (c->cpus[w] >> (cpu & 63)) & 1;
}

static __always_inline __u64 threshold(void)
{
	__u32 k = 0;
	struct config *c = bpf_map_lookup_elem(&settings, &k);
	return c ? c->threshold_ns : ~0ULL;
}

/* The task's entry, made (zeroed) if it has none; NULL when the table is full. */
static __always_inline struct task *entry(__u32 tid, __u64 now)
{
	struct task *t = bpf_map_lookup_elem(&tasks, &tid);
	if (t)
		return t;
	__u32 k = 0;
	struct task *z = bpf_map_lookup_elem(&zero, &k);
	if (!z)
		return NULL;
	if (bpf_map_update_elem(&tasks, &tid, z, BPF_NOEXIST) && bpf_map_lookup_elem(&tasks, &tid) == NULL) {
		__u8 one = 1;
		count(C_UNFILED);
		if (bpf_map_update_elem(&refused, &tid, &one, BPF_NOEXIST) == 0)
			count(C_DROPPED);
		return NULL;
	}
	t = bpf_map_lookup_elem(&tasks, &tid);
	if (t && t->tid == 0) {
		t->tid = tid;
		t->first_ns = now;
	}
	return t;
}

static __always_inline void copy_comm(char *dst, const char *src)
{
	__builtin_memcpy(dst, src, COMM);
}

SEC("tracepoint/sched/sched_waking")
int latlab_waking(struct ev_task *ev)
{
	__u64 now = bpf_ktime_get_ns();
	count(C_EVENTS);
	if (ev->pid <= 0)
		return PASS;
	struct task *t = entry(ev->pid, now);
	if (!t)
		return PASS;
	t->last_ns = now;
	t->prio = ev->prio;
	copy_comm(t->comm, ev->comm);
	if (t->on_cpu || t->woken_at)
		return PASS; /* running (no switch-in to wait for), or already waiting */
	t->woken_at = now;
	t->preempted_at = 0;
	/* Who woke it. */
	struct waker w = {};
	__u64 pid = bpf_get_current_pid_tgid() & 0xffffffff;
	__u32 k = 0;
	struct in_irq *in = bpf_map_lookup_elem(&irqs, &k);
	if (in && in->timer) {
		w.kind = 5;
	} else if (in && in->hard) {
		w.kind = 2;
		w.comm[0] = in->hard_irq;
	} else if (in && in->soft) {
		w.kind = 3;
		w.comm[0] = in->soft_vec;
	} else if (pid == 0)
		w.kind = 4;
	else {
		w.kind = 1;
		bpf_get_current_comm(&w.comm, sizeof(w.comm));
	}
	for (int i = 0; i < WAKERS; i++) {
		struct waker *s = &t->wakers[i];
		if (s->n == 0) {
			s->kind = w.kind;
			s->comm[0] = w.comm[0];
			s->comm[1] = w.comm[1];
		}
		if (s->kind == w.kind && s->comm[0] == w.comm[0] && s->comm[1] == w.comm[1]) {
			s->n += 1;
			return PASS;
		}
	}
	t->wakers_other += 1;
	return PASS;
}

static __always_inline struct in_irq *in_irq(void)
{
	__u32 k = 0;
	return bpf_map_lookup_elem(&irqs, &k);
}

SEC("tracepoint/irq/irq_handler_entry")
int latlab_irq_in(struct ev_irq *ev)
{
	struct in_irq *in = in_irq();
	if (in) {
		in->hard = 1;
		in->hard_irq = ev->irq;
	}
	return PASS;
}

SEC("tracepoint/irq/irq_handler_exit")
int latlab_irq_out(struct ev_irq *ev)
{
	struct in_irq *in = in_irq();
	if (in)
		in->hard = 0;
	return PASS;
}

SEC("tracepoint/irq/softirq_entry")
int latlab_soft_in(struct ev_irq *ev)
{
	struct in_irq *in = in_irq();
	if (in) {
		in->soft = 1;
		in->soft_vec = ev->irq;
	}
	return PASS;
}

SEC("tracepoint/irq/softirq_exit")
int latlab_soft_out(struct ev_irq *ev)
{
	struct in_irq *in = in_irq();
	if (in)
		in->soft = 0;
	return PASS;
}

SEC("tracepoint/timer/hrtimer_expire_entry")
int latlab_hrt_in(struct ev_irq *ev)
{
	struct in_irq *in = in_irq();
	if (in)
		in->timer = 1;
	return PASS;
}

SEC("tracepoint/timer/hrtimer_expire_exit")
int latlab_hrt_out(struct ev_irq *ev)
{
	struct in_irq *in = in_irq();
	if (in)
		in->timer = 0;
	return PASS;
}

SEC("tracepoint/sched/sched_wakeup_new")
int latlab_wake_new(struct ev_task *ev)
{
	__u64 now = bpf_ktime_get_ns();
	count(C_EVENTS);
	if (ev->pid <= 0)
		return PASS;
	__u32 tid = ev->pid;
	struct task *old = bpf_map_lookup_elem(&tasks, &tid);
	if (old && (old->flags & F_EXITED)) {
		/* Its tid's last owner exited and was not collected. */
		count(C_REUSED);
		bpf_map_delete_elem(&tasks, &tid);
	}
	struct task *t = entry(tid, now);
	if (!t)
		return PASS;
	/* A new task is woken by its parent, in the parent's context. */
	t->parent = bpf_get_current_pid_tgid() & 0xffffffff;
	t->last_ns = now;
	t->prio = ev->prio;
	copy_comm(t->comm, ev->comm);
	t->woken_at = now;
	return PASS;
}

SEC("tracepoint/sched/sched_process_exit")
int latlab_exit(struct ev_task *ev)
{
	count(C_EVENTS);
	__u32 tid = ev->pid;
	struct task *t = bpf_map_lookup_elem(&tasks, &tid);
	if (t) {
		t->flags |= F_EXITED;
		t->tgid = bpf_get_current_pid_tgid() >> 32;
	}
	return PASS;
}

static __always_inline void record(struct task *t, int wake, __u64 from, __u64 now, __u32 cpu)
{
	__u64 d = now - from;
	__u32 b = bucket(d);
	barrier_var(b);
	if (wake) {
		t->wake_n += 1;
		t->wake_sum += d;
		if (d > t->wake_max) {
			t->wake_max = d;
			t->worst_wake.from = from;
			t->worst_wake.to = now;
			t->worst_wake.cpu = cpu;
		}
		if (b < NB)
			t->hist_wake[b] += 1;
	} else {
		t->pre_n += 1;
		t->pre_sum += d;
		if (d > t->pre_max) {
			t->pre_max = d;
			t->worst_pre.from = from;
			t->worst_pre.to = now;
			t->worst_pre.cpu = cpu;
		}
		if (b < NB)
			t->hist_pre[b] += 1;
	}
	if (d < threshold())
		return;
	__u32 k = 0;
	struct ring *r = bpf_map_lookup_elem(&recent, &k);
	struct spike *s = bpf_ringbuf_reserve(&spikes, sizeof(*s), 0);
	if (!s) {
		count(C_SPIKES_LOST);
		return;
	}
	s->tid = t->tid;
	s->cpu = cpu;
	s->wake = wake;
	s->from = from;
	s->to = now;
	s->n = 0;
	copy_comm(s->comm, t->comm);
	if (r) {
		for (int i = 0; i < RING; i++)
			s->ran[i] = r->s[i];
		s->n = r->head;
	}
	bpf_ringbuf_submit(s, 0);
}

SEC("tracepoint/sched/sched_switch")
int latlab_switch(struct ev_switch *ev)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 cpu = bpf_get_smp_processor_id();
	count(C_EVENTS);
	if (ev->prev_pid > 0) {
		__u32 tid = ev->prev_pid;
		struct task *p = entry(tid, now);
		if (p) {
			p->last_ns = now;
			p->tgid = bpf_get_current_pid_tgid() >> 32;
			p->prio = ev->prev_prio;
			copy_comm(p->comm, ev->prev_comm);
			if (p->on_cpu) {
				p->run_ns += now - p->on_since;
				p->runs += 1;
				p->on_cpu = 0;
			} else if (p->woken_at) {
				/* It ran, but its switch-in was not traced: not timed, counted. */
				p->unmatched += 1;
				p->woken_at = 0;
			}
			if ((p->flags & F_EXITED) && (ev->prev_state & (EXIT_DEAD | EXIT_ZOMBIE))) {
				/* Its last switch-out (dead, not preempted or blocked on its way out):
				 * off the table, to user space. */
				if (bpf_ringbuf_output(&exits, p, sizeof(*p), 0) == 0)
					bpf_map_delete_elem(&tasks, &tid);
				else
					count(C_EXITS_LOST);
			} else if ((ev->prev_state & 0xff) == 0) {
				p->preempted_at = now;
			}
		}
	}
	if (ev->next_pid > 0) {
		__u32 tid = ev->next_pid;
		struct task *n = entry(tid, now);
		if (n) {
			n->last_ns = now;
			n->prio = ev->next_prio;
			copy_comm(n->comm, ev->next_comm);
			int here = measured(cpu);
			if (n->woken_at) {
				if (here)
					record(n, 1, n->woken_at, now, cpu);
				n->woken_at = 0;
			} else if (n->preempted_at) {
				if (here)
					record(n, 0, n->preempted_at, now, cpu);
				n->preempted_at = 0;
			}
			if (n->last_cpu && n->last_cpu != cpu + 1)
				n->migrations += 1;
			n->last_cpu = cpu + 1;
			n->on_cpu = cpu + 1;
			n->on_since = now;
			/* The word's index bounded in the register that indexes: 6.1's verifier
			 * loses a bound the compiler moved to another register. */
			__u32 w = cpu >> 6;
			barrier_var(w);
			if (w < MASK_WORDS)
				n->cpus[w] |= 1ULL << (cpu & 63);
		}
	}
	/* This CPU now runs next (the idle task too: a CPU that idled while a task waited). */
	__u32 k = 0;
	struct ring *r = bpf_map_lookup_elem(&recent, &k);
	if (r) {
		__u32 h = r->head;
		__u32 i = h & (RING - 1);
		barrier_var(i);
		if (i >= RING)
			return PASS;
		struct slot *s = &r->s[i];
		s->ts = now;
		s->pid = ev->next_pid;
		s->prio = ev->next_prio;
		copy_comm(s->comm, ev->next_comm);
		r->head = h + 1;
	}
	return PASS;
}

char LICENSE[] SEC("license") = "GPL";
