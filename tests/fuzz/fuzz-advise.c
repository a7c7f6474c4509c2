/* libFuzzer target for the definition audit: advise_audit() on the raw input,
 * with and without applying the safe fixes; an applied definition must audit
 * again without error and without anything left to apply. Build with
 * --enable-fuzzing (clang). Seeds: tests/fixtures/advise/. */
#include "config.h"

#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "kvmtune/advise.h"
#include "kvmtune/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct advise_result r = { 0 }, again = { 0 };
        struct policy p;
        char err[256];

        struct advise_request req = { .options = &p };

        policy_init_default(&p);
        policy_set(&p, "cpu", "dedicated");
        if (advise_audit((const char *)data, size, &req, &r, err, sizeof err) >= 0)
                advise_result_done(&r);
        r = (struct advise_result){ 0 };
        req.apply = true;
        if (advise_audit((const char *)data, size, &req, &r, err, sizeof err) < 0)
                return 0;
        if (r.xml) {
                assert(advise_audit(r.xml, strlen(r.xml), &req, &again, err, sizeof err) >= 0);
                assert(again.napplied == 0);
                advise_result_done(&again);
        }
        advise_result_done(&r);
        return 0;
}
