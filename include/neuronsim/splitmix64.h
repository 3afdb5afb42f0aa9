/* splitmix64, the one seeded random stream of the project (the interpreter's random
 * fill and Monte Carlo arithmetic, the tools' random inputs, the demo's dataset):
 * tiny, well distributed, and the same on every platform, unlike the C library's
 * rand(). */
#ifndef NEURONSIM_SPLITMIX64_H
#define NEURONSIM_SPLITMIX64_H

#include <stdint.h>

/* Advances *state and returns the next 64 random bits. */
static inline uint64_t ns_splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

#endif /* NEURONSIM_SPLITMIX64_H */
