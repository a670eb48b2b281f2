package proctest

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestWaitStopped: a running process is reported running until SIGSTOP
// takes hold, then stopped; a process that never stops is an error.
func TestWaitStopped(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if err := WaitStopped(cmd.Process.Pid, 50*time.Millisecond); err == nil {
		t.Fatal("a running process was reported stopped")
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if err := WaitStopped(cmd.Process.Pid, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Process.Signal(syscall.SIGCONT)
}
