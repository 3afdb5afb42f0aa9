/* Generation-checked handles for every object the plugin hands to the framework: stale or foreign handles are refused, never dereferenced. */
#include <stdlib.h>

#include "pjrt_internal.h"

/*
 * A handle is kind << 56 | generation << 32 | (slot + 1). The top byte makes the
 * value a non-canonical address, so a framework that dereferenced one would fault
 * at once instead of reading plugin memory. Slots live in chunks that are never
 * moved or freed while the process runs; a slot's generation is bumped when its
 * handle dies, so an old handle never names the slot's next object.
 *
 * One mutex guards the table. Calls hold a reference on the handles they use
 * (refs); removal marks the slot dead first, so no new reference can be taken,
 * then waits on the condition variable for the references to drain.
 */

#define CHUNK PJRT_HANDLE_CHUNK
#define MAX_CHUNKS PJRT_HANDLE_MAX_CHUNKS
#define GEN_MASK 0xffffffu

typedef pjrt_handle_slot_t slot_t;

static pjrt_handle_table_t *tab(void)
{
	return &pjrt_plugin_ctx()->handles;
}

static slot_t *slot_at(uint32_t idx)
{
	if (idx >= tab()->n_slots)
		return NULL;
	return &tab()->chunks[idx / CHUNK][idx % CHUNK];
}

static slot_t *decode(uint64_t h, pjrt_kind_t kind)
{
	if (h == 0 || (h >> 56) != (uint64_t)kind || (h & 0xffffffffu) == 0)
		return NULL;
	slot_t *s = slot_at((uint32_t)(h & 0xffffffffu) - 1);
	if (!s || !s->alive || s->kind != kind || s->gen != ((h >> 32) & GEN_MASK))
		return NULL;
	return s;
}

uint64_t pjrt_handle_new(pjrt_kind_t kind, void *obj)
{
	pthread_mutex_lock(&tab()->lock);
	uint32_t idx;
	slot_t *s;
	if (tab()->free_head) {
		idx = tab()->free_head - 1;
		s = slot_at(idx);
		tab()->free_head = s->next_free;
	} else {
		idx = tab()->n_slots;
		if (idx / CHUNK >= MAX_CHUNKS) {
			pthread_mutex_unlock(&tab()->lock);
			return 0;
		}
		if (!tab()->chunks[idx / CHUNK]) {
			tab()->chunks[idx / CHUNK] = calloc(CHUNK, sizeof(slot_t));
			if (!tab()->chunks[idx / CHUNK]) {
				pthread_mutex_unlock(&tab()->lock);
				return 0;
			}
		}
		tab()->n_slots++;
		s = slot_at(idx);
	}
	s->obj = obj;
	s->kind = (uint8_t)kind;
	s->alive = true;
	s->refs = 0;
	s->next_free = 0;
	tab()->live[kind & 15]++;
	uint64_t h = ((uint64_t)kind << 56) | ((uint64_t)(s->gen & GEN_MASK) << 32) | ((uint64_t)idx + 1);
	pthread_mutex_unlock(&tab()->lock);
	return h;
}

const char *pjrt_kind_name(pjrt_kind_t kind)
{
	switch (kind) {
	case PJRT_KIND_ERROR: return "PJRT_Error";
	case PJRT_KIND_EVENT: return "PJRT_Event";
	case PJRT_KIND_CLIENT: return "PJRT_Client";
	case PJRT_KIND_DEVICE: return "PJRT_Device";
	case PJRT_KIND_DESCRIPTION: return "PJRT_DeviceDescription";
	case PJRT_KIND_MEMORY: return "PJRT_Memory";
	case PJRT_KIND_BUFFER: return "PJRT_Buffer";
	case PJRT_KIND_EXECUTABLE: return "PJRT_Executable";
	case PJRT_KIND_LOADED: return "PJRT_LoadedExecutable";
	}
	return "PJRT handle";
}

PJRT_Error *pjrt_error_not_live(const char *fn, pjrt_kind_t kind, const void *handle)
{
	return pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "%s: %p is not a live %s", fn, handle,
			  pjrt_kind_name(kind));
}

void *pjrt_handle_remove_arg(const char *fn, pjrt_kind_t kind, const void *handle, PJRT_Error **out_err)
{
	*out_err = NULL;
	if (!handle)
		return NULL;
	void *obj = pjrt_handle_remove(PJRT_HANDLE(handle), kind);
	if (!obj)
		*out_err = pjrt_error_not_live(fn, kind, handle);
	return obj;
}

void *pjrt_handle_get(uint64_t h, pjrt_kind_t kind)
{
	pthread_mutex_lock(&tab()->lock);
	slot_t *s = decode(h, kind);
	void *obj = NULL;
	if (s && s->refs < UINT32_MAX) {
		s->refs++;
		obj = s->obj;
	}
	pthread_mutex_unlock(&tab()->lock);
	return obj;
}

void pjrt_handle_put(uint64_t h)
{
	pthread_mutex_lock(&tab()->lock);
	if (h && (h & 0xffffffffu)) {
		/* The slot may already be dead (a removal is waiting for us). */
		slot_t *s = slot_at((uint32_t)(h & 0xffffffffu) - 1);
		if (s && s->refs > 0 && s->gen == ((h >> 32) & GEN_MASK) && s->kind == (h >> 56)) {
			if (--s->refs == 0 && !s->alive)
				pthread_cond_broadcast(&tab()->drained);
		}
	}
	pthread_mutex_unlock(&tab()->lock);
}

void *pjrt_handle_remove(uint64_t h, pjrt_kind_t kind)
{
	pthread_mutex_lock(&tab()->lock);
	slot_t *s = decode(h, kind);
	if (!s) {
		pthread_mutex_unlock(&tab()->lock);
		return NULL;
	}
	s->alive = false;
	while (s->refs > 0)
		pthread_cond_wait(&tab()->drained, &tab()->lock);
	void *obj = s->obj;
	s->obj = NULL;
	s->gen = (s->gen + 1) & GEN_MASK;
	s->next_free = tab()->free_head;
	tab()->free_head = (uint32_t)(h & 0xffffffffu);
	tab()->live[kind & 15]--;
	pthread_mutex_unlock(&tab()->lock);
	return obj;
}

size_t pjrt_handle_count(pjrt_kind_t kind)
{
	pthread_mutex_lock(&tab()->lock);
	size_t n = tab()->live[kind & 15];
	pthread_mutex_unlock(&tab()->lock);
	return n;
}
