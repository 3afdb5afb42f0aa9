/* neuronsim-fwd's cache of validated programs, keyed by stream addresses and checked against the code bytes (see fwd.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fwd.h"

struct fwd_cache_entry {
	fwd_cache_entry_t *prev, *next;   /* LRU list, most recent first */
	struct neuronsim_fw_stream key[NEURONSIM_NUM_ENGINES];
	uint32_t n_regions;
	uint32_t refs;                    /* the cache's own + one per acquirer */
	int cached;                       /* still on the list */
	uint8_t *bytes;                   /* the code the program was validated from */
	uint64_t n_bytes;
	uint64_t offset[NEURONSIM_NUM_ENGINES]; /* of each stream in bytes */
	fwsim_program_t *program;
};

struct fwd_cache {
	pthread_mutex_t lock;
	fwd_cache_entry_t *head, *tail;
	uint32_t n_entries, max_entries;
	uint64_t n_bytes, max_bytes;
	fwd_cache_stats_t stats;
};

fwsim_status_t fwd_cache_create(uint32_t max_entries, uint64_t max_bytes, fwd_cache_t **out_cache)
{
	fwd_cache_t *c = calloc(1, sizeof(*c));
	if (!c)
		return FWSIM_NOMEM;
	pthread_mutex_init(&c->lock, NULL);
	c->max_entries = max_entries;
	c->max_bytes = max_bytes;
	*out_cache = c;
	return FWSIM_OK;
}

static void entry_free(fwd_cache_entry_t *e)
{
	fwsim_program_destroy(e->program);
	free(e->bytes);
	free(e);
}

/* Caller holds the lock. Drops the cache's reference. */
static void entry_unlink(fwd_cache_t *c, fwd_cache_entry_t *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		c->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		c->tail = e->prev;
	e->prev = e->next = NULL;
	e->cached = 0;
	c->n_entries--;
	c->n_bytes -= e->n_bytes;
}

/* Caller holds the lock: e, in no list, becomes the most recently used. */
static void entry_link_front(fwd_cache_t *c, fwd_cache_entry_t *e)
{
	e->next = c->head;
	if (c->head)
		c->head->prev = e;
	c->head = e;
	if (!c->tail)
		c->tail = e;
	e->cached = 1;
	c->n_entries++;
	c->n_bytes += e->n_bytes;
}

/* Caller holds the lock; returns 1 when the entry must be freed (outside
 * the lock: program destruction may be slow). */
static int entry_put(fwd_cache_entry_t *e)
{
	return --e->refs == 0;
}

void fwd_cache_destroy(fwd_cache_t *c)
{
	if (!c)
		return;
	while (c->head) {
		fwd_cache_entry_t *e = c->head;
		entry_unlink(c, e);
		if (entry_put(e))
			entry_free(e);
	}
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static int key_equal(const fwd_cache_entry_t *e, const struct neuronsim_fw_stream *s, uint32_t n_regions)
{
	if (e->n_regions != n_regions)
		return 0;
	for (int i = 0; i < NEURONSIM_NUM_ENGINES; i++)
		if (e->key[i].addr != s[i].addr || e->key[i].count != s[i].count)
			return 0;
	return 1;
}

static int bytes_equal(const fwd_cache_entry_t *e, const uint8_t *mem)
{
	for (int i = 0; i < NEURONSIM_NUM_ENGINES; i++) {
		uint64_t len = (uint64_t)e->key[i].count * NEURONSIM_INSN_SIZE;
		if (len && memcmp(e->bytes + e->offset[i], mem + e->key[i].addr, len))
			return 0;
	}
	return 1;
}

/* Validates a private copy of the streams into a new entry (refs = 1). */
static ns_status_t entry_create(const uint8_t *mem, const struct neuronsim_fw_stream *s,
				uint64_t total, uint32_t n_regions, fwd_cache_entry_t **out)
{
	fwd_cache_entry_t *e = calloc(1, sizeof(*e));
	if (!e || (total && !(e->bytes = malloc(total)))) {
		free(e);
		return ns_status_make(NS_STATUS_RESOURCE_EXHAUSTED,
				      "out of memory copying %llu bytes of code", (unsigned long long)total);
	}
	const isa_insn_t *streams[NEURONSIM_NUM_ENGINES];
	uint32_t counts[NEURONSIM_NUM_ENGINES];
	uint64_t at = 0;
	for (int i = 0; i < NEURONSIM_NUM_ENGINES; i++) {
		uint64_t len = (uint64_t)s[i].count * NEURONSIM_INSN_SIZE;
		e->key[i] = (struct neuronsim_fw_stream){ .addr = s[i].addr, .count = s[i].count };
		e->offset[i] = at;
		/* Copy first, validate the copy: what runs is exactly what was
		 * checked, whatever the client writes to device memory meanwhile. */
		if (len)
			memcpy(e->bytes + at, mem + s[i].addr, len);
		streams[i] = len ? (const isa_insn_t *)(e->bytes + at) : NULL;
		counts[i] = s[i].count;
		at += len;
	}
	e->n_bytes = total;
	e->n_regions = n_regions;
	e->refs = 1;
	ns_status_t st = fwsim_program_create(streams, counts, n_regions, &e->program);
	if (st) {
		free(e->bytes);
		free(e);
		return st;
	}
	*out = e;
	return NS_OK;
}

ns_status_t fwd_cache_acquire(fwd_cache_t *c, const uint8_t *mem, uint64_t mem_size,
			      const struct neuronsim_fw_stream streams[NEURONSIM_NUM_ENGINES],
			      uint32_t n_regions, fwd_cache_entry_t **out_entry)
{
	/* The driver checked the streams against the client's allocation; the
	 * daemon checks them again against the mapping it is about to read. */
	uint64_t total = 0;
	for (int i = 0; i < NEURONSIM_NUM_ENGINES; i++) {
		uint64_t len = (uint64_t)streams[i].count * NEURONSIM_INSN_SIZE;
		if (streams[i].count &&
		    (streams[i].addr > mem_size || len > mem_size - streams[i].addr))
			return ns_status_make(NS_STATUS_INVALID_ARGUMENT, "code stream of engine %d [%#llx, "
					      "+%llu) lies outside device memory", i,
					      (unsigned long long)streams[i].addr, (unsigned long long)len);
		total += len;
	}

	fwd_cache_entry_t *e = NULL;
	pthread_mutex_lock(&c->lock);
	for (fwd_cache_entry_t *it = c->head; it; it = it->next)
		if (key_equal(it, streams, n_regions)) {
			e = it;
			e->refs++;
			break;
		}
	pthread_mutex_unlock(&c->lock);
	if (e) {
		/* Compared outside the lock so that workers do not serialise. */
		int same = bytes_equal(e, mem);
		int do_free = 0;
		pthread_mutex_lock(&c->lock);
		if (same) {
			c->stats.hits++;
			if (e->cached && e != c->head) {
				/* move to front */
				entry_unlink(c, e);
				entry_link_front(c, e);
			}
			pthread_mutex_unlock(&c->lock);
			*out_entry = e;
			return NS_OK;
		}
		/* The code at these addresses changed: the entry is stale. */
		if (e->cached) {
			entry_unlink(c, e);
			do_free |= entry_put(e);
		}
		do_free |= entry_put(e);
		pthread_mutex_unlock(&c->lock);
		if (do_free)
			entry_free(e);
		e = NULL;
	}

	ns_status_t st = entry_create(mem, streams, total, n_regions, &e);
	pthread_mutex_lock(&c->lock);
	c->stats.misses++;
	if (st) {
		c->stats.invalid += ns_status_code(st) == NS_STATUS_INVALID_ARGUMENT;
		pthread_mutex_unlock(&c->lock);
		return st;
	}
	fwd_cache_entry_t *victims = NULL;
	if (c->max_entries && total <= c->max_bytes) {
		/* Another worker may have cached the same key meanwhile: the newer
		 * copy wins. Then evict from the tail down to the limits. */
		for (fwd_cache_entry_t *it = c->head; it; it = it->next)
			if (key_equal(it, streams, n_regions)) {
				entry_unlink(c, it);
				if (entry_put(it)) {
					it->next = victims;
					victims = it;
				}
				break;
			}
		while (c->tail && (c->n_entries + 1 > c->max_entries ||
				   c->n_bytes + total > c->max_bytes)) {
			fwd_cache_entry_t *v = c->tail;
			entry_unlink(c, v);
			c->stats.evictions++;
			if (entry_put(v)) {
				v->next = victims;
				victims = v;
			}
		}
		e->refs++; /* the cache's reference */
		entry_link_front(c, e);
	}
	pthread_mutex_unlock(&c->lock);
	while (victims) {
		fwd_cache_entry_t *v = victims;
		victims = v->next;
		entry_free(v);
	}
	*out_entry = e;
	return NS_OK;
}

const fwsim_program_t *fwd_cache_program(const fwd_cache_entry_t *entry)
{
	return entry->program;
}

void fwd_cache_release(fwd_cache_t *c, fwd_cache_entry_t *e)
{
	pthread_mutex_lock(&c->lock);
	int do_free = entry_put(e);
	pthread_mutex_unlock(&c->lock);
	if (do_free)
		entry_free(e);
}

void fwd_cache_get_stats(fwd_cache_t *c, fwd_cache_stats_t *out_stats)
{
	pthread_mutex_lock(&c->lock);
	*out_stats = c->stats;
	pthread_mutex_unlock(&c->lock);
}
