package server

import (
	"encoding/binary"
	"testing"

	"github.com/paddock/paddock/server/datatree"
	"github.com/paddock/paddock/server/txn"
	"github.com/paddock/paddock/server/wire"
)

// FuzzRaftEntry decodes arbitrary bytes as a Raft entry's batch of txns, as the leader
// checks a proposal and every member decodes a committed entry, and applies what
// decodes to a tree, as every member would. Nothing may panic: what the leader's check
// passes must apply (to success or to an error), and what does not decode is refused.
func FuzzRaftEntry(f *testing.F) {
	var enc wire.Encoder
	batch := []*proposal{
		{txn: &txn.Txn{Session: 2 << 56, Op: wire.OpCreateSession, Req: &txn.CreateSession{Timeout: 4000, Password: make([]byte, 16)}}},
		{txn: &txn.Txn{Session: 2 << 56, Cxid: 1, Op: wire.OpCreate, Ids: []wire.Identity{{Scheme: "super"}},
			Req: &wire.CreateRequest{Path: "/a", Data: []byte("x"), ACL: wire.OpenACLUnsafe}}},
		{txn: &txn.Txn{Session: 2 << 56, Cxid: 2, Op: wire.OpMulti, Req: &wire.MultiRequest{Ops: []wire.MultiOp{
			{Op: wire.OpSetData, Req: &wire.SetDataRequest{Path: "/a", Data: []byte("y"), Version: -1}},
			{Op: wire.OpDelete, Req: &wire.PathVersionRequest{Path: "/a", Version: -1}}}}}},
		{txn: &txn.Txn{Op: wire.OpError, Req: &txn.ErrorTxn{Code: int32(wire.ErrMarshallingError)}}},
		{txn: &txn.Txn{Session: 2 << 56, Op: wire.OpCloseSession, Req: wire.Empty{}}},
	}
	entry, _, _ := encodeBatch(nil, nil, &enc, batch, maxEntryBytes(wire.DefaultMaxBuffer))
	f.Add(entry)
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add(binary.AppendUvarint(nil, 1<<40))
	f.Fuzz(func(t *testing.T, data []byte) {
		batch, err := decodeBatch(data)
		if err != nil {
			return
		}
		passed := (*replica)(nil).checkEntry(2, data) == nil
		tree := datatree.New()
		for i, p := range batch {
			p.txn.Zxid = int64(i + 1)
			txn.Apply(tree, p.txn, txn.Options{ExtendedTypes: true})
		}
		if passed && len(batch) == 0 {
			t.Fatal("an empty batch passed the check")
		}
	})
}

// FuzzNote decodes arbitrary bytes as a member's report of its sessions: a list of
// session ids, or an error; a list encodes back to the same bytes.
func FuzzNote(f *testing.F) {
	f.Add(appendNote(nil, map[int64]struct{}{1<<56 | 5: {}, 2<<56 | 9: {}}))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		ids, err := decodeNote(data)
		if err != nil {
			if len(data)%8 == 0 {
				t.Fatalf("a note of %d bytes refused: %v", len(data), err)
			}
			return
		}
		var back []byte
		for _, id := range ids {
			back = binary.BigEndian.AppendUint64(back, uint64(id))
		}
		if string(back) != string(data) {
			t.Fatalf("note %x decodes to %v, which encodes to %x", data, ids, back)
		}
	})
}
