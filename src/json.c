// SPDX-License-Identifier: Apache-2.0
/* JSON string output shared by the stats file, the doctor and the preflight (json.h). */
#include "railnet/json.h"

void rn_json_str(FILE *o, const char *s)
{
	fputc('"', o);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(o, "\\%c", c);
		else if (c < 0x20)
			fprintf(o, "\\u%04x", c);
		else
			fputc(c, o);
	}
	fputc('"', o);
}
