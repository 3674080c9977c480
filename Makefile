# The README's commands. Each installs what is missing and builds first.
BUILD ?= build
JOBS ?= 2
PYTHON ?= /usr/bin/python3
CMAKE_FLAGS ?=

.PHONY: all deps build test demo bench bench-tta format clean conformance \
	fuzz-diff zoo \
	sdp-accuracy fuzz compress-twin compress-accuracy test-asan install \
	package zoo-cuda

all: build

deps:
	@tools/install-deps.sh $(BUILD)

$(BUILD)/build.ninja: | deps
	cmake -S . -B $(BUILD) -G Ninja \
	  $$(command -v ccache >/dev/null && echo -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache) \
	  $(CMAKE_FLAGS)

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# PREFIX: where `make install` puts OTC (tools, libraries, headers,
# OTCConfig.cmake, otc.pc, the Python package); `make package`: a .deb.
PREFIX ?= /usr/local
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

package: build
	cmake --build $(BUILD) --target package

demo: build
	tools/demo.sh $(BUILD)

bench: build
	tools/bench.sh $(BUILD)

# Time to test accuracy 0.80 on Fashion-MNIST over the shaped 1 Gbit/s link
# (bench_compress.py --tta-only), 2 then 4 ranks: OTC none / fp16 /
# topk-int8 / PowerSGD vs DDP dense / fp16 / PowerSGD. Root; about 12 and 30
# minutes (off in make bench for that reason).
bench-tta: build
	$(PYTHON) test/bench/bench_compress.py --build-dir $(BUILD) --tta-only
	$(PYTHON) test/bench/bench_compress.py --build-dir $(BUILD) --tta-only \
	  --world-size 4

# ONNX's own backend tests: table of passed / failed / unsupported.
conformance: build
	$(PYTHON) test/conformance/run_conformance.py --build-dir $(BUILD) \
	  --json $(BUILD)/conformance.json

# torch.onnx's exporter for fuzz-diff and zoo: legacy (torch 1.13, Debian's
# Python) or dynamo (torch 2.x, $(BUILD)/pyenv).
EXPORTER ?= legacy
EXPORTER_PYTHON = $(if $(filter dynamo,$(EXPORTER)),$(BUILD)/pyenv/bin/python,$(PYTHON))

# libFuzzer (clang-19, ASan + UBSan, OTC's asserts on, build/fuzz) on the
# data, manifest and checkpoint parsers, the ONNX importer and otc-opt's
# parser and verifiers, FUZZ_SECONDS each.
fuzz:
	tools/fuzz.sh $(FUZZ_SECONDS)

# Every target and the whole suite under ASan + UBSan (gcc, build/asan);
# make test runs the unit tests so (asan.unit).
test-asan: deps
	tools/asan.sh all $(BUILD)

# Differential tester, long mode: new random models for FUZZ_SECONDS.
FUZZ_SECONDS ?= 600
fuzz-diff: build
	OTC_VERIFY_PLAN=1 $(EXPORTER_PYTHON) test/fuzz/fuzz_diff.py --build-dir $(BUILD) \
	  --seconds $(FUZZ_SECONDS) --jobs $(JOBS) --exporter $(EXPORTER)

# Every architecture of the model zoo (test/zoo), 2 steps against float64.
# legacy: torchvision's and torch.nn's models through torch 1.13 (Debian's
# Python), timm's and transformers' (PyPI only) through torch 2.x's
# TorchScript exporter ($(BUILD)/pyenv); both run, either failing fails.
zoo: build
ifeq ($(EXPORTER),legacy)
	OTC_VERIFY_PLAN=1 $(PYTHON) test/zoo/zoo_test.py --build-dir $(BUILD) \
	  --exporter legacy --library torchvision,torch; a=$$?; \
	OTC_VERIFY_PLAN=1 $(BUILD)/pyenv/bin/python test/zoo/zoo_test.py \
	  --build-dir $(BUILD) --exporter legacy --library timm,transformers; \
	b=$$?; exit $$((a || b))
else
	OTC_VERIFY_PLAN=1 $(EXPORTER_PYTHON) test/zoo/zoo_test.py --build-dir $(BUILD) \
	  --exporter $(EXPORTER)
endif

# Every architecture of the model zoo compiled for the CPU and for CUDA
# (compile and link only): any model that compiles for the CPU but not for
# CUDA fails. Both pythons, as `make zoo`.
zoo-cuda: build
	$(PYTHON) test/integration/cuda_compile_test.py --build-dir $(BUILD) \
	  --zoo all; a=$$?; \
	$(BUILD)/pyenv/bin/python test/integration/cuda_compile_test.py \
	  --build-dir $(BUILD) --zoo all --zoo-only timm,transformers; b=$$?; \
	exit $$((a || b))

# topk-int8 (at each of TWIN_RATIOS; under momentum, Nesterov, Adam and
# AdamW also with DGC's momentum correction and factor masking), PowerSGD
# rank 4 and dense on Fashion-MNIST, OTC next to its PyTorch DDP comm-hook
# twin: test accuracy after TWIN_EPOCHS, the mean over TWIN_SEEDS initial
# weights, on TWIN_WORLD ranks through the TWIN_EXCHANGE (all-gather or
# reduce-scatter); TWIN_OPTIMIZERS picks some of sgd, momentum, nesterov,
# adam, adamw (AdamW: weight decay 0.01); TWIN_MODEL: mlp or cnn (the
# residual CNN).
TWIN_MODEL ?= mlp
TWIN_EPOCHS ?= 1
TWIN_SEEDS ?= 3
TWIN_RATIOS ?= 0.1
TWIN_OPTIMIZERS ?= sgd,momentum,adam
TWIN_WORLD ?= 2
TWIN_EXCHANGE ?= all-gather
compress-twin: build
	$(PYTHON) test/integration/compress_twin_test.py --build-dir $(BUILD) \
	  --epochs $(TWIN_EPOCHS) --seeds $(TWIN_SEEDS) --ratios $(TWIN_RATIOS) \
	  --optimizers $(TWIN_OPTIMIZERS) --world-size $(TWIN_WORLD) \
	  --exchange $(TWIN_EXCHANGE) --model $(TWIN_MODEL)

# Compressed training against the dense all-reduce on Fashion-MNIST, the
# MLP and the residual CNN on 2 and 4 ranks, every epoch's test accuracy the
# mean over 3 seeds (make test runs the MLP on 2 ranks); about an hour.
compress-accuracy: build
	@rc=0; for m in mlp cnn; do for w in 2 4; do \
	  $(PYTHON) test/integration/compress_fashion_mnist_test.py \
	    --build-dir $(BUILD) --model $$m --world-size $$w || rc=1; \
	done; done; exit $$rc

# SDP against data parallelism on Fashion-MNIST, the mean over 4 seeds
# (make test runs one).
sdp-accuracy: build
	$(PYTHON) test/integration/sdp_fashion_mnist_test.py --build-dir $(BUILD) \
	  --seeds 4

format:
	git ls-files '*.cpp' '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD)
