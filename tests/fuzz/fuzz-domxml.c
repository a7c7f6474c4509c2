/* libFuzzer target for the domain XML parser: domxml_parse() on the raw input,
 * domxml_parse_policy() on it as a string, and a format/parse round trip of any
 * policy that parses. Build with --enable-fuzzing (clang). Seeds:
 * tests/fixtures/domxml/. */
#include "config.h"

#include <assert.h>
#include <stdint.h>

#include "kvmtune/util.h"
#include "kvmtune/domxml.h"
#include "../../lib/domxml-priv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void roundtrip_policy(const struct policy *p) {
        _cleanup_free_ char *s = domxml_format_policy(p);
        struct policy back;
        char err[256];

        assert(domxml_parse_policy(s, &back, err, sizeof(err)) == 0);
        assert(back.set == p->set);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *str = xmalloc(size + 1);
        struct domxml *d = NULL;
        struct policy p;
        char err[256];

        if (domxml_parse((const char *) data, size, &d, err, sizeof(err)) == 0 && d->has_policy)
                roundtrip_policy(&d->policy);
        domxml_free(d);
        memcpy(str, data, size);
        str[size] = '\0';
        if (domxml_parse_policy(str, &p, err, sizeof(err)) == 0)
                roundtrip_policy(&p);
        return 0;
}
