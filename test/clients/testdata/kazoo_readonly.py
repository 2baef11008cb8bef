"""Checks of kazoo's read-only sessions against an ensemble member cut off from its quorum.

Usage: /usr/bin/python3 kazoo_readonly.py HOST:PORT PATH=DATA [PATH=DATA ...]

HOST:PORT is the isolated member, already read-only (isro answers "ro"). Each PATH=DATA
is a znode the ensemble holds with its data; a path's children are expected to be
exactly the listed paths right under it. The script runs these checks in order and
prints one line for each:

    PASS <check> <seconds>s
    FAIL <check>: <what was expected and what happened>

    refused_rw   a client that does not allow read-only sessions gets none
    connect_ro   a read_only=True client connects, state KeeperState.CONNECTED_RO
    reads        every PATH's data and children as listed, read-only
    writes       create, set, delete, a transaction and sync raise NotReadOnlyCallError;
                 the session stays CONNECTED_RO and still reads
    watches      a DataWatch and a ChildrenWatch get their first call

It then prints "AWAIT quorum" and reads a line from stdin: the caller sends one once a
quorum is back and the member takes writes again. The member closes the read-only
connection; the last check is

    rw_after_quorum  kazoo, which has only this host, reconnects: its read-only session
                     is unknown to the ensemble (answered expired), so it loses it and
                     gets a new read-write one (state CONNECTED); a set and a create
                     succeed and the DataWatch and ChildrenWatch, set up again by
                     kazoo, see them. Its PASS line adds the states kazoo went through.

Exit status is 0 only if every check passed. Every wait is bounded (WAIT seconds).
The Go test readonly_test.go runs this script.
"""

import logging
import sys
import time
import traceback

from kazoo.client import KazooClient
from kazoo.exceptions import NotReadOnlyCallError
from kazoo.protocol.states import KazooState, KeeperState

WAIT = 10.0  # seconds any single expected change may take
POLL = 0.01


class CheckFailed(Exception):
    pass


def expect(cond, fmt, *args):
    if not cond:
        raise CheckFailed(fmt % args if args else fmt)


def expect_eq(got, want, what):
    expect(got == want, "%s: got %r, want %r", what, got, want)


def wait_until(cond, what, timeout=WAIT):
    """Poll cond until it is true; fail naming what was awaited (a string, or a
    function that returns one, called only then)."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise CheckFailed("after %.0fs still waiting for %s" % (timeout, what() if callable(what) else what))
        time.sleep(POLL)


def new_client(addr, **kwargs):
    # Short reconnect delays: kazoo's default back-off would make the reconnection
    # after the quorum is back slow, not more correct.
    return KazooClient(hosts=addr, timeout=10.0,
                       connection_retry={"max_tries": -1, "delay": 0.05, "backoff": 1.5,
                                         "max_delay": 0.5},
                       **kwargs)


class State:
    """What the checks share: the tree, the read-only client and what it saw."""

    def __init__(self, addr, tree):
        self.addr = addr
        self.tree = tree  # path -> data (bytes)
        self.client = None
        self.ro_session = None
        self.transitions = []  # KeeperState at each KazooState change, as it happened
        self.signalled = None  # len(transitions) when the quorum was said to be back
        self.data_seen = []  # the DataWatch's calls: data
        self.children_seen = []  # the ChildrenWatch's calls: sorted children
        self.watched_data = None
        self.watched_parent = None

    def children(self, path):
        prefix = "/" if path == "/" else path + "/"
        return sorted(p[len(prefix):] for p in self.tree
                      if p.startswith(prefix) and "/" not in p[len(prefix):])


def check_refused_rw(st):
    c = new_client(st.addr)
    try:
        c.start(timeout=1.0)
    except c.handler.timeout_exception:
        return  # never connected: refused
    finally:
        c.stop()
        c.close()
    raise CheckFailed("a client without read_only=True connected to the read-only member "
                      "(state %s)" % c.client_state)


def check_connect_ro(st):
    c = new_client(st.addr, read_only=True)

    def listener(state):
        # Called on kazoo's connection thread right after the client's KeeperState
        # changed, if its KazooState did (every change here does; a CONNECTING after
        # EXPIRED_SESSION is not reported).
        st.transitions.append(c.client_state)

    c.add_listener(listener)
    st.client = c
    c.start(timeout=WAIT)
    expect_eq(c.client_state, KeeperState.CONNECTED_RO, "client_state")
    expect_eq(c.state, KazooState.CONNECTED, "state")
    st.ro_session = c.client_id[0]
    expect(st.ro_session != 0, "session id 0")


def check_reads(st):
    c = st.client
    for path in sorted(st.tree):
        data, stat = c.get(path)
        expect_eq(data, st.tree[path], "data of %s" % path)
        want = st.children(path)
        expect_eq(sorted(c.get_children(path)), want, "children of %s" % path)
        expect_eq(stat.numChildren, len(want), "numChildren of %s" % path)
        expect(c.exists(path) is not None, "exists(%s) is None", path)
    expect(c.exists("/no/such/node") is None, "exists of a missing node is not None")


def transaction(c, path):
    t = c.transaction()
    t.set_data(path, b"t")
    return t.commit()


def check_writes(st):
    c = st.client
    path = sorted(st.tree)[-1]
    parent = path.rsplit("/", 1)[0] or "/"
    leaf = [p for p in sorted(st.tree) if not st.children(p)][0]
    attempts = [
        ("create", lambda: c.create(parent + "/new", b"x")),
        ("create ephemeral", lambda: c.create(parent + "/eph", b"x", ephemeral=True)),
        ("set", lambda: c.set(path, b"changed")),
        ("delete", lambda: c.delete(leaf)),
        ("transaction", lambda: transaction(c, path)),
        ("sync", lambda: c.sync(path)),
    ]
    for what, call in attempts:
        try:
            result = call()
        except NotReadOnlyCallError:
            continue
        except Exception as e:
            raise CheckFailed("%s raised %s: %s, want NotReadOnlyCallError" % (what, type(e).__name__, e))
        raise CheckFailed("%s returned %r, want NotReadOnlyCallError" % (what, result))
    expect_eq(c.client_state, KeeperState.CONNECTED_RO, "client_state after the refused writes")
    data, _ = c.get(path)
    expect_eq(data, st.tree[path], "data of %s after the refused writes" % path)


def check_watches(st):
    c = st.client
    st.watched_data = [p for p in sorted(st.tree) if not st.children(p)][0]
    st.watched_parent = [p for p in sorted(st.tree) if st.children(p)][0]

    def on_data(data, stat):
        st.data_seen.append(data)

    def on_children(children):
        st.children_seen.append(sorted(children))

    c.DataWatch(st.watched_data, on_data)
    c.ChildrenWatch(st.watched_parent, on_children)
    wait_until(lambda: st.data_seen and st.children_seen, "the watches' first calls")
    expect_eq(st.data_seen, [st.tree[st.watched_data]], "DataWatch calls")
    expect_eq(st.children_seen, [st.children(st.watched_parent)], "ChildrenWatch calls")


def check_rw_after_quorum(st):
    c = st.client
    # The listener notes the state after the client's state changed: wait for its note.
    wait_until(lambda: st.transitions[-1:] == [KeeperState.CONNECTED],
               lambda: "state CONNECTED (states so far: %r)" % st.transitions)
    expect(c.client_id[0] != st.ro_session,
           "reconnected with the read-only session 0x%x, which the ensemble cannot know" % st.ro_session)
    states = list(st.transitions)
    before, after = states[:st.signalled], states[st.signalled:]
    what = "KeeperStates %r before the quorum was back, %r after" % (before, after)
    # The member closes the read-only connection once it knows a leader again (an
    # election that finds none leaves it open); kazoo, which has only this host, tries
    # to resume its read-only session there once the member serves, which is answered
    # expired, and starts a new session.
    expect_eq(states.count(KeeperState.CONNECTED_RO), 1, "CONNECTED_RO states (%s)" % what)
    last_ro = states.index(KeeperState.CONNECTED_RO)
    expect_eq(states[last_ro + 1:], [KeeperState.CONNECTING, KeeperState.EXPIRED_SESSION,
                                     KeeperState.CONNECTED],
              "KeeperStates after CONNECTED_RO (%s)" % what)
    c.set(st.watched_data, b"after")
    c.create(st.watched_parent + "/added", b"")
    wait_until(lambda: st.data_seen[-1:] == [b"after"],
               lambda: "the DataWatch to see the set (calls so far: %r)" % st.data_seen)
    want = sorted(st.children(st.watched_parent) + ["added"])
    wait_until(lambda: st.children_seen[-1:] == [want],
               lambda: "the ChildrenWatch to see the create (calls so far: %r)" % st.children_seen)
    expect_eq(st.transitions[len(states):], [], "KeeperStates after the writes (%s)" % what)
    return what


def run(name, fn, st):
    start = time.monotonic()
    try:
        note = fn(st)
        print("PASS %s %.2fs%s" % (name, time.monotonic() - start, "; " + note if note else ""), flush=True)
        return True
    except CheckFailed as e:
        msg = str(e)
    except Exception:
        msg = "unexpected exception: " + traceback.format_exc().strip().replace("\n", " | ")
    print("FAIL %s: %s" % (name, msg), flush=True)
    return False


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    tree = {}
    for arg in argv[2:]:
        path, _, data = arg.partition("=")
        tree[path] = data.encode()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    st = State(argv[1], tree)
    ok = True
    try:
        for name, fn in [("refused_rw", check_refused_rw), ("connect_ro", check_connect_ro),
                         ("reads", check_reads), ("writes", check_writes),
                         ("watches", check_watches)]:
            ok = run(name, fn, st) and ok
        print("AWAIT quorum", flush=True)
        line = sys.stdin.readline()
        st.signalled = len(st.transitions)
        if line.strip() != "quorum":
            print("FAIL rw_after_quorum: stdin closed before the quorum was back", flush=True)
            return 1
        ok = run("rw_after_quorum", check_rw_after_quorum, st) and ok
    finally:
        if st.client is not None:
            st.client.stop()
            st.client.close()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
