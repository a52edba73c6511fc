package remotetest

import (
	"bytes"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestResetWaitsForRequestsBeingServed: a response still being served when
// the counts are reset is counted before the reset, not after it, so the
// counts after Reset are the next run's alone.
func TestResetWaitsForRequestsBeingServed(t *testing.T) {
	s := NewHTTP(t)
	data := bytes.Repeat([]byte("x"), 1<<16)
	s.Put(t, "", "f.bin", data, time.Time{})
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // before the server stops: it waits for its handlers
	s.OnGet(func(*http.Request) { <-release })
	got := make(chan int, 1)
	go func() {
		resp, err := http.Get(s.URL + "/f.bin")
		if err != nil {
			got <- -1
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got <- len(b)
	}()
	for s.Counts().Get == 0 { // the GET is being served, held in OnGet
		time.Sleep(time.Millisecond)
	}
	reset := make(chan struct{})
	go func() {
		s.Reset()
		close(reset)
	}()
	select {
	case <-reset:
		t.Fatal("Reset returned while a response was still being served")
	case <-time.After(100 * time.Millisecond):
	}
	free()
	<-reset
	if n := <-got; n != len(data) {
		t.Fatalf("the client read %d bytes, want %d", n, len(data))
	}
	if c := s.Counts(); c != (Counts{}) {
		t.Errorf("after Reset: %+v, want nothing counted", c)
	}
}
