/* libFuzzer target for the HLO snapshot reader: whatever the bytes,
 * snapshot_parse either refuses them with a one-line message or returns a
 * snapshot whose every pointer is safe to read. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "neuronsim/snapshot.h"

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

/* Reads every byte the snapshot points at, so ASan flags anything out of bounds,
 * and checks what the reader promises (sizes agree with dtype and shape). */
static void walk(const snapshot_t *s)
{
	uint64_t acc = strlen(s->meta.module_name) + strlen(s->meta.kind) +
		       strlen(s->meta.runtime_version) + touch(s->hlo_text, s->hlo_size + 1);
	if (s->meta.error_json)
		acc += strlen(s->meta.error_json);
	for (uint32_t i = 0; i < s->n_tensors; i++) {
		const snapshot_tensor_t *t = &s->tensors[i];
		uint64_t n = isa_dtype_size(t->dtype);
		if (!n || t->rank > SNAPSHOT_MAX_RANK || !memchr(t->name, 0, sizeof(t->name)))
			abort();
		for (uint32_t d = 0; d < t->rank; d++)
			n *= t->shape[d];
		if (n != t->size || XXH64(t->data, t->size, 0) != t->checksum)
			abort();
		acc += touch(t->data, t->size) + strlen(t->name);
	}
	sink = acc;
}

/* Seeds are valid snapshots. Unless the two low bits of byte 40 (the low byte
 * of the metadata checksum) are zero, the metadata, HLO and header checksums
 * are recomputed first, so most mutations reach the JSON and bounds checks
 * while 1 in 4 inputs still exercise the checksum checks. */
static void reseal(uint8_t *b, size_t size)
{
	uint64_t f[6];
	memcpy(f, b + 24, sizeof(f)); /* meta off, size, sum, hlo off, size, sum */
	if (f[0] <= size && f[1] <= size - f[0]) {
		f[2] = XXH64(b + f[0], (size_t)f[1], 0);
		memcpy(b + 40, &f[2], 8);
	}
	if (f[3] <= size && f[4] <= size - f[3]) {
		f[5] = XXH64(b + f[3], (size_t)f[4], 0);
		memcpy(b + 64, &f[5], 8);
	}
	uint64_t sum = XXH64(b, 120, 0);
	memcpy(b + 120, &sum, 8);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	if (size)
		memcpy(buf, data, size);
	if (size >= SNAPSHOT_HEADER_SIZE && (buf[40] & 3))
		reseal(buf, size);
	snapshot_t *s = (snapshot_t *)0x1;
	char err[512];
	err[0] = '\0';
	ns_status_code_t st = ns_status_consume_message(snapshot_parse(buf, size, &s), err, sizeof(err));
	free(buf); /* the snapshot holds its own copy */
	if (st == NS_STATUS_OK) {
		walk(s);
		snapshot_free(s);
	} else if (s != NULL || err[0] == '\0' || strchr(err, '\n')) {
		/* Failure contract: no snapshot and a one-line message. */
		abort();
	}
	return 0;
}
