/* The zero-bytes check of the formats' readers and validators: reserved
 * fields, padding and gaps that the NEFF container, the snapshot files and
 * the ISA require to be zero. */
#ifndef NEURONSIM_BYTES_H
#define NEURONSIM_BYTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* True when the n bytes at p are all zero (n == 0 included). */
static inline bool ns_all_zero(const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

#endif /* NEURONSIM_BYTES_H */
