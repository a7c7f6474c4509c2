#!/bin/sh
# --help and the man pages say the same: every option `kvmtuned --help` prints
# is documented in kvmtuned(8), every command and option `kvmtunectl --help`
# prints in kvmtunectl(1), and the man pages document no option the programs
# do not take. TAP.
set -u
srcdir=${SRCDIR:-$(dirname "$0")/../..}
builddir=${BUILDDIR:-.}

. "$(dirname "$0")/../tap.sh"

# Long options (--name) in a text, one per line, sorted, unique.
long_options() {
        grep -o -e '--[a-z][a-z0-9-]*' | sort -u
}

# Long options a man page marks up: "Fl -name", also within a line.
man_options() {
        grep -o -e 'Fl -[a-z][a-z0-9-]*' "$1" | sed 's/^Fl /-/' | sort -u
}

# Commands in kvmtunectl --help: the words indented by two blanks between
# "Commands:" and the next heading.
ctl_commands() {
        sed -n '/^Commands:/,/^[A-Z]/p' | sed -n 's/^  \([a-z][a-z-]*\).*/\1/p' | sort -u
}

# Commands a man page documents: ".It Cm name" in its COMMANDS section.
man_commands() {
        sed -n '/^\.Sh COMMANDS/,/^\.Sh /p' "$1" | sed -n 's/^\.It Cm \([a-z][a-z-]*\).*/\1/p' | sort -u
}

# check WHAT LIST-A LIST-B: every line of LIST-A is in LIST-B.
check_in() {
        missing=$(printf '%s\n' "$2" | while read -r w; do
                [ -z "$w" ] && continue
                printf '%s\n' "$3" | grep -qx -e "$w" || echo "$w"
        done)
        [ -z "$missing" ]
        ok_rc $? "$1"
        [ -z "$missing" ] || printf '%s\n' "$missing" | sed 's/^/#   missing: /'
}

for prog in daemon/kvmtuned cli/kvmtunectl; do
        bin=$builddir/$prog
        [ -x "$bin" ] || { echo "Bail out! $bin not built"; exit 1; }
done
d_help=$("$builddir/daemon/kvmtuned" --help)
ok_rc $? "kvmtuned --help exits 0"
c_help=$("$builddir/cli/kvmtunectl" --help)
ok_rc $? "kvmtunectl --help exits 0"

d_opts=$(printf '%s\n' "$d_help" | long_options)
c_opts=$(printf '%s\n' "$c_help" | long_options)
c_cmds=$(printf '%s\n' "$c_help" | ctl_commands)
d_man=$(man_options "$srcdir/man/kvmtuned.8")
c_man=$(man_options "$srcdir/man/kvmtunectl.1")
c_man_cmds=$(man_commands "$srcdir/man/kvmtunectl.1")

[ "$(printf '%s\n' "$d_opts" | grep -c .)" -ge 10 ]
ok_rc $? "kvmtuned --help lists its options ($(printf '%s ' $d_opts))"
[ "$(printf '%s\n' "$c_cmds" | grep -c .)" -ge 9 ]
ok_rc $? "kvmtunectl --help lists its commands ($(printf '%s ' $c_cmds))"

check_in "kvmtuned(8) documents every option of kvmtuned --help" "$d_opts" "$d_man"
check_in "kvmtuned --help lists every option of kvmtuned(8)" "$d_man" "$d_opts"
check_in "kvmtunectl(1) documents every option of kvmtunectl --help" "$c_opts" "$c_man"
check_in "kvmtunectl --help lists every option of kvmtunectl(1)" "$c_man" "$c_opts"
check_in "kvmtunectl(1) documents every command of kvmtunectl --help" "$c_cmds" "$c_man_cmds"
check_in "kvmtunectl --help lists every command of kvmtunectl(1)" "$c_man_cmds" "$c_cmds"

# Every long option a program takes (its getopt table) is in its --help.
table_options() {
        grep -o -e '{ *"[a-z][a-z0-9-]*", *[a-z_]*argument' "$1" | sed 's/{ *"\([^"]*\)".*/--\1/' | sort -u
}
check_in "kvmtuned --help lists every option of its getopt table" \
        "$(table_options "$srcdir/daemon/kvmtuned.c")" "$d_opts"
check_in "kvmtunectl --help lists every option of its getopt table" \
        "$(table_options "$srcdir/cli/kvmtunectl.c")" "$c_opts"

# Short options of kvmtuned: "-x, --name" in --help, "Fl x , Fl -name" in the page.
d_short=$(printf '%s\n' "$d_help" | sed -n 's/^ *-\([a-zA-Z]\), --\([a-z-]*\).*/\1 \2/p')
missing=$(printf '%s\n' "$d_short" | while read -r s l; do
        grep -q -e "^\.It Fl $s .*Fl -$l\( \|$\)" "$srcdir/man/kvmtuned.8" || echo "-$s, --$l"
done)
[ -z "$missing" ]
ok_rc $? "kvmtuned(8) pairs each short option with its long one as --help does"
[ -z "$missing" ] || printf '%s\n' "$missing" | sed 's/^/#   missing: /'

echo "1..$n"
[ "$failed" -eq 0 ]
