#include "ailoop/base/shellcmd.h"
#include "ailoop/base/util.h"

#include <stdbool.h>
#include <string.h>

/*
 * What a shell command line runs, read without a shell: for `validate`'s
 * warning of a program that is not installed, and for the Bash commands
 * `ailoop setup` lets the actuator run.
 */

char *al_shell_program(const char *cmd)
{
	static const char *const shell_own[] = {
		"cd", "exec", "set", "export", "test", "[", "if", "for", "while", "until", "case",
		"!", "{", "(", ".", ":", "true", "false", "echo", "printf", "exit", "eval",
		"command", "time", "nice", "nohup", "timeout", "sh", "bash",
	};
	const char *p = cmd;
	bool after_cd = false;

	for (;;) {
		const char *w;
		size_t len;

		while (*p == ' ' || *p == '\t')
			p++;
		w = p;
		while (*p && *p != ' ' && *p != '\t' && *p != ';' && *p != '&' && *p != '|')
			p++;
		len = (size_t)(p - w);
		if (!len)
			return NULL;
		if (after_cd) { /* the directory, then && */
			after_cd = false;
			while (*p == ' ' || *p == '\t')
				p++;
			if (strncmp(p, "&&", 2))
				return NULL;
			p += 2;
			continue;
		}
		if (len == 2 && !memcmp(w, "cd", 2)) {
			after_cd = true;
			continue;
		}
		if ((len == 3 && !memcmp(w, "env", 3)) || (memchr(w, '=', len) && *w != '=' &&
							 !memchr(w, '/', (size_t)((char *)memchr(w, '=', len) - w))))
			continue;
		if (strcspn(w, "'\"$`\\(){}<>*?~") < len)
			return NULL;
		for (size_t i = 0; i < AL_ARRAY_SIZE(shell_own); i++)
			if (strlen(shell_own[i]) == len && !memcmp(w, shell_own[i], len))
				return NULL;
		return al_strndup(w, len);
	}
}
