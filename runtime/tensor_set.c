/* Tensor sets: a small name -> handle array; sets hold handles, never tensors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "tensor_set.h"

const nrt_tensor_set_obj_t *nrt_tensor_set_check(const nrt_tensor_set_t *set)
{
	uintptr_t p = (uintptr_t)set;
	/* Tensor and model handles carry a type tag in the top bits: never
	 * dereference those (or anything unaligned) as a set. */
	if (!set || (p >> 56) || (p % _Alignof(nrt_tensor_set_obj_t)))
		return NULL;
	const nrt_tensor_set_obj_t *s = set;
	return s->magic == NRT_TENSOR_SET_MAGIC ? s : NULL;
}

nrt_tensor_t *nrt_tensor_set_find(const nrt_tensor_set_obj_t *set, const char *name)
{
	for (uint32_t i = 0; i < set->n; i++)
		if (!strcmp(set->entries[i].name, name))
			return set->entries[i].tensor;
	return NULL;
}

NRT_STATUS nrt_allocate_tensor_set(nrt_tensor_set_t **result)
{
	if (!result) {
		NRT_LOGE("nrt_allocate_tensor_set: result is NULL");
		return NRT_INVALID;
	}
	nrt_tensor_set_obj_t *s = calloc(1, sizeof(*s));
	if (!s)
		return NRT_RESOURCE;
	s->magic = NRT_TENSOR_SET_MAGIC;
	*result = s;
	return NRT_SUCCESS;
}

void nrt_destroy_tensor_set(nrt_tensor_set_t **tensor_set)
{
	if (!tensor_set || !*tensor_set)
		return;
	nrt_tensor_set_obj_t *s = (nrt_tensor_set_obj_t *)nrt_tensor_set_check(*tensor_set);
	if (!s) {
		NRT_LOGE("nrt_destroy_tensor_set: %p is not a tensor set", *tensor_set);
		return;
	}
	s->magic = 0;
	free(s->entries);
	free(s);
	*tensor_set = NULL;
}

NRT_STATUS nrt_add_tensor_to_tensor_set(nrt_tensor_set_t *tensor_set, const char *tensor_name, nrt_tensor_t *tensor)
{
	nrt_tensor_set_obj_t *s = (nrt_tensor_set_obj_t *)nrt_tensor_set_check(tensor_set);
	if (!s || !tensor_name || !tensor) {
		NRT_LOGE("nrt_add_tensor_to_tensor_set: %s is NULL or invalid",
			 !s ? "tensor_set" : !tensor_name ? "tensor_name" : "tensor");
		return NRT_INVALID;
	}
	size_t len = strlen(tensor_name);
	if (len == 0 || len >= NRT_TENSOR_NAME_MAX) {
		NRT_LOGE("nrt_add_tensor_to_tensor_set: tensor name of %zu characters (1..%d allowed)",
			 len, NRT_TENSOR_NAME_MAX - 1);
		return NRT_INVALID;
	}
	for (uint32_t i = 0; i < s->n; i++) {
		if (!strcmp(s->entries[i].name, tensor_name)) {
			s->entries[i].tensor = tensor;
			return NRT_SUCCESS;
		}
	}
	if (s->n == s->cap) {
		uint32_t cap = s->cap ? s->cap * 2 : 8;
		nrt_tensor_set_entry_t *e = realloc(s->entries, cap * sizeof(*e));
		if (!e)
			return NRT_RESOURCE;
		s->entries = e;
		s->cap = cap;
	}
	memcpy(s->entries[s->n].name, tensor_name, len + 1);
	s->entries[s->n].tensor = tensor;
	s->n++;
	return NRT_SUCCESS;
}

NRT_STATUS nrt_get_tensor_from_tensor_set(nrt_tensor_set_t *tensor_set, const char *tensor_name, nrt_tensor_t **tensor)
{
	const nrt_tensor_set_obj_t *s = nrt_tensor_set_check(tensor_set);
	if (!s || !tensor_name || !tensor) {
		NRT_LOGE("nrt_get_tensor_from_tensor_set: NULL or invalid argument");
		return NRT_INVALID;
	}
	nrt_tensor_t *t = nrt_tensor_set_find(s, tensor_name);
	if (!t)
		return NRT_INVALID;
	*tensor = t;
	return NRT_SUCCESS;
}
