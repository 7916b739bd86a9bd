package agent

import (
	"os"
	"testing"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

func TestMain(m *testing.M) { os.Exit(gittest.MainWithHome(m)) }
