#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kvmtune/policy.h"
#include "kvmtune/util.h"
#include "tap.h"

static void test_sizes(void) {
        unsigned long long k = 0;
        char buf[32];

        ok(parse_size_kib("16G", &k) == 0 && k == 16ULL << 20, "16G is 16 GiB");
        ok(parse_size_kib("2MiB", &k) == 0 && k == 2048, "2MiB is 2048 KiB");
        ok(parse_size_kib("4096", &k) == 0 && k == 4, "plain number is bytes");
        ok(parse_size_kib("1k", &k) == 0 && k == 1, "1k");
        ok(parse_size_kib("12X", &k) == -EINVAL, "unknown unit refused");
        ok(parse_size_kib("-1G", &k) == -EINVAL, "negative refused");
        ok(parse_size_kib("", &k) == -EINVAL, "empty refused");
        ok(parse_size_kib("99999999999999T", &k) == -EINVAL, "overflow refused");
        is_str(format_size_kib(1048576, buf, sizeof buf), "1G", "1 GiB formats as 1G");
        is_str(format_size_kib(2048, buf, sizeof buf), "2M", "2 MiB formats as 2M");
        is_str(format_size_kib(1536, buf, sizeof buf), "1536k", "1.5 MiB stays in KiB");
}

static void test_policy(void) {
        struct policy p, over = { 0 };

        policy_init_default(&p);
        is_str(policy_cpu_to_string(p.cpu), "shared", "default cpu is shared");
        ok(policy_set(&over, "cpu", "dedicated") == 0, "set cpu=dedicated");
        ok(policy_set(&over, "threads", "isolate") == 0, "set threads=isolate");
        ok(policy_set(&over, "hugepages", "1G") == 0, "set hugepages=1G");
        ok(policy_set(&over, "cpu", "fast") == -EINVAL, "bad value refused");
        ok(policy_set(&over, "colour", "red") == -ENOENT, "unknown key refused");
        over.source = POLICY_SOURCE_METADATA;
        policy_merge(&p, &over);
        ok(p.cpu == POLICY_CPU_DEDICATED && p.threads == POLICY_THREADS_ISOLATE, "merge takes set keys");
        ok(p.emulator == POLICY_EMULATOR_SHARE, "merge keeps unset keys");
        ok(p.source == POLICY_SOURCE_METADATA, "merge takes the source");
        is_int(policy_page_kib(p.page), 1048576, "1G page is 1 GiB");
        is_int(policy_page_from_string("2Mi"), POLICY_PAGE_2M, "Kubernetes spelling 2Mi");
        is_int(p.placement, POLICY_PLACEMENT_BEST_EFFORT, "default placement is best-effort");
        ok(policy_set(&over, "placement", "strict") == 0, "set placement=strict");
        ok(policy_set(&over, "placement", "maybe") == -EINVAL, "bad placement value refused");
        policy_merge(&p, &over);
        is_str(policy_placement_to_string(p.placement), "strict", "merge takes placement");
}

/* The one checked number parser: what atoi/strtoul would let through is refused. */
static void test_numbers(void) {
        uint64_t u = 7;
        const char *end = NULL;
        int i = 7;

        ok(safe_atou64("512\n", &u) == 0 && u == 512, "u64: trailing newline allowed");
        ok(safe_atou64("18446744073709551615", &u) == 0 && u == UINT64_MAX, "u64: the largest");
        is_int(safe_atou64("18446744073709551616", &u), -ERANGE, "u64: overflow");
        is_int(safe_atou64("-1", &u), -EINVAL, "u64: a sign");
        is_int(safe_atou64(" 7", &u), -EINVAL, "u64: a leading blank");
        is_int(safe_atou64("12x", &u), -EINVAL, "u64: trailing garbage");
        is_int(safe_atou64("", &u), -EINVAL, "u64: empty");
        is_int(safe_atou64(NULL, &u), -EINVAL, "u64: NULL");
        ok(u == UINT64_MAX, "u64: untouched on failure");
        ok(safe_atou64_prefix("64 kB", &u, &end) == 0 && u == 64 && streq(end, " kB"), "u64 prefix: stops at the unit");
        ok(safe_atox64("1f", &u) == 0 && u == 0x1f, "hex: digits");
        ok(safe_atox64("0X00aB", &u) == 0 && u == 0xab, "hex: an 0X prefix, either case");
        ok(safe_atox64("ffffffffffffffff", &u) == 0 && u == UINT64_MAX, "hex: the largest");
        is_int(safe_atox64("10000000000000000", &u), -ERANGE, "hex: overflow");
        is_int(safe_atox64("0x", &u), -EINVAL, "hex: a prefix without digits");
        is_int(safe_atox64("0x0x1", &u), -EINVAL, "hex: a second prefix");
        is_int(safe_atox64("1g", &u), -EINVAL, "hex: trailing garbage");
        is_int(safe_atox64("-1", &u), -EINVAL, "hex: a sign");
        is_int(safe_atou64("0x10", &u), -EINVAL, "u64: no hex prefix");
        ok(u == UINT64_MAX, "hex: untouched on failure");
        ok(safe_atoi("-3", -5, 5, &i) == 0 && i == -3, "int: negative in range");
        is_int(safe_atoi("6", -5, 5, &i), -ERANGE, "int: above max");
        is_int(safe_atoi("-2147483649", INT32_MIN, INT32_MAX, &i), -ERANGE, "int: below INT_MIN");
        ok(safe_atoi("-2147483648", INT32_MIN, INT32_MAX, &i) == 0 && i == INT32_MIN, "int: INT_MIN");
        is_int(safe_atoi("4 ", 0, 9, &i), -EINVAL, "int: no trailing blank");
        is_int(safe_atoi("+4", 0, 9, &i), -EINVAL, "int: no plus sign");
        is_int(i, INT32_MIN, "int: untouched on failure");
}

static void test_strbuf(void) {
        struct strbuf b = {};

        strbuf_add(&b, "%s", "");
        is_str(b.s, "", "strbuf: an empty piece");
        strbuf_add(&b, "vcpus=\"%d:%s\"", 0, "1-2");
        strbuf_add(&b, " %s", "x");
        is_str(b.s, "vcpus=\"0:1-2\" x", "strbuf: pieces appended");
        is_int((int)b.len, (int)strlen(b.s), "strbuf: length kept");
        free(b.s);
        {
                static const int v[] = { 4, 5, 6, 7, 52, 9, 10, 3 };
                _cleanup_free_ char *runs = format_runs(v, ELEMENTSOF(v)), *none = format_runs(v, 0);

                is_str(runs, "4-7,52,9-10,3", "runs: ascending runs compressed, order kept");
                is_str(none, "", "runs: none");
        }
}

static void test_policy_text(void) {
        struct policy p, q;
        char *s;

        policy_init_default(&p);
        policy_set(&p, "cpu", "dedicated");
        policy_set(&p, "placement", "strict");
        s = policy_format_line(&p);
        is_str(s, "cpu=dedicated threads=prefer emulator=share iothreads=shared numa=preferred hugepages=none "
               "placement=strict", "policy line: every key");
        ok(policy_parse_line(s, &q) == 0 && policy_equal(&p, &q), "policy line: parses back to an equal policy");
        free(s);
        q.source = POLICY_SOURCE_CONFIG;
        ok(policy_equal(&p, &q), "policy_equal: where a key came from does not count");
        policy_set(&q, "placement", "best-effort");
        ok(!policy_equal(&p, &q), "policy_equal: the placement key counts");
        is_int(policy_parse_line("cpu=dedicated gpu=yes", &q), -ENOENT, "policy line: an unknown key");
        is_int(policy_parse_line("cpu", &q), -EINVAL, "policy line: not key=value");
        ok(policy_parse_line("", &q) == 0 && q.cpu == POLICY_CPU_SHARED, "policy line: empty is the defaults");
        is_int(policy_page_of_kib(2048), POLICY_PAGE_2M, "page from kib: 2048 is 2M");
        is_int(policy_page_of_kib(4), POLICY_PAGE_NONE, "page from kib: base pages are none");
        is_int((int)policy_page_kib(POLICY_PAGE_NONE), 0, "page kib: none is 0 (base pages)");
}

/* A pipe holding text, its write end closed: what read_fd_all() gets from the hook's stdin. */
static int pipe_of(const char *text, size_t len) {
        int p[2];

        if (pipe(p) < 0 || write(p[1], text, len) != (ssize_t)len)
                abort();
        close(p[1]);
        return p[0];
}

static void test_read_fd_all(void) {
        _cleanup_free_ char *big = xmalloc(5000), *got = NULL, *none = NULL;
        _cleanup_close_ int fd = pipe_of("abc\n", 4), fd2 = -1;

        is_int(read_fd_all(fd, 4096, &got), 4, "read_fd_all: the length until EOF");
        is_str(got, "abc\n", "... the text, NUL-terminated");
        memset(big, 'x', 5000);
        fd2 = pipe_of(big, 5000);
        is_int(read_fd_all(fd2, 4096, &none), -EFBIG, "read_fd_all: more than max is -EFBIG");
        ok(!none, "... and nothing is returned");
        is_int(read_fd_all(-1, 4096, &none), -EBADF, "read_fd_all: read()'s errno");
}

int main(void) {
        test_sizes();
        test_policy();
        test_numbers();
        test_strbuf();
        test_policy_text();
        test_read_fd_all();
        return tap_done();
}
