# Sourced by .ci/run: find a NATS server with JetStream on 127.0.0.1:4222,
# or start the machine's (as it is started at boot: nats-server from
# Debian's packages, JetStream on, state in /var/lib/nats-server), or
# install it; then require the NATS tests to run (nats in IDEMPORT_REQUIRE:
# they fail instead of skipping when the server cannot be reached).

nats_host=127.0.0.1
nats_port=4222
export IDEMPORT_REQUIRE=${IDEMPORT_REQUIRE:+$IDEMPORT_REQUIRE,}nats

nats_ready() { (exec 3<>"/dev/tcp/$nats_host/$nats_port") 2>/dev/null; }

nats_start() {
	local bin
	bin=$(command -v nats-server || echo /usr/sbin/nats-server)
	[ -x "$bin" ] || return 1
	mkdir -p /var/lib/nats-server
	# A pid file of its own: a server on another port must not count.
	start-stop-daemon --start --oknodo --background --make-pidfile --pidfile "/run/nats-server-$nats_port.pid" --exec "$bin" -- \
		-a "$nats_host" -p "$nats_port" -js -sd /var/lib/nats-server -l /var/log/nats-server.log || return 1
	for _ in $(seq 40); do nats_ready && return 0; sleep 0.25; done
	return 1
}

nats_install() {
	command -v apt-get >/dev/null 2>&1 || return 1
	echo "installing nats-server from Debian's packages"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q nats-server >/dev/null || return 1
	nats_start
}

if ! nats_ready; then
	nats_start || nats_install || true
fi
if ! nats_ready; then
	echo "no NATS server on $nats_host:$nats_port, and none could be started or installed" >&2
	exit 1
fi
