#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

Test(strbuf, starts_empty_and_never_null)
{
	struct al_strbuf sb = AL_STRBUF_INIT;

	cr_assert_not_null(sb.buf);
	cr_assert_eq(sb.len, 0);
	cr_assert_str_eq(sb.buf, "");
	al_strbuf_release(&sb);
	cr_assert_str_eq(sb.buf, "");
}

Test(strbuf, appends_and_formats)
{
	struct al_strbuf sb = AL_STRBUF_INIT;

	al_strbuf_adds(&sb, "iteration ");
	al_strbuf_addf(&sb, "%d.%d", 1, 2);
	al_strbuf_addch(&sb, '!');
	cr_assert_str_eq(sb.buf, "iteration 1.2!");
	cr_assert_eq(sb.len, strlen("iteration 1.2!"));
	al_strbuf_release(&sb);
}

Test(strbuf, grows_past_many_doublings)
{
	struct al_strbuf sb = AL_STRBUF_INIT;

	for (int i = 0; i < 100000; i++)
		al_strbuf_addf(&sb, "%d,", i % 10);
	cr_assert_eq(sb.len, 200000);
	cr_assert_eq(sb.buf[sb.len], '\0');
	al_strbuf_release(&sb);
}

Test(strbuf, detach_hands_over_ownership)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	size_t len;
	char *s;

	s = al_strbuf_detach(&sb, &len);
	cr_assert_str_eq(s, "");
	free(s);
	al_strbuf_adds(&sb, "abc");
	s = al_strbuf_detach(&sb, &len);
	cr_assert_str_eq(s, "abc");
	cr_assert_eq(len, 3);
	cr_assert_eq(sb.len, 0);
	free(s);
}

Test(strbuf, rtrim_and_setlen)
{
	struct al_strbuf sb = AL_STRBUF_INIT;

	al_strbuf_adds(&sb, "line \n\t ");
	al_strbuf_rtrim(&sb);
	cr_assert_str_eq(sb.buf, "line");
	al_strbuf_setlen(&sb, 2);
	cr_assert_str_eq(sb.buf, "li");
	al_strbuf_release(&sb);
}

Test(strbuf, read_file_refuses_files_over_the_limit)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	char path[] = "/tmp/ailoop-strbuf-XXXXXX";
	int fd = mkstemp(path);

	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, "0123456789", 10), 10);
	close(fd);
	cr_assert_eq(al_strbuf_read_file(&sb, path, 5), -1);
	cr_assert_eq(errno, EFBIG);
	cr_assert_eq(al_strbuf_read_file(&sb, path, 0), 0);
	cr_assert_str_eq(sb.buf, "0123456789");
	unlink(path);
	al_strbuf_release(&sb);
	cr_assert_eq(al_strbuf_read_file(&sb, "/nonexistent/x", 0), -1);
	cr_assert_eq(errno, ENOENT);
}

Test(util, utf8_text_finds_the_first_bad_byte)
{
	int line = 0, col = 0;

	cr_assert(al_utf8_text("a: é\n", 6, &line, &col));
	cr_assert_not(al_utf8_text("a: 1\nb: \xff\n", 10, &line, &col));
	cr_assert_eq(line, 2);
	cr_assert_eq(col, 4);
	cr_assert_not(al_utf8_text("ab\0c", 4, &line, &col));
	cr_assert_eq(col, 3);
	cr_assert_not(al_utf8_text("\xc0\x80", 2, &line, &col)); /* overlong NUL */
	cr_assert_not(al_utf8_text("\xed\xa0\x80", 3, &line, &col)); /* surrogate */
}

Test(util, closest_suggests_only_near_words)
{
	static const char *const keys[] = { "timeout", "runner", "controller" };

	cr_assert_str_eq(al_closest("timout", keys, 3), "timeout");
	cr_assert_str_eq(al_closest("contoller", keys, 3), "controller");
	cr_assert_null(al_closest("banana", keys, 3));
}

Test(util, strmap_keeps_the_first_value)
{
	struct al_strmap map = AL_STRMAP_INIT;
	char keys[1000][8];

	for (int i = 0; i < 1000; i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%d", i);
		cr_assert_eq(al_strmap_put(&map, keys[i], keys[i]), keys[i]);
	}
	cr_assert_eq(al_strmap_put(&map, "k5", "other"), keys[5]);
	cr_assert_eq(al_strmap_get(&map, "k999"), keys[999]);
	cr_assert_null(al_strmap_get(&map, "k1000"));
	al_strmap_release(&map);
}

Test(util, utf8_cut_keeps_whole_characters)
{
	char s[] = "aé€"; /* 1 + 2 + 3 bytes */
	char t[] = "short";

	al_utf8_cut(s, 4); /* would split the euro sign */
	cr_assert_str_eq(s, "aé");
	al_utf8_cut(s, 2); /* would split the é */
	cr_assert_str_eq(s, "a");
	al_utf8_cut(t, 10);
	cr_assert_str_eq(t, "short");
}

Test(strbuf, read_file_refuses_what_is_not_a_regular_file_without_blocking)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	char dir[] = "/tmp/ailoop-strbuf-XXXXXX", fifo[64];

	cr_assert_not_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	cr_assert_eq(al_strbuf_read_file(&sb, fifo, 0), -1); /* no writer: would block */
	cr_assert_eq(errno, EINVAL);
	cr_assert_str_eq(al_strbuf_read_strerror(EINVAL), "not a regular file");
	cr_assert_eq(al_strbuf_read_file(&sb, dir, 0), -1);
	cr_assert_eq(errno, EISDIR);
	cr_assert_eq(al_strbuf_read_file(&sb, "/dev/null", 0), -1);
	cr_assert_eq(errno, EINVAL);
	unlink(fifo);
	rmdir(dir);
	al_strbuf_release(&sb);
}

Test(strbuf, strip_bom_drops_only_a_leading_byte_order_mark)
{
	struct al_strbuf sb = AL_STRBUF_INIT;

	al_strbuf_adds(&sb, "\xef\xbb\xbfversion: 1\n");
	al_strbuf_strip_bom(&sb);
	cr_assert_str_eq(sb.buf, "version: 1\n");
	al_strbuf_strip_bom(&sb);
	cr_assert_str_eq(sb.buf, "version: 1\n");
	al_strbuf_reset(&sb);
	al_strbuf_adds(&sb, "\xef\xbb");
	al_strbuf_strip_bom(&sb);
	cr_assert_eq(sb.len, 2);
	al_strbuf_release(&sb);
}
