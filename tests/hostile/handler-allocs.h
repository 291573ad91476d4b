// SPDX-License-Identifier: MIT
/*
 * Allocations made while a signal handler runs, counted: the handler sets
 * in_handler around what it calls, and handler_allocs counts each
 * malloc(), calloc() and realloc() meanwhile, by this binary's own
 * definitions of them (each goes on to libc's), or by the sanitizers'
 * allocator hooks in their builds (count_allocs() installs them). One
 * test binary includes this once.
 */
#ifndef HANDLER_ALLOCS_H
#define HANDLER_ALLOCS_H

#include <stddef.h>

static int in_handler, handler_allocs;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
/* The sanitizers' runtimes' (sanitizer/allocator_interface.h). */
int __sanitizer_install_malloc_and_free_hooks(
	void (*on_malloc)(const volatile void *, size_t),
	void (*on_free)(const volatile void *));

static void on_malloc(const volatile void *p, size_t n)
{
	(void)p;
	(void)n;
	if (__atomic_load_n(&in_handler, __ATOMIC_RELAXED))
		__atomic_add_fetch(&handler_allocs, 1, __ATOMIC_RELAXED);
}

static void on_free(const volatile void *p)
{
	(void)p;
}

static void count_allocs(void)
{
	__sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);
}
#else
void *__libc_malloc(size_t n);
void *__libc_calloc(size_t k, size_t n);
void *__libc_realloc(void *p, size_t n);

static void counted(void)
{
	if (__atomic_load_n(&in_handler, __ATOMIC_RELAXED))
		__atomic_add_fetch(&handler_allocs, 1, __ATOMIC_RELAXED);
}

void *malloc(size_t n)
{
	counted();
	return __libc_malloc(n);
}

void *calloc(size_t k, size_t n)
{
	counted();
	return __libc_calloc(k, n);
}

void *realloc(void *p, size_t n)
{
	counted();
	return __libc_realloc(p, n);
}

static void count_allocs(void)
{
}
#endif

#endif
