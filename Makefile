# Thin wrapper around meson: installs what is missing from Debian's packages, configures,
# builds and runs. `make test` is what CI runs (.ci/run sets RANKSIM_STRICT=1).
BUILD ?= build
MESON_ARGS ?=
ifeq ($(RANKSIM_STRICT),1)
BUILD := build-strict
MESON_ARGS += -Dwerror=true -Db_sanitize=address,undefined -Db_lundef=false
endif

DEB_PACKAGES := meson ninja-build pkg-config gcc libglib2.0-dev libglib2.0-dev-bin libuv1-dev \
                libsqlite3-dev libyaml-dev libjson-glib-dev libcriterion-dev sqlite3 valgrind jq
PKGCONFIG_MODULES := glib-2.0 libuv sqlite3 yaml-0.1 json-glib-1.0 criterion

.PHONY: all deps configure build test demo bench clean

all: build

deps:
	@missing=""; \
	for t in meson ninja pkg-config cc valgrind sqlite3 jq; do command -v $$t >/dev/null 2>&1 || missing=yes; done; \
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
	@./$(BUILD)/ranksim run scenarios/glm52-b200-tp1-pcp4-dcp4-flashinfer.yaml \
	    --trace results/seed004-hang.json > results/seed004-hang.txt; \
	  echo "exit $$?" >> results/seed004-hang.txt
	@./$(BUILD)/ranksim run scenarios/glm52-b200-tp1-pcp4-dcp4-flashmla.yaml \
	    --trace results/seed004-healthy.json > results/seed004-healthy.txt; \
	  echo "exit $$?" >> results/seed004-healthy.txt
	@echo "Seed 004: GLM-5.2 NVFP4 on B200, TP1/PCP4/DCP4, a 633-token prompt"
	@printf "%-78s | %s\n" "FLASHINFER_MLA_SPARSE: sizes the LSE exchange by real rows" \
	    "FLASHMLA_SPARSE: gathers the KV shards, exchanges padded rows"
	@echo
	@fold -s -w 78 results/seed004-hang.txt > results/.left.txt; \
	  fold -s -w 78 results/seed004-healthy.txt > results/.right.txt; \
	  awk 'NR==FNR { l[FNR] = $$0; n = FNR; next } { r[FNR] = $$0; m = FNR } \
	       END { k = n > m ? n : m; for (i = 1; i <= k; i++) printf "%-78s | %s\n", l[i], r[i] }' \
	      results/.left.txt results/.right.txt; rm -f results/.left.txt results/.right.txt
	@echo
	@echo "results: results/ranksim.db (sqlite3); traces: results/seed004-*.json (https://ui.perfetto.dev)"

bench: deps
	@test -f build-bench/build.ninja || meson setup build-bench --buildtype=release
	ninja -C build-bench
	./build-bench/tests/bench-engine
	@echo
	./build-bench/tests/bench-model scenarios/glm5-1024-ranks-prefill.yaml 3

clean:
	rm -rf build build-strict build-bench
