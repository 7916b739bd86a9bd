package agent

import (
	"errors"
	"fmt"
	"strings"

	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/fsutil"
)

// MaxPromptBytes is the largest prompt a turn takes. Every prompt is
// recorded whole in the event log and sent whole to the model, so one far
// beyond any model's context would only slow every later open of the
// session.
const MaxPromptBytes = 4 << 20

// ErrPromptTooLarge refuses a prompt over MaxPromptBytes.
var ErrPromptTooLarge = fault.New(fault.PromptTooLarge, "the prompt is too large")

// CheckPrompt refuses a prompt a turn does not take (empty, or over
// MaxPromptBytes), before anything is sent or recorded.
func CheckPrompt(text string) error {
	if strings.TrimSpace(text) == "" {
		return errors.New("empty prompt: type what the agent should do")
	}
	if len(text) > MaxPromptBytes {
		return fmt.Errorf("%w: it is %d bytes (%s), %d more than the %d bytes (4 MB, about a million tokens, more than a model's context holds) yolop takes: save the text as a file in the workspace and ask the agent to read the part it needs (nothing was sent or recorded)", ErrPromptTooLarge, len(text), fsutil.SizeText(int64(len(text))), len(text)-MaxPromptBytes, MaxPromptBytes)
	}
	return nil
}
