/* PJRT clients: creation over libnrt (one device per visible NeuronCore), lifetime by reference, device lists and lookups, the default device assignment. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nrt/nrt_neuronsim.h"
#include "nrt/nrt_version.h"
#include "pjrt_internal.h"
#include "uapi/linux/neuronsim_version.h"

void pjrt_client_ref(pjrt_client_t *c)
{
	atomic_fetch_add(&c->refs, 1);
}

static void client_free(pjrt_client_t *c)
{
	for (uint32_t i = 0; i < c->n_devices; i++) {
		pjrt_device_t *d = &c->devices[i];
		pjrt_pool_drain(d);
		pthread_mutex_destroy(&d->pool.lock);
		if (d->h_device)
			pjrt_handle_remove(d->h_device, PJRT_KIND_DEVICE);
		if (d->h_desc)
			pjrt_handle_remove(d->h_desc, PJRT_KIND_DESCRIPTION);
		if (d->h_memory)
			pjrt_handle_remove(d->h_memory, PJRT_KIND_MEMORY);
	}
	free(c->devices);
	free(c->device_list);
	free(c->memory_list);
	free(c);
}

void pjrt_client_unref(pjrt_client_t *c)
{
	if (atomic_fetch_sub(&c->refs, 1) != 1)
		return;
	client_free(c);
	pjrt_runtime_release();
}

pjrt_device_t *pjrt_device_lookup(const PJRT_Device *d, const pjrt_client_t *client)
{
	pjrt_device_t *dev = pjrt_handle_get(PJRT_HANDLE(d), PJRT_KIND_DEVICE);
	if (!dev)
		return NULL;
	pjrt_handle_put(PJRT_HANDLE(d));
	return !client || dev->client == client ? dev : NULL;
}

pjrt_device_t *pjrt_memory_lookup(const PJRT_Memory *m, const pjrt_client_t *client)
{
	pjrt_device_t *dev = pjrt_handle_get(PJRT_HANDLE(m), PJRT_KIND_MEMORY);
	if (!dev)
		return NULL;
	pjrt_handle_put(PJRT_HANDLE(m));
	return !client || dev->client == client ? dev : NULL;
}

static void device_init(pjrt_client_t *c, uint32_t i)
{
	pjrt_device_t *d = &c->devices[i];
	d->client = c;
	d->index = i;
	pjrt_pool_init(d);
	snprintf(d->debug, sizeof(d->debug), "%s:%u", PJRT_DEVICE_KIND, i);
	snprintf(d->str, sizeof(d->str), "NeuronCoreDevice(id=%u, process_index=0, core=%u)", i, i);
	snprintf(d->mem_debug, sizeof(d->mem_debug), "%s:%u device memory", PJRT_DEVICE_KIND, i);
	snprintf(d->mem_str, sizeof(d->mem_str), "MEMORY_SPACE_%u(kind=%s, core=%u)", i,
		 PJRT_MEMORY_KIND, i);
	snprintf(d->attr_backend, sizeof(d->attr_backend), "%s", nrt_neuronsim_backend_name());
	d->attrs[0] = (PJRT_NamedValue){
		.struct_size = PJRT_NamedValue_STRUCT_SIZE,
		.name = "core_index",
		.name_size = strlen("core_index"),
		.type = PJRT_NamedValue_kInt64,
		.int64_value = i,
		.value_size = 1,
	};
	d->attrs[1] = (PJRT_NamedValue){
		.struct_size = PJRT_NamedValue_STRUCT_SIZE,
		.name = "backend",
		.name_size = strlen("backend"),
		.type = PJRT_NamedValue_kString,
		.string_value = d->attr_backend,
		.value_size = strlen(d->attr_backend),
	};
}

PJRT_IMPL(Client_Create)
{
	PJRT_CHECK_ARGS(args, PJRT_Client_Create_Args, client);
	if (args->num_options && !args->create_options)
		return pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
				  "PJRT_Client_Create: %zu options but create_options is NULL", args->num_options);
	/* No option changes anything here: NEURON_RT_* variables configure the
	 * runtime. Unknown options are ignored, as PJRT allows. */
	for (size_t i = 0; i < args->num_options && pjrt_trace_on(); i++) {
		const PJRT_NamedValue *o = &args->create_options[i];
		if (o->name)
			pjrt_log("PJRT_Client_Create: ignoring option '%.*s'", (int)o->name_size, o->name);
	}
	/* Under a framework XLA_METRICS_FILE is the framework's (torch_xla's
	 * metrics_saver appends its own report at every step, with its own step
	 * numbers): the runtime's report goes to NEURONSIM_RUNTIME_METRICS_FILE, or
	 * nowhere (docs/metrics.md). Bad XLA_METRICS_* values were said by the
	 * runtime already and turn metrics off: nothing to do about them here. */
	(void)nrt_neuronsim_metrics_set_file(getenv("NEURONSIM_RUNTIME_METRICS_FILE"));
	PJRT_Error *err = pjrt_runtime_acquire();
	if (err)
		return err;
	uint32_t n = 0;
	NRT_STATUS st = nrt_get_visible_nc_count(&n);
	if (st != NRT_SUCCESS || n == 0) {
		pjrt_runtime_release();
		return pjrt_error(st ? pjrt_code_from_nrt(st) : PJRT_Error_Code_NOT_FOUND,
				  "no visible NeuronCore (nrt_get_visible_nc_count: %s, %u cores); check "
				  "NEURON_RT_VISIBLE_CORES / NEURON_RT_NUM_CORES",
				  nrt_get_status_as_str(st), n);
	}
	pjrt_client_t *c = calloc(1, sizeof(*c));
	if (c) {
		c->devices = calloc(n, sizeof(*c->devices));
		c->device_list = calloc(n, sizeof(*c->device_list));
		c->memory_list = calloc(n, sizeof(*c->memory_list));
	}
	if (!c || !c->devices || !c->device_list || !c->memory_list) {
		if (c)
			client_free(c);
		pjrt_runtime_release();
		return pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "out of memory creating a client");
	}
	atomic_init(&c->refs, 1);
	c->n_devices = n;
	nrt_version_t ver;
	memset(&ver, 0, sizeof(ver));
	nrt_get_version(&ver, sizeof(ver));
	snprintf(c->platform_version, sizeof(c->platform_version),
		 "neuronsim %s (compiler %s, libnrt %llu.%llu.%llu, %s backend, %u NeuronCores)",
		 NEURONSIM_VERSION, NCC_VERSION_STRING,
		 (unsigned long long)ver.rt_major, (unsigned long long)ver.rt_minor,
		 (unsigned long long)ver.rt_patch, nrt_neuronsim_backend_name(), n);
	bool ok = true;
	for (uint32_t i = 0; i < n && ok; i++) {
		pjrt_device_t *d = &c->devices[i];
		device_init(c, i);
		d->h_device = pjrt_handle_new(PJRT_KIND_DEVICE, d);
		d->h_desc = pjrt_handle_new(PJRT_KIND_DESCRIPTION, d);
		d->h_memory = pjrt_handle_new(PJRT_KIND_MEMORY, d);
		ok = d->h_device && d->h_desc && d->h_memory;
		c->device_list[i] = d->self[0] = PJRT_PTR(PJRT_Device, d->h_device);
		c->memory_list[i] = d->memories[0] = PJRT_PTR(PJRT_Memory, d->h_memory);
	}
	if (ok)
		ok = (c->h = pjrt_handle_new(PJRT_KIND_CLIENT, c)) != 0;
	if (!ok) {
		pjrt_client_unref(c);
		return pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "out of handles creating a client");
	}
	args->client = PJRT_PTR(PJRT_Client, c->h);
	return NULL;
}

static void put_client(pjrt_client_t *c)
{
	pjrt_handle_put(c->h);
}

PJRT_IMPL(Client_Destroy)
{
	PJRT_CHECK_ARGS(args, PJRT_Client_Destroy_Args, client);
	PJRT_Error *err;
	pjrt_client_t *c = pjrt_handle_remove_arg("PJRT_Client_Destroy", PJRT_KIND_CLIENT, args->client, &err);
	if (!c)
		return err;
	/* Buffers and executables still alive keep the rest until they go. */
	pjrt_client_unref(c);
	return NULL;
}

PJRT_IMPL(Client_PlatformName)
{
	PJRT_CHECK_ARGS(args, PJRT_Client_PlatformName_Args, platform_name_size);
	PJRT_GET(pjrt_client_t, c, PJRT_KIND_CLIENT, args->client, "PJRT_Client_PlatformName");
	args->platform_name = PJRT_PLATFORM_NAME;
	args->platform_name_size = strlen(PJRT_PLATFORM_NAME);
	put_client(c);
	return NULL;
}

PJRT_IMPL(Client_ProcessIndex)
{
	PJRT_CHECK_ARGS(args, PJRT_Client_ProcessIndex_Args, process_index);
	PJRT_GET(pjrt_client_t, c, PJRT_KIND_CLIENT, args->client, "PJRT_Client_ProcessIndex");
	args->process_index = 0;
	put_client(c);
	return NULL;
}

PJRT_IMPL(Client_PlatformVersion)
{
	PJRT_CHECK_ARGS(args, PJRT_Client_PlatformVersion_Args, platform_version_size);
	PJRT_GET(pjrt_client_t, c, PJRT_KIND_CLIENT, args->client, "PJRT_Client_PlatformVersion");
	args->platform_version = c->platform_version;
	args->platform_version_size = strlen(c->platform_version);
	put_client(c);
	return NULL;
}

PJRT_IMPL(Client_Devices)
{
	PJRT_CHECK_ARGS(args, PJRT_Client_Devices_Args, num_devices);
	PJRT_GET(pjrt_client_t, c, PJRT_KIND_CLIENT, args->client, "PJRT_Client_Devices");
	args->devices = c->device_list;
	args->num_devices = c->n_devices;
	put_client(c);
	return NULL;
}

PJRT_IMPL(Client_AddressableDevices)
{
	PJRT_CHECK_ARGS(args, PJRT_Client_AddressableDevices_Args, num_addressable_devices);
	PJRT_GET(pjrt_client_t, c, PJRT_KIND_CLIENT, args->client, "PJRT_Client_AddressableDevices");
	args->addressable_devices = c->device_list;
	args->num_addressable_devices = c->n_devices;
	put_client(c);
	return NULL;
}

PJRT_IMPL(Client_LookupDevice)
{
	PJRT_CHECK_ARGS(args, PJRT_Client_LookupDevice_Args, device);
	PJRT_GET(pjrt_client_t, c, PJRT_KIND_CLIENT, args->client, "PJRT_Client_LookupDevice");
	PJRT_Error *err = NULL;
	if (args->id < 0 || (uint32_t)args->id >= c->n_devices)
		err = pjrt_error(PJRT_Error_Code_NOT_FOUND,
				 "PJRT_Client_LookupDevice: no device with id %d (ids 0-%u)", args->id,
				 c->n_devices - 1);
	else
		args->device = c->device_list[args->id];
	put_client(c);
	return err;
}

PJRT_IMPL(Client_LookupAddressableDevice)
{
	PJRT_CHECK_ARGS(args, PJRT_Client_LookupAddressableDevice_Args, addressable_device);
	PJRT_GET(pjrt_client_t, c, PJRT_KIND_CLIENT, args->client, "PJRT_Client_LookupAddressableDevice");
	PJRT_Error *err = NULL;
	if (args->local_hardware_id < 0 || (uint32_t)args->local_hardware_id >= c->n_devices)
		err = pjrt_error(PJRT_Error_Code_NOT_FOUND,
				 "PJRT_Client_LookupAddressableDevice: no device with local hardware id %d "
				 "(0-%u)", args->local_hardware_id, c->n_devices - 1);
	else
		args->addressable_device = c->device_list[args->local_hardware_id];
	put_client(c);
	return err;
}

PJRT_IMPL(Client_AddressableMemories)
{
	PJRT_CHECK_ARGS(args, PJRT_Client_AddressableMemories_Args, num_addressable_memories);
	PJRT_GET(pjrt_client_t, c, PJRT_KIND_CLIENT, args->client, "PJRT_Client_AddressableMemories");
	args->addressable_memories = c->memory_list;
	args->num_addressable_memories = c->n_devices;
	put_client(c);
	return NULL;
}

PJRT_IMPL(Client_DefaultDeviceAssignment)
{
	PJRT_CHECK_ARGS(args, PJRT_Client_DefaultDeviceAssignment_Args, default_assignment);
	PJRT_GET(pjrt_client_t, c, PJRT_KIND_CLIENT, args->client, "PJRT_Client_DefaultDeviceAssignment");
	PJRT_Error *err = NULL;
	int64_t n = (int64_t)args->num_replicas * args->num_partitions;
	if (args->num_replicas < 1 || args->num_partitions < 1 || n > c->n_devices)
		err = pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
				 "PJRT_Client_DefaultDeviceAssignment: %d replicas x %d partitions do not "
				 "fit the %u visible NeuronCores", args->num_replicas, args->num_partitions,
				 c->n_devices);
	else if (!args->default_assignment || args->default_assignment_size < (size_t)n)
		err = pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
				 "PJRT_Client_DefaultDeviceAssignment: default_assignment has room for %zu "
				 "ids, %lld needed", args->default_assignment_size, (long long)n);
	else
		/* Replica-major, as the framework reads it: replica r, partition p is
		 * device r * num_partitions + p. */
		for (int64_t i = 0; i < n; i++)
			args->default_assignment[i] = (int)i;
	put_client(c);
	return err;
}
