/* ncc name map: name -> pointer, open addressing (the corpus has computations with ~4,000 instructions, so linear lookups per operand would be quadratic). */
#ifndef NCC_NAME_MAP_H
#define NCC_NAME_MAP_H

#include <stdbool.h>
#include <stddef.h>

typedef struct ncc_name_map {
	const char **keys;
	void **vals;
	size_t cap, n;
} ncc_name_map_t;

/* The value stored under k, or NULL. */
void *ncc_name_map_get(const ncc_name_map_t *m, const char *k);
/* Stores v (not NULL) under k, replacing what was there. k must outlive the map (an
 * arena string). false on out of memory (the map is unchanged). */
bool ncc_name_map_put(ncc_name_map_t *m, const char *k, void *v);
/* Empties the map, keeping its memory. */
void ncc_name_map_clear(ncc_name_map_t *m);
void ncc_name_map_free(ncc_name_map_t *m);

#endif /* NCC_NAME_MAP_H */
