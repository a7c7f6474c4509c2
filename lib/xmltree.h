/* libxml2 plumbing shared by lib/domxml.c and lib/advise.c (not installed):
 * the one hardened reader, libvirt's size units, a checked number parser and
 * the tree walkers. libvirt's own elements carry no namespace. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <libxml/tree.h>

#include "kvmtune/domxml.h"

/* Domain XML comes from libvirt, the hook's stdin or a file; anything bigger is not a domain. */
#define XMLTREE_MAX_SIZE (4u * 1024 * 1024)

static inline void xmlFreeDocp(xmlDoc **d) { if (*d) xmlFreeDoc(*d); }
static inline void xmlFreep(xmlChar **s) { if (*s) xmlFree(*s); }
#define _cleanup_xmldoc_ _cleanup_(xmlFreeDocp)
#define _cleanup_xmlchar_ _cleanup_(xmlFreep)

static inline bool is_elem(const xmlNode *n, const char *name) {
        return n && n->type == XML_ELEMENT_NODE && !n->ns && xmlStrEqual(n->name, BAD_CAST name);
}

/* An element in namespace href; any name when name is NULL. */
bool is_ns_elem(const xmlNode *n, const char *href, const char *name);

/* The first child element called name, or NULL (parent may be NULL). */
static inline xmlNode *child(const xmlNode *parent, const char *name) {
        for (xmlNode *c = parent ? parent->children : NULL; c; c = c->next)
                if (is_elem(c, name))
                        return c;
        return NULL;
}

static inline xmlNode *next_sibling(const xmlNode *n, const char *name) {
        for (xmlNode *c = n->next; c; c = c->next)
                if (is_elem(c, name))
                        return c;
        return NULL;
}

#define FOREACH_CHILD(c, parent, name) \
        for (xmlNode *c = child((parent), (name)); c; c = next_sibling(c, (name)))

/* Parses len bytes of XML: no network, no DTD (a document type declaration is
 * refused: libvirt never writes one and entities are an attack), entities never
 * substituted, libxml2's own error output silenced. Returns the document (the
 * caller frees it) or NULL with "not well-formed XML: line N: ..." or why in err. */
xmlDoc *read_xml(const char *xml, size_t len, char *err, size_t errlen);

/* value with n's unit= attribute (libvirt's virScaleInteger(): b/bytes, k M G T
 * P E alone or with iB (powers of 1024) or B (powers of 1000), case-insensitive;
 * none: KiB) to KiB, rounded up like libvirt. what names the value in err.
 * Returns 0 or -EINVAL. */
int size_kib(const xmlNode *n, const char *value, const char *what, uint64_t *ret,
             char *err, size_t errlen);

/* The facts of domxml_parse() read from a tree already parsed by read_xml()
 * (root: the <domain> element). Returns 0 or -EINVAL (message in err). */
int domxml_read_root(const xmlNode *root, struct domxml **ret, char *err, size_t errlen);
