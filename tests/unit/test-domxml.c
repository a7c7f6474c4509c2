#include "config.h"

#include <errno.h>

#include "kvmtune/util.h"          /* domxml.h needs size_t */
#include "kvmtune/domxml.h"
#include "kvmtune/hugepages.h"
#include "../../lib/domxml-priv.h"
#include "tap.h"
#include "test-data.h"

static int parse_fixture(const char *name, struct domxml **ret, char *err, size_t errlen) {
        size_t len;
        _cleanup_free_ char *rel = xasprintf("domxml/%s", name);
        _cleanup_free_ char *xml = test_read_fixture(rel, &len);

        err[0] = '\0';
        return domxml_parse(xml, len, ret, err, errlen);
}

static void test_running_full(void) {
        _cleanup_domxml_ struct domxml *d = NULL;
        char err[256];

        is_int(parse_fixture("running-tcg-full.xml", &d, err, sizeof(err)), 0, "full: parses (%s)", err);
        if (!d)
                return;
        is_str(d->name, "db1", "full: name");
        is_str(d->uuid, "4f2a9c1e-8b3d-4e6f-a1b2-c3d4e5f60718", "full: uuid");
        is_str(d->type, "qemu", "full: type");
        is_int(d->id, 7, "full: id");
        is_int(d->vcpus, 4, "full: current vCPUs, not the maximum");
        is_int(d->niothread, 2, "full: iothreads");
        ok(d->niothread == 2 && d->iothread_ids[0] == 1 && d->iothread_ids[1] == 2, "full: iothread ids 1..N");
        is_int(d->memory_kib, 4194304, "full: currentMemory wins over memory");
        is_int(d->page_kib, 1048576, "full: 1 GiB pages");
        ok(d->hugepages, "full: hugepages present");
}

static void test_running_policy(void) {
        _cleanup_domxml_ struct domxml *d = NULL;
        char err[256];

        if (parse_fixture("running-tcg-full.xml", &d, err, sizeof(err)) < 0)
                return (void) ok(0, "full: parses for policy (%s)", err);
        ok(d->has_policy, "full: policy found under prefix kt:");
        is_int(d->policy.cpu, POLICY_CPU_DEDICATED, "full: cpu=dedicated");
        is_int(d->policy.threads, POLICY_THREADS_ISOLATE, "full: threads=isolate");
        is_int(d->policy.emulator, POLICY_EMULATOR_ISOLATE, "full: emulator=isolate");
        is_int(d->policy.iothreads, POLICY_IOTHREADS_DEDICATED, "full: iothreads=dedicated");
        is_int(d->policy.numa, POLICY_NUMA_STRICT, "full: numa=strict");
        is_int(d->policy.page, POLICY_PAGE_1G, "full: hugepages=1G");
        is_int(d->policy.set, 0x3f, "full: all six keys set, unknown colour= ignored");
        is_int(d->policy.source, POLICY_SOURCE_METADATA, "full: source metadata");
        ok(d->placement && strncmp(d->placement, "<kvmtuned:placement", 19) == 0,
           "full: placement record kept raw: %s", d->placement ? d->placement : "(null)");
        ok(d->placement && strstr(d->placement, "xmlns:kvmtuned=\"urn:kvmtuned:placement:1\"") &&
           strstr(d->placement, "<kvmtuned:vcpu id=\"1\" cpus=\"6\"/>"), "full: placement record complete");
}

static void test_running_devices(void) {
        _cleanup_domxml_ struct domxml *d = NULL;
        char err[256];

        if (parse_fixture("running-tcg-full.xml", &d, err, sizeof(err)) < 0)
                return (void) ok(0, "full: parses for devices (%s)", err);
        is_int(d->npci, 2, "full: two PCI hostdevs, the USB one skipped");
        if (d->npci == 2) {
                is_str(d->pci[0], "0000:3b:00.0", "full: first PCI address");
                is_str(d->pci[1], "0001:af:1f.7", "full: second PCI address");
        }
        is_int(d->nvcpupin, 4, "full: vcpupins");
        if (d->nvcpupin == 4) {
                ok(d->vcpupin[0].id == 0 && streq(d->vcpupin[0].cpuset, "4"), "full: vcpupin 0");
                ok(d->vcpupin[3].id == 3 && streq(d->vcpupin[3].cpuset, "10,58"), "full: vcpupin 3");
        }
        is_str(d->emulatorpin, "2", "full: emulatorpin");
        is_int(d->niothreadpin, 2, "full: iothreadpins");
        if (d->niothreadpin == 2)
                ok(d->iothreadpin[1].id == 2 && streq(d->iothreadpin[1].cpuset, "3,51"), "full: iothreadpin 2");
        is_str(d->numatune_mode, "strict", "full: numatune mode");
        is_str(d->numatune_nodeset, "0", "full: numatune nodeset");
}

static void test_iothreadids(void) {
        _cleanup_domxml_ struct domxml *d = NULL;
        char err[256];

        is_int(parse_fixture("iothreadids.xml", &d, err, sizeof(err)), 0, "iothreadids: parses (%s)", err);
        if (!d)
                return;
        is_str(d->type, "kvm", "iothreadids: type kvm");
        is_int(d->id, 12, "iothreadids: id");
        is_int(d->vcpus, 2, "iothreadids: vcpus without current=");
        ok(d->niothread == 2 && d->iothread_ids[0] == 1 && d->iothread_ids[1] == 5, "iothreadids: ids 1 and 5");
        is_int(d->memory_kib, 1536 * 1024, "iothreadids: currentMemory in MiB");
        ok(d->hugepages, "iothreadids: <hugepages/> present");
        is_int(d->page_kib, 0, "iothreadids: <hugepages/> without a size: the host's default, left to the daemon");
        ok(d->has_policy, "iothreadids: policy in a default namespace");
        is_int(d->policy.set, POLICY_KEY_CPU | POLICY_KEY_NUMA, "iothreadids: only cpu and numa set");
        is_int(d->policy.numa, POLICY_NUMA_PREFERRED, "iothreadids: numa=preferred");
        ok(!d->placement, "iothreadids: no placement record");
}

static void test_inactive(void) {
        _cleanup_domxml_ struct domxml *d = NULL;
        char err[256];

        is_int(parse_fixture("inactive-minimal.xml", &d, err, sizeof(err)), 0, "inactive: parses (%s)", err);
        if (!d)
                return;
        is_int(d->id, -1, "inactive: id -1");
        is_int(d->vcpus, 1, "inactive: one vCPU");
        is_int(d->niothread, 0, "inactive: no iothreads");
        is_int(d->memory_kib, 512 * 1024, "inactive: <memory unit='MiB'>");
        is_int(d->page_kib, 0, "inactive: no hugepages");
        ok(!d->hugepages, "inactive: hugepages absent");
        ok(!d->has_policy && !d->placement, "inactive: no metadata");
        ok(d->npci == 0 && d->nvcpupin == 0 && d->niothreadpin == 0 && !d->emulatorpin, "inactive: no pins");
        ok(!d->numatune_mode && !d->numatune_nodeset, "inactive: no numatune");
}

static void check_broken(const char *name, const char *needle) {
        _cleanup_domxml_ struct domxml *d = NULL;
        char err[256];
        int r = parse_fixture(name, &d, err, sizeof(err));

        ok(r == -EINVAL && !d && strstr(err, needle), "%s: -EINVAL, \"%s\"", name, err);
}

static void test_broken(void) {
        check_broken("broken-truncated.xml", "not well-formed XML");
        check_broken("broken-not-domain.xml", "root element is <network>, not <domain>");
        check_broken("broken-no-name.xml", "no <name>");
        check_broken("broken-bad-policy.xml", "invalid value \"sometimes\" for attribute threads");
        check_broken("broken-bad-unit.xml", "unknown unit \"parsec\"");
        check_broken("broken-bad-hostdev.xml", "invalid hostdev PCI address");
        check_broken("broken-billion-laughs.xml", "");
        check_broken("broken-xxe.xml", "");
}

static void check_inline(const char *xml, const char *needle) {
        _cleanup_domxml_ struct domxml *d = NULL;
        char err[256] = "";
        int r = domxml_parse(xml, strlen(xml), &d, err, sizeof(err));

        ok(r == -EINVAL && strstr(err, needle), "inline error \"%s\" for %.60s", err, xml);
}

static void test_inline_errors(void) {
        _cleanup_domxml_ struct domxml *d = NULL;
        char err[64];

        is_int(domxml_parse(NULL, 0, &d, err, sizeof(err)), -EINVAL, "NULL input");
        is_int(domxml_parse("", 0, &d, err, sizeof(err)), -EINVAL, "empty input");
        is_int(domxml_parse("<domain>", 8, &d, NULL, 0), -EINVAL, "no error buffer is fine");
        check_inline("just text", "not well-formed");
        check_inline("<domain><name>  </name></domain>", "no <name>");
        check_inline("<x:domain xmlns:x='urn:other'><name>a</name></x:domain>", "in namespace urn:other");
        check_inline("<domain id='seven'><name>a</name></domain>", "invalid domain id");
        check_inline("<domain><name>a</name><uuid>1234</uuid></domain>", "invalid <uuid>");
        check_inline("<domain><name>a</name><vcpu current='9'>8</vcpu></domain>", "current=");
        check_inline("<domain><name>a</name><vcpu>-1</vcpu></domain>", "<vcpu> count");
        check_inline("<domain><name>a</name><iothreads>x</iothreads></domain>", "<iothreads>");
        check_inline("<domain><name>a</name><iothreadids><iothread/></iothreadids></domain>", "iothread id");
        check_inline("<domain><name>a</name><cputune><vcpupin vcpu='0'/></cputune></domain>", "no cpuset");
        check_inline("<domain><name>a</name><cputune><iothreadpin cpuset='1'/></cputune></domain>",
                     "iothreadpin");
        check_inline("<domain><name>a</name><memoryBacking><hugepages><page size='0'/></hugepages>"
                     "</memoryBacking></domain>", "hugepage size");
}

static void test_size_cap(void) {
        _cleanup_domxml_ struct domxml *d = NULL;
        size_t len = 4 * 1024 * 1024 + 1;
        _cleanup_free_ char *xml = xmalloc(len + 1);
        char err[128] = "";
        const char *head = "<domain><name>big</name><description>";

        memset(xml, 'x', len);
        memcpy(xml, head, strlen(head));
        xml[len] = '\0';
        is_int(domxml_parse(xml, len, &d, err, sizeof(err)), -EINVAL, "over 4 MiB refused");
        ok(strstr(err, "too large") != NULL, "size error says so: %s", err);
}

static long long memory_with_unit(const char *unit, const char *value) {
        _cleanup_domxml_ struct domxml *d = NULL;
        _cleanup_free_ char *xml = unit ?
                xasprintf("<domain><name>m</name><memory unit='%s'>%s</memory></domain>", unit, value) :
                xasprintf("<domain><name>m</name><memory>%s</memory></domain>", value);
        char err[128];

        if (domxml_parse(xml, strlen(xml), &d, err, sizeof(err)) < 0)
                return -1;
        return (long long) d->memory_kib;
}

static void test_units(void) {
        is_int(memory_with_unit(NULL, "1024"), 1024, "no unit: KiB");
        is_int(memory_with_unit("b", "2048"), 2, "b");
        is_int(memory_with_unit("bytes", "1"), 1, "bytes round up to 1 KiB");
        is_int(memory_with_unit("k", "4"), 4, "k");
        is_int(memory_with_unit("KiB", "4"), 4, "KiB");
        is_int(memory_with_unit("KB", "1024"), 1000, "KB is 1000 bytes");
        is_int(memory_with_unit("M", "2"), 2048, "M");
        is_int(memory_with_unit("MiB", "3"), 3072, "MiB");
        is_int(memory_with_unit("MB", "1"), 977, "MB rounds up");
        is_int(memory_with_unit("G", "1"), 1048576, "G");
        is_int(memory_with_unit("GiB", "16"), 16777216, "GiB");
        is_int(memory_with_unit("gb", "1"), 976563, "gb, case-insensitive");
        is_int(memory_with_unit("T", "1"), 1073741824LL, "T");
        is_int(memory_with_unit("TiB", "2"), 2147483648LL, "TiB");
        is_int(memory_with_unit("E", "16"), -1, "16 EiB overflows");
        is_int(memory_with_unit("KiB", "-5"), -1, "negative size refused");
        is_int(memory_with_unit("KiB", "12x"), -1, "trailing junk refused");
        is_int(memory_with_unit("Kilo", "1"), -1, "unknown unit refused");
}

static long long page_with_unit(const char *size, const char *unit) {
        _cleanup_domxml_ struct domxml *d = NULL;
        _cleanup_free_ char *xml = xasprintf("<domain><name>p</name><memoryBacking><hugepages>"
                                             "<page size='%s'%s%s%s/></hugepages></memoryBacking></domain>",
                                             size, unit ? " unit='" : "", unit ? unit : "", unit ? "'" : "");
        char err[128];

        if (domxml_parse(xml, strlen(xml), &d, err, sizeof(err)) < 0)
                return -1;
        return (long long) d->page_kib;
}

/* Every spelling of a page size lands in the right pool: the size read from
 * <page>, and the policy that size gives (never 1G counted as 2M). */
static void test_page_sizes(void) {
        static const struct { const char *size, *unit; long long kib; enum policy_page page; } cases[] = {
                { "1", "G", 1048576, POLICY_PAGE_1G },
                { "1", "GiB", 1048576, POLICY_PAGE_1G },
                { "1048576", NULL, 1048576, POLICY_PAGE_1G },
                { "1048576", "KiB", 1048576, POLICY_PAGE_1G },
                { "1073741824", "b", 1048576, POLICY_PAGE_1G },
                { "2", "M", 2048, POLICY_PAGE_2M },
                { "2", "MiB", 2048, POLICY_PAGE_2M },
                { "2048", "k", 2048, POLICY_PAGE_2M },
                { "4", "KiB", 4, POLICY_PAGE_NONE },
                { "1", "GB", 976563, POLICY_PAGE_NONE },
                { "16", "G", 16777216, POLICY_PAGE_NONE },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                long long kib = page_with_unit(cases[i].size, cases[i].unit);
                is_int(kib, cases[i].kib, "<page size='%s' unit='%s'/> is %lld KiB", cases[i].size,
                       cases[i].unit ? cases[i].unit : "", cases[i].kib);
                is_str(policy_page_to_string(policy_page_of_kib((unsigned long) kib)),
                       policy_page_to_string(cases[i].page), "... counted as %s",
                       policy_page_to_string(cases[i].page));
        }
        is_int(policy_page_from_string("1GiB"), POLICY_PAGE_1G, "hugepages=\"1GiB\" is 1G");
        is_int(policy_page_from_string("1Gi"), POLICY_PAGE_1G, "hugepages=\"1Gi\" is 1G");
        is_int(policy_page_from_string("1gib"), POLICY_PAGE_1G, "hugepages=\"1gib\" is 1G");
        is_int(policy_page_from_string("2MiB"), POLICY_PAGE_2M, "hugepages=\"2MiB\" is 2M");
        is_int(policy_page_from_string("2Mi"), POLICY_PAGE_2M, "hugepages=\"2Mi\" is 2M");
        is_int(policy_page_from_string("1GB"), -EINVAL, "hugepages=\"1GB\" (10^9 bytes) is no page size");
        is_int(hugepages_size_from_string("1GiB"), TOPO_PAGE_1G, "hugepages reserve 1GiB is the 1G pool");
        is_int(hugepages_size_from_string("1Gi"), TOPO_PAGE_1G, "hugepages reserve 1Gi is the 1G pool");
}

static void test_parse_policy(void) {
        struct policy p;
        char err[128] = "";

        is_int(domxml_parse_policy("<kvmtune:policy xmlns:kvmtune=\"urn:kvmtuned:tuning:1\" cpu=\"dedicated\" "
                                   "emulator=\"vcpus\" future=\"yes\"/>", &p, err, sizeof(err)), 0,
               "parse_policy: prefixed element (%s)", err);
        ok(p.cpu == POLICY_CPU_DEDICATED && p.emulator == POLICY_EMULATOR_VCPUS, "parse_policy: values");
        is_int(p.set, POLICY_KEY_CPU | POLICY_KEY_EMULATOR, "parse_policy: set bits, unknown ignored");
        is_int(p.source, POLICY_SOURCE_METADATA, "parse_policy: source metadata");
        is_int(domxml_parse_policy("<policy cpu='none' hugepages='2M'/>", &p, err, sizeof(err)), 0,
               "parse_policy: bare element");
        ok(p.cpu == POLICY_CPU_NONE && p.page == POLICY_PAGE_2M, "parse_policy: bare values");
        is_int(domxml_parse_policy("<policy xmlns='urn:other' cpu='none'/>", &p, err, sizeof(err)), -EINVAL,
               "parse_policy: wrong namespace");
        is_int(domxml_parse_policy("<tuning cpu='none'/>", &p, err, sizeof(err)), -EINVAL,
               "parse_policy: wrong element");
        is_int(domxml_parse_policy("<policy numa='loose'/>", &p, err, sizeof(err)), -EINVAL,
               "parse_policy: bad value");
        is_str(err, "policy: invalid value \"loose\" for attribute numa", "parse_policy: message");
        is_int(domxml_parse_policy("<policy", &p, err, sizeof(err)), -EINVAL, "parse_policy: not XML");
        is_int(domxml_parse_policy(NULL, &p, err, sizeof(err)), -EINVAL, "parse_policy: NULL");
}

static void test_format_policy(void) {
        struct policy p, back;
        _cleanup_free_ char *empty = NULL, *s = NULL;
        char err[128] = "";

        policy_init_default(&p);
        empty = domxml_format_policy(&p);
        is_str(empty, "<policy/>", "format: nothing set");
        policy_set(&p, "cpu", "dedicated");
        policy_set(&p, "threads", "require");
        policy_set(&p, "hugepages", "1G");
        s = domxml_format_policy(&p);
        is_str(s, "<policy cpu=\"dedicated\" threads=\"require\" hugepages=\"1G\"/>", "format: set keys in order");
        is_int(domxml_parse_policy(s, &back, err, sizeof(err)), 0, "format: parses back");
        ok(back.cpu == p.cpu && back.threads == p.threads && back.page == p.page && back.set == p.set,
           "format: round trip");
}

int main(void) {
        test_running_full();
        test_running_policy();
        test_running_devices();
        test_iothreadids();
        test_inactive();
        test_broken();
        test_inline_errors();
        test_size_cap();
        test_units();
        test_page_sizes();
        test_parse_policy();
        test_format_policy();
        return tap_done();
}
