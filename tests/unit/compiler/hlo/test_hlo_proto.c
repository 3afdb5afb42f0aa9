/* Check tests of the HloModuleProto decoder: PyTorch/XLA's protos decode, verify, round-trip, match XLA's own text dumps and compile; the wire-format reader; hand-built malformed protos, truncations and allocation failures are clean errors. */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/hlo_parser.h"
#include "hlo/hlo_proto_fields.h"
#include "hlo/ir.h"
#include "ncc/ncc.h"
#include "hlo/pb_reader.h"
#include "hlo/verify.h"

#ifndef NCC_PROTO_DIR
#define NCC_PROTO_DIR "tests/unit/compiler/proto"
#endif

/* ---- files ------------------------------------------------------------- */

static char *slurp(const char *path, size_t *out_len)
{
	FILE *f = fopen(path, "rb");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	long n = ftell(f);
	ck_assert_int_ge(n, 0);
	rewind(f);
	char *b = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(b);
	ck_assert_uint_eq(fread(b, 1, (size_t)n, f), (size_t)n);
	b[n] = 0;
	fclose(f);
	*out_len = (size_t)n;
	return b;
}

/* The committed protos (tests/unit/compiler/proto/NAME.pb), sorted by name. */
#define MAX_PROTOS 32
static char g_names[MAX_PROTOS][64];
static int g_nprotos;

static int cmp_name(const void *a, const void *b) { return strcmp(a, b); }

static void list_protos(void)
{
	if (g_nprotos)
		return;
	DIR *d = opendir(NCC_PROTO_DIR);
	ck_assert_msg(d != NULL, "no directory %s", NCC_PROTO_DIR);
	struct dirent *e;
	while ((e = readdir(d)) && g_nprotos < MAX_PROTOS) {
		size_t n = strlen(e->d_name);
		if (n > 3 && n < 60 && strcmp(e->d_name + n - 3, ".pb") == 0) {
			memcpy(g_names[g_nprotos], e->d_name, n - 3);
			g_names[g_nprotos][n - 3] = 0;
			g_nprotos++;
		}
	}
	closedir(d);
	qsort(g_names, (size_t)g_nprotos, sizeof(g_names[0]), cmp_name);
	ck_assert_int_ge(g_nprotos, 8);
}

static char *read_case(const char *name, const char *ext, size_t *len)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%.63s%.8s", NCC_PROTO_DIR, name, ext);
	return slurp(path, len);
}

static ncc_module_t *decode_ok(const void *data, size_t len, const char *label)
{
	ncc_module_t *m = NULL;
	ncc_error_t err;
	ncc_status_t st = ncc_parse_hlo_proto(data, len, label, &m, &err);
	ck_assert_msg(st == NCC_OK, "%s: %s", label, err.msg);
	ck_assert_ptr_nonnull(m);
	return m;
}

static char *print_module(const ncc_module_t *m)
{
	char *s = NULL;
	ck_assert_int_eq(ncc_module_to_string(m, &s), NCC_OK);
	return s;
}

/* ---- a tiny protobuf writer for hand-built inputs ---------------------- */

typedef struct pbw {
	uint8_t *b;
	size_t n, cap;
} pbw_t;

static void w_raw(pbw_t *w, const void *p, size_t n)
{
	if (w->n + n > w->cap) {
		w->cap = (w->n + n) * 2 + 64;
		w->b = realloc(w->b, w->cap);
		ck_assert_ptr_nonnull(w->b);
	}
	if (n)
		memcpy(w->b + w->n, p, n);
	w->n += n;
}

static void w_varint(pbw_t *w, uint64_t v)
{
	uint8_t b[10];
	int n = 0;
	do {
		b[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			b[n] |= 0x80;
		n++;
	} while (v);
	w_raw(w, b, (size_t)n);
}

static void w_tag(pbw_t *w, uint32_t field, int wire) { w_varint(w, (uint64_t)field << 3 | (unsigned)wire); }
static void w_int(pbw_t *w, uint32_t field, int64_t v)
{
	w_tag(w, field, 0);
	w_varint(w, (uint64_t)v);
}
static void w_bytes(pbw_t *w, uint32_t field, const void *p, size_t n)
{
	w_tag(w, field, 2);
	w_varint(w, n);
	w_raw(w, p, n);
}
static void w_str(pbw_t *w, uint32_t field, const char *s) { w_bytes(w, field, s, strlen(s)); }
/* Appends sub as a nested message and frees it. */
static void w_msg(pbw_t *w, uint32_t field, pbw_t *sub)
{
	w_bytes(w, field, sub->b, sub->n);
	free(sub->b);
	memset(sub, 0, sizeof(*sub));
}
static void w_packed(pbw_t *w, uint32_t field, const int64_t *v, int n)
{
	pbw_t p = { 0 };
	for (int i = 0; i < n; i++)
		w_varint(&p, (uint64_t)v[i]);
	w_msg(w, field, &p);
}
static void w_fixed32(pbw_t *w, uint32_t field, uint32_t v)
{
	w_tag(w, field, 5);
	uint8_t b[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };
	w_raw(w, b, 4);
}
static void w_fixed64(pbw_t *w, uint32_t field, uint64_t v)
{
	w_tag(w, field, 1);
	uint8_t b[8];
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	w_raw(w, b, 8);
}

/* ShapeProto of an array (layout row-major when with_layout). */
static pbw_t shape_msg(int etype, int rank, const int64_t *dims, bool with_layout)
{
	pbw_t s = { 0 };
	w_int(&s, HPF_SHAPE_ELEMENT_TYPE, etype);
	if (rank)
		w_packed(&s, HPF_SHAPE_DIMENSIONS, dims, rank);
	if (with_layout) {
		pbw_t l = { 0 };
		int64_t m2m[NCC_MAX_RANK];
		for (int i = 0; i < rank; i++)
			m2m[i] = rank - 1 - i;
		if (rank)
			w_packed(&l, HPF_LAYOUT_MINOR_TO_MAJOR, m2m, rank);
		w_msg(&s, HPF_SHAPE_LAYOUT, &l);
	}
	return s;
}

/* An instruction with name, opcode, shape and id; the caller adds fields, then
 * w_msg()s it into a computation. */
static pbw_t inst_msg(const char *name, const char *op, pbw_t *shape, int64_t id)
{
	pbw_t i = { 0 };
	w_str(&i, HPF_INST_NAME, name);
	w_str(&i, HPF_INST_OPCODE, op);
	w_msg(&i, HPF_INST_SHAPE, shape);
	w_int(&i, HPF_INST_ID, id);
	return i;
}

static const int64_t k_dims2[] = { 2 };

/* ENTRY e { p0 = f32[2] parameter(0); p1 = f32[2] parameter(1); ROOT sum = add(p0, p1) }
 * with `extra` (may be NULL) appended to the add instruction's fields. */
static pbw_t add_module(const pbw_t *extra, bool packed_operands)
{
	pbw_t comp = { 0 }, sh, in;
	w_str(&comp, HPF_COMP_NAME, "e");
	sh = shape_msg(HPV_F32, 1, k_dims2, true);
	in = inst_msg("p0", "parameter", &sh, 1);
	w_msg(&comp, HPF_COMP_INSTRUCTIONS, &in);
	sh = shape_msg(HPV_F32, 1, k_dims2, true);
	in = inst_msg("p1", "parameter", &sh, 2);
	w_int(&in, HPF_INST_PARAMETER_NUMBER, 1);
	w_msg(&comp, HPF_COMP_INSTRUCTIONS, &in);
	sh = shape_msg(HPV_F32, 1, k_dims2, true);
	in = inst_msg("sum", "add", &sh, 3);
	if (packed_operands) {
		const int64_t ops[] = { 1, 2 };
		w_packed(&in, HPF_INST_OPERAND_IDS, ops, 2);
	} else {
		w_int(&in, HPF_INST_OPERAND_IDS, 1);
		w_int(&in, HPF_INST_OPERAND_IDS, 2);
	}
	if (extra)
		w_raw(&in, extra->b, extra->n);
	w_msg(&comp, HPF_COMP_INSTRUCTIONS, &in);
	w_int(&comp, HPF_COMP_ID, 7);
	w_int(&comp, HPF_COMP_ROOT_ID, 3);
	pbw_t mod = { 0 };
	w_str(&mod, HPF_MODULE_NAME, "hand");
	w_str(&mod, HPF_MODULE_ENTRY_COMPUTATION_NAME, "e");
	w_msg(&mod, HPF_MODULE_COMPUTATIONS, &comp);
	w_int(&mod, HPF_MODULE_ENTRY_COMPUTATION_ID, 7);
	return mod;
}

/* Decoding must fail with status st and a message holding each fragment. */
static void decode_fails(const pbw_t *w, ncc_status_t st, const char *frag1, const char *frag2)
{
	ncc_module_t *m = (ncc_module_t *)0x1;
	ncc_error_t err;
	ncc_status_t got = ncc_parse_hlo_proto(w->b, w->n, "t.pb", &m, &err);
	if (getenv("NCC_TEST_SHOW_ERRORS"))
		fprintf(stderr, "%s\n", err.msg);
	ck_assert_msg(got == st, "status %d (%s), wanted %d", got, err.msg, st);
	ck_assert_ptr_null(m);
	ck_assert_msg(strncmp(err.msg, "t.pb: hlo proto: ", 17) == 0, "message '%s'", err.msg);
	if (frag1)
		ck_assert_msg(strstr(err.msg, frag1), "message '%s' lacks '%s'", err.msg, frag1);
	if (frag2)
		ck_assert_msg(strstr(err.msg, frag2), "message '%s' lacks '%s'", err.msg, frag2);
}

/* ---- the wire format --------------------------------------------------- */

/* Checks a reader call's status: code, and needle in its message unless NULL. */
static void expect_pb(ns_status_t st, ns_status_code_t code, const char *needle, const char *call)
{
	char msg[200];
	ns_status_code_t got = ns_status_consume_message(st, msg, sizeof(msg));
	ck_assert_msg(got == code, "%s: %s '%s', expected %s", call, ns_status_code_str(got), msg,
		      ns_status_code_str(code));
	if (needle)
		ck_assert_msg(strcmp(msg, needle) == 0, "%s: '%s', expected '%s'", call, msg, needle);
}
#define PB_OK(call) expect_pb((call), NS_STATUS_OK, NULL, #call)
#define PB_FAILS(call, code, msg) expect_pb((call), NS_STATUS_##code, msg, #call)

START_TEST(test_reader_varints_and_limits)
{
	/* 300 = ac 02; a 10-byte varint (-1); an 11-byte one; a truncated one */
	const uint8_t ok[] = { 0xac, 0x02, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };
	ncc_pb_reader_t r = ncc_pb_reader(ok, sizeof(ok));
	uint64_t v;
	PB_OK(ncc_pb_read_varint(&r, &v));
	ck_assert_uint_eq(v, 300);
	PB_OK(ncc_pb_read_varint(&r, &v));
	ck_assert_uint_eq(v, UINT64_MAX);
	ck_assert(ncc_pb_at_end(&r));
	const uint8_t longer[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01 };
	r = ncc_pb_reader(longer, sizeof(longer));
	PB_FAILS(ncc_pb_read_varint(&r, &v), INVALID_ARGUMENT, "varint longer than 10 bytes at byte 0");
	const uint8_t cut[] = { 0x08, 0x96 };
	r = ncc_pb_reader(cut, sizeof(cut));
	ncc_pb_field_t f;
	PB_FAILS(ncc_pb_next(&r, &f), OUT_OF_RANGE, "truncated varint at byte 1");
	ck_assert_uint_eq(f.number, 1);
	/* a length past the end, a group, field number 0, a cut fixed32 */
	const uint8_t len[] = { 0x12, 0x05, 'a', 'b' };
	r = ncc_pb_reader(len, sizeof(len));
	PB_FAILS(ncc_pb_next(&r, &f), OUT_OF_RANGE,
		 "length past the end of the enclosing message at byte 1");
	const uint8_t huge[] = { 0x12, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f };
	r = ncc_pb_reader(huge, sizeof(huge));
	PB_FAILS(ncc_pb_next(&r, &f), OUT_OF_RANGE,
		 "length past the end of the enclosing message at byte 1");
	const uint8_t group[] = { 0x0b, 0x0c };
	r = ncc_pb_reader(group, sizeof(group));
	PB_FAILS(ncc_pb_next(&r, &f), INVALID_ARGUMENT, "invalid wire type at byte 0");
	const uint8_t zero[] = { 0x00, 0x01 };
	r = ncc_pb_reader(zero, sizeof(zero));
	PB_FAILS(ncc_pb_next(&r, &f), INVALID_ARGUMENT, "invalid field number at byte 0");
	const uint8_t fx[] = { 0x0d, 0x01, 0x02 };
	r = ncc_pb_reader(fx, sizeof(fx));
	PB_FAILS(ncc_pb_next(&r, &f), OUT_OF_RANGE, "truncated fixed-width value at byte 1");
	ck_assert(!ncc_pb_at_end(&r) || r.pos == sizeof(fx));
	r = ncc_pb_reader(fx, 0);
	PB_FAILS(ncc_pb_next(&r, &f), OUT_OF_RANGE, "end of message at byte 0");
	/* packed values: count and iterate, a partial fixed32 element */
	const uint8_t packed[] = { 0x0a, 0x04, 0x01, 0x96, 0x01, 0x02 };
	r = ncc_pb_reader(packed, sizeof(packed));
	PB_OK(ncc_pb_next(&r, &f));
	ncc_pb_values_t it;
	ck_assert(ncc_pb_values_init(&it, &r, &f, NCC_PB_ELEM_VARINT));
	size_t n;
	PB_OK(ncc_pb_values_count(&it, &n));
	ck_assert_uint_eq(n, 3);
	uint64_t got[3];
	for (int i = 0; i < 3; i++) {
		ck_assert(ncc_pb_values_more(&it));
		PB_OK(ncc_pb_values_next(&it, &got[i]));
	}
	ck_assert(!ncc_pb_values_more(&it));
	PB_FAILS(ncc_pb_values_next(&it, &v), OUT_OF_RANGE, "no value left at byte 6");
	ck_assert_uint_eq(got[1], 150);
	ck_assert(!ncc_pb_values_init(&it, &r, &f, NCC_PB_ELEM_VARINT) || f.wire == NCC_PB_LEN);
	ck_assert(ncc_pb_values_init(&it, &r, &f, NCC_PB_ELEM_FIXED32));
	PB_OK(ncc_pb_values_count(&it, &n));
	ck_assert_uint_eq(n, 1);
	ck_assert(ncc_pb_values_init(&it, &r, &f, NCC_PB_ELEM_FIXED64));
	PB_FAILS(ncc_pb_values_count(&it, &n), OUT_OF_RANGE, "truncated fixed-width value at byte 2");
	const uint8_t badpack[] = { 0x0a, 0x02, 0x01, 0x96 };
	r = ncc_pb_reader(badpack, sizeof(badpack));
	PB_OK(ncc_pb_next(&r, &f));
	ck_assert(ncc_pb_values_init(&it, &r, &f, NCC_PB_ELEM_VARINT));
	PB_FAILS(ncc_pb_values_count(&it, &n), OUT_OF_RANGE, "truncated varint at byte 3");
}
END_TEST

/* ---- PyTorch/XLA's protos ---------------------------------------------- */

/* decode -> verify -> print -> parse -> print gives the same text */
START_TEST(test_real_protos_round_trip)
{
	list_protos();
	for (int i = 0; i < g_nprotos; i++) {
		size_t len;
		char *pb = read_case(g_names[i], ".pb", &len);
		ncc_module_t *m = decode_ok(pb, len, g_names[i]);
		ncc_error_t err;
		ck_assert_msg(ncc_verify(m, &err) == NCC_OK, "%s: %s", g_names[i], err.msg);
		char *t1 = print_module(m);
		ncc_module_t *m2 = NULL;
		ck_assert_msg(ncc_parse_hlo(t1, strlen(t1), "printed", &m2, &err) == NCC_OK, "%s: %s",
			      g_names[i], err.msg);
		char *t2 = print_module(m2);
		ck_assert_msg(strcmp(t1, t2) == 0, "%s: printing the decoded module is not stable",
			      g_names[i]);
		ck_assert_str_eq(ncc_module_name(m), ncc_module_name(m2));
		ck_assert_int_eq(m->ncomps, m2->ncomps);
		free(t1);
		free(t2);
		ncc_module_free(m2);
		ncc_module_free(m);
		free(pb);
	}
}
END_TEST

/* The computations of a printed module, each a "\n\n"-separated block, sorted: XLA's
 * text dump lists computations in its own post order, the proto in another. */
static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int split_blocks(char *text, char **blocks, int max)
{
	int n = 0;
	char *p = text;
	while (p && *p && n < max) {
		blocks[n++] = p;
		char *e = strstr(p, "\n\n");
		if (!e)
			break;
		*e = 0;
		p = e + 2;
	}
	qsort(blocks, (size_t)n, sizeof(*blocks), cmp_str);
	return n;
}

/* The decoded module and XLA's own text dump of it, parsed, print the same (names,
 * opcodes, shapes with layouts, every attribute, constants), computation order aside. */
START_TEST(test_real_protos_match_xla_text)
{
	list_protos();
	for (int i = 0; i < g_nprotos; i++) {
		size_t len, tlen;
		char *pb = read_case(g_names[i], ".pb", &len);
		char *txt = read_case(g_names[i], ".txt", &tlen);
		ncc_module_t *m = decode_ok(pb, len, g_names[i]);
		ncc_module_t *t = NULL;
		ncc_error_t err;
		ck_assert_msg(ncc_parse_hlo(txt, tlen, g_names[i], &t, &err) == NCC_OK, "%s", err.msg);
		ck_assert_int_eq(m->ncomps, t->ncomps);
		int64_t ninst = 0;
		for (int32_t c = 0; c < t->ncomps; c++) {
			const ncc_comp_t *tc = t->comps[c];
			const ncc_comp_t *mc = ncc_module_find_comp(m, tc->name);
			ck_assert_msg(mc != NULL, "%s: no computation %s", g_names[i], tc->name);
			ck_assert_int_eq(mc->ninsts, tc->ninsts);
			ck_assert_int_eq(mc->is_entry, tc->is_entry);
			ck_assert_str_eq(mc->root->name, tc->root->name);
			for (int32_t k = 0; k < tc->ninsts; k++) {
				ck_assert_str_eq(mc->insts[k]->name, tc->insts[k]->name);
				ck_assert_int_eq(mc->insts[k]->op, tc->insts[k]->op);
				ck_assert(ncc_shape_equal(&mc->insts[k]->shape, &tc->insts[k]->shape, true));
			}
			ninst += tc->ninsts;
		}
		ck_assert_int_gt(ninst, 10);
		char *a = print_module(m), *b = print_module(t);
		char *ba[256], *bb[256];
		int na = split_blocks(a, ba, 256), nb = split_blocks(b, bb, 256);
		ck_assert_int_eq(na, nb);
		for (int k = 0; k < na; k++)
			ck_assert_msg(strcmp(ba[k], bb[k]) == 0, "%s: decoded\n%s\n--- text dump\n%s",
				      g_names[i], ba[k], bb[k]);
		free(a);
		free(b);
		ncc_module_free(t);
		ncc_module_free(m);
		free(txt);
		free(pb);
	}
}
END_TEST

/* What ncc_compile_hlo_proto makes of each proto at -O0 and -O2. The protos that
 * compile must keep compiling; the others must fail as unsupported, naming one of
 * the operations the back end does not handle yet (all of them are listed: the first
 * one met depends on the order of lowering), or compile once the back end learns
 * them (then the test says so, to tighten the row). */
static const struct {
	const char *name;
	bool compiles_o0, compiles_o2;
	const char *unsupported[4]; /* fragments of the possible messages */
} k_compile[] = {
	{ "argmax_sort", false, false, { "variadic (multi-operand) reduction", "(sort)" } },
	{ "collectives", false, false,
	  { "collective over more than one replica", "(collective-permute)", "unsupported gather form" } },
	{ "conv_train", true, true, { NULL } },
	{ "elementwise_mix", false, false, { "f64" } },
	{ "embedding", true, true, { NULL } },
	{ "index_put", false, true, { "f64" } },
	{ "mlp_train", true, true, { NULL } },
	{ "softmax_layernorm", true, true, { NULL } },
	{ "while_loop", true, true, { NULL } },
};

START_TEST(test_real_protos_compile)
{
	list_protos();
	ck_assert_int_eq(g_nprotos, (int)(sizeof(k_compile) / sizeof(k_compile[0])));
	for (int i = 0; i < g_nprotos; i++) {
		ck_assert_str_eq(g_names[i], k_compile[i].name);
		size_t len;
		char *pb = read_case(g_names[i], ".pb", &len);
		for (int o = 0; o < 2; o++) {
			ncc_driver_options_t opts;
			ncc_driver_options_init(&opts);
			opts.use_env = false;
			opts.no_cache = true;
			opts.compile.opt_level = o ? 2 : 0;
			ncc_compile_result_t r;
			ncc_error_t err;
			ncc_status_t st = ncc_compile_hlo_proto(pb, len, NULL, &opts, &r, &err);
			bool must = o ? k_compile[i].compiles_o2 : k_compile[i].compiles_o0;
			if (st == NCC_OK) {
				ck_assert_ptr_nonnull(r.neff);
				ck_assert_uint_gt(r.neff_size, 0);
				if (!must)
					fprintf(stderr, "test_hlo_proto: %s now compiles at -O%d: mark it in k_compile\n",
						g_names[i], o * 2);
			} else {
				ck_assert_msg(!must, "%s -O%d: %s", g_names[i], o * 2, err.msg);
				bool known = false;
				for (int k = 0; k < 4 && k_compile[i].unsupported[k]; k++)
					known |= strstr(err.msg, k_compile[i].unsupported[k]) != NULL;
				ck_assert_msg(st == NCC_ERR_UNSUPPORTED && known,
					      "%s -O%d: wanted one of the known unsupported operations, got %d: %s",
					      g_names[i], o * 2, st, err.msg);
				ck_assert_ptr_null(r.neff);
			}
			ncc_compile_result_release(&r);
		}
		free(pb);
	}
}
END_TEST

/* Every cut of a real proto is an error (a cut inside a nested message or inside a
 * field), except at a boundary between two top-level fields, where what remains is
 * a well-formed, shorter module. Big protos are cut at ~500 sampled points. */
START_TEST(test_truncations_are_errors)
{
	list_protos();
	for (int i = 0; i < g_nprotos; i++) {
		size_t len;
		char *pb = read_case(g_names[i], ".pb", &len);
		/* the top-level field boundaries */
		bool *boundary = calloc(len + 1, 1);
		ck_assert_ptr_nonnull(boundary);
		ncc_pb_reader_t r = ncc_pb_reader(pb, len);
		ncc_pb_field_t f;
		boundary[0] = true;
		while (!ncc_pb_at_end(&r) && ns_status_consume_code(ncc_pb_next(&r, &f)) == NS_STATUS_OK)
			boundary[r.pos] = true;
		size_t step = len > 500 ? len / 500 : 1;
		int ok = 0, failed = 0;
		for (size_t cut = 0; cut < len; cut += (cut < 64 || len - cut < 64) ? 1 : step) {
			ncc_module_t *m = (ncc_module_t *)0x1;
			ncc_error_t err;
			/* a copy of exactly cut bytes, so ASan sees any read past it */
			char *part = malloc(cut ? cut : 1);
			memcpy(part, pb, cut);
			ncc_status_t st = ncc_parse_hlo_proto(part, cut, "cut.pb", &m, &err);
			free(part);
			if (st == NCC_OK) {
				ck_assert_msg(boundary[cut], "%s cut at %zu of %zu decoded", g_names[i], cut,
					      len);
				ncc_module_free(m);
				ok++;
				continue;
			}
			ck_assert_ptr_null(m);
			ck_assert_msg(st == NCC_ERR_PARSE || st == NCC_ERR_LIMIT, "%s cut at %zu: %d %s",
				      g_names[i], cut, st, err.msg);
			ck_assert_msg(strncmp(err.msg, "cut.pb: hlo proto: ", 19) == 0, "%s", err.msg);
			failed++;
		}
		ck_assert_int_gt(failed, 100);
		free(boundary);
		free(pb);
	}
}
END_TEST

/* SQLite's habit: the n-th allocation fails for n = 1, 2, ... until decoding
 * succeeds; every failure is NCC_ERR_NOMEM with no module (and, under ASan, no leak). */
START_TEST(test_allocation_failures_are_clean)
{
	/* a while loop, collectives (replica groups, pairs) and a conv net (windows,
	 * dimension numbers, every shape kind) reach every allocation site */
	static const char *const cases[] = { "while_loop", "collectives", "conv_train" };
	for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++) {
		size_t len;
		char *pb = read_case(cases[ci], ".pb", &len);
		long n;
		for (n = 1;; n++) {
			long before = ncc_test_alloc_failures();
			ncc_test_fail_alloc_after(n);
			ncc_module_t *m = (ncc_module_t *)0x1;
			ncc_error_t err;
			ncc_status_t st = ncc_parse_hlo_proto(pb, len, "a.pb", &m, &err);
			ncc_test_fail_alloc_after(0);
			if (ncc_test_alloc_failures() == before) {
				ck_assert_msg(st == NCC_OK, "%s", err.msg);
				ncc_module_free(m);
				break;
			}
			ck_assert_msg(st == NCC_ERR_NOMEM, "allocation %ld: status %d: %s", n, st, err.msg);
			ck_assert_ptr_null(m);
			ck_assert(strstr(err.msg, "out of memory"));
		}
		ck_assert_int_gt(n, 20);
		free(pb);
	}
}
END_TEST

/* ---- hand-built protos ------------------------------------------------- */

START_TEST(test_hand_built_module_and_wire_forms)
{
	/* packed and unpacked operand lists decode the same; unknown fields of every
	 * wire type are skipped */
	pbw_t a = add_module(NULL, true), b = add_module(NULL, false);
	pbw_t unknown = { 0 };
	w_int(&unknown, 1000, 5);
	w_fixed32(&unknown, 1001, 7);
	w_fixed64(&unknown, 1002, 9);
	w_str(&unknown, 1003, "ignored");
	pbw_t c = add_module(&unknown, true);
	w_raw(&c, unknown.b, unknown.n); /* at module level too */
	ncc_module_t *ma = decode_ok(a.b, a.n, "a"), *mb = decode_ok(b.b, b.n, "b"),
		     *mc = decode_ok(c.b, c.n, "c");
	char *ta = print_module(ma), *tb = print_module(mb), *tc = print_module(mc);
	ck_assert_str_eq(ta, tb);
	ck_assert_str_eq(ta, tc);
	ck_assert_msg(strstr(ta, "HloModule hand, entry_computation_layout={(f32[2]{0}, f32[2]{0})->f32[2]{0}}"),
		      "%s", ta);
	ck_assert_msg(strstr(ta, "ENTRY %e (p0: f32[2], p1: f32[2]) -> f32[2] {"), "%s", ta);
	ck_assert_msg(strstr(ta, "ROOT %sum = f32[2]{0} add(f32[2]{0} %p0, f32[2]{0} %p1)"), "%s", ta);
	ncc_error_t err;
	ck_assert_msg(ncc_verify(ma, &err) == NCC_OK, "%s", err.msg);
	ck_assert_str_eq(ma->filename, "a");
	ck_assert_ptr_null(ma->source);
	free(ta);
	free(tb);
	free(tc);
	ncc_module_free(ma);
	ncc_module_free(mb);
	ncc_module_free(mc);
	free(a.b);
	free(b.b);
	free(c.b);
	free(unknown.b);
	/* an empty input and NULL */
	ncc_module_t *m = (ncc_module_t *)0x1;
	ck_assert_int_eq(ncc_parse_hlo_proto("", 0, NULL, &m, &err), NCC_ERR_PARSE);
	ck_assert_ptr_null(m);
	ck_assert_msg(strstr(err.msg, "<proto>: hlo proto: computations: the module has no computation"),
		      "%s", err.msg);
	ck_assert_int_eq(ncc_parse_hlo_proto(NULL, 5, NULL, &m, &err), NCC_ERR_INVALID);
}
END_TEST

START_TEST(test_attributes_metadata_aliases)
{
	/* metadata, frontend attributes (sorted, last duplicate wins, a key that needs
	 * quotes), a control predecessor, a sharding */
	pbw_t extra = { 0 }, md = { 0 }, fa = { 0 }, e = { 0 }, sh = { 0 };
	w_str(&md, HPF_META_OP_TYPE, "aten__add");
	w_str(&md, HPF_META_OP_NAME, "add/x");
	w_str(&md, HPF_META_SOURCE_FILE, "m.py");
	w_int(&md, HPF_META_SOURCE_LINE, 12);
	w_int(&md, 17, 99); /* source_end_line: not in the IR */
	w_msg(&extra, HPF_INST_METADATA, &md);
	const char *kv[][2] = { { "zeta", "1" }, { "alpha", "a\"q" }, { "zeta", "2" }, { "a b", "x" } };
	for (int i = 0; i < 4; i++) {
		w_str(&e, HPF_MAP_KEY, kv[i][0]);
		w_str(&e, HPF_MAP_VALUE, kv[i][1]);
		w_msg(&fa, HPF_FRONTEND_MAP, &e);
	}
	w_msg(&extra, HPF_INST_FRONTEND_ATTRIBUTES, &fa);
	w_int(&extra, HPF_INST_CONTROL_PREDECESSOR_IDS, 2);
	w_int(&sh, HPF_SHARDING_TYPE, HPV_SHARDING_MAXIMAL);
	w_int(&sh, HPF_SHARDING_TILE_ASSIGNMENT_DEVICES, 3);
	w_msg(&extra, HPF_INST_SHARDING, &sh);
	w_str(&extra, HPF_INST_BACKEND_CONFIG, "{\"k\":1");
	pbw_t mod = add_module(&extra, true);
	/* input_output_alias {0}: (1, {}, may-alias) and a buffer donor */
	pbw_t al = { 0 }, ent = { 0 };
	w_int(&ent, HPF_ALIAS_PARAMETER_NUMBER, 1);
	w_int(&ent, HPF_ALIAS_KIND, HPV_ALIAS_MAY);
	w_msg(&al, HPF_ALIAS_ENTRIES, &ent);
	w_msg(&mod, HPF_MODULE_INPUT_OUTPUT_ALIAS, &al);
	pbw_t don = { 0 };
	w_int(&ent, HPF_DONOR_PARAMETER_NUMBER, 0);
	w_msg(&don, HPF_DONOR_ENTRIES, &ent);
	w_msg(&mod, HPF_MODULE_BUFFER_DONOR, &don);
	ncc_module_t *m = decode_ok(mod.b, mod.n, "attrs");
	char *t = print_module(m);
	ck_assert_msg(strstr(t, "input_output_alias={ {}: (1, {}, may-alias) }"), "%s", t);
	ck_assert_msg(strstr(t, "buffer_donor={ (0, {}) }"), "%s", t);
	ck_assert_msg(strstr(t, "sharding={maximal device=3}"), "%s", t);
	ck_assert_msg(strstr(t, "control-predecessors={%p1}"), "%s", t);
	ck_assert_msg(strstr(t, "frontend_attributes={\"a b\"=\"x\",alpha=\"a\\\"q\",zeta=\"2\"}"), "%s", t);
	ck_assert_msg(strstr(t, "metadata={op_type=\"aten__add\" op_name=\"add/x\" source_file=\"m.py\" source_line=12}"),
		      "%s", t);
	ck_assert_msg(strstr(t, "backend_config=\"{\\\"k\\\":1\""), "%s", t);
	/* and it all parses back the same */
	ncc_module_t *m2 = NULL;
	ncc_error_t err;
	ck_assert_msg(ncc_parse_hlo(t, strlen(t), "p", &m2, &err) == NCC_OK, "%s\n%s", err.msg, t);
	char *t2 = print_module(m2);
	ck_assert_str_eq(t, t2);
	free(t);
	free(t2);
	ncc_module_free(m);
	ncc_module_free(m2);
	free(mod.b);
	free(extra.b);
}
END_TEST

/* One constant instruction "c" of shape `shape` with literal `lit`, as the root. */
static pbw_t constant_module(pbw_t *shape, pbw_t *lit)
{
	pbw_t comp = { 0 }, in = inst_msg("c", "constant", shape, 1);
	w_msg(&in, HPF_INST_LITERAL, lit);
	w_str(&comp, HPF_COMP_NAME, "e");
	w_msg(&comp, HPF_COMP_INSTRUCTIONS, &in);
	w_int(&comp, HPF_COMP_ID, 1);
	pbw_t mod = { 0 };
	w_str(&mod, HPF_MODULE_NAME, "lit");
	w_msg(&mod, HPF_MODULE_COMPUTATIONS, &comp);
	return mod;
}

static char *constant_text(pbw_t *mod)
{
	ncc_module_t *m = decode_ok(mod->b, mod->n, "lit");
	const ncc_inst_t *c = m->entry->root;
	char *s = NULL;
	ck_assert_int_eq(ncc_inst_to_string(c, &s), NCC_OK);
	ncc_module_free(m);
	free(mod->b);
	return s;
}

START_TEST(test_literals_every_encoding)
{
	const int64_t d23[] = { 2, 3 }, d3[] = { 3 }, d2[] = { 2 };
	pbw_t sh, lit;

	/* f32 packed, with the literal's own column-major layout {0,1}: data in that
	 * order comes out row-major */
	sh = shape_msg(HPV_F32, 2, d23, true);
	lit = (pbw_t){ 0 };
	{
		pbw_t ls = { 0 }, lay = { 0 }, data = { 0 };
		w_int(&ls, HPF_SHAPE_ELEMENT_TYPE, HPV_F32);
		w_packed(&ls, HPF_SHAPE_DIMENSIONS, d23, 2);
		const int64_t m2m[] = { 0, 1 };
		w_packed(&lay, HPF_LAYOUT_MINOR_TO_MAJOR, m2m, 2);
		w_msg(&ls, HPF_SHAPE_LAYOUT, &lay);
		w_msg(&lit, HPF_LIT_SHAPE, &ls);
		const float col_major[] = { 1, 4, 2, 5, 3, 6.5f };
		for (int i = 0; i < 6; i++) {
			uint32_t u;
			memcpy(&u, &col_major[i], 4);
			uint8_t b[4] = { (uint8_t)u, (uint8_t)(u >> 8), (uint8_t)(u >> 16), (uint8_t)(u >> 24) };
			w_raw(&data, b, 4);
		}
		w_msg(&lit, HPF_LIT_F32S, &data);
	}
	pbw_t mod = constant_module(&sh, &lit);
	char *s = constant_text(&mod);
	ck_assert_msg(strstr(s, "constant({ { 1, 2, 3 }, { 4, 5, 6.5 } })") ||
		      strstr(s, "constant({{1, 2, 3}, {4, 5, 6.5}})"), "%s", s);
	free(s);

	/* s32 unpacked negative values (10-byte varints) */
	sh = shape_msg(HPV_S32, 1, d3, true);
	lit = (pbw_t){ 0 };
	w_int(&lit, HPF_LIT_S32S, -5);
	w_int(&lit, HPF_LIT_S32S, 7);
	w_int(&lit, HPF_LIT_S32S, -2147483648LL);
	mod = constant_module(&sh, &lit);
	s = constant_text(&mod);
	ck_assert_msg(strstr(s, "{-5, 7, -2147483648}"), "%s", s);
	free(s);

	/* bf16 and s16 little-endian bytes, u64 max, pred, f64, s4 sign extension */
	sh = shape_msg(HPV_BF16, 1, d2, true);
	lit = (pbw_t){ 0 };
	const uint8_t bf[] = { 0x80, 0x3f, 0x40, 0xc0 }; /* 1.0, -3.0 */
	w_bytes(&lit, HPF_LIT_BF16S, bf, 4);
	mod = constant_module(&sh, &lit);
	s = constant_text(&mod);
	ck_assert_msg(strstr(s, "{1, -3}"), "%s", s);
	free(s);

	sh = shape_msg(HPV_S16, 1, d2, true);
	lit = (pbw_t){ 0 };
	const uint8_t s16[] = { 0x01, 0x80, 0xff, 0x7f };
	w_bytes(&lit, HPF_LIT_S16S, s16, 4);
	mod = constant_module(&sh, &lit);
	s = constant_text(&mod);
	ck_assert_msg(strstr(s, "{-32767, 32767}"), "%s", s);
	free(s);

	sh = shape_msg(HPV_U64, 0, NULL, true);
	lit = (pbw_t){ 0 };
	w_int(&lit, HPF_LIT_U64S, -1);
	mod = constant_module(&sh, &lit);
	s = constant_text(&mod);
	ck_assert_msg(strstr(s, "u64[] constant(18446744073709551615)"), "%s", s);
	free(s);

	sh = shape_msg(HPV_PRED, 1, d2, true);
	lit = (pbw_t){ 0 };
	const int64_t pv[] = { 0, 5 };
	w_packed(&lit, HPF_LIT_PREDS, pv, 2);
	mod = constant_module(&sh, &lit);
	s = constant_text(&mod);
	ck_assert_msg(strstr(s, "{false, true}"), "%s", s);
	free(s);

	sh = shape_msg(HPV_F64, 0, NULL, false);
	lit = (pbw_t){ 0 };
	double dv = 0.1;
	uint64_t du;
	memcpy(&du, &dv, 8);
	w_fixed64(&lit, HPF_LIT_F64S, du);
	mod = constant_module(&sh, &lit);
	s = constant_text(&mod);
	ck_assert_msg(strstr(s, "f64[] constant(0.1)"), "%s", s);
	free(s);

	sh = shape_msg(HPV_S4, 1, d3, true);
	lit = (pbw_t){ 0 };
	const uint8_t s4[] = { 0x0f, 0x07, 0xf8 };
	w_bytes(&lit, HPF_LIT_S4S, s4, 3);
	mod = constant_module(&sh, &lit);
	s = constant_text(&mod);
	ck_assert_msg(strstr(s, "{-1, 7, -8}"), "%s", s);
	free(s);

	/* a tuple literal whose leaves differ in element size: (pred[], f32[]) */
	pbw_t tsh = { 0 }, e1 = shape_msg(HPV_PRED, 0, NULL, false), e2 = shape_msg(HPV_F32, 0, NULL, false);
	w_int(&tsh, HPF_SHAPE_ELEMENT_TYPE, HPV_TUPLE);
	w_msg(&tsh, HPF_SHAPE_TUPLE_SHAPES, &e1);
	w_msg(&tsh, HPF_SHAPE_TUPLE_SHAPES, &e2);
	lit = (pbw_t){ 0 };
	pbw_t l1 = { 0 }, l2 = { 0 };
	w_int(&l1, HPF_LIT_PREDS, 1);
	w_fixed32(&l2, HPF_LIT_F32S, 0x3fc00000); /* 1.5 */
	w_msg(&lit, HPF_LIT_TUPLE_LITERALS, &l1);
	w_msg(&lit, HPF_LIT_TUPLE_LITERALS, &l2);
	mod = constant_module(&tsh, &lit);
	s = constant_text(&mod);
	ck_assert_msg(strstr(s, "(pred[], f32[]) constant((true, 1.5))"), "%s", s);
	free(s);
}
END_TEST

START_TEST(test_malformed_protos)
{
	pbw_t w, x;

	/* a known field of the wrong wire type: the shape as a varint */
	x = (pbw_t){ 0 };
	w_int(&x, HPF_INST_CONV_DNUMS, 3);
	w = add_module(&x, true);
	decode_fails(&w, NCC_ERR_PARSE, "computations[0] (%e).instructions[2] (%sum).convolution_dimension_numbers",
		     "wire type varint");
	free(w.b);
	free(x.b);

	/* unknown operand id; an id used twice; an unknown opcode; an unknown type */
	x = (pbw_t){ 0 };
	w_int(&x, HPF_INST_OPERAND_IDS, 42);
	w = add_module(&x, true);
	decode_fails(&w, NCC_ERR_PARSE, "operand_ids: operand 2: unknown instruction id 42", NULL);
	free(w.b);
	free(x.b);
	{
		pbw_t comp = { 0 }, sh = shape_msg(HPV_F32, 0, NULL, false), in = inst_msg("a", "parameter", &sh, 5);
		w_msg(&comp, HPF_COMP_INSTRUCTIONS, &in);
		sh = shape_msg(HPV_F32, 0, NULL, false);
		in = inst_msg("b", "negate", &sh, 5);
		w_msg(&comp, HPF_COMP_INSTRUCTIONS, &in);
		w_str(&comp, HPF_COMP_NAME, "e");
		w_int(&comp, HPF_COMP_ID, 1);
		w = (pbw_t){ 0 };
		w_msg(&w, HPF_MODULE_COMPUTATIONS, &comp);
		decode_fails(&w, NCC_ERR_PARSE, "instructions[1] (%b).id: id 5 is used by 'a' too", NULL);
		free(w.b);
	}
	{
		pbw_t comp = { 0 }, sh = shape_msg(HPV_F32, 0, NULL, false), in = inst_msg("a", "frobnicate", &sh, 5);
		w_msg(&comp, HPF_COMP_INSTRUCTIONS, &in);
		w_str(&comp, HPF_COMP_NAME, "e");
		w_int(&comp, HPF_COMP_ID, 1);
		w = (pbw_t){ 0 };
		w_msg(&w, HPF_MODULE_COMPUTATIONS, &comp);
		decode_fails(&w, NCC_ERR_PARSE, "opcode: unknown opcode 'frobnicate'", NULL);
		free(w.b);
	}
	{
		pbw_t comp = { 0 }, sh = shape_msg(HPV_S1, 0, NULL, false), in = inst_msg("a", "parameter", &sh, 5);
		w_msg(&comp, HPF_COMP_INSTRUCTIONS, &in);
		w_str(&comp, HPF_COMP_NAME, "e");
		w_int(&comp, HPF_COMP_ID, 1);
		w = (pbw_t){ 0 };
		w_msg(&w, HPF_MODULE_COMPUTATIONS, &comp);
		decode_fails(&w, NCC_ERR_PARSE, "instructions[0] (%a).shape.element_type: unknown element type 30",
			     NULL);
		free(w.b);
	}
	/* rank above NCC_MAX_RANK */
	{
		int64_t dims[NCC_MAX_RANK + 1];
		for (int i = 0; i <= NCC_MAX_RANK; i++)
			dims[i] = 1;
		pbw_t comp = { 0 }, sh = shape_msg(HPV_F32, NCC_MAX_RANK + 1, dims, false),
		      in = inst_msg("a", "parameter", &sh, 5);
		w_msg(&comp, HPF_COMP_INSTRUCTIONS, &in);
		w_str(&comp, HPF_COMP_NAME, "e");
		w_int(&comp, HPF_COMP_ID, 1);
		w = (pbw_t){ 0 };
		w_msg(&w, HPF_MODULE_COMPUTATIONS, &comp);
		decode_fails(&w, NCC_ERR_LIMIT, "shape.dimensions: rank exceeds the limit of 16", NULL);
		free(w.b);
	}
	/* an unknown computation id */
	x = (pbw_t){ 0 };
	w_int(&x, HPF_INST_CALLED_COMPUTATION_IDS, 99);
	w = add_module(&x, true);
	decode_fails(&w, NCC_ERR_PARSE,
		     "computations[0] (%e).instructions[2] (%sum).called_computation_ids: unknown computation id 99",
		     NULL);
	free(w.b);
	free(x.b);
	/* a literal whose size does not match its shape */
	{
		const int64_t d3[] = { 3 };
		pbw_t sh = shape_msg(HPV_F32, 1, d3, true), lit = { 0 };
		w_fixed32(&lit, HPF_LIT_F32S, 0);
		w = constant_module(&sh, &lit);
		decode_fails(&w, NCC_ERR_PARSE, "instructions[0] (%c).literal.f32s: 1 values for 3 f32 elements",
			     NULL);
		free(w.b);
		sh = shape_msg(HPV_BF16, 1, d3, true);
		lit = (pbw_t){ 0 };
		w_bytes(&lit, HPF_LIT_BF16S, "abcde", 5);
		w = constant_module(&sh, &lit);
		decode_fails(&w, NCC_ERR_PARSE, "literal.bf16s: 5 bytes for 3 bf16 elements", NULL);
		free(w.b);
	}
	/* a truncated varint deep inside: the path and the byte offset */
	{
		pbw_t mod = add_module(NULL, true);
		/* append a computation whose instruction's shape ends in a cut varint */
		pbw_t sh = { 0 };
		w_int(&sh, HPF_SHAPE_ELEMENT_TYPE, HPV_F32);
		const uint8_t cut[] = { HPF_SHAPE_DIMENSIONS << 3, 0x80 };
		w_raw(&sh, cut, 2);
		pbw_t in = inst_msg("q", "parameter", &sh, 40), comp = { 0 };
		w_str(&comp, HPF_COMP_NAME, "second");
		w_int(&comp, HPF_COMP_ID, 8);
		w_msg(&comp, HPF_COMP_INSTRUCTIONS, &in);
		w_msg(&mod, HPF_MODULE_COMPUTATIONS, &comp);
		decode_fails(&mod, NCC_ERR_PARSE,
			     "computations[1] (%second).instructions[0] (%q).shape.dimensions: truncated varint at byte",
			     NULL);
		free(mod.b);
	}
	/* a nested length past its parent's end, and a huge length */
	{
		pbw_t mod = { 0 };
		const uint8_t bad[] = { HPF_MODULE_COMPUTATIONS << 3 | 2, 0x04, HPF_COMP_INSTRUCTIONS << 3 | 2, 0x10, 0, 0 };
		w_raw(&mod, bad, sizeof(bad));
		decode_fails(&mod, NCC_ERR_PARSE, "computations[0].instructions: length past the end", "at byte 3");
		free(mod.b);
		mod = (pbw_t){ 0 };
		w_tag(&mod, HPF_MODULE_COMPUTATIONS, 2);
		w_varint(&mod, 1ull << 62);
		decode_fails(&mod, NCC_ERR_PARSE, "computations: length past the end", NULL);
		free(mod.b);
	}
	/* deep recursion: a tuple shape nested 200 levels */
	{
		pbw_t sh = shape_msg(HPV_F32, 0, NULL, false);
		for (int i = 0; i < 200; i++) {
			pbw_t t = { 0 };
			w_int(&t, HPF_SHAPE_ELEMENT_TYPE, HPV_TUPLE);
			w_msg(&t, HPF_SHAPE_TUPLE_SHAPES, &sh);
			sh = t;
		}
		pbw_t in = inst_msg("a", "parameter", &sh, 1), comp = { 0 };
		w_str(&comp, HPF_COMP_NAME, "e");
		w_int(&comp, HPF_COMP_ID, 1);
		w_msg(&comp, HPF_COMP_INSTRUCTIONS, &in);
		w = (pbw_t){ 0 };
		w_msg(&w, HPF_MODULE_COMPUTATIONS, &comp);
		decode_fails(&w, NCC_ERR_LIMIT,
			     "instructions[0] (%a).shape.tuple_shapes[0].tuple_shapes[0].tuple_shapes[0].(",
			     "tuple_shapes[0]: nesting deeper than 64 levels");
		free(w.b);
	}
	/* a name the text form cannot spell; a group wire type; a missing parameter */
	{
		pbw_t sh = shape_msg(HPV_F32, 0, NULL, false), in = inst_msg("a b", "parameter", &sh, 1),
		      comp = { 0 };
		w_str(&comp, HPF_COMP_NAME, "e");
		w_int(&comp, HPF_COMP_ID, 1);
		w_msg(&comp, HPF_COMP_INSTRUCTIONS, &in);
		w = (pbw_t){ 0 };
		w_msg(&w, HPF_MODULE_COMPUTATIONS, &comp);
		decode_fails(&w, NCC_ERR_PARSE, "'a b' is not a valid HLO name", NULL);
		free(w.b);
	}
	x = (pbw_t){ 0 };
	w_tag(&x, 500, 3);
	w = add_module(&x, true);
	decode_fails(&w, NCC_ERR_PARSE, "instructions[2] (%sum).field 500: invalid wire type", NULL);
	free(w.b);
	free(x.b);
	{
		pbw_t sh = shape_msg(HPV_F32, 0, NULL, false), in = inst_msg("a", "parameter", &sh, 1),
		      comp = { 0 };
		w_int(&in, HPF_INST_PARAMETER_NUMBER, 1);
		w_str(&comp, HPF_COMP_NAME, "e");
		w_int(&comp, HPF_COMP_ID, 1);
		w_msg(&comp, HPF_COMP_INSTRUCTIONS, &in);
		w = (pbw_t){ 0 };
		w_msg(&w, HPF_MODULE_COMPUTATIONS, &comp);
		decode_fails(&w, NCC_ERR_PARSE, "has parameter(0) missing", NULL);
		free(w.b);
	}
	/* XLA's dump file is an xla.HloProto wrapping the module: the message says so */
	{
		pbw_t mod = add_module(NULL, true), wrap = { 0 };
		w_msg(&wrap, 1, &mod);
		decode_fails(&wrap, NCC_ERR_PARSE, "name: module name '\\x", "is this an xla.HloProto");
		free(wrap.b);
	}
	/* the entry named by id must exist */
	w = add_module(NULL, true);
	w_int(&w, HPF_MODULE_ENTRY_COMPUTATION_ID, 12345);
	w_str(&w, HPF_MODULE_ENTRY_COMPUTATION_NAME, "nope");
	decode_fails(&w, NCC_ERR_PARSE, "entry_computation_name: no computation is named 'nope'", NULL);
	free(w.b);
}
END_TEST

static Suite *proto_suite(void)
{
	Suite *s = suite_create("hlo_proto");
	TCase *tc = tcase_create("proto");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_reader_varints_and_limits);
	tcase_add_test(tc, test_real_protos_round_trip);
	tcase_add_test(tc, test_real_protos_match_xla_text);
	tcase_add_test(tc, test_real_protos_compile);
	tcase_add_test(tc, test_truncations_are_errors);
	tcase_add_test(tc, test_allocation_failures_are_clean);
	tcase_add_test(tc, test_hand_built_module_and_wire_forms);
	tcase_add_test(tc, test_attributes_metadata_aliases);
	tcase_add_test(tc, test_literals_every_encoding);
	tcase_add_test(tc, test_malformed_protos);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(proto_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
