"""Acceptance checks of the kazoo client and its recipes against one server.

Usage: /usr/bin/python3 kazoo_recipes.py HOST:PORT CHECK [CHECK ...]

Runs each named check in order, each under its own /kazoo/<check> subtree with fresh
clients, and prints one line per check:

    PASS <check> <seconds>s
    FAIL <check>: <what was expected and what happened>

Exit status is 0 only if every named check passed. Every wait is bounded (WAIT seconds),
so a server that never answers or never fires a watch fails a check instead of hanging.
The Go test kazoo_test.go runs this script; the names it passes are the CHECKS below.
"""

import logging
import sys
import threading
import time
import traceback

from kazoo.client import KazooClient
from kazoo.exceptions import (BadVersionError, NoNodeError, RolledBackError,
                              RuntimeInconsistency)
from kazoo.protocol.states import EventType
from kazoo.recipe.cache import TreeCache, TreeEvent

WAIT = 10.0  # seconds any single expected event may take
POLL = 0.01

ADDR = None  # set from argv


class CheckFailed(Exception):
    pass


def expect(cond, fmt, *args):
    if not cond:
        raise CheckFailed(fmt % args if args else fmt)


def expect_eq(got, want, what):
    expect(got == want, "%s: got %r, want %r", what, got, want)


def wait_until(cond, what, timeout=WAIT):
    """Poll cond until it is true; fail naming what was awaited."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise CheckFailed("after %.0fs still waiting for %s" % (timeout, what))
        time.sleep(POLL)


def wait_event(ev, what, timeout=WAIT):
    expect(ev.wait(timeout), "after %.0fs still waiting for %s", timeout, what)


class Clients:
    """Starts kazoo clients for one check and stops those still running at its end."""

    def __init__(self):
        self.started = []

    def new(self, **kwargs):
        # Short retry delays: the counter check retries BadVersion in a tight race and
        # kazoo's default back-off (0.1 s doubling) would make it slow, not more correct.
        kwargs.setdefault("command_retry",
                          {"max_tries": -1, "delay": 0.005, "backoff": 1.5, "max_delay": 0.05})
        c = KazooClient(hosts=ADDR, timeout=10.0, **kwargs)
        c.start(timeout=WAIT)
        self.started.append(c)
        return c

    def stop_all(self):
        for c in self.started:
            try:
                c.stop()
                c.close()
            except Exception:
                pass


class Thread(threading.Thread):
    """A daemon thread that keeps the exception its target raised."""

    def __init__(self, target):
        super().__init__(daemon=True)
        self._target_fn = target
        self.error = None
        self.result = None

    def run(self):
        try:
            self.result = self._target_fn()
        except BaseException as e:  # reported by join_ok
            self.error = "%s: %s" % (type(e).__name__, e)

    def join_ok(self, what):
        self.join(WAIT)
        expect(not self.is_alive(), "%s did not finish within %.0fs", what, WAIT)
        expect(self.error is None, "%s raised %s", what, self.error)
        return self.result


def on_watched_read(client, method, path, pred):
    """Returns an event set once client.<method>(path, watch=...) returned a result for
    which pred holds. The server registers a watch before it replies, so once the event
    is set the watch is in place: a recipe blocked on it can no longer miss a change."""
    seen = threading.Event()
    orig = getattr(client, method)

    def spy(p, *args, **kwargs):
        result = orig(p, *args, **kwargs)
        watch = kwargs.get("watch", args[0] if args else None)
        if p == path and watch is not None and pred(result):
            seen.set()
        return result

    setattr(client, method, spy)
    return seen


# --- checks -------------------------------------------------------------------------------
# Each takes (clients, root) where root is a fresh path prefix for the check.


def check_lock(clients, root):
    a, b = clients.new(), clients.new()
    path = root + "/lock"
    order = []
    lock_a = a.Lock(path, "client-a")
    lock_b = b.Lock(path, "client-b")
    expect(lock_a.acquire(timeout=WAIT), "client a could not take the free lock")
    order.append("a acquired")

    def take_b():
        ok = lock_b.acquire(timeout=WAIT)
        order.append("b acquired" if ok else "b timed out")
        return ok

    tb = Thread(take_b)
    tb.start()
    # b is queued once its contender node exists: then it must be blocked, not holding.
    wait_until(lambda: len(lock_a.contenders()) == 2, "client b to queue behind client a")
    expect_eq(lock_a.contenders(), ["client-a", "client-b"], "contenders while a holds the lock")
    expect_eq(order, ["a acquired"], "events while a holds the lock")
    expect(not lock_b.is_acquired, "client b holds the lock while client a does")
    order.append("a released")
    lock_a.release()
    expect(tb.join_ok("client b's acquire") is True, "client b never acquired the released lock")
    expect_eq(order, ["a acquired", "a released", "b acquired"], "lock hand-over order")
    expect_eq(lock_b.contenders(), ["client-b"], "contenders after the hand-over")
    lock_b.release()
    expect_eq(b.get_children(path), [], "lock nodes left after both released")


def check_election(clients, root):
    path = root + "/election"
    cands = {"cand-1": clients.new(), "cand-2": clients.new()}
    leaders = []
    elected = {name: threading.Event() for name in cands}
    resign = {name: threading.Event() for name in cands}
    elections = {name: c.Election(path, name) for name, c in cands.items()}

    def campaign(name):
        def lead():
            leaders.append(name)
            elected[name].set()
            resign[name].wait(3 * WAIT)  # lead until told to stop
        return lambda: elections[name].run(lead)

    threads = {name: Thread(campaign(name)) for name in cands}
    for name in cands:
        threads[name].start()
    wait_until(lambda: len(leaders) >= 1, "a leader to be elected")
    winner = leaders[0]
    loser = [n for n in cands if n != winner][0]
    wait_until(lambda: len(elections[winner].contenders()) == 2, "both candidates to be contending")
    expect_eq(elections[loser].contenders(), [winner, loser], "contenders in order")
    expect_eq(leaders, [winner], "leaders while the winner leads")
    # The winner's client stops: its session ends, its ephemeral contender node goes, and
    # the loser must take over.
    cands[winner].stop()
    wait_event(elected[loser], "%s to take over after %s's client stopped" % (loser, winner))
    expect_eq(leaders, [winner, loser], "leadership order")
    expect_eq(elections[loser].contenders(), [loser], "contenders after the winner left")
    resign[winner].set()
    resign[loser].set()
    threads[loser].join_ok("the new leader's election.run")
    threads[winner].join(WAIT)  # its release fails on a stopped client; that is expected


def check_counter(clients, root):
    path = root + "/counter"
    per_client = 30
    counters = [clients.new().Counter(path), clients.new().Counter(path)]
    start = threading.Barrier(len(counters))

    def add(counter):
        def run():
            start.wait(WAIT)
            seen = []
            ctr = counter
            for _ in range(per_client):
                ctr += 1
                seen.append((ctr.pre_value, ctr.post_value))
            return seen
        return run

    threads = [Thread(add(c)) for c in counters]
    for t in threads:
        t.start()
    steps = []
    for i, t in enumerate(threads):
        steps.extend(t.join_ok("client %d's increments" % i))
    total = per_client * len(counters)
    expect_eq(counters[0].value, total, "counter value after concurrent increments")
    expect_eq(counters[1].value, total, "counter value seen by the other client")
    # Every increment moved the counter from a distinct value to the next one.
    expect_eq(sorted(steps), [(v, v + 1) for v in range(total)], "pre/post values of all increments")
    data, stat = clients.new().get(path)
    expect_eq((data, stat.version), (str(total).encode(), total), "counter znode (data, version)")


def check_barrier(clients, root):
    path = root + "/barrier"
    a, b = clients.new(), clients.new()
    barrier_a, barrier_b = a.Barrier(path), b.Barrier(path)
    barrier_a.create()
    watching = on_watched_read(b, "exists", path, lambda stat: stat is not None)
    waiter = Thread(lambda: barrier_b.wait(timeout=3 * WAIT))
    waiter.start()
    wait_event(watching, "client b's barrier wait to set its exists watch")
    expect(waiter.is_alive(), "barrier wait returned (%r) while the barrier exists", waiter.result)
    expect(barrier_a.remove() is True, "removing the barrier reported it absent")
    expect(waiter.join_ok("barrier wait") is True, "barrier wait did not report the barrier cleared")
    expect(barrier_b.wait(timeout=0) is True, "wait on an absent barrier did not return at once")
    expect(barrier_a.remove() is False, "removing an absent barrier reported it present")


def check_locking_queue(clients, root):
    path = root + "/queue"
    a, b = clients.new(), clients.new()
    qa, qb = a.LockingQueue(path), b.LockingQueue(path)
    qa.put(b"low", priority=200)
    qa.put(b"high", priority=10)
    qa.put(b"mid", priority=100)
    qa.put_all([b"mid-2", b"mid-3"], priority=100)
    expect_eq(len(qa), 5, "queue length after put and put_all")
    expect_eq(qa.get(WAIT), b"high", "first get (priority 10)")
    expect(qa.holds_lock(), "client a does not hold the lock on its entry")
    # client a's entry is taken, so client b gets the next one.
    expect_eq(qb.get(WAIT), b"mid", "get by another client while the first entry is taken")
    expect(qa.consume(), "consume of the entry client a holds")
    expect(qb.release(), "release of the entry client b holds")
    expect_eq(len(qa), 4, "queue length after one consume and one release")
    got = []
    for _ in range(4):
        got.append(qa.get(WAIT))
        expect(qa.consume(), "consume of %r" % got[-1])
    expect_eq(got, [b"mid", b"mid-2", b"mid-3", b"low"], "priority then FIFO order")
    expect_eq(len(qa), 0, "queue length after consuming everything")
    expect(qa.get(0.2) is None, "get on an empty queue returned an entry")
    # A blocked consumer gets an entry put later by another client.
    watching = on_watched_read(b, "get_children", path + "/entries", lambda children: children == [])
    waiter = Thread(lambda: qb.get(3 * WAIT))
    waiter.start()
    wait_event(watching, "client b's get to find the queue empty and watch it")
    qa.put(b"late")
    expect_eq(waiter.join_ok("blocked get"), b"late", "blocked get after a later put")
    expect(qb.consume(), "consume of the late entry")
    expect_eq(a.get_children(path + "/taken"), [], "lock nodes left after consuming everything")


def check_data_watch(clients, root):
    path = root + "/watched"
    watcher, writer = clients.new(), clients.new()
    writer.ensure_path(root)
    seen = []

    def on_change(data, stat, event):
        seen.append((data, stat.version if stat else None, event.type if event else None))

    watcher.DataWatch(path, on_change)

    def step(n, action, what):
        action()
        wait_until(lambda: len(seen) >= n, "DataWatch call %d (%s)" % (n, what))

    wait_until(lambda: len(seen) >= 1, "the initial DataWatch call")
    step(2, lambda: writer.create(path, b"v1"), "create")
    step(3, lambda: writer.set(path, b"v2"), "set")
    step(4, lambda: writer.set(path, b"v3", version=1), "second set")
    step(5, lambda: writer.delete(path), "delete")
    step(6, lambda: writer.create(path, b"again"), "re-create")
    expect_eq(seen, [
        (None, None, None),
        (b"v1", 0, EventType.CREATED),
        (b"v2", 1, EventType.CHANGED),
        (b"v3", 2, EventType.CHANGED),
        (None, None, EventType.DELETED),
        (b"again", 0, EventType.CREATED),
    ], "DataWatch calls (data, version, event)")


def check_children_watch(clients, root):
    path = root + "/parent"
    watcher, writer = clients.new(), clients.new()
    writer.ensure_path(path)
    seen = []

    def on_children(children, event):
        seen.append((sorted(children), event.type if event else None))

    watcher.ChildrenWatch(path, on_children, send_event=True)

    def step(n, action, what):
        action()
        wait_until(lambda: len(seen) >= n, "ChildrenWatch call %d (%s)" % (n, what))

    wait_until(lambda: len(seen) >= 1, "the initial ChildrenWatch call")
    step(2, lambda: writer.create(path + "/a"), "add a")
    step(3, lambda: writer.create(path + "/b", ephemeral=True), "add ephemeral b")
    step(4, lambda: writer.delete(path + "/a"), "remove a")
    step(5, lambda: writer.create(path + "/c-", sequence=True), "add sequential c")
    step(6, lambda: writer.stop(), "writer stops, its ephemeral b goes")
    expect_eq(seen, [
        ([], None),
        (["a"], EventType.CHILD),
        (["a", "b"], EventType.CHILD),
        (["b"], EventType.CHILD),
        (["b", "c-0000000002"], EventType.CHILD),
        (["c-0000000002"], EventType.CHILD),
    ], "ChildrenWatch calls (children, event)")
    # Setting a child's data is not a children change.
    watcher.set(path + "/c-0000000002", b"x")
    watcher.create(path + "/d")
    wait_until(lambda: len(seen) >= 7, "ChildrenWatch call for add d")
    expect_eq(seen[6:], [(["c-0000000002", "d"], EventType.CHILD)], "calls after a child's set and add d")


def check_tree_cache(clients, root):
    top = root + "/tree"
    writer, reader = clients.new(), clients.new()
    writer.create(top + "/a/x", b"ax", makepath=True)
    writer.set(top + "/a", b"a1")
    writer.create(top + "/b", b"b1")
    events = []
    lock = threading.Lock()

    def on_event(ev):
        with lock:
            path = ev.event_data.path if ev.event_data is not None else None
            data = ev.event_data.data if ev.event_data is not None else None
            events.append((ev.event_type, path, data))

    cache = TreeCache(reader, top)
    cache.listen(on_event)
    cache.start()
    try:
        wait_until(lambda: any(e[0] == TreeEvent.INITIALIZED for e in events), "the TreeCache to initialize")
        with lock:
            init = events[:]
            del events[:]
        expect_eq(init[-1][0], TreeEvent.INITIALIZED, "last event of the initial build")
        expect_eq(sorted(init[:-1]), sorted([
            (TreeEvent.NODE_ADDED, top, b""),
            (TreeEvent.NODE_ADDED, top + "/a", b"a1"),
            (TreeEvent.NODE_ADDED, top + "/a/x", b"ax"),
            (TreeEvent.NODE_ADDED, top + "/b", b"b1"),
        ]), "initial build events")
        expect_eq(sorted(cache.get_children(top)), ["a", "b"], "cached children of the root")
        expect_eq(cache.get_data(top + "/a/x").data, b"ax", "cached data of a/x")

        def step(n, action, what):
            action()
            wait_until(lambda: len(events) >= n, "TreeCache event %d (%s)" % (n, what))

        step(1, lambda: writer.create(top + "/c", b"c1"), "add c")
        step(2, lambda: writer.set(top + "/a", b"a2"), "update a")
        step(3, lambda: writer.create(top + "/a/y/deep", b"d", makepath=True), "add a/y/deep")
        # makepath creates a/y and then a/y/deep: two additions.
        wait_until(lambda: len(events) >= 4, "TreeCache event 4 (add a/y/deep)")
        step(5, lambda: writer.delete(top + "/a/x"), "remove a/x")
        step(6, lambda: writer.delete(top + "/b"), "remove b")
        with lock:
            got = events[:]
        expect_eq(got, [
            (TreeEvent.NODE_ADDED, top + "/c", b"c1"),
            (TreeEvent.NODE_UPDATED, top + "/a", b"a2"),
            (TreeEvent.NODE_ADDED, top + "/a/y", b""),
            (TreeEvent.NODE_ADDED, top + "/a/y/deep", b"d"),
            (TreeEvent.NODE_REMOVED, top + "/a/x", b"ax"),
            (TreeEvent.NODE_REMOVED, top + "/b", b"b1"),
        ], "TreeCache events after the initial build")
        expect_eq(sorted(cache.get_children(top)), ["a", "c"], "cached children of the root at the end")
        expect_eq(sorted(cache.get_children(top + "/a")), ["y"], "cached children of a at the end")
        expect_eq(cache.get_data(top + "/a").data, b"a2", "cached data of a at the end")
    finally:
        cache.close()


def check_transaction(clients, root):
    c = clients.new()
    base = root + "/tx"
    c.create(base, b"d0", makepath=True)
    c.create(base + "/keep", b"k")
    c.create(base + "/old", b"o")

    t = c.transaction()
    t.create(base + "/new", b"n")
    t.set_data(base, b"d1", version=0)
    t.check(base + "/keep", 0)
    t.delete(base + "/old")
    res = t.commit()
    expect_eq(len(res), 4, "result count of the committing transaction (%r)" % (res,))
    expect_eq(res[0], base + "/new", "create result")
    expect(hasattr(res[1], "version"), "set_data result is not a stat: %r", res[1])
    expect_eq(res[1].version, 1, "set_data result version")
    expect_eq(res[1].dataLength, 2, "set_data result dataLength")
    expect_eq(res[2:], [True, True], "check and delete results")
    expect_eq(c.get(base + "/new")[0], b"n", "created node's data")
    expect_eq(c.get(base)[0], b"d1", "set node's data")
    expect(c.exists(base + "/old") is None, "deleted node still exists")
    expect_eq(sorted(c.get_children(base)), ["keep", "new"], "children after commit")
    # All ops of a transaction share one zxid.
    new_stat, set_stat = c.exists(base + "/new"), c.exists(base)
    expect_eq(new_stat.czxid, set_stat.mzxid, "zxid of the create vs zxid of the set_data in one transaction")

    before = {p: c.get(p) for p in (base, base + "/keep", base + "/new")}
    t = c.transaction()
    t.create(base + "/never")
    t.set_data(base, b"never", version=1)
    t.check(base + "/keep", 7)  # wrong version: fails the transaction
    t.delete(base + "/new")
    res = t.commit()
    expect_eq([type(r) for r in res],
              [RolledBackError, RolledBackError, BadVersionError, RuntimeInconsistency],
              "per-op results of the failing transaction (%r)" % (res,))
    expect(c.exists(base + "/never") is None, "failed transaction's create was applied")
    after = {p: c.get(p) for p in (base, base + "/keep", base + "/new")}
    expect_eq(after, before, "nodes after the failed transaction")

    t = c.transaction()
    t.delete(base + "/missing")
    t.create(base + "/never")
    res = t.commit()
    expect_eq([type(r) for r in res], [NoNodeError, RuntimeInconsistency],
              "per-op results when the first op fails (%r)" % (res,))
    expect(c.exists(base + "/never") is None, "create after a failed delete was applied")


def check_server_version(clients, root):
    c = clients.new()
    envi = c.command(b"envi")
    expect("zookeeper.version=" in envi, "envi has no zookeeper.version line: %r", envi[:300])
    v = c.server_version()
    expect(isinstance(v, tuple) and len(v) == 3 and v[:2] == (3, 8),
           "server_version() = %r, want (3, 8, x)", v)
    expect_eq(c.command(b"ruok"), "imok", "ruok")


def check_ephemeral(clients, root):
    owner, observer = clients.new(), clients.new()
    owner.ensure_path(root)
    node = owner.create(root + "/eph", b"mine", ephemeral=True)
    seq = owner.create(root + "/eph-seq-", ephemeral=True, sequence=True)
    expect_eq(seq, root + "/eph-seq-0000000001", "ephemeral sequential name")
    stat = observer.exists(node)
    expect(stat is not None, "observer cannot see the ephemeral node")
    expect_eq(stat.ephemeralOwner, owner.client_id[0], "ephemeralOwner of the node")
    persistent = observer.exists(root)
    expect_eq(persistent.ephemeralOwner, 0, "ephemeralOwner of a persistent node")
    try:
        owner.create(node + "/child")
        raise CheckFailed("a child of an ephemeral node was created")
    except CheckFailed:
        raise
    except Exception as e:
        expect_eq(type(e).__name__, "NoChildrenForEphemeralsError", "error creating a child of an ephemeral")
    gone = threading.Event()
    kinds = []

    def on_event(event):
        kinds.append(event.type)
        gone.set()

    observer.exists(node, watch=on_event)
    owner.stop()
    wait_event(gone, "the observer's watch to fire when the owner's client stopped")
    expect_eq(kinds, [EventType.DELETED], "watch events on the ephemeral node")
    expect(observer.exists(node) is None, "ephemeral node survived its client's stop")
    expect(observer.exists(seq) is None, "ephemeral sequential node survived its client's stop")
    expect_eq(observer.get_children(root), [], "children left after the owner's client stopped")


def check_sequence(clients, root):
    c = clients.new()
    parent = root + "/seq"
    c.ensure_path(parent)
    names = [c.create(parent + "/n-", b"", sequence=True) for _ in range(3)]
    expect_eq(names, [parent + "/n-%010d" % i for i in range(3)], "first three sequential names")
    c.create(parent + "/plain")  # non-sequential creates advance the counter too
    c.delete(names[2])
    nxt = c.create(parent + "/m-", sequence=True)
    expect_eq(nxt, parent + "/m-0000000004", "sequential name after a plain create and a delete")
    tx = c.transaction()
    tx.create(parent + "/t-", sequence=True)
    tx.create(parent + "/t-", sequence=True)
    expect_eq(tx.commit(), [parent + "/t-0000000005", parent + "/t-0000000006"],
              "sequential names created in one transaction")
    stat = c.exists(parent)
    # cversion counts child creates and deletes: 7 creates + 1 delete.
    expect_eq((stat.numChildren, stat.cversion), (6, 8), "parent (numChildren, cversion)")


CHECKS = {
    "lock": check_lock,
    "election": check_election,
    "counter": check_counter,
    "barrier": check_barrier,
    "locking_queue": check_locking_queue,
    "data_watch": check_data_watch,
    "children_watch": check_children_watch,
    "tree_cache": check_tree_cache,
    "transaction": check_transaction,
    "server_version": check_server_version,
    "ephemeral": check_ephemeral,
    "sequence": check_sequence,
}


def run(name):
    fn = CHECKS.get(name)
    if fn is None:
        return "unknown check (known: %s)" % " ".join(CHECKS)
    clients = Clients()
    try:
        fn(clients, "/kazoo/" + name)
        return None
    except CheckFailed as e:
        return str(e)
    except Exception:
        return "unexpected exception: " + traceback.format_exc().strip().replace("\n", " | ")
    finally:
        clients.stop_all()


def main(argv):
    global ADDR
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    ADDR = argv[1]
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    failed = 0
    for name in argv[2:]:
        start = time.monotonic()
        err = run(name)
        if err is None:
            print("PASS %s %.2fs" % (name, time.monotonic() - start), flush=True)
        else:
            failed += 1
            print("FAIL %s: %s" % (name, err), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
