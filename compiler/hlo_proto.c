/* ncc HloModuleProto decoder: serialized xla.HloModuleProto -> ncc IR module (being written; see include/ncc/ncc.h). */
#include "hlo_parser.h"

ncc_status_t ncc_parse_hlo_proto(const void *data, size_t len, const char *name,
				 ncc_module_t **out_module, ncc_error_t *err)
{
	(void)data;
	(void)len;
	*out_module = NULL;
	return ncc_error_set(err, NCC_ERR_UNSUPPORTED, 0, 0,
			     "%s: HloModuleProto input is not supported yet",
			     name ? name : "<proto>");
}
