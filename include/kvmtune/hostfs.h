/* Host file access under a root directory (--sysfs-root DIR): every /sys and
 * /proc path the daemon reads or writes goes through here, so tests run on
 * fixture trees. A NULL or "/" root means the real host. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Joins root and an absolute path. Returned string owned by the caller. */
char *hostfs_path(const char *root, const char *path);

/* Reads a whole small file (<= 1 MiB) into a NUL-terminated buffer, trailing
 * newline kept. Returns length or negative errno. */
int hostfs_read(const char *root, const char *path, char **ret);
/* Reads an unsigned decimal from a file ("512\n"): -EINVAL for anything else
 * but trailing blanks, -ERANGE on overflow. */
int hostfs_read_u64(const char *root, const char *path, uint64_t *ret);
/* Writes a string (no O_CREAT: sysfs files exist or the write fails). */
int hostfs_write(const char *root, const char *path, const char *value);
int hostfs_write_u64(const char *root, const char *path, uint64_t value);
/* Reads "Key:   value kB" from a meminfo-style file (also the per-node
 * "Node N Key: value kB" form; a value without unit is returned as is).
 * -ENODATA when the key is absent, -EINVAL when its value is malformed. */
int hostfs_read_meminfo(const char *root, const char *path, const char *key, uint64_t *ret_kib);
/* The same on text already read: 0, -ENODATA (no such key), -EINVAL. */
int hostfs_meminfo_get(const char *buf, const char *key, uint64_t *ret_kib);
