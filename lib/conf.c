#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <strings.h>
#include <sys/stat.h>

#include "kvmtune/conf.h"
#include "conf-priv.h"
#include "kvmtune/isolate.h"
#include "kvmtune/util.h"

#define NODE_OS_MAX 1023U               /* Linux MAX_NUMNODES is at most 1024 */
#define PAGE_COUNT_MAX 4294967295ULL    /* keeps count * page size well inside 64 bits */
#define KEYS_MAX 8                      /* most keys in one section */
#define SHOWN_MAX 80                    /* user text quoted in a message, at most */
#define SECTIONS_MAX 8

struct parser;

/* One key of a section: the setter parses the value into the config, returns 0
 * or -EINVAL; the caller then reports "bad value" with the allowed text. */
struct conf_key {
        const char *name;
        int (*set)(struct parser *p, const char *key, const char *value);
        const char *allowed;
};

struct conf_section {
        const char *name;
        bool pattern;                   /* [name "pattern"] rather than [name] */
        const struct conf_key *keys;
        size_t nkeys;
};

struct parser {
        struct conf *conf;
        const char *file;
        unsigned line;
        const struct conf_section *section;   /* NULL before the first header */
        int domain;                           /* index into conf->domains */
        unsigned seen[KEYS_MAX];              /* line each key was set on in this section */
        unsigned opened[SECTIONS_MAX];        /* line each [name] section started on in this file */
        char *err;
        size_t errlen;
};

static int parser_error(struct parser *p, const char *fmt, ...) _printf_(2, 3);
static int parser_error(struct parser *p, const char *fmt, ...) {
        char msg[1024];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        if (p->err && p->errlen > 0)
                snprintf(p->err, p->errlen, "%s:%u: %s", p->file, p->line, msg);
        return -EINVAL;
}

static int file_error(char *err, size_t errlen, const char *file, int r, const char *what) {
        if (err && errlen > 0)
                snprintf(err, errlen, "%s: %s: %s", file, what, strerror(-r));
        return r;
}

static int too_large_error(char *err, size_t errlen, const char *file) {
        if (err && errlen > 0)
                snprintf(err, errlen, "%s: file too large (max %d bytes)", file, CONF_FILE_MAX);
        return -EFBIG;
}

/* Long user text is cut in messages so that "(allowed: ...)" always fits. */
static const char *shown(const char *s, char *buf, size_t len) {
        if (strlen(s) <= SHOWN_MAX)
                return s;
        snprintf(buf, len, "%.*s...", (int)SHOWN_MAX, s);
        return buf;
}

static char *skip_space(const char *s) {
        while (*s == ' ' || *s == '\t')
                s++;
        return (char *)s;
}

static void strip_trailing_space(char *s) {
        size_t n = strlen(s);

        while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
                s[--n] = '\0';
}

/* A '#' or ';' at the start or after whitespace begins a comment, so values such
 * as "qemu+ssh://host/system?x=1#y" keep their '#'. */
static void strip_comment(char *s) {
        for (char *c = s; *c; c++)
                if ((*c == '#' || *c == ';') && (c == s || c[-1] == ' ' || c[-1] == '\t')) {
                        *c = '\0';
                        return;
                }
}

static bool is_comment_or_empty(const char *s) {
        s = skip_space(s);
        return *s == '\0' || *s == '#' || *s == ';';
}

/* Digits only (no sign, no spaces), at most max. Advances *s past the digits. */
static int parse_number(const char **s, unsigned long long max, unsigned long long *ret) {
        unsigned long long v = 0;
        const char *c = *s;

        if (!isdigit((unsigned char)*c))
                return -EINVAL;
        for (; isdigit((unsigned char)*c); c++) {
                v = v * 10 + (unsigned)(*c - '0');
                if (v > max)
                        return -EINVAL;
        }
        *s = c;
        *ret = v;
        return 0;
}

static int parse_number_all(const char *s, unsigned long long max, unsigned long long *ret) {
        if (parse_number(&s, max, ret) < 0 || *s != '\0')
                return -EINVAL;
        return 0;
}

static struct policy *parser_policy(struct parser *p) {
        if (p->section->pattern)
                return &p->conf->domains[p->domain].policy;
        return &p->conf->defaults;
}

static int set_uri(struct parser *p, _unused_ const char *key, const char *value) {
        if (*value == '\0')
                return -EINVAL;
        free(p->conf->uri);
        p->conf->uri = xstrdup(value);
        return 0;
}

static int set_reserved_cpus(struct parser *p, _unused_ const char *key, const char *value) {
        hwloc_bitmap_t set = hwloc_bitmap_alloc();
        int r;

        if (!set)
                abort();
        r = bitmap_parse_list(value, CPU_LIST_MAX, set);
        hwloc_bitmap_free(set);
        if (r < 0)
                return r;
        free(p->conf->reserved_cpus);
        p->conf->reserved_cpus = xstrdup(value);
        return 0;
}

static int set_isolation(struct parser *p, _unused_ const char *key, const char *value) {
        return isolate_parse_what(value, &p->conf->isolation);
}

/* An absolute cgroup path without "." or ".." components. */
static int set_isolation_scope(struct parser *p, _unused_ const char *key, const char *value) {
        if (value[0] != '/' || strstr(value, "/./") || strstr(value, "/../") ||
            (strlen(value) >= 2 && streq(value + strlen(value) - 2, "/.")) ||
            (strlen(value) >= 3 && streq(value + strlen(value) - 3, "/..")))
                return -EINVAL;
        free(p->conf->isolation_scope);
        p->conf->isolation_scope = xstrdup(value);
        return 0;
}

static int set_policy(struct parser *p, const char *key, const char *value) {
        return policy_set(parser_policy(p), key, value) < 0 ? -EINVAL : 0;
}

static int hugepages_add_node(struct conf_hugepages *hp, const char *tok) {
        unsigned long long node, count;

        if (parse_number(&tok, NODE_OS_MAX, &node) < 0 || *tok++ != ':' ||
            parse_number_all(tok, PAGE_COUNT_MAX, &count) < 0)
                return -EINVAL;
        if (hp->nnode >= (int)ELEMENTSOF(hp->node_os))
                return -EINVAL;
        for (int i = 0; i < hp->nnode; i++)
                if (hp->node_os[i] == node)
                        return -EINVAL;
        hp->node_os[hp->nnode] = (unsigned)node;
        hp->count[hp->nnode++] = count;
        hp->total += count;
        hp->per_node = true;
        return 0;
}

/* "0:16 1:16" (spaces or commas between pairs) or a plain total "32". */
static int hugepages_parse(const char *value, struct conf_hugepages *hp) {
        _cleanup_free_ char *copy = xstrdup(value);
        char *save = NULL, *tok;

        *hp = (struct conf_hugepages){ .set = true };
        if (!strchr(value, ':'))
                return parse_number_all(value, PAGE_COUNT_MAX, &hp->total);
        for (tok = strtok_r(copy, " \t,", &save); tok; tok = strtok_r(NULL, " \t,", &save))
                if (hugepages_add_node(hp, tok) < 0)
                        return -EINVAL;
        return hp->nnode > 0 ? 0 : -EINVAL;
}

static int set_hugepages(struct parser *p, const char *key, const char *value) {
        struct conf_hugepages hp;
        int idx = streq(key, "1G") ? TOPO_PAGE_1G : TOPO_PAGE_2M;

        if (hugepages_parse(value, &hp) < 0)
                return -EINVAL;
        p->conf->hugepages[idx] = hp;
        return 0;
}

static int set_hook_timeout(struct parser *p, _unused_ const char *key, const char *value) {
        unsigned long long ms;

        if (parse_number_all(value, CONF_HOOK_TIMEOUT_MAX_MS, &ms) < 0 ||
            ms < CONF_HOOK_TIMEOUT_MIN_MS)
                return -EINVAL;
        p->conf->hook_timeout_ms = (int)ms;
        return 0;
}

static int set_persist_placement(struct parser *p, _unused_ const char *key, const char *value) {
        if (!strcasecmp(value, "yes") || !strcasecmp(value, "true") || !strcasecmp(value, "on") ||
            streq(value, "1"))
                p->conf->persist_placement = true;
        else if (!strcasecmp(value, "no") || !strcasecmp(value, "false") || !strcasecmp(value, "off") ||
                 streq(value, "0"))
                p->conf->persist_placement = false;
        else
                return -EINVAL;
        return 0;
}

static const struct conf_key libvirt_keys[] = {
        { "uri", set_uri, "a libvirt connection URI such as qemu:///system" },
};
static const struct conf_key host_keys[] = {
        { "reserved_cpus", set_reserved_cpus, "a CPU list such as 0,1 or 0-3,8; empty for none" },
        { "isolation", set_isolation, "yes, no, or a list of tasks, guests, irqs, workqueues" },
        { "isolation_scope", set_isolation_scope, "an absolute cgroup path such as / or /kvmtuned-test" },
};
static const struct conf_key policy_keys[] = {
        { "cpu", set_policy, "dedicated, shared, none" },
        { "threads", set_policy, "prefer, isolate, require" },
        { "emulator", set_policy, "isolate, share, vcpus" },
        { "iothreads", set_policy, "dedicated, emulator, shared" },
        { "numa", set_policy, "strict, preferred, none" },
        { "hugepages", set_policy, "1G, 2M, none" },
        { "placement", set_policy, "best-effort, strict" },
};
static const struct conf_key hugepages_keys[] = {
        { "1G", set_hugepages, "a page count, or NODE:COUNT pairs such as \"0:16 1:16\"" },
        { "2M", set_hugepages, "a page count, or NODE:COUNT pairs such as \"0:512 1:512\"" },
};
static const struct conf_key daemon_keys[] = {
        { "hook_timeout", set_hook_timeout, "milliseconds from 100 to 30000" },
        { "persist_placement", set_persist_placement, "yes or no" },
};

#define SECTION(n, pat, k) { n, pat, k, ELEMENTSOF(k) }
static const struct conf_section sections[] = {
        SECTION("libvirt", false, libvirt_keys),
        SECTION("host", false, host_keys),
        SECTION("defaults", false, policy_keys),
        SECTION("domain", true, policy_keys),
        SECTION("hugepages", false, hugepages_keys),
        SECTION("daemon", false, daemon_keys),
};
#undef SECTION

_Static_assert(ELEMENTSOF(policy_keys) <= KEYS_MAX, "raise KEYS_MAX");
_Static_assert(ELEMENTSOF(sections) <= SECTIONS_MAX, "raise SECTIONS_MAX");

#define SECTIONS_KNOWN "libvirt, host, defaults, domain \"GLOB\", hugepages, daemon"

static const struct conf_section *section_find(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(sections); i++)
                if (streq(sections[i].name, name))
                        return &sections[i];
        return NULL;
}

static int section_key_index(const struct conf_section *s, const char *key) {
        for (size_t i = 0; i < s->nkeys; i++)
                if (streq(s->keys[i].name, key))
                        return (int)i;
        return -ENOENT;
}

static const char *section_keys_list(const struct conf_section *s, char *buf, size_t len) {
        size_t n = 0;

        buf[0] = '\0';
        for (size_t i = 0; i < s->nkeys && n < len; i++)
                n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? ", " : "", s->keys[i].name);
        return buf;
}

/* "[defaults]" or "[domain "db-*"]" for messages. */
static const char *parser_section_label(const struct parser *p, char *buf, size_t len) {
        char cut[SHOWN_MAX + 4];

        if (p->section->pattern)
                snprintf(buf, len, "[%s \"%s\"]", p->section->name,
                         shown(p->conf->domains[p->domain].pattern, cut, sizeof cut));
        else
                snprintf(buf, len, "[%s]", p->section->name);
        return buf;
}

/* A pattern seen before (earlier in the file or in an earlier file) names the
 * same section: its keys are overridden in place, its position is kept. */
static int conf_domain_get(struct conf *c, const char *pattern) {
        for (int i = 0; i < c->ndomain; i++)
                if (streq(c->domains[i].pattern, pattern))
                        return i;
        c->domains = xrealloc(c->domains, (size_t)(c->ndomain + 1) * sizeof *c->domains);
        c->domains[c->ndomain] = (struct conf_domain){
                .pattern = xstrdup(pattern),
                .policy.source = POLICY_SOURCE_CONFIG,
        };
        return c->ndomain++;
}

static int parser_begin_section(struct parser *p, const char *name, const char *pattern) {
        const struct conf_section *s = section_find(name);
        char cut[SHOWN_MAX + 4];

        if (!s)
                return parser_error(p, "unknown section [%s] (known: %s)", shown(name, cut, sizeof cut),
                                    SECTIONS_KNOWN);
        if (s->pattern && !pattern)
                return parser_error(p, "section [%s] needs a pattern, e.g. [%s \"db-*\"]", name, name);
        if (!s->pattern && pattern)
                return parser_error(p, "section [%s] takes no pattern", name);
        if (pattern && *pattern == '\0')
                return parser_error(p, "empty pattern in [%s \"\"]", name);
        /* Twice in one file is a slip (keys would merge unseen); a drop-in
         * setting the section again is how overrides are written. */
        if (!pattern && p->opened[s - sections])
                return parser_error(p, "section [%s] appears twice in this file (first on line %u); "
                                    "put its keys in one section", name, p->opened[s - sections]);
        if (!pattern)
                p->opened[s - sections] = p->line;
        p->section = s;
        memset(p->seen, 0, sizeof p->seen);
        if (pattern)
                p->domain = conf_domain_get(p->conf, pattern);
        return 0;
}

/* [name] or [name "pattern"], optionally followed by a comment. */
static int parser_header(struct parser *p, char *s) {
        char *name = skip_space(s + 1), *pattern = NULL, *end, cut[SHOWN_MAX + 4];

        for (end = name; isalnum((unsigned char)*end) || *end == '_'; end++)
                ;
        s = skip_space(end);
        if (*s == '"') {
                pattern = s + 1;
                if (!(s = strchr(pattern, '"')))
                        return parser_error(p, "unterminated pattern in section header (expected [domain \"GLOB\"])");
                *s = '\0';
                s = skip_space(s + 1);
        }
        if (*s != ']' && !strchr(s, ']'))
                return parser_error(p, "unterminated section header (expected [NAME] or [domain \"GLOB\"])");
        if (*s != ']')
                return parser_error(p, "malformed section header (expected [NAME] or [domain \"GLOB\"])");
        if (!is_comment_or_empty(s + 1))
                return parser_error(p, "unexpected text after section header: \"%s\"",
                                    shown(skip_space(s + 1), cut, sizeof cut));
        *end = '\0';
        return parser_begin_section(p, name, pattern);
}

static int parser_set(struct parser *p, const char *key, const char *value) {
        char label[SHOWN_MAX + 64], known[256], kcut[SHOWN_MAX + 4], vcut[SHOWN_MAX + 4];
        const char *k = shown(key, kcut, sizeof kcut);
        int i;

        if (!p->section)
                return parser_error(p, "key \"%s\" outside of any section (start one with [NAME])", k);
        parser_section_label(p, label, sizeof label);
        i = section_key_index(p->section, key);
        if (i < 0)
                return parser_error(p, "unknown key \"%s\" in %s (known: %s)", k, label,
                                    section_keys_list(p->section, known, sizeof known));
        if (p->seen[i])
                return parser_error(p, "duplicate key \"%s\" in %s (first set on line %u)", k, label, p->seen[i]);
        if (p->section->keys[i].set(p, key, value) < 0)
                return parser_error(p, "bad value \"%s\" for %s in %s (allowed: %s)", shown(value, vcut, sizeof vcut),
                                    k, label, p->section->keys[i].allowed);
        p->seen[i] = p->line;
        return 0;
}

static int parser_assignment(struct parser *p, char *s) {
        char *eq = strchr(s, '='), *value;

        if (!eq)
                return parser_error(p, "expected \"key = value\", a [section] header or a comment");
        *eq = '\0';
        strip_trailing_space(s);
        if (*s == '\0')
                return parser_error(p, "missing key before \"=\"");
        value = skip_space(eq + 1);
        strip_comment(value);
        strip_trailing_space(value);
        return parser_set(p, s, value);
}

static int parser_line(struct parser *p, char *line) {
        char *s = skip_space(line);

        if (is_comment_or_empty(s))
                return 0;
        if (*s == '[')
                return parser_header(p, s);
        return parser_assignment(p, s);
}

/* Splits the buffer into lines (LF or CRLF) and parses each. */
static int parser_buffer(struct parser *p, const char *text, size_t len) {
        char line[CONF_LINE_MAX + 1];

        if (len > CONF_FILE_MAX)
                return too_large_error(p->err, p->errlen, p->file);
        p->section = NULL;
        for (size_t pos = 0; pos < len; ) {
                const char *nl = memchr(text + pos, '\n', len - pos);
                size_t end = nl ? (size_t)(nl - text) : len, n = end - pos;
                int r;

                p->line++;
                if (n > 0 && text[end - 1] == '\r')
                        n--;
                if (n > CONF_LINE_MAX)
                        return parser_error(p, "line too long (max %d bytes)", CONF_LINE_MAX);
                if (memchr(text + pos, '\0', n))
                        return parser_error(p, "NUL byte in line");
                memcpy(line, text + pos, n);
                line[n] = '\0';
                if ((r = parser_line(p, line)) < 0)
                        return r;
                pos = end + 1;
        }
        return 0;
}

static int parse_text(struct conf *c, const char *file, const char *text, size_t len,
                      char *err, size_t errlen) {
        struct parser p = { .conf = c, .file = file, .err = err, .errlen = errlen };

        return parser_buffer(&p, text, len);
}

/* Reads at most CONF_FILE_MAX + 1 bytes so an oversized file is detected
 * without reading it all. */
static int read_fd(int fd, char **ret, size_t *ret_len) {
        _cleanup_free_ char *buf = xmalloc(CONF_FILE_MAX + 1);
        size_t n = 0;

        while (n < CONF_FILE_MAX + 1) {
                ssize_t k = read(fd, buf + n, CONF_FILE_MAX + 1 - n);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        break;
                n += (size_t)k;
        }
        *ret = buf;
        buf = NULL;
        *ret_len = n;
        return 0;
}

static int read_file(const char *path, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        struct stat st;

        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (S_ISDIR(st.st_mode))
                return -EISDIR;
        return read_fd(fd, ret, ret_len);
}

/* missing_ok: a file that does not exist is no error. */
static int parse_file(struct conf *c, const char *path, bool missing_ok, char *err, size_t errlen) {
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r = read_file(path, &text, &len);

        if (r == -ENOENT && missing_ok)
                return 0;
        if (r < 0)
                return file_error(err, errlen, path, r, "cannot read");
        return parse_text(c, path, text, len, err, errlen);
}

static int dropin_filter(const struct dirent *d) {
        size_t n = strlen(d->d_name);

        return d->d_name[0] != '.' && n > 5 && streq(d->d_name + n - 5, ".conf");
}

/* Byte order, not the locale's collation: the order must not depend on LANG. */
static int dropin_compare(const struct dirent **a, const struct dirent **b) {
        return strcmp((*a)->d_name, (*b)->d_name);
}

static void dirents_free(struct dirent **list, int n) {
        for (int i = 0; i < n; i++)
                free(list[i]);
        free(list);
}

static int parse_dropins(struct conf *c, const char *path, char *err, size_t errlen) {
        _cleanup_free_ char *dir = xasprintf("%s.d", path);
        struct dirent **list = NULL;
        int n = scandir(dir, &list, dropin_filter, dropin_compare), r = 0;

        if (n < 0)
                return errno == ENOENT ? 0 : file_error(err, errlen, dir, -errno, "cannot read directory");
        for (int i = 0; i < n && r >= 0; i++) {
                _cleanup_free_ char *file = xasprintf("%s/%s", dir, list[i]->d_name);

                r = parse_file(c, file, false, err, errlen);
        }
        dirents_free(list, n);
        return r;
}

static struct conf *conf_new(void) {
        struct conf *c = xcalloc(1, sizeof *c);

        c->uri = xstrdup(CONF_URI_DEFAULT);
        policy_init_default(&c->defaults);
        c->hook_timeout_ms = CONF_HOOK_TIMEOUT_DEFAULT_MS;
        c->persist_placement = true;
        c->isolation = ISOLATE_ALL;
        c->isolation_scope = xstrdup("/");
        return c;
}

struct conf *conf_free(struct conf *c) {
        if (!c)
                return NULL;
        for (int i = 0; i < c->ndomain; i++)
                free(c->domains[i].pattern);
        free(c->domains);
        free(c->uri);
        free(c->reserved_cpus);
        free(c->isolation_scope);
        free(c);
        return NULL;
}

int conf_load(const char *path, bool missing_ok, struct conf **ret, char *err, size_t errlen) {
        _cleanup_(conf_freep) struct conf *c = conf_new();
        int r;

        if (!path)
                path = CONF_PATH_DEFAULT;
        if ((r = parse_file(c, path, missing_ok, err, errlen)) < 0)
                return r;
        if ((r = parse_dropins(c, path, err, errlen)) < 0)
                return r;
        *ret = c;
        c = NULL;
        return 0;
}

int conf_load_string(const char *name, const char *text, struct conf **ret, char *err, size_t errlen) {
        _cleanup_(conf_freep) struct conf *c = conf_new();
        int r;

        if ((r = parse_text(c, name ? name : "<string>", text, strlen(text), err, errlen)) < 0)
                return r;
        *ret = c;
        c = NULL;
        return 0;
}

int conf_reserved_cpus(const struct conf *c, hwloc_bitmap_t *ret) {
        hwloc_bitmap_t set;

        if (!c || !c->reserved_cpus) {
                *ret = NULL;
                return 0;
        }
        if (!(set = hwloc_bitmap_alloc()))
                abort();
        if (bitmap_parse_list(c->reserved_cpus, CPU_LIST_MAX, set) < 0) {
                hwloc_bitmap_free(set);
                return -EINVAL;
        }
        *ret = set;
        return 0;
}

const struct conf_domain *conf_domain_match(const struct conf *c, const char *name) {
        for (int i = 0; c && name && i < c->ndomain; i++)
                if (fnmatch(c->domains[i].pattern, name, 0) == 0)
                        return &c->domains[i];
        return NULL;
}

void conf_policy_for(const struct conf *c, const char *name, const struct policy *metadata,
                     struct policy *ret) {
        const struct conf_domain *d = conf_domain_match(c, name);
        struct policy layer;

        policy_init_default(ret);
        if (c) {
                layer = c->defaults;
                layer.source = POLICY_SOURCE_DEFAULTS;
                policy_merge(ret, &layer);
        }
        if (d) {
                layer = d->policy;
                layer.source = POLICY_SOURCE_CONFIG;
                policy_merge(ret, &layer);
        }
        if (metadata && metadata->set) {
                layer = *metadata;
                layer.source = POLICY_SOURCE_METADATA;
                policy_merge(ret, &layer);
        }
}
