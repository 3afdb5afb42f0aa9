/* The Neuron Runtime's explicit asynchronous API (nrt_async.h, SDK 2.29 and later): queued tensor copies and executions tracked by sequence ids. */
#ifndef NRT_NRT_ASYNC_H
#define NRT_NRT_ASYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Execution unit (XU) kinds. Every visible NeuronCore has one COMPUTE queue,
 * two TENSOR_OP queues and three COLLECTIVES queues; each queue is served by
 * its own worker thread, one request at a time, in submission order.
 * Values are ABI. */
typedef enum {
	NRTA_XU_TENSOR_OP = 0,    /* nrta_tensor_read/write/copy */
	NRTA_XU_COMPUTE,          /* nrta_execute_schedule */
	NRTA_XU_COLLECTIVES,      /* nrta_cc_schedule */
	NRTA_XU_TYPE_NUM
} nrta_xu_t;

/* A request's id: bits 48..63 name the queue (execution unit id), bits 0..47
 * count the requests accepted on that queue, from 1. Ids of one queue are
 * consecutive, so later - earlier is the number of requests in between. */
typedef uint64_t nrta_seq_t;
typedef uint16_t nrta_xu_id_t;

#define NRTA_SEQ_NUM_MAX ((1ull << 48) - 1)
#define NRTA_SEQ_NUM_MASK NRTA_SEQ_NUM_MAX
#define NRTA_SEQ_GET_SEQ_NUM(seq_id) ((seq_id) & NRTA_SEQ_NUM_MASK)
#define NRTA_SEQ_GET_XU_ID(seq_id) ((seq_id) >> 48)

/* Common to every schedule call below:
 * - it never blocks: a queue holding NRTA_QUEUE_DEPTH requests not yet
 *   completed refuses with NRT_QUEUE_FULL and changes nothing;
 * - arguments that can be checked at once (handles, NULL pointers, ranges,
 *   the queue index) are, and a bad one fails the call (nothing is queued);
 * - on success *req_sequence is the request's id, and when the request
 *   completes its status is stored in *ret (which must stay valid until then)
 *   before the request counts as completed (nrta_is_completed,
 *   nrta_get_sequence, eventfds);
 * - buffers, tensors, tensor sets and models must stay valid until the
 *   request completes; a request whose handle was freed meanwhile completes
 *   with NRT_INVALID_HANDLE;
 * - after a request failed with NRT_TIMEOUT or NRT_HW_ERROR the queue is
 *   unrecoverable: later schedule calls on it return
 *   NRT_EXEC_UNIT_UNRECOVERABLE until nrt_close() (a model stopped by an error
 *   snapshot only fails its own requests, with that status).
 * nrt_close() with requests pending: the one running finishes, the ones still
 * queued are not run and complete with NRT_CLOSED; nrt_close() returns after
 * every *ret was written (docs/runtime.md). */
#define NRTA_QUEUE_DEPTH 64

/* Queues a copy of size bytes from buf into tensor at offset on TENSOR_OP
 * queue `queue` (0 or 1) of the tensor's core (core 0 for host tensors). */
NRT_STATUS nrta_tensor_write(nrt_tensor_t *tensor, const void *buf, uint64_t offset, uint64_t size, int queue,
			     NRT_STATUS *ret, nrta_seq_t *req_sequence);

/* Queues a copy of size bytes at offset of tensor into buf. */
NRT_STATUS nrta_tensor_read(void *buf, nrt_tensor_t *tensor, uint64_t offset, uint64_t size, int queue,
			    NRT_STATUS *ret, nrta_seq_t *req_sequence);

/* Queues a copy between two tensors (two device tensors must be on the same
 * core, as for nrt_tensor_copy). */
NRT_STATUS nrta_tensor_copy(nrt_tensor_t *src, uint64_t src_offset, nrt_tensor_t *dst, uint64_t dst_offset,
			    uint64_t size, int queue, NRT_STATUS *ret, nrta_seq_t *req_sequence);

/* Queues an execution of model (as nrt_execute) on the COMPUTE queue of its
 * first core; queue must be 0. The sets are read when the request runs. */
NRT_STATUS nrta_execute_schedule(nrt_model_t *model, const nrt_tensor_set_t *input, nrt_tensor_set_t *output,
				 int queue, NRT_STATUS *ret, nrta_seq_t *req_sequence);

/* Prepares a collective over comm's replica group: output tensor i receives
 * the op-reduction (all-reduce), concatenation (all-gather) or this rank's
 * share (reduce-scatter) of input tensor i across the group. neuronsim runs
 * one worker, so the group must be {rank}: NRT_INVALID otherwise. *cc_ctx is
 * consumed by nrta_cc_schedule (which frees it, also when it fails). */
NRT_STATUS nrta_cc_prepare(nrt_cc_comm_t *comm, nrt_tensor_list_t *input, nrt_tensor_list_t *output,
			   nrt_dtype_t dtype, nrt_op_type_t op, nrt_cc_op_type_t cc_op, nrt_cc_context_t **cc_ctx);

/* Queues the prepared collective on COLLECTIVES queue `queue` (0..2) of
 * comm's vnc and sets *cc_ctx to NULL. */
NRT_STATUS nrta_cc_schedule(nrt_cc_context_t **cc_ctx, int queue, NRT_STATUS *ret, nrta_seq_t *req_sequence);

/* Whether request seq has completed. NRT_INVALID for an id no queue gave out. */
NRT_STATUS nrta_is_completed(nrta_seq_t seq, bool *is_completed);

/* The id of the last completed request of queue (lnc, xu, queue), or the
 * queue's id with sequence number 0 when none has completed. */
NRT_STATUS nrta_get_sequence(uint32_t lnc, nrta_xu_t xu, int queue, nrta_seq_t *seq);

/* Makes efd (an eventfd) readable when request seq completes: 1 is added to
 * its counter then (at once when it already has). The runtime does not keep
 * or close efd. */
NRT_STATUS nrta_event_register_seq_id_completion(nrta_seq_t seq, int efd);

/* A new file descriptor, readable once request seq has completed; use it only
 * with poll/select/epoll and close() it when done. */
NRT_STATUS nrta_get_completion_handle(nrta_seq_t seq, int *fd);

#ifdef __cplusplus
}
#endif
#endif /* NRT_NRT_ASYNC_H */
