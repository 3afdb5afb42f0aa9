/* --version for every tool: one text, from the project's one version. Its own
 * object file so that tools without libnrt can link it from toolsupport. */
#include <stdio.h>

#include "neuronsim/isa.h"
#include "neuronsim/neff.h"
#include "tool_common.h"
#include "uapi/linux/neuronsim_version.h"

int tool_print_version(const char *prog, const char *extra)
{
	/* First line as GNU tools and help2man expect: "PROG (PACKAGE) VERSION". */
	printf("%s (neuronsim) %s\n", prog, NEURONSIM_VERSION);
	if (extra)
		printf("%s\n", extra);
	printf("NRT API %d.%d, NEFF format %d.%d, ISA %d.%d\n", NRT_MAJOR_VERSION,
	       NRT_MINOR_VERSION, NEFF_VERSION_MAJOR, NEFF_VERSION_MINOR, ISA_VERSION_MAJOR,
	       ISA_VERSION_MINOR);
	return TOOL_EXIT_OK;
}
