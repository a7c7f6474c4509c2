#include "config.h"

#include <errno.h>
#include <string.h>

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

int main(void) {
        test_sizes();
        test_policy();
        return tap_done();
}
