/* The translation unit of latlab's build load (crates/lab/src/loadgen/build.rs). latlab writes UNITS
 * small files u0.c, u1.c, ... each defining its own UNIT and including this one, into a
 * scratch directory and builds them with `make -j`: the compiler's work (parsing, inlining,
 * unrolling and scheduling at -O2) is the load, as a kernel build is rteval's. The program
 * is linked but never run. */
#include <stddef.h>
#include <stdint.h>

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define NAME(f) CAT(f, UNIT)

struct NAME(state) {
	uint64_t a[16];
	double d[8];
};

static inline uint64_t NAME(mix)(uint64_t x, uint64_t k)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL + k;
	x ^= x >> 29;
	return x;
}

#define STEP(n)                                                        \
	static uint64_t NAME(step##n)(struct NAME(state) *s, uint64_t x) \
	{                                                                  \
		for (int i = 0; i < 16; i++) {                             \
			s->a[i] = NAME(mix)(s->a[i] + x, n + i);           \
			if (s->a[i] & (1u << (n % 7)))                     \
				s->d[i % 8] += (double)(s->a[i] >> 11) * 0.5; \
			else                                               \
				s->d[(i + n) % 8] -= (double)(x % 97);     \
		}                                                          \
		switch (x % 5) {                                           \
		case 0: return x + s->a[n % 16];                           \
		case 1: return x ^ (uint64_t)s->d[n % 8];                  \
		case 2: return NAME(mix)(x, n);                            \
		case 3: return x * 3 + n;                                  \
		default: return x - s->a[(n * 7) % 16];                    \
		}                                                          \
	}

STEP(0) STEP(1) STEP(2) STEP(3) STEP(4) STEP(5) STEP(6) STEP(7)
STEP(8) STEP(9) STEP(10) STEP(11) STEP(12) STEP(13) STEP(14) STEP(15)
STEP(16) STEP(17) STEP(18) STEP(19) STEP(20) STEP(21) STEP(22) STEP(23)
STEP(24) STEP(25) STEP(26) STEP(27) STEP(28) STEP(29) STEP(30) STEP(31)

uint64_t NAME(unit)(uint64_t seed)
{
	struct NAME(state) s = { { 0 }, { 0 } };
	uint64_t x = seed;
	for (int r = 0; r < 4; r++) {
		x = NAME(step0)(&s, x); x = NAME(step1)(&s, x); x = NAME(step2)(&s, x);
		x = NAME(step3)(&s, x); x = NAME(step4)(&s, x); x = NAME(step5)(&s, x);
		x = NAME(step6)(&s, x); x = NAME(step7)(&s, x); x = NAME(step8)(&s, x);
		x = NAME(step9)(&s, x); x = NAME(step10)(&s, x); x = NAME(step11)(&s, x);
		x = NAME(step12)(&s, x); x = NAME(step13)(&s, x); x = NAME(step14)(&s, x);
		x = NAME(step15)(&s, x); x = NAME(step16)(&s, x); x = NAME(step17)(&s, x);
		x = NAME(step18)(&s, x); x = NAME(step19)(&s, x); x = NAME(step20)(&s, x);
		x = NAME(step21)(&s, x); x = NAME(step22)(&s, x); x = NAME(step23)(&s, x);
		x = NAME(step24)(&s, x); x = NAME(step25)(&s, x); x = NAME(step26)(&s, x);
		x = NAME(step27)(&s, x); x = NAME(step28)(&s, x); x = NAME(step29)(&s, x);
		x = NAME(step30)(&s, x); x = NAME(step31)(&s, x);
	}
	return x + (uint64_t)s.d[0];
}
