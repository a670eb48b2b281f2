package proctest

import "sync"

// Hammer calls f over and over in n goroutines (f(i) in the i-th, i from
// 0 to n-1) until the returned stop is called; stop returns once every
// goroutine has finished its last call. A fault or load test keeps what it
// tests busy with it while it swaps, rewrites or breaks something under it.
func Hammer(n int, f func(i int)) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				f(i)
			}
		}()
	}
	return func() {
		close(done)
		wg.Wait()
	}
}
