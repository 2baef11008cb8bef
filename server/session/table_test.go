package session

import (
	"reflect"
	"testing"
	"time"
)

func TestExpiryBuckets(t *testing.T) {
	t0 := time.UnixMilli(1_000_000)
	tab := NewTable(2 * time.Second)
	tab.Add(1, 4*time.Second, t0)
	tab.Add(2, 10*time.Second, t0)
	if got := tab.Buckets(); len(got) != 2 || got[0].Expiry != time.UnixMilli(1_006_000) {
		t.Fatalf("buckets %+v: want expiry rounded up to the next 2s tick after now+timeout", got)
	}
	if ids := tab.Expire(t0.Add(5 * time.Second)); len(ids) != 0 {
		t.Fatalf("expired early: %v", ids)
	}
	if !tab.Touch(1, t0.Add(5*time.Second)) {
		t.Fatal("touch of a live session failed")
	}
	if ids := tab.Expire(t0.Add(6 * time.Second)); len(ids) != 0 {
		t.Fatalf("a touched session expired: %v", ids)
	}
	if ids := tab.Expire(t0.Add(12 * time.Second)); !reflect.DeepEqual(ids, []int64{1, 2}) {
		t.Fatalf("expired %v, want [1 2]", ids)
	}
	if tab.Touch(1, t0.Add(13*time.Second)) || tab.Len() != 0 {
		t.Fatal("an expired session can be touched back to life")
	}
}

func TestRemoveAndNext(t *testing.T) {
	t0 := time.UnixMilli(0)
	tab := NewTable(time.Second)
	if _, ok := tab.Next(); ok {
		t.Fatal("empty table has a next expiry")
	}
	tab.Add(7, 3*time.Second, t0)
	if next, ok := tab.Next(); !ok || next != time.UnixMilli(4000) {
		t.Fatalf("next = %v", next)
	}
	if d, ok := tab.Timeout(7); !ok || d != 3*time.Second {
		t.Fatalf("timeout %v", d)
	}
	tab.Remove(7)
	if tab.Touch(7, t0) || len(tab.Expire(t0.Add(time.Hour))) != 0 {
		t.Fatal("a removed session is still tracked")
	}
}

func TestConcurrentTouch(t *testing.T) {
	tab := NewTable(time.Millisecond)
	t0 := time.UnixMilli(0)
	for id := int64(1); id <= 8; id++ {
		tab.Add(id, time.Second, t0)
	}
	done := make(chan bool)
	for g := 0; g < 4; g++ {
		go func() {
			for i := 0; i < 1000; i++ {
				tab.Touch(int64(i%8)+1, t0.Add(time.Duration(i)*time.Millisecond))
			}
			done <- true
		}()
	}
	for g := 0; g < 4; g++ {
		<-done
	}
	if ids := tab.Expire(t0.Add(999 * time.Millisecond)); len(ids) != 0 {
		t.Fatalf("expired %v although touched", ids)
	}
	if ids := tab.Expire(t0.Add(3 * time.Second)); len(ids) != 8 {
		t.Fatalf("expired %v, want all 8", ids)
	}
}
