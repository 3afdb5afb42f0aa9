/* JSON strings of text that may not be UTF-8 (json_str.h). */
#include "neuronsim/json_str.h"

#include <stddef.h>

json_t *ns_json_string_lossy(const char *s)
{
	json_t *j = json_string(s);
	if (j)
		return j;
	char buf[1024];
	size_t n = 0;
	for (; s[n] && n + 1 < sizeof(buf); n++)
		buf[n] = (unsigned char)s[n] < 0x80 ? s[n] : '?';
	buf[n] = '\0';
	return json_string(buf);
}
