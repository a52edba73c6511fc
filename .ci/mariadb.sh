# Sourced by .ci/run: find MariaDB on 127.0.0.1:3306, or start the machine's
# (as it is started at boot: mariadbd from Debian's packages, run as the
# mysql user that its configuration names), or install it; then require the
# MariaDB tests to run against it (mariadb in IDEMPORT_REQUIRE: they fail
# instead of skipping when the server cannot be reached). The tests log in
# as root without a password, as Debian's package lets the system's root
# do, and each creates and drops a database of its own.

mariadb_host=127.0.0.1
mariadb_port=3306
export IDEMPORT_TEST_MARIADB=${IDEMPORT_TEST_MARIADB:-mysql://root@$mariadb_host:$mariadb_port/test}
export IDEMPORT_REQUIRE=${IDEMPORT_REQUIRE:+$IDEMPORT_REQUIRE,}mariadb

mariadb_ready() { (exec 3<>"/dev/tcp/$mariadb_host/$mariadb_port") 2>/dev/null; }

mariadb_start() {
	[ -x /usr/sbin/mariadbd ] || return 1
	install -d -o mysql -g mysql /run/mysqld 2>/dev/null || true
	start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd || return 1
	for _ in $(seq 60); do mariadb_ready && return 0; sleep 0.5; done
	return 1
}

mariadb_install() {
	command -v apt-get >/dev/null 2>&1 || return 1
	echo "installing mariadb-server from Debian's packages"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q mariadb-server >/dev/null || return 1
	mariadb_start
}

if ! mariadb_ready; then
	mariadb_start || mariadb_install || true
fi
if ! mariadb_ready; then
	echo "no MariaDB on $mariadb_host:$mariadb_port, and none could be started or installed" >&2
	exit 1
fi
# A fresh install lets root in through the socket only (unix_socket): let
# it in over TCP from this host too, without a password, and make sure the
# database the test URL names exists.
if ! mariadb -uroot -h"$mariadb_host" -P"$mariadb_port" -e 'SELECT 1' >/dev/null 2>&1; then
	mariadb -uroot -e "CREATE USER IF NOT EXISTS 'root'@'$mariadb_host' IDENTIFIED BY '';
		GRANT ALL PRIVILEGES ON *.* TO 'root'@'$mariadb_host' WITH GRANT OPTION;"
fi
mariadb -uroot -h"$mariadb_host" -P"$mariadb_port" -e 'CREATE DATABASE IF NOT EXISTS test'
