#!/usr/bin/env bash
# Installs the Debian packages the tests need, if any is missing:
#   zookeeper     Apache ZooKeeper 3.8: the reference server of the conformance suite, and zkCli.sh
#   python3-kazoo the Python client, for the kazoo recipe tests (runs under /usr/bin/python3)
#   python3-pure-sasl puresasl, which kazoo's sasl_options need (the SASL DIGEST-MD5 tests)
#   mariadb-server MariaDB (mariadbd, mariadb-install-db): source and target of the replicator tests
#   chromium      headless Chromium (/usr/bin/chromium): the console's browser tests in test/browser
set -euo pipefail

packages=(zookeeper python3-kazoo python3-pure-sasl mariadb-server chromium)

missing=()
for p in "${packages[@]}"; do
	dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || { echo "deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
	sudo="sudo"
fi
echo "deps: installing ${missing[*]}"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
