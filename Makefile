# Thin wrapper around meson: installs what is missing from Debian's packages, configures,
# builds and runs. `make test` is what CI runs (.ci/run sets RANKSIM_STRICT=1).
BUILD ?= build
MESON_ARGS ?=
ifeq ($(RANKSIM_STRICT),1)
BUILD := build-strict
MESON_ARGS += -Dwerror=true -Db_sanitize=address,undefined -Db_lundef=false
endif

DEB_PACKAGES := meson ninja-build pkg-config gcc libglib2.0-dev libglib2.0-dev-bin libuv1-dev \
                libsqlite3-dev libyaml-dev libjson-glib-dev libcriterion-dev libcairo2-dev \
                libfontconfig-dev sqlite3 \
                valgrind jq time \
                libopenmpi-dev openmpi-bin
# ompi-c: Open MPI's pkg-config name on Debian (optional for the build, meson -Dmpi=auto; CI
# installs it so `sweep --mpi` is built and tested, doc/scale-out.md).
PKGCONFIG_MODULES := glib-2.0 libuv sqlite3 yaml-0.1 json-glib-1.0 criterion cairo fontconfig \
                     ompi-c

# Fuzzing (doc/fuzzing.md): clang + libFuzzer, ASan + UBSan, in build-fuzz/.
FUZZ_BUILD := build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= scenario config hardware set nccl logs pickle fr requests
FUZZ_MESON_ARGS := -Dfuzz=true -Dmpi=disabled -Db_sanitize=address,undefined -Db_lundef=false \
                   -Dc_args=-fsanitize=fuzzer-no-link

.PHONY: all deps configure build test demo bench validate-times validate-memory clean fuzz-deps fuzz-build fuzz fuzz-ci

all: build

deps:
	@missing=""; \
	for t in meson ninja pkg-config cc valgrind sqlite3 jq /usr/bin/time mpirun; do command -v $$t >/dev/null 2>&1 || missing=yes; done; \
	if [ -z "$$missing" ]; then \
	  pkg-config --exists $(PKGCONFIG_MODULES) 2>/dev/null || missing=yes; \
	fi; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "make: installing build dependencies from Debian's packages"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(DEB_PACKAGES)) >/dev/null || exit 1; \
	  else \
	    echo "make: missing build dependencies; install them with:"; \
	    echo "  sudo apt-get install $(DEB_PACKAGES)"; \
	    exit 1; \
	  fi; \
	fi

$(BUILD)/build.ninja:
	meson setup $(BUILD) $(MESON_ARGS)

configure: deps $(BUILD)/build.ninja

build: configure
	ninja -C $(BUILD)

test: build
	meson test -C $(BUILD) --print-errorlogs

demo: build
	@mkdir -p results
	@echo "Seed 004: GLM-5.2 NVFP4 on B200, TP1/PCP4/DCP4, a 633-token prompt."
	@echo
	@echo "1. FLASHINFER_MLA_SPARSE sizes the LSE exchange by each rank's real rows:"
	@echo "   $$ ranksim run scenarios/glm52-b200-tp1-pcp4-dcp4-flashinfer.yaml"
	@echo
	@COLUMNS=$${COLUMNS:-80} ./$(BUILD)/ranksim run scenarios/glm52-b200-tp1-pcp4-dcp4-flashinfer.yaml \
	    --trace results/seed004-hang.json.gz | sed -n '1,/^ranks:/p' | sed '$$d'; true
	@./$(BUILD)/ranksim plot latest -o results/seed004-hang.png >/dev/null
	@echo
	@echo "2. The fix: FLASHMLA_SPARSE gathers the KV shards and exchanges padded rows:"
	@echo "   $$ ranksim run scenarios/glm52-b200-tp1-pcp4-dcp4-flashmla.yaml"
	@echo
	@COLUMNS=$${COLUMNS:-80} ./$(BUILD)/ranksim run scenarios/glm52-b200-tp1-pcp4-dcp4-flashmla.yaml \
	    --trace results/seed004-healthy.json.gz | sed -n '1,/^ranks:/p' | sed '$$d'
	@echo
	@echo "Stored in results/ranksim.db; traces results/seed004-*.json.gz"
	@echo "(https://ui.perfetto.dev), the hang's picture results/seed004-hang.png."
	@echo "Next: ranksim explain latest~1    (the hang's story: culprit, wait-for graph)"
	@echo "      ranksim diff latest~1 latest"

bench: deps
	@test -f build-bench/build.ninja || meson setup build-bench --buildtype=release -Db_lto=true
	@meson configure build-bench -Db_lto=true >/dev/null
	ninja -C build-bench
	./build-bench/tests/bench-engine
	@echo
	tests/bench/bench-scale.sh build-bench 100 1024 4096 16384 65536
	@echo
	./build-bench/tests/bench-model scenarios/glm5-1024-ranks-prefill.yaml 3
	@echo
	tests/bench/bench-run.sh build-bench scenarios/glm5-1024-ranks-prefill.yaml
	@echo
	tests/bench/bench-import.sh build-bench 1024 2000
	@echo
	tests/bench/bench-import.sh build-bench 1024 200
	@echo
	tests/bench/bench-serve.sh build-bench scenarios/llama70b-tp4-poisson-200.yaml
	@echo
	tests/bench/bench-serve-timeline.sh build-bench
	@echo
	tests/bench/bench-scaling.sh build-bench
	@echo
	tests/bench/bench-plot.sh build-bench scenarios/glm5-1024-ranks-prefill.yaml 4096
	@echo
	tests/bench/bench-concurrent.sh build-bench
	@echo
	tests/bench/bench-contention.sh build-bench
	@echo
	tests/bench/bench-sweep-jobs.sh build-bench
	@echo
	tests/bench/bench-simgrid.sh build-bench 10 256 1024

# clang with libFuzzer's runtime, installed from Debian's packages like `deps` does.
fuzz-deps: deps
	@probe='int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }'; \
	if ! echo "$$probe" | clang -x c -fsanitize=fuzzer,address,undefined - -o /dev/null >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "make: installing clang from Debian's packages"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang) >/dev/null || exit 1; \
	    for rt in libclang-rt-14-dev libclang-rt-dev; do \
	      if ! echo "$$probe" | clang -x c -fsanitize=fuzzer,address,undefined - -o /dev/null >/dev/null 2>&1 && \
	         apt-cache show $$rt >/dev/null 2>&1; then \
	        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$rt >/dev/null || exit 1; \
	      fi; \
	    done; \
	  else \
	    echo "make: fuzzing needs clang with libFuzzer; install it with:"; \
	    echo "  sudo apt-get install clang"; \
	    exit 1; \
	  fi; \
	fi

$(FUZZ_BUILD)/build.ninja:
	CC=clang meson setup $(FUZZ_BUILD) $(FUZZ_MESON_ARGS)

# Only the fuzz targets (and the libraries they link): the rest of build-fuzz is never built.
fuzz-build: fuzz-deps $(FUZZ_BUILD)/build.ninja
	ninja -C $(FUZZ_BUILD) $(addprefix tests/fuzz-,$(FUZZ_TARGETS))

# `make fuzz [FUZZ_SECONDS=N] [FUZZ_TARGETS="scenario set"]`: N seconds per target, the corpus
# kept in build-fuzz/corpus/NAME, crashes in build-fuzz/artifacts/NAME/.
fuzz: fuzz-build
	@failed=""; for t in $(FUZZ_TARGETS); do \
	  echo "make: fuzzing $$t for $(FUZZ_SECONDS) s"; \
	  tests/fuzz/run.sh fuzz $(FUZZ_BUILD)/tests/fuzz-$$t $$t "$(CURDIR)" "$(CURDIR)/$(FUZZ_BUILD)" \
	      $(FUZZ_SECONDS) || failed="$$failed $$t"; \
	done; \
	if [ -n "$$failed" ]; then \
	  echo "make: findings in:$$failed (inputs in $(FUZZ_BUILD)/artifacts/NAME/)"; exit 1; \
	fi

# What CI runs: the suite `fuzz`, a fixed number of executions per target over its seeds.
fuzz-ci: fuzz-build
	meson test -C $(FUZZ_BUILD) --suite fuzz --no-rebuild --print-errorlogs

clean:
	rm -rf build build-strict build-bench build-fuzz

# Replays the measured kernel and collective times of tests/data/times/ through the cost models
# and prints, per kind and device, n, median, p90 and worst |error| (doc/validation.md).
# MLA / DSA: the attention modules and absorbed BMMs (kinds of their own, --mla-module) and the
# whole steps of an MLA MoE model (steps-mla.csv), in a run of their own.
validate-memory: build
	./build/tests/validate-memory --root . tests/data/memory/startup.tsv

validate-times: build
	./build/tests/validate-times --steps tests/data/times/steps.csv $$(ls tests/data/times/*.csv | grep -v -e grouped-gemm -e 'steps.*\.csv' -e '/mla-' )
	./build/tests/validate-times --steps tests/data/times/steps-mla.csv $$(for f in tests/data/times/mla-*.csv; do printf -- '--mla-module %s ' "$$f"; done)
