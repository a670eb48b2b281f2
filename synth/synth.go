// Package synth generates the embedded default: a deterministic synthetic CS2
// world (teams, players, tournaments, matches, maps, rounds, stats, depth,
// lineups, streams and per-book prices) landed through the raw contract.
//
// The world is driven by latent team strengths on a Glicko-like scale that
// drift as a random walk, so results carry real (but noisy) signal and recent
// form matters. Records are streamed to the sink tournament by tournament, so
// memory stays bounded for large worlds.
package synth

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"github.com/eodata/eo/raw"
)

// Sink receives raw records. *raw.Batch satisfies it.
type Sink interface {
	Add(e raw.Entity, rec any) error
}

// Options configure a world. The same Seed, Now and Matches (and Teams) give
// byte-identical output.
type Options struct {
	Seed    int64
	Now     time.Time // required; the world's "now": completed matches before, a few live at Now, scheduled up to ~3 weeks after
	Matches int       // total matches; default 5000 (about two years ending around Now)
	Teams   int       // default 60, or Matches/80 when Matches > 5000
}

// Summary counts what a Generate call emitted. Rounds, MapResults, StatLines and
// PriceCaptures count records (a round has two rows, one per team).
type Summary struct {
	Teams, Players, Tournaments, Matches           int
	Completed, Live, Scheduled, Cancelled          int
	MapResults, Rounds, StatLines, PriceCaptures   int
	SampleTopTournamentID, SampleLowerTournamentID string
}

const (
	defaultMatches = 5000
	defaultTeams   = 60
	worldDays      = 730
)

// Generate builds the world described by o and adds every record to sink.
func Generate(ctx context.Context, o Options, sink Sink) (Summary, error) {
	return generate(ctx, o, sink, nil)
}

// generate is Generate with an optional hook that sees every simulated match
// (tests use it to reach the latent truth).
func generate(ctx context.Context, o Options, sink Sink, hook func(*match)) (Summary, error) {
	if sink == nil {
		return Summary{}, errors.New("synth: nil sink")
	}
	if o.Matches <= 0 {
		o.Matches = defaultMatches
	}
	if o.Teams <= 0 {
		o.Teams = defaultTeams
		if o.Matches > defaultMatches {
			o.Teams = o.Matches / 80
		}
	}
	if o.Teams < 8 {
		o.Teams = 8
	}
	if o.Now.IsZero() {
		return Summary{}, errors.New("synth: Options.Now is required")
	}
	w := newWorld(o, sink)
	w.hook = hook
	if err := w.build(); err != nil {
		return w.sum, err
	}
	if err := w.emitStatic(); err != nil {
		return w.sum, err
	}
	w.planTournaments()
	for i := range w.tours {
		if err := ctx.Err(); err != nil {
			return w.sum, err
		}
		if err := w.runTournament(i); err != nil {
			return w.sum, err
		}
	}
	return w.sum, nil
}

type team struct {
	id, name, short, region, cc string
	regionIdx                   int
	base                        float64
	mapOff                      [7]float64
}

type player struct {
	id, nick, real, nat, cc string
	role                    *string
	skill                   float64 // log kill weight
	hsRate                  float64
	awper                   bool
}

// rosterSnap is a team's roster from a moment on.
type rosterSnap struct {
	from  time.Time
	core  [5]int
	sixth int // -1: none
}

type world struct {
	o     Options
	sink  Sink
	sum   Summary
	now   time.Time
	start time.Time // first day of the strength walk
	days  int
	rng   *rand.Rand

	teams   []team
	players []player
	str     []float32 // team*days+day
	rosters [][]rosterSnap

	// static events emitted by emitStatic
	renames   []raw.Team
	transfers []raw.Player

	tours     []*tplan
	nextMatch int
	hook      func(*match)
}

func newWorld(o Options, sink Sink) *world {
	now := o.Now.UTC().Truncate(time.Second)
	start := now.Truncate(24*time.Hour).AddDate(0, 0, -worldDays-30)
	return &world{
		o: o, sink: sink, now: now, start: start,
		days: worldDays + 30 + 60,
		rng:  rand.New(rand.NewPCG(uint64(o.Seed), 0x5eed0001)),
	}
}

func (w *world) add(e raw.Entity, rec any) error {
	if err := w.sink.Add(e, rec); err != nil {
		return fmt.Errorf("synth: add %s: %w", e, err)
	}
	return nil
}

// strength is team ti's latent rating at t.
func (w *world) strength(ti int, t time.Time) float64 {
	d := int(t.Sub(w.start) / (24 * time.Hour))
	if d < 0 {
		d = 0
	}
	if d >= w.days {
		d = w.days - 1
	}
	return float64(w.str[ti*w.days+d])
}

func (w *world) roster(ti int, t time.Time) rosterSnap {
	rs := w.rosters[ti]
	cur := rs[0]
	for _, s := range rs[1:] {
		if s.from.After(t) {
			break
		}
		cur = s
	}
	return cur
}

func pickWeighted(r *rand.Rand, weights []float64) int {
	tot := 0.0
	for _, x := range weights {
		tot += x
	}
	u := r.Float64() * tot
	for i, x := range weights {
		u -= x
		if u < 0 {
			return i
		}
	}
	return len(weights) - 1
}

func ip(v int) *int              { return &v }
func fp(v float64) *float64      { return &v }
func sp(v string) *string        { return &v }
func bp(v bool) *bool            { return &v }
func round2(x float64) float64   { return math.Round(x*100) / 100 }
func round3(x float64) float64   { return math.Round(x*1000) / 1000 }
func logistic(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
func logit(p float64) float64    { return math.Log(p / (1 - p)) }

// eloP is the probability that a rating sa beats sb.
func eloP(sa, sb float64) float64 { return 1 / (1 + math.Pow(10, -(sa-sb)/400)) }

// build makes the world's teams, their strengths, players, transfers and
// renames (one generator, in this order).
func (w *world) build() error {
	r := w.rng
	used := map[string]bool{}
	w.makeTeams(r, used)
	w.walkStrengths(r)
	w.makePlayers(r)
	w.makeTransfers(r)
	w.makeRenames(r, used)
	w.sum.Teams = w.o.Teams
	w.sum.Players = len(w.players)
	return nil
}

// makeTeams draws the teams: region (every region has one), country, name,
// base strength and map preferences.
func (w *world) makeTeams(r *rand.Rand, used map[string]bool) {
	w.teams = make([]team, w.o.Teams)
	regW := make([]float64, len(regions))
	for i, rg := range regions {
		regW[i] = rg.weight
	}
	for i := range w.teams {
		ri := pickWeighted(r, regW)
		if i < len(regions) { // every region is represented
			ri = i
		}
		rg := regions[ri]
		t := &w.teams[i]
		t.id = fmt.Sprintf("tm-%04d", i+1)
		t.region = rg.name
		t.regionIdx = ri
		t.cc = rg.countries[r.IntN(len(rg.countries))]
		t.name = w.teamName(r, used)
		t.short = shortName(t.name)
		if r.Float64() < 0.07 {
			t.short = ""
		}
		t.base = 1500 + rg.offset + r.NormFloat64()*140
		for m := range t.mapOff {
			t.mapOff[m] = r.NormFloat64() * 35
		}
	}
}

// walkStrengths walks each team's daily strength (Ornstein-Uhlenbeck around
// its base).
func (w *world) walkStrengths(r *rand.Rand) {
	w.str = make([]float32, len(w.teams)*w.days)
	for i := range w.teams {
		x := w.teams[i].base + r.NormFloat64()*70
		for d := 0; d < w.days; d++ {
			x += 0.004*(w.teams[i].base-x) + r.NormFloat64()*7
			w.str[i*w.days+d] = float32(x)
		}
	}
}

// makePlayers gives every team five players, half of them a sixth.
func (w *world) makePlayers(r *rand.Rand) {
	usedNick := map[string]bool{}
	w.rosters = make([][]rosterSnap, len(w.teams))
	for i := range w.teams {
		t := &w.teams[i]
		n := 5
		if r.Float64() < 0.5 {
			n = 6
		}
		snap := rosterSnap{from: w.start, sixth: -1}
		for k := 0; k < n; k++ {
			p := w.newPlayer(r, t, usedNick)
			idx := len(w.players)
			w.players = append(w.players, p)
			if k < 5 {
				snap.core[k] = idx
			} else {
				snap.sixth = idx
			}
		}
		w.rosters[i] = []rosterSnap{snap}
	}
}

// makeTransfers draws swaps of two core players between teams and a few
// releases of a sixth player, and applies them in time order.
func (w *world) makeTransfers(r *rand.Rand) {
	nT := len(w.teams)
	nSwap := max(nT/4, 2)
	type ev struct {
		at   time.Time
		a, b int
		rel  bool
	}
	evs := make([]ev, 0, nSwap+nT/20+1)
	span := w.now.Sub(w.start.AddDate(0, 0, 60))
	for k := 0; k < nSwap; k++ {
		a, b := r.IntN(nT), r.IntN(nT)
		if a == b {
			b = (a + 1) % nT
		}
		at := w.start.AddDate(0, 0, 60).Add(time.Duration(r.Float64() * float64(span))).Truncate(time.Minute)
		evs = append(evs, ev{at: at, a: a, b: b})
	}
	for k := 0; k < nT/20+1; k++ {
		at := w.start.AddDate(0, 0, 60).Add(time.Duration(r.Float64() * float64(span))).Truncate(time.Minute)
		evs = append(evs, ev{at: at, a: r.IntN(nT), rel: true})
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].at.Before(evs[j].at) })
	for _, e := range evs {
		ra := w.rosters[e.a][len(w.rosters[e.a])-1]
		if e.rel {
			if ra.sixth < 0 {
				continue
			}
			p := w.players[ra.sixth]
			w.transfers = append(w.transfers, w.playerRec(p, "", e.at))
			ra.from, ra.sixth = e.at, -1
			w.rosters[e.a] = append(w.rosters[e.a], ra)
			continue
		}
		rb := w.rosters[e.b][len(w.rosters[e.b])-1]
		sa, sb := r.IntN(5), r.IntN(5)
		pa, pb := ra.core[sa], rb.core[sb]
		ra.core[sa], rb.core[sb] = pb, pa
		ra.from, rb.from = e.at, e.at
		w.rosters[e.a] = append(w.rosters[e.a], ra)
		w.rosters[e.b] = append(w.rosters[e.b], rb)
		w.transfers = append(w.transfers,
			w.playerRec(w.players[pa], w.teams[e.b].id, e.at),
			w.playerRec(w.players[pb], w.teams[e.a].id, e.at))
	}
}

// makeRenames renames a few teams (2 to 4 in a default-sized world).
func (w *world) makeRenames(r *rand.Rand, used map[string]bool) {
	nT := len(w.teams)
	nRen := max(nT/20, 2)
	if nRen > 4 && nT <= defaultTeams*2 {
		nRen = 4
	}
	perm := r.Perm(nT)
	for k := 0; k < nRen && k < nT; k++ {
		ti := perm[k]
		at := w.start.AddDate(0, 0, 90).Add(time.Duration(r.Float64() * float64(w.now.AddDate(0, 0, -7).Sub(w.start.AddDate(0, 0, 90))))).Truncate(time.Minute)
		t := w.teams[ti]
		t.name = w.teamName(r, used)
		t.short = shortName(t.name)
		w.renames = append(w.renames, w.teamRec(ti, t, at, r))
	}
	sort.SliceStable(w.renames, func(i, j int) bool { return w.renames[i].ChangedAt.Before(w.renames[j].ChangedAt) })
}

func (w *world) teamName(r *rand.Rand, used map[string]bool) string {
	for try := 0; ; try++ {
		var n string
		switch r.IntN(6) {
		case 0:
			n = "Team " + teamWordsA[r.IntN(len(teamWordsA))]
		default:
			n = teamWordsA[r.IntN(len(teamWordsA))] + " " + teamWordsB[r.IntN(len(teamWordsB))]
		}
		n += teamSuffixes[r.IntN(len(teamSuffixes))]
		if try > 50 {
			n = fmt.Sprintf("%s %d", n, try)
		}
		if !used[n] {
			used[n] = true
			return n
		}
	}
}

func shortName(name string) string {
	f := strings.Fields(name)
	if len(f) > 0 && f[0] == "Team" {
		f = f[1:]
	}
	var b strings.Builder
	for _, x := range f {
		if x == "Esports" || x == "Gaming" || x == "Club" || x == "GG" {
			continue
		}
		b.WriteByte(x[0])
	}
	s := b.String()
	if len(s) < 2 && len(f) > 0 {
		s = f[0]
		if len(s) > 4 {
			s = s[:4]
		}
	}
	return strings.ToUpper(s)
}

func (w *world) newPlayer(r *rand.Rand, t *team, used map[string]bool) player {
	var nick string
	for try := 0; ; try++ {
		k := 2 + r.IntN(2)
		var b strings.Builder
		for j := 0; j < k; j++ {
			b.WriteString(nickSyllables[r.IntN(len(nickSyllables))])
		}
		nick = b.String()
		if r.Float64() < 0.2 {
			nick = strings.Replace(nick, "o", "0", 1)
		}
		if r.Float64() < 0.1 {
			nick += fmt.Sprint(r.IntN(10))
		}
		if len(nick) > 9 {
			nick = nick[:9]
		}
		if !used[nick] || try > 20 {
			break
		}
	}
	used[nick] = true
	cc := t.cc
	if r.Float64() < 0.3 {
		rg := regions[t.regionIdx]
		cc = rg.countries[r.IntN(len(rg.countries))]
	}
	p := player{
		id:     fmt.Sprintf("pl-%05d", len(w.players)+1),
		nick:   nick,
		real:   firstNames[r.IntN(len(firstNames))] + " " + lastNames[r.IntN(len(lastNames))],
		nat:    countryNames[cc],
		cc:     cc,
		skill:  r.NormFloat64() * 0.2,
		hsRate: 0.32 + r.Float64()*0.28,
	}
	if r.Float64() < 0.1 {
		p.real = ""
	}
	if r.Float64() < 0.1 {
		p.nat = ""
	}
	if r.Float64() < 0.14 {
		p.role = sp(roles[r.IntN(len(roles))])
		if *p.role == "AWP" {
			p.awper = true
			p.skill += 0.12
			p.hsRate = 0.18 + r.Float64()*0.1
		}
	}
	return p
}

func (w *world) playerRec(p player, teamID string, at time.Time) raw.Player {
	return raw.Player{ID: p.id, Nickname: p.nick, RealName: p.real, Nationality: p.nat,
		CountryCode: p.cc, Role: p.role, TeamID: teamID, ChangedAt: at}
}

// teamRec builds a team record with the external rank as of at (nil for some).
func (w *world) teamRec(ti int, t team, at time.Time, r *rand.Rand) raw.Team {
	rec := raw.Team{ID: t.id, Name: t.name, ShortName: t.short, Region: new(t.region), CountryCode: t.cc, ChangedAt: at}
	if r.Float64() < 0.85 {
		s := w.strength(ti, at)
		rank := 1
		for j := range w.teams {
			if j != ti && w.strength(j, at) > s {
				rank++
			}
		}
		rec.ExternalRank = ip(rank)
	}
	return rec
}

func (w *world) emitStatic() error {
	for _, b := range books {
		if err := w.add(raw.Books, raw.Book{ID: b.id, Name: b.name, CopiesBook: b.copies, ChangedAt: w.start}); err != nil {
			return err
		}
	}
	r := w.rng
	for i := range w.teams {
		if err := w.add(raw.Teams, w.teamRec(i, w.teams[i], w.start, r)); err != nil {
			return err
		}
	}
	for _, rec := range w.renames {
		if err := w.add(raw.Teams, rec); err != nil {
			return err
		}
	}
	for ti := range w.teams {
		s := w.rosters[ti][0]
		for _, pi := range s.core {
			if err := w.add(raw.Players, w.playerRec(w.players[pi], w.teams[ti].id, w.start)); err != nil {
				return err
			}
		}
		if s.sixth >= 0 {
			if err := w.add(raw.Players, w.playerRec(w.players[s.sixth], w.teams[ti].id, w.start)); err != nil {
				return err
			}
		}
	}
	for _, rec := range w.transfers {
		if err := w.add(raw.Players, rec); err != nil {
			return err
		}
	}
	return nil
}
