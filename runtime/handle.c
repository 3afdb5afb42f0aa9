/* Generation-checked handle tables: freed or foreign tensor/model handles are detected, never dereferenced. */
#include <sched.h>
#include <stdlib.h>

#include "internal.h"

#define GEN_MASK 0x0fffffffull
#define ALIVE (1ull << 32)
#define REFS_MASK 0xffffffffull

static uint64_t st_gen(uint64_t s) { return (s >> 33) & GEN_MASK; }

static uint64_t make_handle(nrt_handle_type_t type, uint64_t gen, uint32_t idx)
{
	return ((uint64_t)type << 60) | ((gen & GEN_MASK) << 32) | ((uint64_t)idx + 1);
}

NRT_STATUS nrt_handle_table_init(nrt_handle_table_t *t, nrt_handle_type_t type, uint32_t gen_base)
{
	t->n_slots = 0;
	t->free_head = 0;
	t->gen_base = gen_base;
	t->type = type;
	for (uint32_t i = 0; i < NRT_HANDLE_MAX_CHUNKS; i++)
		atomic_init(&t->chunks[i], NULL);
	pthread_mutex_init(&t->lock, NULL);
	return NRT_SUCCESS;
}

void nrt_handle_table_fini(nrt_handle_table_t *t)
{
	for (uint32_t i = 0; i < NRT_HANDLE_MAX_CHUNKS; i++)
		free(atomic_load(&t->chunks[i]));
	pthread_mutex_destroy(&t->lock);
}

static nrt_slot_t *slot_at(nrt_handle_table_t *t, uint32_t idx)
{
	uint32_t c = idx / NRT_HANDLE_CHUNK;
	if (c >= NRT_HANDLE_MAX_CHUNKS)
		return NULL;
	nrt_slot_t *chunk = atomic_load_explicit(&t->chunks[c], memory_order_acquire);
	return chunk ? &chunk[idx % NRT_HANDLE_CHUNK] : NULL;
}

NRT_STATUS nrt_handle_create(nrt_handle_table_t *t, void *obj, uint64_t *out_handle)
{
	pthread_mutex_lock(&t->lock);
	uint32_t idx;
	nrt_slot_t *s;
	if (t->free_head) {
		idx = t->free_head - 1;
		s = slot_at(t, idx);
		t->free_head = s->next_free;
	} else {
		idx = t->n_slots;
		if (idx / NRT_HANDLE_CHUNK >= NRT_HANDLE_MAX_CHUNKS) {
			pthread_mutex_unlock(&t->lock);
			return NRT_RESOURCE;
		}
		if (idx % NRT_HANDLE_CHUNK == 0) {
			nrt_slot_t *chunk = calloc(NRT_HANDLE_CHUNK, sizeof(*chunk));
			if (!chunk) {
				pthread_mutex_unlock(&t->lock);
				return NRT_RESOURCE;
			}
			for (uint32_t i = 0; i < NRT_HANDLE_CHUNK; i++)
				atomic_init(&chunk[i].state, (uint64_t)(t->gen_base & GEN_MASK) << 33);
			atomic_store_explicit(&t->chunks[idx / NRT_HANDLE_CHUNK], chunk,
					      memory_order_release);
		}
		t->n_slots++;
		s = slot_at(t, idx);
	}
	uint64_t gen = st_gen(atomic_load(&s->state));
	atomic_store(&s->obj, obj);
	atomic_store(&s->state, (gen << 33) | ALIVE);
	pthread_mutex_unlock(&t->lock);
	*out_handle = make_handle(t->type, gen, idx);
	return NRT_SUCCESS;
}

static nrt_slot_t *decode(nrt_handle_table_t *t, uint64_t handle, uint64_t *out_gen)
{
	if ((handle >> 60) != (uint64_t)t->type || (handle & 0xffffffffu) == 0)
		return NULL;
	*out_gen = (handle >> 32) & GEN_MASK;
	return slot_at(t, (uint32_t)(handle & 0xffffffffu) - 1);
}

ns_status_t nrt_handle_acquire_arg(nrt_handle_table_t *t, const void *handle, const char *what,
				   const char *alive, void **out_obj)
{
	if (!handle)
		return nrt_status_make(NRT_INVALID, "%s is NULL", what);
	NRT_STATUS st = nrt_handle_acquire(t, nrt_handle_of(handle), out_obj);
	if (st)
		return nrt_status_make(st, "%p is not %s", handle, alive);
	return NS_OK;
}

NRT_STATUS nrt_handle_acquire(nrt_handle_table_t *t, uint64_t handle, void **out_obj)
{
	uint64_t gen;
	nrt_slot_t *s = decode(t, handle, &gen);
	if (!s)
		return NRT_INVALID_HANDLE;
	uint64_t st = atomic_load_explicit(&s->state, memory_order_acquire);
	do {
		if (!(st & ALIVE) || st_gen(st) != gen || (st & REFS_MASK) == REFS_MASK)
			return NRT_INVALID_HANDLE;
	} while (!atomic_compare_exchange_weak_explicit(&s->state, &st, st + 1,
							memory_order_acq_rel, memory_order_acquire));
	*out_obj = atomic_load_explicit(&s->obj, memory_order_acquire);
	return NRT_SUCCESS;
}

void nrt_handle_release(nrt_handle_table_t *t, uint64_t handle)
{
	uint64_t gen;
	nrt_slot_t *s = decode(t, handle, &gen);
	if (s)
		atomic_fetch_sub_explicit(&s->state, 1, memory_order_acq_rel);
}

NRT_STATUS nrt_handle_destroy(nrt_handle_table_t *t, uint64_t handle, void **out_obj)
{
	uint64_t gen;
	nrt_slot_t *s = decode(t, handle, &gen);
	if (!s)
		return NRT_INVALID_HANDLE;
	uint64_t st = atomic_load(&s->state);
	do {
		if (!(st & ALIVE) || st_gen(st) != gen)
			return NRT_INVALID_HANDLE;
		/* Clearing ALIVE and bumping the generation in one step: a racing
		 * second destroy or a new acquire fails from here on. */
	} while (!atomic_compare_exchange_weak(&s->state, &st,
					       ((((gen + 1) & GEN_MASK)) << 33) | (st & REFS_MASK)));
	/* In-flight users (an execution using this tensor) finish first. */
	while (atomic_load_explicit(&s->state, memory_order_acquire) & REFS_MASK)
		sched_yield();
	*out_obj = atomic_exchange(&s->obj, NULL);
	pthread_mutex_lock(&t->lock);
	s->next_free = t->free_head;
	t->free_head = (uint32_t)(handle & 0xffffffffu);
	pthread_mutex_unlock(&t->lock);
	return NRT_SUCCESS;
}

void nrt_handle_foreach(nrt_handle_table_t *t, void (*fn)(void *obj, uint64_t handle, void *arg), void *arg)
{
	for (uint32_t i = 0; i < t->n_slots; i++) {
		nrt_slot_t *s = slot_at(t, i);
		uint64_t st = atomic_load(&s->state);
		if (st & ALIVE)
			fn(atomic_load(&s->obj), make_handle(t->type, st_gen(st), i), arg);
	}
}
