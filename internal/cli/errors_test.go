package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/catalog"
	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/cli/cmdutil"
	"github.com/yolop-dev/yolop/internal/command"
	"github.com/yolop-dev/yolop/internal/config"
	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/land"
	"github.com/yolop-dev/yolop/internal/session"
)

var update = flag.Bool("update", false, "rewrite testdata/error-codes.txt from the table")

// failOut is what the edge printed for one failure.
type failOut struct {
	exit           int
	stdout, stderr string
}

func failAt(e edge, err error) failOut {
	var out, errOut bytes.Buffer
	e.io = &cmdutil.IOStreams{Out: &out, ErrOut: &errOut}
	if e.path == "" {
		e.path = "yolop"
	}
	exit := e.fail(err)
	return failOut{exit, out.String(), errOut.String()}
}

// jsonError decodes the one error object of a failed invocation.
func jsonError(t *testing.T, s string) (code, msg string) {
	t.Helper()
	if strings.Count(s, "\n") != 1 || !strings.HasSuffix(s, "\n") {
		t.Fatalf("stdout %q: want exactly one line", s)
	}
	var obj map[string]string
	if err := json.Unmarshal([]byte(s), &obj); err != nil {
		t.Fatalf("stdout %q: %v", s, err)
	}
	if len(obj) != 2 {
		t.Fatalf("stdout %q: want only code and error", s)
	}
	return obj["code"], obj["error"]
}

// TestErrorCodes enumerates every code the command line can report, with
// its exit status, from fault's table, and reports an error carrying each
// through the edge in JSON and in text. testdata/error-codes.txt is the
// list as a contract: a code renamed or an exit status changed shows
// there (go test -run TestErrorCodes -update rewrites it after an
// addition).
func TestErrorCodes(t *testing.T) {
	t.Parallel()
	var list strings.Builder
	seen := map[fault.Code]bool{}
	for _, e := range fault.Table() {
		fmt.Fprintf(&list, "%-24s exit %-3d %s\n", e.Code, e.Exit, e.Means)
		if seen[e.Code] {
			t.Errorf("code %s is twice in the table", e.Code)
		}
		seen[e.Code] = true
		if !regexp.MustCompile(`^[a-z]+(_[a-z]+)*$`).MatchString(string(e.Code)) {
			t.Errorf("code %q: want lowercase words joined by _", e.Code)
		}
		switch e.Exit {
		case fault.ExitFailure, fault.ExitUsage, fault.ExitInterrupted:
		default:
			t.Errorf("code %s exits %d: want 1, 2 or 130", e.Code, e.Exit)
		}
		if e.Code.Exit() != e.Exit || !e.Code.Known() {
			t.Errorf("code %s: Exit() = %d, Known() = %v", e.Code, e.Code.Exit(), e.Code.Known())
		}

		err := fmt.Errorf("open s_1: %w", fault.New(e.Code, "test: what went wrong"))
		for _, final := range []bool{false, true} {
			var ferr error = err
			if final {
				ferr = cmdutil.Told(err)
			}
			got := failAt(edge{json: true}, ferr)
			code, msg := jsonError(t, got.stdout)
			if got.exit != e.Exit || code != string(e.Code) || msg != "open s_1: what went wrong" || got.stderr != "" {
				t.Errorf("JSON %s (told %v): exit %d, code %q, error %q, stderr %q; want exit %d", e.Code, final, got.exit, code, msg, got.stderr, e.Exit)
			}
			got = failAt(edge{}, ferr)
			if got.exit != e.Exit || got.stdout != "" || !strings.HasPrefix(got.stderr, "yolop: open s_1: what went wrong\n") {
				t.Errorf("text %s (told %v): exit %d, stdout %q, stderr %q; want exit %d", e.Code, final, got.exit, got.stdout, got.stderr, e.Exit)
			}
		}
	}
	golden := filepath.Join("testdata", "error-codes.txt")
	if *update {
		if err := os.WriteFile(golden, []byte(list.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if list.String() != string(want) {
		t.Errorf("the table differs from %s (run with -update after adding a code; never rename one):\n%s", golden, list.String())
	}
}

// TestErrorsCarryTheirCodes: the errors of the layers below report the
// codes the command line has always given them.
func TestErrorsCarryTheirCodes(t *testing.T) {
	t.Parallel()
	wrap := func(err error) error { return fmt.Errorf("session s_1: %w", err) }
	cases := []struct {
		err  error
		want fault.Code
	}{
		{errorsNew("plain"), fault.Error},
		{&command.UsageError{Msg: "bad flag"}, fault.Usage},
		{wrap(&checkpoint.Error{Code: checkpoint.CodeStalePreview, Msg: "stale"}), fault.StalePreview},
		{&checkpoint.Error{Code: checkpoint.CodeReadOnly, Msg: "read-only", Err: session.ErrLocked}, fault.ReadOnly},
		{&checkpoint.Error{Code: string(fault.CheckoutInUse), Msg: "in use"}, fault.CheckoutInUse},
		{&checkpoint.Error{Code: string(fault.CheckoutBusy), Msg: "busy"}, fault.CheckoutBusy},
		{wrap(git.ErrConfigChanged), fault.WorktreeConfigChanged},
		{wrap(land.ErrConflict), fault.Conflict},
		{wrap(land.ErrEditedSince), fault.EditedSince},
		{wrap(land.ErrLocked), fault.Locked},
		{wrap(session.ErrLocked), fault.Locked},
		{wrap(land.ErrNoWorkspace), fault.NoWorkspace},
		{wrap(land.ErrNothingToUndo), fault.NothingToUndo},
		{wrap(land.ErrNothingToCommit), fault.NothingToCommit},
		{wrap(land.ErrNoIdentity), fault.NoIdentity},
		{wrap(land.ErrCheckoutBusy), fault.CheckoutBusy},
		{wrap(land.ErrOtherRepo), fault.OtherRepo},
		{wrap(land.ErrBranchMoved), fault.BranchMoved},
		{wrap(land.ErrInTheWay), fault.InTheWay},
		{wrap(land.ErrInPlace), fault.InPlace},
		{wrap(land.ErrSessionWorktree), fault.SessionWorktree},
		{wrap(land.ErrBadCheckpoint), fault.UnknownCheckpoint},
		{wrap(land.ErrStalePreview), fault.StalePreview},
		{wrap(&land.HookError{Output: "no"}), fault.HookFailed},
		{wrap(session.ErrNotFound), fault.UnknownSession},
		{wrap(&session.NotFoundError{ID: "s_1", Dir: "/d"}), fault.UnknownSession},
		{wrap(catalog.ErrNoSession), fault.NoSession},
		{wrap(config.ErrDataDirInRepo), fault.DataDirInRepo},
		{wrap(agent.ErrPromptTooLarge), fault.PromptTooLarge},
		{&catalog.BadQueryError{Err: errorsNew("empty query")}, fault.Usage},
	}
	for _, c := range cases {
		if got := fault.Of(c.err); got != c.want {
			t.Errorf("fault.Of(%q) = %q, want %q", c.err, got, c.want)
		}
		if !c.want.Known() {
			t.Errorf("%q is not in the table", c.want)
		}
	}
}

func errorsNew(s string) error { return fmt.Errorf("%s", s) }

// TestEdgeRules: how the edge reads a failure beside its code.
func TestEdgeRules(t *testing.T) {
	t.Parallel()
	usage := &command.UsageError{Msg: "unknown flag: --nope"}
	conflict := fmt.Errorf("apply: %w", land.ErrConflict)

	// A flag error: exit 2, a usage hint naming the command; JSON when the
	// arguments ask for it though the flags did not parse.
	got := failAt(edge{path: "yolop sessions"}, usage)
	if got.exit != 2 || got.stderr != "yolop: unknown flag: --nope\nRun 'yolop sessions --help' for usage.\n" {
		t.Errorf("flag error: %+v", got)
	}
	got = failAt(edge{args: []string{"--output-format", "json", "--nope"}}, usage)
	if code, _ := jsonError(t, got.stdout); got.exit != 2 || code != "usage" {
		t.Errorf("flag error asking for JSON: %+v", got)
	}
	got = failAt(edge{args: []string{"--", "--output-format=json"}}, usage)
	if got.exit != 2 || got.stdout != "" {
		t.Errorf("JSON asked after --: %+v", got)
	}
	// A command's own usage failure: no hint.
	got = failAt(edge{}, cmdutil.Told(cmdutil.Usagef("stdin is not a terminal")))
	if got.exit != 2 || got.stderr != "yolop: stdin is not a terminal\n" {
		t.Errorf("reported usage failure: %+v", got)
	}
	// Interrupted: a raw error becomes interrupted, a command's own
	// failure keeps its code, a usage error stays one.
	got = failAt(edge{json: true, interrupted: true}, conflict)
	if code, _ := jsonError(t, got.stdout); got.exit != 130 || code != "interrupted" {
		t.Errorf("interrupted: %+v", got)
	}
	got = failAt(edge{json: true, interrupted: true}, cmdutil.Told(conflict))
	if code, msg := jsonError(t, got.stdout); got.exit != 1 || code != "conflict" || msg != "apply: conflicts" {
		t.Errorf("reported while interrupted: %+v", got)
	}
	got = failAt(edge{interrupted: true}, usage)
	if got.exit != 2 {
		t.Errorf("usage while interrupted: %+v", got)
	}
	// Already reported: only the exit status.
	for _, c := range fault.Table() {
		got = failAt(edge{json: true}, cmdutil.ShownAs(c.Code))
		if got.exit != c.Exit || got.stdout != "" || got.stderr != "" {
			t.Errorf("shown %s: %+v", c.Code, got)
		}
	}
	// The reader went away.
	got = failAt(edge{json: true}, fmt.Errorf("write: %w", syscall.EPIPE))
	if got.exit != 141 || got.stdout != "" || got.stderr != "" {
		t.Errorf("EPIPE: %+v", got)
	}
}
