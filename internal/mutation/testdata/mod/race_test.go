package main

import "testing"

func TestFreeBeyondTheLimit(t *testing.T) {
	if Free(101) != -1 {
		t.Fatal("Free(101) should refuse")
	}
}
