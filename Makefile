# Entry point for neuronsim. Userspace builds with Meson/Ninja into build/;
# the sanitizer builds live in build-asan/ and build-tsan/, the fuzzers in build-fuzz/.
# `make demo` and `make test` install what is missing (make deps) first.

PREFIX ?= /usr/local
BUILD ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 300
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

VENV ?= .venv
PYTHON := $(VENV)/bin/python
# The newest installed kernel that has both headers and an image to boot.
KVER ?= $(shell for v in $$(ls /lib/modules 2>/dev/null | sort -V); do \
	[ -e /lib/modules/$$v/build/Makefile ] && [ -e /boot/vmlinuz-$$v ] && echo $$v; \
	done | tail -1)
KDIR ?= /lib/modules/$(KVER)/build

.PHONY: all deps build demo demo-hlo test test-unit test-full test-python test-asan test-tsan \
	test-fuzz test-qemu bench fuzz install clean driver driver-check install-driver

all: build

# Installs only what is missing (Debian packages, the clang runtime, the frontend's
# venv with torch/torch_xla), so a second run does nothing: scripts/deps.sh.
deps:
	NEURONSIM_VENV=$(VENV) scripts/deps.sh

$(BUILD)/build.ninja:
	meson setup $(BUILD) --prefix=$(PREFIX) -Dbuildtype=release -Db_ndebug=if-release

$(ASAN_BUILD)/build.ninja:
	meson setup $(ASAN_BUILD) -Dbuildtype=debug -Db_sanitize=address,undefined \
		-Db_lundef=false

# gcc's ThreadSanitizer (its runtime comes with Debian's gcc). Optimised: TSan
# already costs 5-15x, and the simulator's kernels at -O0 another 3x.
$(TSAN_BUILD)/build.ninja:
	meson setup $(TSAN_BUILD) -Dbuildtype=debugoptimized -Db_sanitize=thread

$(FUZZ_BUILD)/build.ninja:
	CC=clang meson setup $(FUZZ_BUILD) -Dbuildtype=debugoptimized -Dfuzz=true \
		-Db_sanitize=address,undefined -Db_lundef=false

build: $(BUILD)/build.ninja
	ninja -C $(BUILD)

# The main job: a PyTorch/XLA training script, unchanged but for PJRT_DEVICE, on
# the embedded device through the PJRT plugin, against the same script on the CPU.
demo: deps build
	NEURONSIM_BUILD_DIR=$(CURDIR)/$(BUILD) $(PYTHON) frontends/torch/examples/demo.py

# The HLO-level demo: compile a PyTorch/XLA MLP training step from the HLO corpus,
# train on the embedded device, check each step against the interpreter.
DEMO_HLO ?= ../shared/hlo/mlp-mlp_single_final.hlo
demo-hlo: deps build
	./$(BUILD)/tools/neuronsim-train --steps 50 --set 0=-0.5 $(DEMO_HLO)

test: deps test-unit test-python test-asan test-tsan test-fuzz test-qemu

# The default tier; the 'full' suite (meson's default setup leaves it out) is
# test-full's. docs/testing.md says what is where.
test-unit: build
	meson test -C $(BUILD) --print-errorlogs --no-suite full

# The heaviest corpus runs, not part of make test: the big corpus modules at every
# level, every module at -O0, the full-size MobileNetV2 (~11 GB; about 20 minutes).
test-full: deps build
	meson test -C $(BUILD) --print-errorlogs --suite full

# The frontend's pytest suite in the venv, against the release build's plugin.
# pytest exits 5 when it collected nothing: that is a failure here too, said so.
test-python: build
	cd frontends/torch && NEURONSIM_BUILD_DIR=$(CURDIR)/$(BUILD) \
		$(CURDIR)/$(PYTHON) -m pytest -q -ra; rc=$$?; \
	if [ $$rc = 5 ]; then echo "test-python: pytest collected no tests"; fi; exit $$rc

test-asan: $(ASAN_BUILD)/build.ninja
	ninja -C $(ASAN_BUILD)
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		meson test -C $(ASAN_BUILD) --print-errorlogs --timeout-multiplier 4 --no-suite full

# ThreadSanitizer over the tests that run threads: meson suite 'tsan', declared
# next to each test; meson test builds only what they need. Reports go to
# files (some tests capture their stderr) that are printed here; any report,
# even in a test that passed, fails the run.
test-tsan: $(TSAN_BUILD)/build.ninja
	rm -f $(TSAN_BUILD)/tsan-report.*
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:log_path=$(CURDIR)/$(TSAN_BUILD)/tsan-report \
		CK_TIMEOUT_MULTIPLIER=4 meson test -C $(TSAN_BUILD) --print-errorlogs \
		--timeout-multiplier 4 --suite tsan; rc=$$?; \
	for f in $(TSAN_BUILD)/tsan-report.*; do \
		[ -e "$$f" ] && { cat "$$f"; echo "test-tsan: ThreadSanitizer report in $$f"; rc=1; }; \
	done; exit $$rc

test-fuzz: $(FUZZ_BUILD)/build.ninja
	ninja -C $(FUZZ_BUILD)
	tests/fuzz/run-fuzzers $(FUZZ_BUILD) 20

fuzz: deps $(FUZZ_BUILD)/build.ninja
	ninja -C $(FUZZ_BUILD)
	tests/fuzz/run-fuzzers $(FUZZ_BUILD) $(FUZZ_SECONDS)

# The kernel module: built against the installed Debian kernel headers and
# tested by booting that kernel under QEMU (tests/qemu/run-qemu-tests).
driver:
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

driver-check:
	$(MAKE) -C $(KDIR) M=$(CURDIR) W=1 C=2 modules

# neuronsim.ko (W=1) against every amd64 kernel header package apt offers,
# fetched and unpacked under build-kheaders/, not installed (docs/abi.md).
.PHONY: driver-matrix
driver-matrix:
	tests/qemu/driver-build-matrix

# run-qemu-kb runs run-qemu-tests (driver alone, fake firmware), then
# neuronsim-fwd with the runtime's test suite on the kernel backend.
test-qemu:
	KVER=$(KVER) tests/qemu/run-qemu-kb

# Installs the DKMS sources, the udev rule and the modules-load file; not run in CI.
install-driver:
	driver/install.sh $(DESTDIR)

bench: deps build
	./$(BUILD)/tests/bench/neuronsim-bench
	./$(BUILD)/tests/bench/neuronsim-compiler-bench
	./$(BUILD)/tests/bench/neuronsim-bench-load
	./$(BUILD)/tests/bench/neuronsim-bench-memory
	./$(BUILD)/tests/bench/neuronsim-bench-profile
	./$(BUILD)/tests/bench/neuronsim-bench-metrics
	./$(BUILD)/tests/bench/neuronsim-bench-snapshot
	./$(BUILD)/tests/bench/neuronsim-bench-snapshot-write
	KVER=$(KVER) tests/qemu/run-qemu-kb --bench
	NEURONSIM_BUILD_DIR=$(CURDIR)/$(BUILD) $(PYTHON) frontends/torch/bench/bench_steps.py
	NEURONSIM_BUILD_DIR=$(CURDIR)/$(BUILD) $(PYTHON) tests/bench/bench_conv.py
	NEURONSIM_BUILD_DIR=$(CURDIR)/$(BUILD) $(PYTHON) tests/bench/bench_vector.py

install: build
	meson install -C $(BUILD) --destdir "$(DESTDIR)"

clean:
	-[ -d $(KDIR) ] && $(MAKE) -C $(KDIR) M=$(CURDIR) clean
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(FUZZ_BUILD) build-qemu build-kb build-qemu-kb
