# Sourced by .ci/run: find a PostgreSQL server on 127.0.0.1:5432, or start
# the local cluster, or install one from Debian's packages; then export
# IDEMPORT_TEST_POSTGRES and require the PostgreSQL tests to run (postgres in
# IDEMPORT_REQUIRE: they fail instead of skipping when the server cannot be
# reached).

pg_host=127.0.0.1
pg_port=5432
export IDEMPORT_TEST_POSTGRES=${IDEMPORT_TEST_POSTGRES:-postgres://postgres@$pg_host:$pg_port/test?sslmode=disable}
export IDEMPORT_REQUIRE=${IDEMPORT_REQUIRE:+$IDEMPORT_REQUIRE,}postgres

pg_ready() { pg_isready -q -h "$pg_host" -p "$pg_port" 2>/dev/null; }

pg_start_cluster() {
	command -v pg_ctlcluster >/dev/null 2>&1 || return 1
	local version
	version=$(ls /etc/postgresql 2>/dev/null | sort -V | tail -n 1)
	[ -n "$version" ] || return 1
	pg_ctlcluster --skip-systemctl-redirect "$version" main start 2>/dev/null || true
	for _ in $(seq 60); do pg_ready && return 0; sleep 0.5; done
	return 1
}

pg_install() {
	command -v apt-get >/dev/null 2>&1 || return 1
	echo "installing PostgreSQL from Debian's packages"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >/dev/null || return 1
	local version hba
	version=$(ls /etc/postgresql | sort -V | tail -n 1)
	hba=/etc/postgresql/$version/main/pg_hba.conf
	# The tests connect as postgres over TCP without a password.
	sed -i -E 's/^(host\s+all\s+all\s+127\.0\.0\.1\/32\s+)\S+/\1trust/' "$hba"
	pg_start_cluster
}

if ! pg_ready; then
	command -v pg_isready >/dev/null 2>&1 || pg_install || true
	pg_start_cluster || pg_install || true
fi
if ! pg_ready; then
	echo "no PostgreSQL server on $pg_host:$pg_port, and none could be started or installed" >&2
	exit 1
fi
# The test database must exist.
if ! psql "$IDEMPORT_TEST_POSTGRES" -qAtc 'SELECT 1' >/dev/null 2>&1; then
	createdb -h "$pg_host" -p "$pg_port" -U postgres test 2>/dev/null || true
	psql "$IDEMPORT_TEST_POSTGRES" -qAtc 'SELECT 1' >/dev/null
fi
# The tests create and drop thousands of schemas; with autovacuum off (as on
# the CI machine) the dead catalog rows they leave slow every later CREATE.
# Vacuuming the catalogs first takes seconds and keeps each run's tables
# cheap to create whatever ran before it.
psql "$IDEMPORT_TEST_POSTGRES" -qAtc 'VACUUM pg_catalog.pg_attribute, pg_catalog.pg_class, pg_catalog.pg_type, pg_catalog.pg_depend, pg_catalog.pg_constraint, pg_catalog.pg_index, pg_catalog.pg_attrdef, pg_catalog.pg_namespace' >/dev/null 2>&1 || true
