/* Tensor sets: a small name -> handle array behind a generation-checked handle; sets hold handles, never tensors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "log.h"
#include "tensor_set.h"

/* The runtime's one table outside nrt_ctx_t: sets exist independently of
 * nrt_init/nrt_close (docs/runtime.md), so their table cannot live in the
 * context. Its chunks are never freed; a slot only ever holds a set. */
static nrt_handle_table_t g_sets;
static pthread_once_t g_sets_once = PTHREAD_ONCE_INIT;

static void sets_init(void)
{
	nrt_handle_table_init(&g_sets, NRT_HANDLE_TENSOR_SET, 1);
}

static nrt_handle_table_t *sets(void)
{
	pthread_once(&g_sets_once, sets_init);
	return &g_sets;
}

const nrt_tensor_set_obj_t *nrt_tensor_set_acquire(const nrt_tensor_set_t *set)
{
	void *obj;
	if (!set || nrt_handle_acquire(sets(), nrt_handle_of(set), &obj) != NRT_SUCCESS)
		return NULL;
	return obj;
}

void nrt_tensor_set_release(const nrt_tensor_set_t *set)
{
	nrt_handle_release(sets(), nrt_handle_of(set));
}

nrt_tensor_t *nrt_tensor_set_find(const nrt_tensor_set_obj_t *set, const char *name)
{
	nrt_tensor_set_obj_t *s = (nrt_tensor_set_obj_t *)set;
	nrt_tensor_t *t = NULL;
	pthread_mutex_lock(&s->lock);
	for (uint32_t i = 0; i < s->n; i++)
		if (!strcmp(s->entries[i].name, name)) {
			t = s->entries[i].tensor;
			break;
		}
	pthread_mutex_unlock(&s->lock);
	return t;
}

static ns_status_t allocate_tensor_set(nrt_tensor_set_t **result)
{
	if (!result)
		return nrt_status_make(NRT_INVALID, "result is NULL");
	nrt_tensor_set_obj_t *s = calloc(1, sizeof(*s));
	if (!s)
		return nrt_status_make(NRT_RESOURCE, "out of host memory for a tensor set");
	pthread_mutex_init(&s->lock, NULL);
	uint64_t h;
	if (nrt_handle_create(sets(), s, &h) != NRT_SUCCESS) {
		pthread_mutex_destroy(&s->lock);
		free(s);
		return nrt_status_make(NRT_RESOURCE, "out of host memory for a tensor set's handle");
	}
	*result = (nrt_tensor_set_t *)(uintptr_t)h;
	return NS_OK;
}

NRT_STATUS nrt_allocate_tensor_set(nrt_tensor_set_t **result)
{
	return nrt_status_report(__func__, allocate_tensor_set(result));
}

void nrt_destroy_tensor_set(nrt_tensor_set_t **tensor_set)
{
	if (!tensor_set || !*tensor_set)
		return;
	void *obj;
	/* a second destroy of the same set (through a copy of the handle) finds
	 * the generation moved on: an error, not a read of freed memory */
	NRT_STATUS st = nrt_handle_destroy(sets(), nrt_handle_of(*tensor_set), &obj);
	if (st) {
		nrt_status_report(__func__, nrt_status_make(st, "%p is not a tensor set (destroyed already?)",
							    (void *)*tensor_set));
		return;
	}
	nrt_tensor_set_obj_t *s = obj;
	pthread_mutex_destroy(&s->lock);
	free(s->entries);
	free(s);
	*tensor_set = NULL;
}

/* Under s->lock: binds name (len characters) to tensor, replacing its tensor
 * when the set has the name already. */
static ns_status_t set_put_locked(nrt_tensor_set_obj_t *s, const char *name, size_t len, nrt_tensor_t *tensor)
{
	for (uint32_t i = 0; i < s->n; i++) {
		if (!strcmp(s->entries[i].name, name)) {
			s->entries[i].tensor = tensor;
			return NS_OK;
		}
	}
	if (s->n == s->cap) {
		uint32_t cap = s->cap ? s->cap * 2 : 8;
		nrt_tensor_set_entry_t *e = realloc(s->entries, cap * sizeof(*e));
		if (!e)
			return nrt_status_make(NRT_RESOURCE, "tensor '%s': out of host memory growing the set "
					       "to %u entries", name, cap);
		s->entries = e;
		s->cap = cap;
	}
	memcpy(s->entries[s->n].name, name, len + 1);
	s->entries[s->n].tensor = tensor;
	s->n++;
	return NS_OK;
}

static ns_status_t add_tensor_to_tensor_set(nrt_tensor_set_t *tensor_set, const char *tensor_name,
					    nrt_tensor_t *tensor)
{
	nrt_tensor_set_obj_t *s = (nrt_tensor_set_obj_t *)nrt_tensor_set_acquire(tensor_set);
	ns_status_t st = NS_OK;
	if (!s || !tensor_name || !tensor)
		st = nrt_status_make(NRT_INVALID, "%s is NULL or invalid",
				     !s ? "tensor_set" : !tensor_name ? "tensor_name" : "tensor");
	size_t len = st ? 0 : strlen(tensor_name);
	if (!st && (len == 0 || len >= NRT_TENSOR_NAME_MAX))
		st = nrt_status_make(NRT_INVALID, "tensor name of %zu characters (1..%d allowed)", len,
				     NRT_TENSOR_NAME_MAX - 1);
	if (!st) {
		pthread_mutex_lock(&s->lock);
		st = set_put_locked(s, tensor_name, len, tensor);
		pthread_mutex_unlock(&s->lock);
	}
	if (s)
		nrt_tensor_set_release(tensor_set);
	return st;
}

NRT_STATUS nrt_add_tensor_to_tensor_set(nrt_tensor_set_t *tensor_set, const char *tensor_name, nrt_tensor_t *tensor)
{
	return nrt_status_report(__func__, add_tensor_to_tensor_set(tensor_set, tensor_name, tensor));
}

static ns_status_t get_tensor_from_tensor_set(nrt_tensor_set_t *tensor_set, const char *tensor_name,
					      nrt_tensor_t **tensor)
{
	const nrt_tensor_set_obj_t *s = nrt_tensor_set_acquire(tensor_set);
	if (!s || !tensor_name || !tensor) {
		if (s)
			nrt_tensor_set_release(tensor_set);
		return nrt_status_make(NRT_INVALID, "%s is NULL or invalid",
				       !s ? "tensor_set" : !tensor_name ? "tensor_name" : "tensor (out)");
	}
	nrt_tensor_t *t = nrt_tensor_set_find(s, tensor_name);
	nrt_tensor_set_release(tensor_set);
	if (!t)
		return nrt_status_make(NRT_INVALID, "the set has no tensor named '%s'", tensor_name);
	*tensor = t;
	return NS_OK;
}

NRT_STATUS nrt_get_tensor_from_tensor_set(nrt_tensor_set_t *tensor_set, const char *tensor_name, nrt_tensor_t **tensor)
{
	return nrt_status_report(__func__, get_tensor_from_tensor_set(tensor_set, tensor_name, tensor));
}
