#include "config.h"

#include <errno.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xpath.h>

#include "kvmtune/util.h"
#include "kvmtune/advise.h"
#include "kvmtune/conf.h"
#include "../../lib/conf-priv.h"
#include "tap.h"
#include "test-data.h"

static int audit(const char *name, const struct policy *p, bool apply, struct advise_result *ret,
                 char *err, size_t errlen) {
        size_t len;
        _cleanup_free_ char *rel = xasprintf("advise/%s", name);
        _cleanup_free_ char *xml = test_read_fixture(rel, &len);

        err[0] = '\0';
        return advise_audit(xml, len, &(struct advise_request) { .options = p, .apply = apply }, ret, err, errlen);
}

static int audit_str(const char *xml, const struct policy *p, bool apply, struct advise_result *ret,
                     char *err, size_t errlen) {
        return advise_audit(xml, strlen(xml), &(struct advise_request) { .options = p, .apply = apply },
                            ret, err, errlen);
}

/* "id@target[+]" for each finding, comma separated; + marks applied. */
static void summary(const struct advise_result *r, char *buf, size_t len) {
        buf[0] = '\0';
        for (size_t i = 0; i < r->nfinding; i++)
                snprintf(buf + strlen(buf), len - strlen(buf), "%s%s:%s@%s%s", i ? "," : "",
                         r->findings[i].severity, r->findings[i].id, r->findings[i].target,
                         r->findings[i].applied ? "+" : "");
}

static int count_warnings(const struct advise_result *r) {
        int n = 0;

        for (size_t i = 0; i < r->nfinding; i++)
                n += streq(r->findings[i].severity, "warning");
        return n;
}

static void test_untuned(void) {
        struct advise_result r;
        struct policy p;
        char err[256], s[2048];

        policy_init_default(&p);
        is_int(audit("windows-untuned.xml", &p, false, &r, err, sizeof err), 8, "untuned: 8 findings (%s)", err);
        summary(&r, s, sizeof s);
        is_str(s, "warning:disk-bus@disk hda,warning:disk-cache@disk hda,warning:disk-io@disk hda,"
                  "warning:disk-io@disk vda,warning:disk-iothread@disk vda,warning:hyperv@features,"
                  "warning:hyperv-clock@clock,info:cpu-mode@cpu", "untuned: exact findings");
        ok(r.xml == NULL && r.napplied == 0, "untuned: nothing applied without apply");
        ok(r.nfinding && strstr(r.findings[0].message, "28,240"), "untuned: bus message cites the measurement");
        ok(r.nfinding > 5 && strstr(r.findings[5].fix, "spinlocks"), "untuned: hyperv fix lists spinlocks");
        advise_result_done(&r);
}

static void test_untuned_dedicated(void) {
        struct advise_result r;
        struct policy p;
        char err[256], s[2048];

        policy_init_default(&p);
        policy_set(&p, "cpu", "dedicated");
        is_int(audit("windows-untuned.xml", &p, false, &r, err, sizeof err), 11, "dedicated: 11 findings (%s)", err);
        summary(&r, s, sizeof s);
        ok(strstr(s, "warning:hugepages@memory,info:memballoon@memballoon,info:cpu-topology@cpu") != NULL,
           "dedicated: hugepages, balloon, topology advice (%s)", s);
        advise_result_done(&r);
}

static xmlXPathObject *xpath(xmlDoc *doc, const char *expr) {
        xmlXPathContext *ctx = xmlXPathNewContext(doc);
        xmlXPathObject *o = xmlXPathEvalExpression(BAD_CAST expr, ctx);

        xmlXPathFreeContext(ctx);
        return o;
}

static double xnum(xmlDoc *doc, const char *expr) {
        xmlXPathObject *o = xpath(doc, expr);
        double v = o ? xmlXPathCastToNumber(o) : -1;

        xmlXPathFreeObject(o);
        return v;
}

static void test_applied_xml(const char *xml) {
        xmlDoc *doc = xmlReadMemory(xml, (int) strlen(xml), "applied.xml", NULL, XML_PARSE_NONET);

        ok(doc != NULL, "apply: result re-parses");
        if (!doc)
                return;
        is_int(xnum(doc, "count(//disk[target/@dev='hda']/driver[@cache='none' and @io='native'])"), 1,
               "apply: hda cache=none io=native");
        is_int(xnum(doc, "count(//disk[target/@dev='hda']/target[@bus='ide'])"), 1, "apply: hda bus stays ide");
        is_int(xnum(doc, "count(//disk[target/@dev='vda']/driver[@io='native' and @iothread='1'])"), 1,
               "apply: vda io=native iothread=1");
        is_int(xnum(doc, "number(/domain/iothreads)"), 1, "apply: <iothreads>1</iothreads>");
        is_int(xnum(doc, "count(/domain/features/hyperv[@mode='custom']/*[@state='on'])"), 9,
               "apply: nine enlightenments");
        is_int(xnum(doc, "number(/domain/features/hyperv/spinlocks/@retries)"), 8191, "apply: spinlock retries");
        is_int(xnum(doc, "count(/domain/clock[@offset='localtime']/timer[@name='hypervclock'])"), 1,
               "apply: hypervclock timer, offset kept");
        is_int(xnum(doc, "count(/domain/cpu[@mode='host-model'])"), 1, "apply: cpu mode untouched");
        is_int(xnum(doc, "count(//disk[@device='cdrom']/driver[@cache])"), 0, "apply: cdrom untouched");
        xmlFreeDoc(doc);
}

static void test_apply(void) {
        struct advise_result r, again;
        char err[256], s[2048];

        is_int(audit("windows-untuned.xml", NULL, true, &r, err, sizeof err), 8, "apply: 8 findings (%s)", err);
        is_int(r.napplied, 6, "apply: 6 safe fixes applied");
        summary(&r, s, sizeof s);
        is_str(s, "warning:disk-bus@disk hda,warning:disk-cache@disk hda+,warning:disk-io@disk hda+,"
                  "warning:disk-io@disk vda+,warning:disk-iothread@disk vda+,warning:hyperv@features+,"
                  "warning:hyperv-clock@clock+,info:cpu-mode@cpu", "apply: advisory items not applied");
        ok(r.xml != NULL, "apply: XML returned");
        if (!r.xml)
                return advise_result_done(&r);
        test_applied_xml(r.xml);
        is_int(audit_str(r.xml, NULL, false, &again, err, sizeof err), 2,
               "apply: re-audit leaves only the advisory bus and cpu findings");
        advise_result_done(&again);
        advise_result_done(&r);
}

static void test_tuned(void) {
        struct advise_result r;
        struct policy p;
        char err[256];

        policy_init_default(&p);
        policy_set(&p, "cpu", "dedicated");
        is_int(audit("windows-tuned.xml", &p, true, &r, err, sizeof err), 0, "tuned: no findings (%s)", err);
        is_int(count_warnings(&r), 0, "tuned: no warnings");
        is_int(r.napplied, 0, "tuned: nothing applied");
        ok(r.xml && strstr(r.xml, "<name>win2</name>"), "tuned: the definition is returned");
        if (r.xml) {            /* what comes back audits clean too: nothing was broken */
                struct advise_result again;

                is_int(audit_str(r.xml, &p, false, &again, err, sizeof err), 0,
                       "tuned: the returned definition has no findings either (%s)", err);
                advise_result_done(&again);
        }
        advise_result_done(&r);
}

static void test_bad_input(void) {
        static const char odd[] = "<domain type='kvm'><devices><disk><driver/><target bus='virtio'/></disk>"
                "<disk device='disk'/></devices><features><hyperv mode='passthrough'/></features>"
                "<cpu mode='host-passthrough'/><vcpu>x</vcpu><memory unit='EiB'>9</memory></domain>";
        struct advise_result r = { .napplied = 42 };
        char err[256];

        is_int(audit("garbage.xml", NULL, true, &r, err, sizeof err), -EINVAL, "garbage: -EINVAL");
        ok(strstr(err, "well-formed") != NULL, "garbage: message (%s)", err);
        is_int(r.napplied, 42, "garbage: result untouched");
        is_int(audit("not-domain.xml", NULL, false, &r, err, sizeof err), -EINVAL, "network: -EINVAL");
        ok(strstr(err, "<domain>") != NULL, "network: message (%s)", err);
        is_int(advise_audit("", 0, NULL, &r, err, sizeof err), -EINVAL, "empty: -EINVAL");
        is_int(advise_audit("<domain/>", ADVISE_MAX_XML + 1, NULL, &r, err, sizeof err), -EINVAL,
               "over 4 MiB: -EINVAL before reading");
        is_int(audit_str(odd, NULL, true, &r, err, sizeof err), -EINVAL, "odd domain: refused as domxml refuses it");
        is_str(err, "domain has no <name>", "odd domain: domxml's message");
        is_int(r.napplied, 42, "odd domain: result untouched");
}

/* libvirt's test driver domain: a virtio disk with no <driver> at all. */
static void test_no_driver(void) {
        static const char xml[] = "<domain type='test'><name>test</name><vcpu placement='static'>2</vcpu>"
                "<devices><disk type='file' device='disk'><source file='/guest/diskimage1'/>"
                "<target dev='vda' bus='virtio'/></disk></devices></domain>";
        struct advise_result r;
        char err[256] = "", s[512];
        xmlDoc *doc;

        is_int(audit_str(xml, NULL, true, &r, err, sizeof err), 2, "no driver: 2 findings (%s)", err);
        summary(&r, s, sizeof s);
        is_str(s, "warning:disk-cache@disk vda+,warning:disk-iothread@disk vda+", "no driver: cache and iothread applied");
        doc = r.xml ? xmlReadMemory(r.xml, (int) strlen(r.xml), "t.xml", NULL, XML_PARSE_NONET) : NULL;
        ok(doc != NULL, "no driver: result re-parses");
        if (doc) {
                is_int(xnum(doc, "count(//disk/driver[@name='qemu' and @cache='none' and @iothread='1' and not(@type) and not(@io)])"),
                       1, "no driver: one driver added, no format, no io mode guessed");
                is_int(xnum(doc, "count(/domain/vcpu/following-sibling::*[1][self::iothreads])"), 1,
                       "no driver: <iothreads> placed after <vcpu>");
                xmlFreeDoc(doc);
        }
        advise_result_done(&r);
}

static int audit_req(const char *xml, const struct advise_request *req, struct advise_result *r, char *s, size_t len) {
        char err[256] = "";
        int n = advise_audit(xml, strlen(xml), req, r, err, sizeof err);

        if (n < 0)
                printf("# %s\n", err);
        else
                summary(r, s, len);
        return n;
}

#define NIC(type, model, extra) "<interface type='" type "'><mac address='52:54:00:00:00:01'/>" \
        "<model type='" model "'/>" extra "</interface>"

/* Multiqueue: N from the vCPUs (capped), vhost only where KVM runs, nothing for slirp. */
static void test_net(void) {
        static const char kvm16[] = "<domain type='kvm'><name>n</name><vcpu>24</vcpu><cpu mode='host-passthrough'/><devices>"
                NIC("bridge", "virtio", "") NIC("user", "virtio", "") NIC("network", "rtl8139", "") "</devices></domain>";
        static const char tcg2[] = "<domain type='qemu'><name>n</name><vcpu>2</vcpu><devices>"
                NIC("ethernet", "virtio", "<driver name='qemu'/>") "</devices></domain>";
        static const char one[] = "<domain type='kvm'><name>n</name><vcpu>1</vcpu><cpu mode='host-passthrough'/><devices>"
                NIC("bridge", "virtio", "") "</devices></domain>";
        struct advise_request req = { .apply = true };
        struct advise_result r;
        char s[1024];

        is_int(audit_req(kvm16, &req, &r, s, sizeof s), 2, "net: two findings");
        is_str(s, "warning:net-multiqueue@interface 52:54:00:00:00:01+,warning:net-model@interface 52:54:00:00:00:01",
               "net: bridge multiqueue applied, user skipped, rtl8139 advised");
        ok(r.xml && strstr(r.xml, "<driver queues=\"16\"/>"), "net: 16 queues at most on 24 vCPUs, the backend left to libvirt");
        advise_result_done(&r);
        is_int(audit_req(tcg2, &req, &r, s, sizeof s), 1, "net tcg: one finding");
        ok(r.xml && strstr(r.xml, "<driver name=\"qemu\" queues=\"2\"/>"), "net tcg: queues=2, the driver name kept");
        advise_result_done(&r);
        is_int(audit_req(one, &req, &r, s, sizeof s), 0, "net: one vCPU, no multiqueue");
        advise_result_done(&r);
}

/* <iothreadids> get the new ids too; devices already on their own are left. */
static void test_iothreadids(void) {
        static const char xml[] = "<domain type='kvm'><name>io</name><vcpu>2</vcpu><cpu mode='host-passthrough'/>"
                "<iothreadids><iothread id='4'/></iothreadids><devices>"
                "<disk type='file' device='disk'><driver name='qemu' iothread='4'/><target dev='vda' bus='virtio'/></disk>"
                "<disk type='file' device='disk'><driver name='qemu' cache='none'/><target dev='vdb' bus='virtio'/></disk>"
                "<disk type='file' device='disk'><driver name='qemu' cache='none' iothread='4'/><target dev='vdc' bus='virtio'/></disk>"
                "<disk type='file' device='cdrom'><target dev='sda' bus='sata'/></disk>"
                "<controller type='scsi' model='lsilogic'/></devices></domain>";
        static const char undercount[] = "<domain type='qemu'><name>io</name><vcpu>2</vcpu><iothreads>0</iothreads><devices>"
                "<disk type='file' device='disk'><driver name='qemu' cache='none' iothread='2'/><target dev='vda' bus='virtio'/></disk>"
                "<disk type='file' device='disk'><driver name='qemu' cache='none' iothread='2'/><target dev='vdb' bus='virtio'/></disk>"
                "</devices></domain>";
        struct advise_request req = { .apply = true };
        struct advise_result r;
        char s[1024];

        is_int(audit_req(xml, &req, &r, s, sizeof s), 3, "iothreadids: three findings");
        is_str(s, "warning:disk-cache@disk vda+,warning:disk-iothread@disk vdb+,warning:disk-iothread@disk vdc+",
               "iothreadids: vdb alone, vdc shares 4 with vda, cdrom and lsilogic left alone");
        ok(r.xml && strstr(r.xml, "<iothread id=\"4\"/>\n    <iothread id=\"5\"/>\n    <iothread id=\"6\"/>"),
           "iothreadids: ids 5 and 6 defined");
        ok(r.xml && strstr(r.xml, "<iothreads>6</iothreads>"), "iothreadids: <iothreads> counts them");
        advise_result_done(&r);
        /* found by fuzz-advise: ids in use above the count; the new one goes above them */
        is_int(audit_req(undercount, &req, &r, s, sizeof s), 1, "undercount: one finding");
        ok(r.xml && strstr(r.xml, "iothread=\"3\"") && strstr(r.xml, "<iothreads>3</iothreads>"),
           "undercount: vdb gets iothread 3, above the 2 in use, not the 1 vda has");
        advise_result_done(&r);
}

/* Built-in defaults < configuration < metadata < options. */
static void test_policy_layers(void) {
        static const char xml[] = "<domain type='kvm'><name>db7</name><vcpu>2</vcpu><devices>"
                "<memballoon model='virtio'/></devices></domain>";
        static const char meta[] = "<domain type='kvm'><name>db7</name><vcpu>2</vcpu><metadata>"
                "<p:policy xmlns:p='urn:kvmtuned:tuning:1' cpu='shared'/></metadata><devices>"
                "<memballoon model='virtio'/></devices></domain>";
        struct conf *c = NULL;
        struct policy opts;
        struct advise_request req = {};
        struct advise_result r;
        char err[256], s[1024];

        is_int(conf_load_string("t.conf", "[domain \"db*\"]\ncpu = dedicated\n", &c, err, sizeof err), 0, "layers: config");
        req.conf = c;
        audit_req(xml, &req, &r, s, sizeof s);
        ok(strstr(s, "memballoon") != NULL && r.policy.source == POLICY_SOURCE_CONFIG, "layers: the config makes it dedicated");
        advise_result_done(&r);
        audit_req(meta, &req, &r, s, sizeof s);
        ok(!strstr(s, "memballoon") && r.policy.source == POLICY_SOURCE_METADATA, "layers: the metadata wins over the config");
        advise_result_done(&r);
        policy_init_default(&opts);
        policy_set(&opts, "cpu", "dedicated");
        opts.source = POLICY_SOURCE_REQUEST;
        req.options = &opts;
        audit_req(meta, &req, &r, s, sizeof s);
        ok(strstr(s, "memballoon") && r.policy.source == POLICY_SOURCE_REQUEST, "layers: options win over the metadata");
        advise_result_done(&r);
        conf_free(c);
}

/* Hyper-V enlightenments are KVM's: a TCG Windows guest does not start with them. */
static void test_hyperv_kvm_only(void) {
        static const char tcg[] = "<domain type='qemu'><name>w</name><vcpu>2</vcpu><features><hyperv mode='custom'/>"
                "</features><clock offset='localtime'/></domain>";
        struct advise_request req = { .apply = true };
        struct advise_result r;
        char s[512];

        is_int(audit_req(tcg, &req, &r, s, sizeof s), 0, "hyperv: nothing for a TCG Windows guest (%s)", s);
        ok(r.xml && !strstr(r.xml, "relaxed") && !strstr(r.xml, "hypervclock"), "hyperv: nothing written for TCG");
        advise_result_done(&r);
}

int main(void) {
        test_hyperv_kvm_only();
        test_net();
        test_iothreadids();
        test_policy_layers();
        test_untuned();
        test_untuned_dedicated();
        test_apply();
        test_tuned();
        test_bad_input();
        test_no_driver();
        return tap_done();
}
