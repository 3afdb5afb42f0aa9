/* The cap on the vector kernels the simulator uses (fwsim_set_max_isa; the CPU checks are internal.h's). */
#include <stdatomic.h>
#include <strings.h>

#include "internal.h"

static atomic_int g_max_isa; /* FWSIM_ISA_AUTO until set */

void fwsim_set_max_isa(fwsim_isa_t isa)
{
	atomic_store_explicit(&g_max_isa, (int)isa, memory_order_relaxed);
}

int fwsim_max_isa(void)
{
	return atomic_load_explicit(&g_max_isa, memory_order_relaxed);
}

int fwsim_isa_from_name(const char *name, fwsim_isa_t *out)
{
	static const char *const names[] = { "auto", "scalar", "avx2", "avx512" };
	*out = FWSIM_ISA_AUTO;
	for (int i = 0; name && i < 4; i++)
		if (!strcasecmp(name, names[i])) {
			*out = (fwsim_isa_t)i;
			return 0;
		}
	return -1;
}
