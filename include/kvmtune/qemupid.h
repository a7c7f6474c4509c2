/* Which process is a libvirt domain's QEMU, for every name libvirt accepts.
 *
 * The domain name is a poor key: QEMU's command line doubles its commas
 * ("-name guest=a,,b"), and libvirt 9.0 writes the pid file under the
 * XML-escaped name ("a&amp;b.pid") while the hook and the API give the raw one.
 * Two things hold for every name: libvirt's status XML, DIR/NAME.xml under the
 * raw name, whose root element <domstatus ... pid='N'> names QEMU (saved before
 * the started hook runs), and QEMU's "-uuid UUID" argument. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define QEMUPID_STATE_DIR "/run/libvirt/qemu"   /* libvirt's qemu:///system state */

/* The pid libvirt recorded for domain name (the raw name) in dir below root
 * (NULL: the host): from dir/NAME.xml, else dir/NAME.pid (older layouts, test
 * fixtures) when the status XML names none. 0, or the pid file's error
 * (-ENOENT: neither exists; -EINVAL: not a pid, or a name holding '/'). */
int qemupid_read(const char *root, const char *dir, const char *name, pid_t *ret);

/* Whether process pid (below root) is the QEMU of the domain with this uuid:
 * its command line carries "-uuid UUID". False when it cannot be read. */
bool qemupid_is_domain(const char *root, pid_t pid, const char *uuid);
