#!/bin/sh
# Checks that Debian's numpy reads the .npy files we write with the same values,
# and that neuron-run takes numpy-written inputs and gives numpy-correct outputs.
# Usage: test_neuron_run_numpy.sh NEURON_RUN TEST_TOOLS. Exit 77 (skip) without numpy.
set -eu
NEURON_RUN=$1
TEST_TOOLS=$2
PY=/usr/bin/python3

if ! [ -x "$PY" ] || ! "$PY" -c 'import numpy' 2>/dev/null; then
	echo "SKIP: $PY cannot import numpy (apt install python3-numpy)"
	exit 77
fi

dir=$(mktemp -d /tmp/nsim-numpy-XXXXXX)
trap 'rm -rf "$dir"' EXIT

# 1. Our writer, every dtype, read back by numpy.
"$TEST_TOOLS" --write-samples "$dir"
"$PY" - "$dir" <<'PYEOF'
import sys, numpy as np
d = sys.argv[1]
k = np.arange(6).reshape(2, 3)
want = {
    "f4": (np.float32, k * 0.5 - 1.0),
    "f2": (np.float16, k * 0.5 - 1.0),
    "i4": (np.int32, -k * 100000),
    "i8": (np.int64, -k * 10000000000),
    "u4": (np.uint32, k * 1000000000),
    "u8": (np.uint64, k * 10000000000000),
    "u1": (np.uint8, k * 50),
    "b1": (np.bool_, (k & 1).astype(bool)),
    "i1": (np.int8, -k * 20),
    "i2": (np.int16, -k * 1000),
    "u2": (np.uint16, k * 10000),
}
for name, (dt, vals) in want.items():
    a = np.load(f"{d}/sample_{name}.npy")
    assert a.dtype == np.dtype(dt), (name, a.dtype)
    assert a.shape == (2, 3), (name, a.shape)
    assert a.flags.c_contiguous
    assert np.array_equal(a, vals.astype(dt)), (name, a, vals)
# bf16 is written as ml_dtypes does ('<V2'); numpy without ml_dtypes sees
# 2-byte voids: reinterpret the bits as the high half of float32.
b = np.load(f"{d}/sample_bf16.npy")
assert b.dtype.itemsize == 2 and b.shape == (2, 3), b.dtype
f = (b.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
assert np.array_equal(f, (k * 0.5 - 1.0).astype(np.float32)), f
print("numpy reads every dtype we write")
PYEOF

# 2. neuron-run with numpy-written inputs (including a version 2.0 file and a
#    non-contiguous source array, which np.save writes in C order).
"$PY" - "$dir" <<'PYEOF'
import sys, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(0)
a = rng.standard_normal((2, 3)).astype(np.float32)
b = np.asfortranarray(rng.standard_normal((2, 3)).astype(np.float32))
i = np.array([-3, 5, 100, 7], dtype=np.int32)
np.save(f"{d}/a.npy", a)
np.save(f"{d}/b.npy", b)  # numpy stores Fortran arrays with fortran_order True
np.save(f"{d}/b_c.npy", np.ascontiguousarray(b))
with open(f"{d}/i.npy", "wb") as fh:
    np.lib.format.write_array(fh, i, version=(2, 0))
PYEOF

# A Fortran-order file is refused with a message saying so.
if "$NEURON_RUN" "$dir/add.neff" -i a="$dir/a.npy" -i b="$dir/b.npy" -i i="$dir/i.npy" -n \
	>"$dir/out.txt" 2>"$dir/err.txt"; then
	echo "FAIL: neuron-run accepted a fortran_order file"; exit 1
fi
grep -q "Fortran order" "$dir/err.txt" || { cat "$dir/err.txt"; echo "FAIL: no Fortran message"; exit 1; }

"$NEURON_RUN" "$dir/add.neff" -i a="$dir/a.npy" -i b="$dir/b_c.npy" -i i="$dir/i.npy" \
	-o "$dir/out" >"$dir/out.txt" 2>"$dir/err.txt" || { cat "$dir/out.txt" "$dir/err.txt"; exit 1; }
"$PY" - "$dir" <<'PYEOF'
import sys, numpy as np
d = sys.argv[1]
a, b, i = np.load(f"{d}/a.npy"), np.load(f"{d}/b_c.npy"), np.load(f"{d}/i.npy")
c, dd = np.load(f"{d}/out/c.npy"), np.load(f"{d}/out/d.npy")
assert c.dtype == np.float32 and c.shape == (2, 3)
assert np.array_equal(c, a + b), (c, a + b)
assert dd.dtype == np.int32 and np.array_equal(dd, i * i), dd
print("neuron-run outputs match numpy")
PYEOF
echo PASS
