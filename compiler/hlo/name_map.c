/* ncc name map: the open-addressing map from a name to a pointer that the HLO text parser and the proto decoder keep their instructions and computations in. */
#include "name_map.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

static uint64_t hash_name(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

void ncc_name_map_clear(ncc_name_map_t *m)
{
	if (m->keys)
		memset(m->keys, 0, sizeof(*m->keys) * m->cap);
	m->n = 0;
}

void ncc_name_map_free(ncc_name_map_t *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

void *ncc_name_map_get(const ncc_name_map_t *m, const char *k)
{
	if (!m->cap)
		return NULL;
	for (size_t i = hash_name(k) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		if (!m->keys[i])
			return NULL;
		if (strcmp(m->keys[i], k) == 0)
			return m->vals[i];
	}
}

/* key must outlive the map (it is an arena string). false on OOM. */
bool ncc_name_map_put(ncc_name_map_t *m, const char *k, void *v)
{
	if ((m->n + 1) * 2 > m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		const char **nk = ncc__calloc(cap, sizeof(*nk));
		void **nv = ncc__calloc(cap, sizeof(*nv));
		if (!nk || !nv) {
			free(nk);
			free(nv);
			return false;
		}
		for (size_t i = 0; i < m->cap; i++) {
			if (!m->keys[i])
				continue;
			size_t j = hash_name(m->keys[i]) & (cap - 1);
			while (nk[j])
				j = (j + 1) & (cap - 1);
			nk[j] = m->keys[i];
			nv[j] = m->vals[i];
		}
		free(m->keys);
		free(m->vals);
		m->keys = nk;
		m->vals = nv;
		m->cap = cap;
	}
	size_t i = hash_name(k) & (m->cap - 1);
	while (m->keys[i] && strcmp(m->keys[i], k) != 0)
		i = (i + 1) & (m->cap - 1);
	if (!m->keys[i])
		m->n++;
	m->keys[i] = k;
	m->vals[i] = v;
	return true;
}
