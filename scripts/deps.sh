#!/bin/sh
# Installs what neuronsim needs on a Debian machine: the Debian packages (only the
# missing ones), the clang runtime that matches whatever clang the release ships,
# and the Python venv of the PyTorch/XLA frontend. Idempotent: a second run only
# checks. Usage: scripts/deps.sh [--no-venv]   (run by `make deps`)
set -eu
cd "$(dirname "$0")/.."

SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
VENV=${NEURONSIM_VENV:-.venv}
# Debian's own interpreter: the python3 first on PATH may be another one (pyenv)
# that lacks venv support or Debian's packages.
PY=${NEURONSIM_PYTHON:-/usr/bin/python3}

PACKAGES="gcc clang make meson ninja-build pkg-config check libhwloc-dev
libnuma-dev libdnnl-dev libjansson-dev libxxhash-dev python3 python3-numpy
python3-venv python3-dev dataset-fashion-mnist linux-image-amd64 linux-headers-amd64 qemu-system-x86
busybox-static cpio sparse dwarves zlib1g-dev libzip-dev libncurses-dev tmux
chromium help2man"

missing() {
	for p in "$@"; do
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null |
			grep -q 'install ok installed' || echo "$p"
	done
}

apt_install() {
	[ -n "$*" ] || return 0
	echo "deps: installing $*"
	if [ -z "${APT_UPDATED:-}" ]; then
		$SUDO apt-get update -q
		APT_UPDATED=1
	fi
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "$@"
}

# shellcheck disable=SC2086
apt_install $(missing $PACKAGES)

# libFuzzer and the sanitizer runtimes live in a package named after clang's
# major version (libclang-rt-14-dev on Debian 12): ask the installed clang.
CLANG_MAJOR=$(clang -dumpversion | cut -d. -f1)
if [ ! -e "$(clang -print-file-name=libclang_rt.fuzzer-x86_64.a)" ] &&
   [ ! -e "$(clang -print-resource-dir)/lib/linux/libclang_rt.fuzzer-x86_64.a" ]; then
	apt_install $(missing "libclang-rt-$CLANG_MAJOR-dev")
fi
# ThreadSanitizer (make test-tsan) builds with gcc: its runtime, libtsan, comes
# with libgcc-N-dev (N = gcc's major version), which Debian's gcc depends on
# on amd64; installed here should a trimmed machine lack it.
if [ ! -e "$(gcc -print-file-name=libtsan.so)" ]; then
	apt_install $(missing "libgcc-$(gcc -dumpversion | cut -d. -f1)-dev")
	[ -e "$(gcc -print-file-name=libtsan.so)" ] ||
		{ echo "deps: gcc $(gcc -dumpversion) has no libtsan.so: make test-tsan cannot link" >&2; exit 1; }
fi
echo "deps: Debian packages present"

[ "${1:-}" = "--no-venv" ] && exit 0

# The frontend's venv: torch and torch_xla pinned in frontends/torch/requirements.txt.
# pip's cache (outside the checkout) makes a rebuilt venv cheap on a machine that
# built one before; the stamp skips pip when the requirements did not change.
# The stamp covers pyproject.toml too: a new console script or entry point needs
# the editable install redone even when the requirements did not change.
REQ=frontends/torch/requirements.txt
STAMP=$VENV/.neuronsim-requirements
WANT=$(cat "$REQ" frontends/torch/pyproject.toml)
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] && [ -x "$VENV/bin/python" ]; then
	echo "deps: venv $VENV up to date"
	exit 0
fi
# A new venv holds about 7.3 GB (4.3 GB of it torch's nvidia-* wheels, which
# the CUDA build cannot import without), and pip downloads about 3.6 GB of
# wheels first: say so before pip fails half way with ENOSPC.
if [ ! -x "$VENV/bin/python" ]; then
	need_gb=11
	dir=$(dirname "$VENV")
	free_kb=$(df -Pk "$dir" | awk 'NR == 2 { print $4 }')
	if [ "$free_kb" -lt $((need_gb * 1024 * 1024)) ]; then
		echo "deps: the venv $VENV needs about $need_gb GB free on the disk of $dir" \
			"(the download and the installed packages); $((free_kb / 1024 / 1024)) GB" \
			"free: free disk space, or set VENV= to a directory on a larger disk" >&2
		exit 1
	fi
fi
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
start=$(date +%s)
"$VENV/bin/python" -m pip install -qq --disable-pip-version-check -r "$REQ"
"$VENV/bin/python" -m pip install -qq --disable-pip-version-check --no-deps --no-build-isolation -e frontends/torch
printf "%s\n" "$WANT" > "$STAMP"
echo "deps: venv $VENV ready in $(( $(date +%s) - start )) s"
