# C core + C unit tests (no Python). The Python extension is built by setup.py.
#   make ctest            build and run the C unit tests
#   make ctest SAN=1      the same under AddressSanitizer + UBSan (build-asan/)
CC ?= cc
PYTHON ?= python3
SAN ?=
BUILD := $(if $(SAN),build-asan,build)/c
CFLAGS_BASE := -std=c11 -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers \
               -Wno-format-truncation -D_GNU_SOURCE -Icsrc
ifeq ($(SAN),)
CFLAGS_OPT := -O2 -g
else
CFLAGS_OPT := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
endif
CFLAGS := $(CFLAGS_BASE) $(CFLAGS_OPT)
LDLIBS := -ldl -lm -lpthread

CORE_DIRS := common ir target passes partition kir convert codegen engine backend backend/opencl backend/cuda backend/cpu kernels
CORE_SRC := $(sort $(foreach d,$(CORE_DIRS),$(wildcard csrc/$(d)/*.c))) csrc/kernels/embedded.c
CORE_SRC := $(sort $(CORE_SRC))
CORE_OBJ := $(patsubst csrc/%.c,$(BUILD)/%.o,$(CORE_SRC))
TEST_SRC := $(wildcard csrc/tests/test_*.c)
TEST_BIN := $(patsubst csrc/tests/%.c,$(BUILD)/tests/%,$(TEST_SRC))
HEADERS := $(wildcard csrc/*/*.h csrc/*/*/*.h csrc/*/*.inc csrc/*/*/*.inc csrc/*/*.def)

.PHONY: all lib ctest clean
all: lib $(TEST_BIN)
lib: $(BUILD)/libttc.a

csrc/kernels/embedded.c: $(wildcard csrc/kernels/*.cl) csrc/kernels/embed.py
	$(PYTHON) csrc/kernels/embed.py $@

$(BUILD)/%.o: csrc/%.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/libttc.a: $(CORE_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/tests/%: csrc/tests/%.c $(BUILD)/libttc.a csrc/tests/ctest.h csrc/tests/engine_util.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< $(BUILD)/libttc.a $(LDLIBS) -o $@

# OMP_NUM_THREADS=1: oneDNN (CPU convolutions) runs on libgomp, and LeakSanitizer's exit-time
# tracer crashes ("Tracer caught signal 11") while libgomp's idle worker threads are alive; one
# OpenMP thread keeps the leak check working (the pytest ASan pass runs oneDNN multi-threaded).
# run_ctests.sh ends with a summary naming each binary that failed.
ctest: $(TEST_BIN)
	@$(if $(SAN),OMP_NUM_THREADS=1,) \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/csrc/tests/lsan.supp:print_suppressions=0 \
	  bash csrc/tests/run_ctests.sh $(TEST_BIN)

clean:
	rm -rf build build-asan csrc/kernels/embedded.c
