/* Error-message helpers shared by the readers of common/ (errmsg.h). */
#include <stdio.h>

#include "neuronsim/errmsg.h"

errmsg_escaped_t errmsg_escape(const char *s, size_t max)
{
	errmsg_escaped_t e;
	size_t o = 0, i;
	if (max > ERRMSG_ESCAPE_MAX)
		max = ERRMSG_ESCAPE_MAX;
	for (i = 0; s[i] && i < max; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c < 0x7f && c != '\\')
			e.s[o++] = (char)c;
		else
			o += (size_t)snprintf(e.s + o, sizeof(e.s) - o, "\\x%02x", c);
	}
	if (s[i])
		o += (size_t)snprintf(e.s + o, sizeof(e.s) - o, "...");
	e.s[o] = '\0';
	return e;
}
