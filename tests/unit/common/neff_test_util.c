/* Shared helpers of the NEFF unit tests (see neff_test_util.h). */
#include "neff_test_util.h"

#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <xxhash.h>

static const uint64_t shape_x[2] = { 4, 8 };
static const uint64_t shape_w[1] = { 8 };

void *ntu_build_sample(size_t *out_size)
{
	neff_builder_t *b = neff_builder_create(NTU_MODEL_NAME, NTU_N_CORES);
	NTU_REQUIRE(b);
	uint32_t x, w, y, w_out;
	NTU_REQUIRE_OK(neff_builder_add_tensor(b, "x", NEFF_USAGE_INPUT, ISA_DT_F32, 2,
					       shape_x, -1, &x));
	NTU_REQUIRE_OK(neff_builder_add_tensor(b, "w", NEFF_USAGE_INPUT, ISA_DT_F32, 1,
					       shape_w, -1, &w));
	NTU_REQUIRE_OK(neff_builder_add_tensor(b, "y", NEFF_USAGE_OUTPUT, ISA_DT_F32, 2,
					       shape_x, -1, &y));
	NTU_REQUIRE_OK(neff_builder_add_tensor(b, "w_out", NEFF_USAGE_OUTPUT, ISA_DT_F32,
					       1, shape_w, (int32_t)w, &w_out));

	float bias[32];
	for (int i = 0; i < 32; i++)
		bias[i] = (float)i * 0.5f;
	uint64_t c_off, s_off, s_off2;
	NTU_REQUIRE_OK(neff_builder_add_const(b, "pad", 3, 1, NULL));
	NTU_REQUIRE_OK(neff_builder_add_const(b, bias, sizeof(bias), 64, &c_off));
	NTU_REQUIRE(c_off == 64);
	NTU_REQUIRE_OK(neff_builder_add_scratch(b, 4000, 16, &s_off));
	NTU_REQUIRE_OK(neff_builder_add_scratch(b, 128, 64, &s_off2));
	NTU_REQUIRE(s_off2 == 4032);

	uint32_t d_add, d_copy, d_nop;
	NTU_REQUIRE_OK(neff_builder_add_debug(b, "add.1", "add", "model.py", 12, &d_add));
	NTU_REQUIRE_OK(neff_builder_add_debug(b, "copy.2", "copy", "model.py", 13, &d_copy));
	NTU_REQUIRE_OK(neff_builder_add_debug(b, "nop", NULL, NULL, 0, &d_nop));

	/* y = x + bias (vector engine, core 0), waiting on nothing. */
	isa_insn_t add = isa_insn_init(ISA_OP_ALU, ISA_ALU_ADD);
	add.n_ap = 3;
	add.ap[0] = isa_ap_contig(ISA_REGION_IO0 + y, 0, ISA_DT_F32, 2, shape_x);
	add.ap[1] = isa_ap_contig(ISA_REGION_IO0 + x, 0, ISA_DT_F32, 2, shape_x);
	add.ap[2] = isa_ap_contig(ISA_REGION_CONST, c_off, ISA_DT_F32, 2, shape_x);
	add.ap[2].offset = c_off; /* explicit: early isa_ap_contig() dropped it */
	add.debug_id = d_add;
	add.signal_sem = 0;
	NTU_REQUIRE_OK(neff_builder_emit(b, 0, ISA_ENGINE_VECTOR, &add, NULL));

	/* w_out = w (DMA engine, core 0) after the add. */
	isa_insn_t copy = isa_insn_init(ISA_OP_COPY, 0);
	copy.n_ap = 2;
	copy.ap[0] = isa_ap_contig(ISA_REGION_IO0 + w_out, 0, ISA_DT_F32, 1, shape_w);
	copy.ap[1] = isa_ap_contig(ISA_REGION_IO0 + w, 0, ISA_DT_F32, 1, shape_w);
	copy.debug_id = d_copy;
	copy.wait_sem = 0;
	copy.wait_value = 1;
	NTU_REQUIRE_OK(neff_builder_emit(b, 0, ISA_ENGINE_DMA, &copy, NULL));

	isa_insn_t nop = isa_insn_init(ISA_OP_NOP, 0);
	nop.debug_id = d_nop;
	for (int i = 0; i < 3; i++)
		NTU_REQUIRE_OK(neff_builder_emit(b, 1, ISA_ENGINE_GPSIMD, &nop, NULL));
	nop.debug_id = ISA_DEBUG_NONE;
	NTU_REQUIRE_OK(neff_builder_emit(b, 1, ISA_ENGINE_TENSOR, &nop, NULL));

	NTU_REQUIRE_OK(neff_builder_set_hlo(b, NTU_HLO_TEXT, strlen(NTU_HLO_TEXT)));

	void *data;
	NTU_REQUIRE_OK(neff_builder_finish(b, &data, out_size));
	neff_builder_destroy(b);
	return data;
}

void *ntu_build_small(size_t *out_size)
{
	neff_builder_t *b = neff_builder_create("small", 1);
	NTU_REQUIRE(b);
	const uint64_t shape[1] = { 2 };
	NTU_REQUIRE_OK(neff_builder_add_tensor(b, "in", NEFF_USAGE_INPUT, ISA_DT_U8, 1,
					       shape, -1, NULL));
	isa_insn_t nop = isa_insn_init(ISA_OP_NOP, 0);
	NTU_REQUIRE_OK(neff_builder_emit(b, 0, ISA_ENGINE_SCALAR, &nop, NULL));
	void *data;
	NTU_REQUIRE_OK(neff_builder_finish(b, &data, out_size));
	neff_builder_destroy(b);
	return data;
}

void ntu_rechecksum(void *data, size_t size)
{
	if (size < sizeof(neff_header_t))
		return;
	neff_header_t h;
	memcpy(&h, data, sizeof(h));
	uint64_t start = h.header_size < size ? h.header_size : size;
	uint64_t end = h.total_size < size ? h.total_size : size;
	if (end < start)
		end = start;
	h.checksum = XXH64((uint8_t *)data + start, (size_t)(end - start), 0);
	memcpy((uint8_t *)data + offsetof(neff_header_t, checksum), &h.checksum,
	       sizeof(h.checksum));
}

ns_status_code_t ntu_parse_copy(const void *data, size_t size, char *err, size_t err_len)
{
	/* malloc(0) may return NULL; ask for at least one byte. */
	void *copy = malloc(size ? size : 1);
	ck_assert_ptr_nonnull(copy);
	if (size)
		memcpy(copy, data, size);
	neff_view_t v;
	memset(&v, 0xa5, sizeof(v));
	ns_status_code_t st = ns_status_consume_message(neff_parse(copy, size, &v), err, err_len);
	if (st != NS_STATUS_OK) {
		neff_view_t zero;
		memset(&zero, 0, sizeof(zero));
		ck_assert_msg(memcmp(&v, &zero, sizeof(v)) == 0, "view not zeroed on failure");
		if (err && err_len) {
			ck_assert_msg(err[0] != '\0', "no error message");
			ck_assert_msg(strchr(err, '\n') == NULL, "message is not one line: %s", err);
		}
	}
	free(copy);
	return st;
}
