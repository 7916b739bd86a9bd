package checkpoint

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"

	"github.com/yolop-dev/yolop/internal/session/jsonl"
	"github.com/yolop-dev/yolop/internal/timeline"
)

// previewsFile holds outstanding confirmation tokens so that a preview made
// by one process (print mode, ACP) can be confirmed by a later one.
const previewsFile = "previews.json"

// maxPreviews bounds the file; older previews expire.
const maxPreviews = 32

// previewRecord binds a token to exactly one restore.
type previewRecord struct {
	Token        string                `json:"token"`
	Session      string                `json:"session"`
	Action       Action                `json:"action"`
	Target       string                `json:"target"`
	Mode         Mode                  `json:"mode"`
	Head         string                `json:"head"`     // conversation head at preview time
	NewHead      string                `json:"new_head"` // head after a restore with conversation
	TargetTree   string                `json:"target_tree,omitempty"`
	Recovery     *timeline.SnapshotRef `json:"recovery,omitempty"`
	RecoveryName string                `json:"recovery_name,omitempty"`
	Prompt       string                `json:"prompt,omitempty"`
	Created      time.Time             `json:"created"`
	Used         bool                  `json:"used,omitempty"`
	// Branch is the branch a /branch preview enters (Target is its tip).
	Branch string `json:"branch,omitempty"`
	// Expired says why the token can no longer be used ("" while it can).
	Expired string `json:"expired,omitempty"`
	// OnConflict is the in-place conflict choice the token is bound to,
	// Paths the outcomes the preview showed (restores in place).
	OnConflict string       `json:"on_conflict,omitempty"`
	Paths      []PathChange `json:"paths,omitempty"`
}

type previewStore struct {
	NextRecovery int             `json:"next_recovery"`
	Previews     []previewRecord `json:"previews"`
	// Swept is the key (sweepKey) of the last sweep that removed every
	// recovery and scratch ref nothing needed: until the key changes, no
	// such ref can have appeared, and a sweep lists nothing (listing the
	// session's refs costs in proportion to its turns).
	Swept string `json:"swept,omitempty"`
}

func loadPreviews(dir string) (*previewStore, error) {
	if dir == "" {
		// A session that is not on disk yet has issued no tokens.
		return &previewStore{NextRecovery: 1}, nil
	}
	b, err := os.ReadFile(filepath.Join(dir, previewsFile))
	if errors.Is(err, os.ErrNotExist) {
		return &previewStore{NextRecovery: 1}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read previews: %w", err)
	}
	return parsePreviews(b), nil
}

// parsePreviews decodes previews.json. Outstanding tokens are convenience
// state: a damaged file, or a damaged record in it, only means those
// previews must be made again, so it never fails. A record is kept only
// when it is complete enough to be confirmed safely (a token, a known
// action and mode, and for a workspace restore both trees).
func parsePreviews(b []byte) *previewStore {
	var s previewStore
	if err := json.Unmarshal(b, &s); err != nil {
		return &previewStore{NextRecovery: 1}
	}
	if s.NextRecovery < 1 {
		s.NextRecovery = 1
	}
	kept := s.Previews[:0]
	for _, r := range s.Previews {
		if r.valid() {
			kept = append(kept, r)
		}
	}
	s.Previews = kept
	return &s
}

func (r *previewRecord) valid() bool {
	if r.Token == "" {
		return false
	}
	switch r.Action {
	case ActionRewind, ActionUndo, ActionRedo:
	case ActionBranch:
		if r.Branch == "" {
			return false
		}
	default:
		return false
	}
	switch r.Mode {
	case ModeBoth, ModeConversation, ModeWorkspace:
	default:
		return false
	}
	if r.Recovery != nil && (r.Recovery.Tree == "" || r.Recovery.Ref == "") {
		return false
	}
	// A workspace restore needs the tree it restores.
	return !(r.Mode.HasWorkspace() && r.Recovery != nil && r.TargetTree == "")
}

func (s *previewStore) save(dir string) error {
	if len(s.Previews) > maxPreviews {
		s.Previews = s.Previews[len(s.Previews)-maxPreviews:]
	}
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return jsonl.WriteFileAtomic(filepath.Join(dir, previewsFile), b)
}

func (s *previewStore) find(token string) *previewRecord {
	for i := range s.Previews {
		if s.Previews[i].Token == token {
			return &s.Previews[i]
		}
	}
	return nil
}

const tokenAlphabet = "abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"

// newToken returns a short random token matching [A-Za-z0-9_-]+.
func newToken() string {
	b := make([]byte, 8)
	max := big.NewInt(int64(len(tokenAlphabet)))
	for i := range b {
		n, err := rand.Int(rand.Reader, max)
		if err != nil {
			panic(err)
		}
		b[i] = tokenAlphabet[n.Int64()]
	}
	return string(b)
}
