/* A libnrt client as an SDK user writes it: only the SDK headers under nrt/ and the documented calls, names and types. */
#include <nrt/nrt.h>
#include <nrt/nrt_async.h>
#include <nrt/nrt_experimental.h>
#include <nrt/nrt_profile.h>
#include <nrt/nrt_status.h>
#include <nrt/nrt_sys_trace.h>
#include <nrt/nrt_version.h>

#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "sdk_client.h"

static char *g_err;
static size_t g_err_len;

static int fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(g_err, g_err_len, fmt, ap);
	va_end(ap);
	return -1;
}

#define CALL(expr)                                                                           \
	do {                                                                                 \
		NRT_STATUS st_ = (expr);                                                     \
		if (st_ != NRT_SUCCESS)                                                      \
			return fail("%s: %s (%d)", #expr, nrt_get_status_as_str(st_), (int)st_); \
	} while (0)

static int exec_count;

static void on_exec(void *params, uint32_t model_id, uint32_t vnc, uint64_t job_id, NRT_STATUS status)
{
	(void)model_id;
	(void)vnc;
	(void)job_id;
	if (status == NRT_SUCCESS)
		__atomic_add_fetch((int *)params, 1, __ATOMIC_SEQ_CST);
}

static int run(const void *neff, size_t size, const char *work_dir)
{
	nrt_version_t ver;
	CALL(nrt_get_version(&ver, sizeof(ver)));
	nrt_instance_info_t inst;
	CALL(nrt_get_instance_info(&inst, sizeof(inst)));
	uint32_t vnc_total = 0;
	CALL(nrt_get_total_vnc_count(&vnc_total));

	CALL(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "2.1", "1.0"));
	nrt_model_t *model = NULL;
	CALL(nrt_load(neff, size, -1, -1, &model));
	nrt_model_info_t minfo;
	size_t minfo_size = 0;
	CALL(nrt_get_model_info(model, &minfo, sizeof(minfo), &minfo_size));
	if (minfo_size != sizeof(minfo))
		return fail("nrt_get_model_info wrote %zu bytes", minfo_size);

	/* Allocate one device tensor per model tensor, as the SDK's examples do. */
	nrt_tensor_info_array_t *info = NULL;
	CALL(nrt_get_model_tensor_info(model, &info));
	nrt_tensor_set_t *inputs = NULL, *outputs = NULL;
	CALL(nrt_allocate_tensor_set(&inputs));
	CALL(nrt_allocate_tensor_set(&outputs));
	nrt_tensor_t *tensors[8] = { 0 };
	nrt_tensor_t *out = NULL;
	size_t n_floats = 0;
	if (info->tensor_count > 8)
		return fail("model has %llu tensors", (unsigned long long)info->tensor_count);
	for (uint64_t i = 0; i < info->tensor_count; i++) {
		nrt_tensor_info_t *ti = &info->tensor_array[i];
		CALL(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, (int)minfo.vnc, ti->size, ti->name, &tensors[i]));
		if (ti->usage == NRT_TENSOR_USAGE_INPUT) {
			CALL(nrt_add_tensor_to_tensor_set(inputs, ti->name, tensors[i]));
		} else {
			CALL(nrt_add_tensor_to_tensor_set(outputs, ti->name, tensors[i]));
			out = tensors[i];
			n_floats = ti->size / sizeof(float);
		}
	}
	if (!out || n_floats == 0 || n_floats > 1024)
		return fail("the model has no usable f32 output");

	/* Inputs through one batched write: input k holds k + 1 everywhere. */
	float host[2][1024];
	nrt_tensor_batch_op_t ops[2];
	nrt_tensor_batch_t batches[2];
	uint64_t nb = 0;
	for (uint64_t i = 0; i < info->tensor_count && nb < 2; i++) {
		if (info->tensor_array[i].usage != NRT_TENSOR_USAGE_INPUT)
			continue;
		for (size_t e = 0; e < n_floats; e++)
			host[nb][e] = (float)(nb + 1);
		ops[nb] = (nrt_tensor_batch_op_t){ .offset = 0, .size = n_floats * sizeof(float), .buffer = host[nb] };
		batches[nb] = (nrt_tensor_batch_t){ .tensor = tensors[i], .ops = &ops[nb], .num_ops = 1 };
		nb++;
	}
	CALL(nrt_tensor_write_batch(batches, nb, false));

	/* A system trace capture and an inspection (system profile only) around
	 * the synchronous execution. */
	char inspect_dir[512];
	snprintf(inspect_dir, sizeof(inspect_dir), "%s/inspect", work_dir);
	nrt_inspect_config_t *inspect_opts = NULL;
	CALL(nrt_inspect_config_allocate(&inspect_opts));
	CALL(nrt_inspect_config_set_output_dir(inspect_opts, inspect_dir));
	CALL(nrt_inspect_config_set_session_id(inspect_opts, 0));
	CALL(nrt_inspect_config_set_enable_inspect(inspect_opts, true));
	CALL(nrt_inspect_config_set_activity(inspect_opts, "all", false));
	CALL(nrt_inspect_config_set_activity(inspect_opts, "system_profile", true));
	CALL(nrt_inspect_begin_with_options(inspect_opts));
	CALL(nrt_inspect_config_free(inspect_opts));
	CALL(nrt_sys_trace_start(NULL));
	CALL(nrt_execute(model, inputs, outputs));
	CALL(nrt_inspect_stop());
	char *trace = NULL;
	size_t trace_size = 0;
	CALL(nrt_sys_trace_fetch_events(&trace, &trace_size, NULL));
	if (!strstr(trace, "\"nrt_execute\""))
		return fail("the system trace has no execution: %s", trace);
	nrt_sys_trace_buffer_free(trace);
	CALL(nrt_sys_trace_stop());
	float result[1024];
	CALL(nrt_tensor_read(out, result, 0, n_floats * sizeof(float)));
	for (size_t e = 0; e < n_floats; e++)
		if (result[e] != 3.0f)
			return fail("nrt_execute: element %zu is %g, expected 3", e, result[e]);

	/* The explicit async API, as in the SDK's examples, traced (with the
	 * device memory) to work_dir/trace.json. */
	char trace_file[512];
	snprintf(trace_file, sizeof(trace_file), "%s/trace.json", work_dir);
	CALL(nrt_trace_start(true));
	CALL(nrt_register_async_exec_callback(on_exec, &exec_count));
	enum { NUM_EXECS = 4 };
	NRT_STATUS exec_rets[NUM_EXECS];
	nrta_seq_t req_seqs[NUM_EXECS];
	for (int req = 0; req < NUM_EXECS; req++) {
		nrta_seq_t seq = 0;
		NRT_STATUS ret = nrta_execute_schedule(model, inputs, outputs, 0, &exec_rets[req], &seq);
		if (ret != NRT_SUCCESS)
			return fail("nrta_execute_schedule: %s", nrt_get_status_as_str(ret));
		req_seqs[req] = seq;
	}
	nrta_seq_t last_req_seq = req_seqs[NUM_EXECS - 1];
	int efd = eventfd(0, EFD_NONBLOCK);
	CALL(nrta_event_register_seq_id_completion(last_req_seq, efd));
	struct pollfd pfd = { .fd = efd, .events = POLLIN };
	if (poll(&pfd, 1, -1) != 1)
		return fail("poll on the completion eventfd");
	uint64_t events = 0;
	if (read(efd, &events, sizeof(events)) != (ssize_t)sizeof(events) || events != 1)
		return fail("the completion eventfd holds %llu", (unsigned long long)events);
	close(efd);
	nrta_seq_t completed_seq = 0;
	const int compute_queue = 0;
	while (true) {
		CALL(nrta_get_sequence(minfo.vnc, NRTA_XU_COMPUTE, compute_queue, &completed_seq));
		if (completed_seq >= last_req_seq)
			break;
		usleep(1);
	}
	if (NRTA_SEQ_GET_XU_ID(completed_seq) != NRTA_SEQ_GET_XU_ID(last_req_seq))
		return fail("completed and submitted ids of different units");
	bool is_completed = false;
	CALL(nrta_is_completed(req_seqs[0], &is_completed));
	if (!is_completed)
		return fail("an earlier request is not complete after a later one");
	for (int req = 0; req < NUM_EXECS; req++)
		if (exec_rets[req] != NRT_SUCCESS)
			return fail("request %d completed with %s", req, nrt_get_status_as_str(exec_rets[req]));
	if (__atomic_load_n(&exec_count, __ATOMIC_SEQ_CST) != NUM_EXECS)
		return fail("the callback ran %d times", exec_count);
	CALL(nrt_async_drain_queued_execs((int32_t)minfo.vnc));
	CALL(nrt_trace_stop(trace_file));

	/* An async read back and a batched read. */
	NRT_STATUS read_ret;
	nrta_seq_t read_seq;
	memset(result, 0, sizeof(result));
	CALL(nrta_tensor_read(result, out, 0, n_floats * sizeof(float), 0, &read_ret, &read_seq));
	do
		CALL(nrta_is_completed(read_seq, &is_completed));
	while (!is_completed);
	if (read_ret != NRT_SUCCESS || result[0] != 3.0f)
		return fail("nrta_tensor_read: %s, %g", nrt_get_status_as_str(read_ret), result[0]);
	float tail[2];
	nrt_tensor_batch_op_t rop = { .offset = (n_floats - 2) * sizeof(float), .size = sizeof(tail), .buffer = tail };
	nrt_tensor_batch_t rb = { .tensor = out, .ops = &rop, .num_ops = 1 };
	CALL(nrt_tensor_read_batch(&rb, 1, true));
	if (tail[0] != 3.0f || tail[1] != 3.0f)
		return fail("nrt_tensor_read_batch read %g %g", tail[0], tail[1]);

	nrt_vnc_memory_stats_t mem;
	size_t mem_size = 0;
	CALL(nrt_get_vnc_memory_stats(minfo.vnc, &mem, sizeof(mem), &mem_size));
	if (mem.bytes_used == 0 || mem.bytes_used > mem.bytes_limit)
		return fail("memory stats: %zu used of %zu", mem.bytes_used, mem.bytes_limit);

	CALL(nrt_free_model_tensor_info(info));
	nrt_destroy_tensor_set(&inputs);
	nrt_destroy_tensor_set(&outputs);
	for (int i = 0; i < 8; i++)
		nrt_tensor_free(&tensors[i]);
	CALL(nrt_unload(model));
	nrt_close();
	return 0;
}

int sdk_client_run(const void *neff, size_t size, const char *work_dir, char *err, size_t err_len)
{
	g_err = err;
	g_err_len = err_len;
	return run(neff, size, work_dir);
}
