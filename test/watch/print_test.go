package watch

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// printer runs `yolop -p` processes of one session with a git on PATH
// that logs every command it runs, one file per process.
type printer struct {
	t       *testing.T
	dir     string
	env     []string
	sid     string
	gitLog  string
	lastLog string
}

func newPrinter(t *testing.T, dir string, extraEnv []string, args ...string) *printer {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	wrap := t.TempDir()
	p := &printer{t: t, dir: dir, gitLog: filepath.Join(wrap, "log")}
	script := "#!/bin/sh\nprintf '%s\\n' \"$*\" >> \"$YOLOP_TEST_GIT_LOG\"\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(wrap, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	p.env = append(append([]string(nil), baseEnv...), "YOLOP_DATA_DIR="+t.TempDir())
	for i, kv := range p.env {
		if strings.HasPrefix(kv, "PATH=") {
			p.env[i] = "PATH=" + wrap + ":" + strings.TrimPrefix(kv, "PATH=")
		}
	}
	p.env = append(p.env, extraEnv...)
	var m struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal(p.run(append(args, "-p", "hello")...), &m); err != nil || m.SessionID == "" {
		t.Fatalf("no session made: %v", err)
	}
	p.sid = m.SessionID
	return p
}

// run runs one yolop process and returns its JSON line; the git commands
// it ran are in p.lastLog.
func (p *printer) run(args ...string) []byte {
	p.t.Helper()
	if err := os.Remove(p.gitLog); err != nil && !os.IsNotExist(err) {
		p.t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"--provider", "sim", "--output-format", "json"}, args...)...)
	cmd.Dir = p.dir
	cmd.Env = append(append([]string(nil), p.env...), "YOLOP_TEST_GIT_LOG="+p.gitLog)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		p.t.Fatalf("yolop %q: %v\n%s\n%s", args, err, out, stderr)
	}
	b, _ := os.ReadFile(p.gitLog)
	p.lastLog = string(b)
	return out
}

// statuses counts the worktree statuses the last process ran: one per
// walked capture.
func (p *printer) statuses() int {
	return strings.Count(p.lastLog, "status --porcelain=v1 -z --untracked-files=all")
}

func (p *printer) prompt(text string) map[string]any {
	p.t.Helper()
	var m map[string]any
	if err := json.Unmarshal(p.run("--session", p.sid, "-p", text), &m); err != nil {
		p.t.Fatal(err)
	}
	return m
}

// files lists every entry under root outside .git: kind, content or link
// target (modes lists the permissions).
func files(t *testing.T, root string) string {
	t.Helper()
	return sh(t, root, `find . -path ./.git -prune -o \( -type f -exec sha1sum {} \; \) -o \( -type l -printf 'link %p -> %l\n' \) -o \( -type d -printf 'dir %p\n' \) | sort`)
}

// TestPrintWatchedCapturesAreExact: print-mode turns, each its own
// process, in a worktree session, in place and in a folder outside git.
// The turn's first capture walks and arms the watcher; its end capture
// (after a command that renames a directory, deletes, chmods, writes a
// binary file and a symlink) is watched, runs no status, and is the tree
// git gives; a rewind then restores the files exactly, and the turn after
// it is watched again. With YOLOP_WATCH_BUDGET=0 both captures walk.
func TestPrintWatchedCapturesAreExact(t *testing.T) {
	t.Parallel()
	for _, where := range []string{"worktree", "in-place", "folder"} {
		for _, budget := range []string{"", "0"} {
			name := where + "/watched"
			if budget != "" {
				name = where + "/budget=" + budget
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				var repo string
				var args, env []string
				switch where {
				case "folder":
					repo = t.TempDir()
					sh(t, repo, `mkdir -p src/lib docs && printf 'a\n' > src/a.go && printf 'b\n' > src/lib/b.go && printf 'r\n' > docs/r.md`)
				default:
					repo = newRepo(t)
				}
				if where == "in-place" {
					args = append(args, "--in-place")
				}
				if budget != "" {
					env = append(env, "YOLOP_WATCH_BUDGET="+budget)
				}
				p := newPrinter(t, repo, env, args...)
				root := repo
				if where == "worktree" {
					root = sessionWorktree(t, repo)
				}
				p.prompt(`$ mkdir -p pkg/x && printf 'f\n' > pkg/x/f.txt && printf '#!/bin/sh\n' > run.sh && ln -s README.md link && printf 'bin\000v1' > data.bin && chmod 600 src/a.go`)
				// The next turn's start capture comes later than the arming
				// walk's slack after these changes (it would otherwise count
				// the top directory as changed as it began, and walk again).
				time.Sleep(300 * time.Millisecond)
				before, beforeModes, pre := files(t, root), modes(t, root), ""
				if where != "folder" {
					pre = gitView(t, root)
				}
				res := p.prompt(`$ mv src/lib src/lib2 && rm docs/r.md && chmod +x run.sh && chmod 640 pkg/x/f.txt && printf 'bin\000\001v2\377' > data.bin && ln -s src/a.go pkg/x/link2 && printf 'new\n' > pkg/new.txt`)
				cp, _ := res["checkpoint_id"].(string)
				if cp == "" {
					t.Fatalf("no checkpoint: %v", res)
				}
				want := 1
				if budget == "0" {
					want = 2
				}
				if n := p.statuses(); n != want {
					t.Fatalf("the turn ran %d worktree statuses, want %d (one per walked capture):\n%s", n, want, p.lastLog)
				}
				after := files(t, root)
				if where != "folder" {
					post := gitView(t, root)
					got := refs(t, repo, p.sid)
					if got[cp] != pre || got["end-"+cp] != post {
						t.Fatalf("%s is %s (git gives %s), end-%s is %s (git gives %s)", cp, got[cp], pre, cp, got["end-"+cp], post)
					}
				}
				// The rewind of that turn: its preview's recovery capture
				// walks; the files come back exactly.
				preview := p.prompt("/rewind " + cp + " both")
				confirm, _ := preview["confirm"].(string)
				_, cmd, ok := strings.Cut(confirm, "-p '")
				if !ok {
					t.Fatalf("no confirm command in the preview: %v", preview)
				}
				p.prompt(strings.TrimSuffix(cmd, "'"))
				if got := files(t, root); got != before {
					t.Fatalf("after /rewind %s the files are\n%s\nthe checkpoint's\n%s\n(the turn left\n%s)", cp, got, before, after)
				}
				if bad := permsDiffer(modes(t, root), beforeModes); bad != "" {
					t.Fatalf("after /rewind %s: %s", cp, bad)
				}
				time.Sleep(300 * time.Millisecond)
				res = p.prompt(`$ mv pkg pkg2 && rm run.sh && printf 'again\n' > pkg2/again.txt`)
				if n := p.statuses(); n != want {
					t.Fatalf("the turn after the rewind ran %d worktree statuses, want %d:\n%s", n, want, p.lastLog)
				}
				if where != "folder" {
					cp2, _ := res["checkpoint_id"].(string)
					if got, post := refs(t, repo, p.sid)["end-"+cp2], gitView(t, root); got != post {
						t.Fatalf("end-%s is %s, git gives %s", cp2, got, post)
					}
				}
			})
		}
	}
}
