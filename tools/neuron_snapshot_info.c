/* neuron-snapshot info: what a snapshot file holds (metadata, the error record, the HLO module, every tensor), as text or JSON. */
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "nrt/nrt.h"
#include "neuron_snapshot.h"
#include "tool_common.h"

static void format_time(uint64_t ns, char *buf, size_t len)
{
	if (!ns) {
		snprintf(buf, len, "unknown");
		return;
	}
	time_t s = (time_t)(ns / 1000000000ull);
	struct tm tm;
	if (!gmtime_r(&s, &tm)) {
		snprintf(buf, len, "%" PRIu64 " ns", ns);
		return;
	}
	size_t n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, len - n, ".%09" PRIu64 "Z", (uint64_t)(ns % 1000000000ull));
}

static const char *status_name(int64_t st)
{
	const char *n = st >= INT32_MIN && st <= INT32_MAX ? tool_status_name((NRT_STATUS)st) : NULL;
	return n ? n : "unknown status";
}

/* Prints s with non-printable bytes escaped, so a file cannot drive the terminal. */
static void print_safe(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c >= 0x20 && c != 0x7f)
			fputc(c, f);
		else
			fprintf(f, "\\x%02x", c);
	}
}

static json_t *tensor_json(const snapshot_t *s, uint32_t i)
{
	const snapshot_tensor_t *t = &s->tensors[i];
	json_t *shape = json_array();
	for (uint32_t d = 0; d < t->rank; d++)
		json_array_append_new(shape, json_integer((json_int_t)t->shape[d]));
	char sum[17];
	snprintf(sum, sizeof(sum), "%016" PRIx64, t->checksum);
	return json_pack("{s:s%, s:s, s:s, s:o, s:i, s:I, s:s, s:b}", "name", t->name,
			 strlen(t->name), "role", snapshot_role_name(t->role), "dtype",
			 isa_dtype_name(t->dtype), "shape", shape, "alias_input", (int)t->alias_input,
			 "size", (json_int_t)t->size, "checksum", sum, "checksum_ok", 1);
}

static int info_json(const char *path, const snapshot_t *s)
{
	char module[256], sum[17], when[64];
	nsnap_hlo_module_name(s->hlo_text, s->hlo_size, module, sizeof(module));
	snprintf(sum, sizeof(sum), "%016" PRIx64, s->hlo_checksum);
	format_time(s->meta.wall_time_ns, when, sizeof(when));
	json_t *error = json_null();
	if (s->meta.error_json) {
		json_t *e = json_loads(s->meta.error_json, 0, NULL);
		if (e)
			error = e;
	}
	json_t *tensors = json_array();
	for (uint32_t i = 0; i < s->n_tensors; i++)
		json_array_append_new(tensors, tensor_json(s, i));
	char version[32];
	snprintf(version, sizeof(version), "%u.%u", s->version_major, s->version_minor);
	json_t *root = json_pack(
		"{s:s, s:s, s:I, s:{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:s, s:s, s:s, s:I}, s:o, "
		"s:{s:I, s:s, s:s, s:b}, s:o}",
		"file", path, "format_version", version, "file_size", (json_int_t)s->file_size,
		"meta", "module_name", s->meta.module_name, "kind", s->meta.kind,
		"process", (json_int_t)s->meta.process, "executable", (json_int_t)s->meta.executable,
		"device", (json_int_t)s->meta.device, "execution", (json_int_t)s->meta.execution,
		"status", (json_int_t)s->meta.status, "status_name", status_name(s->meta.status),
		"runtime_version", s->meta.runtime_version, "written", when,
		"wall_time_ns", (json_int_t)s->meta.wall_time_ns,
		"error", error,
		"hlo", "size", (json_int_t)s->hlo_size, "module", module, "checksum", sum,
		"checksum_ok", 1,
		"tensors", tensors);
	if (!root) {
		fprintf(stderr, "neuron-snapshot: %s: cannot format the JSON report (a string is not "
			"valid UTF-8, or out of memory)\n", path);
		return TOOL_EXIT_INPUT;
	}
	char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (!text) {
		fprintf(stderr, "neuron-snapshot: out of memory\n");
		return TOOL_EXIT_RUNTIME;
	}
	puts(text);
	free(text);
	return TOOL_EXIT_OK;
}

static void print_error_record(const char *error_json)
{
	json_t *e = json_loads(error_json, 0, NULL);
	printf("error record:\n");
	if (!json_is_object(e)) {
		printf("  ");
		print_safe(stdout, error_json);
		printf("\n");
		json_decref(e);
		return;
	}
	const char *key;
	json_t *v;
	json_object_foreach(e, key, v) {
		printf("  %s: ", key);
		if (json_is_string(v)) {
			print_safe(stdout, json_string_value(v));
		} else {
			char *t = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
			printf("%s", t ? t : "?");
			free(t);
		}
		printf("\n");
	}
	json_decref(e);
}

static int info_text(const char *path, const snapshot_t *s)
{
	char module[256], when[64], desc[256];
	nsnap_hlo_module_name(s->hlo_text, s->hlo_size, module, sizeof(module));
	format_time(s->meta.wall_time_ns, when, sizeof(when));
	printf("snapshot: %s (format %u.%u, %" PRIu64 " bytes, every checksum OK)\n", path,
	       s->version_major, s->version_minor, s->file_size);
	printf("module: ");
	print_safe(stdout, s->meta.module_name);
	printf("\nkind: ");
	print_safe(stdout, s->meta.kind);
	printf("\nprocess %" PRIu64 ", executable %" PRIu64 ", device %" PRIu64 ", execution %" PRIu64
	       "\n", s->meta.process, s->meta.executable, s->meta.device, s->meta.execution);
	printf("status: %" PRId64 " (%s)\n", s->meta.status,
	       s->meta.status == 0 && !strcmp(s->meta.kind, "inputs")
		       ? "recorded before the execution ran" : status_name(s->meta.status));
	printf("written: %s by ", when);
	print_safe(stdout, s->meta.runtime_version[0] ? s->meta.runtime_version : "?");
	printf("\n");
	if (s->meta.error_json)
		print_error_record(s->meta.error_json);
	if (s->hlo_size) {
		printf("hlo: %zu bytes, HloModule ", s->hlo_size);
		print_safe(stdout, module[0] ? module : "?");
		printf(", checksum %016" PRIx64 " OK\n", s->hlo_checksum);
	} else {
		printf("hlo: none (the NEFF was compiled without its HLO text; replay is not possible)\n");
	}
	uint32_t nin = 0;
	uint64_t bytes = 0;
	for (uint32_t i = 0; i < s->n_tensors; i++) {
		nin += s->tensors[i].role == SNAPSHOT_ROLE_INPUT;
		bytes += s->tensors[i].size;
	}
	printf("tensors: %u (%u input%s, %u output%s), %" PRIu64 " bytes\n", s->n_tensors, nin,
	       nin == 1 ? "" : "s", s->n_tensors - nin, s->n_tensors - nin == 1 ? "" : "s", bytes);
	for (uint32_t i = 0; i < s->n_tensors; i++) {
		const snapshot_tensor_t *t = &s->tensors[i];
		printf("  %-6s ", snapshot_role_name(t->role));
		print_safe(stdout, t->name);
		printf("  %s  %" PRIu64 " bytes  checksum %016" PRIx64 " OK",
		       ns_host_describe(t->dtype, t->rank, t->shape, desc, sizeof(desc)), t->size,
		       t->checksum);
		if (t->alias_input >= 0) {
			printf("  (updates input ");
			print_safe(stdout, s->tensors[t->alias_input].name);
			printf(" in place)");
		}
		printf("\n");
	}
	return TOOL_EXIT_OK;
}

int nsnap_cmd_info(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool json = false;
	int c;
	while ((c = getopt_long(argc, argv, "jh", longopts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'h': fputs(nsnap_usage_text, stdout); return TOOL_EXIT_OK;
		default: return nsnap_usage_error("%s", "bad option for info");
		}
	}
	if (optind >= argc)
		return nsnap_usage_error("%s", "info: missing FILE");
	if (optind + 1 < argc)
		return nsnap_usage_error("info: unexpected argument '%s'", argv[optind + 1]);
	const char *path = argv[optind];
	snapshot_t *s = nsnap_load(path);
	if (!s)
		return TOOL_EXIT_INPUT;
	int rc = json ? info_json(path, s) : info_text(path, s);
	snapshot_free(s);
	return rc;
}
