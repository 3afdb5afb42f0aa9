/* ncc persistent compile cache: key hashing, atomic entry writes, validated reads, NEURON_CC_FLAGS parsing. */
#include "cache.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The state struct is needed on the stack (no allocation that could fail). */
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "neuronsim/atomic_file.h"
#include "neuronsim/fs.h"
#include "neuronsim/neff.h"

/* Bumped when the entry layout or the key derivation changes, so that an old
 * cache is never read with a new interpretation. */
#define NCC_CACHE_FORMAT "ncc-cache-v1"
/* A NEFF larger than this in the cache is treated as corrupt rather than read:
 * no corpus model comes near it, and a damaged size must not exhaust memory. */
#define NCC_CACHE_MAX_ENTRY (1ull << 34)

struct ncc_cache {
	char *root; /* DIR/neuronsim-cc-<version> */
	FILE *log;
	bool verbose;
};

static FILE *cache_log(const ncc_cache_t *c)
{
	return c && c->log ? c->log : stderr;
}

/* Version strings become directory names: keep them to a portable character set. */
static void sanitize_component(const char *in, char *out, size_t size)
{
	size_t j = 0;
	for (size_t i = 0; in[i] && j + 1 < size; i++) {
		char ch = in[i];
		bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			  (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' || ch == '_' ||
			  ch == '+';
		out[j++] = ok ? ch : '_';
	}
	out[j] = '\0';
}

ncc_status_t ncc_cache_open(const ncc_cache_config_t *cfg, ncc_cache_t **out_cache,
			    ncc_error_t *err)
{
	*out_cache = NULL;
	if (!cfg || !cfg->dir || !cfg->dir[0])
		return ncc_error_set(err, NCC_ERR_INVALID, 0, 0,
				     "compile cache: no cache directory given");
	char ver[96];
	sanitize_component(cfg->compiler_version ? cfg->compiler_version : "unknown", ver,
			   sizeof(ver));
	ncc_cache_t *c = calloc(1, sizeof(*c));
	if (!c)
		return ncc_error_set(err, NCC_ERR_NOMEM, 0, 0, "compile cache: out of memory");
	size_t need = strlen(cfg->dir) + strlen(ver) + 32;
	c->root = malloc(need);
	if (!c->root) {
		free(c);
		return ncc_error_set(err, NCC_ERR_NOMEM, 0, 0, "compile cache: out of memory");
	}
	snprintf(c->root, need, "%s/neuronsim-cc-%s", cfg->dir, ver);
	c->log = cfg->log;
	c->verbose = cfg->verbose;
	if (ns_mkdir_p(c->root, 0777) != 0 || access(c->root, W_OK | X_OK) != 0) {
		int e = errno;
		ncc_error_set(err, NCC_ERR_IO, 0, 0,
			      "compile cache: cannot create or write directory '%s': %s "
			      "(fix its permissions, or choose another --cache-dir)",
			      c->root, strerror(e));
		free(c->root);
		free(c);
		return NCC_ERR_IO;
	}
	*out_cache = c;
	return NCC_OK;
}

void ncc_cache_close(ncc_cache_t *cache)
{
	if (!cache)
		return;
	free(cache->root);
	free(cache);
}

/* Each field is preceded by its length so that ("ab","c") and ("a","bc") differ. */
static void hash_field(XXH3_state_t *st, const void *data, size_t len)
{
	uint64_t n = len;
	XXH3_128bits_update(st, &n, sizeof(n));
	if (len)
		XXH3_128bits_update(st, data, len);
}

void ncc_cache_key(const char *version, const char *options, const char *text, size_t len,
		   char out_key[NCC_CACHE_KEY_HEX + 1])
{
	XXH3_state_t st;
	XXH3_INITSTATE(&st);
	XXH3_128bits_reset(&st);
	hash_field(&st, NCC_CACHE_FORMAT, strlen(NCC_CACHE_FORMAT));
	hash_field(&st, version ? version : "", version ? strlen(version) : 0);
	hash_field(&st, options ? options : "", options ? strlen(options) : 0);
	hash_field(&st, text, text ? len : 0);
	XXH128_hash_t h = XXH3_128bits_digest(&st);
	XXH128_canonical_t canon;
	XXH128_canonicalFromHash(&canon, h);
	static const char hex[] = "0123456789abcdef";
	for (int i = 0; i < 16; i++) {
		out_key[2 * i] = hex[canon.digest[i] >> 4];
		out_key[2 * i + 1] = hex[canon.digest[i] & 15];
	}
	out_key[NCC_CACHE_KEY_HEX] = '\0';
}

static bool key_is_valid(const char *key)
{
	if (!key || strlen(key) != NCC_CACHE_KEY_HEX)
		return false;
	for (int i = 0; i < NCC_CACHE_KEY_HEX; i++) {
		char ch = key[i];
		if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f')))
			return false;
	}
	return true;
}

int ncc_cache_entry_path(const ncc_cache_t *cache, const char *key, char *buf, size_t size)
{
	return snprintf(buf, size, "%s/MODULE_%s/model.neff", cache->root, key);
}

static int entry_dir(const ncc_cache_t *cache, const char *key, char *buf, size_t size)
{
	return snprintf(buf, size, "%s/MODULE_%s", cache->root, key);
}

/* Reads the whole file into an 8-byte aligned buffer (neff_parse requires it). */
static int read_whole(const char *path, void **out_data, size_t *out_size, char *why,
		      size_t why_len)
{
	*out_data = NULL;
	*out_size = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, why_len, "%s", strerror(errno));
		return -errno;
	}
	struct stat sb;
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size <= 0 ||
	    (uint64_t)sb.st_size > NCC_CACHE_MAX_ENTRY) {
		snprintf(why, why_len, "not a regular non-empty file of sane size");
		close(fd);
		return -EINVAL;
	}
	size_t size = (size_t)sb.st_size;
	void *data = NULL;
	if (posix_memalign(&data, 64, size) != 0) {
		close(fd);
		snprintf(why, why_len, "out of memory for %zu bytes", size);
		return -ENOMEM;
	}
	size_t got = 0;
	while (got < size) {
		ssize_t n = read(fd, (char *)data + got, size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			snprintf(why, why_len, "%s", n < 0 ? strerror(errno) : "file shrank while reading");
			free(data);
			close(fd);
			return -EIO;
		}
		got += (size_t)n;
	}
	close(fd);
	*out_data = data;
	*out_size = size;
	return 0;
}

ncc_status_t ncc_cache_lookup(ncc_cache_t *cache, const char *key, void **out_neff,
			      size_t *out_size, ncc_error_t *err)
{
	*out_neff = NULL;
	*out_size = 0;
	if (!cache || !key_is_valid(key))
		return ncc_error_set(err, NCC_ERR_INVALID, 0, 0,
				     "compile cache: invalid lookup key '%s'", key ? key : "(null)");
	char path[PATH_MAX];
	if ((size_t)ncc_cache_entry_path(cache, key, path, sizeof(path)) >= sizeof(path))
		return ncc_error_set(err, NCC_ERR_IO, 0, 0, "compile cache: path too long under '%s'",
				     cache->root);
	if (access(path, F_OK) != 0) {
		if (cache->verbose)
			fprintf(cache_log(cache), "neuronsim-cc: debug: compile cache miss: %s\n", key);
		return NCC_ERR_NOT_FOUND;
	}
	void *data;
	size_t size;
	char why[256] = "";
	if (read_whole(path, &data, &size, why, sizeof(why)) == 0) {
		neff_view_t view;
		if (neff_parse(data, size, &view, why, sizeof(why)) == NEFF_OK) {
			fprintf(cache_log(cache), "neuronsim-cc: compile cache hit: %s -> %s\n", key,
				path);
			*out_neff = data;
			*out_size = size;
			return NCC_OK;
		}
		free(data);
	}
	/* A damaged entry is not an error for the user: say so, drop it, recompile. */
	fprintf(cache_log(cache),
		"neuronsim-cc: warning: compile cache entry %s is corrupt (%s); removing it and "
		"recompiling\n",
		path, why);
	if (unlink(path) != 0 && errno != ENOENT)
		fprintf(cache_log(cache), "neuronsim-cc: warning: cannot remove %s: %s\n", path,
			strerror(errno));
	return NCC_ERR_NOT_FOUND;
}

ncc_status_t ncc_cache_store(ncc_cache_t *cache, const char *key, const void *neff, size_t size,
			     ncc_error_t *err)
{
	if (!cache || !key_is_valid(key) || !neff || size == 0)
		return ncc_error_set(err, NCC_ERR_INVALID, 0, 0, "compile cache: invalid store");
	char dir[PATH_MAX], path[PATH_MAX];
	if ((size_t)entry_dir(cache, key, dir, sizeof(dir)) >= sizeof(dir) ||
	    (size_t)ncc_cache_entry_path(cache, key, path, sizeof(path)) >= sizeof(path))
		return ncc_error_set(err, NCC_ERR_IO, 0, 0, "compile cache: path too long under '%s'",
				     cache->root);
	if (ns_mkdir_p(dir, 0777) != 0)
		return ncc_error_set(err, NCC_ERR_IO, 0, 0,
				     "compile cache: cannot create directory '%s': %s", dir,
				     strerror(errno));
	/* atomic_file.h: an O_EXCL temporary in the entry directory (rename never
	 * crosses a file system), fsync before rename and of the directory after:
	 * after a crash the entry is either whole or absent. */
	const char *step = "";
	if (atomic_file_write_whole(path, neff, size, 0644, &step) != 0) {
		int e = errno;
		if (strcmp(step, "create") == 0)
			return ncc_error_set(err, NCC_ERR_IO, 0, 0,
					     "compile cache: cannot create a temporary file in '%s': %s",
					     dir, strerror(e));
		return ncc_error_set(err, NCC_ERR_IO, 0, 0, "compile cache: cannot store '%s' (%s): %s",
				     path, step, strerror(e));
	}
	if (cache->verbose)
		fprintf(cache_log(cache), "neuronsim-cc: debug: compile cache stored %s -> %s\n", key,
			path);
	return NCC_OK;
}

/* --------------------------------------------------- NEURON_CC_FLAGS parsing */

/* Splits the next shell-style word off *pp into a malloc'd string (quotes removed,
 * backslash escapes outside single quotes honoured). NULL at the end or on OOM. */
static char *next_word(const char **pp, bool *oom)
{
	const char *p = *pp;
	while (*p == ' ' || *p == '\t' || *p == '\n')
		p++;
	if (!*p) {
		*pp = p;
		return NULL;
	}
	size_t cap = strlen(p) + 1;
	char *w = malloc(cap);
	if (!w) {
		*oom = true;
		return NULL;
	}
	size_t n = 0;
	char quote = 0;
	for (; *p; p++) {
		char ch = *p;
		if (quote) {
			if (ch == quote) {
				quote = 0;
				continue;
			}
			if (quote == '"' && ch == '\\' && p[1]) {
				w[n++] = *++p;
				continue;
			}
			w[n++] = ch;
			continue;
		}
		if (ch == ' ' || ch == '\t' || ch == '\n')
			break;
		if (ch == '\'' || ch == '"') {
			quote = ch;
			continue;
		}
		if (ch == '\\' && p[1]) {
			w[n++] = *++p;
			continue;
		}
		w[n++] = ch;
	}
	w[n] = '\0';
	*pp = p;
	return w;
}

static const char *match_cache_flag(const char *w)
{
	static const char *const names[] = {"--cache_dir", "--cache-dir"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		size_t l = strlen(names[i]);
		if (strncmp(w, names[i], l) == 0 && (w[l] == '=' || w[l] == '\0'))
			return w + l;
	}
	return NULL;
}

char *ncc_cache_dir_from_flags(const char *flags, FILE *log, bool verbose)
{
	if (!flags)
		return NULL;
	FILE *out = log ? log : stderr;
	char *dir = NULL;
	const char *p = flags;
	bool oom = false;
	char *w;
	while ((w = next_word(&p, &oom)) != NULL) {
		const char *rest = match_cache_flag(w);
		if (rest) {
			char *val = NULL;
			if (*rest == '=') {
				val = strdup(rest + 1);
			} else {
				val = next_word(&p, &oom);
			}
			if (val && val[0]) {
				free(dir);
				dir = val;
			} else {
				if (verbose)
					fprintf(out, "neuronsim-cc: debug: NEURON_CC_FLAGS: '%s' has no "
						     "directory; ignored\n", w);
				free(val);
			}
		} else if (verbose) {
			fprintf(out, "neuronsim-cc: debug: NEURON_CC_FLAGS: ignoring '%s' (only "
				     "--cache_dir is used by neuronsim-cc)\n", w);
		}
		free(w);
		if (oom)
			break;
	}
	if (oom) {
		free(dir);
		return NULL;
	}
	return dir;
}
