/* The protobuf the plugin reads and writes itself: the wire format, HloModuleProto's name and program shape (the signature), and HloModuleProtoWithConfig. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pjrt_internal.h"

/* Field numbers (xla/service/hlo.proto, xla/xla_data.proto, xla/xla.proto). */
enum {
	HLO_MODULE_NAME = 1,
	HLO_MODULE_HOST_PROGRAM_SHAPE = 4,
	PROGRAM_SHAPE_PARAMETERS = 1,
	PROGRAM_SHAPE_RESULT = 2,
	SHAPE_ELEMENT_TYPE = 2,
	SHAPE_DIMENSIONS = 3,
	SHAPE_TUPLE_SHAPES = 4,
	WITH_CONFIG_MODULE = 1,
	WITH_CONFIG_CONFIG = 2,
	CONFIG_ENTRY_COMPUTATION_LAYOUT = 1,
	CONFIG_REPLICA_COUNT = 4,
	CONFIG_NUM_PARTITIONS = 5,
};

/* Nesting bound for tuple shapes (hostile input must not exhaust the stack). */
#define MAX_TUPLE_DEPTH 32

static bool read_varint(pjrt_pb_t *r, uint64_t *out)
{
	uint64_t v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (r->p >= r->end)
			return false;
		uint8_t b = *r->p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return true;
		}
	}
	return false;
}

int pjrt_pb_next(pjrt_pb_t *r, pjrt_pb_field_t *f)
{
	if (r->p >= r->end)
		return 0;
	uint64_t key;
	if (!read_varint(r, &key) || (key >> 3) == 0 || (key >> 3) > 0x1fffffff)
		return -1;
	memset(f, 0, sizeof(*f));
	f->number = (uint32_t)(key >> 3);
	f->wire = (uint32_t)(key & 7);
	switch (f->wire) {
	case 0:
		return read_varint(r, &f->value) ? 1 : -1;
	case 1:
		if (r->end - r->p < 8)
			return -1;
		memcpy(&f->value, r->p, 8);
		r->p += 8;
		return 1;
	case 5: {
		if (r->end - r->p < 4)
			return -1;
		uint32_t v;
		memcpy(&v, r->p, 4);
		f->value = v;
		r->p += 4;
		return 1;
	}
	case 2: {
		uint64_t len;
		if (!read_varint(r, &len) || len > (uint64_t)(r->end - r->p))
			return -1;
		f->data = r->p;
		f->len = (size_t)len;
		r->p += len;
		return 1;
	}
	default: /* groups (3, 4) are not used by these messages */
		return -1;
	}
}

bool pjrt_pb_varints(const pjrt_pb_field_t *f, bool (*fn)(uint64_t v, void *arg), void *arg)
{
	if (f->wire == 0)
		return fn(f->value, arg);
	if (f->wire != 2)
		return false;
	pjrt_pb_t r = { f->data, f->data + f->len };
	while (r.p < r.end) {
		uint64_t v;
		if (!read_varint(&r, &v) || !fn(v, arg))
			return false;
	}
	return true;
}

/* ------------------------------------------------------------ signatures */

static PJRT_Buffer_Type type_from_xla(uint64_t t)
{
	switch (t) {
	case 1: return PJRT_Buffer_Type_PRED;
	case 2: return PJRT_Buffer_Type_S8;
	case 3: return PJRT_Buffer_Type_S16;
	case 4: return PJRT_Buffer_Type_S32;
	case 5: return PJRT_Buffer_Type_S64;
	case 6: return PJRT_Buffer_Type_U8;
	case 7: return PJRT_Buffer_Type_U16;
	case 8: return PJRT_Buffer_Type_U32;
	case 9: return PJRT_Buffer_Type_U64;
	case 10: return PJRT_Buffer_Type_F16;
	case 11: return PJRT_Buffer_Type_F32;
	case 12: return PJRT_Buffer_Type_F64;
	case 15: return PJRT_Buffer_Type_C64;
	case 16: return PJRT_Buffer_Type_BF16;
	case 18: return PJRT_Buffer_Type_C128;
	case 19: return PJRT_Buffer_Type_F8E5M2;
	case 20: return PJRT_Buffer_Type_F8E4M3FN;
	case 21: return PJRT_Buffer_Type_S4;
	case 22: return PJRT_Buffer_Type_U4;
	case 23: return PJRT_Buffer_Type_F8E4M3B11FNUZ;
	case 24: return PJRT_Buffer_Type_F8E5M2FNUZ;
	case 25: return PJRT_Buffer_Type_F8E4M3FNUZ;
	case 26: return PJRT_Buffer_Type_S2;
	case 27: return PJRT_Buffer_Type_U2;
	case 28: return PJRT_Buffer_Type_F8E4M3;
	case 29: return PJRT_Buffer_Type_F8E3M4;
	case 32: return PJRT_Buffer_Type_F4E2M1FN;
	case 33: return PJRT_Buffer_Type_F8E8M0FNU;
	case 17: return PJRT_Buffer_Type_TOKEN;
	default: return PJRT_Buffer_Type_INVALID;
	}
}

#define XLA_TUPLE 13

typedef struct dims_acc {
	pjrt_array_t *a;
	bool too_many;
} dims_acc_t;

static bool add_dim(uint64_t v, void *arg)
{
	dims_acc_t *acc = arg;
	if (acc->a->rank >= PJRT_MAX_RANK) {
		acc->too_many = true;
		return false;
	}
	acc->a->dims[acc->a->rank++] = (int64_t)v;
	return true;
}

typedef struct sig_builder {
	pjrt_array_t *items;
	size_t n, cap;
} sig_builder_t;

static bool sig_push(sig_builder_t *b, const pjrt_array_t *a)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 8;
		pjrt_array_t *p = realloc(b->items, cap * sizeof(*p));
		if (!p)
			return false;
		b->items = p;
		b->cap = cap;
	}
	b->items[b->n++] = *a;
	return true;
}

/* Appends the leaves of ShapeProto [data, data + len) to b (tuples flattened
 * depth first when flatten, refused otherwise). path names it in errors. */
static PJRT_Error *shape_leaves(const uint8_t *data, size_t len, bool flatten, int depth, const char *path,
				sig_builder_t *b)
{
	if (depth > MAX_TUPLE_DEPTH)
		return pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "hlo proto: %s: tuples nested deeper than %d",
				  path, MAX_TUPLE_DEPTH);
	pjrt_pb_t r = { data, data + len };
	pjrt_pb_field_t f;
	uint64_t etype = 0;
	pjrt_array_t a = { 0 };
	dims_acc_t acc = { &a, false };
	int rc;
	/* Element type first: tuple elements are handled after the whole shape
	 * is read, since fields may come in any order. */
	while ((rc = pjrt_pb_next(&r, &f)) > 0) {
		if (f.number == SHAPE_ELEMENT_TYPE && f.wire == 0) {
			etype = f.value;
		} else if (f.number == SHAPE_DIMENSIONS) {
			if (!pjrt_pb_varints(&f, add_dim, &acc))
				return pjrt_error(acc.too_many ? PJRT_Error_Code_UNIMPLEMENTED
							       : PJRT_Error_Code_INVALID_ARGUMENT,
						  "hlo proto: %s.dimensions: %s", path,
						  acc.too_many ? "rank above 16" : "malformed");
		}
	}
	if (rc < 0)
		return pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "hlo proto: %s: malformed ShapeProto", path);
	if (etype == XLA_TUPLE) {
		if (!flatten)
			return pjrt_error(PJRT_Error_Code_UNIMPLEMENTED,
					  "hlo proto: %s is a tuple: tupled parameters are not supported (the "
					  "framework should pass parameters untupled)", path);
		r = (pjrt_pb_t){ data, data + len };
		size_t k = 0;
		while ((rc = pjrt_pb_next(&r, &f)) > 0) {
			if (f.number != SHAPE_TUPLE_SHAPES || f.wire != 2)
				continue;
			char sub[256];
			snprintf(sub, sizeof(sub), "%s.tuple_shapes[%zu]", path, k++);
			PJRT_Error *err = shape_leaves(f.data, f.len, true, depth + 1, sub, b);
			if (err)
				return err;
		}
		if (rc < 0)
			return pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "hlo proto: %s: malformed", path);
		return NULL;
	}
	a.type = type_from_xla(etype);
	if (pjrt_type_size(a.type) == 0)
		return pjrt_error(PJRT_Error_Code_UNIMPLEMENTED,
				  "hlo proto: %s: element type %llu (%s) is not supported by the neuronsim plugin",
				  path, (unsigned long long)etype, pjrt_type_name(a.type));
	if (!pjrt_device_bytes(a.type, a.rank, a.dims, &a.nbytes))
		return pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
				  "hlo proto: %s: negative or overflowing dimensions", path);
	if (!sig_push(b, &a))
		return pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "out of memory reading the signature");
	return NULL;
}

void pjrt_signature_free(pjrt_signature_t *s)
{
	free(s->params);
	free(s->results);
	memset(s, 0, sizeof(*s));
}

static PJRT_Error *program_shape(const uint8_t *data, size_t len, pjrt_signature_t *sig)
{
	sig_builder_t params = { 0 }, results = { 0 };
	pjrt_pb_t r = { data, data + len };
	pjrt_pb_field_t f;
	int rc = 0;
	bool have_result = false;
	PJRT_Error *err = NULL;
	while (!err && (rc = pjrt_pb_next(&r, &f)) > 0) {
		char path[64];
		if (f.number == PROGRAM_SHAPE_PARAMETERS && f.wire == 2) {
			snprintf(path, sizeof(path), "host_program_shape.parameters[%zu]", params.n);
			err = shape_leaves(f.data, f.len, false, 0, path, &params);
		} else if (f.number == PROGRAM_SHAPE_RESULT && f.wire == 2) {
			/* A repeated occurrence of a message field merges; the framework
			 * writes it once, so a second one is malformed for us. */
			if (have_result)
				err = pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
						 "hlo proto: host_program_shape.result appears twice");
			else
				err = shape_leaves(f.data, f.len, true, 0, "host_program_shape.result", &results);
			have_result = true;
		}
	}
	if (!err && rc < 0)
		err = pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "hlo proto: malformed host_program_shape");
	if (!err && !have_result)
		err = pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "hlo proto: host_program_shape has no result");
	if (err) {
		free(params.items);
		free(results.items);
		return err;
	}
	sig->params = params.items;
	sig->n_params = params.n;
	sig->results = results.items;
	sig->n_results = results.n;
	return NULL;
}

PJRT_Error *pjrt_hlo_proto_info(const uint8_t *data, size_t len, pjrt_hlo_info_t *out)
{
	memset(out, 0, sizeof(*out));
	pjrt_pb_t r = { data, data + len };
	pjrt_pb_field_t f;
	int rc;
	const uint8_t *name = NULL;
	size_t name_len = 0;
	while ((rc = pjrt_pb_next(&r, &f)) > 0) {
		if (f.number == HLO_MODULE_NAME && f.wire == 2) {
			name = f.data;
			name_len = f.len;
		} else if (f.number == HLO_MODULE_HOST_PROGRAM_SHAPE && f.wire == 2) {
			out->program_shape = f.data;
			out->program_shape_size = f.len;
		}
	}
	if (rc < 0)
		return pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
				  "hlo proto: not a serialized HloModuleProto (malformed at byte %zu of %zu)",
				  (size_t)(r.p - data), len);
	if (!out->program_shape)
		return pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
				  "hlo proto: the HloModuleProto has no host_program_shape (field 4)");
	if (name_len > 4096 || memchr(name ? (const void *)name : "", 0, name_len))
		return pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "hlo proto: bad module name");
	out->name = malloc(name_len + 1);
	if (!out->name)
		return pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "out of memory");
	if (name_len)
		memcpy(out->name, name, name_len);
	out->name[name_len] = 0;
	PJRT_Error *err = program_shape(out->program_shape, out->program_shape_size, &out->sig);
	if (err)
		pjrt_hlo_info_free(out);
	return err;
}

void pjrt_hlo_info_free(pjrt_hlo_info_t *info)
{
	free(info->name);
	pjrt_signature_free(&info->sig);
	memset(info, 0, sizeof(*info));
}

/* ------------------------------------------------------------------ writer */

static size_t put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;
	do {
		uint8_t b = v & 0x7f;
		v >>= 7;
		p[n++] = b | (v ? 0x80 : 0);
	} while (v);
	return n;
}

static size_t put_bytes_field(uint8_t *p, uint32_t number, const uint8_t *data, size_t len)
{
	size_t n = put_varint(p, (uint64_t)number << 3 | 2);
	n += put_varint(p + n, len);
	if (len)
		memcpy(p + n, data, len);
	return n + len;
}

PJRT_Error *pjrt_hlo_with_config(const uint8_t *module, size_t module_len, const pjrt_hlo_info_t *info,
				 int64_t num_replicas, int64_t num_partitions, uint8_t **out, size_t *out_len)
{
	/* config: entry_computation_layout = the program shape (the framework's
	 * HloModule::CreateFromProtoWithConfig checks parameters and result against
	 * it), replica_count, num_partitions. */
	uint8_t cfg_tail[32];
	size_t tail = 0;
	tail += put_varint(cfg_tail + tail, CONFIG_REPLICA_COUNT << 3 | 0);
	tail += put_varint(cfg_tail + tail, (uint64_t)num_replicas);
	tail += put_varint(cfg_tail + tail, CONFIG_NUM_PARTITIONS << 3 | 0);
	tail += put_varint(cfg_tail + tail, (uint64_t)num_partitions);
	size_t cfg_len = 1 + 10 + info->program_shape_size + tail;
	size_t cap = 2 * (1 + 10) + module_len + cfg_len;
	uint8_t *cfg = malloc(cfg_len);
	uint8_t *buf = malloc(cap);
	if (!cfg || !buf) {
		free(cfg);
		free(buf);
		return pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "out of memory serializing the program");
	}
	size_t c = put_bytes_field(cfg, CONFIG_ENTRY_COMPUTATION_LAYOUT, info->program_shape,
				   info->program_shape_size);
	memcpy(cfg + c, cfg_tail, tail);
	c += tail;
	size_t n = put_bytes_field(buf, WITH_CONFIG_MODULE, module, module_len);
	n += put_bytes_field(buf + n, WITH_CONFIG_CONFIG, cfg, c);
	free(cfg);
	*out = buf;
	*out_len = n;
	return NULL;
}
