#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <string.h>
#include <sys/stat.h>

#include "kvmtune/conf.h"
#include "kvmtune/isolate.h"
#include "kvmtune/util.h"
#include "../../lib/conf-priv.h"
#include "tap.h"
#include "test-data.h"

#define KNOWN_POLICY "(known: cpu, threads, emulator, iothreads, numa, hugepages, placement)"
#define KNOWN_SECTIONS "(known: libvirt, host, defaults, domain \"GLOB\", hugepages, daemon)"

static char tmpdir[] = "/tmp/test-conf.XXXXXX";

static char *fixture(const char *rel) {
        return xasprintf("%s/conf/%s", test_fixtures_dir(), rel);
}

static struct conf *load_string(const char *text, const char *what) {
        struct conf *c = NULL;
        char err[1024] = "";
        int r = conf_load_string("t.conf", text, &c, err, sizeof err);

        if (!ok(r == 0 && c, "parses: %s", what))
                printf("#   r=%d err=%s\n", r, err);
        return c;
}

/* Loads as the daemon does at the default path: a missing main file is fine. */
static struct conf *load_file(const char *path, const char *what) {
        struct conf *c = NULL;
        char err[1024] = "";
        int r = conf_load(path, true, &c, err, sizeof err);

        if (!ok(r == 0 && c, "loads: %s", what))
                printf("#   r=%d err=%s\n", r, err);
        return c;
}

/* The error text must be exact, and *ret untouched. */
static void check_error(const char *text, const char *expected) {
        struct conf *sentinel = (struct conf *)&sentinel, *c = sentinel;
        char err[1024] = "";
        int r = conf_load_string("t.conf", text, &c, err, sizeof err);

        ok(r < 0 && c == sentinel, "refused: %s", expected);
        is_str(err, expected, "message: %s", expected);
}

/* Loads as the daemon does for a --config file: it must be there. */
static void check_file_error(const char *path, int expected_r, const char *expected) {
        struct conf *sentinel = (struct conf *)&sentinel, *c = sentinel;
        char err[1024] = "";
        int r = conf_load(path, false, &c, err, sizeof err);

        is_int(r, expected_r, "file refused with %d: %s", expected_r, path);
        ok(c == sentinel, "ret untouched on error");
        is_str(err, expected, "message for %s", path);
}

static void check_value(const char *section, const char *key, const char *value, bool valid) {
        _cleanup_free_ char *text = xasprintf("[%s]\n%s = %s\n", section, key, value);
        struct conf *c = NULL;
        char err[1024] = "";
        int r = conf_load_string("t.conf", text, &c, err, sizeof err);

        if (!ok((r == 0) == valid, "[%s] %s = \"%s\" is %s", section, key, value, valid ? "valid" : "refused"))
                printf("#   r=%d err=%s\n", r, err);
        if (!valid)
                ok(strncmp(err, "t.conf:2: bad value \"", 21) == 0, "bad value reported on line 2: %s", err);
        conf_free(c);
}

static void test_empty(void) {
        struct conf *c = load_string("", "empty text");
        hwloc_bitmap_t set = (hwloc_bitmap_t)1;

        if (!c)
                return;
        is_str(c->uri, "qemu:///system", "default uri");
        ok(c->reserved_cpus == NULL, "reserved_cpus unset");
        ok(conf_reserved_cpus(c, &set) == 0 && set == NULL, "unset reserved_cpus gives NULL bitmap");
        is_int(c->ndomain, 0, "no domain sections");
        is_int(c->hook_timeout_ms, 2000, "default hook_timeout");
        ok(c->persist_placement, "persist_placement defaults to yes");
        is_int(c->isolation, ISOLATE_ALL, "isolation defaults to yes (everything)");
        is_str(c->isolation_scope, "/", "isolation_scope defaults to the whole host");
        ok(!c->hugepages[TOPO_PAGE_1G].set && !c->hugepages[TOPO_PAGE_2M].set, "no hugepages");
        is_int(c->defaults.set, 0, "no default keys set");
        is_str(policy_cpu_to_string(c->defaults.cpu), "shared", "built-in cpu default");
        is_str(policy_numa_to_string(c->defaults.numa), "preferred", "built-in numa default");
        conf_free(c);
}

static void test_no_file(void) {
        _cleanup_free_ char *path = xasprintf("%s/missing/kvmtuned.conf", tmpdir);
        struct conf *c = load_file(path, "no file and no drop-in folder");

        if (!c)
                return;
        is_str(c->uri, "qemu:///system", "no file: default uri");
        is_int(c->ndomain, 0, "no file: no domains");
        is_int(c->hook_timeout_ms, 2000, "no file: default hook_timeout");
        conf_free(c);
}

/* A --config file that is not there (or went away before a reload) is an
 * error, drop-ins or not: never the built-in defaults. */
/* A [domain] pattern seen before in the same file reopens that section, as
 * kvmtuned.conf(5) says (a plain section twice is an error, see check_error). */
static void test_domain_reopened(void) {
        struct conf *c = load_string("[domain \"a\"]\ncpu = dedicated\n[domain \"b\"]\ncpu = shared\n"
                              "[domain \"a\"]\nthreads = isolate\n", "a [domain] pattern twice in one file");

        if (!c)
                return;
        is_int(c->ndomain, 2, "reopened, not appended");
        ok(c->domains[0].policy.cpu == POLICY_CPU_DEDICATED && c->domains[0].policy.threads == POLICY_THREADS_ISOLATE,
           "both parts of [domain \"a\"] kept");
        conf_free(c);
}

static void test_named_file_missing(void) {
        _cleanup_free_ char *path = xasprintf("%s/missing/kvmtuned.conf", tmpdir);
        _cleanup_free_ char *dropins = fixture("only-dropins/kvmtuned.conf");
        _cleanup_free_ char *msg = xasprintf("%s: cannot read: No such file or directory", path);
        _cleanup_free_ char *msg2 = xasprintf("%s: cannot read: No such file or directory", dropins);

        check_file_error(path, -ENOENT, msg);
        check_file_error(dropins, -ENOENT, msg2);
}

static void test_full_policy(const struct conf *c) {
        const struct policy *d = &c->defaults, *db = &c->domains[0].policy;

        is_str(policy_threads_to_string(d->threads), "isolate", "[defaults] threads");
        is_str(policy_iothreads_to_string(d->iothreads), "emulator", "[defaults] iothreads");
        is_str(policy_numa_to_string(d->numa), "strict", "[defaults] numa");
        is_str(policy_page_to_string(d->page), "2M", "[defaults] hugepages");
        is_int(d->set, 0x3f, "[defaults] all six keys set");
        is_int(d->source, POLICY_SOURCE_DEFAULTS, "[defaults] source");
        is_str(c->domains[0].pattern, "db-*", "first domain pattern");
        is_str(policy_cpu_to_string(db->cpu), "dedicated", "db-* cpu");
        is_str(policy_threads_to_string(db->threads), "require", "db-* threads");
        is_str(policy_emulator_to_string(db->emulator), "isolate", "db-* emulator");
        is_str(policy_page_to_string(db->page), "1G", "db-* hugepages");
        is_int(db->source, POLICY_SOURCE_CONFIG, "domain source is config");
        is_str(c->domains[1].pattern, "db-[0-9]*", "character class pattern with ']' and '#' comment");
        is_int(c->domains[2].policy.set, POLICY_KEY_CPU, "batch? sets only cpu");
}

static void test_full_hugepages(const struct conf *c) {
        const struct conf_hugepages *g = &c->hugepages[TOPO_PAGE_1G], *m = &c->hugepages[TOPO_PAGE_2M];

        ok(g->set && g->per_node, "1G per node");
        is_int(g->nnode, 2, "1G two nodes");
        ok(g->node_os[0] == 0 && g->count[0] == 16, "1G node 0: 16");
        ok(g->node_os[1] == 1 && g->count[1] == 8, "1G node 1: 8");
        is_int(g->total, 24, "1G per-node total is the sum");
        ok(m->set && !m->per_node && m->total == 1024 && m->nnode == 0, "2M plain total 1024");
}

static void test_full(void) {
        _cleanup_free_ char *path = fixture("full.conf");
        struct conf *c = load_file(path, "full.conf");
        hwloc_bitmap_t set = NULL;
        char *s = NULL;

        if (!c)
                return;
        is_str(c->uri, "qemu+ssh://root@host/system?keyfile=/k#frag", "uri keeps a '#' not after a space");
        is_str(c->reserved_cpus, "0-1, 8", "reserved_cpus as written, comment stripped");
        ok(conf_reserved_cpus(c, &set) == 0 && set, "reserved_cpus bitmap");
        if (set) {
                hwloc_bitmap_list_asprintf(&s, set);
                is_str(s, "0-1,8", "reserved_cpus 0-1,8");
                free(s);
                hwloc_bitmap_free(set);
        }
        is_int(c->ndomain, 3, "three domain sections");
        if (c->ndomain == 3)
                test_full_policy(c);
        test_full_hugepages(c);
        is_int(c->hook_timeout_ms, 5000, "hook_timeout 5000");
        is_int(c->isolation, ISOLATE_TASKS | ISOLATE_GUESTS, "isolation = tasks, guests");
        is_str(c->isolation_scope, "/kvmtuned-test", "isolation_scope");
        conf_free(c);
}

static void test_syntax(void) {
        struct conf *c = load_string("  ; leading comment\r\n"
                        "\t[ defaults ]\t# header comment\r\n"
                        "cpu=dedicated\r\n"
                        "   threads\t =\t isolate   ; trailing\r\n"
                        "\r\n"
                        "emulator = VCPUS\r\n"
                        "[daemon]\n"
                        "hook_timeout = 100", "CRLF, tabs, no spaces, case-insensitive value, no final newline");
        if (!c)
                return;
        ok(c->defaults.cpu == POLICY_CPU_DEDICATED && c->defaults.threads == POLICY_THREADS_ISOLATE,
           "keys parsed around odd whitespace");
        is_int(c->defaults.emulator, POLICY_EMULATOR_VCPUS, "value matched case-insensitively");
        is_int(c->hook_timeout_ms, 100, "last line without newline");
        conf_free(c);
}

static void test_line_length(void) {
        _cleanup_free_ char *longest = xmalloc(CONF_LINE_MAX + 64);
        _cleanup_free_ char *too_long = NULL;
        struct conf *c;

        memset(longest, '#', CONF_LINE_MAX);
        strcpy(longest + CONF_LINE_MAX, "\n[defaults]\n");
        c = load_string(longest, "a line of exactly 4096 bytes");
        conf_free(c);
        too_long = xasprintf("[defaults]\n#%s", longest);
        check_error(too_long, "t.conf:2: line too long (max 4096 bytes)");
}

static void test_file_size(void) {
        _cleanup_free_ char *big = xmalloc(CONF_FILE_MAX + 2);
        struct conf *c;

        memset(big, '\n', CONF_FILE_MAX);
        big[CONF_FILE_MAX] = '\0';
        c = load_string(big, "exactly 1 MiB of blank lines");
        conf_free(c);
        big[CONF_FILE_MAX] = '\n';
        big[CONF_FILE_MAX + 1] = '\0';
        c = NULL;
        ok(conf_load_string("t.conf", big, &c, NULL, 0) == -EFBIG && !c, "1 MiB + 1 refused, NULL err ok");
        check_error(big, "t.conf: file too large (max 1048576 bytes)");
}

static void test_long_text(void) {
        char value[201], expected[512];
        _cleanup_free_ char *text = NULL;

        memset(value, 'x', 200);
        value[200] = '\0';
        text = xasprintf("[defaults]\ncpu = %s\n", value);
        snprintf(expected, sizeof expected, "t.conf:2: bad value \"%.80s...\" for cpu in [defaults] "
                 "(allowed: dedicated, shared, none)", value);
        check_error(text, expected);
}

static void test_errors(void) {
        check_error("[hosts]\n", "t.conf:1: unknown section [hosts] " KNOWN_SECTIONS);
        check_error("\n[defaults]\ncpus = dedicated\n",
                    "t.conf:3: unknown key \"cpus\" in [defaults] " KNOWN_POLICY);
        check_error("[domain \"db-*\"]\npage = 1G\n",
                    "t.conf:2: unknown key \"page\" in [domain \"db-*\"] " KNOWN_POLICY);
        check_error("[libvirt]\nurl = x\n",
                    "t.conf:2: unknown key \"url\" in [libvirt] (known: uri)");
        check_error("[hugepages]\n1g = 2\n",
                    "t.conf:2: unknown key \"1g\" in [hugepages] (known: 1G, 2M)");
        check_error("[domain \"db-*\"]\ncpu = dedicated\nthreads = isolate\ncpu = shared\n",
                    "t.conf:4: duplicate key \"cpu\" in [domain \"db-*\"] (first set on line 2)");
        check_error("[defaults]\ncpu = fast\n",
                    "t.conf:2: bad value \"fast\" for cpu in [defaults] (allowed: dedicated, shared, none)");
        check_error("[defaults]\nhugepages = 4k\n",
                    "t.conf:2: bad value \"4k\" for hugepages in [defaults] (allowed: 1G, 2M, none)");
        check_error("# comment\ncpu = dedicated\n",
                    "t.conf:2: key \"cpu\" outside of any section (start one with [NAME])");
        check_error("[defaults]\ncpu dedicated\n",
                    "t.conf:2: expected \"key = value\", a [section] header or a comment");
        check_error("[defaults]\n = dedicated\n", "t.conf:2: missing key before \"=\"");
        check_error("[host]\nreserved_cpus = 1\n[defaults]\ncpu = shared\n[host]\nreserved_cpus = 2\n",
                    "t.conf:5: section [host] appears twice in this file (first on line 1); put its keys in one section");
        check_error("[daemon]\n[daemon]\n",
                    "t.conf:2: section [daemon] appears twice in this file (first on line 1); put its keys in one section");
        check_error("[defaults\ncpu = shared\n",
                    "t.conf:1: unterminated section header (expected [NAME] or [domain \"GLOB\"])");
        check_error("[domain \"db-*]\n",
                    "t.conf:1: unterminated pattern in section header (expected [domain \"GLOB\"])");
        check_error("[domain db]\n",
                    "t.conf:1: malformed section header (expected [NAME] or [domain \"GLOB\"])");
        check_error("[defaults] cpu = shared\n",
                    "t.conf:1: unexpected text after section header: \"cpu = shared\"");
        check_error("[domain]\n", "t.conf:1: section [domain] needs a pattern, e.g. [domain \"db-*\"]");
        check_error("[defaults \"x\"]\n", "t.conf:1: section [defaults] takes no pattern");
        check_error("[domain \"\"]\n", "t.conf:1: empty pattern in [domain \"\"]");
        check_error("[libvirt]\nuri =   # nothing\n",
                    "t.conf:2: bad value \"\" for uri in [libvirt] (allowed: a libvirt connection URI such as qemu:///system)");
        check_error("[daemon]\nhook_timeout = 99\n",
                    "t.conf:2: bad value \"99\" for hook_timeout in [daemon] (allowed: milliseconds from 100 to 30000)");
        check_error("[host]\nreserved_cpus = 3a\n",
                    "t.conf:2: bad value \"3a\" for reserved_cpus in [host] (allowed: a CPU list such as 0,1 or 0-3,8; empty for none)");
        check_error("[hugepages]\n2M = 0:1 0:2\n",
                    "t.conf:2: bad value \"0:1 0:2\" for 2M in [hugepages] (allowed: a page count, or NODE:COUNT pairs such as \"0:512 1:512\")");
}

static void test_values(void) {
        static const struct { const char *section, *key, *value; bool valid; } cases[] = {
                { "host", "reserved_cpus", "", true },
                { "host", "reserved_cpus", "0", true },
                { "host", "reserved_cpus", "0-3,8", true },
                { "host", "reserved_cpus", " 0 - 3 , 8 ", true },
                { "host", "reserved_cpus", "65535", true },
                { "host", "reserved_cpus", "65536", false },
                { "host", "reserved_cpus", "-1", false },
                { "host", "reserved_cpus", "3-1", false },
                { "host", "reserved_cpus", "0-", false },
                { "host", "reserved_cpus", "0,,1", false },
                { "host", "reserved_cpus", "1,", false },
                { "host", "reserved_cpus", "0 1", false },
                { "host", "reserved_cpus", "0x3", false },
                { "host", "reserved_cpus", "all", false },
                { "host", "isolation", "yes", true },
                { "host", "isolation", "no", true },
                { "host", "isolation", "tasks, guests", true },
                { "host", "isolation", "irqs workqueues", true },
                { "host", "isolation", "tasks,cpus", false },
                { "host", "isolation", "", false },
                { "host", "isolation_scope", "/", true },
                { "host", "isolation_scope", "/kvmtuned-test", true },
                { "host", "isolation_scope", "/system.slice/x.service", true },
                { "host", "isolation_scope", "kvmtuned-test", false },
                { "host", "isolation_scope", "/a/../b", false },
                { "host", "isolation_scope", "/a/..", false },
                { "host", "isolation_scope", "", false },
                { "hugepages", "1G", "0", true },
                { "hugepages", "1G", "0:0", true },
                { "hugepages", "1G", "0:16,1:16", true },
                { "hugepages", "1G", "1023:1", true },
                { "hugepages", "1G", "1024:1", false },
                { "hugepages", "1G", "4294967295", true },
                { "hugepages", "1G", "4294967296", false },
                { "hugepages", "1G", "", false },
                { "hugepages", "1G", "16 0:4", false },
                { "hugepages", "1G", "0:", false },
                { "hugepages", "1G", ":4", false },
                { "hugepages", "1G", "0:4:4", false },
                { "hugepages", "1G", "-1", false },
                { "hugepages", "1G", "16G", false },
                { "hugepages", "2M", ",", false },
                { "daemon", "hook_timeout", "100", true },
                { "daemon", "hook_timeout", "30000", true },
                { "daemon", "hook_timeout", "30001", false },
                { "daemon", "hook_timeout", "2s", false },
                { "daemon", "hook_timeout", "+500", false },
                { "daemon", "hook_timeout", "", false },
                { "daemon", "persist_placement", "no", true },
                { "daemon", "persist_placement", "Yes", true },
                { "daemon", "persist_placement", "off", true },
                { "daemon", "persist_placement", "maybe", false },
                { "daemon", "persist_placement", "", false },
                { "defaults", "numa", "none", true },
                { "defaults", "iothreads", "emulator", true },
                { "defaults", "threads", "share", false },
                { "domain \"x\"", "emulator", "vcpus", true },
                { "domain \"x\"", "cpu", "", false },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                check_value(cases[i].section, cases[i].key, cases[i].value, cases[i].valid);
}

static void test_persist_placement(void) {
        struct conf *c = load_string("[daemon]\npersist_placement = no\n", "persist_placement = no");

        if (c)
                ok(!c->persist_placement, "persist_placement = no turns it off");
        conf_free(c);
        c = load_string("[daemon]\npersist_placement = TRUE\n", "persist_placement = TRUE");
        if (c)
                ok(c->persist_placement, "persist_placement = TRUE (any case) turns it on");
        conf_free(c);
}

static void test_hugepages_many_nodes(void) {
        char text[8192] = "[hugepages]\n2M =";
        struct conf *c;

        for (int i = 0; i < 256; i++)
                snprintf(text + strlen(text), sizeof text - strlen(text), " %d:1", i);
        c = load_string(text, "256 nodes");
        if (c)
                ok(c->hugepages[TOPO_PAGE_2M].nnode == 256 && c->hugepages[TOPO_PAGE_2M].total == 256,
                   "256 nodes kept");
        conf_free(c);
        strcat(text, " 999:1\n");
        c = NULL;
        ok(conf_load_string("t.conf", text, &c, NULL, 0) == -EINVAL && !c, "257 nodes refused");
}

static void test_reserved_empty(void) {
        _cleanup_free_ char *path = fixture("only-dropins/kvmtuned.conf");
        struct conf *c = load_file(path, "drop-ins without a main file");
        hwloc_bitmap_t set = NULL;

        if (!c)
                return;
        is_str(c->reserved_cpus, "", "reserved_cpus empty string");
        ok(conf_reserved_cpus(c, &set) == 0 && set && hwloc_bitmap_iszero(set), "empty: zero bitmap");
        hwloc_bitmap_free(set);
        conf_free(c);
}

static void test_dropins(void) {
        _cleanup_free_ char *path = fixture("dropins/kvmtuned.conf");
        struct conf *c = load_file(path, "main file and three drop-ins, junk names ignored");

        if (!c)
                return;
        is_str(c->uri, "qemu:///session", "main file uri kept");
        is_int(c->defaults.cpu, POLICY_CPU_DEDICATED, "20-override overrides [defaults] cpu");
        is_int(c->defaults.numa, POLICY_NUMA_STRICT, "main file [defaults] numa kept");
        is_int(c->ndomain, 3, "db-* reopened, web-* and * appended");
        if (c->ndomain == 3) {
                is_str(c->domains[0].pattern, "db-*", "db-* keeps its place");
                is_int(c->domains[0].policy.cpu, POLICY_CPU_DEDICATED, "db-* cpu from main file");
                is_int(c->domains[0].policy.threads, POLICY_THREADS_REQUIRE, "db-* threads from 20-override");
                is_str(c->domains[1].pattern, "web-*", "10-web first");
                is_str(c->domains[2].pattern, "*", "then *");
        }
        ok(c->hugepages[TOPO_PAGE_1G].set && !c->hugepages[TOPO_PAGE_1G].per_node &&
           c->hugepages[TOPO_PAGE_1G].total == 12, "1G per-node replaced by total 12");
        is_int(c->hook_timeout_ms, 30000, "30-last read last");
        conf_free(c);
}

static void test_dropin_error(void) {
        _cleanup_free_ char *path = fixture("broken-dropin/kvmtuned.conf");
        _cleanup_free_ char *msg = xasprintf("%s/conf/broken-dropin/kvmtuned.conf.d/20-bad.conf:4: "
                                             "unknown key \"cpus\" in [defaults] " KNOWN_POLICY, test_fixtures_dir());

        check_file_error(path, -EINVAL, msg);
}

static void test_broken_files(void) {
        static const struct { const char *file; const char *msg; } cases[] = {
                { "unknown-section.conf", "4: unknown section [hosts] " KNOWN_SECTIONS },
                { "unknown-key.conf", "3: unknown key \"cpus\" in [defaults] " KNOWN_POLICY },
                { "duplicate-key.conf", "4: duplicate key \"cpu\" in [domain \"db-*\"] (first set on line 2)" },
                { "duplicate-section.conf", "8: section [defaults] appears twice in this file (first on line 1); "
                                            "put its keys in one section" },
                { "bad-value.conf", "2: bad value \"fast\" for cpu in [defaults] (allowed: dedicated, shared, none)" },
                { "key-before-section.conf", "2: key \"cpu\" outside of any section (start one with [NAME])" },
                { "malformed.conf", "2: expected \"key = value\", a [section] header or a comment" },
                { "unterminated.conf", "1: unterminated section header (expected [NAME] or [domain \"GLOB\"])" },
                { "bad-reserved.conf", "2: bad value \"0-3a\" for reserved_cpus in [host] "
                                       "(allowed: a CPU list such as 0,1 or 0-3,8; empty for none)" },
                { "bad-hugepages.conf", "2: bad value \"0:16 0:16\" for 2M in [hugepages] "
                                        "(allowed: a page count, or NODE:COUNT pairs such as \"0:512 1:512\")" },
                { "bad-isolation.conf", "3: bad value \"tasks, interrupts\" for isolation in [host] "
                                        "(allowed: yes, no, or a list of tasks, guests, irqs, workqueues)" },
                { "bad-timeout.conf", "2: bad value \"50\" for hook_timeout in [daemon] "
                                      "(allowed: milliseconds from 100 to 30000)" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *path = xasprintf("%s/conf/broken/%s", test_fixtures_dir(), cases[i].file);
                _cleanup_free_ char *msg = xasprintf("%s:%s", path, cases[i].msg);

                check_file_error(path, -EINVAL, msg);
        }
}

static void write_file(const char *path, const char *data, size_t len) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

        ok(fd >= 0 && write(fd, data, len) == (ssize_t)len, "wrote %s", path);
        if (fd >= 0)
                close(fd);
}

static void test_file_errors(void) {
        _cleanup_free_ char *nul = xasprintf("%s/nul.conf", tmpdir);
        _cleanup_free_ char *dir = xasprintf("%s/dir.conf", tmpdir);
        _cleanup_free_ char *notdir = xasprintf("%s/notdir.conf", tmpdir);
        _cleanup_free_ char *notdir_d = xasprintf("%s/notdir.conf.d", tmpdir);
        _cleanup_free_ char *msg = NULL;

        write_file(nul, "[defaults]\ncpu = sha\0red\n", 25);
        msg = xasprintf("%s:2: NUL byte in line", nul);
        check_file_error(nul, -EINVAL, msg);
        free(msg);
        mkdir(dir, 0755);
        msg = xasprintf("%s: cannot read: Is a directory", dir);
        check_file_error(dir, -EISDIR, msg);
        free(msg);
        write_file(notdir, "", 0);
        write_file(notdir_d, "", 0);
        msg = xasprintf("%s: cannot read directory: Not a directory", notdir_d);
        check_file_error(notdir, -ENOTDIR, msg);
}

static void test_big_file(void) {
        _cleanup_free_ char *path = xasprintf("%s/big.conf", tmpdir);
        _cleanup_free_ char *data = xmalloc(CONF_FILE_MAX + 1);
        _cleanup_free_ char *msg = xasprintf("%s: file too large (max 1048576 bytes)", path);

        memset(data, '\n', CONF_FILE_MAX + 1);
        write_file(path, data, CONF_FILE_MAX + 1);
        check_file_error(path, -EFBIG, msg);
}

static void test_glob_order(void) {
        struct conf *c = load_string("[domain \"db-prod-*\"]\ncpu = dedicated\n"
                                     "[domain \"db-*\"]\ncpu = none\n"
                                     "[domain \"db-[0-9]\"]\ncpu = dedicated\nnuma = none\n"
                                     "[domain \"web-?\"]\nthreads = require\n", "glob sections");
        struct policy p;

        if (!c)
                return;
        conf_policy_for(c, "db-prod-1", NULL, &p);
        is_int(p.cpu, POLICY_CPU_DEDICATED, "db-prod-1 matches the first section");
        conf_policy_for(c, "db-1", NULL, &p);
        ok(p.cpu == POLICY_CPU_NONE && p.numa == POLICY_NUMA_PREFERRED, "db-1: db-* comes before db-[0-9]");
        conf_policy_for(c, "DB-1", NULL, &p);
        ok(p.cpu == POLICY_CPU_SHARED && p.source == POLICY_SOURCE_DEFAULTS, "globs are case-sensitive");
        conf_policy_for(c, "web-1", NULL, &p);
        is_int(p.threads, POLICY_THREADS_REQUIRE, "web-? matches web-1");
        conf_policy_for(c, "web-10", NULL, &p);
        is_int(p.threads, POLICY_THREADS_PREFER, "web-? does not match web-10");
        ok(conf_domain_match(c, "db-x") == &c->domains[1], "conf_domain_match returns the section");
        ok(conf_domain_match(c, "other") == NULL, "no match: NULL");
        conf_free(c);
}

static void test_precedence(void) {
        struct conf *c = load_string("[defaults]\ncpu = dedicated\nemulator = isolate\n"
                                     "[domain \"vm*\"]\ncpu = shared\nnuma = strict\n", "precedence config");
        struct policy p, meta = { 0 };

        conf_policy_for(NULL, "vm1", NULL, &p);
        ok(p.cpu == POLICY_CPU_SHARED && p.source == POLICY_SOURCE_DEFAULTS && p.set == 0, "no config: built-in");
        if (!c)
                return;
        conf_policy_for(c, "other", NULL, &p);
        ok(p.cpu == POLICY_CPU_DEDICATED && p.emulator == POLICY_EMULATOR_ISOLATE, "[defaults] over built-in");
        ok(p.numa == POLICY_NUMA_PREFERRED && p.source == POLICY_SOURCE_DEFAULTS, "built-in numa, source defaults");
        conf_policy_for(c, "vm1", NULL, &p);
        ok(p.cpu == POLICY_CPU_SHARED && p.numa == POLICY_NUMA_STRICT, "[domain] over [defaults]");
        ok(p.emulator == POLICY_EMULATOR_ISOLATE && p.source == POLICY_SOURCE_CONFIG, "unset key from [defaults], source config");
        conf_policy_for(c, "vm1", &meta, &p);
        is_int(p.source, POLICY_SOURCE_CONFIG, "empty metadata ignored");
        policy_set(&meta, "numa", "none");
        policy_set(&meta, "hugepages", "1G");
        meta.source = POLICY_SOURCE_DEFAULTS; /* whatever the caller left there */
        conf_policy_for(c, "vm1", &meta, &p);
        ok(p.numa == POLICY_NUMA_NONE && p.page == POLICY_PAGE_1G, "metadata over [domain]");
        ok(p.cpu == POLICY_CPU_SHARED && p.emulator == POLICY_EMULATOR_ISOLATE, "other keys kept per key");
        ok(p.source == POLICY_SOURCE_METADATA, "source metadata");
        conf_free(c);
}

/* The sample as shipped changes nothing; with every "#key = value" and
 * "#[section]" line uncommented it still parses. */
static void test_sample(void) {
        _cleanup_free_ char *path = xasprintf("%s/conf/kvmtuned.conf", test_srcdir());
        _cleanup_free_ char *on = xasprintf("%s/sample-on.conf", tmpdir);
        char line[CONF_LINE_MAX + 2];
        struct conf *c = load_file(path, "conf/kvmtuned.conf as shipped");
        _cleanup_fclose_ FILE *in = fopen(path, "re");
        _cleanup_fclose_ FILE *out = fopen(on, "we");

        if (c)
                ok(c->ndomain == 0 && c->defaults.set == 0 && !c->reserved_cpus &&
                   !c->hugepages[0].set && !c->hugepages[1].set && c->hook_timeout_ms == 2000 &&
                   c->isolation == ISOLATE_ALL && streq(c->isolation_scope, "/") &&
                   streq(c->uri, "qemu:///system"), "shipped sample is all defaults");
        conf_free(c);
        if (!ok(in && out, "open sample and copy"))
                return;
        while (fgets(line, sizeof line, in))
                fputs(line[0] == '#' && line[1] != ' ' && line[1] != '\n' ? line + 1 : line, out);
        fclose(out);
        out = NULL;
        c = load_file(on, "sample with every setting uncommented");
        if (c)
                ok(c->ndomain == 1 && c->defaults.set == 0x7f && c->hugepages[TOPO_PAGE_1G].nnode == 2 &&
                   c->defaults.placement == POLICY_PLACEMENT_BEST_EFFORT,
                   "uncommented sample sets everything (all seven policy keys in [defaults])");
        conf_free(c);
}

static int remove_entry(const char *path, _unused_ const struct stat *st, _unused_ int flag, _unused_ struct FTW *ftw) {
        return remove(path);
}

/* The first literal block of kvmtuned.conf(5) is the example configuration. */
static void test_manpage_example(void) {
        _cleanup_free_ char *path = xasprintf("%s/man/kvmtuned.conf.5", test_srcdir());
        _cleanup_fclose_ FILE *in = fopen(path, "re");
        _cleanup_free_ char *text = xcalloc(1, 65536);
        char line[1024];
        bool inside = false;
        struct conf *c;

        if (!ok(in, "open %s", path))
                return;
        while (fgets(line, sizeof line, in) && !(inside && strncmp(line, ".Ed", 3) == 0)) {
                if (inside && strlen(text) + strlen(line) < 65536)
                        strcat(text, line);
                inside = inside || strncmp(line, ".Bd -literal", 12) == 0;
        }
        c = load_string(text, "the man page example");
        if (c)
                ok(c->ndomain == 2 && c->hook_timeout_ms == 3000 && c->hugepages[TOPO_PAGE_1G].nnode == 2,
                   "man page example read in full");
        conf_free(c);
}

int main(void) {
        int r;

        if (!mkdtemp(tmpdir))
                tap_skip_all("cannot create a temporary directory");
        test_empty();
        test_no_file();
        test_named_file_missing();
        test_domain_reopened();
        test_full();
        test_syntax();
        test_line_length();
        test_file_size();
        test_errors();
        test_long_text();
        test_values();
        test_persist_placement();
        test_hugepages_many_nodes();
        test_reserved_empty();
        test_dropins();
        test_dropin_error();
        test_broken_files();
        test_file_errors();
        test_big_file();
        test_glob_order();
        test_precedence();
        test_sample();
        test_manpage_example();
        r = tap_done();
        nftw(tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        return r;
}
