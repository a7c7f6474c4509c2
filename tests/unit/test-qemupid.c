/* lib/qemupid.c: a domain's QEMU found and recognised for every name libvirt
 * accepts (status XML under the raw name, "-uuid" on QEMU's command line). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kvmtune/qemupid.h"
#include "kvmtune/util.h"
#include "../../lib/qemupid-priv.h"
#include "tap.h"

#define UUID "8a6c3b0e-1d2f-4e5a-9b7c-0123456789ab"

static char root[] = "/tmp/test-qemupid.XXXXXX";

/* Creates root/rel (parents included) holding len bytes of content. */
static void put(const char *rel, const char *content, size_t len) {
        _cleanup_free_ char *p = xasprintf("%s/%s", root, rel);
        FILE *f;

        for (char *s = strchr(p + strlen(root) + 1, '/'); s; s = strchr(s + 1, '/')) {
                *s = '\0';
                mkdir(p, 0755);
                *s = '/';
        }
        f = fopen(p, "w");
        if (!f || fwrite(content, 1, len, f) != len || fclose(f) != 0)
                abort();
}

static void put_str(const char *rel, const char *content) {
        put(rel, content, strlen(content));
}

/* What libvirt 9.0 saves: a comment, then the <domstatus> root. */
static const char status_xml[] =
        "<!--\nWARNING: THIS IS AN AUTO-GENERATED FILE. CHANGES TO IT ARE LIKELY TO BE\n"
        "OVERWRITTEN AND LOST. Changes to this xml configuration should be made using:\n"
        "  virsh edit kte-a&amp;b\n-->\n\n"
        "<domstatus state='running' reason='booted' pid='17828'>\n"
        "  <taint flag='high-privileges'/>\n"
        "  <monitor path='/var/lib/libvirt/qemu/domain-5-kte-a&amp;b/monitor.sock' type='unix'/>\n"
        "  <vcpus>\n    <vcpu id='0' pid='17840'/>\n  </vcpus>\n"
        "  <domain type='qemu' id='5'>\n    <name>kte-a&amp;b</name>\n"
        "    <uuid>" UUID "</uuid>\n  </domain>\n</domstatus>\n";

static void test_parse_status(void) {
        pid_t pid = 99;

        is_int(qemupid_parse_status(status_xml, &pid), 0, "status XML as libvirt 9.0 saves it");
        is_int(pid, 17828, "... the pid of <domstatus>, not a vCPU's pid below it");
        pid = 99;
        is_int(qemupid_parse_status("<domstatus\n pid=\"42\" state=\"running\">", &pid), 0, "double quotes, pid first");
        is_int(pid, 42, "... its pid");
        is_int(qemupid_parse_status("<domstatus state='running' ppid='5' pid='7'>", &pid), 0,
               "an attribute ending in pid is not pid");
        is_int(pid, 7, "... the pid attribute itself");
        pid = 99;
        is_int(qemupid_parse_status("<domstatus state='running'><vcpu pid='5'/>", &pid), -EINVAL,
               "a pid below the root is not the root's");
        is_int(qemupid_parse_status("<domstatusx pid='5'>", &pid), -EINVAL, "another element");
        is_int(qemupid_parse_status("<domain><name>x</name></domain>", &pid), -EINVAL, "no <domstatus>");
        is_int(qemupid_parse_status("<domstatus pid='0'>", &pid), -EINVAL, "pid 0");
        is_int(qemupid_parse_status("<domstatus pid='-1'>", &pid), -EINVAL, "negative pid");
        is_int(qemupid_parse_status("<domstatus pid='12x'>", &pid), -EINVAL, "pid with junk");
        is_int(qemupid_parse_status("<domstatus pid='4294967297'>", &pid), -EINVAL, "pid over INT_MAX");
        is_int(qemupid_parse_status("<domstatus pid=12>", &pid), -EINVAL, "unquoted pid");
        is_int(qemupid_parse_status("<domstatus pid='12", &pid), -EINVAL, "unterminated tag");
        is_int(pid, 99, "out parameter untouched on failure");
}

static void test_cmdline(void) {
        static const char cmd[] = "/usr/bin/qemu-system-x86_64\0-name\0guest=kte-a,,b,debug-threads=on\0"
                                  "-S\0-uuid\0" UUID "\0-smp\0" "1";
        static const char other[] = "qemu\0-name\0" UUID "\0-uuid\0" "00000000-0000-0000-0000-000000000000";
        static const char last[] = "qemu\0-uuid";

        ok(qemupid_cmdline_has_uuid(cmd, sizeof cmd, UUID), "-uuid UUID among the arguments");
        ok(qemupid_cmdline_has_uuid(cmd, sizeof cmd, "8A6C3B0E-1D2F-4E5A-9B7C-0123456789AB"), "... in any case");
        ok(!qemupid_cmdline_has_uuid(cmd, sizeof cmd, "8a6c3b0e-1d2f-4e5a-9b7c-0123456789a"),
           "a prefix of the UUID is not it");
        ok(!qemupid_cmdline_has_uuid(other, sizeof other, UUID), "the UUID after another option is not it");
        ok(!qemupid_cmdline_has_uuid(last, sizeof last, UUID), "-uuid as the last argument");
        ok(!qemupid_cmdline_has_uuid(cmd, strlen(cmd) + 1 + strlen("-name") + 1, UUID),
           "a command line cut before -uuid");
        ok(!qemupid_cmdline_has_uuid(cmd, (size_t)((const char *)memmem(cmd, sizeof cmd, UUID, 36) - cmd) + 20, UUID),
           "a command line cut inside the UUID");
        ok(qemupid_cmdline_has_uuid(cmd, sizeof cmd - 1, UUID), "no NUL after the last argument");
        ok(!qemupid_cmdline_has_uuid("", 0, UUID), "empty command line (a kernel thread)");
}

static void test_read(void) {
        _cleanup_free_ char *dir = xasprintf("/run");
        pid_t pid = 99;

        put_str("run/kte-a&b.xml", status_xml);
        put_str("run/kte-a&amp;b.pid", "17828");
        is_int(qemupid_read(root, dir, "kte-a&b", &pid), 0, "name with '&': the status XML under the raw name");
        is_int(pid, 17828, "... its pid");
        put_str("run/kte-a,b.xml", "<domstatus state='running' pid='4711'>\n");
        put_str("run/kte-a,b.pid", "1\n");
        is_int(qemupid_read(root, dir, "kte-a,b", &pid), 0, "name with ','");
        is_int(pid, 4711, "... the status XML wins over the pid file");
        put_str("run/vm1.pid", "4242\n");
        is_int(qemupid_read(root, dir, "vm1", &pid), 0, "no status XML: NAME.pid");
        is_int(pid, 4242, "... its pid");
        put_str("run/vm2.xml", "<domstatus state='shutoff'>\n");
        put_str("run/vm2.pid", "4343\n");
        is_int(qemupid_read(root, dir, "vm2", &pid), 0, "status XML without a pid: NAME.pid");
        is_int(pid, 4343, "... its pid");
        pid = 99;
        is_int(qemupid_read(root, dir, "vm3", &pid), -ENOENT, "neither file");
        put_str("run/vm4.pid", "garbage\n");
        is_int(qemupid_read(root, dir, "vm4", &pid), -EINVAL, "pid file that holds no pid");
        is_int(qemupid_read(root, dir, "../run/vm1", &pid), -EINVAL, "a name with '/' is no domain's");
        is_int(qemupid_read(root, dir, "", &pid), -EINVAL, "empty name");
        is_int(pid, 99, "out parameter untouched on failure");
}

static void test_is_domain(void) {
        static const char cmd[] = "qemu\0-uuid\0" UUID "\0";

        put("proc/4242/cmdline", cmd, sizeof cmd - 1);
        put("proc/4343/cmdline", "bash\0", 5);
        put("proc/1/cmdline", cmd, sizeof cmd - 1);
        ok(qemupid_is_domain(root, 4242, UUID), "the process whose command line carries -uuid UUID");
        ok(!qemupid_is_domain(root, 4242, "00000000-0000-0000-0000-000000000000"), "... not another domain's");
        ok(!qemupid_is_domain(root, 4343, UUID), "another program");
        ok(!qemupid_is_domain(root, 4444, UUID), "a process that is gone");
        ok(!qemupid_is_domain(root, 1, UUID), "pid 1 never, whatever its command line");
}

int main(void) {
        _cleanup_free_ char *rm = NULL;

        if (!mkdtemp(root))
                return 1;
        test_parse_status();
        test_cmdline();
        test_read();
        test_is_domain();
        rm = xasprintf("rm -rf '%s'", root);
        if (system(rm) != 0)
                return 1;
        return tap_done();
}
