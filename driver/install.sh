#!/bin/sh
# Installs the neuronsim driver: DKMS sources in /usr/src/neuronsim-VERSION,
# the udev rule and the modules-load file; registers and builds it with DKMS
# when DESTDIR is empty and dkms is installed. Usage: driver/install.sh [DESTDIR]
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DESTDIR=${1:-${DESTDIR:-}}
# the project's release, as MODULE_VERSION (include/uapi/linux/neuronsim_version.h)
VERSION=$(sed -n 's/^#define NEURONSIM_VERSION "\(.*\)"$/\1/p' "$ROOT/include/uapi/linux/neuronsim_version.h")
[ -n "$VERSION" ] || { echo "install.sh: no NEURONSIM_VERSION in neuronsim_version.h" >&2; exit 1; }
SRC=$DESTDIR/usr/src/neuronsim-$VERSION

rm -rf "$SRC"
install -d "$SRC/driver" "$SRC/include/uapi/linux"
sed "s/@NEURONSIM_VERSION@/$VERSION/" "$ROOT/driver/dkms.conf" >"$SRC/dkms.conf"
chmod 644 "$SRC/dkms.conf"
install -m 644 "$ROOT/Kbuild" "$SRC/"
install -m 644 "$ROOT/driver/Kbuild" "$ROOT"/driver/nsim*.c "$ROOT"/driver/nsim*.h "$SRC/driver/"
install -m 644 "$ROOT"/include/uapi/linux/neuronsim*.h "$SRC/include/uapi/linux/"
install -D -m 644 "$ROOT/driver/99-neuronsim.rules" "$DESTDIR/etc/udev/rules.d/99-neuronsim.rules"
install -D -m 644 "$ROOT/driver/neuronsim.conf" "$DESTDIR/etc/modules-load.d/neuronsim.conf"
echo "installed neuronsim $VERSION sources in $SRC"

if [ -z "$DESTDIR" ]; then
	if command -v dkms >/dev/null; then
		dkms remove "neuronsim/$VERSION" --all >/dev/null 2>&1 || true
		dkms add "neuronsim/$VERSION"
		dkms install "neuronsim/$VERSION"
	else
		echo "dkms not installed: build by hand with" \
			"make -C /lib/modules/\$(uname -r)/build M=$SRC modules"
	fi
	command -v udevadm >/dev/null && udevadm control --reload || true
fi
