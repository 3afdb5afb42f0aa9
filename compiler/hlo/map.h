/* ncc maps: the open-addressing tables from a key to a pointer that the HLO text parser and the proto decoder keep their instructions and computations in, by name (ncc_name_map_t) or by the proto's int64 id (ncc_id_map_t), and CSE its instruction keys in. One table serves both (the corpus has computations with ~4,000 instructions, so linear lookups per operand would be quadratic). */
#ifndef NCC_MAP_H
#define NCC_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A slot's key: the name's address (a name map) or the id (an id map). */
typedef union ncc_map_key {
	const char *name;
	int64_t id;
} ncc_map_key_t;

/* The table both maps are: linear probing, power-of-two capacity, at most half full. */
typedef struct ncc_map {
	ncc_map_key_t *keys;
	void **vals; /* NULL: an empty slot */
	size_t cap, n;
} ncc_map_t;

/* Separate types, so that a name map is never probed with an id. Zeroed: empty. */
typedef struct ncc_name_map {
	ncc_map_t t;
} ncc_name_map_t;

typedef struct ncc_id_map {
	ncc_map_t t;
} ncc_id_map_t;

/* The value stored under k, or NULL. */
void *ncc_name_map_get(const ncc_name_map_t *m, const char *k);
/* Stores v (not NULL) under k, replacing what was there. k must outlive the map (an
 * arena string). false on out of memory (the map is unchanged). */
bool ncc_name_map_put(ncc_name_map_t *m, const char *k, void *v);
/* Empties the map, keeping its memory. */
void ncc_name_map_clear(ncc_name_map_t *m);
void ncc_name_map_free(ncc_name_map_t *m);

/* The same for int64 keys: the value stored under k, or NULL. */
void *ncc_id_map_get(const ncc_id_map_t *m, int64_t k);
/* Stores v (not NULL) under k. false on out of memory (the map is unchanged). */
bool ncc_id_map_put(ncc_id_map_t *m, int64_t k, void *v);
void ncc_id_map_free(ncc_id_map_t *m);

#endif /* NCC_MAP_H */
