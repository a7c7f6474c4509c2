/* libxml2 tree walking for libvirt's domain XML, shared by lib/domxml.c and
 * lib/advise.c: libvirt's own elements carry no namespace. */
#pragma once

#include <stdbool.h>
#include <libxml/tree.h>

static inline bool is_elem(const xmlNode *n, const char *name) {
        return n && n->type == XML_ELEMENT_NODE && !n->ns && xmlStrEqual(n->name, BAD_CAST name);
}

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
