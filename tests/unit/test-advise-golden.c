/* Golden files for advised definitions: each case audits an input from
 * tests/fixtures/advise/golden/ with --apply (policy options, and a host
 * topology from tests/data/topologies for the guest NUMA view) and compares the findings
 * and the fixed XML with CASE.out beside it; a diff is the failure message.
 * KVMTUNED_TEST_REGENERATE=1 rewrites the .out files instead. Every case is
 * also re-audited: nothing that --apply claims to fix may be left. */
#include "config.h"

#include <errno.h>
#include <unistd.h>

#include "kvmtune/advise.h"
#include "kvmtune/topo.h"
#include "kvmtune/util.h"
#include "tap.h"
#include "test-data.h"

struct golden_case {
        const char *name;               /* CASE.out */
        const char *input;              /* in golden/ */
        const char *options;            /* "key=value ...", as kvmtunectl's policy options */
        const char *topology;           /* in $TOPOLOGIES, or NULL */
};

static const struct golden_case cases[] = {
        { "sql1", "sql1.xml", "", NULL },
        { "sql1-shared", "sql1.xml", "cpu=shared", NULL },
        { "sql1-virtio", "sql1-virtio.xml", "", NULL },
        { "sql1-one-node", "sql1-virtio.xml", "", "2s-xeon-platinum8168-skylake-smt.xml" },
        { "big1-2node", "big1.xml", "", "2s-xeon-platinum8168-skylake-smt.xml" },
        { "big1-8node", "big1.xml", "", "4s-opteron-6276-bulldozer-8numa.xml" },
        { "big1-1node", "big1.xml", "threads=prefer", "2s-epyc-7763-milan-nosmt-cpuid.xml" },
        { "windows-untuned", "../windows-untuned.xml", "cpu=dedicated", NULL },
};

static char *slurp(const char *path) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        char *buf = xcalloc(1, ADVISE_MAX_XML + 1);

        if (!f || fread(buf, 1, ADVISE_MAX_XML, f) == 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

static void options_parse(const char *s, struct policy *ret) {
        _cleanup_free_ char *copy = xstrdup(s);
        char *save = NULL;

        policy_init_default(ret);
        for (char *kv = strtok_r(copy, " ", &save); kv; kv = strtok_r(NULL, " ", &save)) {
                char *eq = strchr(kv, '=');
                *eq = '\0';
                if (policy_set(ret, kv, eq + 1) < 0)
                        abort();
        }
        ret->source = POLICY_SOURCE_REQUEST;
}

/* The findings, then the advised XML: what the golden file holds. */
static char *golden_format(const struct golden_case *c, const struct advise_result *r) {
        char *s = xasprintf("# advise --apply %s%s%s\n", c->input, c->options[0] ? " " : "", c->options);
        char *next;

        if (c->topology) {
                next = xasprintf("%s# on %s\n", s, c->topology);
                free(s);
                s = next;
        }
        for (size_t i = 0; i < r->nfinding; i++) {
                const struct advise_finding *f = &r->findings[i];

                next = xasprintf("%s# %s %s %s%s: %s\n#   fix: %s\n", s, f->severity, f->id, f->target,
                                 f->applied ? " (applied)" : "", f->message, f->fix);
                free(s);
                s = next;
        }
        next = xasprintf("%s%s%s%s\n", s, r->note[0] ? "# skipped: " : "", r->note, r->note[0] ? "\n" : "");
        free(s);
        s = xasprintf("%s%s\n", next, r->xml ? r->xml : "");
        free(next);
        return s;
}

static void golden_compare(const char *path, const char *got, const char *name) {
        _cleanup_free_ char *want = slurp(path);
        _cleanup_free_ char *tmp = xstrdup("/tmp/test-advise-golden.XXXXXX");
        _cleanup_free_ char *cmd = NULL;
        int fd;

        if (getenv("KVMTUNED_TEST_REGENERATE")) {
                _cleanup_fclose_ FILE *f = fopen(path, "we");
                ok(f && fputs(got, f) >= 0, "%s: regenerated %s", name, path);
                return;
        }
        if (want && streq(want, got)) {
                ok(true, "%s: as %s", name, path);
                return;
        }
        fd = mkstemp(tmp);
        if (fd >= 0 && write(fd, got, strlen(got)) == (ssize_t) strlen(got)) {
                cmd = xasprintf("diff -u '%s' '%s' | sed 's/^/# /'", path, tmp);
                fflush(stdout);
                if (system(cmd) < 0)
                        printf("# cannot run diff\n");
        }
        if (fd >= 0)
                close(fd), unlink(tmp);
        ok(false, "%s: differs from %s (KVMTUNED_TEST_REGENERATE=1 rewrites it)", name, path);
}

/* Nothing --apply claims to have fixed is found again in what it wrote. */
static void golden_reaudit(const struct advise_request *req, const struct advise_result *r, const char *name) {
        struct advise_request again_req = *req;
        struct advise_result again;
        char err[256] = "";
        int left = 0;

        again_req.apply = false;
        if (!r->xml || advise_audit(r->xml, strlen(r->xml), &again_req, &again, err, sizeof err) < 0) {
                ok(false, "%s: the advised XML audits again (%s)", name, err);
                return;
        }
        for (size_t i = 0; i < r->nfinding; i++)
                for (size_t j = 0; r->findings[i].applied && j < again.nfinding; j++)
                        if (streq(r->findings[i].id, again.findings[j].id) &&
                            streq(r->findings[i].target, again.findings[j].target)) {
                                printf("# still there: %s %s\n", again.findings[j].id, again.findings[j].target);
                                left++;
                        }
        is_int(left, 0, "%s: re-audit finds nothing --apply fixed (%zu findings left, all advisory)",
               name, again.nfinding);
        advise_result_done(&again);
}

static void golden_run(const char *dir, const struct golden_case *c) {
        _cleanup_free_ char *in = xasprintf("%s/%s", dir, c->input);
        _cleanup_free_ char *out = xasprintf("%s/%s.out", dir, c->name);
        _cleanup_free_ char *xml = slurp(in);
        _cleanup_free_ char *got = NULL;
        struct topo *t = NULL;
        struct policy opts;
        struct advise_request req = { .options = &opts, .apply = true };
        struct advise_result r;
        char err[256] = "";

        if (c->topology) {
                _cleanup_free_ char *tp = test_topology(c->topology);
                if (topo_load(TOPO_SOURCE_XML, tp, NULL, &t) < 0) {
                        ok(false, "%s: cannot load %s", c->name, tp);
                        return;
                }
        }
        options_parse(c->options, &opts);
        req.topo = t;
        if (!xml || advise_audit(xml, strlen(xml), &req, &r, err, sizeof err) < 0) {
                ok(false, "%s: audits (%s)", c->name, xml ? err : "no input");
                ok(false, "%s: re-audit", c->name);
        } else {
                got = golden_format(c, &r);
                golden_compare(out, got, c->name);
                golden_reaudit(&req, &r, c->name);
                advise_result_done(&r);
        }
        topo_free(t);
}

int main(void) {
        _cleanup_free_ char *dir = test_fixture("advise/golden");

        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                golden_run(dir, &cases[i]);
        return tap_done();
}
