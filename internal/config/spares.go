package config

import (
	"fmt"
	"os"
	"strconv"

	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/worktree"
)

// Spares configures recycled worktrees: a new session claims a parked
// spare of its repository instead of checking out the whole tree, and a
// spare is prepared in the background for the next session.
type Spares struct {
	// Limit is how many spares a repository keeps ([worktree] spares);
	// zero turns recycling and preparation off.
	Limit int
	// Keeps is what a parked worktree keeps of its ignored files
	// (worktree.KeepDependencies or worktree.KeepNothing).
	Keeps string
	// Share lists the directories copied from the checkout into each new
	// session worktree ([worktree] share).
	Share []string
}

// Manager is the worktree manager of dataDir with these settings; hit is
// called at its failpoints (nil: none).
func (sp Spares) Manager(dataDir string, hit func(string)) *worktree.Manager {
	return &worktree.Manager{DataDir: dataDir, Spares: sp.Limit, SpareKeeps: sp.Keeps, Share: sp.Share, Failpoint: hit}
}

// SparesEnv overrides [worktree] spares.
const SparesEnv = "YOLOP_WORKTREE_SPARES"

// ResolveSpares reads [worktree] spares, spare_keeps and share from the
// settings file; $YOLOP_WORKTREE_SPARES overrides the number.
func ResolveSpares() (Spares, error) {
	path := SettingsPath()
	s, err := provider.LoadSettings(path)
	if err != nil {
		return Spares{}, err
	}
	sp := Spares{Limit: worktree.DefaultSpares, Keeps: s.Worktree.SpareKeeps, Share: s.Worktree.Share}
	if err := worktree.CheckShare(sp.Share); err != nil {
		return Spares{}, fmt.Errorf("settings %s: %w", path, err)
	}
	if s.Worktree.Spares != nil {
		if *s.Worktree.Spares < 0 || *s.Worktree.Spares > 16 {
			return Spares{}, fmt.Errorf("settings %s: [worktree] spares = %d: want 0 (no spare worktrees) to 16", path, *s.Worktree.Spares)
		}
		sp.Limit = *s.Worktree.Spares
	}
	switch sp.Keeps {
	case "", worktree.KeepDependencies, worktree.KeepNothing:
	default:
		return Spares{}, fmt.Errorf("settings %s: [worktree] spare_keeps = %q: want %q (keep dependency and build directories as a warm cache) or %q (fully clean)", path, sp.Keeps, worktree.KeepDependencies, worktree.KeepNothing)
	}
	if v := os.Getenv(SparesEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 16 {
			return Spares{}, fmt.Errorf("%s=%q: want a number of spare worktrees from 0 to 16", SparesEnv, v)
		}
		sp.Limit = n
	}
	return sp, nil
}
