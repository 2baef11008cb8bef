"""kazoo against a server with SASL DIGEST-MD5 users (driven by sasl_test.go).

Usage: kazoo_sasl.py ADDR CHECK [USER PASSWORD]. Prints one line, "OK ..." or
"REFUSED <exception class> <message>", and exits 0; anything else is a failure of the script.
Checks:
  acl       log in as USER, create /kazoo-sasl readable only by sasl:USER, read it back,
            and print its ACL
  read      log in (sasl_options when USER is given, none when not) and read /kazoo-sasl
"""
import logging
import os
import sys

from kazoo.client import KazooClient
from kazoo.exceptions import AuthFailedError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KeeperState
from kazoo.security import make_acl

logging.basicConfig(level=logging.WARNING, stream=sys.stderr)


def client(addr, user, password):
    opts = None
    if user:
        opts = {"mechanism": "DIGEST-MD5", "username": user, "password": password}
    # One try: a refused login must not be retried for ever.
    return KazooClient(hosts=addr, sasl_options=opts, timeout=5,
                       connection_retry={"max_tries": 0}, command_retry={"max_tries": 0})


# The client's KeeperStates, as each change of its KazooState happened: kazoo is
# AUTH_FAILED only for a moment, between the refused login and its connection loop's
# end (CLOSED).
seen = []


def refused():
    return KeeperState.AUTH_FAILED in seen


def start(zk):
    """zk.start, except that a login refused while start was returning is reported as
    such: kazoo sets up the session, then logs in, and its start says "Connection
    time-out" when the refusal lands before it looks whether it is connected."""
    zk.add_listener(lambda _: seen.append(zk.client_state))
    zk.start_async().wait(timeout=10)
    if refused():
        raise AuthFailedError("the server refused the SASL login")
    if not zk.connected:
        raise KazooTimeoutError("Connection time-out")


def main():
    addr, check = sys.argv[1], sys.argv[2]
    user = sys.argv[3] if len(sys.argv) > 3 else None
    password = sys.argv[4] if len(sys.argv) > 4 else None
    zk = client(addr, user, password)
    try:
        start(zk)
        if check == "acl":
            acl = [make_acl("sasl", user, all=True)]
            zk.create("/kazoo-sasl", b"secret", acl=acl)
            data, _ = zk.get("/kazoo-sasl")
            got = zk.get_acls("/kazoo-sasl")[0]
            print("OK %s %s" % (data.decode(), ",".join("%s:%s:%d" % (a.id.scheme, a.id.id, a.perms) for a in got)))
        elif check == "read":
            # Async with a deadline: kazoo 2.8 does not know SessionClosedRequireSaslAuth
            # (-124), which enforce.auth answers; its connection thread dies on it
            # ("Invalid error code"), with ZooKeeper too, and the call never returns.
            data, _ = zk.get_async("/kazoo-sasl").get(timeout=5)
            print("OK %s" % data.decode())
        else:
            raise SystemExit("unknown check " + check)
    except Exception as e:  # the Go test decides whether a refusal was wanted
        if refused() and not isinstance(e, AuthFailedError):
            # The refusal came while a request was on its way (kazoo connects, then
            # logs in): the request fails with whatever the closed client says.
            e = AuthFailedError("the server refused the SASL login (%s: %s)" % (type(e).__name__, e))
        print("REFUSED %s %s" % (type(e).__name__, e))
    sys.stdout.flush()
    # Not zk.stop(): after a refusal kazoo's threads may be dead or retrying.
    os._exit(0)


if __name__ == "__main__":
    main()
