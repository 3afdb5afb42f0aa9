/* A client of libnrt written from the Neuron SDK's documentation alone (sdk_client.c), run by test_runtime_nrt_api. */
#ifndef SDK_CLIENT_H
#define SDK_CLIENT_H

#include <stddef.h>

/* Runs the client on the NEFF in [neff, neff + size), a model with two f32[n]
 * inputs and one f32[n] output that is their sum (names from the model); its
 * profiles go under work_dir (an inspection in work_dir/inspect). Returns 0,
 * or -1 with what failed in err[err_len]. */
int sdk_client_run(const void *neff, size_t size, const char *work_dir, char *err, size_t err_len);

#endif /* SDK_CLIENT_H */
