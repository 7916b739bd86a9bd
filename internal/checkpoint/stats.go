package checkpoint

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"

	"github.com/yolop-dev/yolop/internal/session/jsonl"
)

// statsFile is a derived cache in the session directory: the number of
// paths each turn changed, for turns whose turn.completed was written
// before it carried files_changed. It is never the source of truth: a
// missing or damaged file is computed again from the snapshots.
//
// It also names the snapshot trees a preview found pruned from the
// repository (refs deleted by hand, then git gc), so that listings, which
// run no git, mark those checkpoints conversation only:
//
//	{"v":1,"files_changed":{"cp1":3,"cp2":0},"pruned":["4b825dc6…"]}
const statsFile = "checkpoint-stats.json"

type stats struct {
	V            int            `json:"v"`
	FilesChanged map[string]int `json:"files_changed"`
	Pruned       []string       `json:"pruned,omitempty"`
}

// loadStatsLocked reads statsFile once. A missing or unreadable file is an
// empty cache.
func (c *Controller) loadStatsLocked() {
	if c.statsLoaded || c.cfg.Dir == "" {
		return
	}
	c.statsLoaded = true
	data, err := jsonl.ReadFile(filepath.Join(c.cfg.Dir, statsFile))
	if err != nil {
		return
	}
	var st stats
	if json.Unmarshal(data, &st) != nil || st.V != 1 {
		return
	}
	for id, n := range st.FilesChanged {
		if n >= 0 {
			c.filesChanged[id] = n
		}
	}
	for _, tree := range st.Pruned {
		c.pruned[tree] = true
	}
}

// notePrunedLocked records what a preview found of tree: gone from the
// repository, or there (a capture of the same files made it again).
func (c *Controller) notePrunedLocked(tree string, gone bool) {
	c.loadStatsLocked()
	if c.pruned[tree] == gone {
		return
	}
	if gone {
		c.pruned[tree] = true
	} else {
		delete(c.pruned, tree)
	}
	c.statsDirty = true
	c.saveStatsLocked()
}

// saveStatsLocked writes the counts computed since the last save. A failed
// write loses nothing but time (the next listing computes them again); it
// is kept in statsErr and told with the next turn or restore, like every
// derived file that could not be written (see saveDigestLocked).
func (c *Controller) saveStatsLocked() {
	if !c.statsDirty || c.cfg.Dir == "" || c.cfg.ReadOnly != "" {
		return
	}
	var pruned []string
	for tree := range c.pruned {
		pruned = append(pruned, tree)
	}
	sort.Strings(pruned)
	data, err := json.Marshal(stats{V: 1, FilesChanged: c.filesChanged, Pruned: pruned})
	if err == nil {
		err = jsonl.WriteFileAtomic(filepath.Join(c.cfg.Dir, statsFile), append(data, '\n'))
	}
	if err != nil {
		c.statsErr = fmt.Errorf("save %s: %w", statsFile, err)
		return
	}
	c.statsDirty, c.statsErr = false, nil
}
