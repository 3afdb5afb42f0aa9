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

NRT_STATUS nrt_async_init(nrt_ctx_t *ctx)
{
	nrt_async_state_t *s = calloc(1, sizeof(*s));
	if (!s)
		return NRT_RESOURCE;
	s->n_queues = ctx->n_cores * QUEUES_PER_CORE;
	s->queues = calloc(s->n_queues ? s->n_queues : 1, sizeof(*s->queues));
	if (!s->queues) {
		free(s);
		return NRT_RESOURCE;
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
	return NRT_SUCCESS;
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

static NRT_STATUS run(const async_req_t *r)
{
	switch (r->kind) {
	case REQ_WRITE:
		return nrt_tensor_write(r->tensor, r->buf, r->offset, r->size);
	case REQ_READ:
		return nrt_tensor_read(r->tensor, r->buf, r->offset, r->size);
	case REQ_COPY:
		return nrt_tensor_copy(r->tensor, r->offset, r->dst, r->dst_offset, r->size);
	case REQ_EXEC:
		return nrt_execute(r->model, r->in, r->out);
	case REQ_CC:
		for (size_t i = 0; i < r->cc->n; i++) {
			size_t n = nrt_tensor_get_size(r->cc->in[i]);
			NRT_STATUS st = nrt_tensor_copy(r->cc->in[i], 0, r->cc->out[i], 0, n);
			if (st)
				return st;
		}
		return NRT_SUCCESS;
	}
	return NRT_FAILURE;
}

/* The request as a system trace event of its core (sys_trace.c). */
static void sys_trace(const async_queue_t *q, const async_req_t *r, uint64_t seq, uint64_t t0, NRT_STATUS st)
{
	static const char *const names[] = {
		[REQ_WRITE] = "nrta_tensor_write", [REQ_READ] = "nrta_tensor_read",
		[REQ_COPY] = "nrta_tensor_copy", [REQ_EXEC] = "nrta_execute_schedule",
		[REQ_CC] = "nrta_cc_schedule",
	};
	uint32_t k = q->xu_id % QUEUES_PER_CORE;
	nrt_sys_trace_type_t type = k < TENSOR_OP_QUEUES ? NRT_SYS_TRACE_TENSOR_OP
				  : k < TENSOR_OP_QUEUES + COMPUTE_QUEUES ? NRT_SYS_TRACE_COMPUTE
				  : NRT_SYS_TRACE_COLLECTIVES;
	char label[16];
	snprintf(label, sizeof(label), "queue %u", k < TENSOR_OP_QUEUES ? k
		 : k < TENSOR_OP_QUEUES + COMPUTE_QUEUES ? k - TENSOR_OP_QUEUES
		 : k - TENSOR_OP_QUEUES - COMPUTE_QUEUES);
	nrt_sys_trace_record(q->core, type, names[r->kind], label, t0, ns_monotonic_ns(), st,
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

/* Checks the queue index of xu; logs and returns NRT_INVALID when bad. */
static NRT_STATUS check_queue(const char *func, nrta_xu_t xu, int queue)
{
	if (queue < 0 || queue >= queue_count[xu]) {
		NRT_LOGE("%s: queue %d does not exist: the %s unit has queues 0..%d", func, queue,
			 xu_name[xu], queue_count[xu] - 1);
		return NRT_INVALID;
	}
	return NRT_SUCCESS;
}

/* Queues r on q; never blocks. Starts q's worker on first use. */
static NRT_STATUS submit(const char *func, async_queue_t *q, const async_req_t *r, nrta_seq_t *out_seq)
{
	NRT_STATUS st = NRT_SUCCESS;
	pthread_mutex_lock(&q->lock);
	uint64_t completed = atomic_load_explicit(&q->completed, memory_order_relaxed);
	if (q->stop) {
		NRT_LOGE("%s: nrt_close is shutting the runtime down; the request is refused", func);
		st = NRT_CLOSED;
	} else if (q->unrecoverable) {
		NRT_LOGE("%s: queue %#x of NeuronCore %u is unrecoverable after a fatal error; "
			 "restart the application", func, q->xu_id, q->core);
		st = NRT_EXEC_UNIT_UNRECOVERABLE;
	} else if (q->submitted - completed >= NRTA_QUEUE_DEPTH) {
		/* Not an error of the caller's: backpressure, logged at debug. */
		NRT_LOGD("%s: queue %#x of NeuronCore %u is full (%d requests pending)", func, q->xu_id,
			 q->core, NRTA_QUEUE_DEPTH);
		st = NRT_QUEUE_FULL;
	} else if (q->submitted == NRTA_SEQ_NUM_MAX) {
		NRT_LOGE("%s: queue %#x of NeuronCore %u used up its 2^48 sequence numbers", func,
			 q->xu_id, q->core);
		st = NRT_RESOURCE;
	} else if (!q->started) {
		int err = pthread_create(&q->thread, NULL, worker, q);
		if (err) {
			NRT_LOGE("%s: cannot start the worker thread of queue %#x (NeuronCore %u): %s",
				 func, q->xu_id, q->core, strerror(err));
			st = NRT_RESOURCE;
		} else {
			q->started = true;
		}
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

/* Resolves a tensor handle, checks [offset, offset + size) and returns the
 * core whose TENSOR_OP queues serve it. */
static NRT_STATUS tensor_core(nrt_ctx_t *ctx, const char *func, const char *what, nrt_tensor_t *tensor,
			      uint64_t offset, uint64_t size, uint32_t *out_core)
{
	if (!tensor) {
		NRT_LOGE("%s: %s is NULL", func, what);
		return NRT_INVALID;
	}
	void *obj;
	NRT_STATUS st = nrt_handle_acquire(&ctx->tensors, nrt_handle_of(tensor), &obj);
	if (st) {
		NRT_LOGE("%s: %s %p is not a live tensor (freed, or not a tensor handle)", func, what,
			 (void *)tensor);
		return st;
	}
	const nrt_tensor_obj_t *t = obj;
	if (!t->storage) {
		NRT_LOGE("%s: %s '%s' has no storage (allocate_empty without attach_buffer)", func, what,
			 t->name);
		st = NRT_INVALID;
	} else if (offset > t->size || size > t->size - offset) {
		NRT_LOGE("%s: %s '%s': range [%llu, +%llu) is outside its %llu bytes", func, what, t->name,
			 (unsigned long long)offset, (unsigned long long)size, (unsigned long long)t->size);
		st = NRT_INVALID;
	} else {
		int nc = t->storage->kind == NRT_STORAGE_DEVICE ? t->storage->logical_nc : 0;
		*out_core = nc >= 0 && (uint32_t)nc < ctx->n_cores ? (uint32_t)nc : 0;
	}
	nrt_handle_release(&ctx->tensors, nrt_handle_of(tensor));
	return st;
}

static nrt_ctx_t *begin(const char *func, NRT_STATUS *ret, nrta_seq_t *req_sequence, NRT_STATUS *out_st)
{
	nrt_ctx_t *ctx = nrt_ctx_require(func, out_st);
	if (!ctx)
		return NULL;
	if (!ret || !req_sequence) {
		NRT_LOGE("%s: %s is NULL", func, !ret ? "ret" : "req_sequence");
		*out_st = NRT_INVALID;
		return NULL;
	}
	return ctx;
}

/* nrta_tensor_write and nrta_tensor_read: the same checks, one request kind
 * apart; func names the public call in messages. */
static NRT_STATUS submit_transfer(const char *func, req_kind_t kind, nrt_tensor_t *tensor, void *buf,
				  uint64_t offset, uint64_t size, int queue, NRT_STATUS *ret,
				  nrta_seq_t *req_sequence)
{
	NRT_STATUS st;
	nrt_ctx_t *ctx = begin(func, ret, req_sequence, &st);
	if (!ctx)
		return st;
	uint32_t core;
	if ((st = check_queue(func, NRTA_XU_TENSOR_OP, queue)) ||
	    (st = tensor_core(ctx, func, "tensor", tensor, offset, size, &core)))
		return st;
	if (!buf && size) {
		NRT_LOGE("%s: buf is NULL", func);
		return NRT_INVALID;
	}
	async_req_t r = { .kind = kind, .ret = ret, .tensor = tensor, .buf = buf, .offset = offset,
			  .size = size };
	return submit(func, queue_of(ctx, core, NRTA_XU_TENSOR_OP, queue), &r, req_sequence);
}

NRT_STATUS nrta_tensor_write(nrt_tensor_t *tensor, const void *buf, uint64_t offset, uint64_t size, int queue,
			     NRT_STATUS *ret, nrta_seq_t *req_sequence)
{
	return submit_transfer(__func__, REQ_WRITE, tensor, (void *)buf, offset, size, queue, ret,
			       req_sequence);
}

NRT_STATUS nrta_tensor_read(void *buf, nrt_tensor_t *tensor, uint64_t offset, uint64_t size, int queue,
			    NRT_STATUS *ret, nrta_seq_t *req_sequence)
{
	return submit_transfer(__func__, REQ_READ, tensor, buf, offset, size, queue, ret, req_sequence);
}

NRT_STATUS nrta_tensor_copy(nrt_tensor_t *src, uint64_t src_offset, nrt_tensor_t *dst, uint64_t dst_offset,
			    uint64_t size, int queue, NRT_STATUS *ret, nrta_seq_t *req_sequence)
{
	NRT_STATUS st;
	nrt_ctx_t *ctx = begin(__func__, ret, req_sequence, &st);
	if (!ctx)
		return st;
	uint32_t core, dst_core;
	if ((st = check_queue(__func__, NRTA_XU_TENSOR_OP, queue)) ||
	    (st = tensor_core(ctx, __func__, "src", src, src_offset, size, &core)) ||
	    (st = tensor_core(ctx, __func__, "dst", dst, dst_offset, size, &dst_core)))
		return st;
	async_req_t r = { .kind = REQ_COPY, .ret = ret, .tensor = src, .dst = dst, .offset = src_offset,
			  .dst_offset = dst_offset, .size = size };
	return submit(__func__, queue_of(ctx, core, NRTA_XU_TENSOR_OP, queue), &r, req_sequence);
}

NRT_STATUS nrta_execute_schedule(nrt_model_t *model, const nrt_tensor_set_t *input, nrt_tensor_set_t *output,
				 int queue, NRT_STATUS *ret, nrta_seq_t *req_sequence)
{
	NRT_STATUS st;
	nrt_ctx_t *ctx = begin(__func__, ret, req_sequence, &st);
	if (!ctx)
		return st;
	if ((st = check_queue(__func__, NRTA_XU_COMPUTE, queue)))
		return st;
	nrt_model_info_t info;
	size_t n;
	if ((st = nrt_get_model_info(model, &info, sizeof(info), &n)))
		return st;
	if (!input || !output) {
		NRT_LOGE("%s: %s is NULL", __func__, !input ? "input" : "output");
		return NRT_INVALID;
	}
	async_req_t r = { .kind = REQ_EXEC, .ret = ret, .model = model, .in = input, .out = output };
	return submit(__func__, queue_of(ctx, info.vnc, NRTA_XU_COMPUTE, queue), &r, req_sequence);
}

NRT_STATUS nrta_cc_prepare(nrt_cc_comm_t *comm, nrt_tensor_list_t *input, nrt_tensor_list_t *output,
			   nrt_dtype_t dtype, nrt_op_type_t op, nrt_cc_op_type_t cc_op, nrt_cc_context_t **cc_ctx)
{
	NRT_STATUS st;
	nrt_ctx_t *ctx = nrt_ctx_require(__func__, &st);
	if (!ctx)
		return st;
	if (!comm || !input || !output || !cc_ctx) {
		NRT_LOGE("%s: comm, input, output and cc_ctx must not be NULL", __func__);
		return NRT_INVALID;
	}
	if (comm->rank_n != 1 || comm->rank != 0 || !comm->replica_group ||
	    comm->replica_group[0] != comm->ctx_device_id) {
		NRT_LOGE("%s: the replica group has %u members (rank %u): neuronsim runs one worker, so "
			 "collectives are over a group of one (rank_n = 1, rank 0, replica_group = "
			 "{ctx_device_id})", __func__, comm->rank_n, comm->rank);
		return NRT_INVALID;
	}
	if (comm->vnc >= ctx->n_cores) {
		NRT_LOGE("%s: NeuronCore %u is not visible (%u visible)", __func__, comm->vnc, ctx->n_cores);
		return NRT_INVALID;
	}
	if (cc_op > NRT_CC_REDUCESCATTER || (cc_op != NRT_CC_ALLGATHER && op > NRT_OP_MIN) ||
	    dtype == NRT_DTYPE_INVALID) {
		NRT_LOGE("%s: unknown collective %d, reduction %d or dtype %d", __func__, (int)cc_op, (int)op,
			 (int)dtype);
		return NRT_INVALID;
	}
	if (input->num_tensors != output->num_tensors || (input->num_tensors && (!input->tensors ||
							 !output->tensors))) {
		NRT_LOGE("%s: %zu input tensors but %zu outputs (one output per input)", __func__,
			 input->num_tensors, output->num_tensors);
		return NRT_INVALID;
	}
	for (size_t i = 0; i < input->num_tensors; i++) {
		size_t in = nrt_tensor_get_size(input->tensors[i]);
		size_t out = nrt_tensor_get_size(output->tensors[i]);
		if (!in || in != out) {
			NRT_LOGE("%s: tensor pair %zu: input of %zu bytes, output of %zu (a group of one "
				 "needs equal, non-zero sizes)", __func__, i, in, out);
			return NRT_INVALID;
		}
	}
	nrt_cc_context_t *cc = calloc(1, sizeof(*cc));
	size_t n = input->num_tensors;
	if (cc) {
		cc->in = calloc(n ? n : 1, sizeof(*cc->in));
		cc->out = calloc(n ? n : 1, sizeof(*cc->out));
	}
	if (!cc || !cc->in || !cc->out) {
		cc_free(cc);
		NRT_LOGE("%s: out of host memory", __func__);
		return NRT_RESOURCE;
	}
	cc->vnc = comm->vnc;
	cc->n = n;
	if (n) {
		memcpy(cc->in, input->tensors, n * sizeof(*cc->in));
		memcpy(cc->out, output->tensors, n * sizeof(*cc->out));
	}
	*cc_ctx = cc;
	return NRT_SUCCESS;
}

NRT_STATUS nrta_cc_schedule(nrt_cc_context_t **cc_ctx, int queue, NRT_STATUS *ret, nrta_seq_t *req_sequence)
{
	NRT_STATUS st;
	nrt_ctx_t *ctx = begin(__func__, ret, req_sequence, &st);
	if (!cc_ctx || !*cc_ctx) {
		NRT_LOGE("%s: cc_ctx is NULL (prepare it with nrta_cc_prepare)", __func__);
		return ctx ? NRT_INVALID : st;
	}
	nrt_cc_context_t *cc = *cc_ctx;
	*cc_ctx = NULL;
	if (!ctx || (st = check_queue(__func__, NRTA_XU_COLLECTIVES, queue)) || cc->vnc >= ctx->n_cores) {
		cc_free(cc);
		return ctx ? NRT_INVALID : st;
	}
	async_req_t r = { .kind = REQ_CC, .ret = ret, .cc = cc };
	st = submit(__func__, queue_of(ctx, cc->vnc, NRTA_XU_COLLECTIVES, queue), &r, req_sequence);
	if (st)
		cc_free(cc);
	return st;
}

/* The queue that gave out seq, with its sequence number; NRT_INVALID when
 * no queue did. */
static NRT_STATUS seq_queue(nrt_ctx_t *ctx, const char *func, nrta_seq_t seq, async_queue_t **out_q,
			    uint64_t *out_num)
{
	uint64_t xu = NRTA_SEQ_GET_XU_ID(seq), num = NRTA_SEQ_GET_SEQ_NUM(seq);
	if (xu >= ctx->async->n_queues || num == 0) {
		NRT_LOGE("%s: %#llx is not a sequence id of this runtime", func, (unsigned long long)seq);
		return NRT_INVALID;
	}
	async_queue_t *q = &ctx->async->queues[xu];
	pthread_mutex_lock(&q->lock);
	uint64_t submitted = q->submitted;
	pthread_mutex_unlock(&q->lock);
	if (num > submitted) {
		NRT_LOGE("%s: sequence id %#llx was not given out yet (queue %#llx is at %llu)", func,
			 (unsigned long long)seq, (unsigned long long)xu, (unsigned long long)submitted);
		return NRT_INVALID;
	}
	*out_q = q;
	*out_num = num;
	return NRT_SUCCESS;
}

NRT_STATUS nrta_is_completed(nrta_seq_t seq, bool *is_completed)
{
	NRT_STATUS st;
	nrt_ctx_t *ctx = nrt_ctx_require(__func__, &st);
	if (!ctx)
		return st;
	if (!is_completed) {
		NRT_LOGE("%s: is_completed is NULL", __func__);
		return NRT_INVALID;
	}
	async_queue_t *q;
	uint64_t num;
	if ((st = seq_queue(ctx, __func__, seq, &q, &num)))
		return st;
	*is_completed = atomic_load_explicit(&q->completed, memory_order_acquire) >= num;
	return NRT_SUCCESS;
}

NRT_STATUS nrta_get_sequence(uint32_t lnc, nrta_xu_t xu, int queue, nrta_seq_t *seq)
{
	NRT_STATUS st;
	nrt_ctx_t *ctx = nrt_ctx_require(__func__, &st);
	if (!ctx)
		return st;
	if (!seq) {
		NRT_LOGE("%s: seq is NULL", __func__);
		return NRT_INVALID;
	}
	if ((unsigned)xu >= NRTA_XU_TYPE_NUM) {
		NRT_LOGE("%s: unknown execution unit %d", __func__, (int)xu);
		return NRT_INVALID;
	}
	if (lnc >= ctx->n_cores) {
		NRT_LOGE("%s: NeuronCore %u is not visible (%u visible)", __func__, lnc, ctx->n_cores);
		return NRT_INVALID;
	}
	if ((st = check_queue(__func__, xu, queue)))
		return st;
	async_queue_t *q = queue_of(ctx, lnc, xu, queue);
	*seq = (uint64_t)q->xu_id << 48 | atomic_load_explicit(&q->completed, memory_order_acquire);
	return NRT_SUCCESS;
}

NRT_STATUS nrta_event_register_seq_id_completion(nrta_seq_t seq, int efd)
{
	NRT_STATUS st;
	nrt_ctx_t *ctx = nrt_ctx_require(__func__, &st);
	if (!ctx)
		return st;
	if (efd < 0) {
		NRT_LOGE("%s: %d is not a file descriptor", __func__, efd);
		return NRT_INVALID;
	}
	async_queue_t *q;
	uint64_t num;
	if ((st = seq_queue(ctx, __func__, seq, &q, &num)))
		return st;
	pthread_mutex_lock(&q->lock);
	if (atomic_load_explicit(&q->completed, memory_order_relaxed) >= num) {
		signal_fd(efd);
	} else {
		if (q->n_events == q->cap_events) {
			size_t cap = q->cap_events ? 2 * q->cap_events : 8;
			async_event_t *e = realloc(q->events, cap * sizeof(*e));
			if (!e) {
				pthread_mutex_unlock(&q->lock);
				NRT_LOGE("%s: out of host memory", __func__);
				return NRT_RESOURCE;
			}
			q->events = e;
			q->cap_events = cap;
		}
		q->events[q->n_events++] = (async_event_t){ .seq = num, .fd = efd };
	}
	pthread_mutex_unlock(&q->lock);
	return NRT_SUCCESS;
}

NRT_STATUS nrta_get_completion_handle(nrta_seq_t seq, int *fd)
{
	if (!fd) {
		NRT_LOGE("%s: fd is NULL", __func__);
		return NRT_INVALID;
	}
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (efd < 0) {
		NRT_LOGE("%s: cannot create an eventfd: %s", __func__, strerror(errno));
		return NRT_RESOURCE;
	}
	NRT_STATUS st = nrta_event_register_seq_id_completion(seq, efd);
	if (st) {
		close(efd);
		return st;
	}
	*fd = efd;
	return NRT_SUCCESS;
}

NRT_STATUS nrt_register_async_exec_callback(NRT_ASYNC_EXEC_STATUS_CALLBACK callback, void *params)
{
	NRT_STATUS st;
	nrt_ctx_t *ctx = nrt_ctx_require(__func__, &st);
	if (!ctx)
		return st;
	nrt_async_state_t *s = ctx->async;
	pthread_mutex_lock(&s->cb_lock);
	s->cb = callback;
	s->cb_params = params;
	pthread_mutex_unlock(&s->cb_lock);
	return NRT_SUCCESS;
}

NRT_STATUS nrt_async_drain_queued_execs(int32_t vnc)
{
	NRT_STATUS st;
	nrt_ctx_t *ctx = nrt_ctx_require(__func__, &st);
	if (!ctx)
		return st;
	if (vnc < 0 || (uint32_t)vnc >= ctx->n_cores) {
		NRT_LOGE("%s: NeuronCore %d is not visible (%u visible)", __func__, vnc, ctx->n_cores);
		return NRT_INVALID;
	}
	async_queue_t *q = queue_of(ctx, (uint32_t)vnc, NRTA_XU_COMPUTE, 0);
	pthread_mutex_lock(&q->lock);
	uint64_t target = q->submitted;
	while (atomic_load_explicit(&q->completed, memory_order_relaxed) < target)
		pthread_cond_wait(&q->done, &q->lock);
	pthread_mutex_unlock(&q->lock);
	return NRT_SUCCESS;
}
