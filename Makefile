# kip — build, run and test the KIP PostgreSQL extension.
#
#   make run    set up the machine, build and install kip, start a local
#               cluster (port 54329), load a demo memory, start the
#               kip-server gateway (http://127.0.0.1:8080/kip), leave them running
#   make test   set up the machine, then run every test suite
#   make stop   stop the gateway and the local cluster
#   make bench  run the benchmarks (prints figures)
#   make soak   gateway load test: 64 clients x 30 s, Postgres restart under load;
#               reliability suites in full: 16-client load for 60 s,
#               pathological queries, 100,000 fuzz inputs through SQL, crashes

PG_MAJOR   ?= 15
PG_CONFIG  ?= /usr/bin/pg_config
KIP_PGPORT ?= 54329
export KIP_PGPORT
PSQL = psql -X -v ON_ERROR_STOP=1 -h localhost -p $(KIP_PGPORT) -U postgres
DB ?= kip

.PHONY: setup install run stop test bench soak clean

setup:
	@bash scripts/setup.sh

# The cluster preloads kip.so (maintenance worker): never overwrite the
# library under a running server, stop it first (`make run` starts it again).
install: setup
	@bash scripts/cluster.sh stop
	cargo pgrx install --release --pg-config $(PG_CONFIG) --sudo 2>&1 | grep -v '^\s*$$' | tail -n 3

run: install
	@bash scripts/cluster.sh start
	@bash scripts/demo.sh $(DB)
	@bash scripts/gateway.sh start $(DB)

stop:
	@bash scripts/gateway.sh stop
	@bash scripts/cluster.sh stop

test: setup
	@bash scripts/test.sh

bench: install
	@bash scripts/cluster.sh start
	cargo bench -p kip-lang
	cargo run --release -p kip-integration-tests --bin kip-write-bench
	KIP_BENCH_VECTORS=1 cargo run --release -p kip-integration-tests --bin kip-write-bench
	cargo run --release -p kip-integration-tests --bin kip-write-bench -- scale
	cargo run --release -p kip-integration-tests --bin kip-write-bench -- hand
	cargo run --release -p kip-integration-tests --bin kip-bulk-bench
	cargo run --release -p kip-integration-tests --bin kql-bench
	cargo run --release -p kip-integration-tests --bin kip-brain-bench
	cargo run --release -p kip-integration-tests --bin kip-search-bench
	bash scripts/model_bench.sh

soak: install
	@bash scripts/cluster.sh start
	@bash scripts/gateway_test.sh soak
	@bash scripts/reliability.sh soak

clean: stop
	cargo clean
	rm -rf .pgdata
