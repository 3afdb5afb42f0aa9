/* The busy-wait hint of the project's spin loops (libfwsim's engines waiting
 * on a semaphore, libnrt's stats seqlock readers): PAUSE on x86, YIELD on
 * arm64, so a spinning hyperthread leaves its sibling the core. */
#ifndef NEURONSIM_SPIN_H
#define NEURONSIM_SPIN_H

static inline void ns_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

#endif /* NEURONSIM_SPIN_H */
