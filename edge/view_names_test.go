package edge

import (
	"github.com/eodata/eo/tables"
	"github.com/eodata/eo/view"
)

// The edge tests read rows the way clients see them; these names keep the
// view's row types short in them.
type (
	Match      = view.Match
	ID         = tables.ID
	Snapshot   = view.Snapshot
	Tournament = view.Tournament
	Team       = view.Team
)

var ParseID = tables.ParseID
