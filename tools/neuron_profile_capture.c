/* neuron-profile capture: loads a NEFF on NeuronCore 0 and executes it once under the profiler (inputs zeros or .npy files), writing the trace. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "neuron_profile.h"
#include "neuronsim/npy.h"
#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"
#include "nrt/nrt_profile.h"
#include "tool_common.h"

/* The input's bytes: its .npy when given (dtype and shape must match), else zeros. */
static int capture_input(const capture_opts_t *o, const nrt_tensor_info_t *t, void *buf, bool *used)
{
	memset(buf, 0, t->size);
	int k = 0;
	while (k < o->n_inputs && strcmp(o->inputs[2 * k], t->name) != 0)
		k++;
	if (k == o->n_inputs)
		return 0;
	used[k] = true;
	const char *path = o->inputs[2 * k + 1];
	npy_array_t a;
	char got[128], want[128];
	ns_status_t st = npy_read_file(path, &a);
	if (st) {
		fprintf(stderr, "neuron-profile: input '%s': %s\n", t->name, ns_status_message(st));
		ns_status_free(st);
		return TOOL_EXIT_INPUT;
	}
	uint64_t shape[NPY_MAX_RANK] = { 0 };
	for (uint32_t d = 0; d < t->ndim && d < NPY_MAX_RANK; d++)
		shape[d] = (uint64_t)t->shape[d];
	isa_dtype_t dt = tool_dtype_from_nrt(t->dtype);
	bool ok = (a.dtype == dt || (dt == ISA_DT_U8 && a.dtype == ISA_DT_PRED)) && a.rank == t->ndim &&
		  a.nbytes == t->size;
	for (uint32_t d = 0; ok && d < a.rank; d++)
		ok = a.shape[d] == shape[d];
	if (!ok) {
		fprintf(stderr, "neuron-profile: input '%s': %s holds %s, the model expects %s: save the array "
			"with that dtype and shape\n", t->name, path,
			ns_host_describe(a.dtype, a.rank, a.shape, got, sizeof(got)),
			ns_host_describe(dt, t->ndim, shape, want, sizeof(want)));
		npy_array_free(&a);
		return TOOL_EXIT_INPUT;
	}
	memcpy(buf, a.data, a.nbytes);
	npy_array_free(&a);
	return 0;
}

int nprof_capture(const capture_opts_t *o)
{
	char sbuf[256];
	void *neff;
	size_t size;
	int orc = tool_open_neff("neuron-profile", o->neff, &neff, &size);
	if (orc != TOOL_EXIT_OK)
		return orc;
	NRT_STATUS st;
	int rc = 0;
	nrt_model_t *model = NULL;
	nrt_tensor_info_array_t *info = NULL;
	nrt_tensor_set_t *in_set = NULL, *out_set = NULL;
	nrt_tensor_t **tensors = NULL;
	bool *used = calloc((size_t)o->n_inputs + 1, sizeof(*used));
	st = nrt_load(neff, size, 0, 1, &model);
	if (st != NRT_SUCCESS) {
		fprintf(stderr, "neuron-profile: cannot load '%s': %s\n", o->neff, tool_status_str(st, sbuf, sizeof(sbuf)));
		rc = st == NRT_INVALID || st == NRT_UNSUPPORTED_NEFF_VERSION ? TOOL_EXIT_INPUT : TOOL_EXIT_RUNTIME;
		goto out;
	}
	if ((st = nrt_get_model_tensor_info(model, &info)) != NRT_SUCCESS || !used ||
	    nrt_allocate_tensor_set(&in_set) != NRT_SUCCESS || nrt_allocate_tensor_set(&out_set) != NRT_SUCCESS ||
	    !(tensors = calloc(info->tensor_count + 1, sizeof(*tensors)))) {
		fprintf(stderr, "neuron-profile: preparing the model's tensors failed: %s\n",
			tool_status_str(st, sbuf, sizeof(sbuf)));
		rc = TOOL_EXIT_RUNTIME;
		goto out;
	}
	for (uint64_t i = 0; i < info->tensor_count && !rc; i++) {
		const nrt_tensor_info_t *t = &info->tensor_array[i];
		bool is_in = t->usage == NRT_TENSOR_USAGE_INPUT;
		st = nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, t->size, t->name, &tensors[i]);
		if (st == NRT_SUCCESS)
			st = nrt_add_tensor_to_tensor_set(is_in ? in_set : out_set, t->name, tensors[i]);
		if (st != NRT_SUCCESS) {
			fprintf(stderr, "neuron-profile: tensor '%s' (%zu bytes): %s\n", t->name, t->size,
				tool_status_str(st, sbuf, sizeof(sbuf)));
			rc = TOOL_EXIT_RUNTIME;
			break;
		}
		if (!is_in || !t->size)
			continue;
		void *buf = malloc(t->size);
		if (!buf) {
			fprintf(stderr, "neuron-profile: out of memory for input '%s'\n", t->name);
			rc = TOOL_EXIT_RUNTIME;
			break;
		}
		rc = capture_input(o, t, buf, used);
		if (!rc && (st = nrt_tensor_write(tensors[i], buf, 0, t->size)) != NRT_SUCCESS) {
			fprintf(stderr, "neuron-profile: writing input '%s': %s\n", t->name,
				tool_status_str(st, sbuf, sizeof(sbuf)));
			rc = TOOL_EXIT_RUNTIME;
		}
		free(buf);
	}
	for (int k = 0; !rc && k < o->n_inputs; k++) {
		if (used[k])
			continue;
		fprintf(stderr, "neuron-profile: input '%s': the model has no input of that name; its inputs are:",
			o->inputs[2 * k]);
		for (uint64_t i = 0; i < info->tensor_count; i++)
			if (info->tensor_array[i].usage == NRT_TENSOR_USAGE_INPUT)
				fprintf(stderr, " %s", info->tensor_array[i].name);
		fprintf(stderr, "\n");
		rc = TOOL_EXIT_INPUT;
	}
	if (rc)
		goto out;
	if ((st = nrt_profile_start(model, o->session)) != NRT_SUCCESS) {
		fprintf(stderr, "neuron-profile: cannot start the profile for '%s': %s\n", o->session,
			tool_status_str(st, sbuf, sizeof(sbuf)));
		/* NRT_INVALID: the profile's path cannot be written (the runtime said why) */
		rc = st == NRT_INVALID ? TOOL_EXIT_OUTPUT : TOOL_EXIT_RUNTIME;
		goto out;
	}
	NRT_STATUS est = nrt_execute(model, in_set, out_set);
	if ((st = nrt_profile_stop(o->session)) != NRT_SUCCESS) {
		fprintf(stderr, "neuron-profile: writing the profile '%s' failed: %s\n", o->session,
			tool_status_str(st, sbuf, sizeof(sbuf)));
		rc = TOOL_EXIT_OUTPUT;
	}
	if (est != NRT_SUCCESS) {
		fprintf(stderr, "neuron-profile: the execution of '%s' failed: %s%s\n", o->neff,
			tool_status_str(est, sbuf, sizeof(sbuf)),
			o->ignore_exec_errors ? " (ignored: --ignore-exec-errors)" : "; the profile holds it "
			"(--ignore-exec-errors makes this not an error)");
		if (!o->ignore_exec_errors && !rc)
			rc = TOOL_EXIT_EXEC;
	}
	if (!rc || rc == TOOL_EXIT_EXEC)
		printf("profile: %s\n", o->session);
out:
	for (uint64_t i = 0; tensors && info && i < info->tensor_count; i++)
		if (tensors[i])
			nrt_tensor_free(&tensors[i]);
	free(tensors);
	free(used);
	nrt_destroy_tensor_set(&in_set);
	nrt_destroy_tensor_set(&out_set);
	if (info)
		nrt_free_model_tensor_info(info);
	if (model)
		nrt_unload(model);
	nrt_close();
	free(neff);
	return rc;
}
