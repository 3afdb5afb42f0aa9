/* The validating NEFF reader: checks every byte of a NEFF before handing out a
 * view into it, so no later layer has to distrust the container (docs/neff.md). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "neuronsim/bytes.h"
#include "neuronsim/errmsg.h"
#include "neuronsim/neff.h"
#include "neuronsim/status.h"


typedef struct reader {
	const uint8_t *base;
	uint64_t size;
} reader_t;

/* A corrupt, truncated or inconsistent NEFF. r names the reader that found it. */
#define FAIL(r, ...) ((void)(r), ns_status_make(NS_STATUS_INVALID_ARGUMENT, __VA_ARGS__))

/* Strings from the file are quoted in messages escaped and shortened, so a
 * message stays one printable line whatever the NEFF holds. */
#define esc(s) errmsg_escape((s), 48)

static const char *sect_name(uint32_t type)
{
	static const char *const names[] = { "?", "META", "TENSORS", "CODE",
					     "CONSTS", "DEBUG", "HLO" };
	return type < sizeof(names) / sizeof(names[0]) ? names[type] : "unknown";
}

/* A fixed-size string field: NUL-terminated inside the array, and zero after
 * the NUL so that equal models give equal bytes and nothing hides there. */
static ns_status_t check_str(reader_t *r, const char *what, const char *s,
			       size_t cap, bool nonempty)
{
	const char *nul = memchr(s, 0, cap);
	if (!nul)
		return FAIL(r, "%s is not NUL-terminated within its %zu bytes", what, cap);
	if (nonempty && nul == s)
		return FAIL(r, "%s is empty", what);
	for (const char *p = nul + 1; p < s + cap; p++)
		if (*p)
			return FAIL(r, "%s has non-zero byte 0x%02x after its NUL at offset %td",
				    what, (unsigned)(uint8_t)*p, p - s);
	return NS_OK;
}

/* ---- header and section table ----------------------------------------- */

static ns_status_t check_header(reader_t *r, const neff_header_t **out)
{
	const uint8_t *d = r->base;
	if (r->size < sizeof(((neff_header_t *)0)->magic))
		return FAIL(r, "truncated: %" PRIu64 " bytes, too short for the NEFF magic",
			    r->size);
	if (memcmp(d, NEFF_MAGIC, 8) != 0)
		return FAIL(r, "bad magic: not a NEFF file (expected \"" NEFF_MAGIC "\")");
	/* The version comes before anything else so that a future major
	 * version, whose header may differ, is named as such. */
	if (r->size < offsetof(neff_header_t, header_size))
		return FAIL(r, "truncated: %" PRIu64 " bytes, too short for the version",
			    r->size);
	uint16_t major, minor;
	memcpy(&major, d + offsetof(neff_header_t, version_major), sizeof(major));
	memcpy(&minor, d + offsetof(neff_header_t, version_minor), sizeof(minor));
	if (major != NEFF_VERSION_MAJOR)
		return ns_status_make(NS_STATUS_UNIMPLEMENTED,
				      "NEFF format %u.%u, this reader supports %u.x: "
				      "recompile the model for NEFF %u.x or upgrade neuronsim",
				      major, minor, NEFF_VERSION_MAJOR, NEFF_VERSION_MAJOR);
	if (r->size < sizeof(neff_header_t))
		return FAIL(r, "truncated: %" PRIu64 " bytes, header needs %zu",
			    r->size, sizeof(neff_header_t));
	const neff_header_t *h = (const neff_header_t *)d;
	uint64_t unknown = h->features_required & ~(uint64_t)NEFF_FEATURE_KNOWN_REQUIRED;
	if (unknown)
		return ns_status_make(NS_STATUS_UNIMPLEMENTED,
				      "NEFF format %u.%u requires features 0x%" PRIx64
				      " unknown to this reader (format %u.%u, knows 0x%" PRIx64
				      "): upgrade neuronsim or recompile without them",
				      major, minor, unknown, NEFF_VERSION_MAJOR,
				      NEFF_VERSION_MINOR, (uint64_t)NEFF_FEATURE_KNOWN_REQUIRED);
	if (h->header_size < sizeof(neff_header_t) || h->header_size % 8)
		return FAIL(r, "header.header_size %" PRIu32 " is not a multiple of 8 >= %zu",
			    h->header_size, sizeof(neff_header_t));
	if (h->total_size != r->size)
		return FAIL(r, "header.total_size %" PRIu64 " != file size %" PRIu64
			    " (truncated or padded)", h->total_size, r->size);
	if (h->header_size > h->total_size)
		return FAIL(r, "header.header_size %" PRIu32 " exceeds total_size %" PRIu64,
			    h->header_size, h->total_size);
	if (h->reserved0)
		return FAIL(r, "header.reserved0 is 0x%" PRIx32 ", must be zero", h->reserved0);
	uint64_t sum = XXH64(d + h->header_size, (size_t)(r->size - h->header_size), 0);
	if (sum != h->checksum)
		return FAIL(r, "header.checksum 0x%016" PRIx64 " != computed 0x%016" PRIx64
			    " (corrupted)", h->checksum, sum);
	*out = h;
	return NS_OK;
}

typedef struct region {
	uint64_t offset, size, align;
	int index; /* section index, -1 for the section table */
} region_t;

/* Every byte after the header belongs to the section table, a section or
 * alignment padding, and padding is zero: nothing can hide in a NEFF, and a
 * dropped or moved section always shows. */
static ns_status_t check_layout(reader_t *r, const neff_header_t *h,
				  const neff_section_t *sects)
{
	region_t reg[NEFF_MAX_SECTIONS + 1];
	uint32_t n = 0;
	reg[n++] = (region_t){ h->section_table_offset,
			       (uint64_t)h->section_count * sizeof(neff_section_t), 8, -1 };
	for (uint32_t i = 0; i < h->section_count; i++)
		reg[n++] = (region_t){ sects[i].offset, sects[i].size, NEFF_ALIGN, (int)i };
	/* Insertion sort by (offset, size): zero-sized sections sit at the
	 * offset of their successor. */
	for (uint32_t i = 1; i < n; i++) {
		region_t t = reg[i];
		uint32_t j = i;
		while (j > 0 && (reg[j - 1].offset > t.offset ||
				 (reg[j - 1].offset == t.offset && reg[j - 1].size > t.size))) {
			reg[j] = reg[j - 1];
			j--;
		}
		reg[j] = t;
	}
	uint64_t cursor = h->header_size;
	for (uint32_t i = 0; i < n; i++) {
		/* Offsets and ends are already known to be within the file. */
		uint64_t expect = (cursor + reg[i].align - 1) & ~(reg[i].align - 1);
		if (reg[i].offset != expect) {
			if (reg[i].index < 0)
				return FAIL(r, "section table at offset %" PRIu64
					    " overlaps or leaves a gap (expected %" PRIu64 ")",
					    reg[i].offset, expect);
			return FAIL(r, "section %d (%s) at offset %" PRIu64
				    " overlaps or leaves a gap (expected %" PRIu64 ")",
				    reg[i].index, sect_name(sects[reg[i].index].type),
				    reg[i].offset, expect);
		}
		if (!ns_all_zero(r->base + cursor, (size_t)(expect - cursor)))
			return FAIL(r, "non-zero padding before offset %" PRIu64, expect);
		cursor = reg[i].offset + reg[i].size;
	}
	if (cursor != h->total_size)
		return FAIL(r, "%" PRIu64 " trailing bytes after the last section at %" PRIu64,
			    h->total_size - cursor, cursor);
	return NS_OK;
}

static ns_status_t check_sections(reader_t *r, const neff_header_t *h,
				    const neff_section_t **out_sects,
				    int found[NEFF_SECT_HLO + 1])
{
	if (h->section_count < 3 || h->section_count > NEFF_MAX_SECTIONS)
		return FAIL(r, "header.section_count %" PRIu32 " is not in 3..%d",
			    h->section_count, NEFF_MAX_SECTIONS);
	uint64_t tab = h->section_table_offset, end;
	if (tab % 8 || tab < h->header_size ||
	    __builtin_add_overflow(tab, (uint64_t)h->section_count * sizeof(neff_section_t),
				   &end) || end > h->total_size)
		return FAIL(r, "header.section_table_offset %" PRIu64 " with %" PRIu32
			    " sections is misaligned or out of bounds (file %" PRIu64 " bytes)",
			    tab, h->section_count, h->total_size);
	const neff_section_t *s = (const neff_section_t *)(r->base + tab);
	for (int t = 0; t <= NEFF_SECT_HLO; t++)
		found[t] = -1;
	for (uint32_t i = 0; i < h->section_count; i++) {
		if (s[i].flags & ~NEFF_SECT_F_OPTIONAL)
			return FAIL(r, "section %" PRIu32 ".flags 0x%" PRIx32 " has unknown bits",
				    i, s[i].flags);
		if (s[i].reserved)
			return FAIL(r, "section %" PRIu32 ".reserved is 0x%" PRIx64
				    ", must be zero", i, s[i].reserved);
		if (s[i].offset % NEFF_ALIGN || s[i].offset < h->header_size ||
		    __builtin_add_overflow(s[i].offset, s[i].size, &end) ||
		    end > h->total_size)
			return FAIL(r, "section %" PRIu32 " (%s) offset %" PRIu64 " size %" PRIu64
				    " is misaligned or out of bounds (file %" PRIu64 " bytes)",
				    i, sect_name(s[i].type), s[i].offset, s[i].size,
				    h->total_size);
		uint32_t t = s[i].type;
		if (t >= NEFF_SECT_META && t <= NEFF_SECT_HLO) {
			if (found[t] >= 0)
				return FAIL(r, "section %" PRIu32 ": second %s section (first is %d)",
					    i, sect_name(t), found[t]);
			found[t] = (int)i;
		} else if (!(s[i].flags & NEFF_SECT_F_OPTIONAL)) {
			return FAIL(r, "section %" PRIu32 " has unknown type %" PRIu32
				    " and is not flagged optional", i, t);
		}
	}
	static const uint32_t required[] = { NEFF_SECT_META, NEFF_SECT_TENSORS, NEFF_SECT_CODE };
	for (size_t i = 0; i < 3; i++)
		if (found[required[i]] < 0)
			return FAIL(r, "required section %s is missing", sect_name(required[i]));
	ns_status_t st = check_layout(r, h, s);
	if (st)
		return st;
	*out_sects = s;
	return NS_OK;
}

/* ---- sections ---------------------------------------------------------- */

static ns_status_t check_meta(reader_t *r, const neff_section_t *s,
				const neff_meta_t **out)
{
	if (s->size != sizeof(neff_meta_t))
		return FAIL(r, "META section size %" PRIu64 " != %zu", s->size,
			    sizeof(neff_meta_t));
	const neff_meta_t *m = (const neff_meta_t *)(r->base + s->offset);
	ns_status_t st;
	if ((st = check_str(r, "meta.model_name", m->model_name, sizeof(m->model_name), false)) ||
	    (st = check_str(r, "meta.compiler_version", m->compiler_version,
			    sizeof(m->compiler_version), false)) ||
	    (st = check_str(r, "meta.target", m->target, sizeof(m->target), true)))
		return st;
	if (strcmp(m->target, NEFF_TARGET) != 0)
		return FAIL(r, "meta.target \"%s\" is not \"" NEFF_TARGET "\"", esc(m->target).s);
	if (m->n_cores == 0 || m->n_cores > NEFF_MAX_CORES)
		return FAIL(r, "meta.n_cores %" PRIu32 " is not in 1..%d", m->n_cores,
			    NEFF_MAX_CORES);
	if (m->n_tensors > ISA_REGION_NONE - ISA_REGION_IO0 - 1)
		return FAIL(r, "meta.n_tensors %" PRIu32 " is too large", m->n_tensors);
	if (m->scratch_size > NEFF_MAX_REGION_SIZE)
		return FAIL(r, "meta.scratch_size %" PRIu64 " exceeds %llu", m->scratch_size,
			    NEFF_MAX_REGION_SIZE);
	if (m->isa_version_major != ISA_VERSION_MAJOR ||
	    m->isa_version_minor > ISA_VERSION_MINOR)
		return ns_status_make(NS_STATUS_UNIMPLEMENTED,
				      "meta.isa_version %" PRIu32 ".%" PRIu32
				      ", this reader supports ISA %d.0..%d.%d: recompile the model",
				      m->isa_version_major, m->isa_version_minor,
				      ISA_VERSION_MAJOR, ISA_VERSION_MAJOR, ISA_VERSION_MINOR);
	if (!ns_all_zero(m->reserved, sizeof(m->reserved)))
		return FAIL(r, "meta.reserved is not zero");
	*out = m;
	return NS_OK;
}

static ns_status_t check_tensor(reader_t *r, const neff_tensor_t *ts, uint32_t n,
				  uint32_t i)
{
	const neff_tensor_t *t = &ts[i];
	char what[48];
	snprintf(what, sizeof(what), "tensor %" PRIu32 " name", i);
	ns_status_t st = check_str(r, what, t->name, sizeof(t->name), true);
	if (st)
		return st;
	if (t->usage != NEFF_USAGE_INPUT && t->usage != NEFF_USAGE_OUTPUT)
		return FAIL(r, "tensor %" PRIu32 " '%s': usage %" PRIu32 " is invalid", i,
			    esc(t->name).s, t->usage);
	size_t es = isa_dtype_size(t->dtype);
	if (es == 0)
		return FAIL(r, "tensor %" PRIu32 " '%s': dtype %" PRIu32 " is invalid", i,
			    esc(t->name).s, t->dtype);
	if (t->rank > NEFF_MAX_TENSOR_RANK)
		return FAIL(r, "tensor %" PRIu32 " '%s': rank %" PRIu32 " exceeds %d", i,
			    esc(t->name).s, t->rank, NEFF_MAX_TENSOR_RANK);
	uint64_t size = es;
	for (uint32_t k = 0; k < NEFF_MAX_TENSOR_RANK; k++) {
		if (k >= t->rank) {
			if (t->shape[k])
				return FAIL(r, "tensor %" PRIu32 " '%s': shape[%" PRIu32 "] = %"
					    PRIu64 " beyond rank %" PRIu32 ", must be zero",
					    i, esc(t->name).s, k, t->shape[k], t->rank);
		} else if (__builtin_mul_overflow(size, t->shape[k], &size)) {
			return FAIL(r, "tensor %" PRIu32 " '%s': size of the shape overflows",
				    i, esc(t->name).s);
		}
	}
	if (size != t->size)
		return FAIL(r, "tensor %" PRIu32 " '%s': size %" PRIu64 " != shape x dtype = %"
			    PRIu64, i, esc(t->name).s, t->size, size);
	if (size > NEFF_MAX_REGION_SIZE)
		return FAIL(r, "tensor %" PRIu32 " '%s': size %" PRIu64 " exceeds %llu", i,
			    esc(t->name).s, size, NEFF_MAX_REGION_SIZE);
	if (t->alias_input == -1)
		return NS_OK;
	if (t->usage != NEFF_USAGE_OUTPUT)
		return FAIL(r, "tensor %" PRIu32 " '%s': alias_input %" PRId32
			    " on an input (only outputs alias)", i, esc(t->name).s, t->alias_input);
	if (t->alias_input < 0 || (uint32_t)t->alias_input >= n)
		return FAIL(r, "tensor %" PRIu32 " '%s': alias_input %" PRId32
			    " is not a tensor index (0..%" PRIu32 ")", i, esc(t->name).s,
			    t->alias_input, n);
	/* The target's own fields are validated in its turn; comparing them
	 * raw here is safe because they are in bounds. */
	const neff_tensor_t *a = &ts[t->alias_input];
	if (a->usage != NEFF_USAGE_INPUT || a->dtype != t->dtype || a->size != t->size)
		return FAIL(r, "tensor %" PRIu32 " '%s': alias_input %" PRId32
			    " is not an input of the same dtype and size", i, esc(t->name).s,
			    t->alias_input);
	return NS_OK;
}

/* Names must be unique and an input may be aliased by one output only; a hash
 * set keeps this linear for large models. */
static ns_status_t check_tensor_sets(reader_t *r, const neff_tensor_t *ts, uint32_t n)
{
	if (n < 2)
		return NS_OK;
	size_t nslots = 4;
	while (nslots < 2 * (size_t)n)
		nslots *= 2;
	uint32_t *slots = calloc(nslots, sizeof(uint32_t));
	uint8_t *aliased = calloc(n, 1);
	ns_status_t st = NS_OK;
	if (!slots || !aliased) {
		st = ns_status_make(NS_STATUS_RESOURCE_EXHAUSTED, "out of memory checking %" PRIu32
				    " tensor names", n);
		goto out;
	}
	for (uint32_t i = 0; i < n && !st; i++) {
		const char *name = ts[i].name;
		size_t h = (size_t)XXH64(name, strlen(name), 0) & (nslots - 1);
		for (; slots[h]; h = (h + 1) & (nslots - 1)) {
			if (strcmp(ts[slots[h] - 1].name, name) == 0) {
				st = FAIL(r, "tensor %" PRIu32 " name '%s' duplicates tensor %"
					  PRIu32, i, esc(name).s, slots[h] - 1);
				break;
			}
		}
		slots[h] = i + 1;
		int32_t a = ts[i].alias_input;
		if (!st && a >= 0) {
			if (aliased[a])
				st = FAIL(r, "tensor %" PRIu32 " '%s': input %" PRId32
					  " is aliased by more than one output", i, esc(name).s, a);
			aliased[a] = 1;
		}
	}
out:
	free(slots);
	free(aliased);
	return st;
}

static ns_status_t check_tensors(reader_t *r, const neff_section_t *s,
				   const neff_meta_t *m, const neff_tensor_t **out)
{
	if (s->size != (uint64_t)m->n_tensors * sizeof(neff_tensor_t))
		return FAIL(r, "TENSORS section size %" PRIu64 " != meta.n_tensors %" PRIu32
			    " x %zu", s->size, m->n_tensors, sizeof(neff_tensor_t));
	const neff_tensor_t *ts = (const neff_tensor_t *)(r->base + s->offset);
	for (uint32_t i = 0; i < m->n_tensors; i++) {
		ns_status_t st = check_tensor(r, ts, m->n_tensors, i);
		if (st)
			return st;
	}
	ns_status_t st = check_tensor_sets(r, ts, m->n_tensors);
	if (st)
		return st;
	*out = ts;
	return NS_OK;
}

static ns_status_t check_debug(reader_t *r, const neff_section_t *s, neff_view_t *v)
{
	if (s->size < sizeof(neff_debug_header_t))
		return FAIL(r, "DEBUG section size %" PRIu64 " is too small", s->size);
	const uint8_t *base = r->base + s->offset;
	const neff_debug_header_t *dh = (const neff_debug_header_t *)base;
	uint64_t expect = sizeof(*dh) + (uint64_t)dh->n_entries * sizeof(neff_debug_entry_t) +
			  dh->strings_size;
	if (expect != s->size)
		return FAIL(r, "DEBUG section size %" PRIu64 " != header + %" PRIu32
			    " entries + %" PRIu32 " string bytes", s->size, dh->n_entries,
			    dh->strings_size);
	if (dh->n_entries == ISA_DEBUG_NONE)
		return FAIL(r, "debug.n_entries %" PRIu32 " collides with ISA_DEBUG_NONE",
			    dh->n_entries);
	const neff_debug_entry_t *e = (const neff_debug_entry_t *)(base + sizeof(*dh));
	const char *pool = (const char *)(e + dh->n_entries);
	/* A NUL as the pool's last byte terminates every string in it. */
	if (dh->strings_size && pool[dh->strings_size - 1])
		return FAIL(r, "debug string pool does not end with a NUL");
	for (uint32_t i = 0; i < dh->n_entries; i++) {
		if (e[i].hlo_name >= dh->strings_size || e[i].op_type >= dh->strings_size ||
		    e[i].source_file >= dh->strings_size)
			return FAIL(r, "debug entry %" PRIu32 ": string offset (%" PRIu32 ", %"
				    PRIu32 ", %" PRIu32 ") outside the %" PRIu32 "-byte pool",
				    i, e[i].hlo_name, e[i].op_type, e[i].source_file,
				    dh->strings_size);
	}
	v->debug = dh->n_entries ? e : NULL;
	v->n_debug = dh->n_entries;
	v->debug_strings = dh->strings_size ? pool : NULL;
	v->debug_strings_size = dh->strings_size;
	return NS_OK;
}

static ns_status_t check_code(reader_t *r, const neff_section_t *s, neff_view_t *v)
{
	const neff_meta_t *m = v->meta;
	const uint8_t *base = r->base + s->offset;
	if (s->size < sizeof(neff_code_header_t))
		return FAIL(r, "CODE section size %" PRIu64 " is too small", s->size);
	const neff_code_header_t *ch = (const neff_code_header_t *)base;
	if (ch->n_cores != m->n_cores)
		return FAIL(r, "code.n_cores %" PRIu32 " != meta.n_cores %" PRIu32,
			    ch->n_cores, m->n_cores);
	if (ch->n_engines != ISA_ENGINE_COUNT)
		return FAIL(r, "code.n_engines %" PRIu32 " != %d", ch->n_engines,
			    ISA_ENGINE_COUNT);
	uint64_t cursor = sizeof(*ch) +
			  (uint64_t)ch->n_cores * ISA_ENGINE_COUNT * sizeof(neff_code_stream_t);
	if (cursor > s->size)
		return FAIL(r, "CODE section size %" PRIu64 " is smaller than its stream table",
			    s->size);
	const neff_code_stream_t *cs = (const neff_code_stream_t *)(base + sizeof(*ch));
	uint32_t n_regions = ISA_REGION_IO0 + m->n_tensors;
	/* Streams follow the table back to back, core-major: every byte is
	 * accounted for and no stream can overlap the table or another. */
	for (uint32_t c = 0; c < ch->n_cores; c++) {
		for (uint32_t e = 0; e < ISA_ENGINE_COUNT; e++, cs++) {
			uint64_t bytes, end;
			if (cs->reserved)
				return FAIL(r, "code stream core %" PRIu32 " engine %" PRIu32
					    ": reserved is 0x%" PRIx32 ", must be zero",
					    c, e, cs->reserved);
			if (cs->offset != cursor)
				return FAIL(r, "code stream core %" PRIu32 " engine %" PRIu32
					    ": offset %" PRIu64 " != expected %" PRIu64,
					    c, e, cs->offset, cursor);
			if (__builtin_mul_overflow((uint64_t)cs->count, sizeof(isa_insn_t), &bytes) ||
			    __builtin_add_overflow(cursor, bytes, &end) || end > s->size)
				return FAIL(r, "code stream core %" PRIu32 " engine %" PRIu32
					    ": %" PRIu32 " instructions at %" PRIu64
					    " overrun the %" PRIu64 "-byte CODE section",
					    c, e, cs->count, cs->offset, s->size);
			const isa_insn_t *insn = (const isa_insn_t *)(base + cursor);
			for (uint32_t i = 0; i < cs->count; i++) {
				ns_status_t vs = isa_insn_validate(&insn[i], n_regions, cs->count);
				if (vs)
					return ns_status_annotate(vs, "core %" PRIu32 " engine %" PRIu32
								  " insn %" PRIu32, c, e, i);
				if (isa_insn_min_minor(insn[i].opcode) > v->meta->isa_version_minor)
					return FAIL(r, "core %" PRIu32 " engine %" PRIu32
						    " insn %" PRIu32 ": %s needs ISA %d.%" PRIu32
						    ", the NEFF says %" PRIu32 ".%" PRIu32, c, e, i,
						    isa_opcode_name(insn[i].opcode), ISA_VERSION_MAJOR,
						    isa_insn_min_minor(insn[i].opcode),
						    v->meta->isa_version_major, v->meta->isa_version_minor);
				if (insn[i].debug_id != ISA_DEBUG_NONE &&
				    insn[i].debug_id >= v->n_debug)
					return FAIL(r, "core %" PRIu32 " engine %" PRIu32
						    " insn %" PRIu32 ": debug_id %" PRIu32
						    " >= %" PRIu32 " debug entries",
						    c, e, i, insn[i].debug_id, v->n_debug);
			}
			v->code[c][e] = cs->count ? insn : NULL;
			v->code_count[c][e] = cs->count;
			cursor = end;
		}
	}
	if (cursor != s->size)
		return FAIL(r, "CODE section has %" PRIu64 " bytes after its last stream",
			    s->size - cursor);
	return NS_OK;
}

/* ---- entry points ------------------------------------------------------ */

static ns_status_t parse(reader_t *r, neff_view_t *v)
{
	const neff_header_t *h = NULL;
	const neff_section_t *sects = NULL;
	int found[NEFF_SECT_HLO + 1];
	ns_status_t st;
	if ((st = check_header(r, &h)) || (st = check_sections(r, h, &sects, found)))
		return st;
	v->header = h;
	if ((st = check_meta(r, &sects[found[NEFF_SECT_META]], &v->meta)) ||
	    (st = check_tensors(r, &sects[found[NEFF_SECT_TENSORS]], v->meta, &v->tensors)))
		return st;
	if (found[NEFF_SECT_DEBUG] >= 0 &&
	    (st = check_debug(r, &sects[found[NEFF_SECT_DEBUG]], v)))
		return st;
	if (found[NEFF_SECT_CONSTS] >= 0) {
		const neff_section_t *s = &sects[found[NEFF_SECT_CONSTS]];
		if (s->size > NEFF_MAX_REGION_SIZE)
			return FAIL(r, "CONSTS section size %" PRIu64 " exceeds %llu", s->size,
				    NEFF_MAX_REGION_SIZE);
		v->consts = s->size ? r->base + s->offset : NULL;
		v->consts_size = s->size;
	}
	if (found[NEFF_SECT_HLO] >= 0) {
		const neff_section_t *s = &sects[found[NEFF_SECT_HLO]];
		v->hlo_text = (const char *)r->base + s->offset;
		v->hlo_size = s->size;
	}
	return check_code(r, &sects[found[NEFF_SECT_CODE]], v);
}

ns_status_t neff_parse(const void *data, size_t size, neff_view_t *out_view)
{
	reader_t r = { .base = data, .size = size };
	if (!out_view)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT, "neff_parse: out_view is NULL");
	memset(out_view, 0, sizeof(*out_view));
	if (!data)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT, "neff_parse: data is NULL");
	if ((uintptr_t)data % 8)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
				      "neff_parse: data at %p is not 8-byte aligned; copy the NEFF "
				      "into an aligned buffer (malloc gives one)", data);
	neff_view_t v = { 0 };
	ns_status_t st = parse(&r, &v);
	if (st == NS_OK)
		*out_view = v;
	return st;
}

void neff_debug_lookup(const neff_view_t *view, uint32_t debug_id,
		       const char **out_hlo_name, const char **out_op_type,
		       const char **out_source_file, uint32_t *out_source_line)
{
	const neff_debug_entry_t *e = NULL;
	if (view && view->debug && debug_id < view->n_debug)
		e = &view->debug[debug_id];
	if (out_hlo_name)
		*out_hlo_name = e ? view->debug_strings + e->hlo_name : NULL;
	if (out_op_type)
		*out_op_type = e ? view->debug_strings + e->op_type : NULL;
	if (out_source_file)
		*out_source_file = e ? view->debug_strings + e->source_file : NULL;
	if (out_source_line)
		*out_source_line = e ? e->source_line : 0;
}
