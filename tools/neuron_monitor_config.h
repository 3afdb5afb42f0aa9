/* neuron-monitor's configuration: the metric groups, their periods and the
 * neuron_runtimes entries, from the Neuron tool's JSON file or the default. */
#ifndef NEURONSIM_TOOLS_NEURON_MONITOR_CONFIG_H
#define NEURONSIM_TOOLS_NEURON_MONITOR_CONFIG_H

#include <jansson.h>
#include <regex.h>
#include <stdbool.h>
#include <stdint.h>

typedef enum group_type {
	G_NEURONCORE_COUNTERS = 0,
	G_EXECUTION_STATS,
	G_MEMORY_USED,
	G_RUNTIME_VCPU,
	/* system groups from here */
	G_VCPU_USAGE,
	G_MEMORY_INFO,
	G_HW_COUNTERS,
	G_TYPE_COUNT
} group_type_t;
#define G_FIRST_SYSTEM G_VCPU_USAGE

/* Each group's name in the configuration and in the documents. */
extern const char *const mon_group_names[G_TYPE_COUNT];

#define MAX_RT_ENTRIES 16
#define MAX_GROUPS (MAX_RT_ENTRIES * G_FIRST_SYSTEM + (G_TYPE_COUNT - G_FIRST_SYSTEM))
#define DEFAULT_PERIOD_NS 5000000000ull

typedef struct group {
	group_type_t type;
	int entry;                /* neuron_runtimes[entry]; -1 for a system group */
	uint64_t period_ns;
	uint64_t next_due;
	uint64_t last_ns;         /* system groups: when last collected */
	json_t *latest;           /* system groups: the last collected value */
} group_t;

typedef struct rt_entry {
	bool has_filter;
	regex_t filter;
	int groups[G_FIRST_SYSTEM]; /* group indexes, -1 when the type is not asked for */
} rt_entry_t;

typedef struct config {
	rt_entry_t entries[MAX_RT_ENTRIES];
	int n_entries;
	group_t groups[MAX_GROUPS];
	int n_groups;
} config_t;

/* The default: every group every 5 s, one neuron_runtimes entry for every process. */
void mon_config_default(config_t *c);
/* Reads FILE; on error says on stderr what is wrong where (the file, the field)
 * and returns -1; mon_config_free is still due. */
int mon_config_load(const char *file, config_t *c);
void mon_config_free(config_t *c);

#endif
