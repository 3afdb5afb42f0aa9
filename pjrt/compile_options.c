/* The part of a serialized xla.CompileOptionsProto the plugin uses: replicas, partitions, the device assignment, tupled arguments; everything else is skipped. */
#include <stdlib.h>
#include <string.h>

#include "pjrt_internal.h"

/* Field numbers (xla/pjrt/proto/compile_options.proto, xla/xla_data.proto). */
enum {
	OPTS_PARAMETER_IS_TUPLED_ARGUMENTS = 2,
	OPTS_EXECUTABLE_BUILD_OPTIONS = 3,
	OPTS_COMPILE_PORTABLE_EXECUTABLE = 4,
	BUILD_NUM_REPLICAS = 4,
	BUILD_NUM_PARTITIONS = 5,
	BUILD_USE_SPMD_PARTITIONING = 6,
	BUILD_DEVICE_ASSIGNMENT = 9,
	ASSIGN_REPLICA_COUNT = 1,
	ASSIGN_COMPUTATION_COUNT = 2,
	ASSIGN_COMPUTATION_DEVICES = 3,
	COMPUTATION_DEVICE_REPLICA_DEVICE_IDS = 1,
};

#define MAX_REPLICAS 4096

typedef struct ids {
	int64_t *v;
	size_t n;
} ids_t;

static bool add_id(uint64_t value, void *arg)
{
	ids_t *ids = arg;
	if (ids->n >= MAX_REPLICAS)
		return false;
	ids->v[ids->n++] = (int64_t)value;
	return true;
}

static PJRT_Error *malformed(const char *what)
{
	return pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "compile options: malformed CompileOptionsProto (%s)",
			  what);
}

static PJRT_Error *decode_assignment(const uint8_t *data, size_t len, pjrt_compile_options_t *o)
{
	pjrt_pb_t r = { data, data + len };
	pjrt_pb_field_t f;
	int rc;
	int64_t replicas = 0, computations = 0;
	size_t n_comp = 0;
	while ((rc = pjrt_pb_next(&r, &f)) > 0) {
		if (f.number == ASSIGN_REPLICA_COUNT && f.wire == 0) {
			replicas = (int64_t)f.value;
		} else if (f.number == ASSIGN_COMPUTATION_COUNT && f.wire == 0) {
			computations = (int64_t)f.value;
		} else if (f.number == ASSIGN_COMPUTATION_DEVICES && f.wire == 2) {
			/* Only computation (partition) 0 is used: more are refused by
			 * the num_partitions check. */
			if (n_comp++ > 0)
				continue;
			pjrt_pb_t cr = { f.data, f.data + f.len };
			pjrt_pb_field_t cf;
			int crc;
			ids_t ids = { calloc(MAX_REPLICAS, sizeof(int64_t)), 0 };
			if (!ids.v)
				return pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "out of memory");
			while ((crc = pjrt_pb_next(&cr, &cf)) > 0) {
				if (cf.number == COMPUTATION_DEVICE_REPLICA_DEVICE_IDS &&
				    !pjrt_pb_varints(&cf, add_id, &ids)) {
					free(ids.v);
					return malformed("device_assignment.computation_devices[0]");
				}
			}
			if (crc < 0) {
				free(ids.v);
				return malformed("device_assignment.computation_devices[0]");
			}
			free(o->assignment);
			o->assignment = ids.v;
			o->n_assignment = ids.n;
		}
	}
	if (rc < 0)
		return malformed("device_assignment");
	if (computations > 1)
		o->num_partitions = computations > o->num_partitions ? computations : o->num_partitions;
	if (o->assignment && replicas && (size_t)replicas != o->n_assignment)
		return pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
				  "compile options: device_assignment has replica_count %lld but %zu device ids",
				  (long long)replicas, o->n_assignment);
	return NULL;
}

static PJRT_Error *decode_build(const uint8_t *data, size_t len, pjrt_compile_options_t *o)
{
	pjrt_pb_t r = { data, data + len };
	pjrt_pb_field_t f;
	int rc;
	const uint8_t *assign = NULL;
	size_t assign_len = 0;
	while ((rc = pjrt_pb_next(&r, &f)) > 0) {
		if (f.number == BUILD_NUM_REPLICAS && f.wire == 0)
			o->num_replicas = (int64_t)f.value;
		else if (f.number == BUILD_NUM_PARTITIONS && f.wire == 0)
			o->num_partitions = (int64_t)f.value;
		else if (f.number == BUILD_USE_SPMD_PARTITIONING && f.wire == 0)
			o->spmd = f.value != 0;
		else if (f.number == BUILD_DEVICE_ASSIGNMENT && f.wire == 2) {
			assign = f.data;
			assign_len = f.len;
		}
	}
	if (rc < 0)
		return malformed("executable_build_options");
	/* After the replica count, so the assignment can be checked against it. */
	return assign ? decode_assignment(assign, assign_len, o) : NULL;
}

PJRT_Error *pjrt_compile_options_decode(const uint8_t *data, size_t len, pjrt_compile_options_t *out)
{
	memset(out, 0, sizeof(*out));
	out->num_replicas = 0;
	out->num_partitions = 0;
	pjrt_pb_t r = { data, data + len };
	pjrt_pb_field_t f;
	int rc = 0;
	PJRT_Error *err = NULL;
	while (!err && (rc = pjrt_pb_next(&r, &f)) > 0) {
		if (f.number == OPTS_PARAMETER_IS_TUPLED_ARGUMENTS && f.wire == 0)
			out->tupled_arguments = f.value != 0;
		else if (f.number == OPTS_COMPILE_PORTABLE_EXECUTABLE && f.wire == 0)
			out->portable = f.value != 0;
		else if (f.number == OPTS_EXECUTABLE_BUILD_OPTIONS && f.wire == 2)
			err = decode_build(f.data, f.len, out);
	}
	if (!err && data && len && rc < 0)
		err = malformed("top level");
	/* proto3 leaves zeros out: unset means one. */
	if (out->num_replicas <= 0)
		out->num_replicas = 1;
	if (out->num_partitions <= 0)
		out->num_partitions = 1;
	if (err)
		pjrt_compile_options_free(out);
	return err;
}

void pjrt_compile_options_free(pjrt_compile_options_t *o)
{
	free(o->assignment);
	o->assignment = NULL;
	o->n_assignment = 0;
}

PJRT_Error *pjrt_compile_options_check(pjrt_client_t *client, const pjrt_compile_options_t *o)
{
	if (o->num_partitions > 1 || o->spmd)
		return pjrt_error(PJRT_Error_Code_UNIMPLEMENTED,
				  "compile options ask for %lld partitions%s: SPMD partitioning is not "
				  "supported by neuronsim; compile one partition per replica (unset "
				  "XLA_USE_SPMD)",
				  (long long)o->num_partitions, o->spmd ? " with SPMD partitioning" : "");
	if (o->tupled_arguments)
		return pjrt_error(PJRT_Error_Code_UNIMPLEMENTED,
				  "compile options: parameter_is_tupled_arguments is not supported: pass "
				  "the entry parameters untupled");
	if (o->num_replicas > (int64_t)client->n_devices)
		return pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
				  "compile options ask for %lld replicas, only %u NeuronCores are visible "
				  "(NEURON_RT_VISIBLE_CORES)", (long long)o->num_replicas, client->n_devices);
	if (o->assignment) {
		if (o->n_assignment != (size_t)o->num_replicas)
			return pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
					  "compile options: device_assignment names %zu devices for %lld "
					  "replicas", o->n_assignment, (long long)o->num_replicas);
		for (size_t i = 0; i < o->n_assignment; i++) {
			if (o->assignment[i] < 0 || o->assignment[i] >= (int64_t)client->n_devices)
				return pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
						  "compile options: device_assignment replica %zu is device "
						  "%lld, not one of the %u visible NeuronCores", i,
						  (long long)o->assignment[i], client->n_devices);
			for (size_t j = 0; j < i; j++)
				if (o->assignment[j] == o->assignment[i])
					return pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
							  "compile options: device %lld is assigned to "
							  "replicas %zu and %zu",
							  (long long)o->assignment[i], j, i);
		}
	}
	return NULL;
}
