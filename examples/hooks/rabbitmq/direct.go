package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"mesh/hook"
)

// direct is the benchmark's reference: for each line `N C` on stdin, a pass
// (ensure then check of N consumers, C at once) through the same functions
// the hook's verbs are, in this process; one line {"ms":...,"failed":...}.
func direct(r *rabbit) {
	lines := bufio.NewScanner(os.Stdin)
	for lines.Scan() {
		var n, concurrency int
		if _, err := fmt.Sscan(lines.Text(), &n, &concurrency); err != nil || n <= 0 || concurrency <= 0 {
			continue
		}
		ms, failed := directPass(r, n, concurrency)
		out, _ := json.Marshal(map[string]any{"ms": ms, "failed": failed})
		fmt.Println(string(out))
	}
}

func directPass(r *rabbit, n, concurrency int) (float64, int64) {
	var next, failed int64 = -1, 0
	var workers sync.WaitGroup
	started := time.Now()
	if concurrency > n {
		concurrency = n
	}
	for w := 0; w < concurrency; w++ {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for {
				i := atomic.AddInt64(&next, 1)
				if i >= int64(n) {
					return
				}
				c := hook.Consumer{Name: fmt.Sprintf("consumer-%04d", i), Machine: "app-1", Provision: "rabbitmq", Options: json.RawMessage("{}")}
				secret := fmt.Sprintf("bench-secret-%04d-7f3a9c1e5d", i)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				// The instance the driver started it for (MESH_PROVIDER), as a request would say.
				c.Provider = hook.Provider(ctx)
				_, err := r.ensure(ctx, c, secret)
				if err == nil {
					_, err = r.check(ctx, c, secret)
				}
				cancel()
				if err != nil {
					atomic.AddInt64(&failed, 1)
					fmt.Fprintf(os.Stderr, "direct: %s: %v\n", c.Name, err)
				}
			}
		}()
	}
	workers.Wait()
	return float64(time.Since(started).Microseconds()) / 1e3, failed
}
