/* libFuzzer target for the isolation parsers (lib/isolate.c): the restore
 * record kvmtuned reads back from /run/kvmtuned/isolation (a killed daemon may
 * have left it half written), the kernel's cpumask and CPU list texts, and the
 * /proc status and stat fields. Whatever parses formats and parses back to the
 * same. Build with --enable-fuzzing (clang). */
#include "config.h"

#include <assert.h>
#include <stdint.h>

#include "kvmtune/isolate.h"
#include "kvmtune/topo.h"
#include "kvmtune/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_record(const char *text) {
        struct isolate_record r = {}, again = {};
        _cleanup_free_ char *f1 = NULL, *f2 = NULL;
        int n = isolate_record_parse(text, &r);

        if (n < 0)
                return;
        f1 = isolate_record_format(&r);
        assert(isolate_record_parse(f1, &again) == r.n);
        f2 = isolate_record_format(&again);
        assert(streq(f1, f2));
        isolate_record_clear(&r);
        isolate_record_clear(&again);
}

static void check_masks(const char *text) {
        _cleanup_bitmap_ hwloc_bitmap_t m = hwloc_bitmap_alloc(), back = hwloc_bitmap_alloc();
        _cleanup_free_ char *hex = NULL;
        pid_t tgid, ppid;
        unsigned long long start;
        unsigned what;

        if (isolate_mask_parse(text, m) == 0) {
                hex = isolate_mask_format(m);
                assert(isolate_mask_parse(hex, back) == 0 && hwloc_bitmap_isequal(m, back));
        }
        if (isolate_list_parse(text, m) == 0)
                assert(!hwloc_bitmap_iszero(m) && hwloc_bitmap_last(m) <= ISOLATE_CPU_MAX);
        isolate_status_ids(text, &tgid, &ppid);
        (void)isolate_stat_start(text, &start);
        if (isolate_parse_what(text, &what) == 0)
                assert((what & ~(unsigned)ISOLATE_ALL) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *text = xmalloc(size + 1);

        memcpy(text, data, size);
        text[size] = '\0';
        check_record(text);
        check_masks(text);
        return 0;
}
