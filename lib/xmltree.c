/* libxml2 plumbing shared by domxml.c and advise.c (lib/xmltree.h). */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <libxml/parser.h>

#include "kvmtune/util.h"
#include "xmltree.h"

/* No NOENT (never substitute entities), no DTDLOAD, no network. */
#define XMLTREE_PARSE_FLAGS (XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_NOCDATA)

bool is_ns_elem(const xmlNode *n, const char *href, const char *name) {
        return n && n->type == XML_ELEMENT_NODE && n->ns && n->ns->href &&
               xmlStrEqual(n->ns->href, BAD_CAST href) && (!name || xmlStrEqual(n->name, BAD_CAST name));
}

static void discard_error(_unused_ void *ctx, _unused_ const char *msg, ...) {
}

/* XML_PARSE_NOERROR does not cover encoding errors, which libxml2 prints
 * through its generic handler: silence it for this parse only. */
static xmlDoc *read_quietly(const char *xml, int len) {
        xmlGenericErrorFunc saved = xmlGenericError;
        void *saved_ctx = xmlGenericErrorContext;
        xmlDoc *doc;

        xmlSetGenericErrorFunc(NULL, discard_error);
        doc = xmlReadMemory(xml, len, "domain.xml", NULL, XMLTREE_PARSE_FLAGS);
        xmlSetGenericErrorFunc(saved_ctx, saved);
        return doc;
}

static int parse_error(char *err, size_t errlen) {
        const xmlError *e = xmlGetLastError();
        const char *msg = e && e->message ? e->message : "parse error";
        int n = (int) strlen(msg);

        while (n > 0 && msg[n - 1] == '\n')
                n--;
        return error_set(err, errlen, -EINVAL, "not well-formed XML: line %d: %.*s", e ? e->line : 0, n, msg);
}

xmlDoc *read_xml(const char *xml, size_t len, char *err, size_t errlen) {
        xmlDoc *doc;

        if (!xml || len == 0)
                return error_set(err, errlen, -EINVAL, "empty document"), NULL;
        if (len > XMLTREE_MAX_SIZE)
                return error_set(err, errlen, -EINVAL, "document too large (%zu bytes, limit %u)",
                                 len, XMLTREE_MAX_SIZE), NULL;
        xmlResetLastError();
        if (!(doc = read_quietly(xml, (int) len)))
                return parse_error(err, errlen), NULL;
        if (doc->intSubset || doc->extSubset) {
                xmlFreeDoc(doc);
                return error_set(err, errlen, -EINVAL, "document type declarations are not allowed"), NULL;
        }
        return doc;
}

/* Bytes per unit of libvirt's unit= attribute; none: KiB. */
static int unit_bytes(const char *unit, uint64_t *ret) {
        static const char prefixes[] = "kmgtpe";
        const char *p;
        uint64_t base, v = 1;

        if (!unit || !*unit) {
                *ret = 1024;
                return 0;
        }
        if (strcasecmp(unit, "b") == 0 || strcasecmp(unit, "bytes") == 0) {
                *ret = 1;
                return 0;
        }
        if (!(p = strchr(prefixes, tolower((unsigned char) *unit))))
                return -EINVAL;
        if (!unit[1] || strcasecmp(unit + 1, "iB") == 0)
                base = 1024;
        else if (strcasecmp(unit + 1, "B") == 0)
                base = 1000;
        else
                return -EINVAL;
        for (long i = 0; i <= p - prefixes; i++)
                v *= base;
        *ret = v;
        return 0;
}

int size_kib(const xmlNode *n, const char *value, const char *what, uint64_t *ret,
             char *err, size_t errlen) {
        _cleanup_xmlchar_ xmlChar *unit = xmlGetNoNsProp(n, BAD_CAST "unit");
        uint64_t v, mult;

        if (unit_bytes((const char *) unit, &mult) < 0)
                return error_set(err, errlen, -EINVAL, "%s: unknown unit \"%s\"", what, (const char *) unit);
        if (safe_atou64(value, &v) < 0)
                return error_set(err, errlen, -EINVAL, "%s: invalid size \"%s\"", what, value ? value : "");
        if (v > UINT64_MAX / mult)
                return error_set(err, errlen, -EINVAL, "%s: size %s%s is too large", what, value,
                                 unit ? (const char *) unit : "");
        *ret = v * mult / 1024 + (v * mult % 1024 != 0);
        return 0;
}
