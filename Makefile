# tagplan - GNU make.  `make help` lists the targets.
#
#   make            the tagplan binary and libtagplan.a
#   make check      unit and command tests (Check); ends with Check's summary
#   make asan       every test again under -fsanitize=address,undefined
#   make asan-clang the same built with clang (its UBSan flags more)
#   make WERROR=1   warnings are errors (CI)

PREFIX  ?= /usr/local
DESTDIR ?=
BINDIR   = $(PREFIX)/bin
DATADIR  = $(PREFIX)/share/tagplan
MANDIR   = $(PREFIX)/share/man

VERSION := $(shell cat VERSION 2>/dev/null || echo 0.0.0)

CC      ?= cc
PKGS     = libcjson libcgraph libgvc openblas check
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs libcjson libcgraph libgvc openblas 2>/dev/null)
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null)

WARN    = -std=c11 -Wall -Wextra -Wpedantic -Wshadow -Wwrite-strings
ifeq ($(WERROR),1)
WARN   += -Werror
endif
OPT    ?= -O2 -g
CPPFLAGS += -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE \
	    -DTP_VERSION='"$(VERSION)"' -DTP_DATADIR='"$(DATADIR)"' \
	    -Isrc $(PKG_CFLAGS)
CFLAGS  += $(WARN) $(OPT) -MMD -MP
# src/gnn (the forward and backward passes, hot in a guided search) is
# compiled at -O3 on top of OPT (the last -O wins): outputs bit-identical
# to -O2 (no -ffast-math; plans, priors and features compared, src/gnn/
# README), forward pass 1.05-1.09 -> 0.85-0.93 ms.  GNN_OPT= turns it off.
GNN_OPT ?= -O3
LDLIBS  += $(PKG_LIBS) -lpthread -lm

# The layers (DESIGN.md; tests/layers.sh checks the includes against them):
# core below everything; io, compress on core; sim on compress; calib on
# io and sim; search on
# sim; gnn on core and io; render on core and io; export on core; train
# and cli on anything.
LIB_DIRS = core io compress sim calib search gnn train render export
LIB_SRC := $(sort $(foreach d,$(LIB_DIRS),$(wildcard src/$(d)/*.c)))
CLI_SRC := $(sort $(wildcard src/cli/*.c))
TEST_SRC := $(sort $(wildcard tests/*.c))
BENCH_SRC := $(sort $(wildcard bench/*.c))

# BUILD is the object tree; the ASan build uses its own.
BUILD   ?= build
LIB_OBJ  = $(LIB_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ  = $(CLI_SRC:%.c=$(BUILD)/%.o)
TEST_OBJ = $(TEST_SRC:%.c=$(BUILD)/%.o)
LIB      = $(BUILD)/libtagplan.a
BIN     ?= tagplan
CHECKBIN = $(BUILD)/tests/check_tagplan

.PHONY: all check asan asan-clang bench demo install uninstall format \
	clean help fuzz valgrind data weights

all: $(BIN) libtagplan.a

# V=1 shows the full command lines.
ifeq ($(V),1)
Q =
else
Q = @
endif

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(BUILD)/src/gnn/%.o: CFLAGS += $(GNN_OPT)

$(LIB): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(Q)rm -f $@
	$(Q)ar rcs $@ $^

libtagplan.a: $(BUILD)/libtagplan.a
	@if [ "$(BUILD)" = build ]; then cp $< $@; fi

$(BIN): $(CLI_OBJ) $(LIB)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(CLI_OBJ) $(LIB) $(LDLIBS)

# The test runner collects every `Suite *suite_NAME(void)` in tests/*.c.
$(BUILD)/tests/suites.h: $(TEST_SRC)
	@mkdir -p $(dir $@)
	@sed -n 's/^Suite \*\(suite_[A-Za-z0-9_]*\)(void)$$/TP_SUITE(\1)/p' \
		$(TEST_SRC) > $@.tmp && mv $@.tmp $@

$(BUILD)/tests/%.o: CPPFLAGS += -I$(BUILD)/tests -Itests
$(BUILD)/tests/main.o: $(BUILD)/tests/suites.h

# The tests reach the commands' logic (tables, input resolution) through
# every object of src/cli but main.o.
CLI_LIB_OBJ = $(filter-out $(BUILD)/src/cli/main.o,$(CLI_OBJ))
$(CHECKBIN): $(TEST_OBJ) $(CLI_LIB_OBJ) $(LIB)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(TEST_OBJ) $(CLI_LIB_OBJ) $(LIB) $(LDLIBS) $(CHECK_LIBS)

check: $(BIN) $(CHECKBIN)
	sh tests/layers.sh
	sh tests/size.sh
	TAGPLAN_BIN=$(abspath $(BIN)) TAGPLAN_DATA=$(abspath data) \
	TAGPLAN_TESTS=$(abspath tests) $(CHECKBIN)

SAN = -fsanitize=address,undefined -fno-omit-frame-pointer \
      -fno-sanitize-recover=undefined
ASAN_BUILD ?= build/asan
asan:
	$(MAKE) BUILD=$(ASAN_BUILD) BIN=$(ASAN_BUILD)/tagplan OPT="-O1 -g $(SAN)" \
		LDFLAGS="$(SAN)" $(ASAN_BUILD)/tagplan $(ASAN_BUILD)/tests/check_tagplan
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
	LSAN_OPTIONS=suppressions=$(abspath tests/lsan.supp):print_suppressions=0 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	CK_TIMEOUT_MULTIPLIER=10 \
	TAGPLAN_BIN=$(abspath $(ASAN_BUILD)/tagplan) TAGPLAN_DATA=$(abspath data) \
	TAGPLAN_TESTS=$(abspath tests) $(ASAN_BUILD)/tests/check_tagplan

# `make asan-clang`: the asan run built with clang in its own tree.
# clang's UBSan flags what gcc's lets pass (NULL + 0 pointer arithmetic:
# 6445eff's tp_plan_content_hash, found by the clang-built fuzzers);
# both run in CI.
ASAN_CLANG_CC ?= clang
asan-clang:
	$(MAKE) CC=$(ASAN_CLANG_CC) ASAN_BUILD=build/asan-clang asan

BENCH_BIN = $(BENCH_SRC:%.c=$(BUILD)/%)
$(BUILD)/bench/%: bench/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS)

bench: $(BIN) $(BENCH_BIN)
	@for b in $(BENCH_BIN); do \
		echo "== $$b"; \
		TAGPLAN_DATA=$(abspath data) TAGPLAN_BIN=$(abspath $(BIN)) $$b || exit 1; \
	done
	@echo "== $(BUILD)/bench/bench_search, guided by the GNN (tagplan plan's default)"
	@TAGPLAN_DATA=$(abspath data) TAGPLAN_BENCH_GNN=1 $(BUILD)/bench/bench_search

demo: $(BIN)
	./$(BIN) validate data/*.json data/models/*.json data/topologies/*.json
	./$(BIN) inspect data/demo-model.json
	./$(BIN) inspect data/tag-testbed.json
	@mkdir -p $(BUILD)
	./$(BIN) plan -o $(BUILD)/demo-plan.json --svg $(BUILD)/demo-plan.svg

install: $(BIN)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(DATADIR) \
		$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5
	install -m 755 $(BIN) $(DESTDIR)$(BINDIR)/tagplan
	cp -R data/. $(DESTDIR)$(DATADIR)/
	install -m 644 man/*.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 644 man/*.5 $(DESTDIR)$(MANDIR)/man5/

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/tagplan
	rm -rf $(DESTDIR)$(DATADIR)
	for f in man/*.1; do rm -f $(DESTDIR)$(MANDIR)/man1/$${f#man/}; done
	for f in man/*.5; do rm -f $(DESTDIR)$(MANDIR)/man5/$${f#man/}; done

format:
	clang-format -i $(LIB_SRC) $(CLI_SRC) $(TEST_SRC) $(BENCH_SRC) \
		$(wildcard src/*/*.h tests/*.h fuzz/*.c)

clean:
	rm -rf build tagplan libtagplan.a

help:
	@sed -n 's/^#   //p' Makefile

# `make data`: regenerate the shipped models (data/models: the zoo and the
# HF configs of tests/data/hf) and preset topologies (data/topologies) with
# the built binary.
DATA_ZOO = resnet50 resnet101 vgg16 vgg19 inception-v3 mobilenet-v2 \
	   transformer bert-large gpt3-1.3b gpt3-13b gpt3-175b
DATA_HF  = llama-2-7b llama-2-70b llama-3-8b mistral-7b mixtral-8x7b \
	   qwen2-7b gpt2 bert-large-uncased t5-base
DATA_TOPO = dgx-a100 dgx-h100 hgx-h200 dgx1-v100 v100-nvlink p100-pcie \
	    1080ti-pcie t4-pcie l4-pcie a100-pcie dgx-b200 gb200-nvl72 \
	    h100-pcie h100-nvl dgx-a100-40gb mi300x mi250x gaudi2 gaudi3 \
	    tag-testbed
# The shipped GNN weights: one network, data/tagplan.weights (src/gnn/README,
# "Training"), self-play training on WEIGHTS_GAMES games, deterministic for
# these arguments (src/gnn/README says how long it took on 2 cores).  The
# checkpoint lets an interrupted `make weights` continue with
# `make weights WEIGHTS_RESUME=1`.  The self-play simulator's gradient
# bucket is 80 MB (Megatron-core's; --grad-bucket-mb 80), as for every
# shipped network since 2026-12.  --runtime-every 0: every self-play game
# under no runtime; the network trained with one game in three under a
# runtime (train's default) lost on bench_gnn's equal-time table
# (src/gnn/README, Training), so the shipped one is not that network.
#
# WEIGHTS_BLAS_CORE: the OpenBLAS kernel set training runs on
# (OPENBLAS_CORETYPE).  OpenBLAS picks its kernels by CPU, sgemm rounds
# differently under each, and self-play follows the network's priors, so
# the file reproduces only under the kernel set it was trained on (train
# prints it and records it in the file).  Haswell's (AVX2 and FMA) run on
# every x86-64 CPU with them: Intel since 2013, AMD since Zen.  OpenBLAS
# 0.3.21 does not check that the CPU can run a forced set (SkylakeX's on
# a CPU without AVX-512 dies of an illegal instruction), and a name it
# does not know (a typo) makes it fall back, silently, to the newest set
# the CPU's features allow (Cooperlake's on an AVX-512 CPU with BF16):
# read the kernel set train prints.  `make weights WEIGHTS_BLAS_CORE=`
# leaves the choice to OpenBLAS (and OPENBLAS_CORETYPE, if set).
# OpenBLAS runs single-threaded in tagplan (main), so no thread count to
# pin.
WEIGHTS_GAMES = 240
WEIGHTS_BLAS_CORE = Haswell
WEIGHTS_ARGS = --epochs 3 --playouts 8 --threads 2 --seed 1 \
	       --grad-bucket-mb 80 --large-devices 256 --runtime-every 0
# $(call train_weights,GAMES,CHECKPOINT,OUTPUT)
train_weights = TAGPLAN_DATA=$(abspath data) \
	$(if $(WEIGHTS_BLAS_CORE),OPENBLAS_CORETYPE=$(WEIGHTS_BLAS_CORE)) \
	$(abspath $(BIN)) train \
	--games $(1) $(WEIGHTS_ARGS) --checkpoint $(2) \
	$(if $(WEIGHTS_RESUME),$(if $(wildcard $(2)),--resume $(2))) -o $(3)
weights: $(BIN)
	@mkdir -p build
	$(call train_weights,$(WEIGHTS_GAMES),build/weights.ckpt,data/tagplan.weights)

data: $(BIN)
	@mkdir -p data/models data/topologies
	@set -e; export TAGPLAN_DATA=$(abspath data); \
	for m in $(DATA_ZOO); do \
		$(abspath $(BIN)) model $$m -o data/models/$$m.json; done; \
	for m in $(DATA_HF); do \
		$(abspath $(BIN)) model hf:tests/data/hf/$$m.json \
			-o data/models/$$m.json; done; \
	for t in $(DATA_TOPO); do \
		$(abspath $(BIN)) topo $$t -o data/topologies/$$t.json; done; \
	$(abspath $(BIN)) topo dgx-a100:4 -o data/topologies/dgx-a100-4.json; \
	$(abspath $(BIN)) topo dgx-a100:128 \
		-o data/topologies/dgx-a100-128.json

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(TEST_OBJ:.o=.d)

# `make fuzz FUZZ_SECONDS=N`: the libFuzzer targets fuzz/fuzz_*.c, built
# with clang (-fsanitize=fuzzer,address,undefined) over a library compiled
# with fuzzer instrumentation in $(FUZZ_BUILD); each runs N seconds on its
# corpus fuzz/corpus-NAME (kept out of git), seeded from the JSON files of
# tests/data and data (up to 64 KiB; 16 KiB for topologies), tests/data/hf
# (HF configs), tests/data/nvidia-smi (matrices), two small GNNs that
# `tagplan train` writes (8 and 33 KB; data/*.weights, 481 KB, runs once
# first: as a seed it held the target at ~40 exec/s) and
# fuzz/strategy.seeds.  Crashes land in fuzz/artifacts/NAME/; turn each
# into tests/data/regress/ + a test in tests/test_reliability.c.
# Runs use libFuzzer's fork mode: a crash stops the run, timeouts (10 s)
# and OOMs (2 GiB) are kept as artifacts to review and the run goes on
# (a 4096-device topology legitimately takes that long under ASan).
# FUZZ_TARGETS=model selects targets, FUZZ_FLAGS adds libFuzzer flags.
# The pipeline target's seeds are model + NUL + topology pairs (the models
# of tests/data and data under 48 KiB, each with four small topologies).
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_BUILD   ?= build/libfuzzer
FUZZ_FLAGS   ?=
FUZZ_SAN      = -fsanitize=address,undefined -fno-omit-frame-pointer \
		-fno-sanitize-recover=undefined
FUZZ_TARGETS ?= $(patsubst fuzz/fuzz_%.c,%,$(sort $(wildcard fuzz/fuzz_*.c)))
FUZZ_BIN      = $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/fuzz/fuzz_%)
FUZZ_ENV      = TAGPLAN_DATA=$(abspath data) TAGPLAN_TESTS=$(abspath tests) \
		ASAN_OPTIONS=detect_leaks=1 \
		LSAN_OPTIONS=suppressions=$(abspath tests/lsan.supp):print_suppressions=0 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

fuzz-lib:
	$(MAKE) BUILD=$(FUZZ_BUILD) CC=$(FUZZ_CC) WERROR= \
		OPT="-O1 -g -fsanitize=fuzzer-no-link $(FUZZ_SAN)" \
		$(FUZZ_BUILD)/libtagplan.a

$(FUZZ_BUILD)/fuzz/fuzz_%: fuzz/fuzz_%.c fuzz/harness.c fuzz/harness.h \
		fuzz/driver.h fuzz-lib
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS) $(WARN) -O1 -g -fsanitize=fuzzer $(FUZZ_SAN) \
		-o $@ $< fuzz/harness.c $(FUZZ_BUILD)/libtagplan.a $(LDLIBS)

# the weights target's seeds are small networks `tagplan train` writes
fuzz-build: $(FUZZ_BIN) $(if $(filter weights,$(FUZZ_TARGETS)),$(BIN))

fuzz: fuzz-build
	$(MAKE) fuzz-run

# fuzz-run: run the built targets only (no rebuild).
fuzz-run:
	@set -e; for t in $(FUZZ_TARGETS); do \
		seed=$(FUZZ_BUILD)/seed-$$t; rm -rf $$seed; \
		mkdir -p $$seed fuzz/corpus-$$t fuzz/artifacts/$$t; \
		case $$t in \
		hf) cp tests/data/hf/*.json tests/data/hf/bad/*.json $$seed/ ;; \
		nvsmi) cp tests/data/nvidia-smi/*.txt $$seed/ ;; \
		weights) $(FUZZ_ENV) $(FUZZ_BUILD)/fuzz/fuzz_weights \
			data/*.weights > $$seed.log 2>&1 || { cat $$seed.log; \
			echo "fuzz_weights: data/*.weights fails"; exit 1; }; \
			for hl in "8 1" "16 2"; do set -- $$hl; \
			$(abspath $(BIN)) train --games 2 --epochs 1 --playouts 2 \
				--max-devices 2 --hidden $$1 --layers $$2 \
				--seed $$2 -q -o $$seed/h$$1-l$$2.weights; \
			done ;; \
		strategy) n=0; while IFS= read -r l; do n=$$((n+1)); \
			printf '%s' "$$l" > $$seed/s$$n; \
			done < fuzz/strategy.seeds ;; \
		pipeline) i=0; for mf in $$(find tests/data data -name '*.json' \
			-size -48k | xargs grep -l '"tagplan-model/1"'); do \
			for tf in tests/data/good/two-racks.json \
				data/tag-testbed.json \
				data/topologies/dgx-a100.json \
				data/topologies/v100-nvlink.json; do \
			i=$$((i+1)); { cat "$$mf"; printf '\000'; \
				cat "$$tf"; } > $$seed/p$$i; done; done ;; \
		topology) find tests/data data -name '*.json' -size -16k | \
			while read -r f; do \
			cp "$$f" "$$seed/$$(echo "$$f" | tr / _)"; done ;; \
		*) find tests/data data -name '*.json' -size -65k | \
			while read -r f; do \
			cp "$$f" "$$seed/$$(echo "$$f" | tr / _)"; done ;; \
		esac; \
		len=; case $$t in strategy) dict=fuzz/strategy.dict ;; \
			nvsmi) dict=fuzz/nvsmi.dict ;; \
			weights) dict=fuzz/weights.dict; len=-max_len=65536 ;; \
			*) dict=fuzz/json.dict ;; esac; \
		echo "== fuzz_$$t: $(FUZZ_SECONDS) s"; \
		$(FUZZ_ENV) $(FUZZ_BUILD)/fuzz/fuzz_$$t \
			-max_total_time=$(FUZZ_SECONDS) -timeout=10 \
			-rss_limit_mb=2048 -dict=$$dict -print_final_stats=1 \
			-fork=1 -ignore_timeouts=1 -ignore_ooms=1 \
			-artifact_prefix=fuzz/artifacts/$$t/ $$len $(FUZZ_FLAGS) \
			fuzz/corpus-$$t $$seed; \
		ls fuzz/artifacts/$$t | sed "s|^|fuzz/artifacts/$$t/|"; \
	done

.PHONY: fuzz-lib fuzz-build fuzz-run

# `make valgrind`: the demo (validate, inspect, plan) and the other main
# commands (model, topo, plan with --dot/--svg, simulate, check, render,
# export) under memcheck: any error or definite/indirect leak fails the
# target.  tests/valgrind.supp suppresses third-party code only (Graphviz's
# dot layout, fontconfig).  Searches are kept short (--playouts) since
# memcheck runs ~50x slower.
VALGRIND = valgrind --tool=memcheck --leak-check=full \
	   --show-leak-kinds=definite,indirect \
	   --errors-for-leak-kinds=definite,indirect --error-exitcode=1 \
	   --suppressions=$(abspath tests/valgrind.supp) --quiet
VG_DIR = $(BUILD)/valgrind
valgrind: $(BIN)
	@rm -rf $(VG_DIR); mkdir -p $(VG_DIR)
	@set -e; export TAGPLAN_DATA=$(abspath data) OPENBLAS_NUM_THREADS=1; \
	b="$(VALGRIND) $(abspath $(BIN))"; o=$(VG_DIR); \
	run() { echo "== tagplan $$*" | cut -c1-100; $$b "$$@" > $$o/stdout; }; \
	run validate data/*.json data/models/*.json data/topologies/*.json; \
	run inspect data/demo-model.json; \
	run inspect data/tag-testbed.json; \
	run plan --threads 2 --playouts 100 -o $$o/demo-plan.json; \
	run model gpt --hidden 512 --layers 4 --heads 8 --seq 512 \
		--vocab 32000 --batch 16 -o $$o/gpt.json; \
	run model hf:tests/data/hf/mixtral-8x7b.json -o $$o/mixtral.json; \
	run model resnet50 -o $$o/resnet50.json; \
	run topo dgx-a100:2 -o $$o/topo.json; \
	run topo v100-nvlink:1 1080ti-pcie:1 --net 25gbe -o $$o/mixed.json; \
	run plan -m $$o/gpt.json -t $$o/topo.json --threads 2 \
		--playouts 100 -o $$o/plan.json --dot $$o/plan.dot \
		--svg $$o/plan.svg; \
	run simulate -m $$o/gpt.json -t $$o/topo.json -p $$o/plan.json \
		-o $$o/report.json --trace $$o/trace.json; \
	run simulate -m $$o/gpt.json -t $$o/topo.json -s tp=2,pp=2,dp=4; \
	run check -m $$o/gpt.json -t $$o/topo.json -p $$o/plan.json; \
	run render -p $$o/plan.json -m $$o/gpt.json -t $$o/topo.json \
		-o $$o/plan.png; \
	run render -p $$o/demo-plan.json -o $$o/demo.pdf; \
	run plan -m $$o/gpt.json -t $$o/topo.json --baseline megatron \
		-o $$o/uniform.json; \
	run export -p $$o/uniform.json -m $$o/gpt.json -t $$o/topo.json \
		--to deepspeed; \
	run export -p $$o/uniform.json -m $$o/gpt.json -t $$o/topo.json \
		--to megatron; \
	run validate -m $$o/gpt.json -t $$o/topo.json $$o/plan.json; \
	echo "valgrind: no errors, no leaks of ours"
