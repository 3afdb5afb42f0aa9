/* The cap on the vector kernels the simulator uses (fwsim_set_max_isa; the CPU checks are internal.h's). */
#include <stdatomic.h>

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
