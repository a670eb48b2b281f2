package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/eodata/eo/access"
)

const keysUsage = `Usage:
  eo keys account create --name NAME [--trial-days N]
  eo keys account subscribe --account ID
  eo keys create --account ID [--plan standard|data|trial|sandbox|internal]
  eo keys list [--account ID] [--json]
  eo keys rotate --key KEY_ID
  eo keys revoke --key KEY_ID
  eo keys import --from PATH
A key is printed once, at creation or rotation; afterwards only its prefix and last four characters.
With EO_REDIS_URL set, keys live in that Redis server, shared by every host and edge (a change applies on every
edge within EO_KEY_RELOAD, 1s by default); else in WORK/access.db, one host's. "import" copies the accounts and
keys of a key file (a host's WORK/access.db) into the store in use, skipping those it holds already.
`

func cmdKeys(cfg Config, args []string) error {
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Print(keysUsage)
		return nil
	}
	if len(args) == 0 || args[0] == "account" && len(args) == 1 {
		return usageErrorf("keys: no command given\n\n%s", strings.TrimSuffix(keysUsage, "\n"))
	}
	sub, rest := args[0], args[1:]
	if sub == "account" {
		sub, rest = "account "+args[1], args[2:]
	}
	c := common{cfg: cfg}
	f, err := parseKeysFlags(&c, sub, rest)
	if err != nil {
		return err
	}
	st, err := c.openAccess()
	if err != nil {
		return err
	}
	defer st.Close()
	return runKeys(st, sub, f)
}

// keysFlags are the flags of the eo keys commands; each command defines
// the ones it takes.
type keysFlags struct {
	name, account, plan, key, from string
	trialDays                      int
	json                           bool
}

// parseKeysFlags parses the flags of eo keys sub: only the ones sub takes,
// and the ones it needs named when missing.
func parseKeysFlags(c *common, sub string, args []string) (keysFlags, error) {
	var f keysFlags
	fs := c.flags("keys " + sub)
	account := func(usage string) { fs.StringVar(&f.account, "account", "", usage) }
	key := func() { fs.StringVar(&f.key, "key", "", "key id") }
	var required []string
	switch sub {
	case "account create":
		fs.StringVar(&f.name, "name", "", "account name")
		fs.IntVar(&f.trialDays, "trial-days", 0, "start a trial of this many days")
		required = []string{"name"}
	case "account subscribe":
		account("account id")
		required = []string{"account"}
	case "create":
		account("account id")
		fs.StringVar(&f.plan, "plan", access.PlanStandard, "plan: standard, data (standard + bulk Parquet exports), trial, sandbox or internal")
		required = []string{"account"}
	case "list":
		account("only this account's keys")
		fs.BoolVar(&f.json, "json", false, "print a JSON array instead of lines (never the key itself or its hash)")
	case "rotate", "revoke":
		key()
		required = []string{"key"}
	case "import":
		fs.StringVar(&f.from, "from", "", "the key file to copy from")
		required = []string{"from"}
	default:
		return f, usageErrorf("unknown keys command %q\n\n%s", sub, strings.TrimSuffix(keysUsage, "\n"))
	}
	return f, parseFlags(fs, args, strings.TrimSuffix(keysUsage, "\n"), required...)
}

// runKeys runs eo keys sub on the key store.
func runKeys(st *access.Store, sub string, f keysFlags) error {
	switch sub {
	case "account create":
		a, err := st.CreateAccount(f.name, f.trialDays)
		if err != nil {
			return err
		}
		fmt.Printf("account %s (%s)\n", a.ID, a.Name)
		if a.TrialEnds != nil {
			fmt.Printf("trial ends %s\n", a.TrialEnds.Format(time.RFC3339))
		}
	case "account subscribe":
		a, err := st.Subscribe(f.account)
		if err != nil {
			return err
		}
		fmt.Printf("account %s subscribed at %s: standard plan\n", a.ID, a.SubscribedAt.Format(time.RFC3339))
	case "create":
		plain, k, err := st.CreateKey(f.account, f.plan)
		if err != nil {
			return err
		}
		fmt.Printf("key %s (%s plan) - shown once, store it now:\n%s\n", k.ID, k.Plan, plain)
	case "list":
		keys, err := st.Keys(f.account)
		if err != nil {
			return err
		}
		if f.json {
			return printJSON(keyLines(keys))
		}
		for _, k := range keys {
			state := "active"
			switch {
			case k.RevokedAt != nil:
				state = "revoked " + k.RevokedAt.Format(time.RFC3339)
			case k.ExpiresAt != nil:
				state = "rotated, works until " + k.ExpiresAt.Format(time.RFC3339)
			}
			fmt.Printf("%s  %-9s %-16s account %s  %s\n", k.ID, k.Plan, k.Display(), k.AccountID, state)
		}
	case "rotate":
		plain, k, err := st.Rotate(f.key)
		if err != nil {
			return err
		}
		fmt.Printf("new key %s - shown once; the old key works for 24 h:\n%s\n", k.ID, plain)
	case "import":
		return importKeys(st, f.from)
	case "revoke":
		if err := st.Revoke(f.key); err != nil {
			return err
		}
		fmt.Printf("key %s revoked\n", f.key)
	}
	return nil
}

// keyLine is one key in eo keys list --json: what identifies it, never
// the key or its hash.
type keyLine struct {
	ID         string     `json:"id"`
	AccountID  string     `json:"account_id"`
	Plan       string     `json:"plan"`
	Display    string     `json:"display"` // prefix…last4
	State      string     `json:"state"`   // active, rotated, revoked
	CreatedAt  time.Time  `json:"created_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
	ExpiresAt  *time.Time `json:"expires_at"`
	ReplacedBy string     `json:"replaced_by,omitempty"`
}

func keyLines(keys []access.Key) []keyLine {
	out := []keyLine{}
	for _, k := range keys {
		state := "active"
		switch {
		case k.RevokedAt != nil:
			state = "revoked"
		case k.ExpiresAt != nil:
			state = "rotated"
		}
		out = append(out, keyLine{ID: k.ID, AccountID: k.AccountID, Plan: k.Plan, Display: k.Display(), State: state,
			CreatedAt: k.CreatedAt, RevokedAt: k.RevokedAt, ExpiresAt: k.ExpiresAt, ReplacedBy: k.ReplacedBy})
	}
	return out
}

// importKeys copies the accounts and keys of the key file at from into st
// (eo keys import).
func importKeys(st *access.Store, from string) error {
	if _, err := os.Stat(from); err != nil {
		return fmt.Errorf("--from: %w", err)
	}
	src, err := access.Open(from, nil)
	if err != nil {
		return err
	}
	defer src.Close()
	na, nk, err := st.CopyFrom(src)
	if err != nil {
		return err
	}
	fmt.Printf("imported %d accounts and %d keys from %s\n", na, nk, from)
	return nil
}
