"""The protobuf wire format, read and written without a protobuf package: the one
codec of xplane.py (profiles) and hlo_edit.py (HloModuleProto edits)."""

_MASK64 = (1 << 64) - 1


def encode_varint(n):
    """n as a varint; a negative n as its 64-bit two's complement, as int64 fields
    are encoded."""
    n &= _MASK64
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def read_varint(buf, i):
    """The varint at buf[i] and the index after it."""
    shift = n = 0
    while True:
        if i >= len(buf):
            raise ValueError("truncated varint")
        b = buf[i]
        i += 1
        n |= (b & 0x7F) << shift
        if not b & 0x80:
            return n, i
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def iter_fields(buf):
    """(field, wire_type, value, raw bytes of the whole field) of one message, in
    order; value is an int for varints, bytes otherwise."""
    i = 0
    while i < len(buf):
        start = i
        key, i = read_varint(buf, i)
        field, wt = key >> 3, key & 7
        if wt == 0:
            v, i = read_varint(buf, i)
        elif wt == 1:
            v, i = buf[i:i + 8], i + 8
        elif wt == 2:
            ln, i = read_varint(buf, i)
            v, i = buf[i:i + ln], i + ln
        elif wt == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise ValueError(f"unsupported wire type {wt} of field {field}")
        if i > len(buf):
            raise ValueError(f"truncated field {field}")
        yield field, wt, v, buf[start:i]
