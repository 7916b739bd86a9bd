package sandbox

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/yolop-dev/yolop/internal/testenv"
)

// TestSealedPreparationAsAnUnprivilegedUser: the detached preparation of a
// spare worktree is sealed like every yolop process (its /proc files then
// belong to root) and must still give its session's autogroup nice 19,
// which it can only do through the file it opened before sealing: as an
// unprivileged user (uid 65534 when the test runs as root) the first
// turn's preparation readies its spare and records no failure.
func TestSealedPreparationAsAnUnprivilegedUser(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/autogroup"); err != nil {
		t.Logf("no autogroups in this kernel (%v): the preparation has none to lower", err)
	}
	var e *env
	if os.Getuid() == 0 {
		e = newEnvAs(t, 65534, 65534)
	} else {
		e = newEnv(t, "")
	}
	e.extra = append(e.extra, "YOLOP_WORKTREE_SPARES=1")
	e.turn(nil, "true")
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if failed, _ := filepath.Glob(filepath.Join(e.data, "worktrees", "*", ".prepare-failed")); len(failed) > 0 {
			b, err := os.ReadFile(failed[0])
			t.Fatalf("the preparation failed: %s %v", b, err)
		}
		ready, _ := filepath.Glob(filepath.Join(e.data, "worktrees", "*", ".spare-1"))
		if len(ready) > 0 && !testenv.Preparing(e.data) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no spare after a minute (ready: %v)", ready)
		}
	}
}
