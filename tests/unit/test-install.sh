#!/bin/sh
# `make install DESTDIR=...` from the build tree installs every file an operator
# needs below DESTDIR, with the units pointing at the installed daemon; a
# second install keeps an edited /etc/kvmtuned/kvmtuned.conf, and uninstall
# removes the sample configuration only while it is unchanged. TAP.
set -u
srcdir=${SRCDIR:-$(dirname "$0")/../..}
builddir=${BUILDDIR:-.}
make=${MAKE:-make}

tmp=$(mktemp -d /tmp/test-install.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
dest=$tmp/root

. "$(dirname "$0")/../tap.sh"

# A clean environment: no jobserver or variables of the make running the tests.
run_make() {
        env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u MAKEOVERRIDES \
                "$make" -s -C "$builddir" "$@" DESTDIR="$dest" >"$tmp/make.log" 2>&1
        r=$?
        [ $r -eq 0 ] || sed 's/^/#   /' "$tmp/make.log"
        return $r
}

# Where the hook goes: libvirt/hooks/qemu.d by default, /usr/libexec/kvmtuned in
# the Debian package (--with-libvirthookdir): its last two components.
hookdir=$(sed -n 's/^libvirthookdir = //p' "$builddir/Makefile")
hook="$(basename "$(dirname "$hookdir")")/$(basename "$hookdir")/kvmtuned"

# The one installed file whose path ends in $1 (below DESTDIR), or nothing.
installed() {
        find "$dest" \( -type f -o -type l \) -path "*/$1" | head -n 1
}

run_make install
ok_rc $? "make install DESTDIR=..."

for f in sbin/kvmtuned bin/kvmtunectl "$hook"; do
        p=$(installed "$f")
        [ -n "$p" ] && [ -x "$p" ]
        ok_rc $? "installs $f, executable"
done
for f in systemd/system/kvmtuned.service systemd/system/kvmtuned-hugepages.service \
        systemd/system/kvmtuned-metrics.service systemd/system/kvmtuned-metrics.timer \
        man/man8/kvmtuned.8 man/man1/kvmtunectl.1 man/man5/kvmtuned.conf.5 \
        kvmtuned/kvmtuned.conf bash-completion/completions/kvmtunectl; do
        p=$(installed "$f")
        [ -n "$p" ] && [ -s "$p" ]
        ok_rc $? "installs $f"
done
d=$(find "$dest" -type d -path '*/kvmtuned/kvmtuned.conf.d' | head -n 1)
[ -n "$d" ]
ok_rc $? "creates the drop-in directory kvmtuned.conf.d"
conf=$(installed kvmtuned/kvmtuned.conf)
cmp -s "$srcdir/conf/kvmtuned.conf" "$conf"
ok_rc $? "the installed configuration is the sample"

# The units run the installed daemon: their path exists below DESTDIR.
for u in kvmtuned.service kvmtuned-hugepages.service kvmtuned-metrics.service; do
        p=$(installed "systemd/system/$u")
        exe=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$p" 2>/dev/null | head -n 1)
        case $exe in /*) [ -x "$dest$exe" ] ;; *) false ;; esac
        ok_rc $? "$u: ExecStart=$exe is the installed program"
        ! grep -q '@[a-z_]*@' "$p" 2>/dev/null
        ok_rc $? "$u: no unsubstituted @...@"
done

# Nothing else: every installed file is one of the above (a new install rule
# belongs in this list).
extra=$(find "$dest" -type f | grep -v -e '/sbin/kvmtuned$' -e '/bin/kvmtunectl$' \
        -e "/$hook\$" -e '/systemd/system/kvmtuned.service$' \
        -e '/systemd/system/kvmtuned-hugepages.service$' -e '/man8/kvmtuned.8$' \
        -e '/systemd/system/kvmtuned-metrics.service$' -e '/systemd/system/kvmtuned-metrics.timer$' \
        -e '/man1/kvmtunectl.1$' -e '/man5/kvmtuned.conf.5$' -e '/kvmtuned/kvmtuned.conf$' \
        -e '/bash-completion/completions/kvmtunectl$')
[ -z "$extra" ]
ok_rc $? "no other files installed"
[ -z "$extra" ] || printf '%s\n' "$extra" | sed 's/^/#   unexpected: /'

# An edited configuration survives a second install ...
printf '\n# edited by the operator\n' >>"$conf"
cp "$conf" "$tmp/edited"
run_make install
ok_rc $? "make install again over an edited configuration"
cmp -s "$tmp/edited" "$conf"
ok_rc $? "the edited configuration is kept"

# ... and uninstall.
run_make uninstall
ok_rc $? "make uninstall"
cmp -s "$tmp/edited" "$conf"
ok_rc $? "uninstall keeps the edited configuration"
[ -z "$(installed sbin/kvmtuned)" ] && [ -z "$(installed systemd/system/kvmtuned.service)" ]
ok_rc $? "uninstall removes the daemon and the units"

# The unchanged sample is removed by uninstall.
rm -f "$conf"
run_make install && run_make uninstall
ok_rc $? "install and uninstall with no configuration in place"
[ ! -e "$conf" ]
ok_rc $? "uninstall removes the unchanged sample configuration"
left=$(find "$dest" -type f)
[ -z "$left" ]
ok_rc $? "nothing left after uninstall"
[ -z "$left" ] || printf '%s\n' "$left" | sed 's/^/#   left: /'

echo "1..$n"
[ "$failed" -eq 0 ]
