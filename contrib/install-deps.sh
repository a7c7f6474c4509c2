#!/bin/sh
# Installs what kvmtuned needs to build, run and be tested on Debian 12 (as root).
set -eu
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends \
        build-essential autoconf automake libtool pkg-config \
        libvirt-dev libhwloc-dev libnuma-dev libsystemd-dev libjson-c-dev libxml2-dev \
        libvirt-daemon-system libvirt-clients qemu-system-x86 \
        hwloc-nox mandoc systemd systemd-container procps jq util-linux python3 clang \
        universal-ctags debhelper dpkg-dev lintian tmux >/dev/null
