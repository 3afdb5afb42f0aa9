/* Guest check: nrt_init on the kernel backend against a driver of another ABI major fails, naming both versions (run with a rebuilt neuronsim.ko). */
#include <stdio.h>
#include <stdlib.h>

#include "nrt/nrt.h"

int main(void)
{
	setenv("NEURONSIM_BACKEND", "kernel", 1);
	NRT_STATUS st = nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "");
	printf("abi: nrt_init returned %d (%s)\n", st, nrt_get_status_as_str(st));
	if (st == NRT_SUCCESS)
		nrt_close();
	/* The caller checks stderr for the message; success here is a failure. */
	return st == NRT_FAILURE ? 0 : 1;
}
