#!/bin/sh
# The include rules between neuronsim's layers (docs/architecture.md), checked on
# the sources and on the meson files:
#   1. a public header (include/) includes only public headers;
#   2. no file includes a private header (one outside include/) of another layer:
#      tools, the PJRT plugin and the other layers use a library through its
#      public header only;
#   3. no layer includes a header of a layer it may not use (the table `uses`
#      below: arrows point down, and the compiler never reaches the runtime or
#      the simulator);
#   4. meson: include_directories() in a layer's meson.build name only that
#      layer's folders or include/; a layer links only the libraries of layers
#      it may use, and another layer's dependency only if it exports no private
#      include path (declare_dependency with include_directories : inc).
# tests/ is not checked: tests are white-box and may reach internals.
# Usage: check_includes.sh ROOT (the checkout). Exit 0 clean, 1 with one line per
# violation, "FILE:LINE: ...". POSIX sh and awk only: it runs in `make test`
# without the venv, in well under a second.
set -eu
root=${1:?usage: check_includes.sh ROOT}
cd "$root"

tmp=$(mktemp -d /tmp/check-includes-XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM

layers="common firmware-sim runtime compiler pjrt tools driver frontends"
dirs=""
for d in include $layers; do
	[ -d "$d" ] && dirs="$dirs $d"
done
# shellcheck disable=SC2086 # dirs is a list of plain folder names
find $dirs -type f -name '*.h' | LC_ALL=C sort > "$tmp/headers"
# shellcheck disable=SC2086
find $dirs -type f \( -name '*.c' -o -name '*.h' \) | LC_ALL=C sort > "$tmp/sources"
# shellcheck disable=SC2086
find $dirs -type f -name meson.build | LC_ALL=C sort > "$tmp/mesons"

# The rules, shared by both checks.
cat > "$tmp/rules.awk" <<'EOF'
function init_rules() {
	# Who may use whom (docs/architecture.md). A layer owns its folder and its
	# public headers: include/neuronsim/ is common's, include/nrt/ the runtime's,
	# include/ncc/ the compiler's, include/fwsim/ libfwsim's, include/pjrt/ the
	# PJRT plugin's (the PJRT C API), include/uapi/ the kernel ABI's. The
	# release version, include/uapi/linux/neuronsim_version.h, is everybody's:
	# a plain header of constants that the kernel module (no Meson) includes
	# too.
	uses["version"] = "version"
	uses["uapi"] = "uapi version"
	# common's include/neuronsim/device.h, the job protocol, ties its types
	# to the kernel ABI's with static asserts (the uapi includes nothing else).
	uses["common"] = "common uapi version"
	uses["driver"] = "driver uapi version"
	uses["firmware-sim"] = "firmware-sim common uapi version"
	uses["runtime"] = "runtime common uapi firmware-sim version"
	uses["compiler"] = "compiler common version"
	uses["pjrt"] = "pjrt compiler runtime common version"
	uses["tools"] = "tools compiler runtime common uapi version"
	uses["frontends"] = "frontends compiler runtime common version"
}
function layer_of(p) {
	if (p == "include/uapi/linux/neuronsim_version.h") return "version"
	if (p ~ /^include\/ncc(\/|$)/) return "compiler"
	if (p ~ /^include\/nrt(\/|$)/) return "runtime"
	if (p ~ /^include\/neuronsim(\/|$)/) return "common"
	if (p ~ /^include\/uapi(\/|$)/) return "uapi"
	if (p ~ /^include\/pjrt(\/|$)/) return "pjrt"
	if (p ~ /^include\/fwsim(\/|$)/) return "firmware-sim"
	if (p == "include" || p ~ /^include\//) return "?"
	sub(/\/.*/, "", p)
	return p
}
function public_dir(l) {
	if (l == "compiler") return "include/ncc/"
	if (l == "runtime") return "include/nrt/"
	if (l == "common") return "include/neuronsim/"
	if (l == "firmware-sim") return "include/fwsim/"
	return "include/"
}
function may_use(a, b,   n, i, w) {
	n = split(uses[a], w, " ")
	for (i = 1; i <= n; i++)
		if (w[i] == b)
			return 1
	return 0
}
# "a/./b/../c" -> "a/c"
function norm(p,   n, i, k, parts, out, res) {
	n = split(p, parts, "/")
	k = 0
	for (i = 1; i <= n; i++) {
		if (parts[i] == "" || parts[i] == ".")
			continue
		if (parts[i] == ".." && k > 0 && out[k] != "..") {
			k--
			continue
		}
		out[++k] = parts[i]
	}
	res = ""
	for (i = 1; i <= k; i++)
		res = res (i > 1 ? "/" : "") out[i]
	return res
}
function dirname(p) {
	if (p !~ /\//)
		return "."
	sub(/\/[^\/]*$/, "", p)
	return p
}
function fail(where, msg) {
	print where ": " msg
	nfail++
}
EOF

# 1-3: #include lines. An include resolves as the compiler would find it: next
# to the including file (quoted form), then under include/, then in any folder
# an include path could name (a project header whose path ends with it, the
# including layer's own first). What resolves to no project header is a system
# header and not checked.
cat > "$tmp/includes.awk" <<'EOF'
BEGIN { init_rules() }
FILENAME == ARGV[1] { hdr[$0] = 1; order[++nh] = $0; next }
/^[ \t]*#[ \t]*include[ \t]*["<]/ {
	line = $0
	sub(/^[ \t]*#[ \t]*include[ \t]*/, "", line)
	quoted = substr(line, 1, 1) == "\""
	close_ch = quoted ? "\"" : ">"
	name = substr(line, 2)
	i = index(name, close_ch)
	if (i == 0)
		next
	name = substr(name, 1, i - 1)
	src = FILENAME
	sl = layer_of(src)
	t = ""
	if (quoted && (norm(dirname(src) "/" name) in hdr))
		t = norm(dirname(src) "/" name)
	else if (norm("include/" name) in hdr)
		t = norm("include/" name)
	else if (quoted || name ~ /\//) {
		other = ""
		for (k = 1; k <= nh; k++) {
			h = order[k]
			if (h == name || substr(h, length(h) - length(name)) == "/" name) {
				if (layer_of(h) == sl) {
					t = h
					break
				}
				if (other == "")
					other = h
			}
		}
		if (t == "")
			t = other
	}
	if (t == "")
		next
	tl = layer_of(t)
	where = src ":" FNR
	if (tl == "?")
		fail(where, sl " includes " t ", in a folder of include/ that no layer owns: add it to the table in tests/check_includes.sh and docs/architecture.md")
	else if (src ~ /^include\// && t !~ /^include\//)
		fail(where, "the public header includes " t ", a private header of " tl)
	else if (t !~ /^include\// && tl != sl)
		fail(where, sl " includes " t ", a private header of " tl ": use its public headers, " public_dir(tl))
	else if (!may_use(sl, tl))
		fail(where, sl " includes " t " of " tl ", a layer it may not use (docs/architecture.md)")
}
END { exit nfail > 0 }
EOF

# 4: meson. First the libraries and dependencies each layer declares, and whether
# a dependency exports a private include path; then what every layer's
# meson.build names.
cat > "$tmp/deps.awk" <<'EOF'
BEGIN { init_rules() }
FNR == 1 { depth = 0; name = "" }
{
	text = $0
	sub(/#.*/, "", text)
	if (match(text, /^[ \t]*[A-Za-z0-9_]+[ \t]*=[ \t]*(static_library|shared_library|library|both_libraries)[ \t]*\(/)) {
		lib = text
		sub(/^[ \t]*/, "", lib)
		sub(/[ \t]*=.*/, "", lib)
		print lib, layer_of(FILENAME), "library"
	}
	if (name == "" && match(text, /[A-Za-z0-9_]+[ \t]*=[ \t]*declare_dependency[ \t]*\(/)) {
		decl = substr(text, RSTART, RLENGTH)
		sub(/[ \t]*=.*/, "", decl)
		name = decl
		body = ""
		depth = 0
		text = substr(text, RSTART + RLENGTH - 1)
	}
	if (name == "")
		next
	body = body " " text
	n = length(text)
	for (i = 1; i <= n; i++) {
		c = substr(text, i, 1)
		if (c == "(") depth++
		else if (c == ")") depth--
	}
	if (depth > 0)
		next
	# the value of include_directories : up to the next keyword argument
	v = ""
	if (match(body, /include_directories[ \t]*:/)) {
		v = substr(body, RSTART + RLENGTH)
		if (match(v, /,[ \t]*[a-z_]+[ \t]*:/))
			v = substr(v, 1, RSTART - 1)
		sub(/\)[ \t]*$/, "", v)
		gsub(/[ \t]/, "", v)
	}
	print name, layer_of(FILENAME), (v == "" || v == "inc") ? "public" : "private"
	name = ""
}
EOF

cat > "$tmp/meson.awk" <<'EOF'
BEGIN { init_rules() }
FILENAME == ARGV[1] { dlayer[$1] = $2; dkind[$1] = $3; next }
{
	text = $0
	sub(/#.*/, "", text)
	ml = layer_of(FILENAME)
	where = FILENAME ":" FNR
	# include_directories('a', 'b'): folders of this layer or include/
	rest = text
	while (match(rest, /include_directories[ \t]*\([^)]*\)/)) {
		call = substr(rest, RSTART, RLENGTH)
		rest = substr(rest, RSTART + RLENGTH)
		while (match(call, /'[^']*'/)) {
			arg = substr(call, RSTART + 1, RLENGTH - 2)
			call = substr(call, RSTART + RLENGTH)
			d = norm(dirname(FILENAME) "/" arg)
			dl = layer_of(d)
			if (d == "include" || dl == ml)
				continue
			fail(where, "include_directories('" arg "') gives " ml " the folder " d " of " dl ": include its public header (include/) instead")
		}
	}
	# libraries and dependencies declared by other layers (strings left out)
	rest = text
	gsub(/'[^']*'/, "''", rest)
	while (match(rest, /[A-Za-z_][A-Za-z0-9_]*/)) {
		dep = substr(rest, RSTART, RLENGTH)
		rest = substr(rest, RSTART + RLENGTH)
		if (!(dep in dlayer) || dlayer[dep] == ml)
			continue
		if (!may_use(ml, dlayer[dep]))
			fail(where, ml " links " dep " of " dlayer[dep] ", a layer it may not use (docs/architecture.md)")
		else if (dkind[dep] == "private")
			fail(where, ml " uses " dep ", which exports private include paths of " dlayer[dep] ": use the dependency that carries only include/")
	}
}
END { exit nfail > 0 }
EOF

# awk exits 1 when it found violations; anything else is a broken check.
run() {
	rc=0
	"$@" || rc=$?
	if [ "$rc" -gt 1 ]; then
		echo "check_includes: awk failed (exit $rc)" >&2
		exit 2
	fi
}
# shellcheck disable=SC2046 # one argument per file; the paths hold no spaces
run awk -f "$tmp/rules.awk" -f "$tmp/includes.awk" "$tmp/headers" $(cat "$tmp/sources") > "$tmp/out"
# shellcheck disable=SC2046
run awk -f "$tmp/rules.awk" -f "$tmp/deps.awk" /dev/null $(cat "$tmp/mesons") > "$tmp/deps"
# shellcheck disable=SC2046
run awk -f "$tmp/rules.awk" -f "$tmp/meson.awk" "$tmp/deps" $(cat "$tmp/mesons") >> "$tmp/out"

if [ -s "$tmp/out" ]; then
	cat "$tmp/out"
	n=$(wc -l < "$tmp/out")
	echo "check_includes: $n violation(s) of the include rules (docs/architecture.md)"
	exit 1
fi
echo "check_includes: $(wc -l < "$tmp/sources") sources and $(wc -l < "$tmp/mesons") meson files follow the include rules"
