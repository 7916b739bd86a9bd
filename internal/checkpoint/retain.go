package checkpoint

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Recovery refs are bounded: the recovery snapshot rN of a preview that was
// never confirmed is removed as soon as its token can no longer be used —
// when the next turn starts, the next preview supersedes it, or another
// restore is confirmed — unless the redo slot or a journal record needs it
// (a branch's end state is a head.moved's recovery). So a session holds at
// most one unconfirmed recovery ref, plus those its journal names. Numbers
// are never reused (previews.json and the timeline both count them).

// refManager is what the snapshot engine offers for ref housekeeping.
type refManager interface {
	DeleteRef(ctx context.Context, name string) error
	SessionRefs(ctx context.Context) ([]string, error)
}

// Retained is a ref a session keeps in the repository.
type Retained struct {
	// Name is the snapshot name (rN, cpN, end-cpN) under
	// refs/yolop/checkpoints/<session>/, or a full ref name for the
	// others (refs/yolop/apply/<session>/<n>).
	Name string `json:"name"`
	Tree string `json:"tree"`
	// Why is what needs it: "redo", "branch b2 end", "restore r3
	// (journal)", "preview (token not used yet)", "files at the end of
	// turn cp2", …
	Why string `json:"why"`
	// Kind is recovery (a preview's or a restore's snapshot of the files
	// before it), turn (cpN before a turn, end-cpN after it) or apply.
	Kind string `json:"kind"`
}

// Kinds of retained refs.
const (
	RetainedRecovery = "recovery"
	RetainedTurn     = "turn"
	RetainedApply    = "apply"
)

// isRecoveryName reports whether name is a preview's recovery snapshot.
func isRecoveryName(name string) bool {
	n, ok := strings.CutPrefix(name, "r")
	if !ok || n == "" {
		return false
	}
	for _, c := range n {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// refName returns the short name of a full snapshot ref.
func refName(ref string) string {
	return ref[strings.LastIndexByte(ref, '/')+1:]
}

// journalRefsLocked returns the recovery names the journal needs, with
// why: the redo slot, a branch's end state, or (for any other) the
// restore it recorded.
func (c *Controller) journalRefsLocked() map[string]string {
	why := map[string][]string{}
	for _, r := range c.state.Recoveries() {
		why[refName(r.Recovery.Ref)] = nil
	}
	if p := c.state.PendingRestore; p != nil && p.Recovery != nil {
		// An interrupted restore: the files before it are kept until it
		// is resolved.
		n := refName(p.Recovery.Ref)
		why[n] = append(why[n], "interrupted restore "+p.Restore)
	}
	if c.state.Redo != nil && c.state.Redo.Recovery != nil {
		n := refName(c.state.Redo.Recovery.Ref)
		why[n] = append(why[n], "redo")
	}
	for _, b := range c.branchesLocked() {
		if b.End != nil && !b.Active {
			n := refName(b.End.Ref)
			why[n] = append(why[n], "branch "+b.ID+" end")
		}
	}
	keep := make(map[string]string, len(why))
	for n, reasons := range why {
		if len(reasons) == 0 {
			reasons = []string{"restore " + n + " (journal)"}
		}
		keep[n] = strings.Join(reasons, "; ")
	}
	return keep
}

// expirePreviewsLocked makes every unconfirmed token unusable (why names
// the cause, for the error a late confirm gets) and removes the recovery
// refs that nothing else needs. The token list is saved before any ref
// is removed, so a crash between the two leaves only a ref that the next
// sweep removes.
func (c *Controller) expirePreviewsLocked(ctx context.Context, store *previewStore, why string) error {
	changed := false
	for i := range store.Previews {
		p := &store.Previews[i]
		if !p.Used && p.Expired == "" {
			p.Expired = why
			changed = true
		}
	}
	if changed {
		if err := store.save(c.cfg.Dir); err != nil {
			return fmt.Errorf("save previews: %w", err)
		}
	}
	c.sweepRefsLocked(ctx, store)
	return nil
}

// expireAtTurnLocked expires the outstanding tokens when a turn starts.
// The turn moves the conversation head, so Confirm refuses those tokens
// (conversation_moved) even if previews.json cannot be written now; the
// refs they needed are then removed by the next preview or confirm.
func (c *Controller) expireAtTurnLocked(ctx context.Context) {
	if len(c.state.Order) == 0 {
		// No checkpoint yet: nothing could be previewed, so there is no
		// token to expire and no recovery or scratch ref to sweep (a
		// session's first turn lists no refs and writes no
		// previews.json).
		return
	}
	store, err := loadPreviews(c.cfg.Dir)
	if err != nil {
		return
	}
	if err := c.expirePreviewsLocked(ctx, store, "a turn ran after it"); err != nil {
		return
	}
}

// sweepRefsLocked removes recovery refs no live token, redo slot or
// journal record needs. It is housekeeping: a failure leaves a ref behind
// for the next sweep and is not reported as an error of the command.
func (c *Controller) sweepRefsLocked(ctx context.Context, store *previewStore) {
	rm, ok := c.cfg.Snapshots.(refManager)
	if !ok {
		return
	}
	key := c.sweepKeyLocked(store)
	if store.Swept == key {
		return
	}
	keep := c.journalRefsLocked()
	for _, p := range store.Previews {
		if !p.Used && p.Expired == "" && p.RecoveryName != "" {
			keep[p.RecoveryName] = "preview"
		}
	}
	refs, err := rm.SessionRefs(ctx)
	if err != nil {
		return
	}
	for _, ref := range refs {
		name := refName(ref)
		if _, needed := keep[name]; needed {
			continue
		}
		if !isRecoveryName(name) && !(isScratchName(name) && c.state.PendingRestore == nil) {
			continue
		}
		if err := rm.DeleteRef(ctx, name); err != nil {
			return
		}
	}
	if c.cfg.Dir == "" {
		return
	}
	store.Swept = key
	if err := store.save(c.cfg.Dir); err != nil {
		// Housekeeping: the next sweep lists the refs again.
		store.Swept = ""
	}
}

// sweepKeyLocked names everything that decides which recovery and scratch
// refs a sweep removes: the recovery numbers handed out (a preview
// captures rN), the restores journaled (a failed restore's rollback-rN, an
// interrupted one's repair-rN, and every change of what the journal keeps:
// the branches a restore leaves and their ends), the pending restore, the
// redo slot (a turn empties it) and the tokens still usable. A sweep that
// removed all it should leaves nothing to remove until one of them
// changes. It is cheap to compute: a turn that finds it unchanged costs
// nothing that grows with the session.
func (c *Controller) sweepKeyLocked(store *previewStore) string {
	var b strings.Builder
	fmt.Fprintf(&b, "v2 %d %d", store.NextRecovery, c.state.NextRestore)
	if p := c.state.PendingRestore; p != nil {
		b.WriteString(" pending " + p.Restore)
	}
	if r := c.state.Redo; r != nil && r.Recovery != nil {
		b.WriteString(" redo " + refName(r.Recovery.Ref))
	}
	var live []string
	for _, p := range store.Previews {
		if !p.Used && p.Expired == "" && p.RecoveryName != "" {
			live = append(live, p.RecoveryName)
		}
	}
	sort.Strings(live)
	b.WriteString(" live " + strings.Join(live, ","))
	return b.String()
}

// Scratch captures: a failed restore's rollback and an interrupted
// restore's repair capture the half-restored files only to compute what
// to put back. They are removed as soon as that is done, or by the next
// sweep when a crash left one behind.
const (
	rollbackPrefix = "rollback-"
	repairPrefix   = "repair-"
)

func isScratchName(name string) bool {
	return strings.HasPrefix(name, rollbackPrefix) || strings.HasPrefix(name, repairPrefix)
}

// dropScratch removes a scratch capture once it has served. A failure
// leaves it for the next sweep.
func (c *Controller) dropScratch(ctx context.Context, name string) {
	if rm, ok := c.cfg.Snapshots.(refManager); ok {
		_ = rm.DeleteRef(ctx, name) // housekeeping: the next sweep retries
	}
}

// Retained lists every snapshot ref the session keeps and why (for
// `checkpoints --all`): the recovery snapshots first, newest first, then
// the turn snapshots (cpN before each turn, end-cpN after it), which live
// as long as the session.
func (c *Controller) Retained(ctx context.Context) ([]Retained, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cfg.Snapshots == nil {
		return []Retained{}, nil
	}
	store, err := loadPreviews(c.cfg.Dir)
	if err != nil {
		return nil, err
	}
	keep := c.journalRefsLocked()
	trees := map[string]string{}
	for _, r := range c.state.Recoveries() {
		trees[refName(r.Recovery.Ref)] = r.Recovery.Tree
	}
	if p := c.state.PendingRestore; p != nil && p.Recovery != nil {
		trees[refName(p.Recovery.Ref)] = p.Recovery.Tree
	}
	for _, p := range store.Previews {
		if !p.Used && p.Expired == "" && p.Recovery != nil {
			keep[p.RecoveryName] = "preview (token not used yet)"
			trees[p.RecoveryName] = p.Recovery.Tree
		}
	}
	out := []Retained{}
	rm, ok := c.cfg.Snapshots.(refManager)
	if !ok {
		for name, why := range keep {
			out = append(out, Retained{Name: name, Tree: trees[name], Why: why, Kind: RetainedRecovery})
		}
		sortRetained(out)
		return c.withOtherRefs(ctx, out)
	}
	// Only what really exists is retained.
	refs, err := rm.SessionRefs(ctx)
	if err != nil {
		return nil, err
	}
	for _, ref := range refs {
		name := refName(ref)
		why, kept := keep[name]
		switch {
		case kept:
		case isRecoveryName(name):
			why = "not needed: removed at the next preview, turn or confirm"
		case isScratchName(name):
			why = "scratch capture of a restore's rollback: removed at the next preview, turn or confirm"
		default:
			why = c.turnRefWhyLocked(name)
		}
		tree := trees[name]
		if tree == "" {
			tree = c.turnRefTreeLocked(name)
		}
		out = append(out, Retained{Name: name, Tree: tree, Why: why, Kind: retainedKind(name)})
	}
	sortRetained(out)
	return c.withOtherRefs(ctx, out)
}

// withOtherRefs appends the refs kept outside the snapshot refs.
func (c *Controller) withOtherRefs(ctx context.Context, out []Retained) ([]Retained, error) {
	if c.cfg.OtherRefs == nil {
		return out, nil
	}
	more, err := c.cfg.OtherRefs(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the session's other refs: %w", err)
	}
	return append(out, more...), nil
}

// turnRefWhyLocked explains a snapshot ref that is not a recovery one.
func (c *Controller) turnRefWhyLocked(name string) string {
	if id, ok := strings.CutPrefix(name, "end-"); ok {
		if cp := c.state.Checkpoints[id]; cp != nil && cp.End != nil && refName(cp.End.Ref) == name {
			return "files at the end of turn " + id
		}
		return "end of a turn the journal does not record"
	}
	if cp := c.state.Checkpoints[name]; cp != nil && cp.Snapshot != nil && refName(cp.Snapshot.Ref) == name {
		return "checkpoint " + name + ": files before the turn"
	}
	return "not named by the journal"
}

// turnRefTreeLocked is the tree the journal records for a turn snapshot.
func (c *Controller) turnRefTreeLocked(name string) string {
	if id, ok := strings.CutPrefix(name, "end-"); ok {
		if cp := c.state.Checkpoints[id]; cp != nil && cp.End != nil {
			return cp.End.Tree
		}
		return ""
	}
	if cp := c.state.Checkpoints[name]; cp != nil && cp.Snapshot != nil {
		return cp.Snapshot.Tree
	}
	return ""
}

// IsRecovery reports whether a retained ref is a recovery snapshot (rN),
// as opposed to a turn snapshot or an apply's capture.
func (r Retained) IsRecovery() bool { return r.Kind == RetainedRecovery }

func retainedKind(name string) string {
	if isRecoveryName(name) || isScratchName(name) {
		return RetainedRecovery
	}
	return RetainedTurn
}

// sortRetained puts recovery snapshots first (newest first), then the
// turn snapshots in turn order.
func sortRetained(out []Retained) {
	rank := func(r Retained) (int, int) {
		switch {
		case isRecoveryName(r.Name):
			return 0, -recoveryNumber(r.Name)
		case isScratchName(r.Name):
			return 1, 0
		}
		n, _ := strconv.Atoi(strings.TrimPrefix(strings.TrimPrefix(r.Name, "end-"), "cp"))
		end := 0
		if strings.HasPrefix(r.Name, "end-") {
			end = 1
		}
		return 2, 2*n + end
	}
	sort.SliceStable(out, func(i, j int) bool {
		ki, ni := rank(out[i])
		kj, nj := rank(out[j])
		if ki != kj {
			return ki < kj
		}
		if ni != nj {
			return ni < nj
		}
		return out[i].Name < out[j].Name
	})
}

func recoveryNumber(name string) int {
	n := 0
	for _, ch := range strings.TrimPrefix(name, "r") {
		n = n*10 + int(ch-'0')
	}
	return n
}
