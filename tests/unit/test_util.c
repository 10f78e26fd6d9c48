#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

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

Test(util, utf8_repair_replaces_each_bad_byte_and_keeps_the_rest)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	static const char latin1[] = "caf\xe9 \xe2\x80\x94 ok\x01";
	/* truncated, overlong, surrogate, past U+10FFFF */
	static const char bad[] = "\xe2\x80|\xc0\x80|\xed\xa0\x80|\xf4\x90\x80\x80";

	cr_assert_not(al_utf8_valid(latin1, strlen(latin1)));
	al_utf8_repair(&sb, latin1, strlen(latin1));
	cr_assert_str_eq(sb.buf, "caf\xef\xbf\xbd \xe2\x80\x94 ok\x01");
	cr_assert(al_utf8_valid(sb.buf, sb.len));
	al_strbuf_reset(&sb);
	al_utf8_repair(&sb, bad, sizeof(bad) - 1);
	cr_assert(al_utf8_valid(sb.buf, sb.len));
	cr_assert_eq(strstr(sb.buf, "|") - sb.buf, 6, "%s", sb.buf); /* two U+FFFD */
	cr_assert(al_utf8_valid("a\0b", 3), "NUL is a character");
	cr_assert(al_utf8_valid("\xf0\x9f\x98\x80", 4));
	al_strbuf_release(&sb);
}

Test(util, utf8_valid_len_ends_at_the_first_bad_sequence)
{
	cr_assert_eq(al_utf8_valid_len("caf\xc3\xa9!", 6), 6, "all of it");
	cr_assert_eq(al_utf8_valid_len("caf\xe9 ok", 7), 3, "a Latin-1 byte");
	cr_assert_eq(al_utf8_valid_len("ab\xc3", 3), 2, "a character cut short");
	cr_assert_eq(al_utf8_valid_len("a\xed\xa0\x80", 4), 1, "a surrogate");
	cr_assert_eq(al_utf8_valid_len("\xff", 1), 0);
	cr_assert_eq(al_utf8_valid_len("", 0), 0);
}

Test(util, strv_sort_orders_paths_as_git_does_and_has_finds_them)
{
	/* byte order: '-' (0x2d) and '.' before '/' (0x2f), upper case before lower */
	char a[] = "d/x", b[] = "d-x", c[] = "d.x", d[] = "D", e[] = "d";
	char *v[] = { a, b, c, d, e };

	al_strv_sort(v, 5);
	cr_assert_str_eq(v[0], "D");
	cr_assert_str_eq(v[1], "d");
	cr_assert_str_eq(v[2], "d-x");
	cr_assert_str_eq(v[3], "d.x");
	cr_assert_str_eq(v[4], "d/x");
	for (size_t i = 0; i < 5; i++)
		cr_assert(al_strv_has(v, 5, v[i]));
	cr_assert_not(al_strv_has(v, 5, "d/"));
	cr_assert_not(al_strv_has(v, 5, "e"));
	cr_assert_not(al_strv_has(NULL, 0, "d"));
	al_strv_sort(NULL, 0); /* nothing to sort: no array to give qsort */
}
