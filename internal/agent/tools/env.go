package tools

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Where the commands' environment comes from ([tools] env).
const (
	// EnvInherit: the environment yolop was started with (the default),
	// so that an activated virtualenv, nix shell, direnv, asdf or mise
	// reaches the commands as it reaches the user's own.
	EnvInherit = "inherit"
	// EnvLogin: the environment of the user's login shell (bash -l),
	// read once per session; also the fallback when yolop was started
	// without a usable PATH (a desktop launcher).
	EnvLogin = "login"
)

// EnvPlan is where the commands' environment comes from in this process,
// decided without running anything.
type EnvPlan struct {
	Source string // EnvInherit or EnvLogin
	// Fallback says why a login shell's environment is used although
	// inherit was asked for ("" when it was not).
	Fallback string
	// Bash is the bash that runs commands (and the login shell): an
	// absolute path, found on PATH or in the usual places.
	Bash string
}

// PlanEnv decides the commands' environment for setting (EnvInherit, ""
// or EnvLogin) in a process whose environment is environ: inherit
// unless PATH is unset or empty or has no bash on it.
func PlanEnv(setting string, environ []string) EnvPlan {
	path, hasPath := "", false
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path, hasPath = v, true
		}
	}
	onPath := lookIn("bash", path)
	p := EnvPlan{Source: EnvInherit, Bash: onPath}
	if setting == EnvLogin {
		p.Source = EnvLogin
	} else {
		switch {
		case !hasPath:
			p.Source, p.Fallback = EnvLogin, "yolop was started without PATH"
		case strings.TrimSpace(path) == "":
			p.Source, p.Fallback = EnvLogin, "yolop was started with an empty PATH"
		case onPath == "":
			p.Source, p.Fallback = EnvLogin, fmt.Sprintf("bash is not on the PATH yolop was started with (%s)", path)
		}
	}
	if p.Bash == "" {
		p.Bash = lookIn("bash", "/usr/local/bin:/usr/bin:/bin:/opt/homebrew/bin:/run/current-system/sw/bin")
	}
	return p
}

// Describe says in a phrase where the commands' environment comes from.
func (p EnvPlan) Describe() string {
	switch {
	case p.Source == EnvInherit:
		return "the environment yolop was started with (secret-looking variables withheld)"
	case p.Fallback != "":
		return "a login shell's environment (bash -l, read once per session) because " + p.Fallback + "; secret-looking variables withheld"
	}
	return "a login shell's environment (bash -l, read once per session: [tools] env = \"login\"); secret-looking variables withheld"
}

// lookIn finds an executable file named name in the directories of path
// ("" when there is none).
func lookIn(name, path string) string {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		f := filepath.Join(dir, name)
		if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return f
		}
	}
	return ""
}

// bashFor is the bash that runs a command whose environment is env: the
// one on env's PATH, else the plan's.
func (p EnvPlan) bashFor(env []string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			if b := lookIn("bash", v); b != "" {
				return b
			}
		}
	}
	if p.Bash != "" {
		return p.Bash
	}
	if b, err := exec.LookPath("bash"); err == nil {
		return b
	}
	return "bash" // the start fails and says so
}
