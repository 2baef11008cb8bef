// Package admin answers ZooKeeper's four-letter words and the admin HTTP endpoints
// (AdminServer-style JSON commands and Prometheus /metrics) for the coordination server.
//
// It does no networking of its own. The server implements Source, creates an Admin with New,
// and then:
//
//   - on each new client connection, reads the first four bytes; if IsFourLetterWord says they
//     are a word, calls Serve(conn, word) and closes the connection; otherwise the bytes are
//     the first frame's length, as usual;
//   - serves Handler on the admin port;
//   - calls ObserveRequest for every answered request and ObserveFsync for every log fsync.
//
// A four-letter word is the only thing the client sends: four ASCII bytes, no length prefix,
// no newline. The server answers in plain text and closes. The answers, byte for byte as
// ZooKeeper 3.8 writes them (⇥ is a tab; every line ends in \n unless shown with ∎):
//
//	ruok  imok∎
//	isro  rw∎   (or ro∎ in read-only mode)
//	srvr  Zookeeper version: 3.8.4-paddock, built on 11/21/2026 08:36 GMT
//	      Latency min/avg/max: 0/3.375/14          ms; avg is a Java double, ≤4 decimals
//	      Received: 18
//	      Sent: 17
//	      Connections: 3
//	      Outstanding: 0
//	      Zxid: 0x7
//	      Mode: standalone
//	      Node count: 10
//	stat  as srvr, with after the version line:
//	      Clients:
//	       /127.0.0.1:53622[1](queued=0,recved=5,sent=5)
//	      (blank line)
//	cons   /127.0.0.1:53618[1](queued=0,recved=11,sent=11,sid=0x10000038eec0000,lop=PING,
//	      est=1795250282133,to=10000,lcxid=0x9,lzxid=0x7,lresp=1795250525897,llat=1,minlat=0,avglat=4,maxlat=14)
//	      (one line per connection, no line break inside; sid.. only with a session,
//	      lcxid only once a request with a non-negative xid was answered; then a blank line)
//	conf  clientPort=2181 / secureClientPort=-1 / dataDir=… / dataDirSize=N / dataLogDir=… /
//	      dataLogSize=N / tickTime=2000 / maxClientCnxns=60 / minSessionTimeout=4000 /
//	      maxSessionTimeout=40000 / clientPortListenBacklog=-1 / serverId=1   (one per line)
//	dirs  datadir_size: N
//	      logdir_size: N
//	envi  Environment:
//	      zookeeper.version=3.8.4-paddock, built on …   then host.name … os.memory.total=NMB
//	mntr  zk_version⇥3.8.4-paddock, built on …
//	      zk_server_state⇥standalone
//	      zk_avg_latency⇥3.375   … one zk_<key>⇥<value> line per gauge
//	wchs  2 connections watching 3 paths
//	      Total watches:4
//	wchc  0x10000038eec0001          wchp  /app/a
//	      ⇥/app                            ⇥0x10000038eec0000
//	      ⇥/app/a                          ⇥0x10000038eec0001
//	      (blank line)                     (blank line)
//	dump  SessionTracker dump:
//	      Session Sets (2)/(2):
//	      1 expire at Sat Nov 21 08:38:15 UTC 2026:
//	      ⇥0x10000038eec0000
//	      …
//	      ephemeral nodes dump:
//	      Sessions with Ephemerals (1):
//	      0x10000038eec0000:
//	      ⇥/app/e1
//	      Connections dump:
//	      Connections Sets (1)/(2):
//	      2 expire at Sat Nov 21 08:38:19 UTC 2026:
//	      ⇥ip: /127.0.0.1:53622 sessionId: 0x10000038eec0001
//	crst  Connection stats reset.
//	srst  Server stats reset.
//	(not whitelisted)  <word> is not executed because it is not in the whitelist.
//
// The JSON form of each command (GET /commands/<name>) carries the same figures under
// ZooKeeper's AdminServer keys, and always ends with "command" and "error".
package admin
