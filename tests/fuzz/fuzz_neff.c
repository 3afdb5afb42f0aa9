/* libFuzzer target for the NEFF reader: whatever the bytes, neff_parse either
 * refuses them or returns a view whose every pointer is safe to read. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "neuronsim/neff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;

static uint64_t touch(const void *p, uint64_t n)
{
	const uint8_t *b = p;
	uint64_t acc = 0;
	for (uint64_t i = 0; i < n; i++)
		acc += b[i];
	return acc;
}

/* Reads every byte the view points at, so ASan flags anything out of bounds. */
static void walk_view(const neff_view_t *v)
{
	uint64_t acc = touch(v->header, sizeof(*v->header)) + touch(v->meta, sizeof(*v->meta));
	acc += strlen(v->meta->model_name) + strlen(v->meta->compiler_version) +
	       strlen(v->meta->target);
	for (uint32_t i = 0; i < v->meta->n_tensors; i++) {
		acc += touch(&v->tensors[i], sizeof(neff_tensor_t));
		acc += strlen(v->tensors[i].name);
	}
	for (uint32_t c = 0; c < NEFF_MAX_CORES; c++) {
		for (uint32_t e = 0; e < ISA_ENGINE_COUNT; e++) {
			/* Cores beyond n_cores must be empty. */
			if (c >= v->meta->n_cores && (v->code[c][e] || v->code_count[c][e]))
				abort();
			acc += touch(v->code[c][e], (uint64_t)v->code_count[c][e] * sizeof(isa_insn_t));
			for (uint32_t i = 0; i < v->code_count[c][e]; i++) {
				const char *hn, *op, *file;
				uint32_t line;
				neff_debug_lookup(v, v->code[c][e][i].debug_id, &hn, &op, &file, &line);
				if (hn)
					acc += strlen(hn) + strlen(op) + strlen(file) + line;
			}
		}
	}
	acc += touch(v->consts, v->consts_size);
	for (uint32_t i = 0; i < v->n_debug; i++) {
		const char *hn, *op, *file;
		uint32_t line;
		neff_debug_lookup(v, i, &hn, &op, &file, &line);
		acc += strlen(hn) + strlen(op) + strlen(file) + line;
	}
	acc += touch(v->debug_strings, v->debug_strings_size);
	acc += touch(v->hlo_text, v->hlo_size);
	sink = acc;
}

/* The input is a NEFF. Unless the two low bits of byte 40 (the low byte of
 * header.checksum) are zero, the checksum is recomputed first: most mutations
 * then get past the checksum to the structural checks, while 1 in 4 inputs
 * still exercise the checksum check itself. Seeds are plain NEFFs. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* Exact-size 8-aligned copy: malloc aligns, and ASan sees reads past size. */
	uint8_t *buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	if (size)
		memcpy(buf, data, size);
	if (size >= sizeof(neff_header_t) && (buf[offsetof(neff_header_t, checksum)] & 3)) {
		neff_header_t h;
		memcpy(&h, buf, sizeof(h));
		uint64_t start = h.header_size < size ? h.header_size : size;
		uint64_t sum = XXH64(buf + start, size - (size_t)start, 0);
		memcpy(buf + offsetof(neff_header_t, checksum), &sum, sizeof(sum));
	}
	neff_view_t v;
	ns_status_t st = neff_parse(buf, size, &v);
	if (!st) {
		walk_view(&v);
	} else {
		/* Failure contract: a zeroed view and a one-line message. */
		static const neff_view_t zero;
		const char *err = ns_status_message(st);
		if (memcmp(&v, &zero, sizeof(v)) != 0 || err[0] == '\0' || strchr(err, '\n'))
			abort();
		ns_status_free(st);
	}
	free(buf);
	return 0;
}
