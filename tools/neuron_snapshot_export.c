/* neuron-snapshot export: every tensor of a snapshot as a member of a numpy .npz archive. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <zip.h>

#include "neuronsim/half.h"
#include "neuronsim/npy.h"
#include "neuron_snapshot.h"
#include "tool_common.h"

/* "ROLE_NAME.npy" with the characters a zip member name or a numpy key should
 * not carry replaced by '_'. */
static void member_name(const snapshot_tensor_t *t, char *buf, size_t len)
{
	size_t n = (size_t)snprintf(buf, len, "%s_", snapshot_role_name(t->role));
	for (const char *p = t->name; *p && n + 5 < len; p++) {
		unsigned char ch = (unsigned char)*p;
		buf[n++] = (ch < 0x20 || ch == '/' || ch == '\\' || ch == ':' || ch == 0x7f) ? '_' : (char)ch;
	}
	snprintf(buf + n, len - n, ".npy");
}

int nsnap_cmd_export(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "npz", required_argument, NULL, 'n' },
		{ "bf16", required_argument, NULL, 'b' },
		{ "compress", no_argument, NULL, 'z' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *out = NULL;
	bool bf16_raw = false, compress = false;
	int c;
	while ((c = getopt_long(argc, argv, "zh", longopts, NULL)) != -1) {
		switch (c) {
		case 'n': out = optarg; break;
		case 'b':
			if (strcmp(optarg, "f32") == 0)
				bf16_raw = false;
			else if (strcmp(optarg, "raw") == 0)
				bf16_raw = true;
			else
				return nsnap_usage_error("--bf16 wants f32 or raw, got '%s'", optarg);
			break;
		case 'z': compress = true; break;
		case 'h': fputs(nsnap_usage_text, stdout); return TOOL_EXIT_OK;
		default: return nsnap_usage_error("%s", "bad option for export");
		}
	}
	if (optind >= argc)
		return nsnap_usage_error("%s", "export: missing FILE");
	if (optind + 1 < argc)
		return nsnap_usage_error("export: unexpected argument '%s'", argv[optind + 1]);
	if (!out || !out[0])
		return nsnap_usage_error("%s", "export: missing --npz OUT.npz");
	const char *path = argv[optind];
	snapshot_t *s = nsnap_load(path);
	if (!s)
		return TOOL_EXIT_INPUT;
	if (s->n_tensors == 0) {
		fprintf(stderr, "neuron-snapshot: %s holds no tensors: nothing to export\n", path);
		snapshot_free(s);
		return TOOL_EXIT_INPUT;
	}
	int zerr = 0;
	zip_t *za = zip_open(out, ZIP_CREATE | ZIP_TRUNCATE, &zerr);
	if (!za) {
		zip_error_t ze;
		zip_error_init_with_code(&ze, zerr);
		fprintf(stderr, "neuron-snapshot: cannot create %s: %s\n", out, zip_error_strerror(&ze));
		zip_error_fini(&ze);
		snapshot_free(s);
		return TOOL_EXIT_OUTPUT;
	}
	int rc = TOOL_EXIT_OK;
	/* one line per member, printed once the archive is written */
	typedef char line_t[SNAPSHOT_NAME_MAX + 320];
	line_t *lines = calloc(s->n_tensors, sizeof(line_t));
	if (!lines) {
		fprintf(stderr, "neuron-snapshot: out of memory\n");
		zip_discard(za);
		snapshot_free(s);
		return TOOL_EXIT_RUNTIME;
	}
	for (uint32_t i = 0; i < s->n_tensors && rc == TOOL_EXIT_OK; i++) {
		const snapshot_tensor_t *t = &s->tensors[i];
		char member[SNAPSHOT_NAME_MAX + 64], desc[256];
		member_name(t, member, sizeof(member));
		/* two names that sanitise alike get a numbered suffix */
		for (int k = 1; zip_name_locate(za, member, 0) >= 0; k++) {
			char base[SNAPSHOT_NAME_MAX + 32];
			member_name(t, base, sizeof(base));
			base[strlen(base) - 4] = '\0';
			snprintf(member, sizeof(member), "%s_%d.npy", base, k);
		}
		isa_dtype_t dt = (isa_dtype_t)t->dtype;
		const void *data = t->data;
		float *conv = NULL;
		if (dt == ISA_DT_BF16 && !bf16_raw) {
			/* every bf16 value is exactly a float32: numpy gets real numbers */
			uint64_t n = t->size / 2;
			conv = malloc(n ? n * sizeof(float) : 1);
			if (!conv) {
				fprintf(stderr, "neuron-snapshot: out of memory converting '%s'\n", t->name);
				rc = TOOL_EXIT_RUNTIME;
				break;
			}
			const uint16_t *h = t->data;
			for (uint64_t e = 0; e < n; e++)
				conv[e] = ns_bf16_to_f32(h[e]);
			dt = ISA_DT_F32;
			data = conv;
		}
		void *buf = NULL;
		size_t size = 0;
		ns_status_t ns = npy_encode(dt, t->rank, t->shape, data, &buf, &size);
		free(conv);
		if (ns) {
			fprintf(stderr, "neuron-snapshot: tensor '%s': %s\n", t->name, ns_status_message(ns));
			ns_status_free(ns);
			rc = TOOL_EXIT_RUNTIME;
			break;
		}
		zip_source_t *src = zip_source_buffer(za, buf, size, 1);
		if (!src) {
			free(buf);
			fprintf(stderr, "neuron-snapshot: %s: %s\n", out, zip_strerror(za));
			rc = TOOL_EXIT_OUTPUT;
			break;
		}
		zip_int64_t idx = zip_file_add(za, member, src, ZIP_FL_ENC_UTF_8);
		if (idx < 0) {
			zip_source_free(src);
			fprintf(stderr, "neuron-snapshot: %s: cannot add %s: %s\n", out, member,
				zip_strerror(za));
			rc = TOOL_EXIT_OUTPUT;
			break;
		}
		if (zip_set_file_compression(za, (zip_uint64_t)idx,
					     compress ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0) != 0) {
			fprintf(stderr, "neuron-snapshot: %s: %s\n", out, zip_strerror(za));
			rc = TOOL_EXIT_OUTPUT;
			break;
		}
		snprintf(lines[i], sizeof(line_t), "%s: %s%s", member,
			 ns_host_describe(dt, t->rank, t->shape, desc, sizeof(desc)),
			 t->dtype == ISA_DT_BF16 ? (bf16_raw ? " (bf16 bits as <V2)" : " (from bf16)") : "");
	}
	if (rc != TOOL_EXIT_OK) {
		zip_discard(za);
	} else if (zip_close(za) != 0) {
		fprintf(stderr, "neuron-snapshot: cannot write %s: %s\n", out, zip_strerror(za));
		zip_discard(za);
		rc = TOOL_EXIT_OUTPUT;
	} else {
		/* the archive holds the snapshot's tensors: keep the snapshot's mode */
		if (chmod(out, 0600) != 0)
			fprintf(stderr, "neuron-snapshot: warning: cannot set mode 0600 on %s: %s\n", out,
				strerror(errno));
		for (uint32_t i = 0; i < s->n_tensors; i++)
			printf("%s\n", lines[i]);
		printf("export: %u tensor%s from %s to %s\n", s->n_tensors, s->n_tensors == 1 ? "" : "s",
		       path, out);
	}
	free(lines);
	snapshot_free(s);
	return rc;
}
