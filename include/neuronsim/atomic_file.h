/* Writing files whole or not at all, without following planted symlinks: the one
 * helper behind every file the project writes (.npy, traces, snapshots, NEFFs,
 * the compile cache, metrics reports, IR dumps, pid files). */
#ifndef NEURONSIM_ATOMIC_FILE_H
#define NEURONSIM_ATOMIC_FILE_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A new file is written under a temporary name in the target's own directory,
 * created by mkostemp (O_CREAT | O_EXCL with a random suffix: a symlink or file
 * planted at any name is never opened, let alone followed), then fsynced, renamed
 * over the target and the directory fsynced. rename() replaces the directory entry
 * itself, so a symlink planted at the target's name is replaced, never written
 * through; a reader sees the old file or the new one, never half of one; a failure
 * at any step removes the temporary and leaves the target as it was.
 *
 * A character device or FIFO (/dev/null, /dev/stdout's pipe), named directly or
 * through a symlink owned by root or by us, is written in place instead: there is
 * nothing to replace atomically, and renaming over /dev/null as root would destroy
 * it. A symlink owned by anyone else is never followed (the kernel's
 * protected_symlinks rule: a link an attacker planted is the attacker's).
 *
 * Failures return -1 with errno set and, when out_step is not NULL, *out_step
 * naming the step that failed, for messages: "create", "chmod", "write", "sync",
 * "close", "rename", "sync the directory of". Nothing else is logged.
 */

/* Mode ATOMIC_FILE_MODE_UMASK: 0666 minus the process umask, as open() would
 * create it. Otherwise the permission bits given (0600 for private data). */
#define ATOMIC_FILE_MODE_UMASK 01000000u

typedef struct atomic_file {
	int fd;          /* the temporary, open for writing; -1 once closed */
	FILE *stream;    /* set by atomic_file_stream(); then it owns fd */
	char *tmp;       /* the temporary's path (malloc'd) */
	char *path;      /* the target (malloc'd copy) */
	int direct;      /* a device or FIFO written in place (no temporary) */
} atomic_file_t;

/* Creates the temporary for path with the final mode. f is the caller's; release
 * it with atomic_file_commit() or atomic_file_abort(). */
int atomic_file_open(atomic_file_t *f, const char *path, unsigned mode, const char **out_step);
/* A stdio stream over the temporary (fdopen; created once, owned by f). NULL with
 * errno on failure. */
FILE *atomic_file_stream(atomic_file_t *f);
/* Writes all of data at the temporary's current offset (EINTR and short writes
 * retried). */
int atomic_file_write(atomic_file_t *f, const void *data, size_t size);
/* Flushes the stream, fsyncs, closes and renames the temporary over the target,
 * fsyncs the directory. f is released in every case; on failure the temporary is
 * gone and the target untouched (a failed directory sync removes the new target:
 * all or nothing). */
int atomic_file_commit(atomic_file_t *f, const char **out_step);
/* Closes and removes the temporary; errno is preserved. NULL or released f: no-op. */
void atomic_file_abort(atomic_file_t *f);

/* All of the above for one buffer. */
int atomic_file_write_whole(const char *path, const void *data, size_t size, unsigned mode,
			    const char **out_step);

/* Appends data to path (created with mode when missing) as one unit. A symlink at
 * the final component is followed only to a device or FIFO as above (/dev/stdout);
 * otherwise it is ELOOP, so a link planted to make us append to another file is
 * refused. The space is reserved first where the file system
 * can (a full disk then fails before a byte is written), and a write that still
 * fails part way is cut off again (the file keeps its previous length unless
 * another writer appended meanwhile). Not fsynced: logs appended at every step
 * would pay a sync each. */
int atomic_file_append(const char *path, const void *data, size_t size, unsigned mode,
		       const char **out_step);

#ifdef __cplusplus
}
#endif
#endif /* NEURONSIM_ATOMIC_FILE_H */
