# kafpy: `make run` starts one broker on the embedded metadata store, `make test` runs the tests.
# Both install what they need into .venv (and, for the tests, Debian's zookeeper package).

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install system-deps run test lint package-check bench bench-deps bench-throughput bench-latency clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# compat mode: the editable install's .pth puts the project root on sys.path, so Spark's
	# lookup of data sources (pkgutil.iter_modules) finds pyspark_kafpy from any directory;
	# the default mode's import hook is invisible to it
	$(PY) -m pip install -q -e '.[test]' --config-settings editable_mode=compat
	touch $(STAMP)

install: $(STAMP)

# kafpy[kerberos] for the GSSAPI tests: python-gssapi builds against MIT Kerberos's headers
# (libkrb5-dev, from system-deps), so it is installed apart and `make run` needs none of it
KRB_STAMP := $(VENV)/.kerberos
$(KRB_STAMP): $(STAMP)
	@command -v krb5-config >/dev/null 2>&1 || { echo "python-gssapi (kafpy[kerberos]) builds \
	against MIT Kerberos: run make system-deps, or apt-get install libkrb5-dev gcc" >&2; exit 1; }
	$(PY) -m pip install -q -e '.[test,kerberos]' --config-settings editable_mode=compat
	touch $(KRB_STAMP)

# A real ZooKeeper for the metadata-store and CLI tests; kcat for the client tests; a JDK
# for the stored-password reference; an MIT KDC (krb5kdc, kdb5_util, kadmin.local, kinit),
# Cyrus SASL's GSSAPI plugin for kcat and the Kerberos headers python-gssapi builds
# against, for the GSSAPI tests.
system-deps:
	@need=""; \
	[ -e /usr/share/java/zookeeper.jar ] || need="$$need zookeeper"; \
	command -v kcat >/dev/null 2>&1 || need="$$need kcat"; \
	command -v javac >/dev/null 2>&1 || need="$$need default-jdk-headless"; \
	[ -x /usr/sbin/krb5kdc ] || need="$$need krb5-kdc"; \
	[ -x /usr/sbin/kadmin.local ] || need="$$need krb5-admin-server"; \
	command -v kinit >/dev/null 2>&1 || need="$$need krb5-user"; \
	command -v krb5-config >/dev/null 2>&1 || need="$$need libkrb5-dev"; \
	command -v gcc >/dev/null 2>&1 || need="$$need gcc"; \
	ls /usr/lib/*/sasl2/libgssapiv2.so >/dev/null 2>&1 || need="$$need libsasl2-modules-gssapi-mit"; \
	command -v chromium >/dev/null 2>&1 || need="$$need chromium"; \
	command -v chromedriver >/dev/null 2>&1 || need="$$need chromium-driver"; \
	if [ -n "$$need" ]; then \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$need >/dev/null; \
	fi

run: install
	LOG_DIR=./logs $(VENV)/bin/kafpy server config/server.properties \
	  --override kafpy.metrics.listener=http://127.0.0.1:9404

# Four pytest-xdist workers, a test file each at a time (module fixtures stay shared): the
# integration and cluster tests mostly wait on brokers, so four fit two cores. Then, on a
# quiet machine, the Spark tests (each worker would start a Spark JVM of its own) and the
# consumer-group tool's offset resets (whose by-timestamp resets failed under that load,
# see issue 13's note), and the cluster deployed across network namespaces (three ZooKeeper
# JVMs and three brokers at once, whose restarts are timed).
SERIAL_TESTS = tests/spark tests/integration/test_consumer_groups.py tests/cluster/test_deploy_across_hosts.py
test: system-deps install $(KRB_STAMP)
	$(PY) -m pytest -q -p no:cacheprovider -n 4 --dist loadfile $(SERIAL_TESTS:%=--ignore=%) tests
	$(PY) -m pytest -q -p no:cacheprovider $(SERIAL_TESTS)

lint: install $(KRB_STAMP)
	$(VENV)/bin/ruff check kafpy tests bench
	$(VENV)/bin/ruff format --check kafpy tests bench
	$(VENV)/bin/mypy kafpy

# The wheel and sdist built and checked; the core wheel installed alone in a fresh venv
# serves a record (needs kcat, from system-deps, and the package registry for the build).
package-check: system-deps install
	$(PY) .ci/package_check.py

bench: install
	$(PY) bench/storage_bench.py

# The benches' reference (Redis Streams: redis-server and redis-py) and kcat.
bench-deps: install
	$(PY) -m pip install -q -e '.[bench]'
	@{ command -v redis-server && command -v kcat; } >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq redis-server kcat >/dev/null; }

# Broker throughput with confluent-kafka (and kcat), against Redis Streams as the reference.
bench-throughput: bench-deps
	$(PY) bench/throughput.py

# Produce→consume latency percentiles at fixed rates, against Redis Streams in the same run.
bench-latency: bench-deps
	$(PY) bench/latency.py

clean:
	rm -rf $(VENV) data .pytest_cache .hypothesis
