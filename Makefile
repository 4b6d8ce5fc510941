# Drover's two set-up commands: `make run` and `make test` (see README.md).
# Every target installs missing Debian packages first (scripts/install-deps.sh).

JOBS ?= $(shell nproc)
DEBUG_DIR := build/debug
RELEASE_DIR := build/release
ADDR ?= 127.0.0.1
PORT ?= 4646

.PHONY: all deps build build-release run test bench format tidy clean

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

# Builds and runs every unit and integration test.
test: build
	cd $(DEBUG_DIR) && ctest --output-on-failure -j $(JOBS) --timeout 300

# Release-mode benchmarks; one JSON object per result line on stdout.
bench: deps
	cmake --preset release -DDROVER_BUILD_BENCH=ON >/dev/null
	cmake --build $(RELEASE_DIR) -j $(JOBS) --target drover drover_bench drover_supervisor_bench drover_state_bench \
		drover_state_idle_bench
	@$(RELEASE_DIR)/bin/drover_bench --drover $(RELEASE_DIR)/bin/drover
	@$(RELEASE_DIR)/bin/drover_supervisor_bench --supervisor $(RELEASE_DIR)/bin/drover-supervisor
	@$(RELEASE_DIR)/bin/drover_state_bench
	@$(RELEASE_DIR)/bin/drover_state_idle_bench --drover $(RELEASE_DIR)/bin/drover

format:
	git ls-files '*.cc' '*.h' | xargs clang-format -i

tidy: build
	git ls-files 'src/*.cc' | xargs clang-tidy -p $(DEBUG_DIR) --quiet

clean:
	rm -rf build
