#ifndef AILOOP_SHA256_H
#define AILOOP_SHA256_H

#include <stddef.h>

/*
 * SHA-256 (FIPS 180-4), for the flow-sha256 that tells `ailoop resume`
 * whether flow.yaml changed under a run. None of ailoop's libraries offers
 * it (libgit2 1.5 hashes with SHA-1), and it is too small to pull in a
 * crypto library for.
 */
void al_sha256_hex(const void *data, size_t len, char hex[65]);

#endif
