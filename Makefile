# Proteus -- top-level Makefile.
#
#   make          build the programs (needs the Debian -dev packages: make deps)
#   make demo     install what is missing, build, run the demo
#   make demo-ec2 the same job on the ec2 world, against the fake EC2
#   make demo-program
#                 the user's own program as a job: the PyTorch example
#                 under torchrun on the local world, through evictions
#   make test     install what is missing, check the style, build, run
#                 every test
#   make check-style
#                 the style rules alone (scripts/check-style)
#   make check    the same suite under ASan + UBSan (build/asan), then each
#                 fuzzer for CHECK_FUZZ_SECONDS (10) when clang has libFuzzer
#   make bench    benchmarks (results go to docs/benchmarks.md by hand)
#   make fuzz     run each fuzzer for FUZZ_SECONDS (60)
#   make install  PREFIX=/usr/local DESTDIR=
#
# Knobs: BUILD (output folder), SAN=1 (sanitizers), CUDA=0 (skip nvcc),
# V=1 (echo commands).

PREFIX ?= /usr/local
DESTDIR ?=
BUILD ?= build
SAN ?= 0
CUDA ?= auto
FUZZ_SECONDS ?= 60
SHARED ?= $(abspath ../shared)

ifneq ($(filter-out 0 1,$(SAN)),)
$(error SAN must be 0 or 1, not '$(SAN)')
endif
ifneq ($(filter-out auto 0,$(CUDA)),)
$(error CUDA must be auto or 0, not '$(CUDA)')
endif

Q := @
ifeq ($(V),1)
Q :=
endif

CC ?= cc
PKGS := libcurl openssl jansson sqlite3 nanomsg zlib libxml-2.0 yajl openblas
TEST_PKGS := criterion

# Evaluated lazily: `make deps` must be able to run before these exist.
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS))
PKG_LIBS = $(shell pkg-config --libs $(PKGS))

CFLAGS_BASE := -std=c11 -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter \
	-D_GNU_SOURCE -g -MMD -MP
ifeq ($(SAN),1)
CFLAGS_OPT := -O1 -fno-omit-frame-pointer -fsanitize=address,undefined \
	-fno-sanitize-recover=undefined
LDFLAGS_SAN := -fsanitize=address,undefined
else
CFLAGS_OPT := -O2
LDFLAGS_SAN :=
# The CPU kernels' elementwise loops run in place (relu on its input,
# sgd over w and v), so -O2's cheap cost model leaves them scalar; -O3
# vectorizes them behind a run-time overlap check (same results: no
# contraction under -std=c11, same order of operations per element).
$(BUILD)/obj/trainer/compute/kern_cpu.o: CFLAGS_OPT := -O3
# data_gather's byte-to-float loop (every batch of an image set) is the
# same case: scalar at -O2, about a quarter of a small MLR job's CPU; -O3
# vectorizes it (the same float per byte).
$(BUILD)/obj/trainer/io/data.o: CFLAGS_OPT := -O3
endif

# CUDA: three cases, decided here and told by `make cuda-note`.
#  - nvcc, the CUDA headers and libcudart + libcublas found: the CUDA kernels
#    are built into $(CUDA_SO), the one object linked against cuBLAS and
#    cudart; the programs (PX_HAVE_CUDA) dlopen it on `--device cuda` only
#    (trainer/compute/kern_load.c), so no CPU run loads CUDA.  GPU tests run with
#    `make test-gpu`.
#  - nvcc and the headers but not the libraries (a compiler-only install):
#    the .cu files are still compiled, as a check, but the programs have
#    the CPU path only.
#  - no nvcc, or CUDA=0: CPU path only.
# The libraries are looked for where NVIDIA's installers and Debian put them.
ifeq ($(CUDA),0)
NVCC :=
else
NVCC := $(shell command -v nvcc 2>/dev/null || \
	  { test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc; })
endif
CU_SRC := $(wildcard trainer/*.cu trainer/*/*.cu)
CUDA_MODE := none
CU_OBJ :=
CU_CHECK_OBJ :=
CUDA_CFLAGS :=
CUDA_SO :=
ifneq ($(NVCC),)
CUDA_HOME := $(patsubst %/bin/nvcc,%,$(realpath $(NVCC)))
CUDA_INC := $(firstword $(dir $(wildcard $(CUDA_HOME)/include/cuda_runtime.h \
	$(CUDA_HOME)/targets/*/include/cuda_runtime.h /usr/include/cuda_runtime.h)))
CUDA_LIBDIR := $(firstword $(dir $(wildcard $(CUDA_HOME)/lib64/libcublas.so \
	$(CUDA_HOME)/lib/libcublas.so $(CUDA_HOME)/targets/*/lib/libcublas.so \
	/usr/lib/*-linux-gnu/libcublas.so)))
ifneq ($(and $(CUDA_INC),$(wildcard $(CUDA_INC)cublas_v2.h)),)
NVCCFLAGS := -O2 -std=c++17 -gencode arch=compute_90,code=sm_90 \
	-gencode arch=compute_80,code=sm_80 -gencode arch=compute_80,code=compute_80 \
	-Xcompiler -Wall,-fPIC,-fvisibility=hidden -D_GNU_SOURCE \
	-DPX_HAVE_CUDA=1
ifneq ($(and $(CUDA_LIBDIR),$(wildcard $(CUDA_LIBDIR)libcudart.so)),)
CUDA_MODE := full
CUDA_LIBDIR := $(patsubst %/,%,$(CUDA_LIBDIR))
# PX_CUDA_LIBDIR: the loader's last place to look for $(CUDA_SO), where
# `make install` puts it (build with the PREFIX you install with).
CUDA_CFLAGS := -DPX_HAVE_CUDA=1 -DPX_CUDA_LIBDIR='"$(PREFIX)/lib/proteus"'
CU_OBJ := $(patsubst %.cu,$(BUILD)/obj/%.cu.o,$(CU_SRC))
CUDA_SO := $(BUILD)/libproteus-cuda.so
else
CUDA_MODE := compile-only
CU_CHECK_OBJ := $(patsubst %.cu,$(BUILD)/obj/%.cu.o,$(CU_SRC))
endif
endif
endif

CFLAGS_ALL = $(CFLAGS_BASE) $(CFLAGS_OPT) $(CUDA_CFLAGS) $(PKG_CFLAGS) $(CFLAGS)
LDLIBS_ALL = -Wl,--as-needed $(PKG_LIBS) -lm -lpthread -ldl $(LDLIBS)

MODULES := common db cloudapi bidbrain agent trainer
# A module's sub-folders (agent/world: one file a world; agent/ctl:
# proteusctl) are built like the module itself: every .c in them, found
# by wildcard, so that a file added there is compiled with no change here.
SRC_DIRS := $(MODULES) $(patsubst %/,%,$(foreach m,$(MODULES),$(wildcard $(m)/*/)))
# Program entry points are <folder>/main_<program>.c.
PROG_SRC := $(foreach m,$(SRC_DIRS),$(wildcard $(m)/main_*.c))
LIB_SRC := $(foreach m,$(SRC_DIRS),$(filter-out $(m)/main_%.c,$(wildcard $(m)/*.c)))
LIB_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(LIB_SRC))
PROGS := $(foreach s,$(PROG_SRC),$(BUILD)/$(patsubst main_%.c,%,$(notdir $(s))))
LIB := $(BUILD)/libproteus.a

TEST_SRC := $(wildcard tests/unit/*.c tests/integration/*.c)
TEST_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(TEST_SRC))
TEST_BIN := $(BUILD)/px_tests
GPU_TEST_SRC := $(wildcard tests/gpu/*.c)
GPU_TEST_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(GPU_TEST_SRC))
GPU_TEST_BIN := $(BUILD)/px_gpu_tests
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)

.PHONY: all deps check-pkgs test test-run test-gpu check check-fuzz demo demo-ec2 \
	demo-program bench fuzz fuzz-build fuzz-run check-style \
	install uninstall clean cuda-note print-ldlibs

all: check-pkgs cuda-note $(PROGS) $(CUDA_SO) $(CU_CHECK_OBJ)

check-pkgs:
	@missing=""; for p in $(PKGS); do pkg-config --exists $$p || \
	  missing="$$missing $$p"; done; if [ -n "$$missing" ]; then \
	  echo "missing libraries:$$missing (run 'make deps')" >&2; exit 1; fi

cuda-note:
ifeq ($(CUDA_MODE),full)
	@echo "CUDA: $(NVCC) with the libraries in $(CUDA_LIBDIR): building the CUDA path too ($(CUDA_SO), loaded on --device cuda)"
else ifeq ($(CUDA_MODE),none)
	@echo "nvcc (with the CUDA headers) not found, or CUDA=0: building the CPU path only"
else ifeq ($(CUDA_MODE),compile-only)
	@echo "nvcc found but not libcudart/libcublas: CUDA kernels compiled as a check, programs use the CPU path"
endif

deps:
	@scripts/deps.sh build test

# What a program linked against $(LIB) needs (used by tests/bench/*.sh).
print-ldlibs:
	@echo '$(LDLIBS_ALL)'

# Makefile too: a flag changed here (CFLAGS_OPT of one file, say)
# rebuilds what it compiles; without it an old object stayed.
$(BUILD)/obj/%.o: %.c Makefile
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS_ALL) -c -o $@ $<

# nvcc writes no .d files: the headers a .cu includes, by hand.
$(BUILD)/obj/%.cu.o: %.cu $(wildcard trainer/*.h trainer/*/*.h) common/px.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  NVCC    $<")
	$(Q)$(NVCC) $(NVCCFLAGS) -c -o $@ $<

# -z defs: the library must need nothing of libproteus or the program.
$(CUDA_SO): $(CU_OBJ)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -shared -Wl,-z,defs -o $@ $^ -L$(CUDA_LIBDIR) \
		-Wl,-rpath,$(CUDA_LIBDIR) -Wl,--as-needed -lcublas -lcudart \
		-lstdc++

$(LIB): $(LIB_OBJ)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

define prog_rule
$(BUILD)/$(patsubst main_%.c,%,$(notdir $(1))): $(BUILD)/obj/$(1:.c=.o) $(LIB)
	@$$(if $$(Q),echo "  LD      $$@")
	$$(Q)$$(CC) $$(LDFLAGS_SAN) $$(LDFLAGS) -o $$@ $$^ $$(LDLIBS_ALL)
endef
$(foreach s,$(PROG_SRC),$(eval $(call prog_rule,$(s))))

$(TEST_BIN): $(TEST_OBJ) $(LIB)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS_SAN) $(LDFLAGS) -o $@ $^ $(LDLIBS_ALL) \
		$(shell pkg-config --libs $(TEST_PKGS))

# Through the loader, like the trainer: it finds $(CUDA_SO) beside it.
$(GPU_TEST_BIN): $(GPU_TEST_OBJ) $(LIB) | $(CUDA_SO)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS_SAN) $(LDFLAGS) -o $@ $^ $(LDLIBS_ALL) \
		$(shell pkg-config --libs $(TEST_PKGS))

# The test environment: where the programs, the sources and shared data are.
TEST_ENV = PX_BUILD=$(abspath $(BUILD)) PX_SRC=$(CURDIR) PX_SHARED=$(SHARED)

# Banned calls, function length, purpose lines, include direction
# (scripts/check-style), and the tests' own rules: one file name, one
# file reader, no fixture called inside a test, no build output in git
# (scripts/check-tests; docs/architecture.md, "Style check"): seconds,
# so `make test` runs it before it builds.
check-style:
	@scripts/check-style
	@scripts/check-tests

test:
	@scripts/deps.sh build test
	@$(MAKE) --no-print-directory check-style
	@$(MAKE) --no-print-directory -j$$(nproc) all $(TEST_BIN)
	@$(MAKE) --no-print-directory test-run

test-run: all $(TEST_BIN)
	$(TEST_ENV) $(TEST_BIN) --jobs=$$(nproc) $(TEST_ARGS)

# Where a GPU is present: the CUDA kernels against their CPU references.
test-gpu:
ifneq ($(CUDA_MODE),full)
	@echo "test-gpu: no CUDA build here (mode: $(CUDA_MODE)); nothing to run" >&2; exit 1
else
	@$(MAKE) --no-print-directory all $(GPU_TEST_BIN)
	$(TEST_ENV) $(GPU_TEST_BIN) $(TEST_ARGS)
endif

# CUDA's runtime needs the shadow gap unprotected under ASan.  Then the
# fuzzers, CHECK_FUZZ_SECONDS each (check-fuzz).  The ASan build goes to
# $(BUILD)/asan.
check:
	@scripts/deps.sh build test
	@$(MAKE) --no-print-directory -j$$(nproc) BUILD=$(BUILD)/asan SAN=1 all \
		$(BUILD)/asan/px_tests
	@ASAN_OPTIONS=protect_shadow_gap=0:detect_leaks=1 \
	 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	 LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp \
	 PX_CHILD_LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan-children.supp \
	 $(MAKE) --no-print-directory BUILD=$(BUILD)/asan SAN=1 test-run
	@$(MAKE) --no-print-directory check-fuzz

demo:
	@scripts/deps.sh build test
	@$(MAKE) --no-print-directory -j$$(nproc) all
	@BUILD=$(BUILD) SHARED=$(SHARED) scripts/demo.sh

# The ec2 world against the fake EC2 on loopback (docs/ec2-world.md).
demo-ec2:
	@scripts/deps.sh build test
	@$(MAKE) --no-print-directory -j$$(nproc) all
	@BUILD=$(BUILD) scripts/demo_ec2.sh

# A program job (docs/programs.md): the PyTorch example under torchrun.
demo-program:
	@scripts/deps.sh build test
	@$(MAKE) --no-print-directory -j$$(nproc) all
	@BUILD=$(BUILD) scripts/demo_program.sh

bench:
	@scripts/deps.sh build test bench
	@$(MAKE) --no-print-directory -j$$(nproc) all
	@BUILD=$(abspath $(BUILD)) SHARED=$(SHARED) tests/bench/run.sh $(BENCH)

# The fuzzers: libFuzzer harnesses built with clang, the library sources
# they need compiled once into $(BUILD)/fuzz/obj (instrumented, not linked
# with libFuzzer's main), each harness linked against them.  `make fuzz`
# installs clang when missing and runs each for FUZZ_SECONDS; `make check`
# runs each for CHECK_FUZZ_SECONDS when clang with libFuzzer is there and
# says it skips them otherwise.  A crash input is kept as
# $(BUILD)/fuzz/<fuzzer>-crash-<sha1> and fails the target.
# the trainer's pure parsers (no nanomsg, no CUDA) for fuzz_ckpt, fuzz_wire
FUZZ_TRAINER_SRC = trainer/io/ckpt.c trainer/io/dataset.c trainer/compute/mf.c trainer/compute/model.c trainer/compute/model_desc.c trainer/compute/kern_cpu.c trainer/compute/kern_rng.c trainer/dist/wire.c
FUZZ_LIB_SRC = $(filter-out agent/% trainer/%,$(LIB_SRC)) $(FUZZ_TRAINER_SRC)
FUZZ_OBJ = $(patsubst %.c,$(BUILD)/fuzz/obj/%.o,$(FUZZ_LIB_SRC))
FUZZ_BIN = $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRC))
FUZZ_SAN = address,undefined
FUZZ_CFLAGS = -std=c11 -D_GNU_SOURCE -g -O1 $(PKG_CFLAGS)
CHECK_FUZZ_SECONDS ?= 10

$(BUILD)/fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CLANG   $<")
	$(Q)clang $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,$(FUZZ_SAN) -MMD -MP \
		-c -o $@ $<

$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_OBJ)
	@$(if $(Q),echo "  CLANG   $@")
	$(Q)clang $(FUZZ_CFLAGS) -fsanitize=fuzzer,$(FUZZ_SAN) -o $@ $< \
		$(FUZZ_OBJ) $(PKG_LIBS) -lm

fuzz:
	@scripts/deps.sh build fuzz
	@$(MAKE) --no-print-directory fuzz-run

fuzz-build: $(FUZZ_BIN)

# Build the fuzzers and run each for FUZZ_SECONDS on a copy of its seeds.
fuzz-run: $(FUZZ_BIN)
	@for b in $(FUZZ_BIN); do \
	  n=$$(basename $$b); \
	  echo "  FUZZ    $$n ($(FUZZ_SECONDS) s)"; \
	  mkdir -p $$b.corpus; \
	  cp -n tests/fuzz/corpus/$$n/* $$b.corpus/ 2>/dev/null; \
	  $$b -max_total_time=$(FUZZ_SECONDS) -max_len=65536 \
	    -print_final_stats=1 -artifact_prefix=$$b- $$b.corpus \
	    > $$b.log 2>&1 || { tail -n 40 $$b.log; \
	    echo "$$n failed: the input is in $$b-crash-* (log: $$b.log)" >&2; \
	    exit 1; }; \
	  grep -E '^(stat::number_of_executed_units|Done)' $$b.log | tr '\n' ' '; \
	  echo; \
	done

# Whether clang can link a libFuzzer program (clang, libclang-rt-*-dev).
check-fuzz:
	@if printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' | \
	    clang -fsanitize=fuzzer -x c - -o /dev/null >/dev/null 2>&1; then \
	  $(MAKE) --no-print-directory -j$$(nproc) fuzz-build && \
	  $(MAKE) --no-print-directory fuzz-run \
		FUZZ_SECONDS=$(CHECK_FUZZ_SECONDS); \
	else \
	  echo "check: clang with libFuzzer not found (scripts/deps.sh fuzz" \
	       "installs clang and libclang-rt-14-dev): fuzzers skipped"; \
	fi

# System files: the unit, sysusers.d and the completions go under $(PREFIX)
# (so `make install PREFIX=~/.local` works as a user); the configuration goes
# to $(SYSCONFDIR)/proteus, skipped with a note when that is not writable.
SYSCONFDIR ?= /etc
COMPLETIONS := $(wildcard etc/bash-completion/*)

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/man/man8 \
		$(DESTDIR)$(PREFIX)/lib/systemd/system \
		$(DESTDIR)$(PREFIX)/lib/sysusers.d \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions \
		$(DESTDIR)$(PREFIX)/share/proteus/ondemand \
		$(DESTDIR)$(PREFIX)/share/proteus/spot-advisor \
		$(DESTDIR)$(PREFIX)/share/proteus/traces
	install -m 0755 $(PROGS) $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 $(wildcard docs/man/*.1) $(DESTDIR)$(PREFIX)/share/man/man1/
	$(if $(wildcard docs/man/*.8),install -m 0644 $(wildcard docs/man/*.8) \
		$(DESTDIR)$(PREFIX)/share/man/man8/)
	sed 's|@PREFIX@|$(PREFIX)|g' etc/proteusd.service > \
		$(DESTDIR)$(PREFIX)/lib/systemd/system/proteusd.service
	chmod 0644 $(DESTDIR)$(PREFIX)/lib/systemd/system/proteusd.service
	sed 's|@PREFIX@|$(PREFIX)|g' etc/proteus-node.service > \
		$(DESTDIR)$(PREFIX)/lib/systemd/system/proteus-node.service
	chmod 0644 $(DESTDIR)$(PREFIX)/lib/systemd/system/proteus-node.service
	install -m 0644 etc/sysusers.d/proteus.conf \
		$(DESTDIR)$(PREFIX)/lib/sysusers.d/
	install -m 0644 $(COMPLETIONS) \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/
	install -m 0644 etc/ondemand/*.json $(DESTDIR)$(PREFIX)/share/proteus/ondemand/
	install -m 0644 etc/spot-advisor/linux_*.json \
		$(DESTDIR)$(PREFIX)/share/proteus/spot-advisor/
	install -m 0644 docs/examples/traces/*.json.gz \
		$(DESTDIR)$(PREFIX)/share/proteus/traces/
	$(if $(CUDA_SO),install -D -m 0755 $(CUDA_SO) $(DESTDIR)$(PREFIX)/lib/proteus/$(notdir $(CUDA_SO)))
	@if install -d $(DESTDIR)$(SYSCONFDIR)/proteus 2>/dev/null && \
	    test -w $(DESTDIR)$(SYSCONFDIR)/proteus; then \
		test -e $(DESTDIR)$(SYSCONFDIR)/proteus/proteusd.conf || \
		install -m 0640 etc/proteusd.conf \
			$(DESTDIR)$(SYSCONFDIR)/proteus/proteusd.conf; \
	else \
		echo "note: $(DESTDIR)$(SYSCONFDIR)/proteus is not writable:" \
		     "proteusd.conf not installed (the built-in defaults apply;" \
		     "SYSCONFDIR=DIR puts it elsewhere)"; \
	fi
	@case ":$$PATH:" in *":$(PREFIX)/bin:"*) ;; \
	*) echo "note: $(PREFIX)/bin is not on PATH";; esac

uninstall:
	rm -f $(addprefix $(DESTDIR)$(PREFIX)/bin/,$(notdir $(PROGS)))
	rm -f $(DESTDIR)$(PREFIX)/lib/systemd/system/proteusd.service
	rm -f $(DESTDIR)$(PREFIX)/lib/systemd/system/proteus-node.service
	rm -f $(DESTDIR)$(PREFIX)/lib/proteus/libproteus-cuda.so
	rm -f $(DESTDIR)$(PREFIX)/lib/sysusers.d/proteus.conf
	rm -f $(addprefix $(DESTDIR)$(PREFIX)/share/bash-completion/completions/,\
		$(notdir $(COMPLETIONS)))
	rm -f $(addprefix $(DESTDIR)$(PREFIX)/share/man/man1/,\
		$(notdir $(wildcard docs/man/*.1)))
	rm -f $(addprefix $(DESTDIR)$(PREFIX)/share/man/man8/,\
		$(notdir $(wildcard docs/man/*.8)))
	rm -rf $(DESTDIR)$(PREFIX)/share/proteus

clean:
	rm -rf build

-include $(LIB_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(GPU_TEST_OBJ:.o=.d) \
	$(FUZZ_OBJ:.o=.d) \
	$(patsubst %.c,$(BUILD)/obj/%.d,$(PROG_SRC))
