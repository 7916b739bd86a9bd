package checkpoint_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/config"
	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// TestInPlaceRestoresNeverUndoTheUser is the property test of restores in
// place, on a real repository through the product's constructor: random
// sequences of agent turns (shell commands, the write and delete tools)
// and user edits between them (text lines, binary files, renames,
// deletions, new files, symlinks, exec bits), then restores to random
// checkpoints of the active branch (both and workspace modes, rewind and
// undo) and redo. After every restore:
//
//   - a path the user changed since the target holds the user's bytes, or
//     (text) a clean merge holding every line the user wrote;
//   - a path only the undone agent turns changed holds the target's bytes;
//   - any other path is untouched.
//
// After a redo with no user edit since the restore the files are exactly
// as before it; one the user edited since keeps the user's lines.
//
// Seeded and bounded: the same seeds run the same sequences every time.
func TestInPlaceRestoresNeverUndoTheUser(t *testing.T) {
	// Seeds 16 and 24 reach a revert past an agent turn that overwrote the
	// user's file (snapshot.Revert once left the agent's bytes there).
	// Seeds 1 to 60 pass; these six keep the run short.
	seeds := []uint64{16, 24, 1, 2, 3, 4}
	if testing.Short() {
		seeds = seeds[:3]
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			t.Parallel()
			newProp(t, seed).run(14)
		})
	}
}

// fval is one path's state: a regular file (exec or not), a symlink, or
// absent (the zero value).
type fval struct {
	kind string // "", "file", "exec", "link"
	data string // content, or a symlink's target
}

func (v fval) absent() bool { return v.kind == "" }
func (v fval) text() bool {
	return (v.kind == "file" || v.kind == "exec") && !strings.Contains(v.data, "\x00")
}
func (v fval) String() string {
	if v.absent() {
		return "absent"
	}
	return fmt.Sprintf("%s %q", v.kind, v.data)
}

type files map[string]fval

// turnRec is what the harness saw around one agent turn.
type turnRec struct {
	start, end files
	at         int // the clock when the turn started
}

type prop struct {
	t    *testing.T
	r    *rig
	rnd  *rand.Rand
	ctx  context.Context
	log  []string // what happened, for a failure's report
	now  int      // a clock ticking at every turn, edit and restore
	turn map[string]*turnRec
	// userAt is when the user last changed a path, userVal what they
	// left there; restoredAt is when a restore last changed it.
	userAt     map[string]int
	userVal    files
	restoredAt map[string]int
	// userDeleted is what the user's last deletion of a path removed;
	// userMade holds every value the user wrote.
	userDeleted files
	userMade    map[fval]bool
	seq         int // numbers user-written lines and agent content
}

// The paths both sides work on: few, so that they collide.
var propText = []string{"t0.txt", "t1.txt", "t2.txt", "d/t3.txt"}
var propBin = []string{"b0.bin", "b1.bin"}
var propAll = append(append(append([]string(nil), propText...), propBin...), "l0", "new.txt", "moved.txt")

func newProp(t *testing.T, seed uint64) *prop {
	repo := gittest.NewRepo(t)
	// Each file's lines name it, so that a rename never makes two paths
	// hold the same bytes by chance.
	for _, p := range propText {
		gittest.WriteFile(t, repo, p, lines(strings.NewReplacer("/", "", ".txt", "").Replace(p), 8))
	}
	gittest.Commit(t, repo, "base")
	r := newRig(t, rigOpts{repo: repo, workspace: config.WorkspaceInPlace})
	if r.eng == nil || r.root != repo {
		t.Fatalf("not in place: engine %v, root %s (%s)", r.eng != nil, r.root, r.noWS)
	}
	return &prop{t: t, r: r, rnd: rand.New(rand.NewPCG(seed, seed*7919)), ctx: context.Background(),
		turn: map[string]*turnRec{}, userAt: map[string]int{}, userVal: files{}, restoredAt: map[string]int{}, userDeleted: files{}, userMade: map[fval]bool{}}
}

// lines is n lines "<prefix>-<i>".
func lines(prefix string, n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%s-%d\n", prefix, i)
	}
	return b.String()
}

func (p *prop) fail(format string, args ...any) {
	p.t.Helper()
	p.t.Fatalf("%s\nhistory:\n  %s", fmt.Sprintf(format, args...), strings.Join(p.log, "\n  "))
}

// read is the checkout's files (without .git).
func (p *prop) read() files {
	p.t.Helper()
	out := files{}
	for rel, g := range gittest.Manifest(p.t, p.r.root, gittest.ManifestOptions{}) {
		switch {
		case g.Type == fs.ModeSymlink:
			out[rel] = fval{kind: "link", data: g.Link}
		case g.Exec():
			out[rel] = fval{kind: "exec", data: string(g.Data)}
		default:
			out[rel] = fval{kind: "file", data: string(g.Data)}
		}
	}
	return out
}

func (p *prop) run(ops int) {
	p.agentTurn()
	for i := 0; i < ops; i++ {
		switch n := p.rnd.IntN(10); {
		case n < 4:
			p.agentTurn()
		case n < 7:
			p.userEdits()
		default:
			p.restoreAndMaybeRedo()
		}
	}
	p.restoreAndMaybeRedo()
}

func (p *prop) pick(list []string) string { return list[p.rnd.IntN(len(list))] }

// agentTurn runs one turn of one to three random actions.
func (p *prop) agentTurn() {
	p.t.Helper()
	p.seq++
	tag := fmt.Sprintf("a%d", p.seq)
	var prompt []string
	for n := 1 + p.rnd.IntN(3); n > 0; n-- {
		switch p.rnd.IntN(8) {
		case 0: // replace one line of a text file
			f := p.pick(propText)
			line := 1 + p.rnd.IntN(8)
			prompt = append(prompt, fmt.Sprintf("$ test -f %s && sed -i 's/^[a-z0-9]*-%d$/%s-%d/' %s || true", f, line, tag, line, f))
		case 1: // rewrite a text file with the write tool
			prompt = append(prompt, "write "+p.pick(propText)+"\n"+strings.TrimSuffix(lines(tag, 8), "\n")+"\nEOF")
		case 2: // a binary file
			prompt = append(prompt, fmt.Sprintf("$ printf '\\000%s\\377' > %s", tag, p.pick(propBin)))
		case 3: // delete with the tool or the shell
			if p.rnd.IntN(2) == 0 {
				prompt = append(prompt, "rm "+p.pick(propAll))
			} else {
				prompt = append(prompt, "$ rm -f "+p.pick(propAll))
			}
		case 4: // rename
			f := p.pick(propText)
			prompt = append(prompt, fmt.Sprintf("$ test -f %s && mv %s moved.txt || true", f, f))
		case 5: // a symlink
			prompt = append(prompt, fmt.Sprintf("$ ln -sfn %s l0", p.pick(propText)))
		case 6: // exec bit
			prompt = append(prompt, fmt.Sprintf("$ chmod %s %s 2>/dev/null || true", p.pick([]string{"+x", "-x"}), p.pick(propText)))
		default: // a new file
			prompt = append(prompt, fmt.Sprintf("$ mkdir -p d && printf '%s\\n' >> %s", tag, p.pick([]string{"new.txt", "d/t3.txt"})))
		}
	}
	// The rm tool fails on a missing file, which ends nothing: the turn
	// completes with the error in the tool result.
	start := p.read()
	p.now++
	at := p.now
	out := p.r.turn(strings.Join(prompt, "\n"))
	end := p.read()
	p.turn[out.ID] = &turnRec{start: start, end: end, at: at}
	p.now++
	p.log = append(p.log, fmt.Sprintf("t=%d turn %s: %q changed %v", at, out.ID, strings.Join(prompt, " / "), changed(start, end)))
}

// userEdits changes one to three paths the way a user's editor or shell
// would, between turns.
func (p *prop) userEdits() {
	p.t.Helper()
	root := p.r.root
	for n := 1 + p.rnd.IntN(3); n > 0; n-- {
		p.seq++
		tag := fmt.Sprintf("u%d", p.seq)
		cur := p.read()
		var touched []string
		what := ""
		switch p.rnd.IntN(7) {
		case 0, 1: // edit one line of a text file
			f := p.pick(propText)
			v := cur[f]
			if !v.text() {
				continue
			}
			ls := strings.SplitAfter(v.data, "\n")
			i := p.rnd.IntN(len(ls))
			if ls[i] == "" {
				continue
			}
			ls[i] = tag + "\n"
			p.writeFile(f, strings.Join(ls, ""), v.kind == "exec")
			touched, what = []string{f}, "edit a line of "+f
		case 2: // append a line
			f := p.pick(propText)
			v := cur[f]
			if !v.absent() && !v.text() {
				continue
			}
			p.writeFile(f, v.data+tag+"\n", v.kind == "exec")
			touched, what = []string{f}, "append to "+f
		case 3: // a binary file
			f := p.pick(propBin)
			p.writeFile(f, "\x00"+tag+"\xfe", false)
			touched, what = []string{f}, "write binary "+f
		case 4: // delete
			f := p.pick(propAll)
			if cur[f].absent() {
				continue
			}
			if err := os.Remove(filepath.Join(root, f)); err != nil {
				p.t.Fatal(err)
			}
			touched, what = []string{f}, "delete "+f
		case 5: // rename onto another name
			from, to := p.pick(propText), p.pick([]string{"moved.txt", "new.txt", "t0.txt"})
			if from == to || cur[from].absent() {
				continue
			}
			if err := os.Rename(filepath.Join(root, from), filepath.Join(root, to)); err != nil {
				p.t.Fatal(err)
			}
			touched, what = []string{from, to}, "rename "+from+" to "+to
		default: // a new file of the user's own
			f := fmt.Sprintf("mine%d.txt", p.seq)
			p.writeFile(f, tag+"\n", false)
			touched, what = []string{f}, "create "+f
		}
		p.now++
		after := p.read()
		for _, f := range touched {
			p.userAt[f], p.userVal[f] = p.now, after[f]
			if after[f].absent() {
				p.userDeleted[f] = cur[f]
			} else if after[f] != cur[f] {
				p.userMade[after[f]] = true
			}
		}
		p.log = append(p.log, fmt.Sprintf("t=%d user: %s", p.now, what))
	}
	p.now++
}

func (p *prop) writeFile(rel, content string, exec bool) {
	p.t.Helper()
	path := filepath.Join(p.r.root, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		p.t.Fatal(err)
	}
	// An editor's save: the path may be a symlink the agent made; the user
	// replaces it with a file.
	if st, err := os.Lstat(path); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		if err := os.Remove(path); err != nil {
			p.t.Fatal(err)
		}
	}
	mode := fs.FileMode(0o644)
	if exec {
		mode = 0o755
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		p.t.Fatal(err)
	}
}

// chain is the active branch, oldest first.
func (p *prop) chain() []string {
	p.t.Helper()
	rows, err := p.r.ctl.List(p.ctx, false)
	if err != nil {
		p.t.Fatal(err)
	}
	var ids []string
	for _, row := range rows {
		ids = append(ids, row.ID)
	}
	slices.Reverse(ids)
	return ids
}

func (p *prop) restoreAndMaybeRedo() {
	p.t.Helper()
	chain := p.chain()
	if len(chain) == 0 {
		return
	}
	i := p.rnd.IntN(len(chain))
	target := chain[i]
	req := checkpoint.Request{Action: checkpoint.ActionRewind, Target: target, Mode: checkpoint.ModeBoth}
	switch p.rnd.IntN(4) {
	case 0:
		req.Mode = checkpoint.ModeWorkspace
	case 1:
		req = checkpoint.Request{Action: checkpoint.ActionUndo}
		i, target = len(chain)-1, chain[len(chain)-1]
	}
	before := p.read()
	p.now++
	at := p.now
	res := p.r.restore(req)
	after := p.read()
	p.now++
	p.log = append(p.log, fmt.Sprintf("t=%d %s %s %s: changed %v; outcomes %s", at, req.Action, target, req.Mode, changed(before, after), outcomes(res)))
	users := p.checkRestore(target, chain[i:], before, after)
	p.restored(before, after, at, users)

	if p.rnd.IntN(2) == 0 {
		if req.Mode == checkpoint.ModeWorkspace {
			p.alignConversation(target)
		}
		return
	}
	// Redo, with or without the user editing first.
	edited := p.rnd.IntN(2) == 0
	since := p.now
	if edited {
		p.userEdits()
	}
	cur := p.read()
	p.now++
	at = p.now
	res = p.r.restore(checkpoint.Request{Action: checkpoint.ActionRedo})
	redone := p.read()
	p.now++
	p.log = append(p.log, fmt.Sprintf("t=%d redo: changed %v; outcomes %s", at, changed(cur, redone), outcomes(res)))
	users = map[string]bool{}
	for _, f := range union(before, redone, cur) {
		if p.userAt[f] > since {
			p.requireUsers(f, redone[f], "after the redo")
			users[f] = true
			continue
		}
		if redone[f] != before[f] {
			p.fail("redo: %s is %v, want %v as before the restore", f, redone[f], before[f])
		}
	}
	p.restored(cur, redone, at, users)
}

// restored notes the paths a restore at time at changed. What it left at
// a path in users was checked to be the user's (the same bytes, or their
// lines merged): later restores must keep that.
func (p *prop) restored(before, after files, at int, users map[string]bool) {
	for _, f := range changed(before, after) {
		p.restoredAt[f] = at
		if users[f] {
			p.userVal[f] = after[f]
		}
	}
}

// alignConversation follows a workspace-only restore to target that stays
// with a conversation-only one, so that the active branch's turns are
// again the only changes the files went through: this oracle attributes
// paths to turns only, while a later restore in place also takes back the
// workspace-only restores made since (TestInPlaceRewindPastAWorkspaceRestore
// covers that).
func (p *prop) alignConversation(target string) {
	p.t.Helper()
	before := p.read()
	p.r.restore(checkpoint.Request{Action: checkpoint.ActionRewind, Target: target, Mode: checkpoint.ModeConversation})
	if d := changed(before, p.read()); len(d) > 0 {
		p.fail("a conversation-only restore changed %v", d)
	}
	p.log = append(p.log, fmt.Sprintf("t=%d rewind %s conversation", p.now, target))
	p.now++
}

// checkRestore checks the property for a restore to target that undid the
// turns undone (oldest first). It returns the paths checked as the user's.
func (p *prop) checkRestore(target string, undone []string, before, after files) map[string]bool {
	p.t.Helper()
	rec := p.turn[target]
	if rec == nil {
		p.fail("no record of turn %s", target)
	}
	agent := map[string]bool{}
	for _, id := range undone {
		tr := p.turn[id]
		if tr == nil {
			p.fail("no record of turn %s", id)
		}
		for _, f := range changed(tr.start, tr.end) {
			agent[f] = true
		}
	}
	users := map[string]bool{}
	for _, f := range union(before, after, rec.start) {
		switch {
		case p.userAt[f] > rec.at && p.userVal[f].absent() && after[f] == rec.start[f] && (p.agentMade(undone, f, p.userDeleted[f]) || p.userMade[p.userDeleted[f]]):
			// The user deleted what an undone turn made (taking it back by
			// hand), or a file of their own made since: the agent's
			// deletion or replacement of the target's file is undone.
			users[f] = true
		case p.userAt[f] > rec.at && p.agentLeft(undone, f, p.userVal[f]):
			// The user left exactly the bytes an undone turn left there:
			// no one can tell the two apart, and the path counts as the
			// agent's.
			users[f] = true
		case p.userAt[f] > rec.at:
			p.requireUsers(f, after[f], "after restoring "+target)
			users[f] = true
		case agent[f] && p.restoredAt[f] > rec.at:
			// A restore since the target changed the path too: what it
			// wrote is neither the user's nor an undone turn's, so only
			// the user's edits are promised here (none were made).
		case agent[f]:
			if after[f] != rec.start[f] {
				p.fail("restore to %s: %s, changed only by the agent since, is %v, want %v as before %s", target, f, after[f], rec.start[f], target)
			}
		default:
			if after[f] != before[f] {
				p.fail("restore to %s: %s, which no undone turn changed, went from %v to %v", target, f, before[f], after[f])
			}
		}
	}
	return users
}

// agentLeft reports whether v is what one of the turns left at f.
func (p *prop) agentLeft(turns []string, f string, v fval) bool {
	for _, id := range turns {
		if tr := p.turn[id]; tr != nil && tr.end[f] == v {
			return true
		}
	}
	return false
}

// agentMade reports whether v is what one of the turns left at f.
func (p *prop) agentMade(turns []string, f string, v fval) bool {
	for _, id := range turns {
		if tr := p.turn[id]; tr != nil && tr.end[f] == v && tr.start[f] != v {
			return true
		}
	}
	return false
}

// requireUsers checks that path f holds what the user last left there: the
// same bytes, or for text every line the user wrote.
func (p *prop) requireUsers(f string, got fval, what string) {
	p.t.Helper()
	want := p.userVal[f]
	if got == want {
		return
	}
	if want.text() && got.text() && !strings.Contains(got.data, "<<<<<<<") {
		missing := ""
		for _, l := range strings.Split(want.data, "\n") {
			if strings.HasPrefix(l, "u") && !slices.Contains(strings.Split(got.data, "\n"), l) {
				missing = l
			}
		}
		if missing == "" {
			return
		}
		p.fail("%s: %s lost the user's line %q: %v, the user left %v", what, f, missing, got, want)
	}
	p.fail("%s: %s is %v, but the user left %v", what, f, got, want)
}

func changed(a, b files) []string {
	var out []string
	for _, f := range union(a, b) {
		if a[f] != b[f] {
			out = append(out, f)
		}
	}
	return out
}

func union(ms ...files) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range ms {
		for f := range m {
			if !seen[f] {
				seen[f] = true
				out = append(out, f)
			}
		}
	}
	sort.Strings(out)
	return out
}

func outcomes(res *checkpoint.Restored) string {
	var b bytes.Buffer
	for _, pc := range res.Paths {
		if pc.Outcome != "restored" {
			fmt.Fprintf(&b, "%s=%s(%s) ", pc.Path, pc.Outcome, pc.Why)
		}
	}
	return strings.TrimSpace(b.String())
}
