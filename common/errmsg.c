/* Error-message helpers shared by the readers of common/ (errmsg.h). */
#include <stdarg.h>
#include <stdio.h>

#include "neuronsim/errmsg.h"

int errmsg_fail(int status, char *err, size_t err_len, const char *fmt, ...)
{
	if (!err || !err_len)
		return status;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, err_len, fmt, ap);
	va_end(ap);
	return status;
}

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
