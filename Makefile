# Drover's two set-up commands: `make run` and `make test` (see README.md).
# Every target installs missing Debian packages first (scripts/install-deps.sh).

JOBS ?= $(shell nproc)
DEBUG_DIR := build/debug
RELEASE_DIR := build/release
ADDR ?= 127.0.0.1
PORT ?= 4646

FUZZ_DIR := build/fuzz
# `make test` runs each fuzzer briefly; `make fuzz` for as long as you like (each).
FUZZERS := jobspec_fuzz http_fuzz protocol_fuzz snapshot_fuzz
FUZZ_TEST_SECONDS ?= 20
FUZZ_SECONDS ?= 600

.PHONY: all deps build build-release build-fuzz run run-gpus test torture crash-db fuzz bench format tidy clean

all: build

deps:
	@./scripts/install-deps.sh

$(DEBUG_DIR)/build.ninja: CMakeLists.txt CMakePresets.json | deps
	cmake --preset debug >/dev/null

$(RELEASE_DIR)/build.ninja: CMakeLists.txt CMakePresets.json | deps
	cmake --preset release >/dev/null

build: deps $(DEBUG_DIR)/build.ninja
	cmake --build $(DEBUG_DIR) -j $(JOBS)

build-release: deps $(RELEASE_DIR)/build.ninja
	cmake --build $(RELEASE_DIR) -j $(JOBS) --target drover

# Starts a dev agent in the foreground on $(ADDR):$(PORT) and submits examples/hello.json.
run: build-release
	@./scripts/run-dev.sh $(RELEASE_DIR)/bin/drover $(ADDR) $(PORT)

# A dev agent with four fake GPUs (the example device plugin) running a two-task GPU job.
run-gpus: build-release
	@./scripts/run-dev.sh $(RELEASE_DIR)/bin/drover $(ADDR) $(PORT) examples/gpus.nomad.hcl \
		-config examples/devices/fake-gpus.hcl

# Builds and runs every unit and integration test, then runs each fuzzer (the job file
# parser, the HTTP layer, the supervisor protocol) for $(FUZZ_TEST_SECONDS) seconds
# (clang + libFuzzer, its own build dir).
test: build build-fuzz
	cd $(DEBUG_DIR) && ctest --output-on-failure -j $(JOBS) --timeout 300
	@for f in $(FUZZERS); do ./scripts/fuzz.sh $(FUZZ_DIR)/bin/$$f $(FUZZ_TEST_SECONDS) || exit 1; done

build-fuzz: deps
	cmake --preset fuzz >/dev/null
	cmake --build $(FUZZ_DIR) -j $(JOBS) --target $(FUZZERS)

# Crash torture (docs/reliability.md) for $(ROUNDS) rounds (make test runs 20);
# STORM=1 kills again while the agent may still be restoring.
ROUNDS ?= 200
STORM ?= 0
torture: build
	DROVER_TORTURE_ROUNDS=$(ROUNDS) DROVER_TORTURE_STORM=$(STORM) $(DEBUG_DIR)/bin/torture_test

# The state DB's crash consistency (docs/reliability.md) for $(ROUNDS) SIGKILLs of a
# writer (make test runs 50), then the write-path fault tests.
crash-db: build
	DROVER_STATE_CRASH_ROUNDS=$(ROUNDS) $(DEBUG_DIR)/bin/state_crash_test

# Runs each fuzzer for $(FUZZ_SECONDS) seconds; corpora grow in build/fuzz/corpus/<name>
# and crashing inputs land in build/fuzz/artifacts.
fuzz: build-fuzz
	@for f in $(FUZZERS); do ./scripts/fuzz.sh $(FUZZ_DIR)/bin/$$f $(FUZZ_SECONDS) || exit 1; done

# Release-mode benchmarks; one JSON object per result line on stdout.
bench: deps
	cmake --preset release -DDROVER_BUILD_BENCH=ON >/dev/null
	cmake --build $(RELEASE_DIR) -j $(JOBS) --target drover drover_bench drover_supervisor_bench drover_state_bench \
		drover_state_idle_bench drover_jobspec_bench drover_device_stats_bench drover_scheduler_bench \
		drover-nodesim drover_cluster_sim_bench drover_etcd_backend_bench drover_ha_failover_bench \
		drover_node_bench drover_docker_bench
	@$(RELEASE_DIR)/bin/drover_bench --drover $(RELEASE_DIR)/bin/drover
	@$(RELEASE_DIR)/bin/drover_supervisor_bench --supervisor $(RELEASE_DIR)/bin/drover-supervisor
	@$(RELEASE_DIR)/bin/drover_state_bench
	@$(RELEASE_DIR)/bin/drover_state_idle_bench --drover $(RELEASE_DIR)/bin/drover
	@$(RELEASE_DIR)/bin/drover_jobspec_bench
	@$(RELEASE_DIR)/bin/drover_device_stats_bench
	@$(RELEASE_DIR)/bin/drover_scheduler_bench
	@$(RELEASE_DIR)/bin/drover_cluster_sim_bench --drover $(RELEASE_DIR)/bin/drover \
		--nodesim $(RELEASE_DIR)/bin/drover-nodesim
	@$(RELEASE_DIR)/bin/drover_etcd_backend_bench
	@$(RELEASE_DIR)/bin/drover_ha_failover_bench --drover $(RELEASE_DIR)/bin/drover
	@$(RELEASE_DIR)/bin/drover_node_bench --drover $(RELEASE_DIR)/bin/drover
	@$(RELEASE_DIR)/bin/drover_docker_bench --drover $(RELEASE_DIR)/bin/drover

format:
	git ls-files '*.cc' '*.h' | xargs clang-format -i

tidy: build
	git ls-files 'src/*.cc' | xargs clang-tidy -p $(DEBUG_DIR) --quiet

clean:
	rm -rf build
