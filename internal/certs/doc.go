// Package certs provides what paddock's TLS links are configured with: key stores (a
// private key and its certificate chain), trust stores (the CA certificates a peer's
// certificate must chain to), the TLS versions and cipher suites ZooKeeper's ssl.* keys
// name, and a small certificate authority that makes certificates for recipes and tests
// (paddock certs).
//
// Stores are read the way ZooKeeper reads them (its X509Util and KeyStoreFileType), so
// that the files of an existing secure ensemble work as they are. Two store types are
// supported, named as in ZooKeeper's ssl.*.keyStore.type and ssl.*.trustStore.type:
//
//	PEM     one text file of PEM blocks
//	PKCS12  one DER PKCS#12 file (.p12, .pfx), password-protected; a Java trust store
//	        (keytool -importcert -storetype PKCS12) marks its certificates as trusted
//
// JKS and BCFKS, Java's own formats, are refused with the keytool command that converts
// them; a file called JKS (by its type or a .jks name) that is a PKCS12 file, as keytool
// has written by default since Java 9, is read as PKCS12, as Java reads it. A PEM key store holds one private key and the certificate chain, leaf first;
// other blocks (EC PARAMETERS) are skipped, as ZooKeeper's PemReader skips them:
//
//	-----BEGIN PRIVATE KEY-----            the leaf's key: PRIVATE KEY (PKCS#8),
//	...                                    RSA PRIVATE KEY (PKCS#1), EC PRIVATE KEY
//	-----END PRIVATE KEY-----              (SEC 1), or ENCRYPTED PRIVATE KEY (PKCS#8
//	-----BEGIN CERTIFICATE-----            with PBES2, decrypted with the store's
//	...                                    password)
//	-----END CERTIFICATE-----              the leaf: its public key is the key's
//	-----BEGIN CERTIFICATE-----
//	...                                    intermediates, then the CA if wanted
//	-----END CERTIFICATE-----
//
// A PEM trust store is one or more CERTIFICATE blocks, each a trust anchor.
//
// Ensemble members name their server id in their certificates with a URI subject
// alternative name, urn:paddock:member:<id> (MemberURI), so that a member proves the id
// it claims when it connects. Nothing else here is specific to the member link: the
// client port's TLS uses the same stores and settings.
//
// Errors name the file and what is wrong with it; they never contain a password.
package certs
