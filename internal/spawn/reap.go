package spawn

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// readLedger returns the ledger's start records that have no end record,
// in order. A torn or unreadable line is skipped: the environment marker
// still finds the process.
func readLedger(path string) ([]Record, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read process ledger %s: %w", path, err)
	}
	type key struct {
		pid   int
		start uint64
		boot  string
	}
	var order []key
	open := map[key]Record{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var r Record
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			continue
		}
		k := key{r.PID, r.Start, r.Boot}
		switch r.Op {
		case "start":
			if _, ok := open[k]; !ok {
				order = append(order, k)
			}
			open[k] = r
		case "end":
			delete(open, k)
		}
	}
	var out []Record
	for _, k := range order {
		if r, ok := open[k]; ok {
			out = append(out, r)
		}
	}
	return out, nil
}

// rewriteLedger replaces the ledger with start records for keep (the
// processes Reap could not end), or removes it when keep is empty.
func rewriteLedger(path string, keep []Record) error {
	if len(keep) == 0 {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("remove process ledger: %w", err)
		}
		return nil
	}
	var b bytes.Buffer
	for _, r := range keep {
		r.Op = "start"
		line, _ := json.Marshal(r)
		b.Write(append(line, '\n'))
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, b.Bytes(), 0o600); err != nil {
		return fmt.Errorf("write process ledger: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("replace process ledger: %w", err)
	}
	return nil
}

// Reaped is what Reap did.
type Reaped struct {
	Ended []Record // processes it killed
	Left  []Record // processes still alive afterwards (could not be killed)
}

// Reap ends every process that an earlier owner of the session left
// behind: the ledger's recorded processes that still run (same pid, start
// time and boot), their descendants, and every process of this user whose
// environment names the session. Call it only while holding the session's
// lock, before any tool of this process runs: it would kill those too.
func Reap(ledgerPath, session string) (Reaped, error) {
	recs, err := readLedger(ledgerPath)
	if err != nil {
		return Reaped{}, err
	}
	res, err := reap(recs, session)
	if err != nil {
		return res, err
	}
	sort.Slice(res.Ended, func(i, j int) bool { return res.Ended[i].PID < res.Ended[j].PID })
	return res, rewriteLedger(ledgerPath, res.Left)
}

// Sweep is Reap for the end of a session, run by the process that owns
// its lock once its own commands are stopped: it costs nothing when every
// recorded process ended (each helper records the end of what it
// started), and ends what is left when a helper was killed before it
// could.
func Sweep(ledgerPath, session string) (Reaped, error) {
	recs, err := readLedger(ledgerPath)
	if err != nil || len(recs) == 0 {
		return Reaped{}, err
	}
	return Reap(ledgerPath, session)
}

// ReapSession is Reap when a session is opened, before anything else,
// with the session lock held: the earlier owner is gone (its process
// helper was killed with it, so nothing else will end what it left), and
// no tool of this process runs yet. It returns what the user must be told
// and the processes it could not end, which stay active writers (a
// restore is refused) until they are gone.
func ReapSession(ledgerPath, session string) (notes []string, left []Record, err error) {
	res, err := Reap(ledgerPath, session)
	if err != nil {
		return nil, nil, err
	}
	if len(res.Ended) > 0 {
		notes = append(notes, fmt.Sprintf("Ended %d process(es) that an earlier yolop process of this session left running, so they cannot write the workspace any more: %s.",
			len(res.Ended), describe(res.Ended)))
	}
	if len(res.Left) > 0 {
		notes = append(notes, fmt.Sprintf("Could not end %d process(es) left running by an earlier yolop process of this session: %s. Restores are refused until they are gone; end them (kill -9 PID) or with /tasks stop p<PID>.",
			len(res.Left), describe(res.Left)))
	}
	return notes, res.Left, nil
}

// SweepSession is Sweep when a session closes, last before its lock goes:
// only a helper that was killed leaves processes of its own running. One
// that cannot be ended is an error; the next open tries again.
func SweepSession(ledgerPath, session string) error {
	res, err := Sweep(ledgerPath, session)
	if err != nil {
		return err
	}
	if len(res.Left) > 0 {
		return fmt.Errorf("could not end %d process(es) of this session: %s; end them (kill -9 PID) before you open it again", len(res.Left), describe(res.Left))
	}
	return nil
}

// describe names up to five processes for the user: pid and command.
func describe(rs []Record) string {
	var parts []string
	for i, r := range rs {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(rs)-5))
			break
		}
		c := r.Command
		if len(c) > 60 {
			c = c[:57] + "..."
		}
		if c == "" {
			parts = append(parts, fmt.Sprintf("pid %d", r.PID))
		} else {
			parts = append(parts, fmt.Sprintf("pid %d (%s)", r.PID, c))
		}
	}
	return strings.Join(parts, ", ")
}
