/* ncc maps: one open-addressing table (ncc_map_t) behind the name map and the id map. Map: map.h. */
#include "map.h"

#include <stdlib.h>
#include <string.h>

#include "ir.h"

/* FNV-1a of a name. */
static uint64_t hash_name(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

/* The murmur3 finalizer: ids are small and dense, their low bits alone would cluster. */
static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

/* by_name is a constant at every call below, so each map gets its own inlined copy
 * of the table code, with no indirect call per probe. */
static inline uint64_t key_hash(bool by_name, ncc_map_key_t k)
{
	return by_name ? hash_name(k.name) : mix64((uint64_t)k.id);
}

static inline bool key_eq(bool by_name, ncc_map_key_t a, ncc_map_key_t b)
{
	return by_name ? strcmp(a.name, b.name) == 0 : a.id == b.id;
}

/* The slot holding k, or the empty slot where k would go. cap > 0. */
static inline size_t map_slot(const ncc_map_t *m, bool by_name, ncc_map_key_t k)
{
	size_t i = key_hash(by_name, k) & (m->cap - 1);
	while (m->vals[i] && !key_eq(by_name, m->keys[i], k))
		i = (i + 1) & (m->cap - 1);
	return i;
}

static inline void *map_get(const ncc_map_t *m, bool by_name, ncc_map_key_t k)
{
	return m->cap ? m->vals[map_slot(m, by_name, k)] : NULL;
}

/* Doubles the capacity (64 at first), moving every entry. false on OOM (unchanged). */
static bool map_grow(ncc_map_t *m, bool by_name)
{
	ncc_map_t g = { .cap = m->cap ? m->cap * 2 : 64, .n = m->n };
	g.keys = ncc__calloc(g.cap, sizeof(*g.keys));
	g.vals = ncc__calloc(g.cap, sizeof(*g.vals));
	if (!g.keys || !g.vals) {
		free(g.keys);
		free(g.vals);
		return false;
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->vals[i])
			continue;
		size_t j = map_slot(&g, by_name, m->keys[i]);
		g.keys[j] = m->keys[i];
		g.vals[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	*m = g;
	return true;
}

static inline bool map_put(ncc_map_t *m, bool by_name, ncc_map_key_t k, void *v)
{
	if ((m->n + 1) * 2 > m->cap && !map_grow(m, by_name))
		return false;
	size_t i = map_slot(m, by_name, k);
	if (!m->vals[i])
		m->n++;
	m->keys[i] = k;
	m->vals[i] = v;
	return true;
}

static void map_free(ncc_map_t *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

void *ncc_name_map_get(const ncc_name_map_t *m, const char *k)
{
	return map_get(&m->t, true, (ncc_map_key_t){ .name = k });
}

bool ncc_name_map_put(ncc_name_map_t *m, const char *k, void *v)
{
	return map_put(&m->t, true, (ncc_map_key_t){ .name = k }, v);
}

void ncc_name_map_clear(ncc_name_map_t *m)
{
	if (m->t.vals)
		memset(m->t.vals, 0, sizeof(*m->t.vals) * m->t.cap);
	m->t.n = 0;
}

void ncc_name_map_free(ncc_name_map_t *m)
{
	map_free(&m->t);
}

void *ncc_id_map_get(const ncc_id_map_t *m, int64_t k)
{
	return map_get(&m->t, false, (ncc_map_key_t){ .id = k });
}

bool ncc_id_map_put(ncc_id_map_t *m, int64_t k, void *v)
{
	return map_put(&m->t, false, (ncc_map_key_t){ .id = k }, v);
}

void ncc_id_map_free(ncc_id_map_t *m)
{
	map_free(&m->t);
}
