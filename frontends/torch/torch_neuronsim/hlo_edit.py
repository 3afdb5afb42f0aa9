"""Small edits of HLO modules for neuronsim-bisect: every instruction of the entry
computation made an output, in HLO text (what snapshots carry) and in a serialized
xla.HloModuleProto (what torch_xla compiles), so three backends can be compared
instruction by instruction.

The protobuf side is a plain wire-format reader/writer (no protobuf package needed):
it understands the few fields of hlo.proto it edits and copies every other field
byte for byte.
"""

import re

from ._pb import encode_varint, iter_fields

# element types a NEFF output can have (docs/neff.md); anything else is not compared
_OUTPUT_ETYPES = {"f32", "bf16", "f16", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64",
                  "pred"}

_INST_RE = re.compile(r"^(\s*)(ROOT\s+)?%?([A-Za-z0-9_.\-]+)\s*=\s*")
_ARRAY_RE = re.compile(r"([a-z][a-z0-9]*)\[([^\]]*)\](\{[^}]*\})?")
_OPCODE_RE = re.compile(r"\s*([a-z][a-z0-9\-]*)\(")
_META_RE = {
    "op_type": re.compile(r'op_type="([^"]*)"'),
    "source_file": re.compile(r'source_file="([^"]*)"'),
    "source_line": re.compile(r"source_line=(\d+)"),
}


class Inst:
    """One instruction line of the entry computation."""

    def __init__(self, name, shape, opcode, line, is_root, text):
        self.name, self.shape, self.opcode = name, shape, opcode
        self.line = line                # 1-based line in the module text
        self.is_root = is_root
        self.text = text.strip()
        m = _ARRAY_RE.fullmatch(shape)
        self.etype = m.group(1) if m else "tuple"
        self.dims = [d.strip() for d in m.group(2).split(",") if d.strip()] if m else []
        meta = {k: r.search(text) for k, r in _META_RE.items()}
        self.op_type = meta["op_type"].group(1) if meta["op_type"] else ""
        self.source_file = meta["source_file"].group(1) if meta["source_file"] else ""
        self.source_line = int(meta["source_line"].group(1)) if meta["source_line"] else 0

    def parameter_number(self):
        m = re.search(r"\bparameter\((\d+)\)", self.text)
        return int(m.group(1)) if self.opcode == "parameter" and m else None

    def comparable(self):
        """Whether the instruction's value can be an output of the edited module."""
        if self.opcode == "parameter" or self.etype not in _OUTPUT_ETYPES:
            return False
        return all(d.isdigit() and int(d) > 0 for d in self.dims)

    def describe(self):
        s = f"'{self.name}' ({self.opcode}"
        if self.op_type:
            s += f", op_type {self.op_type}"
        if self.source_file:
            s += f", {self.source_file}:{self.source_line}"
        return s + f", HLO line {self.line})"

    def layoutless(self):
        return re.sub(r"\{[^}]*\}", "", self.shape)


def _closing(s, i, open_, close):
    """The index after the bracket that closes the one at s[i] (nested pairs
    skipped), or -1."""
    depth = 0
    for k in range(i, len(s)):
        if s[k] == open_:
            depth += 1
        elif s[k] == close:
            depth -= 1
            if depth == 0:
                return k + 1
    return -1


def _shape_at(s, i):
    """The shape text starting at s[i] and the index after it."""
    if s.startswith("(", i):
        j = _closing(s, i, "(", ")")
        if j < 0:
            raise ValueError("unbalanced tuple shape")
        return s[i:j], j
    m = _ARRAY_RE.match(s, i)
    if m:
        return m.group(0), m.end()
    m = re.compile(r"\S+").match(s, i)
    return m.group(0), m.end()


def entry_instructions(text):
    """(lines, index of the ENTRY line, index of its closing brace, [Inst])."""
    lines = text.split("\n")
    start = next((k for k, l in enumerate(lines) if l.startswith("ENTRY ")), None)
    if start is None:
        raise ValueError("the HLO text has no ENTRY computation")
    end = next((k for k in range(start + 1, len(lines)) if lines[k].startswith("}")), None)
    if end is None:
        raise ValueError("the ENTRY computation is not closed")
    insts = []
    for k in range(start + 1, end):
        line = lines[k]
        m = _INST_RE.match(line)
        if not m:
            continue
        shape, j = _shape_at(line, m.end())
        op = _OPCODE_RE.match(line, j)
        insts.append(Inst(m.group(3), shape, op.group(1) if op else "?", k + 1,
                          bool(m.group(2)), line))
    return lines, start, end, insts


def _drop_attr(line, attr):
    """Removes ', attr={...}' (balanced braces) from an HloModule line."""
    i = line.find(f", {attr}={{")
    if i < 0:
        return line
    end = _closing(line, i + len(f", {attr}="), "{", "}")
    return line if end < 0 else line[:i] + line[end:]


OUTPUTS_NAME = "neuronsim_bisect.outputs"


def all_outputs_text(text):
    """The module with a ROOT tuple of every comparable entry instruction, in program
    order; instruction names and line numbers are kept. Returns (text, [Inst]) with
    the instructions in output order (output k is instruction k)."""
    lines, start, end, insts = entry_instructions(text)
    chosen = [i for i in insts if i.comparable()]
    if not chosen:
        raise ValueError("the entry computation has no instruction whose value can be compared")
    lines = list(lines)
    for i in insts:
        if i.is_root:
            k = i.line - 1
            lines[k] = re.sub(r"^(\s*)ROOT\s+", r"\1", lines[k], count=1)
    shapes = ", ".join(i.shape for i in chosen)
    operands = ", ".join(f"{i.shape} %{i.name}" for i in chosen)
    lines.insert(end, f"  ROOT %{OUTPUTS_NAME} = ({shapes}) tuple({operands})")
    head = lines[start]
    arrow = head.rfind("->")
    if arrow >= 0:
        lines[start] = head[:arrow] + "-> (" + ", ".join(i.layoutless() for i in chosen) + ") {"
    for k, l in enumerate(lines[:start]):
        if l.startswith("HloModule "):
            for attr in ("entry_computation_layout", "input_output_alias", "buffer_donor"):
                l = _drop_attr(l, attr)
            lines[k] = l
    return "\n".join(lines), chosen


# ------------------------------------------------------------------ protobuf

def parse(b):
    """A message as a list of [field, wire type, value] (ints for varints, bytes
    otherwise), in file order."""
    return [[num, wt, v] for num, wt, v, _ in iter_fields(bytes(b))]


def encode(fields):
    out = bytearray()
    for num, wt, v in fields:
        out += encode_varint(num << 3 | wt)
        if wt == 0:
            out += encode_varint(v)
        elif wt == 2:
            out += encode_varint(len(v)) + bytes(v)
        else:
            out += bytes(v)
    return bytes(out)


def _get(fields, num, default=None):
    for f in fields:
        if f[0] == num:
            return f[2]
    return default


def _set(fields, num, wt, value):
    out = [f for f in fields if f[0] != num]
    out.append([num, wt, value])
    return out


def module_proto(data):
    """The xla.HloModuleProto in data: data itself, or field 1 of the xla.HloProto
    that XLA's --xla_dump_hlo_as_proto writes (*.hlo.pb)."""
    top = parse(data)
    f1 = _get(top, 1)
    if isinstance(f1, bytes):
        try:
            inner = parse(f1)
            if any(f[0] == 3 and f[1] == 2 for f in inner):   # computations
                return bytes(f1)
        except (ValueError, IndexError):
            pass
    return bytes(data)


def module_name(module):
    return _get(parse(module), 1, b"").decode("utf-8", "replace")


def _entry(mod):
    """Index in mod of the entry computation's field."""
    entry_id = _get(mod, 6)
    entry_name = _get(mod, 2)
    comps = [k for k, f in enumerate(mod) if f[0] == 3]
    for k in comps:
        c = parse(mod[k][2])
        if (entry_id is not None and _get(c, 5) == entry_id) or \
                (entry_id is None and entry_name is not None and _get(c, 1) == entry_name):
            return k
    if not comps:
        raise ValueError("the module has no computations")
    return comps[-1]


def instruction_names(module):
    """Names of the entry computation's instructions (to match a text module)."""
    mod = parse(module)
    comp = parse(mod[_entry(mod)][2])
    return [_get(parse(f[2]), 1, b"").decode() for f in comp if f[0] == 2]


def parameter_count(module):
    mod = parse(module)
    comp = parse(mod[_entry(mod)][2])
    return sum(1 for f in comp if f[0] == 2 and _get(parse(f[2]), 2) == b"parameter")


def all_outputs_proto(module, names):
    """The module with a ROOT tuple of the entry instructions named (in that order);
    aliasing, donation and a schedule are dropped. KeyError names a missing one."""
    mod = parse(module)
    k = _entry(mod)
    comp = parse(mod[k][2])
    by_name, max_id = {}, 0
    for f in mod:
        if f[0] != 3:
            continue
        # instruction and computation ids share one space in XLA's protos
        max_id = max(max_id, _get(parse(f[2]), 5, 0))
        for g in parse(f[2]):
            if g[0] == 2:
                inst = parse(g[2])
                max_id = max(max_id, _get(inst, 35, 0))
    for g in comp:
        if g[0] == 2:
            inst = parse(g[2])
            by_name[_get(inst, 1, b"").decode()] = (_get(inst, 35), _get(inst, 3, b""))
    ids, shapes = [], []
    for n in names:
        if n not in by_name:
            raise KeyError(n)
        ids.append(by_name[n][0])
        shapes.append(by_name[n][1])
    tuple_shape = encode([[2, 0, 13]] + [[4, 2, s] for s in shapes])   # TUPLE = 13
    new_id = max_id + 1
    inst = encode([[1, 2, OUTPUTS_NAME.encode()], [2, 2, b"tuple"], [3, 2, tuple_shape],
                   [35, 0, new_id], [36, 2, b"".join(encode_varint(i) for i in ids)]])
    comp.append([2, 2, inst])
    comp = _set(comp, 6, 0, new_id)                       # root_id
    ps = _get(comp, 4)
    if ps is not None:
        comp = _set(comp, 4, 2, encode(_set(parse(ps), 2, 2, tuple_shape)))
    mod[k][2] = encode(comp)
    mod = [f for f in mod if f[0] not in (7, 8, 18)]      # schedule, aliasing, donors
    hps = _get(mod, 4)
    if hps is not None:
        mod = _set(mod, 4, 2, encode(_set(parse(hps), 2, 2, tuple_shape)))
    return encode(mod)
