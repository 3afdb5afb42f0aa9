/* neuron-snapshot: what its subcommands share (the usage text, argument errors, loading a snapshot file, the HLO module's name). */
#ifndef NEURON_SNAPSHOT_H
#define NEURON_SNAPSHOT_H

#include <stddef.h>

#include "neuronsim/snapshot.h"

/* neuron_snapshot.c */
extern const char nsnap_usage_text[];
/* Prints "neuron-snapshot: " fmt (with arg) and the --help hint; TOOL_EXIT_USAGE. */
int nsnap_usage_error(const char *fmt, const char *arg);
/* The snapshot at path, or NULL after printing why it cannot be read. */
snapshot_t *nsnap_load(const char *path);
/* The name after "HloModule" in the text, "" when there is none. */
void nsnap_hlo_module_name(const char *text, size_t len, char *out, size_t out_len);

/* The subcommands: argv[0] is the command's name; an exit status (TOOL_EXIT_*). */
int nsnap_cmd_info(int argc, char **argv);   /* neuron_snapshot_info.c */
int nsnap_cmd_export(int argc, char **argv); /* neuron_snapshot_export.c */
int nsnap_cmd_replay(int argc, char **argv); /* neuron_snapshot_replay.c */

#endif /* NEURON_SNAPSHOT_H */
