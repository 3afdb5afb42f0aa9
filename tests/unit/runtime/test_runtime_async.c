/* Check tests of the explicit async API (nrt_async.h) and the async execution callback: ordering, per-request errors, backpressure, completion tracking, close with pending work. */
#include <check.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "nrt/nrt.h"
#include "nrt/nrt_async.h"
#include "nrt/nrt_experimental.h"
#include "rt_fixture.h"
#include "test_neffs.h"

#define N 8 /* elements of the ADD model's tensors */

/* The ADD model (out = a + b) loaded on core nc, a[i] = i, b[i] = 1. */
static void add_load(rt_add_model_t *f, int nc)
{
	memset(f, 0, sizeof(*f));
	f->neff = test_neff_add(N, &f->size);
	ck_assert_int_eq(nrt_load(f->neff, f->size, nc, -1, &f->m), NRT_SUCCESS);
	float a[N], b[N];
	for (int i = 0; i < N; i++) {
		a[i] = (float)i;
		b[i] = 1;
	}
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, nc, sizeof(a), "a", &f->a), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, nc, sizeof(b), "b", &f->b), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, nc, sizeof(a), "out", &f->out),
			 NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_write(f->a, a, 0, sizeof(a)), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_write(f->b, b, 0, sizeof(b)), NRT_SUCCESS);
	rt_add_model_sets(f);
}

/* Polls nrta_is_completed until seq completes (no deadline: a hang is a
 * failure the test timeout reports). */
static void wait_done(nrta_seq_t seq)
{
	bool done = false;
	while (!done) {
		ck_assert_int_eq(nrta_is_completed(seq, &done), NRT_SUCCESS);
		if (!done)
			usleep(100);
	}
}

/* ---- a callback that can hold the COMPUTE worker ---- */

typedef struct cb_log {
	pthread_mutex_t lock;
	uint64_t jobs[256];
	NRT_STATUS status[256];
	uint32_t model_id[256], vnc[256];
	int n;
	bool hold_first;       /* block in the first call until `go` is posted */
	sem_t entered, go;
} cb_log_t;

static void record_cb(void *params, uint32_t model_id, uint32_t vnc, uint64_t job_id, NRT_STATUS status)
{
	cb_log_t *l = params;
	pthread_mutex_lock(&l->lock);
	int i = l->n++;
	if (i < 256) {
		l->jobs[i] = job_id;
		l->status[i] = status;
		l->model_id[i] = model_id;
		l->vnc[i] = vnc;
	}
	bool hold = l->hold_first && i == 0;
	pthread_mutex_unlock(&l->lock);
	if (hold) {
		sem_post(&l->entered);
		sem_wait(&l->go);
	}
}

static void cb_log_init(cb_log_t *l, bool hold_first)
{
	memset(l, 0, sizeof(*l));
	pthread_mutex_init(&l->lock, NULL);
	sem_init(&l->entered, 0, 0);
	sem_init(&l->go, 0, 0);
	l->hold_first = hold_first;
}

/* ---- tests ---- */

/* Requests of one TENSOR_OP queue run in submission order: each read sees the
 * write queued just before it, never a later one. */
START_TEST(test_tensor_queue_runs_in_submission_order)
{
	rt_init_default_ok();
	nrt_tensor_t *t;
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 1, 64, "t", &t), NRT_SUCCESS);
	enum { K = 30 }; /* 60 requests: below NRTA_QUEUE_DEPTH, none refused */
	uint32_t vals[K], got[K];
	NRT_STATUS wret[K], rret[K];
	nrta_seq_t wseq[K], rseq[K];
	for (int k = 0; k < K; k++) {
		vals[k] = 0x1000u + (uint32_t)k;
		got[k] = 0;
		ck_assert_int_eq(nrta_tensor_write(t, &vals[k], 4, 4, 1, &wret[k], &wseq[k]), NRT_SUCCESS);
		ck_assert_int_eq(nrta_tensor_read(&got[k], t, 4, 4, 1, &rret[k], &rseq[k]), NRT_SUCCESS);
	}
	/* One queue: consecutive ids, all of the same execution unit. */
	for (int k = 0; k < K; k++) {
		ck_assert_uint_eq(NRTA_SEQ_GET_XU_ID(wseq[k]), NRTA_SEQ_GET_XU_ID(wseq[0]));
		ck_assert_uint_eq(rseq[k], wseq[k] + 1);
		if (k)
			ck_assert_uint_eq(wseq[k], rseq[k - 1] + 1);
	}
	ck_assert_uint_eq(NRTA_SEQ_GET_SEQ_NUM(wseq[0]), 1);
	wait_done(rseq[K - 1]);
	/* In order: everything before the last completed request completed too. */
	for (int k = 0; k < K; k++) {
		bool done;
		ck_assert_int_eq(nrta_is_completed(wseq[k], &done), NRT_SUCCESS);
		ck_assert(done);
		ck_assert_int_eq(wret[k], NRT_SUCCESS);
		ck_assert_int_eq(rret[k], NRT_SUCCESS);
		ck_assert_uint_eq(got[k], vals[k]);
	}
	nrta_seq_t last;
	ck_assert_int_eq(nrta_get_sequence(1, NRTA_XU_TENSOR_OP, 1, &last), NRT_SUCCESS);
	ck_assert_uint_eq(last, rseq[K - 1]);
	/* Queue 0 of the same core is another unit and has done nothing. */
	ck_assert_int_eq(nrta_get_sequence(1, NRTA_XU_TENSOR_OP, 0, &last), NRT_SUCCESS);
	ck_assert_uint_ne(NRTA_SEQ_GET_XU_ID(last), NRTA_SEQ_GET_XU_ID(wseq[0]));
	ck_assert_uint_eq(NRTA_SEQ_GET_SEQ_NUM(last), 0);
	uint32_t now;
	ck_assert_int_eq(nrt_tensor_read(t, &now, 4, 4), NRT_SUCCESS);
	ck_assert_uint_eq(now, vals[K - 1]);
	nrt_tensor_free(&t);
	nrt_close();
}
END_TEST

/* Executions complete in submission order, each with its own result, and the
 * registered callback hears of each, in order, with the model's ids. */
START_TEST(test_executions_ordered_with_callback_per_request)
{
	rt_init_default_ok();
	rt_add_model_t f, g;
	add_load(&f, 0);
	add_load(&g, 0); /* a second model on the same COMPUTE queue */
	size_t oob_size;
	void *oob = test_neff_oob(&oob_size);
	nrt_model_t *bad;
	ck_assert_int_eq(nrt_load(oob, oob_size, 0, -1, &bad), NRT_SUCCESS);
	nrt_tensor_t *x, *y;
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 16, "x", &x), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 16, "y", &y), NRT_SUCCESS);
	nrt_tensor_set_t *bin = rt_tensor_set_of(1, "x", x), *bout = rt_tensor_set_of(1, "y", y);
	nrt_tensor_set_t *missing = rt_tensor_set_of(1, "a", f.a); /* no "b" */
	nrt_model_info_t fi, gi;
	size_t n;
	ck_assert_int_eq(nrt_get_model_info(f.m, &fi, sizeof(fi), &n), NRT_SUCCESS);
	ck_assert_int_eq(nrt_get_model_info(g.m, &gi, sizeof(gi), &n), NRT_SUCCESS);

	cb_log_t log;
	cb_log_init(&log, false);
	ck_assert_int_eq(nrt_register_async_exec_callback(record_cb, &log), NRT_SUCCESS);
	enum { K = 5 };
	NRT_STATUS ret[K];
	nrta_seq_t seq[K];
	for (int k = 0; k < K; k++)
		ret[k] = (NRT_STATUS)-1;
	/* good, device error, good (other model), refused input, good */
	ck_assert_int_eq(nrta_execute_schedule(f.m, f.in, f.outs, 0, &ret[0], &seq[0]), NRT_SUCCESS);
	ck_assert_int_eq(nrta_execute_schedule(bad, bin, bout, 0, &ret[1], &seq[1]), NRT_SUCCESS);
	ck_assert_int_eq(nrta_execute_schedule(g.m, g.in, g.outs, 0, &ret[2], &seq[2]), NRT_SUCCESS);
	ck_assert_int_eq(nrta_execute_schedule(f.m, missing, f.outs, 0, &ret[3], &seq[3]), NRT_SUCCESS);
	ck_assert_int_eq(nrta_execute_schedule(f.m, f.in, f.outs, 0, &ret[4], &seq[4]), NRT_SUCCESS);
	ck_assert_int_eq(nrt_async_drain_queued_execs(0), NRT_SUCCESS);
	for (int k = 0; k < K; k++) {
		bool done;
		ck_assert_int_eq(nrta_is_completed(seq[k], &done), NRT_SUCCESS);
		ck_assert(done);
		if (k)
			ck_assert_uint_eq(seq[k], seq[k - 1] + 1);
	}
	ck_assert_int_eq(ret[0], NRT_SUCCESS);
	ck_assert_int_eq(ret[1], NRT_EXEC_OOB);
	ck_assert_int_eq(ret[2], NRT_SUCCESS);
	ck_assert_int_ne(ret[3], NRT_SUCCESS);
	ck_assert_int_eq(ret[3], nrt_execute(f.m, missing, f.outs)); /* same as the synchronous call */
	ck_assert_int_eq(ret[4], NRT_SUCCESS);
	float out[N];
	ck_assert_int_eq(nrt_tensor_read(g.out, out, 0, sizeof(out)), NRT_SUCCESS);
	for (int i = 0; i < N; i++)
		ck_assert_float_eq(out[i], (float)i + 1);

	pthread_mutex_lock(&log.lock);
	ck_assert_int_eq(log.n, K);
	for (int k = 0; k < K; k++) {
		ck_assert_uint_eq(log.jobs[k], seq[k]);
		ck_assert_int_eq(log.status[k], ret[k]);
		ck_assert_uint_eq(log.vnc[k], 0);
	}
	ck_assert_uint_eq(log.model_id[0], log.model_id[4]);
	ck_assert_uint_ne(log.model_id[0], log.model_id[2]);
	pthread_mutex_unlock(&log.lock);
	ck_assert_uint_eq(fi.vnc, 0);
	ck_assert_uint_eq(gi.vnc, 0);

	/* Unregistered: no more calls. */
	ck_assert_int_eq(nrt_register_async_exec_callback(NULL, NULL), NRT_SUCCESS);
	ck_assert_int_eq(nrta_execute_schedule(f.m, f.in, f.outs, 0, &ret[0], &seq[0]), NRT_SUCCESS);
	ck_assert_int_eq(nrt_async_drain_queued_execs(0), NRT_SUCCESS);
	ck_assert_int_eq(ret[0], NRT_SUCCESS);
	ck_assert_int_eq(log.n, K);

	nrt_destroy_tensor_set(&bin);
	nrt_destroy_tensor_set(&bout);
	nrt_destroy_tensor_set(&missing);
	nrt_tensor_free(&x);
	nrt_tensor_free(&y);
	ck_assert_int_eq(nrt_unload(bad), NRT_SUCCESS);
	free(oob);
	rt_add_model_free(&f);
	rt_add_model_free(&g);
	nrt_close();
}
END_TEST

/* A full queue refuses with NRT_QUEUE_FULL and changes nothing; it accepts
 * again once a request completed. The worker is held in the callback of the
 * first execution, so the queue's state is known without timing. */
START_TEST(test_queue_full_is_backpressure)
{
	rt_init_default_ok();
	rt_add_model_t f;
	add_load(&f, 2);
	cb_log_t log;
	cb_log_init(&log, true);
	ck_assert_int_eq(nrt_register_async_exec_callback(record_cb, &log), NRT_SUCCESS);
	static NRT_STATUS ret[NRTA_QUEUE_DEPTH + 1];
	static nrta_seq_t seq[NRTA_QUEUE_DEPTH + 1];
	ck_assert_int_eq(nrta_execute_schedule(f.m, f.in, f.outs, 0, &ret[0], &seq[0]), NRT_SUCCESS);
	sem_wait(&log.entered); /* request 1 ran and its worker is held */
	for (int k = 1; k < NRTA_QUEUE_DEPTH; k++)
		ck_assert_int_eq(nrta_execute_schedule(f.m, f.in, f.outs, 0, &ret[k], &seq[k]), NRT_SUCCESS);
	nrta_seq_t extra = 0;
	ret[NRTA_QUEUE_DEPTH] = (NRT_STATUS)-1;
	ck_assert_int_eq(nrta_execute_schedule(f.m, f.in, f.outs, 0, &ret[NRTA_QUEUE_DEPTH], &extra),
			 NRT_QUEUE_FULL);
	ck_assert_uint_eq(extra, 0);
	ck_assert_int_eq(ret[NRTA_QUEUE_DEPTH], (NRT_STATUS)-1);
	bool done;
	/* The refused request got no id: the next one is still unknown. */
	ck_assert_int_eq(nrta_is_completed(seq[NRTA_QUEUE_DEPTH - 1] + 1, &done), NRT_INVALID);
	ck_assert_int_eq(nrta_is_completed(seq[0], &done), NRT_SUCCESS);
	ck_assert(!done); /* reported complete only after its callback */
	ck_assert_int_eq(ret[0], NRT_SUCCESS); /* but its status is stored already */
	nrta_seq_t last;
	ck_assert_int_eq(nrta_get_sequence(2, NRTA_XU_COMPUTE, 0, &last), NRT_SUCCESS);
	ck_assert_uint_eq(NRTA_SEQ_GET_SEQ_NUM(last), 0);
	/* Other queues are not affected. */
	NRT_STATUS wret;
	nrta_seq_t wseq;
	float one = 1;
	ck_assert_int_eq(nrta_tensor_write(f.a, &one, 0, 4, 0, &wret, &wseq), NRT_SUCCESS);
	wait_done(wseq);
	ck_assert_int_eq(wret, NRT_SUCCESS);

	sem_post(&log.go);
	wait_done(seq[0]);
	ck_assert_int_eq(nrta_execute_schedule(f.m, f.in, f.outs, 0, &ret[NRTA_QUEUE_DEPTH], &extra),
			 NRT_SUCCESS);
	ck_assert_uint_eq(extra, seq[NRTA_QUEUE_DEPTH - 1] + 1);
	ck_assert_int_eq(nrt_async_drain_queued_execs(2), NRT_SUCCESS);
	for (int k = 0; k <= NRTA_QUEUE_DEPTH; k++)
		ck_assert_int_eq(ret[k], NRT_SUCCESS);
	ck_assert_int_eq(nrta_get_sequence(2, NRTA_XU_COMPUTE, 0, &last), NRT_SUCCESS);
	ck_assert_uint_eq(last, extra);
	ck_assert_int_eq(log.n, NRTA_QUEUE_DEPTH + 1);
	rt_add_model_free(&f);
	nrt_close();
}
END_TEST

/* Completion through file descriptors: an eventfd registered before and one
 * after completion both become readable; a completion handle polls. */
START_TEST(test_completion_eventfds)
{
	rt_init_default_ok();
	rt_add_model_t f;
	add_load(&f, 1);
	cb_log_t log;
	cb_log_init(&log, true);
	ck_assert_int_eq(nrt_register_async_exec_callback(record_cb, &log), NRT_SUCCESS);
	NRT_STATUS ret;
	nrta_seq_t seq;
	ck_assert_int_eq(nrta_execute_schedule(f.m, f.in, f.outs, 0, &ret, &seq), NRT_SUCCESS);
	sem_wait(&log.entered);
	int before = eventfd(0, EFD_NONBLOCK);
	ck_assert_int_ge(before, 0);
	ck_assert_int_eq(nrta_event_register_seq_id_completion(seq, before), NRT_SUCCESS);
	int handle = -1;
	ck_assert_int_eq(nrta_get_completion_handle(seq, &handle), NRT_SUCCESS);
	struct pollfd p = { .fd = handle, .events = POLLIN };
	ck_assert_int_eq(poll(&p, 1, 0), 0); /* held: not complete yet */
	uint64_t v;
	ck_assert_int_eq(read(before, &v, sizeof(v)), -1);
	sem_post(&log.go);
	ck_assert_int_eq(poll(&p, 1, -1), 1);
	ck_assert(p.revents & POLLIN);
	bool done;
	ck_assert_int_eq(nrta_is_completed(seq, &done), NRT_SUCCESS);
	ck_assert(done);
	ck_assert_int_eq(ret, NRT_SUCCESS);
	ck_assert_int_eq(read(before, &v, sizeof(v)), (ssize_t)sizeof(v));
	ck_assert_uint_eq(v, 1);
	int after = eventfd(0, EFD_NONBLOCK);
	ck_assert_int_eq(nrta_event_register_seq_id_completion(seq, after), NRT_SUCCESS);
	ck_assert_int_eq(read(after, &v, sizeof(v)), (ssize_t)sizeof(v));
	close(before);
	close(after);
	close(handle);
	ck_assert_int_eq(nrta_event_register_seq_id_completion(seq, -1), NRT_INVALID);
	ck_assert_int_eq(nrta_get_completion_handle(seq + 1, &handle), NRT_INVALID);
	rt_add_model_free(&f);
	nrt_close();
}
END_TEST

/* Tensor copies: read, write and copy through both TENSOR_OP queues, host
 * and device tensors; a request whose tensor was freed before it ran fails
 * alone with NRT_INVALID_HANDLE. */
START_TEST(test_tensor_requests_and_per_request_errors)
{
	rt_init_default_ok();
	nrt_tensor_t *d, *d2, *h;
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 3, 32, "d", &d), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 3, 32, "d2", &d2), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_HOST, -1, 32, "h", &h), NRT_SUCCESS);
	uint8_t src[32], back[32], hback[32];
	for (int i = 0; i < 32; i++)
		src[i] = (uint8_t)(3 * i + 1);
	NRT_STATUS r[4];
	nrta_seq_t s[4];
	ck_assert_int_eq(nrta_tensor_write(d, src, 0, 32, 0, &r[0], &s[0]), NRT_SUCCESS);
	ck_assert_int_eq(nrta_tensor_copy(d, 8, d2, 0, 24, 0, &r[1], &s[1]), NRT_SUCCESS);
	ck_assert_int_eq(nrta_tensor_read(back, d2, 0, 24, 0, &r[2], &s[2]), NRT_SUCCESS);
	ck_assert_int_eq(nrta_tensor_write(h, src, 0, 32, 1, &r[3], &s[3]), NRT_SUCCESS);
	/* the device tensors' core serves them; host tensors go to core 0 */
	nrta_seq_t q3, q0;
	wait_done(s[2]);
	wait_done(s[3]);
	ck_assert_int_eq(nrta_get_sequence(3, NRTA_XU_TENSOR_OP, 0, &q3), NRT_SUCCESS);
	ck_assert_uint_eq(q3, s[2]);
	ck_assert_int_eq(nrta_get_sequence(0, NRTA_XU_TENSOR_OP, 1, &q0), NRT_SUCCESS);
	ck_assert_uint_eq(q0, s[3]);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(r[i], NRT_SUCCESS);
	ck_assert_mem_eq(back, src + 8, 24);
	ck_assert_int_eq(nrt_tensor_read(h, hback, 0, 32), NRT_SUCCESS);
	ck_assert_mem_eq(hback, src, 32);

	/* A freed tensor is refused at once. */
	nrt_tensor_t *gone;
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 3, 32, "gone", &gone), NRT_SUCCESS);
	nrt_tensor_t *stale = gone;
	nrt_tensor_free(&gone);
	ck_assert_int_eq(nrta_tensor_read(back, stale, 0, 4, 0, &r[0], &s[0]), NRT_INVALID_HANDLE);

	/* Checked at once, nothing queued. */
	nrta_seq_t before;
	ck_assert_int_eq(nrta_get_sequence(3, NRTA_XU_TENSOR_OP, 0, &before), NRT_SUCCESS);
	ck_assert_int_eq(nrta_tensor_read(back, d, 30, 4, 0, &r[0], &s[0]), NRT_INVALID);
	ck_assert_int_eq(nrta_tensor_write(d, NULL, 0, 4, 0, &r[0], &s[0]), NRT_INVALID);
	ck_assert_int_eq(nrta_tensor_write(d, src, 0, 4, 2, &r[0], &s[0]), NRT_INVALID);
	ck_assert_int_eq(nrta_tensor_write(d, src, 0, 4, -1, &r[0], &s[0]), NRT_INVALID);
	ck_assert_int_eq(nrta_tensor_write(d, src, 0, 4, 0, NULL, &s[0]), NRT_INVALID);
	ck_assert_int_eq(nrta_tensor_write(d, src, 0, 4, 0, &r[0], NULL), NRT_INVALID);
	ck_assert_int_eq(nrta_tensor_copy(d, 0, d2, 16, 32, 0, &r[0], &s[0]), NRT_INVALID);
	ck_assert_int_eq(nrta_tensor_copy(NULL, 0, d2, 0, 4, 0, &r[0], &s[0]), NRT_INVALID);
	nrta_seq_t after;
	ck_assert_int_eq(nrta_get_sequence(3, NRTA_XU_TENSOR_OP, 0, &after), NRT_SUCCESS);
	ck_assert_uint_eq(after, before);
	/* A copy between device tensors of two cores fails when it runs, alone. */
	nrt_tensor_t *other;
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 1, 32, "other", &other), NRT_SUCCESS);
	ck_assert_int_eq(nrta_tensor_copy(d, 0, other, 0, 4, 0, &r[0], &s[0]), NRT_SUCCESS);
	ck_assert_int_eq(nrta_tensor_read(back, d, 0, 4, 0, &r[1], &s[1]), NRT_SUCCESS);
	wait_done(s[1]);
	ck_assert_int_eq(r[0], NRT_INVALID);
	ck_assert_int_eq(r[1], NRT_SUCCESS);
	nrt_tensor_free(&other);
	nrt_tensor_free(&d);
	nrt_tensor_free(&d2);
	nrt_tensor_free(&h);
	nrt_close();
}
END_TEST

/* A model unloaded while its execution was queued: that request fails with
 * NRT_INVALID_HANDLE, the ones around it run. */
START_TEST(test_unloaded_model_fails_its_request_only)
{
	rt_init_default_ok();
	rt_add_model_t f, g;
	add_load(&f, 0);
	add_load(&g, 0);
	cb_log_t log;
	cb_log_init(&log, true);
	ck_assert_int_eq(nrt_register_async_exec_callback(record_cb, &log), NRT_SUCCESS);
	NRT_STATUS r[3];
	nrta_seq_t s[3];
	ck_assert_int_eq(nrta_execute_schedule(f.m, f.in, f.outs, 0, &r[0], &s[0]), NRT_SUCCESS);
	sem_wait(&log.entered);
	ck_assert_int_eq(nrta_execute_schedule(g.m, g.in, g.outs, 0, &r[1], &s[1]), NRT_SUCCESS);
	ck_assert_int_eq(nrta_execute_schedule(f.m, f.in, f.outs, 0, &r[2], &s[2]), NRT_SUCCESS);
	ck_assert_int_eq(nrt_unload(g.m), NRT_SUCCESS);
	g.m = NULL;
	sem_post(&log.go);
	ck_assert_int_eq(nrt_async_drain_queued_execs(0), NRT_SUCCESS);
	ck_assert_int_eq(r[0], NRT_SUCCESS);
	ck_assert_int_eq(r[1], NRT_INVALID_HANDLE);
	ck_assert_int_eq(r[2], NRT_SUCCESS);
	ck_assert_int_eq(log.status[1], NRT_INVALID_HANDLE);
	rt_add_model_free(&f);
	rt_add_model_free(&g);
	nrt_close();
}
END_TEST

/* ---- nrt_close with requests pending ---- */

static void *close_thread(void *p)
{
	(void)p;
	nrt_close();
	return NULL;
}

/* The request running finishes; queued ones complete with NRT_CLOSED, their
 * eventfds signalled, before nrt_close returns. The worker is held in the
 * callback of the first request while another thread closes; the test sees
 * the close begin when a new schedule on that queue is refused (which it only
 * is once nrt_close has stopped the queue: it cannot finish while the worker
 * is held). */
START_TEST(test_close_with_pending_requests)
{
	rt_init_default_ok();
	rt_add_model_t f;
	add_load(&f, 0);
	cb_log_t log;
	cb_log_init(&log, true);
	ck_assert_int_eq(nrt_register_async_exec_callback(record_cb, &log), NRT_SUCCESS);
	enum { K = 6 };
	static NRT_STATUS r[NRTA_QUEUE_DEPTH];
	nrta_seq_t s[K];
	for (int k = 0; k < NRTA_QUEUE_DEPTH; k++)
		r[k] = (NRT_STATUS)-1;
	ck_assert_int_eq(nrta_execute_schedule(f.m, f.in, f.outs, 0, &r[0], &s[0]), NRT_SUCCESS);
	sem_wait(&log.entered);
	for (int k = 1; k < K; k++)
		ck_assert_int_eq(nrta_execute_schedule(f.m, f.in, f.outs, 0, &r[k], &s[k]), NRT_SUCCESS);
	int efd = eventfd(0, EFD_NONBLOCK);
	ck_assert_int_eq(nrta_event_register_seq_id_completion(s[K - 1], efd), NRT_SUCCESS);
	pthread_t th;
	ck_assert_int_eq(pthread_create(&th, NULL, close_thread, NULL), 0);
	int k = K;
	NRT_STATUS st;
	nrta_seq_t extra;
	while ((st = nrta_execute_schedule(f.m, f.in, f.outs, 0, &r[k], &extra)) == NRT_SUCCESS ||
	       st == NRT_QUEUE_FULL) {
		if (st == NRT_SUCCESS)
			k++;
		usleep(200);
	}
	ck_assert_int_eq(st, NRT_CLOSED);
	sem_post(&log.go);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(r[0], NRT_SUCCESS);
	for (int i = 1; i < k; i++)
		ck_assert_int_eq(r[i], NRT_CLOSED);
	for (int i = k; i < NRTA_QUEUE_DEPTH; i++)
		ck_assert_int_eq(r[i], (NRT_STATUS)-1);
	uint64_t v;
	ck_assert_int_eq(read(efd, &v, sizeof(v)), (ssize_t)sizeof(v));
	close(efd);
	ck_assert_int_eq(log.n, 1); /* cancelled requests run no callback */
	bool done;
	ck_assert_int_eq(nrta_is_completed(s[0], &done), NRT_CLOSED);
	ck_assert_int_eq(nrta_execute_schedule(f.m, f.in, f.outs, 0, &r[0], &s[0]), NRT_CLOSED);
	/* Everything was freed by nrt_close. */
	f.m = NULL;
	f.a = f.b = f.out = NULL;
	nrt_destroy_tensor_set(&f.in);
	nrt_destroy_tensor_set(&f.outs);
	free(f.neff);
}
END_TEST

/* A timed-out execution leaves its COMPUTE queue unrecoverable: later
 * schedule calls on it are refused, other queues keep working. */
START_TEST(test_timeout_makes_queue_unrecoverable)
{
	test_env_default();
	setenv("NEURON_RT_EXEC_TIMEOUT", "1", 1);
	rt_init_ok();
	size_t sz;
	void *neff = test_neff_spin(&sz);
	nrt_model_t *m;
	ck_assert_int_eq(nrt_load(neff, sz, 1, -1, &m), NRT_SUCCESS);
	nrt_tensor_t *x;
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 1, 4, "x", &x), NRT_SUCCESS);
	nrt_tensor_set_t *in = rt_tensor_set_of(1, "x", x), *out = rt_tensor_set_of(0);
	NRT_STATUS r;
	nrta_seq_t s;
	ck_assert_int_eq(nrta_execute_schedule(m, in, out, 0, &r, &s), NRT_SUCCESS);
	ck_assert_int_eq(nrt_async_drain_queued_execs(1), NRT_SUCCESS);
	ck_assert_int_eq(r, NRT_TIMEOUT);
	test_capture_begin();
	NRT_STATUS st = nrta_execute_schedule(m, in, out, 0, &r, &s);
	char *log = test_capture_end();
	ck_assert_int_eq(st, NRT_EXEC_UNIT_UNRECOVERABLE);
	ck_assert_ptr_nonnull(strstr(log, "unrecoverable"));
	free(log);
	NRT_STATUS wr;
	nrta_seq_t ws;
	float one = 1;
	ck_assert_int_eq(nrta_tensor_write(x, &one, 0, 4, 0, &wr, &ws), NRT_SUCCESS);
	wait_done(ws);
	ck_assert_int_eq(wr, NRT_SUCCESS);
	nrt_destroy_tensor_set(&in);
	nrt_destroy_tensor_set(&out);
	free(neff);
	nrt_close();
}
END_TEST

/* A model an error snapshot stopped (ON_NRT_ERROR) completes its requests
 * with NRT_EXEC_UNIT_UNRECOVERABLE, but that is the model's state: the
 * COMPUTE queue stays usable for other models. */
START_TEST(test_stopped_model_does_not_disable_the_queue)
{
	test_env_default();
	char dir[256];
	rt_tmpdir_create(dir, sizeof(dir), "nrta-snap");
	char flags[512];
	snprintf(flags, sizeof(flags), "--xla_dump_to=%s", dir);
	setenv("XLA_FLAGS", flags, 1);
	setenv("NEURON_DUMP_HLO_SNAPSHOT", "ON_NRT_ERROR", 1);
	rt_init_ok();
	rt_add_model_t f;
	add_load(&f, 0);
	size_t oob_size;
	void *oob = test_neff_oob(&oob_size);
	nrt_model_t *bad;
	ck_assert_int_eq(nrt_load(oob, oob_size, 0, -1, &bad), NRT_SUCCESS);
	nrt_tensor_t *x, *y;
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 16, "x", &x), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 16, "y", &y), NRT_SUCCESS);
	nrt_tensor_set_t *bin = rt_tensor_set_of(1, "x", x), *bout = rt_tensor_set_of(1, "y", y);
	NRT_STATUS r[4];
	nrta_seq_t s[4];
	ck_assert_int_eq(nrta_execute_schedule(bad, bin, bout, 0, &r[0], &s[0]), NRT_SUCCESS);
	ck_assert_int_eq(nrta_execute_schedule(bad, bin, bout, 0, &r[1], &s[1]), NRT_SUCCESS);
	ck_assert_int_eq(nrta_execute_schedule(f.m, f.in, f.outs, 0, &r[2], &s[2]), NRT_SUCCESS);
	ck_assert_int_eq(nrt_async_drain_queued_execs(0), NRT_SUCCESS);
	ck_assert_int_eq(r[0], NRT_EXEC_OOB);
	ck_assert_int_eq(r[1], NRT_EXEC_UNIT_UNRECOVERABLE);
	ck_assert_int_eq(r[2], NRT_SUCCESS);
	ck_assert_int_eq(nrta_execute_schedule(f.m, f.in, f.outs, 0, &r[3], &s[3]), NRT_SUCCESS);
	ck_assert_int_eq(nrt_async_drain_queued_execs(0), NRT_SUCCESS);
	ck_assert_int_eq(r[3], NRT_SUCCESS);
	nrt_destroy_tensor_set(&bin);
	nrt_destroy_tensor_set(&bout);
	nrt_tensor_free(&x);
	nrt_tensor_free(&y);
	ck_assert_int_eq(nrt_unload(bad), NRT_SUCCESS);
	free(oob);
	rt_add_model_free(&f);
	nrt_close();
	unsetenv("NEURON_DUMP_HLO_SNAPSHOT");
	unsetenv("XLA_FLAGS");
	ck_assert_int_eq(rt_tmpdir_remove(dir), 0);
}
END_TEST

/* Collectives over a group of one: every collective copies input i to
 * output i; larger groups are refused. */
START_TEST(test_collectives_group_of_one)
{
	rt_init_default_ok();
	nrt_tensor_t *in[2], *out[2];
	float v[4] = { 1, 2, 3, 4 }, w[4] = { 5, 6, 7, 8 }, got[4];
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 2, 16, "in", &in[i]), NRT_SUCCESS);
		ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 2, 16, "out", &out[i]), NRT_SUCCESS);
	}
	ck_assert_int_eq(nrt_tensor_write(in[0], v, 0, 16), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_write(in[1], w, 0, 16), NRT_SUCCESS);
	uint32_t group[1] = { 0 };
	nrt_cc_comm_t comm = { .replica_group = group, .rank = 0, .rank_n = 1, .ctx_device_id = 0,
			       .ctx_device_count = 1, .vnc = 2 };
	nrt_tensor_list_t il = { in, 2 }, ol = { out, 2 };
	nrt_cc_context_t *cc = NULL;
	ck_assert_int_eq(nrta_cc_prepare(&comm, &il, &ol, NRT_DTYPE_FLOAT32, NRT_OP_ADD, NRT_CC_ALLREDUCE, &cc),
			 NRT_SUCCESS);
	NRT_STATUS r;
	nrta_seq_t s;
	ck_assert_int_eq(nrta_cc_schedule(&cc, 2, &r, &s), NRT_SUCCESS);
	ck_assert_ptr_null(cc);
	wait_done(s);
	ck_assert_int_eq(r, NRT_SUCCESS);
	nrta_seq_t last;
	ck_assert_int_eq(nrta_get_sequence(2, NRTA_XU_COLLECTIVES, 2, &last), NRT_SUCCESS);
	ck_assert_uint_eq(last, s);
	ck_assert_int_eq(nrt_tensor_read(out[0], got, 0, 16), NRT_SUCCESS);
	ck_assert_mem_eq(got, v, 16);
	ck_assert_int_eq(nrt_tensor_read(out[1], got, 0, 16), NRT_SUCCESS);
	ck_assert_mem_eq(got, w, 16);

	comm.rank_n = 2;
	ck_assert_int_eq(nrta_cc_prepare(&comm, &il, &ol, NRT_DTYPE_FLOAT32, NRT_OP_ADD, NRT_CC_ALLREDUCE, &cc),
			 NRT_INVALID);
	comm.rank_n = 1;
	ol.num_tensors = 1;
	ck_assert_int_eq(nrta_cc_prepare(&comm, &il, &ol, NRT_DTYPE_FLOAT32, NRT_OP_ADD, NRT_CC_ALLGATHER, &cc),
			 NRT_INVALID);
	ol.num_tensors = 2;
	ck_assert_int_eq(nrta_cc_prepare(&comm, &il, &ol, NRT_DTYPE_FLOAT32, NRT_OP_ADD, NRT_CC_ALLGATHER, &cc),
			 NRT_SUCCESS);
	ck_assert_int_eq(nrta_cc_schedule(&cc, 3, &r, &s), NRT_INVALID); /* queues 0..2; cc freed */
	ck_assert_ptr_null(cc);
	ck_assert_int_eq(nrta_cc_schedule(&cc, 0, &r, &s), NRT_INVALID);
	for (int i = 0; i < 2; i++) {
		nrt_tensor_free(&in[i]);
		nrt_tensor_free(&out[i]);
	}
	nrt_close();
}
END_TEST

START_TEST(test_async_misuse)
{
	test_env_default();
	NRT_STATUS r;
	nrta_seq_t s;
	bool done;
	/* Before nrt_init (after an earlier test's nrt_close with CK_FORK=no). */
	NRT_STATUS before = nrta_is_completed(1, &done);
	ck_assert(before == NRT_UNINITIALIZED || before == NRT_CLOSED);
	ck_assert_int_eq(nrta_get_sequence(0, NRTA_XU_COMPUTE, 0, &s), before);
	ck_assert_int_eq(nrt_register_async_exec_callback(NULL, NULL), before);
	ck_assert_int_eq(nrt_async_drain_queued_execs(0), before);
	rt_init_ok();
	rt_add_model_t f;
	add_load(&f, 0);
	ck_assert_int_eq(nrta_execute_schedule(f.m, f.in, f.outs, 1, &r, &s), NRT_INVALID);
	ck_assert_int_eq(nrta_execute_schedule(NULL, f.in, f.outs, 0, &r, &s), NRT_INVALID);
	ck_assert_int_eq(nrta_execute_schedule(f.m, NULL, f.outs, 0, &r, &s), NRT_INVALID);
	ck_assert_int_eq(nrta_execute_schedule((nrt_model_t *)f.a, f.in, f.outs, 0, &r, &s), NRT_INVALID_HANDLE);
	ck_assert_int_eq(nrta_is_completed(0, &done), NRT_INVALID);         /* sequence numbers start at 1 */
	ck_assert_int_eq(nrta_is_completed(1ull << 63, &done), NRT_INVALID); /* no such unit */
	ck_assert_int_eq(nrta_is_completed(5, &done), NRT_INVALID);         /* not given out */
	ck_assert_int_eq(nrta_is_completed(1, NULL), NRT_INVALID);
	ck_assert_int_eq(nrta_get_sequence(4, NRTA_XU_COMPUTE, 0, &s), NRT_INVALID); /* 4 cores visible */
	ck_assert_int_eq(nrta_get_sequence(0, NRTA_XU_TYPE_NUM, 0, &s), NRT_INVALID);
	ck_assert_int_eq(nrta_get_sequence(0, NRTA_XU_COLLECTIVES, 3, &s), NRT_INVALID);
	ck_assert_int_eq(nrta_get_sequence(0, NRTA_XU_COMPUTE, 0, NULL), NRT_INVALID);
	ck_assert_int_eq(nrt_async_drain_queued_execs(-1), NRT_INVALID);
	ck_assert_int_eq(nrt_async_drain_queued_execs(4), NRT_INVALID);
	ck_assert_int_eq(nrt_async_drain_queued_execs(3), NRT_SUCCESS); /* nothing queued */
	rt_add_model_free(&f);
	nrt_close();
	ck_assert_int_eq(nrta_get_sequence(0, NRTA_XU_COMPUTE, 0, &s), NRT_CLOSED);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("runtime_async");
	TCase *tc = tcase_create("order");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_tensor_queue_runs_in_submission_order);
	tcase_add_test(tc, test_executions_ordered_with_callback_per_request);
	tcase_add_test(tc, test_queue_full_is_backpressure);
	tcase_add_test(tc, test_completion_eventfds);
	suite_add_tcase(s, tc);
	tc = tcase_create("errors");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_tensor_requests_and_per_request_errors);
	tcase_add_test(tc, test_unloaded_model_fails_its_request_only);
	tcase_add_test(tc, test_timeout_makes_queue_unrecoverable);
	tcase_add_test(tc, test_stopped_model_does_not_disable_the_queue);
	tcase_add_test(tc, test_collectives_group_of_one);
	tcase_add_test(tc, test_async_misuse);
	suite_add_tcase(s, tc);
	tc = tcase_create("close");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_close_with_pending_requests);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return rt_suite_run(suite());
}
