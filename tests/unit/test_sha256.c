#include "ailoop/base/sha256.h"

#include <criterion/criterion.h>
#include <string.h>

static void check(const char *input, size_t len, const char *want)
{
	char hex[65];

	al_sha256_hex(input, len, hex);
	cr_assert_str_eq(hex, want, "sha256 of %zu bytes", len);
}

Test(sha256, matches_the_fips_180_vectors)
{
	check("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	check("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	check("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56,
	      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

Test(sha256, handles_every_padding_length)
{
	char buf[200];
	char a[65], b[65];

	memset(buf, 'x', sizeof(buf));
	/* 55, 56 and 64 bytes are the boundaries of the padding */
	al_sha256_hex(buf, 55, a);
	al_sha256_hex(buf, 56, b);
	cr_assert_str_neq(a, b);
	check(buf, 64, "7ce100971f64e7001e8fe5a51973ecdfe1ced42befe7ee8d5fd6219506b5393c");
}
