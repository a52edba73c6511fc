# Sourced by .ci/run: cross-compile the whole module for every platform
# idemport supports, so that a call only one operating system has cannot
# slip in. `go vet` type-checks the test files too, so the tests compile
# for every platform even where they cannot run here.
#
# - Without cgo (CGO_ENABLED=0): darwin and windows, amd64 and arm64, and
#   linux. Such a build has no SQLite; the binary must say so in one
#   sentence, and still import into PostgreSQL (checked below on the linux
#   build, which can run here; PostgreSQL is set up by .ci/postgres.sh).
# - With cgo for windows/amd64 through Debian's mingw-w64 cross compiler,
#   so the C code of the SQLite driver and of sink/sqlite is compiled for
#   Windows too. This is the slow part: it compiles SQLite itself.

cross_targets="darwin/amd64 darwin/arm64 windows/amd64 windows/arm64 linux/$(go env GOARCH)"
for target in $cross_targets; do
	step "cross-compile $target, CGO_ENABLED=0: go build ./... && go vet ./..."
	GOOS=${target%/*} GOARCH=${target#*/} CGO_ENABLED=0 go build ./...
	GOOS=${target%/*} GOARCH=${target#*/} CGO_ENABLED=0 go vet ./...
done

step "a build without cgo refuses SQLite in one sentence, and imports into PostgreSQL"
cross_dir=$(mktemp -d)
CGO_ENABLED=0 go build -o "$cross_dir/idemport" ./cmd/idemport
cross_code=0
"$cross_dir/idemport" import --into "$cross_dir/x.db" testdata/orders.csv >"$cross_dir/out" 2>"$cross_dir/err" || cross_code=$?
cross_want="idemport: this build has no SQLite: build with cgo and a C compiler"
if [ "$cross_code" -ne 2 ] || [ "$(cat "$cross_dir/err")" != "$cross_want" ] || [ -s "$cross_dir/out" ] || [ -e "$cross_dir/x.db" ]; then
	echo "want exit 2, no output, no database and stderr \"$cross_want\"; got exit $cross_code, stdout:"
	cat "$cross_dir/out"
	echo "stderr:"
	cat "$cross_dir/err"
	exit 1
fi
echo "exit $cross_code: $(cat "$cross_dir/err")"
# ... and still imports into PostgreSQL (pgx is pure Go), in a schema of its own.
cross_schema=idemport_cross_$$
psql "$IDEMPORT_TEST_POSTGRES" -qc "CREATE SCHEMA $cross_schema"
cross_code=0
"$cross_dir/idemport" import --into "$IDEMPORT_TEST_POSTGRES" --state-schema "${cross_schema}_state" \
	--table "$cross_schema.orders" testdata/orders.csv || cross_code=$?
cross_rows=$(psql "$IDEMPORT_TEST_POSTGRES" -Atc "SELECT count(*) FROM $cross_schema.orders" 2>&1 || true)
psql "$IDEMPORT_TEST_POSTGRES" -qc "DROP SCHEMA IF EXISTS $cross_schema CASCADE; DROP SCHEMA IF EXISTS ${cross_schema}_state CASCADE" 2>/dev/null
if [ "$cross_code" -ne 0 ] || [ "$cross_rows" != 200 ]; then
	echo "the build without cgo, importing testdata/orders.csv into PostgreSQL: exit $cross_code, $cross_rows rows (want exit 0, 200 rows)"
	exit 1
fi
rm -rf "$cross_dir"

step "cross-compile windows/amd64 with cgo (mingw-w64): go build ./... && go vet ./..."
cross_cc=x86_64-w64-mingw32-gcc
if ! command -v "$cross_cc" >/dev/null 2>&1; then
	echo "installing gcc-mingw-w64-x86-64 from Debian's packages"
	cross_sudo=
	[ "$(id -u)" -eq 0 ] || cross_sudo=sudo
	$cross_sudo apt-get update -q >/dev/null
	$cross_sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q gcc-mingw-w64-x86-64 >/dev/null
fi
cross_start=$SECONDS
GOOS=windows GOARCH=amd64 CGO_ENABLED=1 CC=$cross_cc go build ./...
GOOS=windows GOARCH=amd64 CGO_ENABLED=1 CC=$cross_cc go vet ./...
echo "took $((SECONDS - cross_start))s"
