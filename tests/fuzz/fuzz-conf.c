/* libFuzzer target for the configuration parser: conf_load_string() on the input,
 * then the accessors on whatever parsed, with the invariants the daemon relies
 * on. Build with --enable-fuzzing (clang). Seeds: tests/fixtures/conf/ and
 * conf/kvmtuned.conf. */
#include "config.h"

#include <assert.h>
#include <stdint.h>

#include "kvmtune/conf.h"
#include "kvmtune/util.h"
#include "../../lib/conf-priv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_parsed(const struct conf *c) {
        static const char *const names[] = { "db-1", "web", "", "*" };
        hwloc_bitmap_t set = NULL;
        struct policy p;

        assert(c->uri && *c->uri);
        assert(c->hook_timeout_ms >= CONF_HOOK_TIMEOUT_MIN_MS && c->hook_timeout_ms <= CONF_HOOK_TIMEOUT_MAX_MS);
        assert(conf_reserved_cpus(c, &set) == 0);
        assert(!c->reserved_cpus == !set);
        hwloc_bitmap_free(set);
        for (int i = 0; i < TOPO_PAGE_SIZES; i++)
                assert(c->hugepages[i].nnode >= 0 && c->hugepages[i].nnode <= 256);
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                conf_policy_for(c, names[i], NULL, &p);
                assert(p.source < _POLICY_SOURCE_MAX && p.cpu < _POLICY_CPU_MAX);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *text = xmalloc(size + 1);
        struct conf *c = NULL;
        char err[512] = "";

        memcpy(text, data, size);
        text[size] = '\0';
        if (conf_load_string("fuzz.conf", text, &c, err, sizeof err) == 0)
                check_parsed(c);
        else
                assert(c == NULL && strncmp(err, "fuzz.conf:", 10) == 0);
        conf_free(c);
        return 0;
}
