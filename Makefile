# The two commands: `make start` and `make test`. Both begin with `make setup`.
SHELL := /bin/bash
.DEFAULT_GOAL := help
NODE_ENV_CMD = eval "$$(bin/setup)"

.PHONY: help setup start test typecheck unit postgres chromium prometheus nginx bench bench-table lint lint-baseline format

help:
	@echo "make start   install and run every service on the embedded database (.data/)"
	@echo "make test    install, type-check and run the whole test suite (local PostgreSQL)"
	@echo "make setup   provision Node 24 if needed and install dependencies (idempotent)"
	@echo "make bench   run the benchmarks (bench/results/*.json)"
	@echo "make lint    check the layering rules (dependency-cruiser) and ESLint; CI runs it before the tests"
	@echo "make format  apply ESLint's fixes, dprint's layout included, to the whole tree"

setup:
	@bin/setup >/dev/null

start: setup
	@$(NODE_ENV_CMD) && exec bin/vdb serve

postgres:
	@if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then \
	  echo "starting the local PostgreSQL"; \
	  pg_ctlcluster --skip-systemctl-redirect $$(ls /etc/postgresql) main start; \
	  for i in $$(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done; \
	fi

# The proxy tests (test/proxy/nginx.test.ts) run Debian's nginx in the foreground with a config of their own.
nginx:
	@if [ ! -x /usr/sbin/nginx ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing Debian's nginx for the proxy tests"; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light >/dev/null; \
	fi

# The device sign-in browser test drives Debian's Chromium (playwright-core never downloads a browser).
chromium:
	@if [ ! -x /usr/bin/chromium ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing Debian's chromium for the browser test"; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	fi

# The metrics test has a real Prometheus scrape /metrics and runs promtool (Debian's prometheus package).
prometheus:
	@if ! command -v promtool >/dev/null && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing Debian's prometheus for the metrics test"; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null; \
	fi

typecheck: setup
	@$(NODE_ENV_CMD) && npx tsc --noEmit -p tsconfig.json

# The layering rules (.dependency-cruiser.cjs; the violations they found on day one are in
# .dependency-cruiser-known-violations.json and pass until fixed), then ESLint (eslint.config.mjs).
KNOWN = .dependency-cruiser-known-violations.json
lint: setup
	@$(NODE_ENV_CMD) && npx depcruise --ignore-known $(KNOWN) --output-type err-long src schema layers \
	  && npx eslint --max-warnings 0 --cache --cache-location .cache/eslint/ . && echo "lint: ok"

# After fixing a known violation: drops the fixed ones from the known list, never adds one.
lint-baseline: setup
	@$(NODE_ENV_CMD) && npx depcruise --baseline $(KNOWN) --baseline-mode shrink-only src schema layers

# Rewrites files: run it alone, on a tree nobody else is editing, and commit the result by itself.
format: setup
	@$(NODE_ENV_CMD) && VDB_FORMAT=1 npx eslint --fix . && echo "format: done"

test: setup postgres chromium prometheus nginx
	@$(NODE_ENV_CMD) && npx tsc --noEmit -p tsconfig.json && echo "typecheck: ok" && npx vitest run

bench: setup postgres
	@$(NODE_ENV_CMD) && node bench/run.ts $(BENCH)

# The README's benchmark table, rendered from bench/results/*.json (never typed by hand).
bench-table: setup
	@$(NODE_ENV_CMD) && node bench/run.ts table >/dev/null && echo "README.md: benchmark table regenerated"
