// SPDX-License-Identifier: MIT
/*
 * A library whose thread-local block is initial-exec: each copy that a
 * process dlopen()s takes 64 bytes of the static TLS block's surplus,
 * which is how tls-dlopen uses it up.
 */
__thread char tls_filler_block[64] __attribute__((tls_model("initial-exec")));

char *tls_filler(void);
char *tls_filler(void)
{
	return tls_filler_block;
}
