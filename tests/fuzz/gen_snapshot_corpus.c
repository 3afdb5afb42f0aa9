/* Writes the seed corpus of fuzz_snapshot (tests/fuzz/corpus/fuzz_snapshot/):
 * small valid snapshots covering every dtype, rank 0, empty tensors, an error
 * record and an empty file. Usage: gen_snapshot_corpus DIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "neuronsim/snapshot.h"

static void save(const char *dir, const char *name, const snapshot_meta_t *m, const char *hlo,
		 const snapshot_tensor_t *t, uint32_t n)
{
	char path[4096], err[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (ns_status_consume_message(snapshot_write(path, m, hlo, hlo ? strlen(hlo) : 0, t, n), err,
				      sizeof(err)) != NS_STATUS_OK) {
		fprintf(stderr, "gen_snapshot_corpus: %s\n", err);
		exit(1);
	}
	snapshot_t *s;
	if (ns_status_consume_message(snapshot_read(path, &s), err, sizeof(err)) != NS_STATUS_OK) {
		fprintf(stderr, "gen_snapshot_corpus: written file does not read back: %s\n", err);
		exit(1);
	}
	printf("%s: %llu bytes\n", path, (unsigned long long)s->file_size);
	snapshot_free(s);
}

static snapshot_tensor_t tensor(const char *name, uint32_t role, uint32_t dt, uint32_t rank,
				uint64_t d0, uint64_t d1, const void *data)
{
	snapshot_tensor_t t;
	memset(&t, 0, sizeof(t));
	snprintf(t.name, sizeof(t.name), "%s", name);
	t.role = role;
	t.dtype = dt;
	t.rank = rank;
	t.shape[0] = d0;
	t.shape[1] = d1;
	t.alias_input = -1;
	t.size = isa_dtype_size(dt);
	for (uint32_t d = 0; d < rank; d++)
		t.size *= t.shape[d];
	t.data = data;
	return t;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: gen_snapshot_corpus DIR\n");
		return 2;
	}
	static const unsigned char bytes[64] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
						 16, 0x80, 0x7f, 0xc0, 0xff, 1, 0, 1, 1 };
	snapshot_meta_t err_meta = {
		.module_name = "SyncTensorsGraph.12", .kind = "error", .process = 0, .executable = 1,
		.device = 0, .execution = 3, .status = 1003, .runtime_version = "neuronsim 0.1.0",
		.wall_time_ns = 1700000000000000000ull,
		.error_json = "{\"kind\":\"nan\",\"hlo_name\":\"log.3\",\"op_type\":\"aten::log\","
			      "\"source_file\":\"train.py\",\"source_line\":7,\"first_index\":1,\"count\":2}",
	};
	const char *hlo = "HloModule SyncTensorsGraph.12\n\nENTRY main {\n"
			  "  p0 = f32[2,2] parameter(0)\n  ROOT log.3 = f32[2,2] log(p0)\n}\n";
	snapshot_tensor_t t[16];
	t[0] = tensor("input0", SNAPSHOT_ROLE_INPUT, ISA_DT_F32, 2, 2, 2, bytes);
	t[1] = tensor("output0", SNAPSHOT_ROLE_OUTPUT, ISA_DT_F32, 2, 2, 2, bytes + 16);
	save(argv[1], "error.snap", &err_meta, hlo, t, 2);

	snapshot_meta_t m = { .module_name = "m", .kind = "inputs" };
	uint32_t n = 0;
	for (uint32_t dt = 1; dt < ISA_DT_COUNT; dt++) {
		char name[32];
		snprintf(name, sizeof(name), "t%u", dt);
		const void *d = dt == ISA_DT_PRED ? bytes + 20 : bytes;
		t[n++] = tensor(name, SNAPSHOT_ROLE_INPUT, dt, dt % 3, 2, 2, d);
	}
	t[n++] = tensor("empty", SNAPSHOT_ROLE_OUTPUT, ISA_DT_S32, 2, 0, 5, NULL);
	t[n - 2].alias_input = 0;
	save(argv[1], "dtypes.snap", &m, NULL, t, n);

	snapshot_meta_t none = { 0 };
	save(argv[1], "empty.snap", &none, NULL, NULL, 0);
	return 0;
}
