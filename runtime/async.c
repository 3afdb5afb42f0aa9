/* The explicit async API (nrt_async.h): per-core execution-unit queues, each served in order by its own worker thread. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "internal.h"
#include "nrt/nrt_async.h"
#include "sys_trace.h"
#include "nrt/nrt_experimental.h"

/* Queues of one core, in this order: TENSOR_OP 0..1, COMPUTE 0, COLLECTIVES
 * 0..2. A queue's execution-unit id (a sequence id's top 16 bits) is
 * core * QUEUES_PER_CORE + its index here. */
#define TENSOR_OP_QUEUES 2
#define COMPUTE_QUEUES 1
#define CC_QUEUES 3
#define QUEUES_PER_CORE (TENSOR_OP_QUEUES + COMPUTE_QUEUES + CC_QUEUES)

static const int queue_base[NRTA_XU_TYPE_NUM] = { 0, TENSOR_OP_QUEUES, TENSOR_OP_QUEUES + COMPUTE_QUEUES };
static const int queue_count[NRTA_XU_TYPE_NUM] = { TENSOR_OP_QUEUES, COMPUTE_QUEUES, CC_QUEUES };
static const char *const xu_name[NRTA_XU_TYPE_NUM] = { "TENSOR_OP", "COMPUTE", "COLLECTIVES" };

typedef enum { REQ_WRITE, REQ_READ, REQ_COPY, REQ_EXEC, REQ_CC } req_kind_t;

/* A prepared collective (nrta_cc_prepare): output i receives input i, which
 * is every collective's result over a group of one. */
struct nrt_cc_context {
	uint32_t vnc;
	size_t n;
	nrt_tensor_t **in, **out;
};

typedef struct async_req {
	req_kind_t kind;
	NRT_STATUS *ret;
	nrt_tensor_t *tensor, *dst;  /* WRITE/READ: tensor; COPY: tensor -> dst */
	void *buf;                   /* WRITE (as const), READ */
	uint64_t offset, dst_offset, size;
	nrt_model_t *model;          /* EXEC */
	const nrt_tensor_set_t *in;
	nrt_tensor_set_t *out;
	nrt_cc_context_t *cc;        /* CC, owned by the request */
} async_req_t;

typedef struct async_event {
	uint64_t seq;                /* sequence number (without the unit id) */
	int fd;
} async_event_t;

typedef struct async_queue {
	pthread_mutex_t lock;
	pthread_cond_t work;         /* a request was queued, or stop */
	pthread_cond_t done;         /* a request completed */
	pthread_t thread;
	bool started, stop;
	bool unrecoverable;          /* a request failed with a fatal error */
	uint16_t xu_id;
	uint32_t core;
	uint64_t submitted;          /* last sequence number given out */
	_Atomic uint64_t completed;  /* last completed; stored after *ret */
	async_req_t ring[NRTA_QUEUE_DEPTH]; /* request n at n % depth */
	async_event_t *events;       /* eventfds waiting for a completion */
	size_t n_events, cap_events;
	struct nrt_async_state *state;
} async_queue_t;

typedef struct nrt_async_state {
	nrt_ctx_t *ctx;
	uint32_t n_queues;
	async_queue_t *queues;
	pthread_mutex_t cb_lock;     /* the callback and its params */
	NRT_ASYNC_EXEC_STATUS_CALLBACK cb;
	void *cb_params;
} nrt_async_state_t;

ns_status_t nrt_async_init(nrt_ctx_t *ctx)
{
	nrt_async_state_t *s = calloc(1, sizeof(*s));
	if (s) {
		s->n_queues = ctx->n_cores * QUEUES_PER_CORE;
		s->queues = calloc(s->n_queues ? s->n_queues : 1, sizeof(*s->queues));
	}
	if (!s || !s->queues) {
		free(s);
		return nrt_status_make(NRT_RESOURCE, "out of host memory for the async queues of %u cores",
				       ctx->n_cores);
	}
	s->ctx = ctx;
	pthread_mutex_init(&s->cb_lock, NULL);
	for (uint32_t i = 0; i < s->n_queues; i++) {
		async_queue_t *q = &s->queues[i];
		pthread_mutex_init(&q->lock, NULL);
		pthread_cond_init(&q->work, NULL);
		pthread_cond_init(&q->done, NULL);
		q->xu_id = (uint16_t)i;
		q->core = i / QUEUES_PER_CORE;
		q->state = s;
	}
	ctx->async = s;
	return NS_OK;
}

static void signal_fd(int fd)
{
	uint64_t one = 1;
	/* An eventfd write only fails when the counter would overflow (it is
	 * readable then anyway) or fd is not an eventfd: the caller's mistake,
	 * logged once per completion. */
	if (write(fd, &one, sizeof(one)) != (ssize_t)sizeof(one))
		NRT_LOGW("nrt async: cannot signal completion on fd %d: %s", fd, strerror(errno));
}

/* Under q->lock: marks request seq completed (its *ret already stored) and
 * signals the eventfds waiting for it. */
static void complete_locked(async_queue_t *q, uint64_t seq)
{
	atomic_store_explicit(&q->completed, seq, memory_order_release);
	size_t k = 0;
	for (size_t i = 0; i < q->n_events; i++) {
		if (q->events[i].seq <= seq)
			signal_fd(q->events[i].fd);
		else
			q->events[k++] = q->events[i];
	}
	q->n_events = k;
	pthread_cond_broadcast(&q->done);
}

static void cc_free(nrt_cc_context_t *cc)
{
	if (!cc)
		return;
	free(cc->in);
	free(cc->out);
	free(cc);
}

/* The calls whose requests the queues run, by request kind: each failure is
 * reported once, under the name of the call that queued it. */
static const char *const req_names[] = {
	[REQ_WRITE] = "nrta_tensor_write", [REQ_READ] = "nrta_tensor_read",
	[REQ_COPY] = "nrta_tensor_copy", [REQ_EXEC] = "nrta_execute_schedule",
	[REQ_CC] = "nrta_cc_schedule",
};

/* A collective over a group of one: output i receives input i. */
static ns_status_t run_cc(const nrt_cc_context_t *cc)
{
	nrt_ctx_t *ctx;
	NS_RETURN_IF_ERROR(nrt_ctx_enter(&ctx));
	for (size_t i = 0; i < cc->n; i++) {
		nrt_tensor_obj_t *t;
		NS_RETURN_IF_ERROR_F(nrt_tensor_acquire(ctx, cc->in[i], &t), "input %zu", i);
		size_t n = t->size;
		nrt_tensor_release(ctx, cc->in[i]);
		NS_RETURN_IF_ERROR_F(nrt_tensor_copy_status(cc->in[i], 0, cc->out[i], 0, n), "tensor pair %zu", i);
	}
	return NS_OK;
}

static NRT_STATUS run(const async_req_t *r)
{
	ns_status_t st = NS_OK;
	NRT_STATUS code = NRT_SUCCESS;
	switch (r->kind) {
	case REQ_WRITE:
	case REQ_READ:
		st = nrt_tensor_io_status(r->tensor, r->buf, r->offset, r->size, r->kind == REQ_WRITE);
		break;
	case REQ_COPY:
		st = nrt_tensor_copy_status(r->tensor, r->offset, r->dst, r->dst_offset, r->size);
		break;
	case REQ_EXEC:
		st = nrt_execute_status(r->model, r->in, r->out, 1, &code);
		break;
	case REQ_CC:
		st = run_cc(r->cc);
		break;
	}
	NRT_STATUS rst = nrt_status_report(req_names[r->kind], st);
	return rst && code ? code : rst;
}

/* The request as a system trace event of its core (sys_trace.c). */
static void sys_trace(const async_queue_t *q, const async_req_t *r, uint64_t seq, uint64_t t0, NRT_STATUS st)
{
	uint32_t k = q->xu_id % QUEUES_PER_CORE;
	nrt_sys_trace_type_t type = k < TENSOR_OP_QUEUES ? NRT_SYS_TRACE_TENSOR_OP
				  : k < TENSOR_OP_QUEUES + COMPUTE_QUEUES ? NRT_SYS_TRACE_COMPUTE
				  : NRT_SYS_TRACE_COLLECTIVES;
	char label[16];
	snprintf(label, sizeof(label), "queue %u", k < TENSOR_OP_QUEUES ? k
		 : k < TENSOR_OP_QUEUES + COMPUTE_QUEUES ? k - TENSOR_OP_QUEUES
		 : k - TENSOR_OP_QUEUES - COMPUTE_QUEUES);
	nrt_sys_trace_record(q->core, type, req_names[r->kind], label, t0, ns_monotonic_ns(), st,
			     (uint64_t)q->xu_id << 48 | seq);
}

/* The errors after which a real execution unit is left in an unknown state.
 * Not NRT_EXEC_UNIT_UNRECOVERABLE from a model an error snapshot disabled
 * (docs/snapshot.md): that is the model's state, other models on the queue
 * still run. */
static bool fatal(NRT_STATUS st)
{
	return st == NRT_TIMEOUT || st == NRT_HW_ERROR;
}

/* The model's load index and first core, when it is still loaded (an
 * execution of an unloaded model failed; the callback still hears of it). */
static void model_ids(nrt_ctx_t *ctx, nrt_model_t *model, uint32_t *out_id, uint32_t *out_vnc)
{
	void *obj;
	if (nrt_handle_acquire(&ctx->models, nrt_handle_of(model), &obj))
		return;
	const nrt_model_obj_t *m = obj;
	*out_id = m->executable_id;
	*out_vnc = m->start_nc;
	nrt_handle_release(&ctx->models, nrt_handle_of(model));
}

static void *worker(void *arg)
{
	async_queue_t *q = arg;
	pthread_mutex_lock(&q->lock);
	for (;;) {
		uint64_t seq = atomic_load_explicit(&q->completed, memory_order_relaxed) + 1;
		if (seq > q->submitted) {
			if (q->stop)
				break;
			pthread_cond_wait(&q->work, &q->lock);
			continue;
		}
		async_req_t r = q->ring[seq % NRTA_QUEUE_DEPTH];
		bool cancel = q->stop;
		pthread_mutex_unlock(&q->lock);

		uint64_t t0 = ns_monotonic_ns();
		NRT_STATUS st = cancel ? NRT_CLOSED : run(&r);
		if (!cancel && nrt_sys_trace_capturing())
			sys_trace(q, &r, seq, t0, st);
		if (r.kind == REQ_CC)
			cc_free(r.cc);
		*r.ret = st;
		if (st && !cancel)
			NRT_LOGD("nrt async: request %#llx on NeuronCore %u finished with %s",
				 (unsigned long long)((uint64_t)q->xu_id << 48 | seq), q->core,
				 nrt_get_status_as_str(st));
		if (r.kind == REQ_EXEC && !cancel) {
			nrt_async_state_t *s = q->state;
			pthread_mutex_lock(&s->cb_lock);
			NRT_ASYNC_EXEC_STATUS_CALLBACK cb = s->cb;
			void *params = s->cb_params;
			pthread_mutex_unlock(&s->cb_lock);
			if (cb) {
				uint32_t model_id = 0, vnc = q->core;
				model_ids(q->state->ctx, r.model, &model_id, &vnc);
				cb(params, model_id, vnc, (uint64_t)q->xu_id << 48 | seq, st);
			}
		}

		pthread_mutex_lock(&q->lock);
		if (!cancel && fatal(st) && !q->unrecoverable) {
			q->unrecoverable = true;
			NRT_LOGE("nrt async: %s queue of NeuronCore %u is unrecoverable after %s; "
				 "later requests on it are refused (restart the application)",
				 xu_name[q->xu_id % QUEUES_PER_CORE < TENSOR_OP_QUEUES ? NRTA_XU_TENSOR_OP
					 : q->xu_id % QUEUES_PER_CORE < TENSOR_OP_QUEUES + COMPUTE_QUEUES
					 ? NRTA_XU_COMPUTE : NRTA_XU_COLLECTIVES],
				 q->core, nrt_get_status_as_str(st));
		}
		complete_locked(q, seq);
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

void nrt_async_fini(nrt_ctx_t *ctx)
{
	nrt_async_state_t *s = ctx->async;
	if (!s)
		return;
	for (uint32_t i = 0; i < s->n_queues; i++) {
		async_queue_t *q = &s->queues[i];
		pthread_mutex_lock(&q->lock);
		q->stop = true;
		pthread_cond_broadcast(&q->work);
		bool started = q->started;
		pthread_mutex_unlock(&q->lock);
		if (started)
			pthread_join(q->thread, NULL);
	}
	for (uint32_t i = 0; i < s->n_queues; i++) {
		async_queue_t *q = &s->queues[i];
		free(q->events);
		pthread_cond_destroy(&q->done);
		pthread_cond_destroy(&q->work);
		pthread_mutex_destroy(&q->lock);
	}
	pthread_mutex_destroy(&s->cb_lock);
	free(s->queues);
	free(s);
	ctx->async = NULL;
}

static async_queue_t *queue_of(nrt_ctx_t *ctx, uint32_t core, nrta_xu_t xu, int queue)
{
	return &ctx->async->queues[core * QUEUES_PER_CORE + queue_base[xu] + queue];
}

/* NRT_INVALID unless xu has a queue numbered queue. */
static ns_status_t check_queue(nrta_xu_t xu, int queue)
{
	if (queue < 0 || queue >= queue_count[xu])
		return nrt_status_make(NRT_INVALID, "queue %d does not exist: the %s unit has queues 0..%d", queue,
				       xu_name[xu], queue_count[xu] - 1);
	return NS_OK;
}

/* Queues r on q; never blocks. Starts q's worker on first use. */
static ns_status_t submit(async_queue_t *q, const async_req_t *r, nrta_seq_t *out_seq)
{
	ns_status_t st = NS_OK;
	pthread_mutex_lock(&q->lock);
	uint64_t completed = atomic_load_explicit(&q->completed, memory_order_relaxed);
	if (q->stop) {
		st = nrt_status_make(NRT_CLOSED, "nrt_close is shutting the runtime down; the request is refused");
	} else if (q->unrecoverable) {
		st = nrt_status_make(NRT_EXEC_UNIT_UNRECOVERABLE, "queue %#x of NeuronCore %u is unrecoverable "
				     "after a fatal error; restart the application", q->xu_id, q->core);
	} else if (q->submitted - completed >= NRTA_QUEUE_DEPTH) {
		/* Not an error of the caller's: backpressure, which the boundary
		 * logs at debug. */
		st = nrt_status_make(NRT_QUEUE_FULL, "queue %#x of NeuronCore %u is full (%d requests pending)",
				     q->xu_id, q->core, NRTA_QUEUE_DEPTH);
	} else if (q->submitted == NRTA_SEQ_NUM_MAX) {
		st = nrt_status_make(NRT_RESOURCE, "queue %#x of NeuronCore %u used up its 2^48 sequence numbers",
				     q->xu_id, q->core);
	} else if (!q->started) {
		int err = pthread_create(&q->thread, NULL, worker, q);
		if (err)
			st = nrt_status_make(NRT_RESOURCE, "cannot start the worker thread of queue %#x "
					     "(NeuronCore %u): %s", q->xu_id, q->core, strerror(err));
		else
			q->started = true;
	}
	if (!st) {
		uint64_t seq = ++q->submitted;
		q->ring[seq % NRTA_QUEUE_DEPTH] = *r;
		*out_seq = (uint64_t)q->xu_id << 48 | seq;
		pthread_cond_signal(&q->work);
	}
	pthread_mutex_unlock(&q->lock);
	return st;
}

/* Resolves a tensor handle (what: its argument's name), checks
 * [offset, offset + size) and returns the core whose TENSOR_OP queues serve it. */
static ns_status_t tensor_core(nrt_ctx_t *ctx, const char *what, nrt_tensor_t *tensor, uint64_t offset,
			       uint64_t size, uint32_t *out_core)
{
	nrt_tensor_obj_t *t;
	NS_RETURN_IF_ERROR_F(nrt_tensor_acquire(ctx, tensor, &t), "%s", what);
	ns_status_t st = ns_status_annotate(nrt_tensor_check_range(t, offset, size), "%s", what);
	if (!st) {
		int nc = t->storage->kind == NRT_STORAGE_DEVICE ? t->storage->logical_nc : 0;
		*out_core = nc >= 0 && (uint32_t)nc < ctx->n_cores ? (uint32_t)nc : 0;
	}
	nrt_tensor_release(ctx, tensor);
	return st;
}

/* The first steps of every nrta_* call that queues a request. */
static ns_status_t begin(NRT_STATUS *ret, nrta_seq_t *req_sequence, nrt_ctx_t **out_ctx)
{
	NS_RETURN_IF_ERROR(nrt_ctx_enter(out_ctx));
	if (!ret || !req_sequence)
		return nrt_status_make(NRT_INVALID, "%s is NULL", !ret ? "ret" : "req_sequence");
	return NS_OK;
}

/* nrta_tensor_write and nrta_tensor_read: the same checks, one request kind
 * apart. */
static ns_status_t submit_transfer(req_kind_t kind, nrt_tensor_t *tensor, void *buf, uint64_t offset,
				   uint64_t size, int queue, NRT_STATUS *ret, nrta_seq_t *req_sequence)
{
	nrt_ctx_t *ctx;
	uint32_t core;
	NS_RETURN_IF_ERROR(begin(ret, req_sequence, &ctx));
	NS_RETURN_IF_ERROR(check_queue(NRTA_XU_TENSOR_OP, queue));
	NS_RETURN_IF_ERROR(tensor_core(ctx, "tensor", tensor, offset, size, &core));
	if (!buf && size)
		return nrt_status_make(NRT_INVALID, "buf is NULL for %llu bytes", (unsigned long long)size);
	async_req_t r = { .kind = kind, .ret = ret, .tensor = tensor, .buf = buf, .offset = offset,
			  .size = size };
	return submit(queue_of(ctx, core, NRTA_XU_TENSOR_OP, queue), &r, req_sequence);
}

NRT_STATUS nrta_tensor_write(nrt_tensor_t *tensor, const void *buf, uint64_t offset, uint64_t size, int queue,
			     NRT_STATUS *ret, nrta_seq_t *req_sequence)
{
	return nrt_status_report(__func__, submit_transfer(REQ_WRITE, tensor, (void *)buf, offset, size, queue,
							   ret, req_sequence));
}

NRT_STATUS nrta_tensor_read(void *buf, nrt_tensor_t *tensor, uint64_t offset, uint64_t size, int queue,
			    NRT_STATUS *ret, nrta_seq_t *req_sequence)
{
	return nrt_status_report(__func__, submit_transfer(REQ_READ, tensor, buf, offset, size, queue, ret,
							   req_sequence));
}

static ns_status_t tensor_copy(nrt_tensor_t *src, uint64_t src_offset, nrt_tensor_t *dst, uint64_t dst_offset,
			       uint64_t size, int queue, NRT_STATUS *ret, nrta_seq_t *req_sequence)
{
	nrt_ctx_t *ctx;
	uint32_t core, dst_core;
	NS_RETURN_IF_ERROR(begin(ret, req_sequence, &ctx));
	NS_RETURN_IF_ERROR(check_queue(NRTA_XU_TENSOR_OP, queue));
	NS_RETURN_IF_ERROR(tensor_core(ctx, "src", src, src_offset, size, &core));
	NS_RETURN_IF_ERROR(tensor_core(ctx, "dst", dst, dst_offset, size, &dst_core));
	async_req_t r = { .kind = REQ_COPY, .ret = ret, .tensor = src, .dst = dst, .offset = src_offset,
			  .dst_offset = dst_offset, .size = size };
	return submit(queue_of(ctx, core, NRTA_XU_TENSOR_OP, queue), &r, req_sequence);
}

NRT_STATUS nrta_tensor_copy(nrt_tensor_t *src, uint64_t src_offset, nrt_tensor_t *dst, uint64_t dst_offset,
			    uint64_t size, int queue, NRT_STATUS *ret, nrta_seq_t *req_sequence)
{
	return nrt_status_report(__func__, tensor_copy(src, src_offset, dst, dst_offset, size, queue, ret,
						       req_sequence));
}

static ns_status_t execute_schedule(nrt_model_t *model, const nrt_tensor_set_t *input, nrt_tensor_set_t *output,
				    int queue, NRT_STATUS *ret, nrta_seq_t *req_sequence)
{
	nrt_ctx_t *ctx;
	nrt_model_obj_t *m;
	NS_RETURN_IF_ERROR(begin(ret, req_sequence, &ctx));
	NS_RETURN_IF_ERROR(check_queue(NRTA_XU_COMPUTE, queue));
	NS_RETURN_IF_ERROR(nrt_model_acquire(ctx, model, &m));
	uint32_t vnc = m->start_nc;
	nrt_handle_release(&ctx->models, nrt_handle_of(model));
	if (!input || !output)
		return nrt_status_make(NRT_INVALID, "%s is NULL", !input ? "input" : "output");
	async_req_t r = { .kind = REQ_EXEC, .ret = ret, .model = model, .in = input, .out = output };
	return submit(queue_of(ctx, vnc, NRTA_XU_COMPUTE, queue), &r, req_sequence);
}

NRT_STATUS nrta_execute_schedule(nrt_model_t *model, const nrt_tensor_set_t *input, nrt_tensor_set_t *output,
				 int queue, NRT_STATUS *ret, nrta_seq_t *req_sequence)
{
	return nrt_status_report(__func__, execute_schedule(model, input, output, queue, ret, req_sequence));
}

/* The bytes of a live tensor, for nrta_cc_prepare's checks (a handle that
 * is not one is NRT_INVALID there, as a tensor of 0 bytes). */
static ns_status_t tensor_size(nrt_ctx_t *ctx, const nrt_tensor_t *tensor, size_t *out_size)
{
	nrt_tensor_obj_t *t;
	ns_status_t st = nrt_tensor_acquire(ctx, tensor, &t);
	if (st)
		return ns_status_with_detail(st, NRT_INVALID);
	*out_size = t->size;
	nrt_tensor_release(ctx, tensor);
	return NS_OK;
}

static ns_status_t cc_prepare(nrt_cc_comm_t *comm, nrt_tensor_list_t *input, nrt_tensor_list_t *output,
			      nrt_dtype_t dtype, nrt_op_type_t op, nrt_cc_op_type_t cc_op, nrt_cc_context_t **cc_ctx)
{
	nrt_ctx_t *ctx;
	NS_RETURN_IF_ERROR(nrt_ctx_enter(&ctx));
	if (!comm || !input || !output || !cc_ctx)
		return nrt_status_make(NRT_INVALID, "comm, input, output and cc_ctx must not be NULL");
	if (comm->rank_n != 1 || comm->rank != 0 || !comm->replica_group ||
	    comm->replica_group[0] != comm->ctx_device_id)
		return nrt_status_make(NRT_INVALID, "the replica group has %u members (rank %u): neuronsim runs "
				       "one worker, so collectives are over a group of one (rank_n = 1, rank 0, "
				       "replica_group = {ctx_device_id})", comm->rank_n, comm->rank);
	if (comm->vnc >= ctx->n_cores)
		return nrt_status_make(NRT_INVALID, "NeuronCore %u is not visible (%u visible)", comm->vnc,
				       ctx->n_cores);
	if (cc_op > NRT_CC_REDUCESCATTER || (cc_op != NRT_CC_ALLGATHER && op > NRT_OP_MIN) ||
	    dtype == NRT_DTYPE_INVALID)
		return nrt_status_make(NRT_INVALID, "unknown collective %d, reduction %d or dtype %d", (int)cc_op,
				       (int)op, (int)dtype);
	if (input->num_tensors != output->num_tensors || (input->num_tensors && (!input->tensors ||
							 !output->tensors)))
		return nrt_status_make(NRT_INVALID, "%zu input tensors but %zu outputs (one output per input)",
				       input->num_tensors, output->num_tensors);
	for (size_t i = 0; i < input->num_tensors; i++) {
		size_t in = 0, out = 0;
		NS_RETURN_IF_ERROR_F(tensor_size(ctx, input->tensors[i], &in), "tensor pair %zu: input", i);
		NS_RETURN_IF_ERROR_F(tensor_size(ctx, output->tensors[i], &out), "tensor pair %zu: output", i);
		if (!in || in != out)
			return nrt_status_make(NRT_INVALID, "tensor pair %zu: input of %zu bytes, output of %zu (a "
					       "group of one needs equal, non-zero sizes)", i, in, out);
	}
	nrt_cc_context_t *cc = calloc(1, sizeof(*cc));
	size_t n = input->num_tensors;
	if (cc) {
		cc->in = calloc(n ? n : 1, sizeof(*cc->in));
		cc->out = calloc(n ? n : 1, sizeof(*cc->out));
	}
	if (!cc || !cc->in || !cc->out) {
		cc_free(cc);
		return nrt_status_make(NRT_RESOURCE, "out of host memory for a collective of %zu tensors", n);
	}
	cc->vnc = comm->vnc;
	cc->n = n;
	if (n) {
		memcpy(cc->in, input->tensors, n * sizeof(*cc->in));
		memcpy(cc->out, output->tensors, n * sizeof(*cc->out));
	}
	*cc_ctx = cc;
	return NS_OK;
}

NRT_STATUS nrta_cc_prepare(nrt_cc_comm_t *comm, nrt_tensor_list_t *input, nrt_tensor_list_t *output,
			   nrt_dtype_t dtype, nrt_op_type_t op, nrt_cc_op_type_t cc_op, nrt_cc_context_t **cc_ctx)
{
	return nrt_status_report(__func__, cc_prepare(comm, input, output, dtype, op, cc_op, cc_ctx));
}

/* Takes *cc_ctx (set to NULL) whatever happens: a refused request frees it. */
static ns_status_t cc_schedule(nrt_cc_context_t **cc_ctx, int queue, NRT_STATUS *ret, nrta_seq_t *req_sequence)
{
	nrt_ctx_t *ctx;
	ns_status_t st = begin(ret, req_sequence, &ctx);
	nrt_cc_context_t *cc = cc_ctx ? *cc_ctx : NULL;
	if (cc_ctx)
		*cc_ctx = NULL;
	if (!st && !cc)
		st = nrt_status_make(NRT_INVALID, "cc_ctx is NULL (prepare it with nrta_cc_prepare)");
	if (!st)
		st = check_queue(NRTA_XU_COLLECTIVES, queue);
	if (!st && cc->vnc >= ctx->n_cores)
		st = nrt_status_make(NRT_INVALID, "the collective was prepared for NeuronCore %u, which is not "
				     "visible (%u visible)", cc->vnc, ctx->n_cores);
	if (!st) {
		async_req_t r = { .kind = REQ_CC, .ret = ret, .cc = cc };
		st = submit(queue_of(ctx, cc->vnc, NRTA_XU_COLLECTIVES, queue), &r, req_sequence);
	}
	if (st)
		cc_free(cc);
	return st;
}

NRT_STATUS nrta_cc_schedule(nrt_cc_context_t **cc_ctx, int queue, NRT_STATUS *ret, nrta_seq_t *req_sequence)
{
	return nrt_status_report(__func__, cc_schedule(cc_ctx, queue, ret, req_sequence));
}

/* The queue that gave out seq (its sequence number in *out_num), or NULL and
 * in *out_st an NRT_INVALID status when no queue did. */
static async_queue_t *seq_queue(nrt_ctx_t *ctx, nrta_seq_t seq, uint64_t *out_num, ns_status_t *out_st)
{
	uint64_t xu = NRTA_SEQ_GET_XU_ID(seq), num = NRTA_SEQ_GET_SEQ_NUM(seq);
	*out_num = num;
	*out_st = NS_OK;
	if (xu >= ctx->async->n_queues || num == 0) {
		*out_st = nrt_status_make(NRT_INVALID, "%#llx is not a sequence id of this runtime",
					  (unsigned long long)seq);
		return NULL;
	}
	async_queue_t *q = &ctx->async->queues[xu];
	pthread_mutex_lock(&q->lock);
	uint64_t submitted = q->submitted;
	pthread_mutex_unlock(&q->lock);
	if (num > submitted) {
		*out_st = nrt_status_make(NRT_INVALID, "sequence id %#llx was not given out yet (queue %#llx is "
					  "at %llu)", (unsigned long long)seq, (unsigned long long)xu,
					  (unsigned long long)submitted);
		return NULL;
	}
	return q;
}

static ns_status_t is_completed(nrta_seq_t seq, bool *is_completed)
{
	nrt_ctx_t *ctx;
	uint64_t num;
	ns_status_t st;
	NS_RETURN_IF_ERROR(nrt_ctx_enter(&ctx));
	if (!is_completed)
		return nrt_status_make(NRT_INVALID, "is_completed is NULL");
	async_queue_t *q = seq_queue(ctx, seq, &num, &st);
	if (!q)
		return st;
	*is_completed = atomic_load_explicit(&q->completed, memory_order_acquire) >= num;
	return NS_OK;
}

NRT_STATUS nrta_is_completed(nrta_seq_t seq, bool *is_completed_out)
{
	return nrt_status_report(__func__, is_completed(seq, is_completed_out));
}

static ns_status_t get_sequence(uint32_t lnc, nrta_xu_t xu, int queue, nrta_seq_t *seq)
{
	nrt_ctx_t *ctx;
	NS_RETURN_IF_ERROR(nrt_ctx_enter(&ctx));
	if (!seq)
		return nrt_status_make(NRT_INVALID, "seq is NULL");
	if ((unsigned)xu >= NRTA_XU_TYPE_NUM)
		return nrt_status_make(NRT_INVALID, "unknown execution unit %d", (int)xu);
	NS_RETURN_IF_ERROR(nrt_ctx_check_core(ctx, lnc));
	NS_RETURN_IF_ERROR(check_queue(xu, queue));
	async_queue_t *q = queue_of(ctx, lnc, xu, queue);
	*seq = (uint64_t)q->xu_id << 48 | atomic_load_explicit(&q->completed, memory_order_acquire);
	return NS_OK;
}

NRT_STATUS nrta_get_sequence(uint32_t lnc, nrta_xu_t xu, int queue, nrta_seq_t *seq)
{
	return nrt_status_report(__func__, get_sequence(lnc, xu, queue, seq));
}

static ns_status_t register_completion(nrta_seq_t seq, int efd)
{
	nrt_ctx_t *ctx;
	uint64_t num;
	ns_status_t st;
	NS_RETURN_IF_ERROR(nrt_ctx_enter(&ctx));
	if (efd < 0)
		return nrt_status_make(NRT_INVALID, "%d is not a file descriptor", efd);
	async_queue_t *q = seq_queue(ctx, seq, &num, &st);
	if (!q)
		return st;
	pthread_mutex_lock(&q->lock);
	if (atomic_load_explicit(&q->completed, memory_order_relaxed) >= num) {
		signal_fd(efd);
	} else {
		if (q->n_events == q->cap_events) {
			size_t cap = q->cap_events ? 2 * q->cap_events : 8;
			async_event_t *e = realloc(q->events, cap * sizeof(*e));
			if (e) {
				q->events = e;
				q->cap_events = cap;
			} else {
				st = nrt_status_make(NRT_RESOURCE, "out of host memory registering fd %d for "
						     "sequence id %#llx", efd, (unsigned long long)seq);
			}
		}
		if (!st)
			q->events[q->n_events++] = (async_event_t){ .seq = num, .fd = efd };
	}
	pthread_mutex_unlock(&q->lock);
	return st;
}

NRT_STATUS nrta_event_register_seq_id_completion(nrta_seq_t seq, int efd)
{
	return nrt_status_report(__func__, register_completion(seq, efd));
}

static ns_status_t get_completion_handle(nrta_seq_t seq, int *fd)
{
	if (!fd)
		return nrt_status_make(NRT_INVALID, "fd is NULL");
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (efd < 0)
		return nrt_status_make(NRT_RESOURCE, "cannot create an eventfd: %s", strerror(errno));
	ns_status_t st = register_completion(seq, efd);
	if (st) {
		close(efd);
		return st;
	}
	*fd = efd;
	return NS_OK;
}

NRT_STATUS nrta_get_completion_handle(nrta_seq_t seq, int *fd)
{
	return nrt_status_report(__func__, get_completion_handle(seq, fd));
}

NRT_STATUS nrt_register_async_exec_callback(NRT_ASYNC_EXEC_STATUS_CALLBACK callback, void *params)
{
	nrt_ctx_t *ctx;
	NRT_STATUS st = nrt_status_report(__func__, nrt_ctx_enter(&ctx));
	if (st)
		return st;
	nrt_async_state_t *s = ctx->async;
	pthread_mutex_lock(&s->cb_lock);
	s->cb = callback;
	s->cb_params = params;
	pthread_mutex_unlock(&s->cb_lock);
	return NRT_SUCCESS;
}

static ns_status_t drain_queued_execs(int32_t vnc)
{
	nrt_ctx_t *ctx;
	NS_RETURN_IF_ERROR(nrt_ctx_enter(&ctx));
	NS_RETURN_IF_ERROR(nrt_ctx_check_core(ctx, vnc));
	async_queue_t *q = queue_of(ctx, (uint32_t)vnc, NRTA_XU_COMPUTE, 0);
	pthread_mutex_lock(&q->lock);
	uint64_t target = q->submitted;
	while (atomic_load_explicit(&q->completed, memory_order_relaxed) < target)
		pthread_cond_wait(&q->done, &q->lock);
	pthread_mutex_unlock(&q->lock);
	return NS_OK;
}

NRT_STATUS nrt_async_drain_queued_execs(int32_t vnc)
{
	return nrt_status_report(__func__, drain_queued_execs(vnc));
}
