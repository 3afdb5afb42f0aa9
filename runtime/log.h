/* libnrt's logger: one line per message on stderr, "nrt: LEVEL message". */
#ifndef NRT_LOG_H
#define NRT_LOG_H

typedef enum nrt_log_level {
	NRT_LOG_OFF = 0, /* nothing at all */
	NRT_LOG_ERROR = 1,
	NRT_LOG_WARN = 2,
	NRT_LOG_INFO = 3,
	NRT_LOG_DEBUG = 4,
	NRT_LOG_TRACE = 5,
} nrt_log_level_t;

/* Parses ERROR/WARN/WARNING/INFO/DEBUG/TRACE/OFF (any case). -1 if unknown. */
int nrt_log_level_parse(const char *s);
const char *nrt_log_level_name(nrt_log_level_t level);
/* The level in force: the runtime's (set at nrt_init) or, before it, the
 * environment's. */
nrt_log_level_t nrt_log_level(void);
void nrt_log(nrt_log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define NRT_LOGE(...) nrt_log(NRT_LOG_ERROR, __VA_ARGS__)
#define NRT_LOGW(...) nrt_log(NRT_LOG_WARN, __VA_ARGS__)
#define NRT_LOGI(...) nrt_log(NRT_LOG_INFO, __VA_ARGS__)
#define NRT_LOGD(...) nrt_log(NRT_LOG_DEBUG, __VA_ARGS__)

#endif /* NRT_LOG_H */
