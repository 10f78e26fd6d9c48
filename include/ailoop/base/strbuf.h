#ifndef AILOOP_STRBUF_H
#define AILOOP_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

/*
 * A growable byte string. `buf` is never NULL and always NUL-terminated, so
 * it can be handed to any C string function; `len` excludes the NUL. An
 * initialised buffer that was never grown points at a shared empty string
 * and owns no memory, so AL_STRBUF_INIT needs no release if unused.
 */
struct al_strbuf {
	char *buf;
	size_t len;
	size_t alloc;
};

extern char al_strbuf_empty[];
#define AL_STRBUF_INIT { al_strbuf_empty, 0, 0 }

void al_strbuf_init(struct al_strbuf *sb);
void al_strbuf_release(struct al_strbuf *sb);
/* Hands the string to the caller (who frees it) and resets `sb`. */
char *al_strbuf_detach(struct al_strbuf *sb, size_t *len_out);

void al_strbuf_grow(struct al_strbuf *sb, size_t extra);
void al_strbuf_reset(struct al_strbuf *sb);
void al_strbuf_setlen(struct al_strbuf *sb, size_t len);

void al_strbuf_add(struct al_strbuf *sb, const void *data, size_t len);
void al_strbuf_adds(struct al_strbuf *sb, const char *s);
void al_strbuf_addch(struct al_strbuf *sb, int c);
void al_strbuf_addf(struct al_strbuf *sb, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void al_strbuf_vaddf(struct al_strbuf *sb, const char *fmt, va_list ap);

/* Removes trailing whitespace. */
void al_strbuf_rtrim(struct al_strbuf *sb);

/*
 * Reads a whole regular file. Returns 0, or -1 with errno set. `limit`
 * (0 = none) makes files larger than it fail with EFBIG before they are
 * read. Anything but a regular file fails without blocking (a FIFO would
 * wait for a writer): EISDIR for a directory, EINVAL for the others.
 */
int al_strbuf_read_file(struct al_strbuf *sb, const char *path, size_t limit);
/* Why al_strbuf_read_file() failed with `errnum`, for a message. */
const char *al_strbuf_read_strerror(int errnum);
/* Drops a leading UTF-8 byte order mark, which editors on Windows write. */
void al_strbuf_strip_bom(struct al_strbuf *sb);

#endif
