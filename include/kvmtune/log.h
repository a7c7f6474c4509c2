/* One log module: journald with structured fields under systemd, stderr otherwise. */
#pragma once

#include <syslog.h>

#include "kvmtune/util.h"

enum log_target { LOG_TARGET_AUTO, LOG_TARGET_STDERR, LOG_TARGET_JOURNAL };

void log_setup(enum log_target target, int max_level);

/* domain may be NULL. Returns -abs(err) when err != 0, else 0, so callers can
 * "return log_error_errno(r, ...)" style. */
int log_full(int level, const char *domain, const char *uuid, int err,
             const char *fmt, ...) _printf_(5, 6);

#define log_debug(...)   log_full(LOG_DEBUG, NULL, NULL, 0, __VA_ARGS__)
#define log_info(...)    log_full(LOG_INFO, NULL, NULL, 0, __VA_ARGS__)
#define log_notice(...)  log_full(LOG_NOTICE, NULL, NULL, 0, __VA_ARGS__)
#define log_warning(...) log_full(LOG_WARNING, NULL, NULL, 0, __VA_ARGS__)
#define log_error(...)   log_full(LOG_ERR, NULL, NULL, 0, __VA_ARGS__)
#define log_error_errno(e, ...) log_full(LOG_ERR, NULL, NULL, (e), __VA_ARGS__)
#define log_dom(level, name, uuid, ...) log_full((level), (name), (uuid), 0, __VA_ARGS__)
