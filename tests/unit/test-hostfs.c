#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kvmtune/hostfs.h"
#include "kvmtune/util.h"
#include "tap.h"

static char root[] = "/tmp/test-hostfs.XXXXXX";

/* Creates root/rel (parents included) holding content. */
static void put(const char *rel, const char *content) {
        _cleanup_free_ char *p = xasprintf("%s/%s", root, rel);
        FILE *f;

        for (char *s = strchr(p + strlen(root) + 1, '/'); s; s = strchr(s + 1, '/')) {
                *s = '\0';
                mkdir(p, 0755);
                *s = '/';
        }
        f = fopen(p, "w");
        if (!f || fputs(content, f) < 0 || fclose(f) != 0)
                abort();
}

static void test_path(void) {
        _cleanup_free_ char *a = hostfs_path(NULL, "/sys/x");
        _cleanup_free_ char *b = hostfs_path("/", "/sys/x");
        _cleanup_free_ char *c = hostfs_path("/tmp/r", "/sys/x");
        _cleanup_free_ char *d = hostfs_path("/tmp/r//", "/sys/x");
        _cleanup_free_ char *e = hostfs_path("", "/sys/x");

        is_str(a, "/sys/x", "NULL root is the host");
        is_str(b, "/sys/x", "\"/\" root is the host");
        is_str(c, "/tmp/r/sys/x", "root joined");
        is_str(d, "/tmp/r/sys/x", "trailing slashes of root dropped");
        is_str(e, "/sys/x", "empty root is the host");
}

static void test_read(void) {
        _cleanup_free_ char *buf = NULL, *big = NULL, *huge = NULL;
        char *none = NULL;

        put("a/b/text", "hello\n");
        is_int(hostfs_read(root, "/a/b/text", &buf), 6, "read returns length");
        is_str(buf, "hello\n", "read keeps trailing newline");
        is_int(hostfs_read(root, "/a/b/missing", &none), -ENOENT, "missing file is -ENOENT");
        ok(none == NULL, "out parameter untouched on failure");
        is_int(hostfs_read(root, "/a/b", &none), -EISDIR, "directory is -EISDIR");

        big = xmalloc(100001);
        memset(big, 'x', 100000);
        big[100000] = '\0';
        put("big", big);
        free(buf);
        buf = NULL;
        is_int(hostfs_read(root, "/big", &buf), 100000, "file larger than one read buffer");

        huge = xmalloc(1024 * 1024 + 2);
        memset(huge, 'y', 1024 * 1024 + 1);
        huge[1024 * 1024 + 1] = '\0';
        put("huge", huge);
        is_int(hostfs_read(root, "/huge", &none), -EFBIG, "file over 1 MiB is refused");
}

static void test_read_u64(void) {
        uint64_t v = 42;

        put("n/ok", "512\n");
        put("n/neg", "-1\n");
        put("n/junk", "12abc\n");
        put("n/empty", "");
        put("n/space", " 7\n");
        put("n/big", "99999999999999999999999\n");
        put("n/max", "18446744073709551615\n");
        is_int(hostfs_read_u64(root, "/n/ok", &v), 0, "u64 read");
        is_int(v, 512, "u64 value");
        v = 42;
        is_int(hostfs_read_u64(root, "/n/neg", &v), -EINVAL, "negative number refused");
        is_int(hostfs_read_u64(root, "/n/junk", &v), -EINVAL, "trailing junk refused");
        is_int(hostfs_read_u64(root, "/n/empty", &v), -EINVAL, "empty file refused");
        is_int(hostfs_read_u64(root, "/n/space", &v), -EINVAL, "leading blank refused");
        is_int(hostfs_read_u64(root, "/n/big", &v), -ERANGE, "overflow is -ERANGE");
        is_int(v, 42, "value untouched on failure");
        is_int(hostfs_read_u64(root, "/n/max", &v), 0, "UINT64_MAX read");
        ok(v == UINT64_MAX, "UINT64_MAX value");
        is_int(hostfs_read_u64(root, "/n/none", &v), -ENOENT, "missing file");
}

static void test_write(void) {
        _cleanup_free_ char *buf = NULL, *p = NULL;
        uint64_t v = 0;

        put("w/nr_hugepages", "0\n");
        is_int(hostfs_write_u64(root, "/w/nr_hugepages", 16), 0, "write u64");
        is_int(hostfs_read_u64(root, "/w/nr_hugepages", &v), 0, "read it back");
        is_int(v, 16, "written value");
        is_int(hostfs_write(root, "/w/nr_hugepages", "abc"), 0, "write string");
        is_int(hostfs_read(root, "/w/nr_hugepages", &buf), 3, "string written over the old value");
        is_int(hostfs_write(root, "/w/absent", "1"), -ENOENT, "no O_CREAT: missing file fails");
        p = xasprintf("%s/w/absent", root);
        ok(access(p, F_OK) < 0, "missing file not created");
        is_int(hostfs_write(root, "/w/nr_hugepages", NULL), -EINVAL, "NULL value refused");
}

static void test_meminfo(void) {
        uint64_t kib = 0;

        put("m/node0", "Node 0 MemTotal:       16252928 kB\n"
                       "Node 0 MemFree:        15000000 kB\n"
                       "Node 0 HugePages_Total:     8\n");
        put("m/proc", "MemTotal:       32505856 kB\nMemFree: 100 kB\nHugepagesize:    2048 kB\n");
        put("m/bad", "Node 0 MemTotal:       lots kB\n");
        is_int(hostfs_read_meminfo(root, "/m/node0", "MemTotal", &kib), 0, "per-node meminfo");
        is_int(kib, 16252928, "MemTotal of node");
        is_int(hostfs_read_meminfo(root, "/m/node0", "MemFree", &kib), 0, "second key");
        is_int(kib, 15000000, "MemFree of node");
        is_int(hostfs_read_meminfo(root, "/m/node0", "HugePages_Total", &kib), 0, "count without unit");
        is_int(kib, 8, "HugePages_Total");
        is_int(hostfs_read_meminfo(root, "/m/proc", "MemTotal", &kib), 0, "/proc/meminfo style");
        is_int(kib, 32505856, "MemTotal of host");
        is_int(hostfs_read_meminfo(root, "/m/proc", "Free", &kib), -ENODATA,
               "key must match a whole name");
        is_int(hostfs_read_meminfo(root, "/m/proc", "Active", &kib), -ENODATA, "absent key");
        is_int(hostfs_read_meminfo(root, "/m/bad", "MemTotal", &kib), -EINVAL, "bad value");
        is_int(hostfs_read_meminfo(root, "/m/none", "MemTotal", &kib), -ENOENT, "missing file");
}

static void test_real_host(void) {
        uint64_t kib = 0;

        is_int(hostfs_read_meminfo("/", "/proc/meminfo", "MemTotal", &kib), 0, "host /proc/meminfo");
        ok(kib > 0, "host has memory");
}

int main(void) {
        _cleanup_free_ char *cmd = NULL;

        if (!mkdtemp(root))
                abort();
        test_path();
        test_read();
        test_read_u64();
        test_write();
        test_meminfo();
        test_real_host();
        cmd = xasprintf("rm -rf '%s'", root);
        if (system(cmd) != 0)
                ok(0, "cleanup of %s", root);
        return tap_done();
}
