/* Where the C unit tests find their inputs: the hwloc exports in
 * tests/data/topologies ($TOPOLOGIES), tests/fixtures ($FIXTURES) and the source
 * tree ($SRCDIR). make check exports the three variables; a test run by hand
 * falls back to the directories configure recorded in config.h. */
#pragma once

#include <stdio.h>
#include <stdlib.h>

#include "kvmtune/util.h"

static inline const char *test_topologies_dir(void) {
        return getenv("TOPOLOGIES") ?: TEST_TOPOLOGIES;
}

static inline const char *test_srcdir(void) {
        return getenv("SRCDIR") ?: TEST_SRCDIR;
}

static inline const char *test_fixtures_dir(void) {
        return getenv("FIXTURES") ?: TEST_SRCDIR "/tests/fixtures";
}

/* The path of an export, e.g. test_topology("2s-xeon-platinum8168-skylake-smt.xml"). */
static inline char *test_topology(const char *name) {
        return xasprintf("%s/%s", test_topologies_dir(), name);
}

/* The path of a fixture, e.g. test_fixture("domxml/minimal.xml"). */
static inline char *test_fixture(const char *rel) {
        return xasprintf("%s/%s", test_fixtures_dir(), rel);
}

/* A fixture file's contents, NUL-terminated (up to 1 MiB), its length in
 * *ret_len. A missing fixture is a broken tree: the test bails out. */
static inline char *test_read_fixture(const char *rel, size_t *ret_len) {
        _cleanup_free_ char *path = test_fixture(rel);
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        char *buf;

        if (!f) {
                printf("Bail out! cannot open %s\n", path);
                exit(1);
        }
        buf = xcalloc(1, 1 << 20);
        *ret_len = fread(buf, 1, (1 << 20) - 1, f);
        return buf;
}
