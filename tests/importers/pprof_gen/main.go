// pprof_gen writes two profiles with Go's own runtime/pprof, the producer
// tests/importers/pprof_test.cc checks `cct-import --from pprof` against:
//
//	pprof_gen HEAP CPU
//
// HEAP: the allocation profile with every allocation sampled
// (MemProfileRate 1), from a call chain with an inlined function; CPU: a
// short CPU profile whose worker goroutine carries a "thread" label.
// Standard library only, so it builds offline.
package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"time"
)

var sink [][]byte

// Small enough for the compiler to inline into its callers.
func allocSmall(n int) {
	for i := 0; i < n; i++ {
		sink = append(sink, make([]byte, 64))
	}
}

//go:noinline
func allocLarge(n int) {
	for i := 0; i < n; i++ {
		sink = append(sink, make([]byte, 4096))
	}
}

//go:noinline
func outer() {
	allocSmall(1000)
	allocLarge(100)
}

var spinSink uint64

//go:noinline
func spin(d time.Duration) {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		for i := 0; i < 10000; i++ {
			spinSink += uint64(i) * 2654435761
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "pprof_gen:", err)
	os.Exit(1)
}

func main() {
	if len(os.Args) != 3 {
		fail(fmt.Errorf("usage: pprof_gen HEAP CPU"))
	}
	runtime.MemProfileRate = 1
	outer()
	runtime.GC()
	heap, err := os.Create(os.Args[1])
	if err != nil {
		fail(err)
	}
	if err := pprof.Lookup("allocs").WriteTo(heap, 0); err != nil {
		fail(err)
	}
	heap.Close()

	cpu, err := os.Create(os.Args[2])
	if err != nil {
		fail(err)
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		fail(err)
	}
	done := make(chan struct{})
	go pprof.Do(context.Background(), pprof.Labels("thread", "worker"), func(context.Context) {
		spin(300 * time.Millisecond)
		close(done)
	})
	spin(100 * time.Millisecond)
	<-done
	pprof.StopCPUProfile()
	cpu.Close()
}
