#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kvmtune/hostfs.h"
#include "kvmtune/util.h"

#define HOSTFS_READ_MAX (1024 * 1024)

static bool hostfs_is_host(const char *root) {
        return !root || !*root || streq(root, "/");
}

char *hostfs_path(const char *root, const char *path) {
        size_t n;

        if (hostfs_is_host(root))
                return xstrdup(path);
        n = strlen(root);
        while (n > 1 && root[n - 1] == '/')
                n--;
        return xasprintf("%.*s%s%s", (int)n, root, path[0] == '/' ? "" : "/", path);
}

static int hostfs_open(const char *root, const char *path, int flags) {
        _cleanup_free_ char *p = NULL;
        int fd;

        if (!path)
                return -EINVAL;
        p = hostfs_path(root, path);
        fd = open(p, flags | O_CLOEXEC | O_NOCTTY);
        return fd < 0 ? -errno_or(EIO) : fd;
}

int hostfs_read(const char *root, const char *path, char **ret) {
        _cleanup_close_ int fd = -1;

        fd = hostfs_open(root, path, O_RDONLY);
        if (fd < 0)
                return fd;
        return read_fd_all(fd, HOSTFS_READ_MAX, ret);     /* sysfs sizes say 4096 */
}

int hostfs_read_u64(const char *root, const char *path, uint64_t *ret) {
        _cleanup_free_ char *buf = NULL;
        int r;

        r = hostfs_read(root, path, &buf);
        if (r < 0)
                return r;
        return safe_atou64(buf, ret);
}

int hostfs_write(const char *root, const char *path, const char *value) {
        _cleanup_close_ int fd = -1;
        size_t len;
        ssize_t k;

        if (!value)
                return -EINVAL;
        fd = hostfs_open(root, path, O_WRONLY);
        if (fd < 0)
                return fd;
        len = strlen(value);
        do
                k = write(fd, value, len);
        while (k < 0 && errno == EINTR);
        if (k < 0)
                return -errno_or(EIO);
        return (size_t)k == len ? 0 : -EIO;
}

int hostfs_write_u64(const char *root, const char *path, uint64_t value) {
        char buf[32];

        snprintf(buf, sizeof buf, "%llu\n", (unsigned long long)value);
        return hostfs_write(root, path, buf);
}

/* Finds "key:" at the start of a line or after the "Node N " prefix of the
 * per-node meminfo files. Returns the text after the colon or NULL. */
static const char *hostfs_meminfo_find(const char *buf, const char *key) {
        size_t klen = strlen(key);
        const char *p;

        for (p = buf; (p = strstr(p, key)); p += klen) {
                bool at_word = p == buf || p[-1] == ' ' || p[-1] == '\n';

                if (at_word && p[klen] == ':')
                        return p + klen + 1;
        }
        return NULL;
}

/* Parses " 12345 kB" (or a bare count, as in HugePages_Total) up to the end of line. */
static int hostfs_meminfo_value(const char *s, uint64_t *ret) {
        const char *end;
        uint64_t v;
        int r = safe_atou64_prefix(s + strspn(s, " \t"), &v, &end);

        if (r < 0)
                return r;
        end += strspn(end, " \t");
        if (strncmp(end, "kB", 2) == 0)
                end += 2;
        if (*end && *end != '\n')
                return -EINVAL;
        *ret = v;
        return 0;
}

int hostfs_meminfo_get(const char *buf, const char *key, uint64_t *ret_kib) {
        const char *v;

        if (!buf || !key || !*key)
                return -EINVAL;
        v = hostfs_meminfo_find(buf, key);
        if (!v)
                return -ENODATA;
        return hostfs_meminfo_value(v, ret_kib);
}

int hostfs_read_meminfo(const char *root, const char *path, const char *key, uint64_t *ret_kib) {
        _cleanup_free_ char *buf = NULL;
        int r;

        if (!key || !*key)
                return -EINVAL;
        r = hostfs_read(root, path, &buf);
        if (r < 0)
                return r;
        return hostfs_meminfo_get(buf, key, ret_kib);
}
