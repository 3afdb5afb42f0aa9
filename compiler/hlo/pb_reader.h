/* ncc protobuf wire-format reader: tags, varints, fixed32/64, length-delimited payloads and packed repeated fields over a byte buffer, without allocating. */
#ifndef NCC_PB_READER_H
#define NCC_PB_READER_H

/*
 * The reader walks one message: [pos, end) of a buffer whose start is base, so every
 * offset it reports is an absolute byte offset into the whole input (for messages
 * like "truncated varint at byte 1234"). A nested message is read with a sub-reader
 * over its payload (ncc_pb_sub()); a length that runs past the end of the enclosing
 * message is an error, never a read beyond it. Nothing here keeps state outside the
 * reader, so a reader may be copied to look ahead; only a failure allocates (its
 * status).
 *
 * A failure is a status (neuronsim/status.h) whose message says what is wrong and
 * where, "truncated varint at byte 1234": NS_STATUS_OUT_OF_RANGE when the input ends
 * inside a value (a truncated varint, fixed32/fixed64 value or length-delimited
 * payload), NS_STATUS_INVALID_ARGUMENT when it is malformed (a varint longer than
 * 10 bytes, wire type 3, 4, 6 or 7, field number 0 or above 2^29-1).
 *
 * Field numbers and message layouts are the caller's business; this file only knows
 * the wire format (https://protobuf.dev/programming-guides/encoding/).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "neuronsim/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ncc_pb_wire {
	NCC_PB_VARINT = 0,
	NCC_PB_FIXED64 = 1,
	NCC_PB_LEN = 2,    /* string, bytes, message, packed repeated */
	NCC_PB_SGROUP = 3, /* groups (proto2, deprecated): refused */
	NCC_PB_EGROUP = 4,
	NCC_PB_FIXED32 = 5,
} ncc_pb_wire_t;

typedef struct ncc_pb_reader {
	const uint8_t *base; /* start of the whole input */
	size_t pos;          /* absolute offset of the next byte to read */
	size_t end;          /* absolute offset just past this message */
} ncc_pb_reader_t;

/* One field as read by ncc_pb_next(). */
typedef struct ncc_pb_field {
	uint32_t number;
	ncc_pb_wire_t wire;
	uint64_t value; /* VARINT, FIXED64 and FIXED32 (zero-extended) payloads */
	size_t off;     /* LEN: absolute offset of the payload */
	size_t len;     /* LEN: payload length */
	size_t start;   /* absolute offset of the field's tag */
} ncc_pb_field_t;

/* A reader over the whole buffer [data, data + len). */
ncc_pb_reader_t ncc_pb_reader(const void *data, size_t len);
/* A reader over a LEN field's payload (a nested message or a packed array). */
ncc_pb_reader_t ncc_pb_sub(const ncc_pb_reader_t *r, const ncc_pb_field_t *f);
bool ncc_pb_at_end(const ncc_pb_reader_t *r);

/* Reads the next field of a message that is not at its end (ncc_pb_at_end(); at
 * the end this is OUT_OF_RANGE "end of message at byte N"). On an error *f still
 * holds what was read (number and wire type once the tag was complete, 0 before),
 * and the message names the absolute offset of the offending byte. */
ns_status_t ncc_pb_next(ncc_pb_reader_t *r, ncc_pb_field_t *f);

/* A raw varint / fixed value at the reader's position (for packed arrays). */
ns_status_t ncc_pb_read_varint(ncc_pb_reader_t *r, uint64_t *out);
ns_status_t ncc_pb_read_fixed32(ncc_pb_reader_t *r, uint32_t *out);
ns_status_t ncc_pb_read_fixed64(ncc_pb_reader_t *r, uint64_t *out);

/* The element kinds of repeated scalar fields, which arrive either packed (one LEN
 * field) or one field per element (VARINT / FIXED32 / FIXED64). */
typedef enum ncc_pb_elem {
	NCC_PB_ELEM_VARINT,
	NCC_PB_ELEM_FIXED32,
	NCC_PB_ELEM_FIXED64,
} ncc_pb_elem_t;

/* Iterates the elements one field contributes to a repeated scalar: all of a packed
 * payload, or the single value of an unpacked field. */
typedef struct ncc_pb_values {
	ncc_pb_elem_t elem;
	bool single;          /* unpacked: one value, already in `value` */
	bool single_done;
	uint64_t value;
	ncc_pb_reader_t r;    /* packed: the payload */
} ncc_pb_values_t;

/* false when f's wire type is neither LEN nor the element's own wire type. */
bool ncc_pb_values_init(ncc_pb_values_t *it, const ncc_pb_reader_t *r, const ncc_pb_field_t *f,
			ncc_pb_elem_t elem);
/* Whether an element is left for ncc_pb_values_next(). */
bool ncc_pb_values_more(const ncc_pb_values_t *it);
/* The next element in *out, or an error (a truncated element; a packed fixed-width
 * payload whose length is not a multiple of the width is a truncated fixed-width
 * value at its last partial element). Past the last one: OUT_OF_RANGE. */
ns_status_t ncc_pb_values_next(ncc_pb_values_t *it, uint64_t *out);
/* The number of elements this field holds (counting varints of a packed payload);
 * an error if one is truncated. */
ns_status_t ncc_pb_values_count(const ncc_pb_values_t *it, size_t *out_n);

const char *ncc_pb_wire_name(ncc_pb_wire_t w);

#ifdef __cplusplus
}
#endif

#endif /* NCC_PB_READER_H */
