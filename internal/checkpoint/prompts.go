package checkpoint

import (
	"os"
	"path/filepath"

	"github.com/yolop-dev/yolop/internal/session/jsonl"
)

// promptsDir holds, in a session directory, the whole text of a long
// prompt (one the timeline keeps only the start of) from before its turn
// is journaled until its user.message is on disk: prompts/<checkpoint>.txt.
const promptsDir = "prompts"

func promptPath(dir, id string) string { return filepath.Join(dir, promptsDir, id+".txt") }

// keepPrompt writes prompt durably for turn id. A session not on disk yet
// (dir "") has nothing to keep it beside: its turn records nothing either.
func keepPrompt(dir, id, prompt string) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Join(dir, promptsDir), 0o700); err != nil {
		return err
	}
	return jsonl.WriteFileAtomic(promptPath(dir, id), []byte(prompt))
}

// keptPrompt reads what keepPrompt wrote for turn id.
func keptPrompt(dir, id string) (string, error) {
	if dir == "" {
		return "", os.ErrNotExist
	}
	b, err := os.ReadFile(promptPath(dir, id))
	return string(b), err
}

// dropPrompt removes the kept prompt of turn id once its event log has it.
// A failure leaves a file that is used only if the event is missing.
func dropPrompt(dir, id string) {
	if dir == "" {
		return
	}
	_ = os.Remove(promptPath(dir, id)) // housekeeping: a file left is read only when the event is missing
}
