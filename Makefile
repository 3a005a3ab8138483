# The README's two commands: `make train` and `make test`.
VENV := .venv
PYTHON := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Bazel's py_test runs the python3 first on PATH: the virtual environment's.
BAZEL_ENV := PATH="$(CURDIR)/$(VENV)/bin:$$PATH"
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: train distributed test pytest benchmark bazel

# The default job: the paper's shallow Atari agent on Pong, with the flag
# file that learns it here (atari57/atari_10m.flags; the paper's own
# settings: TRAIN_ARGS without the flagfile). Ctrl-C writes a checkpoint;
# running it again resumes.
TRAIN_FLAGFILE ?= atari57/atari_10m.flags
TRAIN_ARGS ?= --flagfile=$(TRAIN_FLAGFILE) --level_name=atari/pong \
	--logdir=logs/atari_pong_10m

train: $(STAMP)
	@echo "make train: $(TRAIN_ARGS) $(ARGS)"
	@echo "  ($(TRAIN_FLAGFILE), the paper's Table G.1 but: $$(grep -h '^--' $(TRAIN_FLAGFILE) | tr '\n' ' ')— why: docs/learning.md)"
	$(PYTHON) experiment.py $(TRAIN_ARGS) $(ARGS)

# The same job as learner and actor processes over loopback (launch.py).
DISTRIBUTED_ARGS ?= --level_name=atari/pong \
	--logdir=logs/atari_pong_distributed --total_environment_frames=2e7

distributed: $(STAMP)
	$(PYTHON) launch.py $(DISTRIBUTED_ARGS) $(ARGS)

test: $(STAMP) bazel
	$(BAZEL_ENV) bazel test //... --test_output=errors --local_test_jobs=2

pytest: $(STAMP)
	OPENBLAS_NUM_THREADS=1 $(PYTHON) -m pytest -q tests

# make benchmark [BENCHMARK=throughput|learner_step|distributed|profile] [ARGS=...]
BENCHMARK ?= throughput

benchmark: $(STAMP)
	$(PYTHON) -m benchmarks.$(BENCHMARK) $(ARGS)

# Reinstalled only when requirements.txt changes, so later runs start at once.
$(STAMP): requirements.txt
	[ -x $(PYTHON) ] || python3 -m venv $(VENV)
	$(PYTHON) -m pip install --quiet --upgrade pip
	$(PYTHON) -m pip install --quiet -r requirements.txt
	touch $(STAMP)

bazel:
	@command -v bazel >/dev/null || { $(SUDO) apt-get update && \
	  $(SUDO) apt-get install -y bazel-bootstrap; }
