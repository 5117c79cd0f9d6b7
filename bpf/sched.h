/* SPDX-License-Identifier: GPL-2.0 */
/* What sched.bpf.c shares with user space: the records of its maps and rings, whose
 * layouts the loader (crates/trace/src/bpf/layout.rs) reads by offset. */
#ifndef LATLAB_SCHED_H
#define LATLAB_SCHED_H

#define COMM 16
#define NB 280      /* histogram buckets: 8 linear, then 8 per octave up to 2^37 ns */
#define RING 8      /* switches remembered per CPU, for a spike's explanation */
#define WAKERS 4    /* distinct wakers kept per task; the rest count as other */
#define MAX_TASKS 8192
#define MASK_WORDS 4 /* CPUs 0..255 */

/* Who woke a task: kind 1 task (its comm), 2 irq (comm[0]: its number), 3 softirq
 * (comm[0]: its vector), 4 idle, 5 hrtimer. */
struct waker {
	__u32 kind; __u32 n;
	__u64 comm[2];
};

/* One switch-in on a CPU: who ran from `ts`. */
struct slot {
	__u64 ts; __s32 pid; __s32 prio; char comm[COMM];
};

struct delay {
	__u64 from, to; __u32 cpu; __u32 pad;
};

#define F_EXITED 1

struct task {
	__u32 tid, tgid; __s32 prio; __u32 parent;
	char comm[COMM];
	__u64 first_ns, last_ns;
	__u64 woken_at, preempted_at, on_since;
	__u32 on_cpu, last_cpu; /* CPU + 1; 0: none */
	__u64 wake_n, wake_sum, wake_max;
	__u64 pre_n, pre_sum, pre_max;
	__u64 run_ns, runs, migrations, unmatched;
	__u64 cpus[MASK_WORDS];
	struct waker wakers[WAKERS];
	__u64 wakers_other;
	struct delay worst_wake, worst_pre;
	__u32 flags; __u32 pad;
	__u32 hist_wake[NB];
	__u32 hist_pre[NB];
};

struct spike {
	__u32 tid; __u32 cpu; __u32 wake; __u32 n;
	__u64 from, to;
	char comm[COMM]; /* the task's, so user space can drop other tasks' at once */
	struct slot ran[RING];
};

struct config {
	__u64 threshold_ns;
	__u64 cpus[MASK_WORDS]; /* delays count on these CPUs */
};

struct ring {
	__u32 head; __u32 pad;
	struct slot s[RING];
};

#endif
