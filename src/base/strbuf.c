#include "ailoop/base/strbuf.h"
#include "ailoop/base/alloc.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char al_strbuf_empty[1];

void al_strbuf_init(struct al_strbuf *sb)
{
	sb->buf = al_strbuf_empty;
	sb->len = 0;
	sb->alloc = 0;
}

void al_strbuf_release(struct al_strbuf *sb)
{
	if (sb->alloc)
		free(sb->buf);
	al_strbuf_init(sb);
}

char *al_strbuf_detach(struct al_strbuf *sb, size_t *len_out)
{
	char *s;

	if (!sb->alloc)
		al_strbuf_grow(sb, 0);
	s = sb->buf;
	if (len_out)
		*len_out = sb->len;
	al_strbuf_init(sb);
	return s;
}

void al_strbuf_grow(struct al_strbuf *sb, size_t extra)
{
	size_t need;

	if (extra > SIZE_MAX - sb->len - 1)
		al_die_oom();
	need = sb->len + extra + 1;
	if (need <= sb->alloc)
		return;
	if (!sb->alloc)
		sb->buf = NULL;
	sb->alloc = sb->alloc ? sb->alloc : 64;
	while (sb->alloc < need)
		sb->alloc = sb->alloc < SIZE_MAX / 2 ? sb->alloc * 2 : need;
	sb->buf = al_realloc(sb->buf, sb->alloc);
	if (sb->len == 0)
		sb->buf[0] = '\0';
}

void al_strbuf_reset(struct al_strbuf *sb)
{
	al_strbuf_setlen(sb, 0);
}

void al_strbuf_setlen(struct al_strbuf *sb, size_t len)
{
	if (!sb->alloc)
		return; /* only 0 is valid on the shared empty string */
	sb->len = len;
	sb->buf[len] = '\0';
}

void al_strbuf_add(struct al_strbuf *sb, const void *data, size_t len)
{
	if (!len)
		return;
	al_strbuf_grow(sb, len);
	memcpy(sb->buf + sb->len, data, len);
	sb->len += len;
	sb->buf[sb->len] = '\0';
}

void al_strbuf_adds(struct al_strbuf *sb, const char *s)
{
	al_strbuf_add(sb, s, strlen(s));
}

void al_strbuf_addch(struct al_strbuf *sb, int c)
{
	al_strbuf_grow(sb, 1);
	sb->buf[sb->len++] = (char)c;
	sb->buf[sb->len] = '\0';
}

void al_strbuf_vaddf(struct al_strbuf *sb, const char *fmt, va_list ap)
{
	va_list cp;
	int n;

	va_copy(cp, ap);
	n = vsnprintf(sb->buf + sb->len, sb->alloc ? sb->alloc - sb->len : 0, fmt, cp);
	va_end(cp);
	if (n < 0)
		return;
	if (sb->len + (size_t)n >= sb->alloc) {
		al_strbuf_grow(sb, (size_t)n);
		n = vsnprintf(sb->buf + sb->len, sb->alloc - sb->len, fmt, ap);
		if (n < 0)
			return;
	}
	sb->len += (size_t)n;
}

void al_strbuf_addf(struct al_strbuf *sb, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	al_strbuf_vaddf(sb, fmt, ap);
	va_end(ap);
}

void al_strbuf_rtrim(struct al_strbuf *sb)
{
	size_t n = sb->len;

	while (n && isspace((unsigned char)sb->buf[n - 1]))
		n--;
	al_strbuf_setlen(sb, n);
}

int al_strbuf_read_file(struct al_strbuf *sb, const char *path, size_t limit)
{
	struct stat st;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0) {
		err = errno;
		goto done;
	}
	if (!S_ISREG(st.st_mode)) {
		err = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
		goto done;
	}
	if (limit && (size_t)st.st_size > limit) {
		err = EFBIG;
		goto done;
	}
	al_strbuf_grow(sb, (size_t)st.st_size);
	for (;;) {
		ssize_t n;

		al_strbuf_grow(sb, 8192);
		n = read(fd, sb->buf + sb->len, sb->alloc - sb->len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = errno;
			break;
		}
		if (n == 0)
			break;
		sb->len += (size_t)n;
		if (limit && sb->len > limit) {
			err = EFBIG; /* grew while we read it */
			break;
		}
	}
	sb->buf[sb->len] = '\0';
done:
	close(fd);
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}

const char *al_strbuf_read_strerror(int errnum)
{
	return errnum == EINVAL ? "not a regular file" : strerror(errnum);
}

void al_strbuf_strip_bom(struct al_strbuf *sb)
{
	if (sb->len >= 3 && !memcmp(sb->buf, "\xef\xbb\xbf", 3)) {
		memmove(sb->buf, sb->buf + 3, sb->len - 3);
		al_strbuf_setlen(sb, sb->len - 3);
	}
}
