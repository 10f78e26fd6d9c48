#include "ailoop/strbuf.h"
#include "ailoop/util.h"

#include <criterion/criterion.h>
#include <string.h>

Test(util, err_may_quote_its_own_message)
{
	char long_part[300];

	memset(long_part, 'x', sizeof(long_part) - 1);
	long_part[sizeof(long_part) - 1] = '\0';
	cr_assert_eq(al_err(AL_EINVALID, "out.md:1:14: %s", long_part), AL_EINVALID);
	/* the old message is an argument of the new one, longer than it */
	cr_assert_eq(al_err(AL_EAGENT, "controller output unreadable: %s", al_errmsg()),
		     AL_EAGENT);
	cr_assert(al_starts_with(al_errmsg(), "controller output unreadable: out.md:1:14: xxx"));
	cr_assert_eq(strlen(al_errmsg()), strlen("controller output unreadable: out.md:1:14: ") +
						  strlen(long_part));
	al_err(AL_ERROR, "%s; %s", al_errmsg() + 30, al_errmsg() + 30);
	cr_assert_eq(strlen(al_errmsg()), 2 * (strlen("out.md:1:14: ") + strlen(long_part)) + 2);
	cr_assert(strstr(al_errmsg(), "x; out.md:1:14: x"));
}
