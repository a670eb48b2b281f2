package proctest

import (
	"os"
	"os/exec"
	"testing"
)

// Child is this test binary run again as a separate process that runs one
// test only: the crash tests kill it with SIGKILL mid-write and check what
// a restart finds. Its stdout and stderr are in Out.
type Child struct {
	Cmd *exec.Cmd
	Out *Buffer
	// Exited is closed once the child has exited (Err says how).
	Exited <-chan struct{}
	err    error
}

// StartChild starts test (a test function's name) in a new process of the
// test binary, with env added to its environment (the child test reads
// its setting there and skips itself when it is absent). The child is
// killed when t ends, if it is still running.
func StartChild(t testing.TB, test string, env ...string) *Child {
	t.Helper()
	c := &Child{Cmd: exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.v"), Out: &Buffer{}}
	c.Cmd.Env = append(c.Cmd.Environ(), env...)
	c.Cmd.Stdout, c.Cmd.Stderr = c.Out, c.Out
	if err := c.Cmd.Start(); err != nil {
		t.Fatalf("start %s in a child process: %v", test, err)
	}
	exited := make(chan struct{})
	c.Exited = exited
	go func() {
		c.err = c.Cmd.Wait()
		close(exited)
	}()
	t.Cleanup(c.Kill)
	return c
}

// Kill kills the child with SIGKILL (if it still runs) and waits for it to
// exit.
func (c *Child) Kill() {
	_ = c.Cmd.Process.Kill()
	<-c.Exited
}

// Err is how the child exited; call it after Exited is closed.
func (c *Child) Err() error { return c.err }
