// Package provenance proves who wrote a piece of data kept in a znode: a task's spec, a
// job's definition. ZooKeeper records no creator, and an ACL says who may change a
// node now, not who wrote what is in it (an ACL can be changed back and forth, and a
// znode deleted and made again under the same name), so the platform trusts what it
// runs by signature instead: its author signs it, and whoever acts on it checks the
// signature against the keys the platform trusts for that role.
//
// What is signed (Message): a domain string naming what the data is ("paddock task v1"),
// a NUL, the czxid of the very znode that holds the data (8 bytes, big-endian), then
// the data's exact bytes:
//
//	+----------------+----+------------------+----------------------+
//	| domain (UTF-8) | 00 | czxid (int64 BE) | data (the znode's)   |
//	+----------------+----+------------------+----------------------+
//
// The data is signed as stored, so every field of it is covered without a canonical
// form. The czxid is the znode's own: the servers give every created znode a new one and
// never reuse it, so a signature copied onto another znode, or onto a znode of the same
// name made again (a parent deleted and re-created restarts sequence numbers), does not
// verify. The domain keeps a task's signature from passing for a job's.
//
// The signature record (Signer.Sign, Trust.Verify) is JSON, at most MaxRecord bytes:
//
//	{"v":1,"key":"ed25519:<base64 public key>","sig":"<base64>"}         a signing key
//	{"v":1,"cert":["<base64 DER>",...],"sig":"<base64>"}                 a client certificate's key
//
// A key is trusted for the roles a signers file lists it under (ParseSigners: lines
// "submitter=ed25519:<base64>"); a certificate when its chain verifies against the
// trusted roots for client authentication and its subject (printed as the server prints
// an x509 identity) holds the role in the platform's roles. Signatures by a
// certificate's key are ECDSA or RSA over SHA-256, or Ed25519, as the key is.
package provenance
