package access

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestDefaultPlansAreTheSpecs pins DefaultPlans to SPEC.md's Limits table.
// Every number below is written from the spec, not from meter.go.
func TestDefaultPlansAreTheSpecs(t *testing.T) {
	plans := DefaultPlans()
	for _, name := range []string{PlanStandard, PlanTrial, PlanSandbox, PlanInternal, PlanData} {
		if _, ok := plans[name]; !ok {
			t.Errorf("DefaultPlans has no %q plan", name)
		}
	}
	if len(plans) != 5 {
		t.Errorf("DefaultPlans has %d plans, want standard, trial, sandbox, internal, data: %v", len(plans), plans)
	}
	// The data plan (ours: the spec has no bulk exports) is the standard
	// plan's limits plus the exports; only it and internal have them.
	data := plans[PlanStandard]
	data.Exports = true
	if plans[PlanData] != data {
		t.Errorf("data plan %+v, want the standard plan's limits with exports: %+v", plans[PlanData], data)
	}
	for name, pl := range plans {
		if pl.Exports != (name == PlanData || name == PlanInternal) {
			t.Errorf("plan %s: exports %v", name, pl.Exports)
		}
	}

	// The token bucket (100 tokens, 20 per second, per API key) applies to
	// every key that is not a sandbox key; the trial is no exception.
	const burst, rate = 100, 20
	want := map[string]PlanLimits{
		// Monthly quota 20,000 per account; 5 WebSocket connections per key.
		PlanStandard: {Burst: burst, Rate: rate, MonthlyQuota: 20000, WSConnections: 5},
		// Trial: 5,000 in total from the trial start, 1,000 per endpoint.
		// No monthly quota during the trial. Its WebSocket cap is not shown.
		PlanTrial: {Burst: burst, Rate: rate, TrialTotal: 5000, TrialPerEndpoint: 1000},
		// Sandbox: 5 requests/s with burst 20, 2,000 for the key's life.
		// Its WebSocket cap is not shown.
		PlanSandbox: {Burst: 20, Rate: 5, LifetimeQuota: 2000},
	}
	for name, w := range want {
		got := plans[name]
		if name != PlanStandard {
			// WebSocket caps on plans other than standard are ours to choose.
			got.WSConnections = 0
		}
		if got != w {
			t.Errorf("DefaultPlans()[%q] = %+v, the spec says %+v", name, got, w)
		}
	}
	// "A full refill takes five seconds of silence."
	if std := plans[PlanStandard]; std.Rate == 0 || std.Burst/std.Rate != 5 {
		t.Errorf("standard bucket refills in %v s, the spec says 5", std.Burst/std.Rate)
	}

	// Internal keys are ours (load tests, monitoring): at least as generous
	// as standard on every limit, and still metered (a bucket and a quota).
	in, std := plans[PlanInternal], plans[PlanStandard]
	if in.Burst < std.Burst || in.Rate < std.Rate || in.MonthlyQuota < std.MonthlyQuota ||
		in.WSConnections < std.WSConnections || in.Burst <= 0 || in.Rate <= 0 || in.MonthlyQuota <= 0 {
		t.Errorf("internal plan %+v is tighter than standard %+v", in, std)
	}
}

// TestDefaultPlansIsAFreshCopy: a caller that adjusts its plans (tests,
// cmd/eo flags) must not change the next caller's defaults.
func TestDefaultPlansIsAFreshCopy(t *testing.T) {
	p := DefaultPlans()
	p[PlanStandard] = PlanLimits{Burst: 1}
	if DefaultPlans()[PlanStandard].Burst != 100 {
		t.Fatal("DefaultPlans returned a shared map")
	}
}

// TestTrialKeyNeedsATrial: a trial key on an account without a trial would
// be metered against a window that never ends (the meter falls back to now
// + 30 days on every request), and one on a subscribed account would put a
// paying customer back under the trial's ceilings. CreateKey refuses both
// with ErrNoTrial and a message that says what to do.
func TestTrialKeyNeedsATrial(t *testing.T) {
	clk := newClock(time.Date(2026, 5, 10, 12, 0, 0, 0, time.UTC))
	s := openKeys(t, clk)

	bare, err := s.CreateAccount("no-trial", 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = s.CreateKey(bare.ID, PlanTrial)
	if !errors.Is(err, ErrNoTrial) {
		t.Fatalf("trial key on an account without a trial: %v, want ErrNoTrial", err)
	}
	if msg := err.Error(); !strings.Contains(msg, bare.ID) || !strings.Contains(msg, "--trial-days") {
		t.Errorf("error %q should name the account and the --trial-days remedy", msg)
	}
	if ks, _ := s.Keys(bare.ID); len(ks) != 0 {
		t.Errorf("a refused trial key was stored: %+v", ks)
	}
	// The same account can still have standard and sandbox keys.
	for _, plan := range []string{PlanStandard, PlanSandbox} {
		if _, _, err := s.CreateKey(bare.ID, plan); err != nil {
			t.Errorf("%s key on an account without a trial: %v", plan, err)
		}
	}

	trial, err := s.CreateAccount("trialist", 14)
	if err != nil {
		t.Fatal(err)
	}
	_, k, err := s.CreateKey(trial.ID, PlanTrial)
	if err != nil || k.Plan != PlanTrial {
		t.Fatalf("trial key on a trial account: %+v %v", k, err)
	}

	if _, err := s.Subscribe(trial.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.CreateKey(trial.ID, PlanTrial); !errors.Is(err, ErrNoTrial) {
		t.Fatalf("trial key on a subscribed account: %v, want ErrNoTrial", err)
	}
	if _, _, err := s.CreateKey(trial.ID, PlanStandard); err != nil {
		t.Fatalf("standard key on a subscribed account: %v", err)
	}
}
