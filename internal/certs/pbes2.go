package certs

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/des"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"hash"
)

// An ENCRYPTED PRIVATE KEY is PKCS#8's EncryptedPrivateKeyInfo (RFC 5208) encrypted with
// PBES2 (RFC 8018): a key derived from the password with PBKDF2 encrypts the PKCS#8
// PrivateKeyInfo with a block cipher in CBC mode, PKCS#7-padded. That is what
// openssl pkcs8 -topk8 -v2 (and openssl genpkey with a cipher) writes, and what
// ZooKeeper's PemReader decrypts. The primitives are the standard library's; only the
// ASN.1 envelope is read here. Go has no PKCS#8 decryption, and the usual library for
// it (github.com/youmark/pkcs8) neither checks the padding nor guards its CBC call
// against a malformed file, which then panics.
//
// PBES1 (openssl pkcs8 -v1, with MD5 or SHA-1 and DES or RC2) and scrypt are refused.

var (
	oidPBES2  = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2 = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
)

// pbkdf2PRFs are PBKDF2's pseudo-random functions, by the OID of their HMAC.
var pbkdf2PRFs = map[string]func() hash.Hash{
	"1.2.840.113549.2.7":  sha1.New, // the default when the parameters name none
	"1.2.840.113549.2.8":  sha256.New224,
	"1.2.840.113549.2.9":  sha256.New,
	"1.2.840.113549.2.10": sha512.New384,
	"1.2.840.113549.2.11": sha512.New,
}

// pbes2Ciphers are the CBC ciphers PBES2 may name, by OID.
var pbes2Ciphers = map[string]struct {
	keyLen int
	block  func(key []byte) (cipher.Block, error)
}{
	"2.16.840.1.101.3.4.1.2":  {16, aes.NewCipher}, // aes128-CBC
	"2.16.840.1.101.3.4.1.22": {24, aes.NewCipher}, // aes192-CBC
	"2.16.840.1.101.3.4.1.42": {32, aes.NewCipher}, // aes256-CBC
	"1.2.840.113549.3.7":      {24, des.NewTripleDESCipher},
}

// maxPBKDF2Iterations bounds the work a damaged or hostile file can ask for; OpenSSL
// writes 2048, current guidance for SHA-256 is 600000.
const maxPBKDF2Iterations = 10_000_000

type encryptedPrivateKeyInfo struct {
	Algorithm pkix.AlgorithmIdentifier
	Data      []byte
}

type pbes2Params struct {
	KDF    pkix.AlgorithmIdentifier
	Cipher pkix.AlgorithmIdentifier
}

type pbkdf2Params struct {
	Salt       []byte
	Iterations int
	KeyLength  int                      `asn1:"optional"`
	PRF        pkix.AlgorithmIdentifier `asn1:"optional"`
}

// decryptPKCS8 decrypts the DER of an ENCRYPTED PRIVATE KEY block with password. A wrong
// password gives an error wrapping ErrPassword.
func decryptPKCS8(der []byte, password string) (any, error) {
	var info encryptedPrivateKeyInfo
	if err := unmarshalAll(der, &info); err != nil {
		return nil, fmt.Errorf("not a PKCS#8 EncryptedPrivateKeyInfo: %w", err)
	}
	if !info.Algorithm.Algorithm.Equal(oidPBES2) {
		return nil, fmt.Errorf("encryption scheme %v is not supported: want PBES2 "+
			"(convert with openssl pkcs8 -topk8 -v2 aes-256-cbc)", info.Algorithm.Algorithm)
	}
	var params pbes2Params
	if err := unmarshalAll(info.Algorithm.Parameters.FullBytes, &params); err != nil {
		return nil, fmt.Errorf("malformed PBES2 parameters: %w", err)
	}
	block, err := pbes2Cipher(params, password)
	if err != nil {
		return nil, err
	}
	var iv []byte
	if err := unmarshalAll(params.Cipher.Parameters.FullBytes, &iv); err != nil || len(iv) != block.BlockSize() {
		return nil, errors.New("malformed PBES2 parameters: want an IV of one cipher block")
	}
	if len(info.Data) == 0 || len(info.Data)%block.BlockSize() != 0 {
		return nil, errors.New("malformed encrypted key: not a whole number of cipher blocks")
	}
	plain := make([]byte, len(info.Data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(plain, info.Data)
	plain, ok := unpad(plain, block.BlockSize())
	if !ok {
		return nil, fmt.Errorf("%w (or a damaged key)", ErrPassword)
	}
	key, err := x509.ParsePKCS8PrivateKey(plain)
	if err != nil {
		return nil, fmt.Errorf("%w (or a damaged key)", ErrPassword) // the padding was right by chance
	}
	return key, nil
}

// pbes2Cipher derives the key from password with the parameters' PBKDF2 and returns the
// cipher it keys.
func pbes2Cipher(params pbes2Params, password string) (cipher.Block, error) {
	if !params.KDF.Algorithm.Equal(oidPBKDF2) {
		return nil, fmt.Errorf("key derivation %v is not supported: want PBKDF2 "+
			"(convert with openssl pkcs8 -topk8 -v2 aes-256-cbc)", params.KDF.Algorithm)
	}
	var kdf pbkdf2Params
	if err := unmarshalAll(params.KDF.Parameters.FullBytes, &kdf); err != nil {
		return nil, fmt.Errorf("malformed PBKDF2 parameters: %w", err)
	}
	prf := pbkdf2PRFs["1.2.840.113549.2.7"]
	if kdf.PRF.Algorithm != nil {
		if prf = pbkdf2PRFs[kdf.PRF.Algorithm.String()]; prf == nil {
			return nil, fmt.Errorf("PBKDF2 with %v is not supported: want HMAC with SHA-1 or SHA-2", kdf.PRF.Algorithm)
		}
	}
	c, ok := pbes2Ciphers[params.Cipher.Algorithm.String()]
	switch {
	case !ok:
		return nil, fmt.Errorf("cipher %v is not supported: want AES-CBC or DES-EDE3-CBC", params.Cipher.Algorithm)
	case kdf.KeyLength != 0 && kdf.KeyLength != c.keyLen:
		return nil, fmt.Errorf("malformed PBKDF2 parameters: key length %d for a cipher of %d", kdf.KeyLength, c.keyLen)
	case kdf.Iterations < 1 || kdf.Iterations > maxPBKDF2Iterations:
		return nil, fmt.Errorf("PBKDF2 iteration count %d: want 1 to %d", kdf.Iterations, maxPBKDF2Iterations)
	}
	key, err := pbkdf2.Key(prf, password, kdf.Salt, kdf.Iterations, c.keyLen)
	if err != nil {
		return nil, fmt.Errorf("PBKDF2: %w", err) // FIPS 140-3 mode refuses short salts
	}
	return c.block(key)
}

// unpad removes PKCS#7 padding; ok is false when there is none.
func unpad(b []byte, blockSize int) ([]byte, bool) {
	n := int(b[len(b)-1])
	if n == 0 || n > blockSize {
		return nil, false
	}
	for _, p := range b[len(b)-n:] {
		if int(p) != n {
			return nil, false
		}
	}
	return b[:len(b)-n], true
}

// unmarshalAll is asn1.Unmarshal refusing trailing data.
func unmarshalAll(der []byte, v any) error {
	rest, err := asn1.Unmarshal(der, v)
	if err == nil && len(rest) > 0 {
		err = errors.New("trailing data")
	}
	return err
}
