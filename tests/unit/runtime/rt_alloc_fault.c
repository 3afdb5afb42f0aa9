/* The --wrap allocation wrappers and the fail-the-n-th-allocation switch shared by the runtime fault-injection tests. */
#include "rt_alloc_fault.h"

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>

static atomic_long alloc_count;
static atomic_long fail_at; /* 0 = never */

void *__real_malloc(size_t);
void *__real_calloc(size_t, size_t);
void *__real_realloc(void *, size_t);
void *__real_aligned_alloc(size_t, size_t);
/* Weak: only test_runtime_faults wraps posix_memalign; in the others nothing
 * calls __wrap_posix_memalign and this reference stays unresolved. */
int __real_posix_memalign(void **, size_t, size_t) __attribute__((weak));
void *__wrap_malloc(size_t);
void *__wrap_calloc(size_t, size_t);
void *__wrap_realloc(void *, size_t);
void *__wrap_aligned_alloc(size_t, size_t);
int __wrap_posix_memalign(void **, size_t, size_t);

static int should_fail(void)
{
	long f = atomic_load(&fail_at);
	return f && atomic_fetch_add(&alloc_count, 1) + 1 == f;
}

void *__wrap_malloc(size_t n) { return should_fail() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t a, size_t b) { return should_fail() ? NULL : __real_calloc(a, b); }
void *__wrap_realloc(void *p, size_t n) { return should_fail() ? NULL : __real_realloc(p, n); }
void *__wrap_aligned_alloc(size_t a, size_t n) { return should_fail() ? NULL : __real_aligned_alloc(a, n); }
int __wrap_posix_memalign(void **p, size_t a, size_t n)
{
	return should_fail() ? ENOMEM : __real_posix_memalign(p, a, n);
}

void rt_alloc_fault_arm(long n)
{
	atomic_store(&alloc_count, 0);
	atomic_store(&fail_at, n);
}

int rt_alloc_fault_disarm(void)
{
	int fired = atomic_load(&alloc_count) >= atomic_load(&fail_at);
	atomic_store(&fail_at, 0);
	return fired;
}
