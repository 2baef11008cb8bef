"""kazoo over TLS against a secure client port, with client certificates (x509).

Usage: kazoo_tls.py HOST:PORT CA ALICE_CERT ALICE_KEY BOB_CERT BOB_KEY
Prints "PASS name" or "FAIL name: message" for each check.
"""
import sys
import traceback

from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import ACL, Id, Permissions

hosts, ca, alice_cert, alice_key, bob_cert, bob_key = sys.argv[1:7]


def client(cert=None, key=None):
    return KazooClient(hosts=hosts, use_ssl=True, ca=ca, certfile=cert, keyfile=key,
                       timeout=10, connection_retry={"max_tries": 0})


def check(name, fn):
    try:
        fn()
        print("PASS", name, flush=True)
    except Exception as e:  # report every failure as a line, go on with the others
        traceback.print_exc()
        print("FAIL %s: %r" % (name, e), flush=True)


def x509_acl():
    alice = client(alice_cert, alice_key)
    alice.start(timeout=10)
    try:
        acl = [ACL(Permissions.ALL, Id("x509", "CN=kazoo-alice"))]
        alice.create("/kazoo-tls", b"alice's", acl=acl)
        data, _ = alice.get("/kazoo-tls")
        assert data == b"alice's", data
        got, _ = alice.get_acls("/kazoo-tls")
        assert [(a.id.scheme, a.id.id, a.perms) for a in got] == [("x509", "CN=kazoo-alice", 31)], got
    finally:
        alice.stop()
    bob = client(bob_cert, bob_key)
    bob.start(timeout=10)
    try:
        try:
            bob.get("/kazoo-tls")
        except NoAuthError:
            pass
        else:
            raise AssertionError("bob read alice's node")
    finally:
        bob.stop()


def no_certificate_refused():
    anon = client()
    try:
        anon.start(timeout=3)
    except Exception:
        return  # no session: the server needs a certificate
    finally:
        anon.stop()
    raise AssertionError("a client without a certificate got a session")


check("x509_acl", x509_acl)
check("no_certificate_refused", no_certificate_refused)
